// The names of PIV data objects as ykman's `piv objects` takes them (SP 800-73-4's objects, the retired keys'
// certificates and the YubiKey's attestation certificate), and object identifiers given in hex.

extension PIV.ObjectID {
    /// Each named object and its identifier, in ykman's spelling (a name may also be written with "-" for "_").
    public static let names: [(name: String, id: [UInt8])] =
        [
            ("CAPABILITY", cardCapabilityContainer), ("CHUID", chuid), ("AUTHENTICATION", authenticationCertificate),
            ("FINGERPRINTS", fingerprints), ("SECURITY", securityObject), ("FACIAL", facialImage),
            ("PRINTED", printedInformation), ("SIGNATURE", signatureCertificate),
            ("KEY_MANAGEMENT", keyManagementCertificate), ("CARD_AUTH", cardAuthenticationCertificate),
            ("DISCOVERY", discovery), ("KEY_HISTORY", keyHistory), ("IRIS", iris),
        ]
        + (1...20).map { ("RETIRED\($0)", [0x5F, 0xC1, UInt8(0x0C + $0)]) }
        + [("ATTESTATION", attestationCertificate)]

    /// The object `text` names: "CCC" (the card capability container), a name of `names` in any case, or the
    /// identifier in hex (1 to 3 bytes, "0x" allowed: 5fc105). Nil for anything else.
    public static func named(_ text: String) -> [UInt8]? {
        let upper = String(text.uppercased().map { $0 == "-" ? "_" : $0 })
        if upper == "CCC" { return cardCapabilityContainer }
        if let named = names.first(where: { $0.name == upper }) { return named.id }
        var digits = Substring(upper)
        if digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        guard (1...6).contains(digits.count), let value = UInt32(digits, radix: 16), value > 0 else { return nil }
        var out = [UInt8]()
        var rest = value
        while rest > 0 {
            out.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return out
    }

    /// The name of object `id` (of `names`), or nil.
    public static func name(of id: [UInt8]) -> String? {
        names.first(where: { $0.id == id })?.name
    }
}
