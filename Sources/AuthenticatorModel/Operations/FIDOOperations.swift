import KeyKit

/// The FIDO2 application's actions, written once for the FIDO2 tab and `ykterm fido` (the PIN so far).
///
/// Each opens the key's FIDO interface (`FIDOOpener`), makes a CTAP2 session, does one thing, drops any PIN token
/// it took and closes the connection, whether it succeeded or not. None prints, prompts or formats; the faces ask
/// for PINs before they call (the key is not held while a person types) and word the typed errors.
public struct FIDOOperations: Sendable {
    public let opener: any FIDOOpener
    public let hooks: Hooks

    /// What a face wants to know while an operation runs.
    public struct Hooks: Sendable {
        /// The connection is open, before the first request (the TUI's Esc cancels a touch through it).
        public var opened: (@Sendable (any FIDOConnection) -> Void)?
        /// The key's progress reports (waiting for a touch, or not), with the connection they came on.
        public var progress: (@Sendable (FIDOProgress, any FIDOConnection) -> Void)?

        public init(
            opened: (@Sendable (any FIDOConnection) -> Void)? = nil,
            progress: (@Sendable (FIDOProgress, any FIDOConnection) -> Void)? = nil
        ) {
            self.opened = opened
            self.progress = progress
        }
    }

    public init(_ opener: any FIDOOpener, hooks: Hooks = Hooks()) {
        self.opener = opener
        self.hooks = hooks
    }

    /// Opens the key's FIDO interface and a CTAP2 session on it, runs `body`, then drops the PIN token and closes
    /// the connection (also when `body` threw).
    public func withSession<T>(_ body: (CTAP2Session) async throws -> T) async throws -> T {
        try await withOpened(opener.openFIDO, close: { await $0.close() }) { connection in
            hooks.opened?(connection)
            let session = try await CTAP2Session.make(connection: connection)
            if let progress = hooks.progress {
                await session.setProgress { progress($0, connection) }
            }
            let result = try await body(session)
            await session.dropToken()
            return result
        }
    }

    /// What the key says of itself: getInfo and the PIN retries when it has a PIN.
    public func info() async throws -> FIDOInfo {
        // The session was made with getInfo a moment ago: no need to read it again.
        try await withSession { try await Self.status($0, readAgain: false) }
    }

    /// getInfo (read again unless `readAgain` is false, for a session just made) and the PIN retries, on an open
    /// session.
    public static func status(_ s: CTAP2Session, readAgain: Bool = true) async throws -> FIDOInfo {
        let info = readAgain ? try await s.refreshInfo() : await s.info
        var retries: Int?
        var powerCycle = false
        if info.pinSet != nil, let r = try? await s.pinRetries() {
            retries = r.retries
            powerCycle = r.powerCycleNeeded ?? false
        }
        return FIDOInfo(info, retries: retries, powerCycleNeeded: powerCycle)
    }

    /// Sets the first PIN. A key without PIN support is `FIDOSessionError.noPINSupport`; one that has a PIN (set
    /// elsewhere since the face looked) `FIDOOperationError.pinAlreadySet`. Returns the key afterwards.
    public func setPIN(_ new: String) async throws -> FIDOInfo {
        try await withSession { s in
            switch await s.info.pinSet {
            case nil: throw FIDOSessionError.noPINSupport
            case true?: throw FIDOOperationError.pinAlreadySet
            case false?: break
            }
            try await s.setPIN(new)
            return try await Self.status(s)
        }
    }

    /// Changes the PIN. A key without a PIN is `CTAPError.pinNotSet`. When the key answered (a wrong PIN, a
    /// policy), its error comes through as it is and nothing changed; when the change was sent and no answer
    /// came (the key pulled out, the connection broken), it is `FIDOOperationError.pinChangeUncertain`: the PIN
    /// is the old or the new one. Returns the key afterwards.
    public func changePIN(current: String, new: String) async throws -> FIDOInfo {
        try await withSession { s in
            switch await s.info.pinSet {
            case nil: throw FIDOSessionError.noPINSupport
            case false?: throw CTAPError(CTAPError.pinNotSet)
            case true?: break
            }
            do {
                try await s.changePIN(old: current, new: new)
            } catch {
                throw Self.keyAnswered(error) ? error : FIDOOperationError.pinChangeUncertain(error)
            }
            return try await Self.status(s)
        }
    }

