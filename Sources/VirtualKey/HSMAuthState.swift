import KeyKit

/// What the virtual key's YubiHSM Auth application remembers: the management key and its tries, and the
/// credentials with their passwords, keys, touch requirement and tries.
///
/// In the state file byte strings are lower-case hex; keys and passwords are stored as they are (this is a
/// software key and its state file is its storage).
public struct HSMAuthState: Codable, Sendable, Equatable {
    public struct Credential: Codable, Sendable, Equatable {
        public var label: String
        public var algorithm: HSMAuth.Algorithm
        public var touchRequired: Bool
        public var retries: Int
        /// 16 bytes.
        @HexBytes public var password: [UInt8]
        /// K-ENC then K-MAC (32 bytes) for a symmetric credential; the P-256 scalar (32 bytes) for an
        /// asymmetric one.
        @HexBytes public var key: [UInt8]

        public init(
            label: String, algorithm: HSMAuth.Algorithm, touchRequired: Bool, password: [UInt8], key: [UInt8]
        ) {
            self.label = label
            self.algorithm = algorithm
            self.touchRequired = touchRequired
            self.retries = HSMAuth.initialRetries
            self.password = password
            self.key = key
        }
    }

    @HexBytes public var managementKey: [UInt8]
    public var managementKeyRetries: Int
    public var credentials: [Credential]

    public init() {
        managementKey = HSMAuth.defaultManagementKey
        managementKeyRetries = HSMAuth.initialRetries
        credentials = []
    }

    /// The demo key's credential: "demo", symmetric, its keys derived from "password" (the YubiHSM 2's default
    /// authentication key), credential password "demo".
    public mutating func installDemo() {
        let (enc, mac) = HSMAuth.derivedKeys(password: SecretBytes(utf8: "password"))
        credentials.append(
            Credential(
                label: "demo", algorithm: .aes128, touchRequired: false,
                password: Array("demo".utf8) + [UInt8](repeating: 0, count: 12),
                key: enc.copyBytes() + mac.copyBytes()))
    }
}
