import KeyKit

// GET METADATA (firmware 5.3): about the PIN, the PUK, the management key and the key in a slot.
extension PIVApplet {
    /// The PIN's and PUK's "algorithm" in metadata.
    static let pinAlgorithm: UInt8 = 0xFF

    func metadata(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard state.version >= PIV.metadataVersion else { return Response(status: .invalidInstruction) }
        guard apdu.p1 == 0 else { return Self.badP1P2 }
        let piv = state.piv
        func tlv(_ tag: UInt32, _ value: [UInt8]) -> [UInt8] { TLV(tag, value).encoded }
        func flag(_ value: Bool) -> [UInt8] { [value ? 0x01 : 0x00] }
        switch apdu.p2 {
        case PIV.Reference.pin, PIV.Reference.puk:
            let isPIN = apdu.p2 == PIV.Reference.pin
            let tries = isPIN ? piv.pinTries : piv.pukTries
            let left = isPIN ? piv.pinTriesLeft : piv.pukTriesLeft
            let body =
                tlv(PIV.Tag.metadataAlgorithm, [Self.pinAlgorithm])
                + tlv(PIV.Tag.metadataPolicy, [PIV.PINPolicy.default.rawValue, PIV.TouchPolicy.default.rawValue])
                + tlv(PIV.Tag.metadataIsDefault, flag(isPIN ? piv.pinIsDefault : piv.pukIsDefault))
                + tlv(PIV.Tag.metadataRetries, [UInt8(clamping: tries), UInt8(clamping: left)])
            return Response(data: body, status: .ok)
        case PIV.Reference.managementKey:
            let touch: PIV.TouchPolicy = piv.managementTouch ? .always : .never
            let body =
                tlv(PIV.Tag.metadataAlgorithm, [piv.managementAlgorithm(on: state.version).rawValue])
                + tlv(PIV.Tag.metadataPolicy, [PIV.PINPolicy.default.rawValue, touch.rawValue])
                + tlv(PIV.Tag.metadataIsDefault, flag(piv.managementKeyIsDefault))
            return Response(data: body, status: .ok)
        default:
            guard let slot = Self.slot(apdu.p2, attestation: true) else { return Self.noKey }
            if slot == .attestation { ensureAttestationKey(&state) }
            guard let stored = state.piv.keys[slot],
                let key = try? AsymmetricPrivateKey(pkcs8: stored.privateKey)
            else { return Self.noKey }
            let body =
                tlv(PIV.Tag.metadataAlgorithm, [stored.algorithm.rawValue])
                + tlv(PIV.Tag.metadataPolicy, [stored.pinPolicy.rawValue, stored.touchPolicy.rawValue])
                + tlv(PIV.Tag.metadataOrigin, [stored.origin.rawValue])
                + tlv(PIV.Tag.metadataPublicKey, Self.publicKeyTLVs(key.publicKey))
            return Response(data: body, status: .ok)
        }
    }
}