    /// Checks the PIN (a token with `permissions` is taken and dropped); returns the key afterwards, with the
    /// retries left. A key without a PIN is `CTAPError.pinNotSet`.
    public func verifyPIN(_ pin: String, permissions: PINPermissions = []) async throws -> FIDOInfo {
        try await withSession { s in
            switch await s.info.pinSet {
            case nil: throw FIDOSessionError.noPINSupport
            case false?: throw CTAPError(CTAPError.pinNotSet)
            case true?: break
            }
            try await s.verifyPIN(pin, permissions: permissions)
            return try await Self.status(s)
        }
    }

    /// Every discoverable credential, by relying party, with a token for credential management (`auth`); with
    /// `fingerprints`, on a key with a sensor, its fingerprints too (nil when the token may not read them).
    public func credentials(
        _ auth: FIDOAuthorization,
        fingerprints: Bool = false
    ) async throws -> (
        credentials: [FIDOCredential],
        fingerprints: [FIDOFingerprint]?
    ) {
        try await withAuthorized(auth) { s in
            let prints = fingerprints ? try await Self.fingerprints(s) : nil
            return (try await Self.credentials(s), prints)
        }
    }

    /// Deletes the credential `id`; returns it, the credentials left and the key afterwards. One the key no longer
    /// holds is `CTAPError.noCredentials`.
    public func deleteCredential(_ id: [UInt8], _ auth: FIDOAuthorization) async throws
        -> (deleted: FIDOCredential, remaining: [FIDOCredential], info: FIDOInfo)
    {
        try await withAuthorized(auth) { s in
            guard let credential = try await Self.credentials(s).first(where: { $0.credentialID == id }) else {
                throw CTAPError(CTAPError.noCredentials)
            }
            try await s.deleteCredential(id)
            return (credential, try await Self.credentials(s), try await Self.status(s))
        }
    }

    /// Sets the user name and display name of credential `id`: `.none` keeps one as it is, `.some(nil)` removes
    /// it; the user ID stays. Needs CTAP 2.1 credential management. Returns the credential as it is now, and all.
    public func updateUser(
        _ id: [UInt8], name: String??, displayName: String??,
        _ auth: FIDOAuthorization
    ) async throws -> (updated: FIDOCredential, all: [FIDOCredential]) {
        try await withAuthorized(auth) { s in
            guard await s.info.supportsUpdateUserInformation else {
                throw FIDOSessionError.notSupported(.updateUserInformation)
            }
            guard let credential = try await Self.credentials(s).first(where: { $0.credentialID == id }) else {
                throw CTAPError(CTAPError.noCredentials)
            }
            try await s.updateUser(
                id,
                user: CTAP2Session.User(
                    id: credential.userID, name: name ?? credential.userName,
                    displayName: displayName ?? credential.displayName))
            let all = try await Self.credentials(s)
            guard let updated = all.first(where: { $0.credentialID == id }) else {
                throw CTAPError(CTAPError.noCredentials)
            }
            return (updated, all)
        }
    }

    /// Resets the FIDO application (every credential and the PIN go; the key wants it soon after it was
    /// plugged in, and a touch). Returns the key afterwards.
    public func reset() async throws -> FIDOInfo {
        try await withSession { s in
            try await s.reset()
            return try await Self.status(s)
        }
    }

    /// The fingerprints enrolled on a key with a sensor (`FIDOSessionError.notSupported(.bioEnrollment)` on one
    /// without), with a token that may read them.
    public func fingerprints(_ auth: FIDOAuthorization) async throws -> [FIDOFingerprint] {
        try await withFingerprints(auth) { s in try await Self.enrolled(s) }
    }

