import KeyKit

/// What the virtual key's FIDO2/U2F authenticator remembers across power cycles.
///
/// In the state file byte strings are lower-case hex, private keys included: the file is mode 0600 and
/// belongs to a test and demonstration key, never to a key that protects anything. Keys that are made on
/// first use (wrapping keys, the U2F attestation key) are empty until then. Every field is optional in
/// the file, so state files written before the authenticator existed still load.
public struct FIDOState: Codable, Sendable, Equatable {
    /// PIN retries after a correct PIN, a new PIN or a reset.
    public static let maxPINRetries = 8
    /// The minimum PIN length (in Unicode code points) of a fresh key.
    public static let defaultMinPINLength = 4

    /// A discoverable (resident) credential.
    public struct Credential: Codable, Sendable, Equatable {
        /// The credential ID: 32 random bytes (never a wrapped key handle, so a deleted credential is gone).
        public var id: [UInt8]
        public var rpID: String
        public var rpName: String?
        public var userID: [UInt8]
        public var userName: String?
        public var userDisplayName: String?
        /// The credential's COSE algorithm: ES256 (-7) or EdDSA (-8). A state file without it (written before
        /// EdDSA credentials existed) holds ES256 credentials.
        public var algorithm: Int
        /// The private key, 32 bytes: the P-256 scalar (ES256) or the Ed25519 seed (EdDSA).
        public var privateKey: [UInt8]
        /// credProtect level: 1 userVerificationOptional, 2 ...WithCredentialIDList, 3 userVerificationRequired.
        public var credProtect: Int
        /// Made with the hmac-secret extension.
        public var hmacSecret: Bool
        /// Creation order (larger is newer); getAssertion offers the newest first.
        public var created: UInt64

        public init(
            id: [UInt8], rpID: String, rpName: String?, userID: [UInt8], userName: String?,
            userDisplayName: String?, algorithm: Int = COSE.Algorithm.es256, privateKey: [UInt8], credProtect: Int,
            hmacSecret: Bool = false, created: UInt64
        ) {
            self.id = id
            self.rpID = rpID
            self.rpName = rpName
            self.userID = userID
            self.userName = userName
            self.userDisplayName = userDisplayName
            self.algorithm = algorithm
            self.privateKey = privateKey
            self.credProtect = credProtect
            self.hmacSecret = hmacSecret
            self.created = created
        }

        private enum CodingKeys: String, CodingKey {
            case id, rpID, rpName, userID, userName, userDisplayName, algorithm, privateKey, credProtect, hmacSecret,
                created
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try decodeHex(c, .id)
            rpID = try c.decode(String.self, forKey: .rpID)
            rpName = try c.decodeIfPresent(String.self, forKey: .rpName)
            userID = try decodeHex(c, .userID)
            userName = try c.decodeIfPresent(String.self, forKey: .userName)
            userDisplayName = try c.decodeIfPresent(String.self, forKey: .userDisplayName)
            algorithm = try c.decodeIfPresent(Int.self, forKey: .algorithm) ?? COSE.Algorithm.es256
            privateKey = try decodeHex(c, .privateKey)
            credProtect = try c.decodeIfPresent(Int.self, forKey: .credProtect) ?? 1
            hmacSecret = try c.decodeIfPresent(Bool.self, forKey: .hmacSecret) ?? false
            created = try c.decodeIfPresent(UInt64.self, forKey: .created) ?? 0
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeHex(id, forKey: .id)
            try c.encode(rpID, forKey: .rpID)
            try c.encodeIfPresent(rpName, forKey: .rpName)
            try c.encodeHex(userID, forKey: .userID)
            try c.encodeIfPresent(userName, forKey: .userName)
            try c.encodeIfPresent(userDisplayName, forKey: .userDisplayName)
            try c.encode(algorithm, forKey: .algorithm)
            try c.encodeHex(privateKey, forKey: .privateKey)
            try c.encode(credProtect, forKey: .credProtect)
            try c.encode(hmacSecret, forKey: .hmacSecret)
            try c.encode(created, forKey: .created)
        }
    }

    /// An enrolled fingerprint of a key with a sensor (the `yubikey-bio` profile): its template ID and
    /// friendly name. No fingerprint data: the virtual sensor matches nothing.
    public struct Fingerprint: Codable, Sendable, Equatable {
        @HexBytes public var templateID: [UInt8]
        public var name: String?

        public init(templateID: [UInt8], name: String?) {
            self.templateID = templateID
            self.name = name
        }
    }

    /// LEFT(SHA-256(PIN), 16); nil when no PIN is set. The PIN itself is never stored.
    public var pinHash: [UInt8]?
    /// Wrong PINs left before the PIN is blocked (only a reset unblocks it).
    public var pinRetries: Int
    public var minPINLength: Int
    /// The current PIN's length in Unicode code points (nil without a PIN, or in a state file written before
    /// it was kept): a new minimum above it forces a PIN change.
    public var pinLength: Int?
    /// The PIN must be changed before a PIN/UV auth token is given out (authenticatorConfig).
    public var forcePINChange: Bool
    /// Every makeCredential and getAssertion needs user verification, and U2F is off (authenticatorConfig).
    public var alwaysUV: Bool
    /// Enterprise attestation enabled (authenticatorConfig; only a reset disables it).
    public var enterpriseAttestation: Bool
    /// The relying parties the minPinLength extension tells the minimum PIN length to.
    public var minPINLengthRPIDs: [String]
    /// Discoverable credentials, in the order they were made.
    public var credentials: [FIDOState.Credential]
    /// Enrolled fingerprints, in the order they were enrolled (only a key with a sensor has any).
    public var fingerprints: [FIDOState.Fingerprint]
    /// The signature counter, shared by every credential and by U2F.
    public var signCount: UInt32
    /// The `created` value of the next discoverable credential.
    public var nextCreated: UInt64
    /// AES-256 key that encrypts non-discoverable credential IDs and U2F key handles (empty: not made yet).
    public var wrapEncryptionKey: [UInt8]
    /// HMAC-SHA-256 key that authenticates them (and derives hmac-secret's CredRandom).
    public var wrapMACKey: [UInt8]
    /// The U2F attestation key (raw P-256 scalar) and its self-signed certificate (DER); empty until the
    /// first U2F registration. A reset keeps them, as a real key keeps its attestation certificate.
    public var attestationKey: [UInt8]
    public var attestationCertificate: [UInt8]

