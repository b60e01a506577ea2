import KeyKit

/// The PIV application's actions, written once for the PIV tab and `ykterm piv`.
///
/// Each opens the key's smart-card interface (`SmartCardOpener`), selects PIV, does one thing and closes the
/// connection, whether it succeeded or not. None prints, prompts or formats. A secret an action needs and was not
/// given (the management key when it is not the default, the PIN when the slot's policy asks for it, a new
/// management key) ends it with `PIVOperationError.needs` before anything changed: the face asks, and calls
/// again with the answer (`PIVAnswers`), so the key is never held while a person types.
public struct PIVOperations: Sendable {
    public let opener: any SmartCardOpener
    /// Sees every exchange of the session (the TUI's trace).
    public let observer: (@Sendable (APDUExchange) -> Void)?

    public init(_ opener: any SmartCardOpener, observer: (@Sendable (APDUExchange) -> Void)? = nil) {
        self.opener = opener
        self.observer = observer
    }

    /// Opens the smart-card interface, selects PIV, runs `body` and closes the connection (also when it threw).
    public func withSession<T>(_ body: (PIVSession) async throws -> T) async throws -> T {
        try await withSmartCard(opener) { connection in
            try await body(try await PIVSession.make(connection: connection, observer: observer))
        }
    }

    /// Version, serial, tries left, the management key and every slot.
    public func overview() async throws -> PIVOverview {
        try await withSession { try await PIVOverview.read($0) }
    }

    /// Signs a fresh challenge with the slot's key and checks it with the slot certificate's key, then reads the
    /// overview again. The PIN is asked for (`needs(.pin)`) only when the slot holds a certificate and its key's
    /// policy wants the PIN. `touch` is told true just before a signature the slot's touch policy makes wait for
    /// a touch, and false after it.
    public func verify(
        slot: PIV.Slot, pin: SecretBytes?,
        touch: @escaping @Sendable (Bool) -> Void = { _ in }
    ) async throws
        -> (PIVSignatureCheck.Outcome, PIVOverview)
    {
        try await withSession { s in
            let metadata = PIVFeature.metadata.isSupported(by: s.version) ? try? await s.slotMetadata(slot) : nil
            if pin == nil, try await s.certificate(in: slot) != nil,
                PIVSignatureCheck.needsPIN(slot, pinPolicy: metadata?.pinPolicy)
            {
                throw PIVOperationError.needs(.pin)
            }
            let waits = PIVSignatureCheck.needsTouch(metadata)
            let outcome = try await PIVSignatureCheck.run(s, slot: slot, pin: pin) {
                if waits { touch(true) }
            }
            if waits { touch(false) }
            return (outcome, try await PIVOverview.read(s))
        }
    }

    /// Signs `message` with the slot's key (the PIN first when its policy wants it). `touch` runs just before a
    /// signature the slot's touch policy makes wait for a touch.
    public func sign(
        _ message: [UInt8], slot: PIV.Slot, scheme: PIVSignatureScheme, pin: SecretBytes?,
        touch: @Sendable () -> Void = {}
    ) async throws -> [UInt8] {
        try await withSession { s in
            let metadata = PIVFeature.metadata.isSupported(by: s.version) ? try await s.slotMetadata(slot) : nil
            if PIVSignatureCheck.needsPIN(slot, pinPolicy: metadata?.pinPolicy) {
                guard let pin else { throw PIVOperationError.needs(.pin) }
                try await s.verifyPIN(pin)
            }
            if PIVSignatureCheck.needsTouch(metadata) { touch() }
            return try await s.sign(message, in: slot, algorithm: metadata?.algorithm, scheme: scheme)
        }
    }

    /// Changes the PIN; returns the overview afterwards.
    public func changePIN(current: SecretBytes, new: SecretBytes) async throws -> PIVOverview {
        try await withSession { s in
            try await s.changePIN(old: current, new: new)
            return try await PIVOverview.read(s)
        }
    }

    /// Changes the PUK; returns the overview afterwards.
    public func changePUK(current: SecretBytes, new: SecretBytes) async throws -> PIVOverview {
        try await withSession { s in
            try await s.changePUK(old: current, new: new)
            return try await PIVOverview.read(s)
        }
    }

    /// Sets a new PIN with the PUK (which unblocks it); returns the overview afterwards.
    public func unblockPIN(puk: SecretBytes, new: SecretBytes) async throws -> PIVOverview {
        try await withSession { s in
            try await s.unblockPIN(puk: puk, newPIN: new)
            return try await PIVOverview.read(s)
        }
    }

