/// A credential as makeCredential returns it, with its attestation.
public struct AttestedCredential: Sendable, Equatable {
    public var format: String
    public var authData: AuthenticatorData
    public var attestationStatement: CBOR
    public var credentialID: [UInt8] { authData.credentialID ?? [] }
}

/// One assertion from getAssertion / getNextAssertion.
public struct Assertion: Sendable, Equatable {
    public var credentialID: [UInt8]
    public var authData: AuthenticatorData
    public var signature: [UInt8]
    public var user: CBOR?
    public var numberOfCredentials: Int?
}

/// Parsed authenticator data: RP ID hash, flags, counter, attested credential data.
public struct AuthenticatorData: Sendable, Equatable {
    public var raw: [UInt8]
    public var rpIDHash: [UInt8]
    /// The flags byte: bits of `CTAP2.AuthDataFlag`.
    public var flags: UInt8
    public var signCount: UInt32
    public var aaguid: [UInt8]?
    public var credentialID: [UInt8]?
    public var credentialPublicKey: CBOR?
    public var extensions: CBOR?

    public init(_ raw: [UInt8]) throws {
        guard raw.count >= 37 else {
            throw FIDOSessionError.malformed(Malformation(.authenticatorData, .tooShort(raw.count, minimum: 37)))
        }
        self.raw = raw
        rpIDHash = Array(raw[0..<32])
        flags = raw[32]
        signCount = UInt32(BigEndian.integer(raw[33..<37]))
        var offset = 37
        if flags & CTAP2.AuthDataFlag.attestedCredentialData != 0 {
            guard raw.count >= offset + 18 else {
                throw FIDOSessionError.malformed(
                    Malformation(.attestedCredential, .tooShort(raw.count - offset, minimum: 18)))
            }
            aaguid = Array(raw[offset..<(offset + 16)])
            let n = Int(BigEndian.integer(raw[(offset + 16)..<(offset + 18)]))
            offset += 18
            guard raw.count >= offset + n else {
                throw FIDOSessionError.malformed(Malformation(.credentialID, .tooShort(raw.count - offset, minimum: n)))
            }
            credentialID = Array(raw[offset..<(offset + n)])
            offset += n
            let rest = Array(raw[offset...])
            let (key, used) = try CBOR.decodePrefix(rest)
            credentialPublicKey = key
            offset += used
        }
        if flags & CTAP2.AuthDataFlag.extensionData != 0 {
            let rest = Array(raw[offset...])
            let (ext, used) = try CBOR.decodePrefix(rest)
            extensions = ext
            offset += used
        }
        guard offset == raw.count else {
            throw FIDOSessionError.malformed(Malformation(.authenticatorData, .trailing(raw.count - offset)))
        }
    }

    /// The credential's public key from its COSE form, if it is one ykterm verifies (ES256 or EdDSA).
    public var publicKey: CredentialPublicKey? {
        credentialPublicKey.flatMap { try? CredentialPublicKey(cose: $0) }
    }

    /// The credential's public key if it is an ES256 one.
    public var es256PublicKey: P256PublicKey? {
        guard case .es256(let key) = publicKey else { return nil }
        return key
    }
}

