import KeyKit

/// The YubiHSM Auth application at a glance: what `hsmauth info` shows.
public struct HSMAuthOverview: Sendable, Equatable {
    public var version: Version
    public var managementKeyRetries: Int
    public var credentials: [HSMAuthCredential]
}

/// The key material of a new credential.
public enum HSMAuthNewCredential: Sendable {
    /// K-ENC and K-MAC, 16 bytes each.
    case symmetric(enc: SecretBytes, mac: SecretBytes)
    /// K-ENC and K-MAC derived from a password, as the YubiHSM 2 derives them.
    case derived(password: SecretBytes)
    /// A P-256 private key (its 32-byte scalar).
    case asymmetric(privateKey: SecretBytes)
    /// A P-256 key the YubiKey generates.
    case generated

    /// Wipes the secrets it holds.
    public func wipe() {
        switch self {
        case .symmetric(let enc, let mac):
            enc.wipe()
            mac.wipe()
        case .derived(let secret), .asymmetric(let secret): secret.wipe()
        case .generated: break
        }
    }
}

/// What the YubiHSM 2 answers CREATE SESSION with, for an asymmetric credential: its ephemeral key EPK.SD, its
/// static key PK.SD and its receipt.
public struct HSMAuthDeviceAnswer: Sendable {
    public var epkSD: [UInt8]
    public var pkSD: P256PublicKey
    public var receipt: [UInt8]

    public init(epkSD: [UInt8], pkSD: P256PublicKey, receipt: [UInt8]) {
        self.epkSD = epkSD
        self.pkSD = pkSD
        self.receipt = receipt
    }
}

/// The YubiHSM Auth application's actions, written once for `ykterm hsmauth`.
///
/// Each opens the key's smart-card interface (`SmartCardOpener`), selects YubiHSM Auth, does one thing and closes
/// the connection, whether it succeeded or not. None prints, prompts or formats; the management key, passwords
/// and keys come in as `SecretBytes`, asked for by the face before the call.
public struct HSMAuthOperations: Sendable {
    public let opener: any SmartCardOpener
    public let observer: (@Sendable (APDUExchange) -> Void)?

    public init(_ opener: any SmartCardOpener, observer: (@Sendable (APDUExchange) -> Void)? = nil) {
        self.opener = opener
        self.observer = observer
    }

    /// Opens the smart-card interface, selects YubiHSM Auth, runs `body` and closes the connection (also when it
    /// threw).
    public func withSession<T>(_ body: (HSMAuthSession) async throws -> T) async throws -> T {
        try await withSmartCard(opener) { connection in
            try await body(try await HSMAuthSession.make(connection: connection, observer: observer))
        }
    }

    public func overview() async throws -> HSMAuthOverview {
        try await withSession { s in
            HSMAuthOverview(
                version: s.version, managementKeyRetries: try await s.managementKeyRetries(),
                credentials: try await s.listCredentials())
        }
    }

    public func credentials() async throws -> [HSMAuthCredential] {
        try await withSession { try await $0.listCredentials() }
    }

    /// Adds a credential: symmetric (given or derived keys) or asymmetric (imported or generated).
    public func add(
        label: String, _ new: HSMAuthNewCredential, credentialPassword: SecretBytes, managementKey: SecretBytes,
        touchRequired: Bool
    ) async throws -> HSMAuthCredential {
        try await withSession { s in
            switch new {
            case .symmetric(let enc, let mac):
                return try await s.putSymmetric(
                    managementKey: managementKey, label: label, enc: enc, mac: mac,
                    credentialPassword: credentialPassword, touchRequired: touchRequired)
            case .derived(let password):
                return try await s.putDerived(
                    managementKey: managementKey, label: label, derivationPassword: password,
                    credentialPassword: credentialPassword, touchRequired: touchRequired)
            case .asymmetric(let privateKey):
                return try await s.putAsymmetric(
                    managementKey: managementKey, label: label, privateKey: privateKey,
                    credentialPassword: credentialPassword, touchRequired: touchRequired)
            case .generated:
                return try await s.generateAsymmetric(
                    managementKey: managementKey, label: label, credentialPassword: credentialPassword,
                    touchRequired: touchRequired)
            }
        }
    }

    public func delete(label: String, managementKey: SecretBytes) async throws {
        try await withSession { try await $0.delete(managementKey: managementKey, label: label) }
    }

    /// The long-term public key of an asymmetric credential.
    public func publicKey(label: String) async throws -> P256PublicKey {
        try await withSession { try await $0.publicKey(label: label) }
    }

    public func changeManagementKey(current: SecretBytes, new: SecretBytes) async throws {
        try await withSession { try await $0.putManagementKey(current: current, new: new) }
    }

    public func changeCredentialPassword(
        label: String, authority: HSMAuthPasswordAuthority, new: SecretBytes
    ) async throws {
        try await withSession { try await $0.changeCredentialPassword(label: label, authority: authority, new: new) }
    }

    /// Erases every credential and restores the default management key.
    public func reset() async throws {
        try await withSession { try await $0.reset() }
    }

    /// The host challenge of a credential (8 random bytes, or EPK.OCE for an asymmetric credential).
    public func challenge(label: String, credentialPassword: SecretBytes?) async throws -> [UInt8] {
        try await withSession { try await $0.challenge(label: label, credentialPassword: credentialPassword) }
    }

    /// The session keys of a symmetric credential over `context` (the host challenge, then the YubiHSM 2's).
    public func sessionKeys(
        label: String, context: [UInt8], credentialPassword: SecretBytes, cardCryptogram: [UInt8]? = nil
    ) async throws -> HSMAuthSessionKeys {
        try await withSession {
            try await $0.calculateSymmetric(
                label: label, context: context, credentialPassword: credentialPassword, cardCryptogram: cardCryptogram)
        }
    }

    /// The session keys of an asymmetric credential, in one connection: the key's EPK.OCE (GET CHALLENGE) goes
    /// to `device` (the YubiHSM 2, or whatever plays it), whose answer the key turns into the session keys.
    public func asymmetricSessionKeys(
        label: String, credentialPassword: SecretBytes,
        device: @Sendable ([UInt8]) async throws -> HSMAuthDeviceAnswer
    ) async throws -> HSMAuthSessionKeys {
        try await withSession { s in
            let epkOCE = try await s.challenge(label: label, credentialPassword: credentialPassword)
            let answer = try await device(epkOCE)
            return try await s.calculateAsymmetric(
                label: label, context: epkOCE + answer.epkSD, publicKey: answer.pkSD, receipt: answer.receipt,
                credentialPassword: credentialPassword)
        }
    }
}
