/// Application identifiers of the applications a YubiKey (and compatible keys) carry.
public enum AID {
    public static let management: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x47, 0x11, 0x17]
    public static let otp: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x20, 0x01]
    public static let oath: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x21, 0x01]
    public static let fido: [UInt8] = [0xA0, 0x00, 0x00, 0x06, 0x47, 0x2F, 0x00, 0x01]
    public static let piv: [UInt8] = [0xA0, 0x00, 0x00, 0x03, 0x08]
    public static let openpgp: [UInt8] = [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]
    public static let hsmauth: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x21, 0x07]
    public static let ndef: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]

    /// The applications by the names users know them by, in display order.
    public static let known: [(name: String, aid: [UInt8])] = [
        ("OATH", oath), ("FIDO", fido), ("OTP", otp), ("Management", management),
        ("PIV", piv), ("OpenPGP", openpgp), ("HSMAUTH", hsmauth), ("NDEF", ndef),
    ]

    /// Looks an application up by name, ignoring case.
    public static func named(_ name: String) -> [UInt8]? {
        known.first { $0.name.lowercased() == name.lowercased() }?.aid
    }
}
