/// Text for a terminal whose character set is ASCII (`LANG=C`, or a locale that is not UTF-8): every
/// symbol the string tables use has a plain stand-in (`·` → `|`, `…` → `...`, `✔` → `ok`), letters lose
/// their accents the way a German reader writes them without umlauts (`ä` → `ae`, `ß` → `ss`), and
/// what has no stand-in becomes `?`. ASCII text is returned as it is, without copying.
public enum ASCIIFallback {
    static let table: [Character: String] = [
        "·": "|", "…": "...", "•": "*", "★": "*", "●": "*", "✔": "ok", "✓": "ok", "✘": "x", "✗": "x",
        "→": "->", "←": "<-", "↑": "^", "↓": "v", "—": "--", "–": "-", "„": "\"", "“": "\"", "”": "\"",
        "‚": "'", "‘": "'", "’": "'", "«": "\"", "»": "\"", "×": "x", "\u{00A0}": " ", "€": "EUR",
        "ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue", "ß": "ss", "ẞ": "SS",
        "à": "a", "á": "a", "â": "a", "ã": "a", "å": "a", "æ": "ae", "ç": "c", "è": "e", "é": "e", "ê": "e",
        "ë": "e", "ì": "i", "í": "i", "î": "i", "ï": "i", "ñ": "n", "ò": "o", "ó": "o", "ô": "o", "õ": "o",
        "ø": "o", "œ": "oe", "ù": "u", "ú": "u", "û": "u", "ý": "y", "ÿ": "y",
        "À": "A", "Á": "A", "Â": "A", "Ã": "A", "Å": "A", "Æ": "AE", "Ç": "C", "È": "E", "É": "E", "Ê": "E",
        "Ë": "E", "Ì": "I", "Í": "I", "Î": "I", "Ï": "I", "Ñ": "N", "Ò": "O", "Ó": "O", "Ô": "O", "Õ": "O",
        "Ø": "O", "Œ": "OE", "Ù": "U", "Ú": "U", "Û": "U", "Ý": "Y",
    ]

    /// `text` in ASCII.
    public static func fold(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text {
            if c.isASCII {
                out.append(c)
            } else if let stand = table[c] {
                out += stand
            } else {
                out.append("?")
            }
        }
        return out
    }
}
