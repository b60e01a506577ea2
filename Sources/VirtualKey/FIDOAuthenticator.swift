import FoundationEssentials
import Glibc
import KeyKit

/// The FIDO2 (CTAP 2.1) and U2F (CTAP1) authenticator of the virtual key, answering as a YubiKey 5 with the
/// firmware in the key's state does: ES256 credentials and, from firmware 5.2, EdDSA (Ed25519) ones, discoverable
/// credentials, the client PIN with PIN/UV auth protocols 1 and 2, PIN/UV auth tokens with permissions, credential
/// management, the credProtect and hmac-secret extensions, authenticatorConfig with the minPinLength extension (from
/// firmware 5.7), fingerprint enrollment on a profile with a sensor, and U2F registration and authentication.
/// Attestation is packed self attestation for CTAP2 (signed with the credential's own key, under its algorithm) and a
/// self-signed certificate for U2F. Its profile makes it differ as keys of other makes do (one PIN/UV auth protocol
/// only, U2F only, getInfo entries no client knows, getPinRetries refused before a PIN is set, long keepalives before
/// answers that need the user).
///
/// Transports (NFC through `FIDOApplet`, USB HID through `VirtualKey.fidoHIDHandler()`) hand it whole
/// messages. Like the applets it is owned by `VirtualKey` and only called with the key's lock held; the
/// persistent state is the key's `VirtualKeyState.fido`, the power-cycle state (key agreement key, PIN
/// token, consecutive wrong PINs, pending getNextAssertion and enumerations) lives here.
///
/// Credential IDs of non-discoverable credentials, and U2F key handles, carry their private key, wrapped
/// with two keys of the device (`FIDOState.wrapEncryptionKey`, `wrapMACKey`), 98 bytes:
///
///     0x01 | flags | IV (16) | AES-256-CBC(encryption key, IV, private key (32) | rpIdHash (32)) (64)
///          | LEFT(HMAC-SHA-256(MAC key, everything before), 16)
///
/// where flags holds the credProtect level (bits 0-1), 0x40 for an EdDSA key (the private key is then an Ed25519
/// seed, not a P-256 scalar; U2F takes none of those) and 0x80 for hmac-secret. A reset makes new wrapping keys, so
/// earlier key handles stop working. Discoverable credentials get 32 random bytes.
public final class FIDOAuthenticator {
    /// This authenticator's AAGUID, 804b8213-9e22-4f99-b7cf-b9568f76800a: a random (version 4) UUID made
    /// for ykterm's virtual key, so relying parties never mistake it for a Yubico model.
    public static let aaguid: [UInt8] = [
        0x80, 0x4B, 0x82, 0x13, 0x9E, 0x22, 0x4F, 0x99,
        0xB7, 0xCF, 0xB9, 0x56, 0x8F, 0x76, 0x80, 0x0A,
    ]
    public static let maxMessageSize = 1200
    public static let maxCredentialCountInList = 8
    public static let maxCredentialIDLength = 128
    /// Consecutive wrong PINs that block PIN use until the next power cycle.
    public static let wrongPINsPerPowerCycle = 3
    /// Seconds getNextAssertion may follow getAssertion.
    static let nextAssertionTimeout = 30.0

    /// Seconds a simulated touch takes (0: at once).
    public let userPresenceDelay: Double
    /// Seconds after power-up during which authenticatorReset is allowed.
    public let resetWindow: Double
    /// Where this authenticator differs from a YubiKey's (PIN/UV auth protocols, getInfo, keepalives...).
    public let profile: VirtualKeyProfile
    /// The sample statuses the simulated fingerprint sensor reports, one per capture in this order, then
    /// good ones (a profile with a sensor only).
    public let bioSampleStatuses: [CTAP2.BioEnrollment.SampleStatus]
    /// Seconds the simulated fingerprint sensor takes for each sample, after the finger came, in the order of the
    /// samples taken (a capture cancelled takes none), the last for every sample after (a profile with a sensor
    /// only).
    public let sensorDelays: [Double]
    /// `sensorDelays` unless some are given: a fifth of a second for every sample.
    public static let defaultSensorDelays = [0.2]

