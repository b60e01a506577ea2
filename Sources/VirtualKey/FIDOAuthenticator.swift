import FoundationEssentials
import Glibc
import KeyKit

/// The FIDO2 (CTAP 2.1) and U2F (CTAP1) authenticator of the virtual key, answering as a YubiKey 5 with
/// the firmware in the key's state does: ES256 credentials, discoverable credentials, the client PIN with
/// PIN/UV auth protocols 1 and 2, PIN/UV auth tokens with permissions, credential management, the
/// credProtect and hmac-secret extensions, and U2F registration and authentication. Attestation is packed
/// self attestation for CTAP2 and a self-signed certificate for U2F.
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
/// where flags holds the credProtect level (bits 0-1) and 0x80 for hmac-secret. A reset makes new
/// wrapping keys, so earlier key handles stop working. Discoverable credentials get 32 random bytes.
public final class FIDOAuthenticator {
    /// This authenticator's AAGUID, 804b8213-9e22-4f99-b7cf-b9568f76800a: a random (version 4) UUID made
    /// for ykterm's virtual key, so relying parties never mistake it for a Yubico model.
    public static let aaguid: [UInt8] = [0x80, 0x4B, 0x82, 0x13, 0x9E, 0x22, 0x4F, 0x99,
                                         0xB7, 0xCF, 0xB9, 0x56, 0x8F, 0x76, 0x80, 0x0A]
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

    fileprivate enum Failure: Error {
        case status(UInt8)
        case needsPresence
    }

    private struct Token {
        var value: [UInt8]
        var permissions: PINPermissions
        var rpID: String?
        /// Cleared with the permissions once a makeCredential or getAssertion collected user presence.
        var userVerified = true
    }

    /// A credential a request names or discovers, with its private key.
    private struct Located {
        var id: [UInt8]
        var privateKey: [UInt8]
        var credProtect: Int
        var hmacSecret: Bool
        var resident: FIDOState.Credential?
    }

    private struct HMACSecretInput {
        var pinProtocol: PINUVAuthProtocol
        var sharedSecret: [UInt8]
        var salts: [UInt8]
    }

    private struct PendingAssertions {
        var remaining: [Located]
        var rpIDHash: [UInt8]
        var clientDataHash: [UInt8]
        var flags: UInt8
        var hmacSecret: HMACSecretInput?
        var expires: Double
    }

    private struct RPEntry {
        var id: String
        var name: String?
    }

    // Power-cycle state.
    private var poweredUpAt: Double
    private var keyAgreementKey: P256PrivateKey
    private var consecutiveWrongPINs = 0
    private var token: Token?
    private var pendingAssertions: PendingAssertions?
    private var pendingRPs: [RPEntry]?
    private var pendingCredentials: [FIDOState.Credential]?
    /// When a U2F command first asked for a touch that has not happened yet.
    private var u2fPresenceRequestedAt: Double?

    public init(userPresenceDelay: Double = 0, resetWindow: Double = 10) {
        self.userPresenceDelay = userPresenceDelay
        self.resetWindow = resetWindow
        poweredUpAt = Self.uptime()
        keyAgreementKey = P256PrivateKey()
    }

    static func uptime() -> Double { ProcessInfo.processInfo.systemUptime }

    /// Power-up: a new key agreement key, no PIN token, the wrong-PIN block lifted, the reset window open.
    public func powerCycle() {
        poweredUpAt = Self.uptime()
        keyAgreementKey = P256PrivateKey()
        consecutiveWrongPINs = 0
        token = nil
        pendingAssertions = nil
        pendingRPs = nil
        pendingCredentials = nil
        u2fPresenceRequestedAt = nil
    }

    // MARK: Entry points

    /// Handles one CTAP2 request (command byte + CBOR parameters) and returns the response (status byte +
    /// canonical CBOR). A command that needs user presence waits `userPresenceDelay` seconds, reporting
    /// KEEPALIVE status 2 (user presence needed) through `keepalive` first; `isCancelled` is polled while
    /// waiting and ends the wait with CTAP2_ERR_KEEPALIVE_CANCEL.
    public func processCTAP2(_ request: [UInt8], state: inout VirtualKeyState,
                             keepalive: (UInt8) -> Void = { _ in },
                             isCancelled: () -> Bool = { false }) -> [UInt8] {
        let delay = userPresenceDelay
        let outcome = run(request, state: &state, receivedAt: Self.uptime()) {
            guard delay > 0 else { return .granted }
            keepalive(CTAPHID.KeepaliveStatus.userPresenceNeeded)
            let end = Self.uptime() + delay
            while Self.uptime() < end {
                if isCancelled() { return .denied(CTAPError.keepaliveCancel) }
                SystemThread.sleep(min(0.01, max(0, end - Self.uptime())))
            }
            return isCancelled() ? .denied(CTAPError.keepaliveCancel) : .granted
        }
        switch outcome {
        case .response(let r): return r
        case .needsPresence: return [CTAPError.other] // the presence check above never defers
        }
    }

