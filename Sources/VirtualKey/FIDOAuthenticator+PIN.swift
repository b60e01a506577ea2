import FoundationEssentials
import Glibc
import KeyKit

/// PIN: clientPIN subcommands, PIN/UV auth protocols, tokens and their permissions.
extension FIDOAuthenticator {
    // MARK: clientPIN

    typealias PINSubcommand = CTAP2.ClientPIN.Subcommand
    typealias PINKey = CTAP2.ClientPIN.Key
    typealias PINAnswer = CTAP2.ClientPIN.ResponseKey

    /// Permissions this authenticator grants: mc, ga and cm, acfg where it has authenticatorConfig, and be
    /// where its profile has a fingerprint sensor (no large blobs).
    func supportedPermissions(_ state: VirtualKeyState) -> PINPermissions {
        var permissions: PINPermissions = [.makeCredential, .getAssertion, .credentialManagement]
        if Self.hasConfig(state) { permissions.insert(.authenticatorConfig) }
        if profile.hasBioEnrollment { permissions.insert(.bioEnrollment) }
        return permissions
    }

    func clientPIN(_ p: Fields, _ state: inout VirtualKeyState) throws(Failure) -> [UInt8] {
        guard let sub = try p.int(PINKey.subcommand) else { throw .status(CTAPError.missingParameter) }
        let protocolNumber = try p.int(PINKey.pinUVAuthProtocol)
        if sub == PINSubcommand.getPINRetries {
            if profile.refusesPINRetriesWithoutPIN && !state.fido.isPINSet { throw .status(CTAPError.pinNotSet) }
            return Self.ok([
                PINAnswer.pinRetries: CBOR(state.fido.pinRetries),
                PINAnswer.powerCycleState: .bool(consecutiveWrongPINs >= Self.wrongPINsPerPowerCycle),
            ])
        }
        guard let protocolNumber else { throw .status(CTAPError.missingParameter) }
        guard let pinProtocol = self.pinProtocol(protocolNumber) else {
            throw .status(CTAPError.invalidParameter)
        }
        switch sub {
        case PINSubcommand.getKeyAgreement:
            return Self.ok([PINAnswer.keyAgreement: PINUVAuthProtocol.coseKey(keyAgreementKey.publicKey)])

        case PINSubcommand.setPIN:
            guard let peer = p[PINKey.keyAgreement], let newPINEnc = try p.bytes(PINKey.newPINEnc),
                let auth = try p.bytes(PINKey.pinUVAuthParam)
            else {
                throw .status(CTAPError.missingParameter)
            }
            guard !state.fido.isPINSet else { throw .status(CTAPError.notAllowed) }
            let secret = try sharedSecret(pinProtocol, peer)
            guard pinProtocol.verify(key: secret, newPINEnc, signature: auth) else {
                throw .status(CTAPError.pinAuthInvalid)
            }
            let (hash, length) = try newPINHash(pinProtocol, secret, newPINEnc, state)
            state.fido.pinHash = hash
            state.fido.pinLength = length
            state.fido.forcePINChange = false
            state.fido.pinRetries = FIDOState.maxPINRetries
            token = nil
            return [CTAP2.ok]

        case PINSubcommand.changePIN:
            guard let peer = p[PINKey.keyAgreement], let pinHashEnc = try p.bytes(PINKey.pinHashEnc),
                let newPINEnc = try p.bytes(PINKey.newPINEnc), let auth = try p.bytes(PINKey.pinUVAuthParam)
            else {
                throw .status(CTAPError.missingParameter)
            }
            try checkPINUsable(state)
            let secret = try sharedSecret(pinProtocol, peer)
            guard pinProtocol.verify(key: secret, newPINEnc + pinHashEnc, signature: auth) else {
                throw .status(CTAPError.pinAuthInvalid)
            }
            try verifyPIN(pinProtocol, secret, pinHashEnc, &state)
            let (hash, length) = try newPINHash(pinProtocol, secret, newPINEnc, state)
            state.fido.pinHash = hash
            state.fido.pinLength = length
            state.fido.forcePINChange = false
            token = nil
            return [CTAP2.ok]

        case PINSubcommand.getPINToken:
            guard let peer = p[PINKey.keyAgreement], let pinHashEnc = try p.bytes(PINKey.pinHashEnc) else {
                throw .status(CTAPError.missingParameter)
            }
            guard p[PINKey.permissions] == nil, p[PINKey.rpID] == nil else { throw .status(CTAPError.invalidParameter) }
            try checkPINUsable(state)
            let secret = try sharedSecret(pinProtocol, peer)
            try verifyPIN(pinProtocol, secret, pinHashEnc, &state)
            // A right PIN, but the key wants a new one first.
            guard !state.fido.forcePINChange else { throw .status(CTAPError.pinPolicyViolation) }
            // Tokens from the legacy command predate permissions: they may do everything.
            let value = issueToken(permissions: supportedPermissions(state), rpID: nil)
            return Self.ok([PINAnswer.pinUVAuthToken: .bytes(try encrypt(pinProtocol, secret, value))])

        case PINSubcommand.getPINUVAuthTokenUsingPINWithPermissions:
            guard let peer = p[PINKey.keyAgreement], let pinHashEnc = try p.bytes(PINKey.pinHashEnc),
                let permissions = try p.int(PINKey.permissions)
            else {
                throw .status(CTAPError.missingParameter)
            }
            let rpID = try p.text(PINKey.rpID)
            guard permissions > 0 else { throw .status(CTAPError.invalidParameter) }
            let requested = PINPermissions(rawValue: permissions)
            guard supportedPermissions(state).isSuperset(of: requested) else {
                throw .status(CTAPError.unauthorizedPermission)
            }
            try checkPINUsable(state)
            let secret = try sharedSecret(pinProtocol, peer)
            try verifyPIN(pinProtocol, secret, pinHashEnc, &state)
            guard !state.fido.forcePINChange else { throw .status(CTAPError.pinPolicyViolation) }
            let value = issueToken(permissions: requested, rpID: rpID)
            return Self.ok([PINAnswer.pinUVAuthToken: .bytes(try encrypt(pinProtocol, secret, value))])

        default:
            // No built-in user verification: getPinUvAuthTokenUsingUvWithPermissions and getUVRetries
            // are not supported either.
            throw .status(CTAPError.invalidSubcommand)
        }
    }