    /// The answer of a user-presence check.
    enum Presence {
        case granted
        /// Refused with this CTAP status (KEEPALIVE_CANCEL when cancelled).
        case denied(UInt8)
        /// Not decided yet: the transport asks again later (NFC's NFCCTAP_GETRESPONSE polling).
        case deferred
    }

    enum Outcome: Equatable {
        case response([UInt8])
        /// The command stopped before its user-presence check, with nothing changed.
        case needsPresence
    }

    enum Failure: Error {
        case status(UInt8)
        case needsPresence
    }

    struct Token {
        var value: [UInt8]
        var permissions: PINPermissions
        var rpID: String?
        /// Cleared with the permissions once a makeCredential or getAssertion collected user presence.
        var userVerified = true
    }

    /// A credential a request names or discovers, with its private key.
    struct Located {
        var id: [UInt8]
        /// The COSE algorithm of its key (`FIDOCredentialKey`).
        var algorithm: Int
        var privateKey: [UInt8]
        var credProtect: Int
        var hmacSecret: Bool
        var resident: FIDOState.Credential?
    }

    struct HMACSecretInput {
        var pinProtocol: PINUVAuthProtocol
        var sharedSecret: [UInt8]
        var salts: [UInt8]
    }

    struct PendingAssertions {
        var remaining: [Located]
        var rpIDHash: [UInt8]
        var clientDataHash: [UInt8]
        var flags: UInt8
        var hmacSecret: HMACSecretInput?
        var expires: Double
    }

    struct RPEntry {
        var id: String
        var name: String?
    }

    // Power-cycle state.
    var poweredUpAt: Double
    /// The key agreement key of this power-up, made when a client first asks for it (making one at every start
    /// was a fifth of the instructions of a command on `--virtual`); a power-up, a reset and a wrong PIN drop it,
    /// so that the next use gets a new one.
    var keyAgreementKey: P256PrivateKey {
        if let key = currentKeyAgreementKey { return key }
        let key = P256PrivateKey()
        currentKeyAgreementKey = key
        return key
    }
    var currentKeyAgreementKey: P256PrivateKey?
    var consecutiveWrongPINs = 0
    var token: Token?
    var pendingAssertions: PendingAssertions?
    var pendingRPs: [RPEntry]?
    var pendingCredentials: [FIDOState.Credential]?
    /// When a U2F command first asked for a touch that has not happened yet.
    var u2fPresenceRequestedAt: Double?
    /// The fingerprint enrollment under way.
    var pendingEnrollment: PendingEnrollment?
    /// The index in `bioSampleStatuses` of the next capture's status.
    var nextSampleStatus = 0

    public init(
        userPresenceDelay: Double = 0, resetWindow: Double = 10, profile: VirtualKeyProfile = .yubikey,
        bioSampleStatuses: [CTAP2.BioEnrollment.SampleStatus] = [], sensorDelays: [Double] = defaultSensorDelays
    ) {
        self.userPresenceDelay = userPresenceDelay
        self.resetWindow = resetWindow
        self.profile = profile
        self.bioSampleStatuses = bioSampleStatuses
        self.sensorDelays = sensorDelays
        poweredUpAt = Self.uptime()
    }

    static func uptime() -> Double { ProcessInfo.processInfo.systemUptime }

    /// Power-up: a new key agreement key, no PIN token, the wrong-PIN block lifted, the reset window open.
    public func powerCycle() {
        poweredUpAt = Self.uptime()
        currentKeyAgreementKey = nil
        consecutiveWrongPINs = 0
        token = nil
        pendingAssertions = nil
        pendingRPs = nil
        pendingCredentials = nil
        u2fPresenceRequestedAt = nil
        pendingEnrollment = nil
    }

