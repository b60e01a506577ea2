import KeyKit

/// What the virtual key's OATH application remembers: its accounts, the access key and the salt it
/// reports on SELECT (clients derive the access key and the device ID from it).
///
/// In the state file byte strings are lower-case hex; accounts keep the order they were added in.
public struct OATHState: Codable, Sendable, Equatable {
    /// One account as the key stores it: the ID, the code parameters and the secret exactly as the client
    /// sent it (clients hash over-long secrets and pad short ones before PUT).
    public struct StoredCredential: Codable, Sendable, Equatable {
        public var id: [UInt8]
        public var type: OATHType
        public var algorithm: HashAlgorithm
        public var digits: Int
        public var secret: [UInt8]
        public var touch: Bool
        /// HOTP: the next counter value. Unused for TOTP.
        public var counter: UInt64

        public init(
            id: [UInt8], type: OATHType, algorithm: HashAlgorithm, digits: Int, secret: [UInt8],
            touch: Bool = false, counter: UInt64 = 0
        ) {
            self.id = id
            self.type = type
            self.algorithm = algorithm
            self.digits = digits
            self.secret = secret
            self.touch = touch
            self.counter = counter
        }

        /// The account an `otpauth://` URI (or the add form) describes, its ID formatted as clients do.
        public init(_ data: CredentialData) {
            self.init(
                id: data.id.bytes, type: data.type, algorithm: data.algorithm, digits: data.digits,
                secret: data.secret, touch: data.touch, counter: UInt64(data.counter))
        }

        /// The ID as text (IDs are UTF-8 in practice; other bytes show as U+FFFD).
        public var idString: String { String(decoding: id, as: UTF8.self) }

        private enum CodingKeys: String, CodingKey {
            case id, type, algorithm, digits, secret, touch, counter
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try decodeHex(c, .id)
            let typeName = try c.decode(String.self, forKey: .type)
            guard let t = OATHType.allCases.first(where: { $0.description == typeName }) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .type, in: c,
                    debugDescription: "not an OATH type: \(typeName)")
            }
            type = t
            algorithm = try c.decode(HashAlgorithm.self, forKey: .algorithm)
            digits = try c.decode(Int.self, forKey: .digits)
            secret = try decodeHex(c, .secret)
            touch = try c.decodeIfPresent(Bool.self, forKey: .touch) ?? false
            counter = try c.decodeIfPresent(UInt64.self, forKey: .counter) ?? 0
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeHex(id, forKey: .id)
            try c.encode(type.description, forKey: .type)
            try c.encode(algorithm, forKey: .algorithm)
            try c.encode(digits, forKey: .digits)
            try c.encodeHex(secret, forKey: .secret)
            try c.encode(touch, forKey: .touch)
            try c.encode(counter, forKey: .counter)
        }
    }

    public var credentials: [StoredCredential]
    /// The access key (PBKDF2 of the password, as set with SET CODE); nil when no password is set.
    public var passwordKey: [UInt8]?
    /// The HMAC algorithm of the access key (SELECT reports it under tag 0x7B).
    public var passwordAlgorithm: HashAlgorithm
    /// Eight random bytes, made on the first SELECT (an empty salt means "not made yet") and again on RESET.
    public var salt: [UInt8]

    public init(
        credentials: [StoredCredential] = [], passwordKey: [UInt8]? = nil,
        passwordAlgorithm: HashAlgorithm = .sha1, salt: [UInt8] = []
    ) {
        self.credentials = credentials
        self.passwordKey = passwordKey
        self.passwordAlgorithm = passwordAlgorithm
        self.salt = salt
    }

    /// How many accounts the key holds: 32, or 64 from firmware 5.7.0.
    public static func capacity(for version: Version) -> Int {
        version >= Version(5, 7, 0) ? 64 : 32
    }

    public var hasPassword: Bool { passwordKey != nil }

    public func index(of id: [UInt8]) -> Int? { credentials.firstIndex { $0.id == id } }

    /// Stores `account` in place of the account with its ID, or after the others (whatever the capacity).
    mutating func put(_ account: StoredCredential) {
        if let i = index(of: account.id) {
            credentials[i] = account
        } else {
            credentials.append(account)
        }
    }

    private enum CodingKeys: String, CodingKey {
        case credentials, passwordKey, passwordAlgorithm, salt
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        credentials = try c.decodeIfPresent([StoredCredential].self, forKey: .credentials) ?? []
        passwordKey =
            try c.contains(.passwordKey) && !c.decodeNil(forKey: .passwordKey)
            ? decodeHex(c, .passwordKey) : nil
        passwordAlgorithm = try c.decodeIfPresent(HashAlgorithm.self, forKey: .passwordAlgorithm) ?? .sha1
        salt = try c.contains(.salt) ? decodeHex(c, .salt) : []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(credentials, forKey: .credentials)
        try c.encodeHex(passwordKey, forKey: .passwordKey)
        try c.encode(passwordAlgorithm, forKey: .passwordAlgorithm)
        try c.encodeHex(salt, forKey: .salt)
    }
}