    /// Handles a CTAP2 request with the given presence check. Nothing changes before the check, so a
    /// request that ends in `.needsPresence` can be run again once presence is decided.
    func run(_ request: [UInt8], state: inout VirtualKeyState, receivedAt: Double,
             presence: () -> Presence) -> Outcome {
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

    private func dispatch(_ request: [UInt8], _ state: inout VirtualKeyState, _ now: Double,
                          _ presence: () -> Presence) throws(Failure) -> [UInt8] {
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

        switch CTAP2Command(rawValue: command) {
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
            return [0]
        case .credentialManagement, .credentialManagementPreview:
            return try credentialManagement(params, &state, rps: rps, credentials: credentials)
        case nil:
            throw .status(CTAPError.invalidCommand)
        }
    }

    private static func ok(_ value: CBOR) -> [UInt8] { [0] + value.encoded }

    private func collectPresence(_ presence: () -> Presence) throws(Failure) {
        switch presence() {
        case .granted: return
        case .denied(let code): throw .status(code)
        case .deferred: throw .needsPresence
        }
    }

    // MARK: getInfo

    private func info(_ state: VirtualKeyState) -> CBOR {
        let fido = state.fido
        let v = state.version
        let firmware = Int(v.major) << 16 | Int(v.minor) << 8 | Int(v.patch)
        let remaining = max(0, FIDOState.capacity(for: v) - fido.credentials.count)
        let options: CBOR = [
            "rk": true, "up": true, "plat": false, "clientPin": .bool(fido.isPINSet), "credMgmt": true,
            "credentialMgmtPreview": true, "pinUvAuthToken": true, "makeCredUvNotRqd": true,
        ]
        return [
            1: ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE", "FIDO_2_1"],
            2: ["credProtect", "hmac-secret"],
            3: .bytes(Self.aaguid),
            4: options,
            5: CBOR(Self.maxMessageSize),
            6: [2, 1],
            7: CBOR(Self.maxCredentialCountInList),
            8: CBOR(Self.maxCredentialIDLength),
            9: ["nfc", "usb"],
            10: [["alg": -7, "type": "public-key"]],
            12: false,
            13: CBOR(fido.minPINLength),
            14: CBOR(firmware),
            20: CBOR(remaining),
        ]
    }

    // MARK: clientPIN

    private enum PINSubcommand {
        static let getPINRetries = 0x01
        static let getKeyAgreement = 0x02
        static let setPIN = 0x03
        static let changePIN = 0x04
        static let getPINToken = 0x05
        static let getPINUVAuthTokenUsingPINWithPermissions = 0x09
    }

    /// Permissions this authenticator grants: mc, ga and cm (no bio enrollment, large blobs or config).
    private static let supportedPermissions: PINPermissions = [.makeCredential, .getAssertion,
                                                                .credentialManagement]

    private func clientPIN(_ p: Fields, _ state: inout VirtualKeyState) throws(Failure) -> [UInt8] {
        guard let sub = try p.int(2) else { throw .status(CTAPError.missingParameter) }
        let protocolNumber = try p.int(1)
        if sub == PINSubcommand.getPINRetries {
            return Self.ok([3: CBOR(state.fido.pinRetries),
                            4: .bool(consecutiveWrongPINs >= Self.wrongPINsPerPowerCycle)])
        }
        guard let protocolNumber else { throw .status(CTAPError.missingParameter) }
        guard let pinProtocol = Self.pinProtocol(protocolNumber) else {
            throw .status(CTAPError.invalidParameter)
        }
        switch sub {
        case PINSubcommand.getKeyAgreement:
            return Self.ok([1: PINUVAuthProtocol.coseKey(keyAgreementKey.publicKey)])

        case PINSubcommand.setPIN:
            guard let peer = p[3], let newPINEnc = try p.bytes(5), let auth = try p.bytes(4) else {
                throw .status(CTAPError.missingParameter)
            }
            guard !state.fido.isPINSet else { throw .status(CTAPError.notAllowed) }
            let secret = try sharedSecret(pinProtocol, peer)
            guard pinProtocol.verify(key: secret, newPINEnc, signature: auth) else {
                throw .status(CTAPError.pinAuthInvalid)
            }
            let hash = try newPINHash(pinProtocol, secret, newPINEnc, minimum: state.fido.minPINLength)
            state.fido.pinHash = hash
            state.fido.pinRetries = FIDOState.maxPINRetries
            token = nil
            return [0]

        case PINSubcommand.changePIN:
            guard let peer = p[3], let pinHashEnc = try p.bytes(6), let newPINEnc = try p.bytes(5),
                  let auth = try p.bytes(4) else {
                throw .status(CTAPError.missingParameter)
            }
            try checkPINUsable(state)
            let secret = try sharedSecret(pinProtocol, peer)
            guard pinProtocol.verify(key: secret, newPINEnc + pinHashEnc, signature: auth) else {
                throw .status(CTAPError.pinAuthInvalid)
            }
            try verifyPIN(pinProtocol, secret, pinHashEnc, &state)
            let hash = try newPINHash(pinProtocol, secret, newPINEnc, minimum: state.fido.minPINLength)
            state.fido.pinHash = hash
            token = nil
            return [0]

        case PINSubcommand.getPINToken:
            guard let peer = p[3], let pinHashEnc = try p.bytes(6) else {
                throw .status(CTAPError.missingParameter)
            }
            guard p[9] == nil, p[10] == nil else { throw .status(CTAPError.invalidParameter) }
            try checkPINUsable(state)
            let secret = try sharedSecret(pinProtocol, peer)
            try verifyPIN(pinProtocol, secret, pinHashEnc, &state)
            // Tokens from the legacy command predate permissions: they may do everything.
            let value = issueToken(permissions: Self.supportedPermissions, rpID: nil)
            return Self.ok([2: .bytes(try encrypt(pinProtocol, secret, value))])

        case PINSubcommand.getPINUVAuthTokenUsingPINWithPermissions:
            guard let peer = p[3], let pinHashEnc = try p.bytes(6), let permissions = try p.int(9) else {
                throw .status(CTAPError.missingParameter)
            }
            let rpID = try p.text(10)
            guard permissions > 0 else { throw .status(CTAPError.invalidParameter) }
            let requested = PINPermissions(rawValue: permissions)
            guard Self.supportedPermissions.isSuperset(of: requested) else {
                throw .status(CTAPError.unauthorizedPermission)
            }
            try checkPINUsable(state)
            let secret = try sharedSecret(pinProtocol, peer)
            try verifyPIN(pinProtocol, secret, pinHashEnc, &state)
            let value = issueToken(permissions: requested, rpID: rpID)
            return Self.ok([2: .bytes(try encrypt(pinProtocol, secret, value))])

        default:
            // No built-in user verification: getPinUvAuthTokenUsingUvWithPermissions and getUVRetries
            // are not supported either.
            throw .status(CTAPError.invalidSubcommand)
        }
    }

    private static func pinProtocol(_ number: Int) -> PINUVAuthProtocol? {
        switch number {
        case 1: return .one
        case 2: return .two
        default: return nil
        }
    }

    private func checkPINUsable(_ state: VirtualKeyState) throws(Failure) {
        guard state.fido.isPINSet else { throw .status(CTAPError.pinNotSet) }
        guard state.fido.pinRetries > 0 else { throw .status(CTAPError.pinBlocked) }
        guard consecutiveWrongPINs < Self.wrongPINsPerPowerCycle else { throw .status(CTAPError.pinAuthBlocked) }
    }

    /// The shared secret with the platform's key agreement key (a COSE key).
    private func sharedSecret(_ pinProtocol: PINUVAuthProtocol, _ peer: CBOR) throws(Failure) -> [UInt8] {
        guard let publicKey = try? PINUVAuthProtocol.publicKey(fromCOSE: peer),
              let z = try? keyAgreementKey.sharedSecret(with: publicKey),
              let secret = try? pinProtocol.kdf(z) else {
            throw .status(CTAPError.invalidParameter)
        }
        return secret
    }

    private func encrypt(_ pinProtocol: PINUVAuthProtocol, _ key: [UInt8], _ data: [UInt8]) throws(Failure)
        -> [UInt8] {
        guard let out = try? pinProtocol.encrypt(key: key, data) else { throw .status(CTAPError.other) }
        return out
    }

    /// Checks pinHashEnc against the stored PIN hash. Every try costs a retry until it succeeds; a wrong
    /// PIN also makes a new key agreement key, and counts towards the power-cycle block.
    private func verifyPIN(_ pinProtocol: PINUVAuthProtocol, _ secret: [UInt8], _ pinHashEnc: [UInt8],
                           _ state: inout VirtualKeyState) throws(Failure) {
        guard let given = try? pinProtocol.decrypt(key: secret, pinHashEnc), given.count == 16,
              let stored = state.fido.pinHash else {
            throw .status(CTAPError.invalidParameter)
        }
        state.fido.pinRetries -= 1
        guard Crypto.constantTimeEqual(given, stored) else {
            keyAgreementKey = P256PrivateKey()
            consecutiveWrongPINs += 1
            if state.fido.pinRetries <= 0 { throw .status(CTAPError.pinBlocked) }
            if consecutiveWrongPINs >= Self.wrongPINsPerPowerCycle { throw .status(CTAPError.pinAuthBlocked) }
            throw .status(CTAPError.pinInvalid)
        }
        state.fido.pinRetries = FIDOState.maxPINRetries
        consecutiveWrongPINs = 0
    }

    /// Decrypts and checks a new PIN: at least 64 bytes of padding, at most 63 bytes of UTF-8 before it,
    /// at least the minimum length in code points. Returns its hash, LEFT(SHA-256(PIN), 16).
    private func newPINHash(_ pinProtocol: PINUVAuthProtocol, _ secret: [UInt8], _ newPINEnc: [UInt8],
                            minimum: Int) throws(Failure) -> [UInt8] {
        guard let padded = try? pinProtocol.decrypt(key: secret, newPINEnc) else {
            throw .status(CTAPError.invalidParameter)
        }
        guard padded.count >= 64 else { throw .status(CTAPError.pinPolicyViolation) }
        var pin = padded
        while pin.last == 0 { pin.removeLast() }
        guard pin.count <= PINRules.maxBytes, !pin.contains(0),
              let text = String(validating: pin, as: UTF8.self),
              text.unicodeScalars.count >= max(minimum, 4) else {
            throw .status(CTAPError.pinPolicyViolation)
        }
        return PINUVAuthProtocol.pinHash(text)
    }

    /// A new PIN/UV auth token (every earlier one stops working).
    private func issueToken(permissions: PINPermissions, rpID: String?) -> [UInt8] {
        let value = Crypto.random(32)
        token = Token(value: value, permissions: permissions, rpID: rpID)
        return value
    }

    /// Checks pinUvAuthParam over `message` with the current token, and that the token may do `permission`
    /// (for `rpID`, when the token is bound to an RP).
    private func authorize(_ pinProtocol: PINUVAuthProtocol, _ auth: [UInt8], _ message: [UInt8],
                           permission: PINPermissions, rpID: String?) throws(Failure) {
        guard let token, pinProtocol.verify(key: token.value, message, signature: auth) else {
            throw .status(CTAPError.pinAuthInvalid)
        }
        guard token.permissions.contains(permission) else { throw .status(CTAPError.pinAuthInvalid) }
        if let bound = token.rpID, let rpID, bound != rpID { throw .status(CTAPError.pinAuthInvalid) }
    }

    /// The pinUvAuthProtocol of a request that carries pinUvAuthParam.
    private func requestProtocol(_ p: Fields, key: Int) throws(Failure) -> PINUVAuthProtocol {
        guard let number = try p.int(CBOR(key)) else { throw .status(CTAPError.missingParameter) }
        guard let pinProtocol = Self.pinProtocol(number) else { throw .status(CTAPError.invalidParameter) }
        return pinProtocol
    }

    /// A zero-length pinUvAuthParam: platforms use it to have the user pick a key. After a touch the
    /// answer says whether a PIN is set.
    private func emptyPINAuth(_ state: VirtualKeyState, _ presence: () -> Presence) throws(Failure) -> Never {
        try collectPresence(presence)
        throw .status(state.fido.isPINSet ? CTAPError.pinInvalid : CTAPError.pinNotSet)
    }

    // MARK: makeCredential

    private func makeCredential(_ p: Fields, _ state: inout VirtualKeyState,
                                _ presence: () -> Presence) throws(Failure) -> [UInt8] {
        guard let clientDataHash = try p.bytes(1), let rp = try p.map(2), let user = try p.map(3),
              let algorithms = try p.array(4) else {
            throw .status(CTAPError.missingParameter)
        }
        guard let rpID = try rp.text("id") else { throw .status(CTAPError.missingParameter) }
        let rpName = try rp.text("name")
        guard let userID = try user.bytes("id") else { throw .status(CTAPError.missingParameter) }
        guard userID.count <= 64 else { throw .status(CTAPError.invalidLength) }
        let userName = try user.text("name")
        let userDisplayName = try user.text("displayName")
        let excludeList = try p.array(5) ?? []
        let extensions = try p.map(6) ?? Fields([:])
        let options = try p.map(7) ?? Fields([:])
        let auth = try p.bytes(8)

        if let auth, auth.isEmpty { try emptyPINAuth(state, presence) }
        var pinProtocol: PINUVAuthProtocol?
        if auth != nil { pinProtocol = try requestProtocol(p, key: 9) }

        var es256 = false
        for entry in algorithms {
            guard let m = entry.map else { throw .status(CTAPError.cborUnexpectedType) }
            let fields = Fields(m)
            guard let type = try fields.text("type"), let alg = try fields.int("alg") else {
                throw .status(CTAPError.missingParameter)
            }
            if type == "public-key" && alg == -7 { es256 = true }
        }
        guard es256 else { throw .status(CTAPError.unsupportedAlgorithm) }

        let rk = try options.bool("rk") ?? false
        if try options.bool("up") == false { throw .status(CTAPError.invalidOption) }
        // No built-in user verification: uv is only meaningful through pinUvAuthParam.
        if try options.bool("uv") == true, auth == nil { throw .status(CTAPError.invalidOption) }

        if auth == nil && state.fido.isPINSet && rk { throw .status(CTAPError.pinRequired) }
        if p[10] != nil { throw .status(CTAPError.invalidParameter) } // no enterprise attestation

        var userVerified = false
        if let auth, let pinProtocol {
            try authorize(pinProtocol, auth, clientDataHash, permission: .makeCredential, rpID: rpID)
            guard token?.userVerified == true else { throw .status(CTAPError.pinAuthInvalid) }
            userVerified = true
        }

        let rpIDHash = Crypto.digest(.sha256, Array(rpID.utf8))
        for excluded in try locate(excludeList, rpID: rpID, rpIDHash: rpIDHash, state)
        where excluded.credProtect < 3 || userVerified {
            try collectPresence(presence)
            throw .status(CTAPError.credentialExcluded)
        }

        var credProtect = 1
        if let level = try extensions.int("credProtect"), (1...3).contains(level) { credProtect = level }
        let requestedCredProtect = try extensions.int("credProtect").map { _ in credProtect }
        let hmacSecret = try extensions.bool("hmac-secret") ?? false

        if rk {
            let replacing = state.fido.credentials.contains { $0.rpID == rpID && $0.userID == userID }
            guard replacing || state.fido.credentials.count < FIDOState.capacity(for: state.version) else {
                throw .status(CTAPError.keyStoreFull)
            }
        }

        try collectPresence(presence)
        // Nothing above changed any state: from here on the command completes.
        if userVerified {
            consumeToken(boundTo: rpID)
        }
        ensureWrappingKeys(&state)

        let key = P256PrivateKey()
        let credentialID: [UInt8]
        if rk {
            credentialID = Crypto.random(32)
            state.fido.credentials.removeAll { $0.rpID == rpID && $0.userID == userID }
            state.fido.credentials.append(FIDOState.Credential(
                id: credentialID, rpID: rpID, rpName: rpName, userID: userID, userName: userName,
                userDisplayName: userDisplayName, privateKey: key.raw, credProtect: credProtect,
                hmacSecret: hmacSecret, created: state.fido.nextCreated))
            state.fido.nextCreated += 1
        } else {
            guard let handle = wrap(key.raw, rpIDHash: rpIDHash, credProtect: credProtect, hmacSecret: hmacSecret,
                                    state.fido) else { throw .status(CTAPError.other) }
            credentialID = handle
        }
        state.fido.signCount &+= 1

        var outputs = [CBOR: CBOR]()
        if requestedCredProtect != nil { outputs["credProtect"] = CBOR(credProtect) }
        if hmacSecret { outputs["hmac-secret"] = true }
        var flags: UInt8 = Flag.userPresent | Flag.attestedCredentialData
        if userVerified { flags |= Flag.userVerified }
        if !outputs.isEmpty { flags |= Flag.extensionData }
        var authData = rpIDHash + [flags] + BigEndian.bytes(UInt64(state.fido.signCount), count: 4)
        authData += Self.aaguid + BigEndian.bytes(UInt64(credentialID.count), count: 2) + credentialID
        authData += Self.coseKey(key.publicKey).encoded
        if !outputs.isEmpty { authData += CBOR.map(outputs).encoded }

        let signature = try sign(key, authData + clientDataHash)
        return Self.ok([
            1: "packed",
            2: .bytes(authData),
            3: ["alg": -7, "sig": .bytes(signature)],
        ])
    }

    enum Flag {
        static let userPresent: UInt8 = 0x01
        static let userVerified: UInt8 = 0x04
        static let attestedCredentialData: UInt8 = 0x40
        static let extensionData: UInt8 = 0x80
    }

    /// The credential public key as COSE_Key: EC2, ES256, P-256.
    static func coseKey(_ key: P256PublicKey) -> CBOR {
        [1: 2, 3: -7, -1: 1, -2: .bytes(key.x), -3: .bytes(key.y)]
    }

    private func sign(_ key: P256PrivateKey, _ message: [UInt8]) throws(Failure) -> [UInt8] {
        let signature = key.sign(message)
        guard !signature.isEmpty else { throw .status(CTAPError.other) }
        return signature
    }

    /// After a makeCredential or getAssertion with user presence the token has done its job: its user
    /// verified state and its permissions are gone (CTAP 2.1), the next operation needs a new token.
    private func consumeToken(boundTo rpID: String) {
        guard var t = token else { return }
        if t.rpID == nil { t.rpID = rpID }
        t.userVerified = false
        t.permissions = []
        token = t
    }

    // MARK: getAssertion

    private func getAssertion(_ p: Fields, _ state: inout VirtualKeyState, _ now: Double,
                              _ presence: () -> Presence) throws(Failure) -> [UInt8] {
        guard let rpID = try p.text(1), let clientDataHash = try p.bytes(2) else {
            throw .status(CTAPError.missingParameter)
        }
        let allowList = try p.array(3) ?? []
        let extensions = try p.map(4) ?? Fields([:])
        let options = try p.map(5) ?? Fields([:])
        let auth = try p.bytes(6)

        if let auth, auth.isEmpty { try emptyPINAuth(state, presence) }
        var pinProtocol: PINUVAuthProtocol?
        if auth != nil { pinProtocol = try requestProtocol(p, key: 7) }

        if try options.bool("rk") != nil { throw .status(CTAPError.unsupportedOption) }
        let up = try options.bool("up") ?? true
        if try options.bool("uv") == true, auth == nil { throw .status(CTAPError.invalidOption) }

        var userVerified = false
        if let auth, let pinProtocol {
            try authorize(pinProtocol, auth, clientDataHash, permission: .getAssertion, rpID: rpID)
            guard token?.userVerified == true else { throw .status(CTAPError.pinAuthInvalid) }
            userVerified = true
        }

        let rpIDHash = Crypto.digest(.sha256, Array(rpID.utf8))
        var found: [Located]
        if allowList.isEmpty {
            found = state.fido.credentials.filter { $0.rpID == rpID }
                .sorted { $0.created > $1.created }
                .map { Located(id: $0.id, privateKey: $0.privateKey, credProtect: $0.credProtect,
                               hmacSecret: $0.hmacSecret, resident: $0) }
                .filter { $0.credProtect < 2 || userVerified }
        } else {
            found = try locate(allowList, rpID: rpID, rpIDHash: rpIDHash, state)
                .filter { $0.credProtect < 3 || userVerified }
            // With an allow list the authenticator answers with one credential.
            found = Array(found.prefix(1))
        }

        var hmacSecret: HMACSecretInput?
        if let input = try extensions.map("hmac-secret") {
            hmacSecret = try hmacSecretInput(input)
        }

        guard !found.isEmpty else { throw .status(CTAPError.noCredentials) }

        if up { try collectPresence(presence) }
        if up && userVerified { consumeToken(boundTo: rpID) }

        var flags: UInt8 = up ? Flag.userPresent : 0
        if userVerified { flags |= Flag.userVerified }
        var pending = PendingAssertions(remaining: found, rpIDHash: rpIDHash, clientDataHash: clientDataHash,
                                        flags: flags, hmacSecret: hmacSecret,
                                        expires: now + Self.nextAssertionTimeout)
        let first = pending.remaining.removeFirst()
        let count = allowList.isEmpty && found.count > 1 ? found.count : nil
        let response = try assertion(first, pending, numberOfCredentials: count, &state)
        if !pending.remaining.isEmpty { pendingAssertions = pending }
        return response
    }

    private func getNextAssertion(_ pending: PendingAssertions?, _ state: inout VirtualKeyState,
                                  _ now: Double) throws(Failure) -> [UInt8] {
        guard var pending, !pending.remaining.isEmpty, now <= pending.expires else {
            throw .status(CTAPError.notAllowed)
        }
        let next = pending.remaining.removeFirst()
        pending.expires = now + Self.nextAssertionTimeout
        let response = try assertion(next, pending, numberOfCredentials: nil, &state)
        if !pending.remaining.isEmpty { pendingAssertions = pending }
        return response
    }

    private func assertion(_ credential: Located, _ pending: PendingAssertions, numberOfCredentials: Int?,
                           _ state: inout VirtualKeyState) throws(Failure) -> [UInt8] {
        let userVerified = pending.flags & Flag.userVerified != 0
        var outputs = [CBOR: CBOR]()
        if credential.hmacSecret, let input = pending.hmacSecret {
            outputs["hmac-secret"] = .bytes(try hmacSecretOutput(credential, input, userVerified: userVerified,
                                                                 state.fido))
        }
        var flags = pending.flags
        if !outputs.isEmpty { flags |= Flag.extensionData }
        state.fido.signCount &+= 1
        var authData = pending.rpIDHash + [flags] + BigEndian.bytes(UInt64(state.fido.signCount), count: 4)
        if !outputs.isEmpty { authData += CBOR.map(outputs).encoded }
        guard let key = try? P256PrivateKey(raw: credential.privateKey) else { throw .status(CTAPError.other) }
        let signature = try sign(key, authData + pending.clientDataHash)

        var response: [CBOR: CBOR] = [
            1: ["id": .bytes(credential.id), "type": "public-key"],
            2: .bytes(authData),
            3: .bytes(signature),
        ]
        if let resident = credential.resident {
            var user: [CBOR: CBOR] = ["id": .bytes(resident.userID)]
            // Names only after user verification.
            if userVerified {
                if let name = resident.userName { user["name"] = .text(name) }
                if let name = resident.userDisplayName { user["displayName"] = .text(name) }
            }
            response[4] = .map(user)
        }
        if let numberOfCredentials { response[5] = CBOR(numberOfCredentials) }
        return Self.ok(.map(response))
    }

    /// The credentials of `descriptors` that belong to this authenticator and `rpID`.
    private func locate(_ descriptors: [CBOR], rpID: String, rpIDHash: [UInt8],
                        _ state: VirtualKeyState) throws(Failure) -> [Located] {
        var out = [Located]()
        for descriptor in descriptors {
            guard let m = descriptor.map else { throw .status(CTAPError.cborUnexpectedType) }
            let fields = Fields(m)
            guard let type = try fields.text("type"), let id = try fields.bytes("id") else {
                throw .status(CTAPError.missingParameter)
            }
            guard type == "public-key" else { continue }
            if let r = state.fido.credentials.first(where: { $0.id == id && $0.rpID == rpID }) {
                out.append(Located(id: id, privateKey: r.privateKey, credProtect: r.credProtect,
                                   hmacSecret: r.hmacSecret, resident: r))
            } else if let unwrapped = unwrap(id, rpIDHash: rpIDHash, state.fido) {
                out.append(Located(id: id, privateKey: unwrapped.privateKey, credProtect: unwrapped.credProtect,
                                   hmacSecret: unwrapped.hmacSecret, resident: nil))
            }
        }
        return out
    }

    // MARK: hmac-secret

    private func hmacSecretInput(_ input: Fields) throws(Failure) -> HMACSecretInput {
        guard let peer = input[1], let saltEnc = try input.bytes(2), let saltAuth = try input.bytes(3) else {
            throw .status(CTAPError.missingParameter)
        }
        let pinProtocol = try Self.pinProtocol(input.int(4) ?? 1)
        guard let pinProtocol else { throw .status(CTAPError.invalidParameter) }
        let secret = try sharedSecret(pinProtocol, peer)
        guard pinProtocol.verify(key: secret, saltEnc, signature: saltAuth) else {
            throw .status(CTAPError.pinAuthInvalid)
        }
        guard let salts = try? pinProtocol.decrypt(key: secret, saltEnc), salts.count == 32 || salts.count == 64
        else {
            throw .status(CTAPError.invalidLength)
        }
        return HMACSecretInput(pinProtocol: pinProtocol, sharedSecret: secret, salts: salts)
    }

    /// HMAC-SHA-256 of each salt with the credential's CredRandom (one with user verification, another
    /// without), encrypted for the platform.
    private func hmacSecretOutput(_ credential: Located, _ input: HMACSecretInput, userVerified: Bool,
                                  _ fido: FIDOState) throws(Failure) -> [UInt8] {
        let credRandom = Crypto.hmac(.sha256, key: fido.wrapMACKey,
                                     data: Array("hmac-secret".utf8) + [userVerified ? 1 : 0] + credential.id)
        var output = Crypto.hmac(.sha256, key: credRandom, data: Array(input.salts[0..<32]))
        if input.salts.count == 64 {
            output += Crypto.hmac(.sha256, key: credRandom, data: Array(input.salts[32..<64]))
        }
        return try encrypt(input.pinProtocol, input.sharedSecret, output)
    }

    // MARK: reset

    private func reset(_ state: inout VirtualKeyState, _ now: Double,
                       _ presence: () -> Presence) throws(Failure) -> [UInt8] {
        guard now - poweredUpAt <= resetWindow else { throw .status(CTAPError.notAllowed) }
        try collectPresence(presence)
        let attestationKey = state.fido.attestationKey
        let attestationCertificate = state.fido.attestationCertificate
        state.fido = FIDOState(wrapEncryptionKey: Crypto.random(32), wrapMACKey: Crypto.random(32),
                               attestationKey: attestationKey, attestationCertificate: attestationCertificate)
        token = nil
        consecutiveWrongPINs = 0
        keyAgreementKey = P256PrivateKey()
        return [0]
    }

    // MARK: Credential management

    private enum CredentialManagementSubcommand {
        static let getCredsMetadata = 0x01
        static let enumerateRPsBegin = 0x02
        static let enumerateRPsGetNextRP = 0x03
        static let enumerateCredentialsBegin = 0x04
        static let enumerateCredentialsGetNextCredential = 0x05
        static let deleteCredential = 0x06
        static let updateUserInformation = 0x07
    }

    private func credentialManagement(_ p: Fields, _ state: inout VirtualKeyState, rps: [RPEntry]?,
                                      credentials: [FIDOState.Credential]?) throws(Failure) -> [UInt8] {
        typealias Sub = CredentialManagementSubcommand
        guard let sub = try p.int(1) else { throw .status(CTAPError.missingParameter) }
        let subParams = try p.map(2)

        switch sub {
        case Sub.enumerateRPsGetNextRP:
            guard var rps, !rps.isEmpty else { throw .status(CTAPError.notAllowed) }
            let next = rps.removeFirst()
            if !rps.isEmpty { pendingRPs = rps }
            return Self.ok(.map(rpFields(next)))
        case Sub.enumerateCredentialsGetNextCredential:
            guard var credentials, !credentials.isEmpty else { throw .status(CTAPError.notAllowed) }
            let next = credentials.removeFirst()
            if !credentials.isEmpty { pendingCredentials = credentials }
            return Self.ok(.map(credentialFields(next)))
        case Sub.getCredsMetadata, Sub.enumerateRPsBegin, Sub.enumerateCredentialsBegin, Sub.deleteCredential,
             Sub.updateUserInformation:
            break
        default:
            throw .status(CTAPError.invalidSubcommand)
        }

        guard let auth = try p.bytes(4) else { throw .status(CTAPError.pinRequired) }
        let pinProtocol = try requestProtocol(p, key: 3)
        var message = [UInt8(sub)]
        if let raw = p[2] { message += raw.encoded }
        // The RP a bound token is for is checked below, per subcommand.
        try authorize(pinProtocol, auth, message, permission: .credentialManagement, rpID: nil)
        let boundRP = token?.rpID

        switch sub {
        case Sub.getCredsMetadata:
            guard boundRP == nil else { throw .status(CTAPError.pinAuthInvalid) }
            let count = state.fido.credentials.count
            return Self.ok([1: CBOR(count), 2: CBOR(max(0, FIDOState.capacity(for: state.version) - count))])

        case Sub.enumerateRPsBegin:
            guard boundRP == nil else { throw .status(CTAPError.pinAuthInvalid) }
            var entries = [RPEntry]()
            for c in state.fido.credentials.sorted(by: { $0.created < $1.created })
            where !entries.contains(where: { $0.id == c.rpID }) {
                entries.append(RPEntry(id: c.rpID, name: c.rpName))
            }
            guard !entries.isEmpty else { throw .status(CTAPError.noCredentials) }
            var fields = rpFields(entries.removeFirst())
            fields[5] = CBOR(entries.count + 1)
            if !entries.isEmpty { pendingRPs = entries }
            return Self.ok(.map(fields))

        case Sub.enumerateCredentialsBegin:
            guard let rpIDHash = try subParams?.bytes(1) else { throw .status(CTAPError.missingParameter) }
            if let boundRP, Crypto.digest(.sha256, Array(boundRP.utf8)) != rpIDHash {
                throw .status(CTAPError.pinAuthInvalid)
            }
            var matching = state.fido.credentials
                .filter { Crypto.digest(.sha256, Array($0.rpID.utf8)) == rpIDHash }
                .sorted { $0.created < $1.created }
            guard !matching.isEmpty else { throw .status(CTAPError.noCredentials) }
            var fields = credentialFields(matching.removeFirst())
            fields[9] = CBOR(matching.count + 1)
            if !matching.isEmpty { pendingCredentials = matching }
            return Self.ok(.map(fields))

        case Sub.deleteCredential:
            let index = try residentIndex(subParams, state, boundRP: boundRP)
            state.fido.credentials.remove(at: index)
            return [0]

        default: // updateUserInformation
            let index = try residentIndex(subParams, state, boundRP: boundRP)
            guard let user = try subParams?.map(3) else { throw .status(CTAPError.missingParameter) }
            guard let userID = try user.bytes("id") else { throw .status(CTAPError.missingParameter) }
            guard userID == state.fido.credentials[index].userID else {
                throw .status(CTAPError.invalidParameter)
            }
            state.fido.credentials[index].userName = try user.text("name")
            state.fido.credentials[index].userDisplayName = try user.text("displayName")
            return [0]
        }
    }

    /// The stored credential a subcommand's credentialId descriptor (parameter 2) names.
    private func residentIndex(_ subParams: Fields?, _ state: VirtualKeyState,
                               boundRP: String?) throws(Failure) -> Int {
        guard let descriptor = try subParams?.map(2) else { throw .status(CTAPError.missingParameter) }
        guard let id = try descriptor.bytes("id") else { throw .status(CTAPError.missingParameter) }
        guard let index = state.fido.credentials.firstIndex(where: { $0.id == id }) else {
            throw .status(CTAPError.noCredentials)
        }
        if let boundRP, state.fido.credentials[index].rpID != boundRP { throw .status(CTAPError.pinAuthInvalid) }
        return index
    }

    private func rpFields(_ rp: RPEntry) -> [CBOR: CBOR] {
        var entity: [CBOR: CBOR] = ["id": .text(rp.id)]
        if let name = rp.name { entity["name"] = .text(name) }
        return [3: .map(entity), 4: .bytes(Crypto.digest(.sha256, Array(rp.id.utf8)))]
    }

    private func credentialFields(_ c: FIDOState.Credential) -> [CBOR: CBOR] {
        var user: [CBOR: CBOR] = ["id": .bytes(c.userID)]
        if let name = c.userName { user["name"] = .text(name) }
        if let name = c.userDisplayName { user["displayName"] = .text(name) }
        var fields: [CBOR: CBOR] = [
            6: .map(user),
            7: ["id": .bytes(c.id), "type": "public-key"],
            10: CBOR(c.credProtect),
        ]
        if let key = try? P256PrivateKey(raw: c.privateKey) { fields[8] = Self.coseKey(key.publicKey) }
        return fields
    }

    // MARK: Key handles

    private static let keyHandleFormat: UInt8 = 0x01
    static let keyHandleLength = 98

    private func ensureWrappingKeys(_ state: inout VirtualKeyState) {
        if state.fido.wrapEncryptionKey.count != 32 { state.fido.wrapEncryptionKey = Crypto.random(32) }
        if state.fido.wrapMACKey.count != 32 { state.fido.wrapMACKey = Crypto.random(32) }
    }

    private func wrap(_ privateKey: [UInt8], rpIDHash: [UInt8], credProtect: Int, hmacSecret: Bool,
                      _ fido: FIDOState) -> [UInt8]? {
        let flags = UInt8(credProtect & 0x03) | (hmacSecret ? 0x80 : 0)
        let iv = Crypto.random(16)
        guard let sealed = try? Crypto.aes256CBCEncrypt(key: fido.wrapEncryptionKey, iv: iv, privateKey + rpIDHash)
        else { return nil }
        let body = [Self.keyHandleFormat, flags] + iv + sealed
        return body + Crypto.hmac(.sha256, key: fido.wrapMACKey, data: body).prefix(16)
    }

    private func unwrap(_ handle: [UInt8], rpIDHash: [UInt8], _ fido: FIDOState)
        -> (privateKey: [UInt8], credProtect: Int, hmacSecret: Bool)? {
        guard handle.count == Self.keyHandleLength, handle[0] == Self.keyHandleFormat,
              fido.wrapEncryptionKey.count == 32, fido.wrapMACKey.count == 32 else { return nil }
        let body = Array(handle[..<82])
        let mac = Array(Crypto.hmac(.sha256, key: fido.wrapMACKey, data: body).prefix(16))
        guard Crypto.constantTimeEqual(mac, Array(handle[82...])) else { return nil }
        guard let plain = try? Crypto.aes256CBCDecrypt(key: fido.wrapEncryptionKey, iv: Array(handle[2..<18]),
                                                        Array(handle[18..<82])),
              plain.count == 64, Crypto.constantTimeEqual(Array(plain[32...]), rpIDHash) else { return nil }
        let level = Int(handle[1] & 0x03)
        guard (1...3).contains(level) else { return nil }
        return (Array(plain[..<32]), level, handle[1] & 0x80 != 0)
    }

    // MARK: U2F

    private enum U2FIns {
        static let register: UInt8 = 0x01
        static let authenticate: UInt8 = 0x02
        static let version: UInt8 = 0x03
    }

    /// Handles one U2F (CTAP1) command APDU.
    public func processU2F(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        guard apdu.cla == 0 else { return Response(status: .classNotSupported) }
        switch apdu.ins {
        case U2FIns.version:
            guard apdu.data.isEmpty else { return Response(status: .wrongLength) }
            return Response(data: Array("U2F_V2".utf8), status: .ok)
        case U2FIns.register:
            return u2fRegister(apdu, &state)
        case U2FIns.authenticate:
            return u2fAuthenticate(apdu, &state)
        default:
            return Response(status: .invalidInstruction)
        }
    }

    /// U2F user presence: with a touch delay the first request starts the "touch" and is answered 6985
    /// (test of user presence required), as a key that waits to be touched answers; clients repeat the
    /// request until the delay has passed.
    private func u2fPresence() -> Bool {
        guard userPresenceDelay > 0 else { return true }
        let now = Self.uptime()
        guard let started = u2fPresenceRequestedAt else {
            u2fPresenceRequestedAt = now
            return false
        }
        guard now - started >= userPresenceDelay else { return false }
        u2fPresenceRequestedAt = nil
        return true
    }

    private func u2fRegister(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard apdu.data.count == 64 else { return Response(status: .wrongLength) }
        let challenge = Array(apdu.data[0..<32])
        let application = Array(apdu.data[32..<64])
        guard u2fPresence() else { return Response(status: .conditionsNotSatisfied) }
        ensureWrappingKeys(&state)
        guard let (attestationKey, certificate) = u2fAttestation(&state) else {
            return Response(status: .commandAborted)
        }
        let key = P256PrivateKey()
        guard let handle = wrap(key.raw, rpIDHash: application, credProtect: 1, hmacSecret: false, state.fido)
        else { return Response(status: .commandAborted) }
        let publicKey = key.publicKey.uncompressed
        let signature = attestationKey.sign([0x00] + application + challenge + handle + publicKey)
        guard !signature.isEmpty else { return Response(status: .commandAborted) }
        let body = [0x05] + publicKey + [UInt8(handle.count)] + handle + certificate + signature
        return Response(data: body, status: .ok)
    }

    /// The U2F attestation key and certificate, made on first use.
    private func u2fAttestation(_ state: inout VirtualKeyState) -> (P256PrivateKey, [UInt8])? {
        if state.fido.attestationKey.count == 32, !state.fido.attestationCertificate.isEmpty,
           let key = try? P256PrivateKey(raw: state.fido.attestationKey) {
            return (key, state.fido.attestationCertificate)
        }
        let key = P256PrivateKey()
        let serial = BigEndian.integer(Crypto.random(8)) >> 1
        guard let certificate = try? X509Certificate.selfSigned(
            key: key, commonName: "ykterm virtual key U2F attestation", serial: serial) else { return nil }
        state.fido.attestationKey = key.raw
        state.fido.attestationCertificate = certificate.der
        return (key, certificate.der)
    }

    private func u2fAuthenticate(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        let d = apdu.data
        guard d.count >= 65, d.count == 65 + Int(d[64]) else { return Response(status: .wrongLength) }
        let challenge = Array(d[0..<32])
        let application = Array(d[32..<64])
        let handle = Array(d[65...])
        // Credentials protected with credProtect above level 1 are not for U2F.
        guard let unwrapped = unwrap(handle, rpIDHash: application, state.fido), unwrapped.credProtect == 1 else {
            return Response(status: .incorrectParameters)
        }
        let userPresent: Bool
        switch apdu.p1 {
        case 0x07: // check only
            return Response(status: .conditionsNotSatisfied)
        case 0x03: // enforce user presence and sign
            guard u2fPresence() else { return Response(status: .conditionsNotSatisfied) }
            userPresent = true
        case 0x08: // sign without user presence
            userPresent = false
        default:
            return Response(status: .incorrectParameters)
        }
        guard let key = try? P256PrivateKey(raw: unwrapped.privateKey) else {
            return Response(status: .commandAborted)
        }
        state.fido.signCount &+= 1
        let flags: UInt8 = userPresent ? 0x01 : 0x00
        let counter = BigEndian.bytes(UInt64(state.fido.signCount), count: 4)
        let signature = key.sign(application + [flags] + counter + challenge)
        guard !signature.isEmpty else { return Response(status: .commandAborted) }
        return Response(data: [flags] + counter + signature, status: .ok)
    }
}

// MARK: - CBOR parameter access

extension FIDOAuthenticator {
    /// A CBOR map's fields, read with CTAP2's error for a field of the wrong type.
    fileprivate struct Fields {
        let map: [CBOR: CBOR]

        init(_ map: [CBOR: CBOR]) { self.map = map }

        subscript(_ key: CBOR) -> CBOR? { map[key] }

        private func typed<T>(_ key: CBOR, _ extract: (CBOR) -> T?) throws(Failure) -> T? {
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
    }
}