    // MARK: Entry points

    /// What a command that needs the user waits before it goes on: the profile's keepalive phases, then
    /// `userPresenceDelay` seconds of "user presence needed". Empty: it goes on at once.
    var userWait: [VirtualKeyProfile.KeepalivePhase] {
        var phases = profile.keepalivesBeforeUser
        if userPresenceDelay > 0 {
            phases.append(.init(status: CTAPHID.KeepaliveStatus.userPresenceNeeded, seconds: userPresenceDelay))
        }
        return phases.filter { $0.seconds > 0 }
    }

    /// What `request` waits for before it goes on once it needs the user: `userWait`, and for a fingerprint
    /// capture the sensor's time for the next sample (`sensorDelay`) of "processing" after it. Empty: it goes on at
    /// once.
    func userWait(for request: [UInt8]) -> [VirtualKeyProfile.KeepalivePhase] {
        var phases = userWait
        if isFingerprintCapture(request) && sensorDelay > 0 {
            phases.append(.init(status: CTAPHID.KeepaliveStatus.processing, seconds: sensorDelay))
        }
        return phases
    }

    /// Seconds the sensor takes for the next sample: its place in `sensorDelays`, else the last of them.
    var sensorDelay: Double {
        sensorDelays.isEmpty ? 0 : sensorDelays[min(nextSampleStatus, sensorDelays.count - 1)]
    }

    /// Seconds `userWait(for:)` lasts in all.
    func userWaitSeconds(for request: [UInt8]) -> Double { userWait(for: request).reduce(0) { $0 + $1.seconds } }

    /// The KEEPALIVE status `elapsed` seconds into `userWait(for: request)` (the last one's once it is over).
    func keepaliveStatus(for request: [UInt8], after elapsed: Double) -> UInt8 {
        let phases = userWait(for: request)
        var end = 0.0
        for phase in phases {
            end += phase.seconds
            if elapsed < end { return phase.status }
        }
        return phases.last?.status ?? CTAPHID.KeepaliveStatus.userPresenceNeeded
    }

    /// Handles one CTAP2 request (command byte + CBOR parameters) and returns the response (status byte +
    /// canonical CBOR). A command that needs user presence goes through `userWait(for:)` first (a fingerprint
    /// capture: the finger, then the sensor), reporting each phase's KEEPALIVE status through `keepalive` as it
    /// starts; `isCancelled` is polled while waiting and ends the wait with CTAP2_ERR_KEEPALIVE_CANCEL, nothing
    /// changed.
    public func processCTAP2(
        _ request: [UInt8], state: inout VirtualKeyState,
        keepalive: (UInt8) -> Void = { _ in },
        isCancelled: () -> Bool = { false }
    ) -> [UInt8] {
        let phases = userWait(for: request)
        let outcome = run(request, state: &state, receivedAt: Self.uptime()) {
            for phase in phases {
                keepalive(phase.status)
                let end = Self.uptime() + phase.seconds
                while Self.uptime() < end {
                    if isCancelled() { return .denied(CTAPError.keepaliveCancel) }
                    SystemThread.sleep(min(0.01, max(0, end - Self.uptime())))
                }
            }
            return isCancelled() ? .denied(CTAPError.keepaliveCancel) : .granted
        }
        switch outcome {
        case .response(let r): return r
        case .needsPresence: return [CTAPError.other]  // the presence check above never defers
        }
    }

    /// Handles a CTAP2 request with the given presence check. Nothing changes before the check, so a
    /// request that ends in `.needsPresence` can be run again once presence is decided.
    func run(
        _ request: [UInt8], state: inout VirtualKeyState, receivedAt: Double,
        presence: () -> Presence
    ) -> Outcome {
        do {
            return .response(try dispatch(request, &state, receivedAt, presence))
        } catch {
            switch error {
            case .status(let code): return .response([code])
            case .needsPresence: return .needsPresence
            }
        }
    }

