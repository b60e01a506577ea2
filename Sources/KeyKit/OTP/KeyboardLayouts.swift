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
            let digits: [Character: Character] = [
                "1": "&", "2": "é", "3": "\"", "4": "'", "5": "(", "6": "-",
                "7": "è", "8": "_", "9": "ç", "0": "à",
            ]
            let letters: [Character: Character] = [
                "a": "q", "q": "a", "w": "z", "z": "w", "m": ",", ";": "m",
                "A": "Q", "Q": "A", "W": "Z", "Z": "W", "M": "?", ":": "M",
            ]
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

/// The keyboard layouts a static password slot can be programmed for, and the USB HID scan codes (bit 7: with
/// Shift) that type each character on them.
///
/// A slot stores scan codes, not characters: the host's layout decides what they type. Passwords are encoded
/// for the layout the host will use; `modhex` allows only the modhex letters, which every supported layout types
/// alike. Dead keys (´ ` ^ on German and French layouts) are left out: alone they type nothing.
public enum ScanCodeLayout: String, CaseIterable, Sendable {
    case us
    case de
    case fr
    case dvorak
    case modhex

    /// Bit 7 of a slot's scan code: the key is pressed with Shift.
    public static let shift: UInt8 = 0x80
    public static let enter: UInt8 = 0x28
    public static let tab: UInt8 = 0x2B

    /// One physical key: its HID usage and what it types without and with Shift on this layout.
    private struct Key {
        let usage: UInt8
        let plain: Character?
        let shifted: Character?
        init(_ usage: UInt8, _ plain: Character?, _ shifted: Character?) {
            self.usage = usage
            self.plain = plain
            self.shifted = shifted
        }
    }

    /// Keys a..z (usages 4 to 29) typing `letters` (lower case; the shifted key types the upper case).
    private static func letterKeys(_ letters: String) -> [Key] {
        letters.enumerated().map { i, c in Key(UInt8(0x04 + i), c, Character(c.uppercased())) }
    }

    /// The digit row (usages 30 to 39, keys 1..9 and 0).
    private static func digitRow(plain: String, shifted: String) -> [Key] {
        row(UInt8(0x1E)...0x27, plain: plain, shifted: shifted)
    }

    /// The US layout's punctuation keys (usages 0x2D to 0x38 but 0x31), in the order their characters are given
    /// to `row`; US Dvorak types other characters on the same keys.
    private static let punctuationKeys: [UInt8] = [0x2D, 0x2E, 0x2F, 0x30, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38]

    /// The keys `usages` typing the characters of `plain`, and with Shift those of `shifted`, one for one.
    private static func row(_ usages: some Sequence<UInt8>, plain: String, shifted: String) -> [Key] {
        zip(usages, zip(plain, shifted)).map { usage, typed in Key(usage, typed.0, typed.1) }
    }

    private var keys: [Key] {
        let common = [Key(Self.enter, "\n", nil), Key(Self.tab, "\t", nil), Key(0x2C, " ", nil)]
        switch self {
        case .us:
            return common + Self.letterKeys("abcdefghijklmnopqrstuvwxyz")
                + Self.digitRow(plain: "1234567890", shifted: "!@#$%^&*()")
                + Self.row(Self.punctuationKeys, plain: "-=[]\\;'`,./", shifted: "_+{}|:\"~<>?")
        case .de:
            return common + Self.letterKeys("abcdefghijklmnopqrstuvwxzy")
                + Self.digitRow(plain: "1234567890", shifted: "!\"§$%&/()=")
                + [
                    Key(0x2D, "ß", "?"), Key(0x2F, "ü", "Ü"), Key(0x30, "+", "*"), Key(0x32, "#", "'"),
                    Key(0x33, "ö", "Ö"), Key(0x34, "ä", "Ä"), Key(0x36, ",", ";"), Key(0x37, ".", ":"),
                    Key(0x38, "-", "_"), Key(0x64, "<", ">"),
                ]
        case .fr:
            return common
                + Self.letterKeys("qbcdefghijkl,noparstuvzxyw").map { k in
                    k.plain == "," ? Key(k.usage, ",", "?") : k
                }
                + Self.digitRow(plain: "&é\"'(-è_çà", shifted: "1234567890")
                + [
                    Key(0x2D, ")", "°"), Key(0x2E, "=", "+"), Key(0x30, "$", "£"), Key(0x31, "*", "µ"),
                    Key(0x33, "m", "M"), Key(0x34, "ù", "%"), Key(0x35, "²", nil), Key(0x36, ";", "."),
                    Key(0x37, ":", "/"), Key(0x38, "!", "§"), Key(0x64, "<", ">"),
                ]
        case .dvorak:
            return common
                + Self.letterKeys("axje.uidchtnmbrl'poygk,qf;").map { k in
                    switch k.plain {
                    case ".": return Key(k.usage, ".", ">")
                    case "'": return Key(k.usage, "'", "\"")
                    case ",": return Key(k.usage, ",", "<")
                    case ";": return Key(k.usage, ";", ":")
                    default: return k
                    }
                }
                + Self.digitRow(plain: "1234567890", shifted: "!@#$%^&*()")
                + Self.row(Self.punctuationKeys, plain: "[]/=\\s-`wvz", shifted: "{}?+|S_~WVZ")
        case .modhex:
            return Self.letterKeys("abcdefghijklmnopqrstuvwxyz").filter { k in
                k.plain.map { Modhex.value(of: $0) != nil } ?? false
            }
        }
    }

    /// The scan code of each character this layout can type.
    public var scanCodes: [Character: UInt8] {
        var map = [Character: UInt8]()
        for key in keys {
            if let c = key.plain, map[c] == nil { map[c] = key.usage }
            if let c = key.shifted, map[c] == nil { map[c] = key.usage | Self.shift }
        }
        return map
    }

    /// The scan codes that type `text` on this layout; the offset of the first character it cannot type.
    public func encode(_ text: String) -> Result<[UInt8], UnencodableCharacter> {
        let map = scanCodes
        var codes = [UInt8]()
        for (i, c) in text.enumerated() {
            guard let code = map[c] else { return .failure(UnencodableCharacter(offset: i)) }
            codes.append(code)
        }
        return .success(codes)
    }

    /// A character `encode` cannot type: its 0-based offset (the character itself is not kept: it may be part
    /// of a password).
    public struct UnencodableCharacter: Error, Equatable, Sendable {
        public let offset: Int
        public init(offset: Int) { self.offset = offset }
    }

    /// What `codes` type on this layout (codes it has no character for are skipped, as 0 is by a key).
    public func typed(_ codes: [UInt8]) -> String {
        var inverse = [UInt8: Character]()
        for key in keys {
            if let c = key.plain { inverse[key.usage] = c }
            if let c = key.shifted { inverse[key.usage | Self.shift] = c }
        }
        return String(codes.compactMap { inverse[$0] })
    }

    /// The characters a generated password is drawn from: what the layout types, without Enter, Tab and space.
    public var passwordCharacters: [Character] {
        scanCodes.keys.filter { !["\n", "\t", " "].contains($0) }.sorted()
    }

    /// A random password of `length` characters drawn uniformly from `passwordCharacters`.
    public func generatePassword(length: Int) -> String {
        let alphabet = passwordCharacters
        // Rejection sampling keeps every character equally likely.
        let limit = 256 - 256 % alphabet.count
        var out = [Character]()
        while out.count < length {
            for byte in Crypto.random(length) where Int(byte) < limit && out.count < length {
                out.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return String(out)
    }
}