    /// The PIN/UV auth protocol numbered `number`, when this authenticator offers it.
    func pinProtocol(_ number: Int) -> PINUVAuthProtocol? {
        guard profile.pinUVAuthProtocols.contains(number) else { return nil }
        switch number {
        case 1: return .one
        case 2: return .two
        default: return nil
        }
    }

    func checkPINUsable(_ state: VirtualKeyState) throws(Failure) {
        guard state.fido.isPINSet else { throw .status(CTAPError.pinNotSet) }
        guard state.fido.pinRetries > 0 else { throw .status(CTAPError.pinBlocked) }
        guard consecutiveWrongPINs < Self.wrongPINsPerPowerCycle else { throw .status(CTAPError.pinAuthBlocked) }
    }

    /// The shared secret with the platform's key agreement key (a COSE key).
    func sharedSecret(_ pinProtocol: PINUVAuthProtocol, _ peer: CBOR) throws(Failure) -> [UInt8] {
        guard let publicKey = try? PINUVAuthProtocol.publicKey(fromCOSE: peer),
            let z = try? keyAgreementKey.sharedSecret(with: publicKey),
            let secret = try? pinProtocol.kdf(z)
        else {
            throw .status(CTAPError.invalidParameter)
        }
        return secret
    }

    func encrypt(_ pinProtocol: PINUVAuthProtocol, _ key: [UInt8], _ data: [UInt8]) throws(Failure)
        -> [UInt8]
    {
        guard let out = try? pinProtocol.encrypt(key: key, data) else { throw .status(CTAPError.other) }
        return out
    }

    /// Checks pinHashEnc against the stored PIN hash. Every try costs a retry until it succeeds; a wrong
    /// PIN also makes a new key agreement key, and counts towards the power-cycle block.
    func verifyPIN(
        _ pinProtocol: PINUVAuthProtocol, _ secret: [UInt8], _ pinHashEnc: [UInt8],
        _ state: inout VirtualKeyState
    ) throws(Failure) {
        guard let given = try? pinProtocol.decrypt(key: secret, pinHashEnc), given.count == 16,
            let stored = state.fido.pinHash
        else {
            throw .status(CTAPError.invalidParameter)
        }
        state.fido.pinRetries -= 1
        guard Crypto.constantTimeEqual(given, stored) else {
            currentKeyAgreementKey = nil
            consecutiveWrongPINs += 1
            if state.fido.pinRetries <= 0 { throw .status(CTAPError.pinBlocked) }
            if consecutiveWrongPINs >= Self.wrongPINsPerPowerCycle { throw .status(CTAPError.pinAuthBlocked) }
            throw .status(CTAPError.pinInvalid)
        }
        state.fido.pinRetries = FIDOState.maxPINRetries
        consecutiveWrongPINs = 0
    }