    /// Names fingerprint `templateID` (at most the sensor's longest name). Returns the fingerprints afterwards.
    public func renameFingerprint(
        _ templateID: [UInt8], to name: String,
        _ auth: FIDOAuthorization
    ) async throws -> [FIDOFingerprint] {
        try await withFingerprints(auth) { s in
            try await Self.requireEnrolled(s, templateID)
            let max = try await s.fingerprintSensorInfo().maxNameLength
            try await s.setFingerprintName(templateID: templateID, name: name, maxNameLength: max)
            return try await Self.enrolled(s)
        }
    }

    /// Removes fingerprint `templateID`; returns it and the fingerprints left.
    public func deleteFingerprint(_ templateID: [UInt8], _ auth: FIDOAuthorization) async throws
        -> (deleted: FIDOFingerprint, remaining: [FIDOFingerprint])
    {
        try await withFingerprints(auth) { s in
            let deleted = try await Self.requireEnrolled(s, templateID)
            try await s.removeFingerprint(templateID: templateID)
            return (deleted, try await Self.enrolled(s))
        }
    }

    /// How a fingerprint enrollment goes, as the key reports it.
    public enum EnrollmentProgress: Sendable, Equatable {
        /// The first sample is awaited: the finger on the sensor.
        case touchTheSensor
        /// A sample was taken; `remaining` more are needed.
        case good(remaining: Int)
        /// The sensor could not use the sample (why); `remaining` more are needed.
        case unusable(CTAP2Session.SampleStatus, remaining: Int)
    }

    /// Enrolls a fingerprint, named `name` when given (at most the sensor's longest name, checked first), each
    /// sample waited for up to `timeoutMilliseconds`. Whatever stops it (Ctrl-C's cancel, a timeout, a refusal),
    /// the key is told to drop the template it was making, and `stopped` turns the error into the one thrown.
    /// Returns the new template's ID.
    public func enrollFingerprint(
        name: String?, _ auth: FIDOAuthorization, timeoutMilliseconds: Int,
        progress: (EnrollmentProgress) -> Void,
        stopped: (any Error) -> any Error = { $0 }
    ) async throws -> [UInt8] {
        try await withFingerprints(auth) { s in
            let sensor = try await s.fingerprintSensorInfo()
            if let name, let max = sensor.maxNameLength, name.utf8.count > max {
                throw FIDOSessionError.fingerprintNameTooLong(maximum: max, bytes: name.utf8.count)
            }
            progress(.touchTheSensor)
            var step: CTAP2Session.EnrollmentStep
            do {
                step = try await s.enrollBegin(timeoutMilliseconds: timeoutMilliseconds)
                while step.status != .good || step.remaining > 0 {
                    progress(
                        step.status == .good
                            ? .good(remaining: step.remaining)
                            : .unusable(step.status, remaining: step.remaining))
                    step = try await s.enrollCaptureNextSample(
                        templateID: step.templateID,
                        timeoutMilliseconds: timeoutMilliseconds)
                }
            } catch {
                try? await s.cancelCurrentEnrollment()
                throw stopped(error)
            }
            if let name, !name.isEmpty {
                try await s.setFingerprintName(
                    templateID: step.templateID, name: name, maxNameLength: sensor.maxNameLength)
            }
            return step.templateID
        }
    }

    private func withFingerprints<T>(_ auth: FIDOAuthorization, _ body: (CTAP2Session) async throws -> T) async throws
        -> T
    {
        try await withAuthorized(auth) { s in
            guard await s.info.supportsBioEnrollment else { throw FIDOSessionError.notSupported(.bioEnrollment) }
            return try await body(s)
        }
    }

    private static func enrolled(_ s: CTAP2Session) async throws -> [FIDOFingerprint] {
        try await s.fingerprints().map { FIDOFingerprint(templateID: $0.templateID, name: $0.name) }
    }