    /// The slot's public key: from its metadata (firmware 5.3 and later), else from its certificate.
    public func publicKey(in slot: PIV.Slot) async throws -> AsymmetricPublicKey {
        try await withSession { try await Self.slotPublicKey($0, slot) }
    }

    static func slotPublicKey(_ s: PIVSession, _ slot: PIV.Slot) async throws -> AsymmetricPublicKey {
        if PIVFeature.metadata.isSupported(by: s.version) {
            do {
                return try await s.slotMetadata(slot).publicKey
            } catch let e as SmartCardError
                where e == .status(.fileNotFound) || e == .status(.referencedDataNotFound)
            {
                throw PIVOperationError.noPublicKey(slot)
            }
        }
        guard let spki = try await s.certificate(in: slot)?.subjectPublicKeyInfo,
            let key = try? AsymmetricPublicKey(spki: spki)
        else { throw PIVOperationError.noPublicKey(slot) }
        return key
    }

    /// Signs what `make` builds from the slot's public key with the slot's key (the management key first when
    /// `managementKey` matters, then the PIN when the slot's policy wants it; `touch` before a signature the touch
    /// policy makes wait for), and returns the signed DER and the key.
    private func signedOnKey(
        _ slot: PIV.Slot, pin: SecretBytes?, managementKey: SecretBytes??, touch: @Sendable () -> Void,
        _ make: (AsymmetricPublicKey) throws -> CertificateIssuer.Unsigned,
        then store: (PIVSession, [UInt8], AsymmetricPublicKey) async throws -> Void = { _, _, _ in }
    ) async throws -> [UInt8] {
        try await withSession { s in
            let key = try await Self.slotPublicKey(s, slot)
            let metadata = PIVFeature.metadata.isSupported(by: s.version) ? try await s.slotMetadata(slot) : nil
            if let managementKey { try await Self.authenticate(s, managementKey) }
            if PIVSignatureCheck.needsPIN(slot, pinPolicy: metadata?.pinPolicy) {
                guard let pin else { throw PIVOperationError.needs(.pin) }
                try await s.verifyPIN(pin)
            }
            let unsigned = try make(key)
            if PIVSignatureCheck.needsTouch(metadata) { touch() }
            let signature = try await s.sign(unsigned.toBeSigned, in: slot, algorithm: metadata?.algorithm)
            let der = unsigned.signed(with: signature)
            try await store(s, der, key)
            return der
        }
    }

    /// A self-signed certificate for the slot's key, signed by that key on the key, valid from now for `days`
    /// days, stored in the slot (PKCS #11 modules such as ykcs11 show a slot only when it holds a certificate).
    public func generateCertificate(
        in slot: PIV.Slot, subject: [CertificateIssuer.NameAttribute], days: Int, pin: SecretBytes?,
        managementKey: SecretBytes?, touch: @Sendable () -> Void = {}
    ) async throws -> X509Certificate {
        var serial = Crypto.random(16)
        serial[0] &= 0x7F
        let der = try await signedOnKey(
            slot, pin: pin, managementKey: .some(managementKey), touch: touch,
            { key in
                try CertificateIssuer.unsignedCertificate(
                    subject: subject, publicKey: key, serial: serial, validity: .days(days))
            },
            then: { s, der, key in
                let certificate = try X509Certificate(der: der)
                guard certificate.isSigned(by: key) else { throw PIVOperationError.certificateNotTheSlotsKey(slot) }
                try await s.putCertificate(certificate, in: slot, compress: false)
            })
        return try X509Certificate(der: der)
    }

    /// A certificate request (PKCS #10, DER) for the slot's key, signed by it on the key.
    public func certificateRequest(
        in slot: PIV.Slot, subject: [CertificateIssuer.NameAttribute], pin: SecretBytes?,
        touch: @Sendable () -> Void = {}
    ) async throws -> [UInt8] {
        try await signedOnKey(slot, pin: pin, managementKey: nil, touch: touch) { key in
            try CertificateIssuer.unsignedRequest(subject: subject, publicKey: key)
        }
    }

