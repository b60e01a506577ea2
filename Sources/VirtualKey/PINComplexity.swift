/// How a key that enforces PIN complexity (an Enhanced PIN YubiKey, firmware 5.7 and later; device information tag
/// 0x16) judges a new PIN, PUK, admin PIN or reset code, as the virtual key applies it: the value needs at least
/// two different characters and must not be one of the most common PINs. A real key's list of refused values is
/// longer (and can be extended when the key is made); what clients see is the same: PIV and OpenPGP answer 6985,
/// FIDO2 CTAP2_ERR_PIN_POLICY_VIOLATION.
enum PINComplexity {
    /// Values every key that enforces complexity refuses, whatever their characters.
    static let common: Set<String> = [
        "123456", "1234567", "12345678", "123456789", "1234567890", "654321", "87654321", "123123", "123321",
        "112233", "121212", "password", "passw0rd", "qwerty", "abc123",
    ]

    /// Whether a new secret (its bytes without padding) meets the rule.
    static func allows(_ secret: [UInt8]) -> Bool {
        let text = String(decoding: secret, as: UTF8.self)
        return Set(text.unicodeScalars).count >= 2 && !common.contains(text)
    }

    /// Whether a PIV PIN or PUK as PIV sends it (padded with FF to eight bytes) meets the rule.
    static func allowsPadded(_ secret: [UInt8], padding: UInt8) -> Bool {
        allows(Array(secret.prefix { $0 != padding }))
    }
}