    /// The fingerprint `templateID`; an unknown one is `FIDOSessionError.noSuchFingerprint`, before anything is
    /// changed.
    @discardableResult
    private static func requireEnrolled(_ s: CTAP2Session, _ templateID: [UInt8]) async throws -> FIDOFingerprint {
        guard let f = try await enrolled(s).first(where: { $0.templateID == templateID }) else {
            throw FIDOSessionError.noSuchFingerprint(templateID: templateID)
        }
        return f
    }

    /// getInfo as the key gives it, and the PIN retries (nil without PIN support, or when the key will not tell
    /// before a PIN is set).
    public func authenticatorInfo() async throws -> (info: AuthenticatorInfo, retries: Int?) {
        try await withSession { s in
            let info = await s.info
            let retries = info.pinSet != nil ? try? await s.pinRetries().retries : nil
            return (info, retries)
        }
    }

    /// What `selfTest` did: the attestation format of the credential it made, the signature counter of the
    /// assertion, and whether it deleted the credential again (a discoverable one, made with the PIN).
    public struct SelfTest: Sendable, Equatable {
        public var format: String
        public var counter: UInt32
        public var deleted: Bool
    }

    /// Makes a credential for `rpID` (discoverable when the key has a PIN, which is then needed: `pinNeeded`),
    /// checks its attestation, gets an assertion and checks its signature with the credential's key, and deletes
    /// a discoverable one again through credential management.
    public func selfTest(rpID: String, pin: String?) async throws -> SelfTest {
        try await withSession { s in
            let resident = await s.info.pinSet == true
            if resident {
                guard let pin else { throw FIDOOperationError.pinNeeded }
                // CTAP 2.1 tokens lose their permissions once used with a touch, so each step gets its own.
                try await s.verifyPIN(pin, permissions: [.makeCredential], rpID: rpID)
            }
            let clientDataHash = Crypto.random(32)
            let user = CTAP2Session.User(id: Crypto.random(16), name: "selftest", displayName: "ykterm self-test")
            let made = try await s.makeCredential(
                clientDataHash: clientDataHash, rp: .init(id: rpID, name: "ykterm self-test"),
                user: user, residentKey: resident)
            await s.dropToken()
            try FIDOVerifier.verifyAttestation(made, clientDataHash: clientDataHash)
            guard let publicKey = made.authData.es256PublicKey else {
                throw FIDOSessionError.malformed(Malformation(.credentialKey, .wrongKeyType))
            }
            let challenge = Crypto.random(32)
            let assertions = try await s.getAssertions(
                rpID: rpID, clientDataHash: challenge, allowList: [made.credentialID])
            guard let assertion = assertions.first else { throw CTAPError(CTAPError.noCredentials) }
            try FIDOVerifier.verifyAssertion(assertion, publicKey: publicKey, clientDataHash: challenge, rpID: rpID)
            if resident, let pin {
                try await s.verifyPIN(pin, permissions: [.credentialManagement])
                try await s.deleteCredential(made.credentialID)
            }
            return SelfTest(format: made.format, counter: assertion.authData.signCount, deleted: resident)
        }
    }

    /// Registers with the U2F application `application` (the SHA-256 of its ID) over U2F (CTAP1); the
    /// registration's signature is checked against its attestation certificate. The key's progress (a touch it
    /// waits for) goes to `hooks.progress`.
    public func u2fRegister(application: [UInt8]) async throws -> U2FSession.Registration {
        try await withU2F { s, progress in
            try await s.register(challenge: Crypto.random(32), application: application, progress: progress)
        }
    }

    /// Signs a fresh challenge with the U2F key handle `keyHandle` of `application`; the signature is checked with
    /// `publicKey`.
    public func u2fAuthenticate(
        application: [UInt8], keyHandle: [UInt8],
        publicKey: P256PublicKey
    ) async throws -> U2FSession.Authentication {
        try await withU2F { s, progress in
            try await s.authenticate(
                challenge: Crypto.random(32), application: application, keyHandle: keyHandle,
                publicKey: publicKey, progress: progress)
        }
    }

    /// The U2F version the key gives (a U2F-only key's information).
    public func u2fVersion() async throws -> String {
        try await withU2F { s, _ in try await s.version() }
    }

