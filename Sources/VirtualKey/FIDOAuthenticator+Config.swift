import KeyKit

/// authenticatorConfig (CTAP 2.1 section 6.11), as a YubiKey 5 from firmware 5.7 has it: enable enterprise
/// attestation, toggle alwaysUv, and setMinPINLength with its relying parties and the forced PIN change. All of
/// it is kept in the key's state (the --state file) until a reset; a key of earlier firmware has no
/// authenticatorConfig (CTAP1_ERR_INVALID_COMMAND, and no authnrCfg option in getInfo).
extension FIDOAuthenticator {
    /// The first firmware with authenticatorConfig.
    static let configFirmware = Version(5, 7, 0)
    /// How many relying parties minPinLengthRPIDs may name (getInfo's maxRPIDsForSetMinPINLength): this virtual
    /// key's own limit.
    public static let maxRPIDsForSetMinPINLength = 8

    /// Whether the key has authenticatorConfig (and the alwaysUv, ep, setMinPINLength options, the acfg
    /// permission and the minPinLength extension).
    static func hasConfig(_ state: VirtualKeyState) -> Bool { state.version >= configFirmware }

    /// The getInfo options of authenticatorConfig, for a key that has it.
    static func configOptions(_ fido: FIDOState) -> [CBOR: CBOR] {
        typealias Option = CTAP2.Option
        return [
            .text(Option.authenticatorConfig): true, .text(Option.alwaysUV): .bool(fido.alwaysUV),
            .text(Option.enterpriseAttestation): .bool(fido.enterpriseAttestation),
            .text(Option.setMinPINLength): true,
        ]
    }

    func config(_ p: Fields, _ state: inout VirtualKeyState) throws(Failure) -> [UInt8] {
        guard Self.hasConfig(state) else { throw .status(CTAPError.invalidCommand) }
        typealias Key = CTAP2.Config.Key
        typealias Sub = CTAP2.Config.Subcommand
        guard let sub = try p.int(Key.subcommand) else { throw .status(CTAPError.missingParameter) }
        let subParams = try p.map(Key.subcommandParams)

        // With a PIN set, or with alwaysUv on (for everything but switching it off), only a token with the
        // acfg permission may change settings.
        if state.fido.isPINSet || (state.fido.alwaysUV && sub != Sub.toggleAlwaysUV) {
            guard let auth = try p.bytes(Key.pinUVAuthParam) else { throw .status(CTAPError.pinRequired) }
            let pinProtocol = try requestProtocol(p, key: Key.pinUVAuthProtocol)
            let message = CTAP2.Config.authenticatedMessage(subcommand: sub, params: p[Key.subcommandParams])
            try authorize(pinProtocol, auth, message, permission: .authenticatorConfig, rpID: nil)
        }

        switch sub {
        case Sub.enableEnterpriseAttestation:
            state.fido.enterpriseAttestation = true
        case Sub.toggleAlwaysUV:
            state.fido.alwaysUV.toggle()
        case Sub.setMinPINLength:
            guard let subParams else { throw .status(CTAPError.missingParameter) }
            try setMinPINLength(subParams, &state)
        default:
            throw .status(CTAPError.invalidSubcommand)
        }
        return [CTAP2.ok]
    }

    /// setMinPINLength (section 6.11.4): the minimum only grows; forcing a change needs a PIN; a minimum above
    /// the current PIN's length forces a change as well. The RP list, when given, replaces the earlier one.
    func setMinPINLength(_ p: Fields, _ state: inout VirtualKeyState) throws(Failure) {
        typealias Key = CTAP2.Config.SetMinPINLengthKey
        let length = try p.int(Key.newMinPINLength) ?? state.fido.minPINLength
        var rpIDs: [String]?
        if let list = try p.array(Key.minPINLengthRPIDs) {
            var ids = [String]()
            for entry in list {
                guard let id = entry.string else { throw .status(CTAPError.cborUnexpectedType) }
                ids.append(id)
            }
            rpIDs = ids
        }
        var force = try p.bool(Key.forceChangePIN) ?? false
        guard length >= state.fido.minPINLength else { throw .status(CTAPError.pinPolicyViolation) }
        // No PIN of at most 63 bytes could be longer: this key refuses such a minimum.
        guard length <= PINRules.maxBytes else { throw .status(CTAPError.pinPolicyViolation) }
        if let rpIDs, rpIDs.count > Self.maxRPIDsForSetMinPINLength { throw .status(CTAPError.keyStoreFull) }
        if force && !state.fido.isPINSet { throw .status(CTAPError.pinNotSet) }
        if let current = state.fido.pinLength, length > current { force = true }
        state.fido.minPINLength = length
        if force { state.fido.forcePINChange = true }
        if let rpIDs { state.fido.minPINLengthRPIDs = rpIDs }
    }

    /// The minPinLength extension's output for makeCredential: the minimum PIN length, for the relying parties
    /// setMinPINLength named (nil for the others, and when not asked for).
    func minPINLengthOutput(_ extensions: Fields, rpID: String, _ state: VirtualKeyState) throws(Failure) -> CBOR? {
        guard Self.hasConfig(state), try extensions.bool("minPinLength") == true,
            state.fido.minPINLengthRPIDs.contains(rpID)
        else { return nil }
        return CBOR(state.fido.minPINLength)
    }
}
