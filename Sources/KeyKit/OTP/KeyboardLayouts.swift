/// Keyboard layouts a key's typed output may have gone through.
///
/// A YubiKey is a USB keyboard: it sends the scan codes of the US layout, and the host's layout turns them
/// into characters. Modhex was chosen so its letters come out the same on US, German QWERTZ and French AZERTY
/// (none of c b d e f g h i j k l n r t u v moves), but AZERTY's unshifted digit row gives `&é"'(-è_çà`
/// (which matters for OATH-HOTP codes) and Dvorak moves almost every letter. `translateToUS` maps text typed on
/// a layout back to what the key meant.
public enum KeyboardLayout: String, CaseIterable, Sendable {
    case us
    /// German QWERTZ.
    case de
    /// French AZERTY.
    case fr
    /// US Dvorak.
    case dvorak

    public var displayName: String {
        switch self {
        case .us: return "US QWERTY"
        case .de: return "German QWERTZ"
        case .fr: return "French AZERTY"
        case .dvorak: return "US Dvorak"
        }
    }

    /// What each US key (by its US character) types on this layout, for the keys that differ
    /// (letters, digits and the punctuation that takes their place).
    var fromUS: [Character: Character] {
        switch self {
        case .us:
            return [:]
        case .de:
            return ["y": "z", "z": "y", "Y": "Z", "Z": "Y"]
        case .fr:
            let digits: [Character: Character] = ["1": "&", "2": "é", "3": "\"", "4": "'", "5": "(", "6": "-",
                                                  "7": "è", "8": "_", "9": "ç", "0": "à"]
            let letters: [Character: Character] = ["a": "q", "q": "a", "w": "z", "z": "w", "m": ",", ";": "m",
                                                   "A": "Q", "Q": "A", "W": "Z", "Z": "W", "M": "?", ":": "M"]
            return digits.merging(letters) { a, _ in a }
        case .dvorak:
            let us = Array("qwertyuiop[]asdfghjkl;'zxcvbnm,./-=")
            let dv = Array("',.pyfgcrl/=aoeuidhtns-;qjkxbmwvz[]")
            var map = [Character: Character]()
            for (u, d) in zip(us, dv) where u != d {
                map[u] = d
                if u.isLetter, let U = u.uppercased().first, let D = d.uppercased().first, d.isLetter { map[U] = D }
            }
            return map
        }
    }

    /// Maps text typed on this layout back to the US characters of the keys pressed.
    public func translateToUS(_ text: String) -> String {
        var inverse = [Character: Character]()
        for (u, l) in fromUS { inverse[l] = u }
        return String(text.map { inverse[$0] ?? $0 })
    }

    /// What `text` (US characters) looks like when typed on this layout.
    public func typed(_ text: String) -> String {
        let map = fromUS
        return String(text.map { map[$0] ?? $0 })
    }
}