    public init(
        pinHash: [UInt8]? = nil, pinRetries: Int = FIDOState.maxPINRetries,
        minPINLength: Int = FIDOState.defaultMinPINLength, pinLength: Int? = nil, forcePINChange: Bool = false,
        alwaysUV: Bool = false, enterpriseAttestation: Bool = false, minPINLengthRPIDs: [String] = [],
        credentials: [FIDOState.Credential] = [], fingerprints: [FIDOState.Fingerprint] = [],
        signCount: UInt32 = 0, nextCreated: UInt64 = 1, wrapEncryptionKey: [UInt8] = [],
        wrapMACKey: [UInt8] = [], attestationKey: [UInt8] = [], attestationCertificate: [UInt8] = []
    ) {
        self.pinHash = pinHash
        self.pinRetries = pinRetries
        self.minPINLength = minPINLength
        self.pinLength = pinLength
        self.forcePINChange = forcePINChange
        self.alwaysUV = alwaysUV
        self.enterpriseAttestation = enterpriseAttestation
        self.minPINLengthRPIDs = minPINLengthRPIDs
        self.credentials = credentials
        self.fingerprints = fingerprints
        self.signCount = signCount
        self.nextCreated = nextCreated
        self.wrapEncryptionKey = wrapEncryptionKey
        self.wrapMACKey = wrapMACKey
        self.attestationKey = attestationKey
        self.attestationCertificate = attestationCertificate
    }

    public var isPINSet: Bool { pinHash != nil }

    /// How many discoverable credentials the key holds: 100 from firmware 5.7, 25 before.
    public static func capacity(for version: Version) -> Int {
        version >= Version(5, 7, 0) ? 100 : 25
    }

    private enum CodingKeys: String, CodingKey {
        case pinHash, pinRetries, minPINLength, pinLength, forcePINChange, alwaysUV, enterpriseAttestation,
            minPINLengthRPIDs, credentials, fingerprints, signCount, nextCreated, wrapEncryptionKey,
            wrapMACKey, attestationKey, attestationCertificate
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pinHash = try c.contains(.pinHash) && !c.decodeNil(forKey: .pinHash) ? decodeHex(c, .pinHash) : nil
        pinRetries = try c.decodeIfPresent(Int.self, forKey: .pinRetries) ?? Self.maxPINRetries
        minPINLength = try c.decodeIfPresent(Int.self, forKey: .minPINLength) ?? Self.defaultMinPINLength
        pinLength = try c.decodeIfPresent(Int.self, forKey: .pinLength)
        forcePINChange = try c.decodeIfPresent(Bool.self, forKey: .forcePINChange) ?? false
        alwaysUV = try c.decodeIfPresent(Bool.self, forKey: .alwaysUV) ?? false
        enterpriseAttestation = try c.decodeIfPresent(Bool.self, forKey: .enterpriseAttestation) ?? false
        minPINLengthRPIDs = try c.decodeIfPresent([String].self, forKey: .minPINLengthRPIDs) ?? []
        credentials = try c.decodeIfPresent([FIDOState.Credential].self, forKey: .credentials) ?? []
        fingerprints = try c.decodeIfPresent([FIDOState.Fingerprint].self, forKey: .fingerprints) ?? []
        signCount = try c.decodeIfPresent(UInt32.self, forKey: .signCount) ?? 0
        nextCreated = try c.decodeIfPresent(UInt64.self, forKey: .nextCreated) ?? 1
        wrapEncryptionKey = try c.contains(.wrapEncryptionKey) ? decodeHex(c, .wrapEncryptionKey) : []
        wrapMACKey = try c.contains(.wrapMACKey) ? decodeHex(c, .wrapMACKey) : []
        attestationKey = try c.contains(.attestationKey) ? decodeHex(c, .attestationKey) : []
        attestationCertificate = try c.contains(.attestationCertificate) ? decodeHex(c, .attestationCertificate) : []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeHex(pinHash, forKey: .pinHash)
        try c.encode(pinRetries, forKey: .pinRetries)
        try c.encode(minPINLength, forKey: .minPINLength)
        try c.encodeIfPresent(pinLength, forKey: .pinLength)
        try c.encode(forcePINChange, forKey: .forcePINChange)
        try c.encode(alwaysUV, forKey: .alwaysUV)
        try c.encode(enterpriseAttestation, forKey: .enterpriseAttestation)
        try c.encode(minPINLengthRPIDs, forKey: .minPINLengthRPIDs)
        try c.encode(credentials, forKey: .credentials)
        try c.encode(fingerprints, forKey: .fingerprints)
        try c.encode(signCount, forKey: .signCount)
        try c.encode(nextCreated, forKey: .nextCreated)
        try c.encodeHex(wrapEncryptionKey, forKey: .wrapEncryptionKey)
        try c.encodeHex(wrapMACKey, forKey: .wrapMACKey)
        try c.encodeHex(attestationKey, forKey: .attestationKey)
        try c.encodeHex(attestationCertificate, forKey: .attestationCertificate)
    }
}
