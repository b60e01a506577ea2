/// Text from outside (account names from a key or a URI, FIDO user and relying-party names, NDEF records,
/// what a key types, APDU data) made safe to show on a terminal: control characters and the characters that
/// reorder text on screen become visible escapes, so such a string can never move the cursor, write the
/// clipboard (OSC 52), clear the screen or make text read backwards.
public enum VisibleText {
    /// Whether `scalar` must not reach a terminal as it is: C0 controls, DEL, C1 controls, and the
    /// bidirectional formatting characters and line separators.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// `text` with every unsafe scalar written as an escape: `\x1B` for a control character, `\u{202E}` for
    /// the others. With `keepingLineBreaks`, line feeds and tabs stay (for whole lines of output).
    public static func escaped(_ text: String, keepingLineBreaks: Bool = false) -> String {
        func unsafe(_ s: Unicode.Scalar) -> Bool {
            isUnsafe(s) && !(keepingLineBreaks && (s == "\n" || s == "\t"))
        }
        guard text.unicodeScalars.contains(where: unsafe) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard unsafe(scalar) else {
                out.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16, uppercase: true)
            let escape =
                scalar.value <= 0x9F
                ? "\\x" + (hex.count < 2 ? "0" : "") + hex
                : "\\u{" + hex + "}"
            out.append(contentsOf: escape.unicodeScalars)
        }
        return String(out)
    }
}
