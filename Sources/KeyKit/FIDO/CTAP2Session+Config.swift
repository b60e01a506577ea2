/// authenticatorConfig (CTAP 2.1 section 6.11): enterprise attestation, always requiring user verification,
/// and the minimum PIN length with its relying parties and the forced PIN change. A key with a PIN wants a
/// token with the acfg permission (`verifyPIN(_:permissions: [.authenticatorConfig])` first); a key without
/// one takes the command without a token while alwaysUv is off.
extension CTAP2Session {
    typealias ConfigSub = CTAP2.Config.Subcommand

    private func requireConfig() throws(FIDOSessionError) {
        guard info.supportsConfig else { throw .notSupported(.authenticatorConfig) }
    }

    /// Sends one authenticatorConfig subcommand, with pinUvAuthParam when a token is held.
    private func config(_ sub: Int, _ subParams: CBOR? = nil) async throws {
        typealias Key = CTAP2.Config.Key
        var params: CTAPParameters = [Key.subcommand: CBOR(sub)]
        if let subParams { params[Key.subcommandParams] = subParams }
        if hasToken {
            let t = try requireToken()
            let message = CTAP2.Config.authenticatedMessage(subcommand: sub, params: subParams)
            params[Key.pinUVAuthProtocol] = CBOR(t.protocolVersion.version)
            params[Key.pinUVAuthParam] = .bytes(t.protocolVersion.authenticate(key: t.value, message))
        }
        _ = try await send(.config, params)
        try await refreshInfo()
    }

    /// enableEnterpriseAttestation: later makeCredential requests may ask for an enterprise attestation. Only
    /// a reset turns it off again.
    public func enableEnterpriseAttestation() async throws {
        try requireConfig()
        guard info.enterpriseAttestation != nil else { throw FIDOSessionError.notSupported(.enterpriseAttestation) }
        try await config(ConfigSub.enableEnterpriseAttestation)
    }

    /// toggleAlwaysUv: switches between every credential needing user verification (the PIN) and the usual
    /// rules. Returns the new state as getInfo tells it.
    @discardableResult
    public func toggleAlwaysUV() async throws -> Bool {
        try requireConfig()
        guard info.alwaysUV != nil else { throw FIDOSessionError.notSupported(.alwaysUV) }
        try await config(ConfigSub.toggleAlwaysUV)
        return info.alwaysUV ?? false
    }

    /// setMinPINLength: a new minimum PIN length (in code points; nil keeps the current one), the relying
    /// parties that may read it through the minPinLength extension (nil keeps the list), and whether the PIN
    /// must be changed before its next use. A minimum below the current one is refused before anything is
    /// sent: keys only let it grow.
    public func setMinPINLength(_ length: Int?, rpIDs: [String]? = nil, forceChangePIN: Bool = false) async throws {
        try requireConfig()
        guard info.supportsSetMinPINLength else { throw FIDOSessionError.notSupported(.setMinPINLength) }
        if let length, length < info.minPINLength {
            throw FIDOSessionError.minPINLengthDecrease(current: info.minPINLength, requested: length)
        }
        typealias Key = CTAP2.Config.SetMinPINLengthKey
        var m = [CBOR: CBOR]()
        if let length { m[CBOR(Key.newMinPINLength)] = CBOR(length) }
        if let rpIDs { m[CBOR(Key.minPINLengthRPIDs)] = .array(rpIDs.map(CBOR.text)) }
        if forceChangePIN { m[CBOR(Key.forceChangePIN)] = true }
        try await config(ConfigSub.setMinPINLength, .map(m))
    }
}