    /// Decrypts and checks a new PIN: at least 64 bytes of padding, at most 63 bytes of UTF-8 before it,
    /// at least the minimum length in code points, and (on a key that enforces PIN complexity) not too simple for
    /// `PINComplexity`. Returns its hash, LEFT(SHA-256(PIN), 16), and its length in code points.
    func newPINHash(
        _ pinProtocol: PINUVAuthProtocol, _ secret: [UInt8], _ newPINEnc: [UInt8], _ state: VirtualKeyState
    ) throws(Failure) -> (hash: [UInt8], length: Int) {
        guard let padded = try? pinProtocol.decrypt(key: secret, newPINEnc) else {
            throw .status(CTAPError.invalidParameter)
        }
        guard padded.count >= 64 else { throw .status(CTAPError.pinPolicyViolation) }
        var pin = padded
        while pin.last == 0 { pin.removeLast() }
        guard pin.count <= PINRules.maxBytes, !pin.contains(0),
            let text = String(validating: pin, as: UTF8.self),
            text.unicodeScalars.count >= max(state.fido.minPINLength, 4),
            !state.pinComplexity || PINComplexity.allows(pin)
        else {
            throw .status(CTAPError.pinPolicyViolation)
        }
        return (PINUVAuthProtocol.pinHash(text), text.unicodeScalars.count)
    }

    /// A new PIN/UV auth token (every earlier one stops working).
    func issueToken(permissions: PINPermissions, rpID: String?) -> [UInt8] {
        let value = Crypto.random(32)
        token = Token(value: value, permissions: permissions, rpID: rpID)
        return value
    }

    /// Checks pinUvAuthParam over `message` with the current token, and that the token may do `permission`
    /// (for `rpID`, when the token is bound to an RP).
    func authorize(
        _ pinProtocol: PINUVAuthProtocol, _ auth: [UInt8], _ message: [UInt8],
        permission: PINPermissions, rpID: String?
    ) throws(Failure) {
        guard let token, pinProtocol.verify(key: token.value, message, signature: auth) else {
            throw .status(CTAPError.pinAuthInvalid)
        }
        guard token.permissions.contains(permission) else { throw .status(CTAPError.pinAuthInvalid) }
        if let bound = token.rpID, let rpID, bound != rpID { throw .status(CTAPError.pinAuthInvalid) }
    }

    /// The pinUvAuthProtocol of a request that carries pinUvAuthParam.
    func requestProtocol(_ p: Fields, key: Int) throws(Failure) -> PINUVAuthProtocol {
        guard let number = try p.int(key) else { throw .status(CTAPError.missingParameter) }
        guard let pinProtocol = self.pinProtocol(number) else { throw .status(CTAPError.invalidParameter) }
        return pinProtocol
    }

    /// A request's pinUvAuthParam (under `param`) with the PIN/UV auth protocol it names (under `key`), or nil
    /// without one. An empty one is answered at once (see `emptyPINAuth`).
    func pinAuth(
        _ p: Fields, param: Int, protocol key: Int, _ state: VirtualKeyState,
        _ presence: () -> Presence
    ) throws(Failure) -> (param: [UInt8], pinProtocol: PINUVAuthProtocol)? {
        guard let auth = try p.bytes(param) else { return nil }
        if auth.isEmpty { try emptyPINAuth(state, presence) }
        return (auth, try requestProtocol(p, key: key))
    }

    /// A zero-length pinUvAuthParam: platforms use it to have the user pick a key. After a touch the
    /// answer says whether a PIN is set.
    func emptyPINAuth(_ state: VirtualKeyState, _ presence: () -> Presence) throws(Failure) -> Never {
        try collectPresence(presence)
        throw .status(state.fido.isPINSet ? CTAPError.pinInvalid : CTAPError.pinNotSet)
    }
}