    /// A U2F session on the key's FIDO interface, closed after `body`.
    private func withU2F<T>(_ body: (U2FSession, (@Sendable (FIDOProgress) -> Void)?) async throws -> T) async throws
        -> T
    {
        try await withOpened(opener.openFIDO, close: { await $0.close() }) { connection in
            hooks.opened?(connection)
            let progress = hooks.progress.map { report in { @Sendable (p: FIDOProgress) in report(p, connection) } }
            return try await body(U2FSession(connection: connection), progress)
        }
    }

    /// Raises the key's minimum PIN length (CTAP 2.1 authenticatorConfig) and names the relying parties that may
    /// read it (none: the key's list stays). `pin`: the key's PIN when it has one (`FIDOOperationError.pinNeeded`
    /// when it has one and none was given). A lower minimum than the key's, or more relying parties than it takes,
    /// is refused before anything is sent. Returns whether the key now wants its PIN changed and did not before.
    public func setMinPINLength(_ length: Int, rpIDs: [String], pin: String?) async throws -> Bool {
        try await withConfig(pin) { s, info in
            guard info.supportsSetMinPINLength else { throw FIDOSessionError.notSupported(.setMinPINLength) }
            if length < info.minPINLength {
                throw FIDOSessionError.minPINLengthDecrease(current: info.minPINLength, requested: length)
            }
            if let max = info.maxRPIDsForSetMinPINLength, rpIDs.count > max {
                throw FIDOOperationError.tooManyRelyingParties(max: max, given: rpIDs.count)
            }
            try await s.setMinPINLength(length, rpIDs: rpIDs.isEmpty ? nil : rpIDs)
            return await s.info.forcePINChange && !info.forcePINChange
        } precheck: { info in
            guard info.supportsSetMinPINLength else { throw FIDOSessionError.notSupported(.setMinPINLength) }
        }
    }

    /// Makes the key refuse its PIN until it is changed (needs a PIN set, and `pin`).
    public func forcePINChange(pin: String?) async throws {
        try await withConfig(pin) { s, _ in
            try await s.setMinPINLength(nil, forceChangePIN: true)
        } precheck: { info in
            guard info.supportsSetMinPINLength else { throw FIDOSessionError.notSupported(.setMinPINLength) }
            guard info.pinSet == true else { throw CTAPError(CTAPError.pinNotSet) }
        }
    }

    /// Switches always-UV; returns whether it is now on.
    public func toggleAlwaysUV(pin: String?) async throws -> Bool {
        try await withConfig(pin) { s, _ in
            try await s.toggleAlwaysUV()
        } precheck: { info in
            guard info.supportsConfig else { throw FIDOSessionError.notSupported(.authenticatorConfig) }
            guard info.alwaysUV != nil else { throw FIDOSessionError.notSupported(.alwaysUV) }
        }
    }

    /// Enables enterprise attestation (until a FIDO reset); returns false when it was enabled already (nothing
    /// sent, no PIN needed).
    public func enableEnterpriseAttestation(pin: String?) async throws -> Bool {
        try await withSession { s in
            let info = await s.info
            guard info.supportsConfig else { throw FIDOSessionError.notSupported(.authenticatorConfig) }
            guard let enabled = info.enterpriseAttestation else {
                throw FIDOSessionError.notSupported(.enterpriseAttestation)
            }
            if enabled { return false }
            try await Self.authorizeConfig(s, info, pin)
            try await s.enableEnterpriseAttestation()
            return true
        }
    }

    /// An authenticatorConfig request: `precheck` refuses what the key cannot do before the PIN is used, then a
    /// token with the acfg permission is taken when the key has a PIN.
    private func withConfig<T>(
        _ pin: String?, _ body: (CTAP2Session, AuthenticatorInfo) async throws -> T,
        precheck: (AuthenticatorInfo) throws -> Void
    ) async throws -> T {
        try await withSession { s in
            let info = await s.info
            try precheck(info)
            try await Self.authorizeConfig(s, info, pin)
            return try await body(s, info)
        }
    }