    // MARK: Dispatch

    func dispatch(
        _ request: [UInt8], _ state: inout VirtualKeyState, _ now: Double,
        _ presence: () -> Presence
    ) throws(Failure) -> [UInt8] {
        // A U2F-only key has no CTAP2 at all (its transports refuse the message before it gets here).
        guard profile.speaksCTAP2 else { throw .status(CTAPError.invalidCommand) }
        guard let command = request.first else { throw .status(CTAPError.invalidLength) }
        guard request.count - 1 <= Self.maxMessageSize else { throw .status(CTAPError.invalidLength) }
        // Continuations only directly follow what they continue.
        let assertions = pendingAssertions
        let rps = pendingRPs
        let credentials = pendingCredentials
        pendingAssertions = nil
        pendingRPs = nil
        pendingCredentials = nil

        let params: Fields
        if request.count > 1 {
            let value: CBOR
            do {
                value = try CBOR.decode(Array(request[1...]))
            } catch {
                throw .status(CTAPError.invalidCBOR)
            }
            guard let map = value.map else { throw .status(CTAPError.cborUnexpectedType) }
            params = Fields(map)
        } else {
            params = Fields([:])
        }

        switch CTAP2.Command(rawValue: command) {
        case .getInfo:
            return Self.ok(info(state))
        case .clientPIN:
            return try clientPIN(params, &state)
        case .makeCredential:
            return try makeCredential(params, &state, presence)
        case .getAssertion:
            return try getAssertion(params, &state, now, presence)
        case .getNextAssertion:
            return try getNextAssertion(assertions, &state, now)
        case .reset:
            return try reset(&state, now, presence)
        case .selection:
            try collectPresence(presence)
            return [CTAP2.ok]
        case .credentialManagement, .credentialManagementPreview:
            return try credentialManagement(params, &state, rps: rps, credentials: credentials)
        case .config:
            return try config(params, &state)
        case .bioEnrollment, .bioEnrollmentPreview:
            return try bioEnrollment(params, &state, presence)
        case .largeBlobs, nil:
            throw .status(CTAPError.invalidCommand)
        }
    }

    static func ok(_ value: CBOR) -> [UInt8] { [CTAP2.ok] + value.encoded }

    /// A successful answer with a map under CTAP2's integer keys.
    static func ok(_ fields: [Int: CBOR]) -> [UInt8] {
        ok(.map([CBOR: CBOR](uniqueKeysWithValues: fields.map { (CBOR($0.key), $0.value) })))
    }

    func collectPresence(_ presence: () -> Presence) throws(Failure) {
        switch presence() {
        case .granted: return
        case .denied(let code): throw .status(code)
        case .deferred: throw .needsPresence
        }
    }

    // MARK: getInfo