    /// A subject as ykman and OpenSSL take it: `CN=alice,O=Example` (a `\,` is a comma in a value), or a plain
    /// name, which is the common name. The attribute names OpenSSL knows (CN, O, OU, C, L, ST, DC, emailAddress, ...)
    /// or dotted OIDs; OpenSSL refuses others when the certificate is made.
    public static func subject(_ text: String) throws(PIVOperationError) -> [CertificateIssuer.NameAttribute] {
        let trimmed = text.trimmingSpaces
        guard !trimmed.isEmpty else { throw .badSubject(text) }
        guard trimmed.contains("=") else { return [CertificateIssuer.NameAttribute("CN", trimmed)] }
        var parts = [String](), current = "", escaped = false
        for c in trimmed {
            if escaped {
                current.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "," {
                parts.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        parts.append(current)
        var out = [CertificateIssuer.NameAttribute]()
        for part in parts {
            guard let eq = part.firstIndex(of: "=") else { throw .badSubject(text) }
            let name = String(part[..<eq]).trimmingSpaces, value = String(part[part.index(after: eq)...]).trimmingSpaces
            guard !name.isEmpty, !value.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." }) else {
                throw .badSubject(text)
            }
            out.append(CertificateIssuer.NameAttribute(name, value))
        }
        return out
    }

    /// The slot's certificate, nil when it has none.
    public func certificate(in slot: PIV.Slot) async throws -> X509Certificate? {
        try await withSession { try await $0.certificate(in: slot) }
    }

    /// Stores `certificate` in `slot`. Unless `force`, one whose public key is not the slot's key (as its metadata
    /// tells, firmware 5.3 and later) is refused with `certificateNotTheSlotsKey` before anything is asked.
    public func importCertificate(
        _ certificate: X509Certificate, in slot: PIV.Slot, compress: Bool, force: Bool,
        managementKey: SecretBytes?
    ) async throws {
        try await withSession { s in
            if !force, PIVFeature.metadata.isSupported(by: s.version),
                let slotKey = try? await s.slotMetadata(slot).publicKey,
                let spki = certificate.subjectPublicKeyInfo, (try? AsymmetricPublicKey(spki: spki)) != slotKey
            {
                throw PIVOperationError.certificateNotTheSlotsKey(slot)
            }
            try await Self.authenticate(s, managementKey)
            try await s.putCertificate(certificate, in: slot, compress: compress)
        }
    }

    /// Deletes the slot's certificate (the key stays); `noCertificate` when there is none.
    public func deleteCertificate(in slot: PIV.Slot, managementKey: SecretBytes?) async throws {
        try await withSession { s in
            guard try await s.certificate(in: slot) != nil else { throw PIVOperationError.noCertificate(slot) }
            try await Self.authenticate(s, managementKey)
            try await s.deleteCertificate(in: slot)
        }
    }

    /// Generates a key in `slot`; returns its public key. `slow` runs before a generation that takes a while
    /// (RSA 2048 and larger).
    public func generateKey(
        in slot: PIV.Slot, algorithm: PIV.Algorithm, pinPolicy: PIV.PINPolicy,
        touchPolicy: PIV.TouchPolicy, managementKey: SecretBytes?,
        slow: @Sendable () -> Void = {}
    ) async throws -> AsymmetricPublicKey {
        try await withSession { s in
            try await Self.authenticate(s, managementKey)
            if algorithm.rsaModulusLength ?? 0 >= 256 { slow() }
            return try await s.generateKey(
                in: slot, algorithm: algorithm, pinPolicy: pinPolicy, touchPolicy: touchPolicy)
        }
    }

    /// The key in `slot`: algorithm, PIN and touch policies, where it came from and its public key (GET METADATA,
    /// firmware 5.3 and later).
    public func keyInfo(_ slot: PIV.Slot) async throws -> PIVSlotMetadata {
        try await withSession { s in
            try PIVFeature.metadata.check(s.version)
            return try await Self.slotMetadata(s, slot)
        }
    }

    /// The slot's metadata; a slot without a key is `noPublicKey`.
    static func slotMetadata(_ s: PIVSession, _ slot: PIV.Slot) async throws -> PIVSlotMetadata {
        do {
            return try await s.slotMetadata(slot)
        } catch let e as SmartCardError where e == .status(.fileNotFound) || e == .status(.referencedDataNotFound) {
            throw PIVOperationError.noPublicKey(slot)
        } catch PIVError.noKeyInSlot {
            throw PIVOperationError.noPublicKey(slot)
        }
    }

    /// Whether `slot` holds a key (firmware 5.3 and later tell; before, nil).
    static func holdsKey(_ s: PIVSession, _ slot: PIV.Slot) async throws -> Bool? {
        guard PIVFeature.metadata.isSupported(by: s.version) else { return nil }
        do {
            _ = try await slotMetadata(s, slot)
            return true
        } catch PIVOperationError.noPublicKey {
            return false
        }
    }

    /// Moves the key in `source` to the empty slot `destination` (firmware 5.7); certificates stay where they are.
    /// A destination that holds a key is refused before anything changes.
    public func moveKey(from source: PIV.Slot, to destination: PIV.Slot, managementKey: SecretBytes?) async throws {
        try await withSession { s in
            try PIVFeature.moveKey.check(s.version)
            _ = try await Self.slotMetadata(s, source)
            if try await Self.holdsKey(s, destination) == true { throw PIVOperationError.slotHoldsKey(destination) }
            try await Self.authenticate(s, managementKey)
            try await s.moveKey(from: source, to: destination)
        }
    }

    /// Deletes the key in `slot` (firmware 5.7); its certificate, if any, stays.
    public func deleteKey(in slot: PIV.Slot, managementKey: SecretBytes?) async throws {
        try await withSession { s in
            try PIVFeature.moveKey.check(s.version)
            _ = try await Self.slotMetadata(s, slot)
            try await Self.authenticate(s, managementKey)
            try await s.deleteKey(in: slot)
        }
    }

    /// Imports `key` into `slot` (replacing what is there); returns the algorithm it went in as.
    public func importKey(
        _ key: AsymmetricPrivateKey, in slot: PIV.Slot, pinPolicy: PIV.PINPolicy, touchPolicy: PIV.TouchPolicy,
        managementKey: SecretBytes?
    ) async throws -> PIV.Algorithm {
        try await withSession { s in
            try await Self.authenticate(s, managementKey)
            return try await s.importKey(key, in: slot, pinPolicy: pinPolicy, touchPolicy: touchPolicy)
        }
    }

    /// The content of data object `id` (the value of its 53 tag, of 7E for discovery). An object the key keeps
    /// behind the PIN (fingerprints, facial image, printed information, iris) is read after it: `needs(.pin)`
    /// when none is given. `PIVError.objectNotFound` when the key does not have it.
    public func readObject(_ id: [UInt8], pin: SecretBytes?) async throws -> [UInt8] {
        try await withSession { s in
            do {
                return try await s.object(id)
            } catch PIVError.securityConditionNotSatisfied {
                guard let pin else { throw PIVOperationError.needs(.pin) }
                try await s.verifyPIN(pin)
                return try await s.object(id)
            }
        }
    }

    /// Stores `data` as object `id` (empty deletes it), as it is. Needs the management key. The printed
    /// information object is refused while ykman keeps a PIN-protected management key in it.
    public func writeObject(_ id: [UInt8], _ data: [UInt8], managementKey: SecretBytes?) async throws {
        try await withSession { s in
            if id == PIV.ObjectID.printedInformation, try await s.managementKeyIsPINProtected() {
                throw PIVOperationError.printedHoldsManagementKey
            }
            try await Self.authenticate(s, managementKey)
            try await s.putObject(id, data)
        }
    }

    /// The objects `generateObject` makes.
    public enum GeneratedObject: Sendable, Equatable {
        /// A Card Holder Unique Identifier with a random GUID, as ykman makes one.
        case chuid
        /// A Card Capability Container with a random card identifier, as ykman makes one.
        case cardCapabilityContainer

        /// The object `id` names, when it is one of these.
        public init?(id: [UInt8]) {
            switch id {
            case PIV.ObjectID.chuid: self = .chuid
            case PIV.ObjectID.cardCapabilityContainer: self = .cardCapabilityContainer
            default: return nil
            }
        }

        /// Its object identifier.
        public var id: [UInt8] {
            self == .chuid ? PIV.ObjectID.chuid : PIV.ObjectID.cardCapabilityContainer
        }
    }

    /// Makes a new CHUID or CCC and stores it (replacing the one there). Needs the management key. Returns what
    /// was stored.
    @discardableResult
    public func generateObject(_ object: GeneratedObject, managementKey: SecretBytes?) async throws -> [UInt8] {
        try await withSession { s in
            try await Self.authenticate(s, managementKey)
            let content =
                object == .chuid ? PIVSession.newCHUID() : PIVSession.newCardCapabilityContainer()
            try await s.putObject(object.id, content)
            return content
        }
    }

    /// Sets how many tries the PIN and the PUK have (1 to 255); both go back to their defaults (123456 and
    /// 12345678). Needs the management key and the PIN. Returns the overview afterwards.
    public func setRetries(pin tries: Int, puk pukTries: Int, pin: SecretBytes?, managementKey: SecretBytes?)
        async throws -> PIVOverview
    {
        try await withSession { s in
            try await Self.authenticate(s, managementKey)
            guard let pin else { throw PIVOperationError.needs(.pin) }
            try await s.verifyPIN(pin)
            try await s.setPINRetries(pin: tries, puk: pukTries)
            return try await PIVOverview.read(s)
        }
    }

    /// The attestation of the key in `slot`, checked against the attestation certificate and the slot's key.
    public func attest(_ slot: PIV.Slot) async throws -> PIVAttestation {
        try await withSession { s in
            let expected =
                PIVFeature.metadata.isSupported(by: s.version) ? try await s.slotMetadata(slot).publicKey : nil
            return try await s.attest(slot, expected: expected)
        }
    }

    /// What `changeManagementKey` sets.
    public enum NewManagementKey: Sendable {
        /// A random key, made here and returned.
        case generate
        /// The key given; nil asks for it (`needs(.newManagementKey)`) once the current one is known to work.
        case given(SecretBytes?)
    }

    /// Sets a new management key of `algorithm` (nil: the current one's). Returns the key set.
    public func changeManagementKey(
        algorithm: PIV.Algorithm?, to new: NewManagementKey, requireTouch: Bool,
        managementKey: SecretBytes?
    ) async throws -> SecretBytes {
        try await withSession { s in
            let chosen: PIV.Algorithm
            if let algorithm { chosen = algorithm } else { chosen = try await s.managementKeyAlgorithm() }
            if chosen != .tripleDES { try PIVFeature.aesManagementKey.check(s.version) }
            try await Self.authenticate(s, managementKey)
            let length = chosen.keyLength ?? 24
            let key: SecretBytes
            switch new {
            case .generate: key = SecretBytes(Crypto.random(length))
            case .given(nil): throw PIVOperationError.needs(.newManagementKey(chosen))
            case .given(let given?):
                guard given.count == length else {
                    throw PIVOperationError.managementKeyLength(chosen, expected: length, given: given.count)
                }
                key = given
            }
            try await s.setManagementKey(key, algorithm: chosen, requireTouch: requireTouch)
            return key
        }
    }

    /// Blocks the PIN and the PUK (as the key requires) and resets PIV: no keys or certificates, the default PIN,
    /// PUK and management key.
    public func reset() async throws {
        try await withSession { s in
            try await s.blockPINAndPUK()
            try await s.reset()
        }
    }

    /// Authenticates with the management key: the default one when the key says its key is the default (or, on
    /// firmware without metadata, when the default works), otherwise `given`, or `needs(.managementKey)`.
    static func authenticate(_ s: PIVSession, _ given: SecretBytes?) async throws {
        let defaultKey = SecretBytes(PIV.defaultManagementKey)
        if PIVFeature.metadata.isSupported(by: s.version) {
            let metadata = try await s.managementKeyMetadata()
            if metadata.isDefault {
                try await s.authenticate(managementKey: defaultKey, algorithm: metadata.algorithm)
                return
            }
            guard let given else { throw PIVOperationError.needs(.managementKey) }
            try await s.authenticate(managementKey: given, algorithm: metadata.algorithm)
            return
        }
        if let given {
            try await s.authenticate(managementKey: given)
            return
        }
        do {
            try await s.authenticate(managementKey: defaultKey)
        } catch PIVError.managementKeyAuthenticationFailed {
            throw PIVOperationError.needs(.managementKey)
        }
    }
}

/// A secret a PIV operation asks the face for.
public enum PIVQuestion: Sendable, Equatable {
    /// The PIN.
    case pin
    /// The current management key (it is not the default).
    case managementKey
    /// The new management key, of this algorithm.
    case newManagementKey(PIV.Algorithm)
}

/// What a PIV operation refuses, or needs, beyond what the key says (`PIVError`).
public enum PIVOperationError: Error, Sendable, Equatable {
    /// Nothing changed: the operation needs this answer.
    case needs(PIVQuestion)
    /// The slot has no certificate.
    case noCertificate(PIV.Slot)
    /// The slot holds no key, or (firmware before 5.3, no certificate) the key does not tell its public key.
    case noPublicKey(PIV.Slot)
    /// A certificate subject that is not NAME=value pairs.
    case badSubject(String)
    /// The certificate's public key is not the slot's key.
    case certificateNotTheSlotsKey(PIV.Slot)
    /// A management key of the wrong length for its algorithm.
    case managementKeyLength(PIV.Algorithm, expected: Int, given: Int)
    /// The slot holds a key already (a move goes to an empty slot only).
    case slotHoldsKey(PIV.Slot)
    /// The printed information object holds the management key ykman protects with the PIN: not overwritten.
    case printedHoldsManagementKey
}