    /// A token with the acfg permission when the key has a PIN (`pinNeeded` without one); a key without a PIN takes
    /// authenticatorConfig without a token.
    private static func authorizeConfig(_ s: CTAP2Session, _ info: AuthenticatorInfo, _ pin: String?) async throws {
        guard info.pinSet == true else { return }
        guard let pin else { throw FIDOOperationError.pinNeeded }
        try await s.verifyPIN(pin, permissions: [.authenticatorConfig])
    }

    /// A session with a PIN token for `auth`: the PIN verified for credential management (and the fingerprints,
    /// on a key with a sensor), or a token held from before. A held token the key turns down ends it with
    /// `CTAPError.pinAuthInvalid`, as the key said it.
    public func withAuthorized<T>(_ auth: FIDOAuthorization, _ body: (CTAP2Session) async throws -> T) async throws -> T
    {
        try await withSession { s in
            switch auth {
            case .pin(let pin):
                let info = await s.info
                guard info.pinSet == true else { throw CTAPError(CTAPError.pinNotSet) }
                try await s.verifyPIN(pin, permissions: Self.managementPermissions(info))
            case .token(let held):
                await s.adoptToken(held)
            }
            return try await body(s)
        }
    }

    /// The permissions a token for managing credentials asks for: credential management, and bio enrollment on a
    /// key with a sensor.
    public static func managementPermissions(_ info: AuthenticatorInfo) -> PINPermissions {
        var permissions: PINPermissions = info.supportsCredentialManagement ? [.credentialManagement] : []
        if info.supportsBioEnrollment { permissions.insert(.bioEnrollment) }
        return permissions
    }

    /// Every discoverable credential on an authorized session, by relying party.
    public static func credentials(_ s: CTAP2Session) async throws -> [FIDOCredential] {
        var out = [FIDOCredential]()
        for rp in try await s.relyingParties() {
            for c in try await s.credentials(of: rp) {
                out.append(
                    FIDOCredential(
                        rpID: rp.id, rpName: rp.name, userName: c.user.name,
                        displayName: c.user.displayName, credentialID: c.credentialID,
                        userID: c.user.id, credProtect: c.credProtect,
                        largeBlobKey: c.hasLargeBlobKey))
            }
        }
        return out
    }

    /// On a key with a sensor, its fingerprints (nil when the token may not read them, or there is no sensor).
    public static func fingerprints(_ s: CTAP2Session) async throws -> [FIDOFingerprint]? {
        guard await s.info.supportsBioEnrollment else { return nil }
        do {
            return try await enrolled(s)
        } catch let e as CTAPError where e.code == CTAPError.pinAuthInvalid {
            return nil
        }
    }

    /// Whether `error` is the key's own answer (so a change it refused did not happen): a CTAP status, a status
    /// word, or what the session refused before sending.
    public static func keyAnswered(_ error: any Error) -> Bool {
        switch error {
        case is CTAPError, is FIDOSessionError: return true
        case let e as SmartCardError:
            if case .status = e { return true }
            return false
        default: return false
        }
    }
}

/// How an operation that needs a PIN token gets one.
public enum FIDOAuthorization: Sendable {
    /// The PIN: a token is taken for the operation, and dropped after it.
    case pin(String)
    /// A token taken earlier (the FIDO2 tab keeps one after the PIN was verified).
    case token(CTAP2Session.HeldToken)
}

/// What a FIDO operation refuses, or cannot tell, beyond what the key says (`CTAPError`).
public enum FIDOOperationError: Error, Sendable {
    /// Set PIN on a key that has one.
    case pinAlreadySet
    /// The PIN change was sent and no answer came: the PIN is the old or the new one.
    case pinChangeUncertain(any Error)
    /// The key has a PIN and the operation needs it: nothing was sent.
    case pinNeeded
    /// More relying parties for the minimum PIN length than the key takes.
    case tooManyRelyingParties(max: Int, given: Int)
}