    func info(_ state: VirtualKeyState) -> CBOR {
        let fido = state.fido
        let v = state.version
        let firmware = Int(v.major) << 16 | Int(v.minor) << 8 | Int(v.patch)
        let remaining = max(0, FIDOState.capacity(for: v) - fido.credentials.count)
        let hasConfig = Self.hasConfig(state)
        var options: [CBOR: CBOR] = [
            "rk": true, "up": true, "plat": false, "clientPin": .bool(fido.isPINSet), "credMgmt": true,
            "credentialMgmtPreview": true, "pinUvAuthToken": true, "makeCredUvNotRqd": .bool(!fido.alwaysUV),
        ]
        if hasConfig { options.merge(Self.configOptions(fido)) { own, _ in own } }
        if profile.hasBioEnrollment { options.merge(Self.bioOptions(fido)) { own, _ in own } }
        let ownExtensions = ["credProtect", "hmac-secret"] + (hasConfig ? ["minPinLength"] : [])
        let more = profile.getInfoAdditions
        let extraOptions = more.options.map { (CBOR.text($0.key), CBOR.bool($0.value)) }
        let allOptions = options.merging(extraOptions) { own, _ in own }
        typealias Key = CTAP2.InfoKey
        var fields: [Int: CBOR] = [
            Key.versions: .array(
                ([U2F.version, "FIDO_2_0", "FIDO_2_1_PRE", "FIDO_2_1"] + more.versions)
                    .map(CBOR.text)),
            Key.extensions: .array((ownExtensions + more.extensions).map(CBOR.text)),
            Key.aaguid: .bytes(Self.aaguid),
            Key.options: .map(allOptions),
            Key.maxMsgSize: CBOR(Self.maxMessageSize),
            Key.pinUVAuthProtocols: .array(profile.pinUVAuthProtocols.map { CBOR($0) }),
            Key.maxCredentialCountInList: CBOR(Self.maxCredentialCountInList),
            Key.maxCredentialIDLength: CBOR(Self.maxCredentialIDLength),
            Key.transports: ["nfc", "usb"],
            Key.algorithms: .array(FIDOCredentialKey.algorithms(for: v).map(CTAP2.credentialParameters)),
            Key.forcePINChange: .bool(fido.forcePINChange),
            Key.minPINLength: CBOR(fido.minPINLength),
            Key.firmwareVersion: CBOR(firmware),
            Key.remainingDiscoverableCredentials: CBOR(remaining),
        ]
        if hasConfig { fields[Key.maxRPIDsForSetMinPINLength] = CBOR(Self.maxRPIDsForSetMinPINLength) }
        if profile.hasBioEnrollment { fields[Key.uvModality] = CBOR(Self.fingerprintModality) }
        var map = [CBOR: CBOR](uniqueKeysWithValues: fields.map { (CBOR($0.key), $0.value) })
        map.merge(more.fields) { own, _ in own }
        return .map(map)
    }
}

// MARK: - CBOR parameter access

extension FIDOAuthenticator {
    /// A CBOR map's fields, read with CTAP2's error for a field of the wrong type.
    struct Fields {
        let map: [CBOR: CBOR]

        init(_ map: [CBOR: CBOR]) { self.map = map }

        subscript(_ key: CBOR) -> CBOR? { map[key] }
        subscript(_ key: Int) -> CBOR? { map[CBOR(key)] }

        func typed<T>(_ key: CBOR, _ extract: (CBOR) -> T?) throws(Failure) -> T? {
            guard let value = map[key] else { return nil }
            guard let typed = extract(value) else { throw .status(CTAPError.cborUnexpectedType) }
            return typed
        }

        func bytes(_ key: CBOR) throws(Failure) -> [UInt8]? { try typed(key) { $0.bytes } }
        func text(_ key: CBOR) throws(Failure) -> String? { try typed(key) { $0.string } }
        func int(_ key: CBOR) throws(Failure) -> Int? { try typed(key) { $0.int } }
        func bool(_ key: CBOR) throws(Failure) -> Bool? { try typed(key) { $0.bool } }
        func array(_ key: CBOR) throws(Failure) -> [CBOR]? { try typed(key) { $0.array } }
        func map(_ key: CBOR) throws(Failure) -> Fields? { try typed(key) { $0.map.map(Fields.init) } }

        // The same with the integer keys of CTAP2's maps (`CTAP2.MakeCredential.Key` and the like).
        func bytes(_ key: Int) throws(Failure) -> [UInt8]? { try bytes(CBOR(key)) }
        func text(_ key: Int) throws(Failure) -> String? { try text(CBOR(key)) }
        func int(_ key: Int) throws(Failure) -> Int? { try int(CBOR(key)) }
        func bool(_ key: Int) throws(Failure) -> Bool? { try bool(CBOR(key)) }
        func array(_ key: Int) throws(Failure) -> [CBOR]? { try array(CBOR(key)) }
        func map(_ key: Int) throws(Failure) -> Fields? { try map(CBOR(key)) }
    }
}
