import KeyKit

// Data objects: GET DATA and PUT DATA (P1 3F, P2 FF; the object named under tag 5C).
extension PIVApplet {
    /// The discovery object, built in and read-only: the PIV AID, and the PIN usage policy (the PIV PIN
    /// satisfies access control; no global PIN).
    static let discovery: [UInt8] = TLV(
        0x7E,
        TLV(0x4F, AID.piv + [0x00, 0x00, 0x10, 0x00, 0x01, 0x00]).encoded
            + TLV(0x5F2F, [0x40, 0x00]).encoded
    ).encoded

    /// Objects that are read only after the PIN (SP 800-73-4's PIN-protected ones: fingerprints, facial image,
    /// printed information, iris images).
    static let pinProtectedObjects: Set<[UInt8]> = [
        PIV.ObjectID.fingerprints, PIV.ObjectID.facialImage, PIV.ObjectID.printedInformation, PIV.ObjectID.iris,
    ]

    /// The object a GET DATA or PUT DATA names, when it is one the key has: 5F0000-5FFFFF (SP 800-73-4's
    /// 5FC1xx and the YubiKey's 5FFFxx among them), the biometric group template 7F61, and discovery 7E.
    static func objectID(_ tlvs: [TLV]) -> [UInt8]? {
        guard let id = tlvs.value(for: PIV.Tag.objectID) else { return nil }
        if id == PIV.ObjectID.discovery || id == [0x7F, 0x61] { return id }
        return id.count == 3 && id[0] == 0x5F ? id : nil
    }

    func getData(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard apdu.p1 == 0x3F, apdu.p2 == 0xFF else { return Self.badP1P2 }
        guard let tlvs = Self.tlvs(apdu.data), let id = Self.objectID(tlvs) else { return Self.badData }
        if id == PIV.ObjectID.discovery { return Response(data: Self.discovery, status: .ok) }
        if Self.pinProtectedObjects.contains(id) && !session.pinVerified { return Self.notAllowed }
        if id == PIV.ObjectID.attestationCertificate { ensureAttestationKey(&state) }
        guard let value = state.piv.objects[id] else { return Response(status: .fileNotFound) }
        return Response(data: TLV(PIV.Tag.objectData, value).encoded, status: .ok)
    }

    /// PUT DATA: needs the management key. An empty value deletes the object.
    func putData(_ apdu: APDU, _ piv: inout PIVState) -> Response {
        guard apdu.p1 == 0x3F, apdu.p2 == 0xFF else { return Self.badP1P2 }
        guard session.authenticated else { return Self.notAllowed }
        guard let tlvs = Self.tlvs(apdu.data), tlvs.count == 2, let id = Self.objectID(tlvs),
            id != PIV.ObjectID.discovery, let value = tlvs.value(for: PIV.Tag.objectData)
        else {
            return Self.badData
        }
        guard value.count <= Self.maxObjectSize else { return Response(status: .noSpace) }
        piv.objects[id] = value.isEmpty ? nil : value
        return Self.done
    }
}