/// CTAP2 over any FIDO connection: info, PIN, credentials, reset.
///
/// The PIN is never kept; a PIN/UV auth token obtained with it is kept until `dropToken()` or the
/// session ends, and is used for later commands that need it.
public actor CTAP2Session {
    public let connection: any FIDOConnection
    public private(set) var info: AuthenticatorInfo
    /// The PIN/UV auth token, in a buffer that is zeroed when it is dropped or the session ends.
    private var token: (value: SecretBytes, protocolVersion: PINUVAuthProtocol, permissions: PINPermissions)?
    /// Progress (touch needed) for long operations.
    public var progress: (@Sendable (FIDOProgress) -> Void)?

    private init(connection: any FIDOConnection, info: AuthenticatorInfo) {
        self.connection = connection
        self.info = info
    }

    /// Reads getInfo. A key that refuses CTAP2 (a USB key whose CTAPHID_INIT announces no CBOR, or one
    /// answering getInfo as an unknown command) throws `FIDOSessionError.ctap2NotSupported`: it speaks U2F
    /// only.
    public static func make(connection: any FIDOConnection) async throws -> CTAP2Session {
        if connection.announcesCTAP2 == false { throw FIDOSessionError.ctap2NotSupported }
        let info: AuthenticatorInfo
        do {
            info = try await CTAP2Session.getInfo(connection)
        } catch let error where refusesCTAP2(error) {
            throw FIDOSessionError.ctap2NotSupported
        }
        return CTAP2Session(connection: connection, info: info)
    }

    /// Whether `error`, the answer to getInfo, says the key has no CTAP2: CTAPHID_ERROR "invalid command" over
    /// HID, "instruction not supported" (6D00) or "class not supported" (6E00) to NFCCTAP_MSG, or the CTAP
    /// status "invalid command".
    static func refusesCTAP2(_ error: any Error) -> Bool {
        switch error {
        case FIDOTransportError.ctaphidError(let code): return code == CTAPHID.ErrorCode.invalidCommand
        case SmartCardError.status(let sw): return sw == .invalidInstruction || sw == .classNotSupported
        case let e as CTAPError: return e.code == CTAPError.invalidCommand
        default: return false
        }
    }

    public func setProgress(_ handler: (@Sendable (FIDOProgress) -> Void)?) { progress = handler }

    static func getInfo(_ connection: any FIDOConnection) async throws -> AuthenticatorInfo {
        let r = try await send(connection, .getInfo, nil, progress: nil)
        guard let r else { throw FIDOSessionError.malformed(Malformation(.getInfo, .empty)) }
        return try AuthenticatorInfo(cbor: r)
    }

    /// Sends a command with integer-keyed parameters; returns the decoded answer (nil when empty).
    static func send(
        _ connection: any FIDOConnection, _ command: CTAP2.Command, _ params: CTAPParameters?,
        progress: (@Sendable (FIDOProgress) -> Void)?
    ) async throws -> CBOR? {
        var request: [UInt8] = [command.rawValue]
        if let params { request += params.cbor.encoded }
        let response = try await connection.sendCBOR(request, progress: progress)
        guard let status = response.first else { throw FIDOSessionError.malformed(Malformation(.ctapAnswer, .empty)) }
        guard status == CTAP2.ok else { throw CTAPError(status) }
        if response.count == 1 { return nil }
        do {
            return try CBOR.decode(Array(response.dropFirst()))
        } catch {
            throw FIDOSessionError.malformed(Malformation(.ctapAnswer, .cbor(error)))
        }
    }

    func send(_ command: CTAP2.Command, _ params: CTAPParameters?) async throws -> CBOR? {
        try await CTAP2Session.send(connection, command, params, progress: progress)
    }

    /// Reads getInfo again (after PIN changes, the clientPin option and counts change).
    @discardableResult
    public func refreshInfo() async throws -> AuthenticatorInfo {
        info = try await CTAP2Session.getInfo(connection)
        return info
    }

    // MARK: clientPIN

    typealias PINSub = CTAP2.ClientPIN.Subcommand
    typealias PINKey = CTAP2.ClientPIN.Key
    typealias PINAnswer = CTAP2.ClientPIN.ResponseKey

    /// The PIN/UV auth protocol to use with a key offering `offered` (getInfo's pinUvAuthProtocols): 2 when
    /// offered, else 1 when offered or when the list is absent (CTAP 2.0 keys have protocol 1 alone); nil when
    /// the key offers only protocols this client does not speak.
    public static func pinProtocol(offered: [Int]) -> PINUVAuthProtocol? {
        if offered.contains(2) { return .two }
        if offered.contains(1) || offered.isEmpty { return .one }
        return nil
    }

    /// The PIN/UV auth protocol used with this key (see `pinProtocol(offered:)`).
    public var pinProtocol: PINUVAuthProtocol? { CTAP2Session.pinProtocol(offered: info.pinUVAuthProtocols) }

    /// `pinProtocol`, or why there is none.
    private func commonPINProtocol() throws -> PINUVAuthProtocol {
        guard let p = pinProtocol else { throw FIDOSessionError.noCommonPINProtocol(info.pinUVAuthProtocols) }
        return p
    }

    private func clientPIN(_ sub: Int, _ extra: CTAPParameters = [:]) async throws -> CBOR? {
        guard info.pinSet != nil || !info.pinUVAuthProtocols.isEmpty else { throw FIDOSessionError.noPINSupport }
        var params = extra
        params[PINKey.pinUVAuthProtocol] = CBOR(try commonPINProtocol().version)
        params[PINKey.subcommand] = CBOR(sub)
        return try await send(.clientPIN, params)
    }

    /// PIN retries left, and whether a power cycle is needed before the next try (when the key says).
    /// getPINRetries. A count outside 0...255 (some keys answer a negative one before a PIN exists) is no
    /// count: it is thrown as malformed, so callers show the attempts as unknown.
    public func pinRetries() async throws -> (retries: Int, powerCycleNeeded: Bool?) {
        let r = try await clientPIN(PINSub.getPINRetries)
        guard let n = r?[PINAnswer.pinRetries]?.int else {
            throw FIDOSessionError.malformed(Malformation(.pinRetries, .missing))
        }
        guard CTAP2Session.possibleRetries.contains(n) else {
            throw FIDOSessionError.malformed(Malformation(.pinRetries, .value(String(n))))
        }
        return (n, r?[PINAnswer.powerCycleState]?.bool)
    }

    /// What a retry counter can be (an unsigned byte).
    static let possibleRetries = 0...255

    public func uvRetries() async throws -> Int {
        let r = try await clientPIN(PINSub.getUVRetries)
        guard let n = r?[PINAnswer.uvRetries]?.int else {
            throw FIDOSessionError.malformed(Malformation(.uvRetries, .missing))
        }
        return n
    }

    private func sharedSecret() async throws -> (CBOR, [UInt8]) {
        let r = try await clientPIN(PINSub.getKeyAgreement)
        guard let cose = r?[PINAnswer.keyAgreement] else {
            throw FIDOSessionError.malformed(Malformation(.keyAgreement, .missing))
        }
        return try commonPINProtocol().encapsulate(try PINUVAuthProtocol.publicKey(fromCOSE: cose))
    }

    public func setPIN(_ pin: String) async throws {
        try PINRules.check(pin, minimum: info.minPINLength)
        let (keyAgreement, shared) = try await sharedSecret()
        let p = try commonPINProtocol()
        let newPinEnc = try p.encrypt(key: shared, PINUVAuthProtocol.paddedPIN(pin))
        _ = try await clientPIN(
            PINSub.setPIN,
            [
                PINKey.keyAgreement: keyAgreement,
                PINKey.pinUVAuthParam: .bytes(p.authenticate(key: shared, newPinEnc)),
                PINKey.newPINEnc: .bytes(newPinEnc),
            ])
        token = nil
        try await refreshInfo()
    }

    public func changePIN(old: String, new: String) async throws {
        try PINRules.check(new, minimum: info.minPINLength)
        let (keyAgreement, shared) = try await sharedSecret()
        let p = try commonPINProtocol()
        let newPinEnc = try p.encrypt(key: shared, PINUVAuthProtocol.paddedPIN(new))
        let pinHashEnc = try p.encrypt(key: shared, PINUVAuthProtocol.pinHash(old))
        do {
            _ = try await clientPIN(
                PINSub.changePIN,
                [
                    PINKey.keyAgreement: keyAgreement,
                    PINKey.pinUVAuthParam: .bytes(p.authenticate(key: shared, newPinEnc + pinHashEnc)),
                    PINKey.newPINEnc: .bytes(newPinEnc), PINKey.pinHashEnc: .bytes(pinHashEnc),
                ])
        } catch let e as CTAPError where e.code == CTAPError.pinInvalid {
            throw CTAPError(e.code, retriesLeft: try? await pinRetries().retries)
        }
        token = nil
        try await refreshInfo()
    }

    /// Gets a PIN/UV auth token with the PIN (with permissions on CTAP 2.1 keys; the legacy command
    /// otherwise). The token is kept for later commands; the PIN is not.
    public func verifyPIN(_ pin: String, permissions: PINPermissions = [], rpID: String? = nil) async throws {
        guard !pin.isEmpty else { throw FIDOSessionError.pinTooShort(minimum: max(info.minPINLength, 4), count: 0) }
        let (keyAgreement, shared) = try await sharedSecret()
        let p = try commonPINProtocol()
        let pinHashEnc = try p.encrypt(key: shared, PINUVAuthProtocol.pinHash(pin))
        let withPermissions = info.options["pinUvAuthToken"] == true && !permissions.isEmpty
        var params: CTAPParameters = [PINKey.keyAgreement: keyAgreement, PINKey.pinHashEnc: .bytes(pinHashEnc)]
        if withPermissions {
            params[PINKey.permissions] = CBOR(permissions.rawValue)
            if let rpID { params[PINKey.rpID] = .text(rpID) }
        }
        let r: CBOR?
        do {
            let sub = withPermissions ? PINSub.getPINUVAuthTokenUsingPINWithPermissions : PINSub.getPINToken
            r = try await clientPIN(sub, params)
        } catch let e as CTAPError where e.code == CTAPError.pinInvalid {
            throw CTAPError(e.code, retriesLeft: try? await pinRetries().retries)
        } catch let e as CTAPError where e.code == CTAPError.pinPolicyViolation {
            // The PIN was right, but the key wants it changed first (CTAP 2.1 forcePINChange).
            throw FIDOSessionError.pinChangeRequired
        }
        guard let enc = r?[PINAnswer.pinUVAuthToken]?.bytes else {
            throw FIDOSessionError.malformed(Malformation(.pinToken, .missing))
        }
        var value = try p.decrypt(key: shared, enc)
        guard value.count == 16 || value.count == 32 else {
            SecretBytes.wipe(&value)
            throw FIDOSessionError.malformed(Malformation(.pinToken, .length(value.count)))
        }
        token = (SecretBytes(wiping: &value), p, permissions)
    }

    /// Forgets the PIN/UV auth token.
    public func dropToken() {
        token?.value.wipe()
        token = nil
    }

    public var hasToken: Bool { token != nil }

    /// A PIN/UV auth token taken out of one session to be used in a later one with the same key (it stays
    /// valid until the key is powered off, or the key drops it). Keep it in memory only; `wipe()` it.
    public struct HeldToken: Sendable {
        // Each HeldToken has a buffer of its own (copied in and out of sessions), so wiping one wipes no other.
        fileprivate var value: SecretBytes
        fileprivate let protocolVersion: PINUVAuthProtocol
        public let permissions: PINPermissions

        /// Overwrites the token's bytes.
        public mutating func wipe() {
            value.wipe()
            value = SecretBytes()
        }
    }

    /// A copy of the token this session holds, for `adoptToken(_:)` in a later session.
    public func heldToken() -> HeldToken? {
        token.map { t in
            var copy = t.value.copyBytes()
            return HeldToken(
                value: SecretBytes(wiping: &copy), protocolVersion: t.protocolVersion,
                permissions: t.permissions)
        }
    }

    /// Uses a token from an earlier session (an empty, wiped token is ignored).
    public func adoptToken(_ held: HeldToken) {
        guard !held.value.isEmpty else { return }
        var copy = held.value.copyBytes()
        token = (SecretBytes(wiping: &copy), held.protocolVersion, held.permissions)
    }

    func requireToken() throws -> (value: SecretBytes, protocolVersion: PINUVAuthProtocol, permissions: PINPermissions)
    {
        guard let token else { throw CTAPError(CTAPError.pinRequired) }
        return token
    }

    // MARK: Credentials

    public struct RelyingParty: Sendable, Hashable {
        public var id: String
        public var name: String?
        public init(id: String, name: String? = nil) {
            self.id = id
            self.name = name
        }
        var cbor: CBOR {
            var m: [CBOR: CBOR] = ["id": .text(id)]
            if let name { m["name"] = .text(name) }
            return .map(m)
        }
    }

    public struct User: Sendable, Hashable {
        public var id: [UInt8]
        public var name: String?
        public var displayName: String?
        public init(id: [UInt8], name: String? = nil, displayName: String? = nil) {
            self.id = id
            self.name = name
            self.displayName = displayName
        }
        var cbor: CBOR {
            var m: [CBOR: CBOR] = ["id": .bytes(id)]
            if let name { m["name"] = .text(name) }
            if let displayName { m["displayName"] = .text(displayName) }
            return .map(m)
        }
        init?(cbor: CBOR?) {
            guard let id = cbor?["id"]?.bytes else { return nil }
            self.init(id: id, name: cbor?["name"]?.string, displayName: cbor?["displayName"]?.string)
        }
    }

    /// makeCredential with the first of `algorithms` (COSE numbers, ES256 unless given) the key supports; a key
    /// that supports none answers CTAP2_ERR_UNSUPPORTED_ALGORITHM. With `credProtect` (1 to 3), the extension that
    /// says when the credential may be used without verification. Adds pinUvAuthParam when a token is held;
    /// without one, a key that has a PIN answers PUAT_REQUIRED, reported as "this needs the PIN".
    public func makeCredential(
        clientDataHash: [UInt8], rp: RelyingParty, user: User, residentKey: Bool,
        excludeList: [[UInt8]] = [], algorithms: [Int] = [COSE.Algorithm.es256], credProtect: Int? = nil
    ) async throws -> AttestedCredential {
        typealias Key = CTAP2.MakeCredential.Key
        typealias Answer = CTAP2.MakeCredential.ResponseKey
        var params: CTAPParameters = [
            Key.clientDataHash: .bytes(clientDataHash), Key.rp: rp.cbor, Key.user: user.cbor,
            Key.pubKeyCredParams: .array(algorithms.map(CTAP2.credentialParameters)),
        ]
        if !excludeList.isEmpty { params[Key.excludeList] = .array(excludeList.map(CTAP2.credentialDescriptor)) }
        if residentKey { params[Key.options] = ["rk": true] }
        if let credProtect { params[Key.extensions] = ["credProtect": CBOR(credProtect)] }
        if let token {
            params[Key.pinUVAuthParam] = .bytes(token.protocolVersion.authenticate(key: token.value, clientDataHash))
            params[Key.pinUVAuthProtocol] = CBOR(token.protocolVersion.version)
        }
        guard let r = try await send(.makeCredential, params), let fmt = r[Answer.format]?.string,
            let ad = r[Answer.authData]?.bytes, let att = r[Answer.attestationStatement]
        else {
            throw FIDOSessionError.malformed(Malformation(.makeCredential, .incomplete))
        }
        return AttestedCredential(format: fmt, authData: try AuthenticatorData(ad), attestationStatement: att)
    }

    /// getAssertion, followed by getNextAssertion for every further credential.
    public func getAssertions(
        rpID: String, clientDataHash: [UInt8], allowList: [[UInt8]] = [],
        userPresence: Bool = true
    ) async throws -> [Assertion] {
        typealias Key = CTAP2.GetAssertion.Key
        var params: CTAPParameters = [Key.rpID: .text(rpID), Key.clientDataHash: .bytes(clientDataHash)]
        if !allowList.isEmpty { params[Key.allowList] = .array(allowList.map(CTAP2.credentialDescriptor)) }
        if !userPresence { params[Key.options] = ["up": false] }
        if let token {
            params[Key.pinUVAuthParam] = .bytes(token.protocolVersion.authenticate(key: token.value, clientDataHash))
            params[Key.pinUVAuthProtocol] = CBOR(token.protocolVersion.version)
        }
        guard let first = try await send(.getAssertion, params) else {
            throw FIDOSessionError.malformed(Malformation(.assertion, .empty))
        }
        var out = [try CTAP2Session.assertion(first, allowList: allowList)]
        let count = out[0].numberOfCredentials ?? 1
        if count > 1 {
            for _ in 1..<count {
                guard let next = try await send(.getNextAssertion, nil) else { break }
                out.append(try CTAP2Session.assertion(next, allowList: allowList))
            }
        }
        return out
    }

    static func assertion(_ r: CBOR, allowList: [[UInt8]]) throws -> Assertion {
        typealias Answer = CTAP2.GetAssertion.ResponseKey
        guard let ad = r[Answer.authData]?.bytes, let sig = r[Answer.signature]?.bytes else {
            throw FIDOSessionError.malformed(Malformation(.assertion, .incomplete))
        }
        let id = r[Answer.credential]?["id"]?.bytes ?? (allowList.count == 1 ? allowList[0] : nil)
        guard let id else { throw FIDOSessionError.malformed(Malformation(.assertionCredential, .missing)) }
        return Assertion(
            credentialID: id, authData: try AuthenticatorData(ad), signature: sig, user: r[Answer.user],
            numberOfCredentials: r[Answer.numberOfCredentials]?.int)
    }

    /// authenticatorReset: deletes every credential and the PIN. Keys allow it only within seconds of
    /// being inserted, and want a touch.
    public func reset() async throws {
        _ = try await send(.reset, nil)
        token = nil
        try await refreshInfo()
    }

    /// authenticatorSelection: waits for a touch (CTAP 2.1).
    public func selection() async throws {
        _ = try await send(.selection, nil)
    }
}