// MARK: Demo accounts

extension OATHState {
    /// Accounts for demonstrations, documentation and tests: one of each kind, with fixed secrets so
    /// their codes can be checked anywhere (e.g. `oathtool --totp -b <Base32 secret>`).
    ///
    /// | ID | kind | secret (Base32) |
    /// |----|------|-----------------|
    /// | `GitHub:alice@example.com` | TOTP SHA-1, 6 digits, 30 s | `BEYCVKVY7WULMVWH2A7NHDQHPWY2YYGW` |
    /// | `60/Fastmail:alice@example.com` | TOTP SHA-1, 6 digits, 60 s | `FGG6OVGPEHRR3GOQLMBI5A5GREDMJVWI` |
    /// | `Example Bank:alice` | HOTP SHA-1, 6 digits, counter 0 | `XUIZA6NRL3SDJZ44A3ZNZ6NBFW75UUUD` |
    /// | `Google:alice@example.com` | TOTP SHA-1, 6 digits, 30 s, touch | `BKW3PNMYFAQLZM5NHZMTHJEEBU7DCYSX` |
    /// | `Dropbox:alice@example.com` | TOTP SHA-256, 6, 30 s | `CAYCV5XUEN575OCBIO7WZAVUVPFUFLNCXTQITMQ5EDRGIZ7EXGJQ` |
    /// | `Corp VPN:alice` | TOTP SHA-1, 8 digits, 30 s | `Y5KL5ZAGAHW3IGZ7BTBOE46AIJGQ5MF5` |
    /// | `Steam:alice` | TOTP SHA-1, 6 digits, 30 s (Steam codes) | `K63WQQRM2HAST7AOZMJ3BX655JZD6QWD` |
    public static func demoAccounts() -> [StoredCredential] {
        [
            demo("GitHub", "alice@example.com", "BEYCVKVY7WULMVWH2A7NHDQHPWY2YYGW"),
            demo("Fastmail", "alice@example.com", "FGG6OVGPEHRR3GOQLMBI5A5GREDMJVWI", period: 60),
            demo("Example Bank", "alice", "XUIZA6NRL3SDJZ44A3ZNZ6NBFW75UUUD", type: .hotp),
            demo("Google", "alice@example.com", "BKW3PNMYFAQLZM5NHZMTHJEEBU7DCYSX", touch: true),
            demo(
                "Dropbox", "alice@example.com", "CAYCV5XUEN575OCBIO7WZAVUVPFUFLNCXTQITMQ5EDRGIZ7EXGJQ",
                algorithm: .sha256),
            demo("Corp VPN", "alice", "Y5KL5ZAGAHW3IGZ7BTBOE46AIJGQ5MF5", digits: 8),
            demo("Steam", "alice", "K63WQQRM2HAST7AOZMJ3BX655JZD6QWD"),
        ]
    }

    /// One row of the demo table: SHA-1 TOTP, 6 digits, 30 s and no touch unless said; the secret in Base32.
    private static func demo(
        _ issuer: String, _ name: String, _ secret: String, type: OATHType = .totp, algorithm: HashAlgorithm = .sha1,
        digits: Int = 6, period: Int = CredentialData.defaultPeriod, touch: Bool = false
    ) -> StoredCredential {
        StoredCredential(
            CredentialData(
                name: name, issuer: issuer, type: type, algorithm: algorithm, digits: digits, period: period,
                secret: try! Base32.decode(secret), touch: touch))
    }
}

extension VirtualKeyState {
    /// This state with `count` TOTP accounts added (replacing accounts with the same IDs): (SHA-1, 6 digits, 30 s) named `Issuer NN:user-NNNN@example.com`, beyond what any
    /// hardware holds, for benchmarks. Their secrets follow a fixed pattern: byte j of account i is
    /// `(i * 31 + j * 7) & 0xFF` (20 bytes), so a peer can check the codes; they protect nothing.
    public func withGeneratedAccounts(_ count: Int) -> VirtualKeyState {
        var copy = self
        for i in 0..<count {
            let secret = (0..<20).map { j in UInt8(truncatingIfNeeded: i * 31 + j * 7) }
            let data = CredentialData(
                name: "user-\(String.zeroPadded(i, width: 4))@example.com",
                issuer: "Issuer \(String.zeroPadded(i % 100, width: 2))", type: .totp,
                algorithm: .sha1, digits: 6, secret: secret)
            copy.oath.put(OATHState.StoredCredential(data))
        }
        return copy
    }

    /// This state with the demo accounts added (replacing accounts with the same IDs), and the PIV demo (an EC
    /// P-256 key and its certificate, CN=ykterm demo) in slot 9A.
    public func withDemoAccounts() -> VirtualKeyState {
        var copy = self
        copy.piv.installDemo()
        copy.hsmauth.installDemo()
        for account in OATHState.demoAccounts() {
            copy.oath.put(account)
        }
        return copy
    }
}
