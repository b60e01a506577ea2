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
            try c.encode(id.hex, forKey: .id)
            try c.encode(type.description, forKey: .type)
            try c.encode(algorithm, forKey: .algorithm)
            try c.encode(digits, forKey: .digits)
            try c.encode(secret.hex, forKey: .secret)
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
        try c.encodeIfPresent(passwordKey?.hex, forKey: .passwordKey)
        try c.encode(passwordAlgorithm, forKey: .passwordAlgorithm)
        try c.encode(salt.hex, forKey: .salt)
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
            StoredCredential(
                CredentialData(
                    name: "alice@example.com", issuer: "GitHub", type: .totp, algorithm: .sha1, digits: 6,
                    secret: [
                        0x09, 0x30, 0x2A, 0xAA, 0xB8, 0xFD, 0xA8, 0xB6, 0x56, 0xC7,
                        0xD0, 0x3E, 0xD3, 0x8E, 0x07, 0x7D, 0xB1, 0xAC, 0x60, 0xD6,
                    ])),
            StoredCredential(
                CredentialData(
                    name: "alice@example.com", issuer: "Fastmail", type: .totp, algorithm: .sha1, digits: 6,
                    period: 60,
                    secret: [
                        0x29, 0x8D, 0xE7, 0x54, 0xCF, 0x21, 0xE3, 0x1D, 0x99, 0xD0,
                        0x5B, 0x02, 0x8E, 0x83, 0xA6, 0x89, 0x06, 0xC4, 0xD6, 0xC8,
                    ])),
            StoredCredential(
                CredentialData(
                    name: "alice", issuer: "Example Bank", type: .hotp, algorithm: .sha1, digits: 6,
                    secret: [
                        0xBD, 0x11, 0x90, 0x79, 0xB1, 0x5E, 0xE4, 0x34, 0xE7, 0x9C,
                        0x06, 0xF2, 0xDC, 0xF9, 0xA1, 0x2D, 0xBF, 0xDA, 0x52, 0x83,
                    ])),
            StoredCredential(
                CredentialData(
                    name: "alice@example.com", issuer: "Google", type: .totp, algorithm: .sha1, digits: 6,
                    secret: [
                        0x0A, 0xAD, 0xB7, 0xB5, 0x98, 0x28, 0x20, 0xBC, 0xB3, 0xAD,
                        0x3E, 0x59, 0x33, 0xA4, 0x84, 0x0D, 0x3E, 0x31, 0x62, 0x57,
                    ],
                    touch: true)),
            StoredCredential(
                CredentialData(
                    name: "alice@example.com", issuer: "Dropbox", type: .totp, algorithm: .sha256, digits: 6,
                    secret: [
                        0x10, 0x30, 0x2A, 0xF6, 0xF4, 0x23, 0x7B, 0xFE, 0xB8, 0x41, 0x43, 0xBF, 0x6C, 0x82,
                        0xB4, 0xAB, 0xCB, 0x42, 0xAD, 0xA2, 0xBC, 0xE0, 0x89, 0xB2, 0x1D, 0x20, 0xE2, 0x64,
                        0x67, 0xE4, 0xB9, 0x93,
                    ])),
            StoredCredential(
                CredentialData(
                    name: "alice", issuer: "Corp VPN", type: .totp, algorithm: .sha1, digits: 8,
                    secret: [
                        0xC7, 0x54, 0xBE, 0xE4, 0x06, 0x01, 0xED, 0xB4, 0x1B, 0x3F,
                        0x0C, 0xC2, 0xE2, 0x73, 0xC0, 0x42, 0x4D, 0x0E, 0xB0, 0xBD,
                    ])),
            StoredCredential(
                CredentialData(
                    name: "alice", issuer: "Steam", type: .totp, algorithm: .sha1, digits: 6,
                    secret: [
                        0x57, 0xB7, 0x68, 0x42, 0x2C, 0xD1, 0xC1, 0x29, 0xFC, 0x0E,
                        0xCB, 0x13, 0xB0, 0xDF, 0xDD, 0xEA, 0x72, 0x3F, 0x42, 0xC3,
                    ])),
        ]
    }
}

extension VirtualKeyState {
    /// This state with the demo accounts added (replacing accounts with the same IDs).
    /// `count` TOTP accounts (SHA-1, 6 digits, 30 s) named `Issuer NN:user-NNNN@example.com`, beyond what any
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
            let account = OATHState.StoredCredential(data)
            if let k = copy.oath.index(of: account.id) {
                copy.oath.credentials[k] = account
            } else {
                copy.oath.credentials.append(account)
            }
        }
        return copy
    }

    /// This state with the demo accounts added (replacing accounts with the same IDs), and the PIV demo (an EC
    /// P-256 key and its certificate, CN=ykterm demo) in slot 9A.
    public func withDemoAccounts() -> VirtualKeyState {
        var copy = self
        copy.piv.installDemo()
        for account in OATHState.demoAccounts() {
            if let i = copy.oath.index(of: account.id) {
                copy.oath.credentials[i] = account
            } else {
                copy.oath.credentials.append(account)
            }
        }
        return copy
    }
}
