/// Modhex: the hexadecimal alphabet YubiKeys type (`cbdefghijklnrtuv` for 0-f). Its letters sit on the same
/// keys on most Latin keyboard layouts, so a key that sends US scan codes types the same text almost everywhere.
public enum Modhex {
    public static let alphabet: [Character] = Array("cbdefghijklnrtuv")
    private static let alphabetBytes = Array("cbdefghijklnrtuv".utf8)

    public enum DecodeError: Error, Equatable, Sendable {
        case invalidCharacter(Character, offset: Int)
        case oddLength(Int)
    }

    /// The value 0-15 of one modhex character (case-insensitive), or nil.
    public static func value(of c: Character) -> UInt8? {
        guard let a = c.lowercased().first, let i = alphabet.firstIndex(of: a) else { return nil }
        return UInt8(i)
    }

    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        var out = [UInt8]()
        for b in bytes {
            out.append(alphabetBytes[Int(b >> 4)])
            out.append(alphabetBytes[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Strict decoding (case-insensitive, no separators).
    public static func decode(_ text: String) throws(DecodeError) -> [UInt8] {
        let chars = Array(text)
        var nibbles = [UInt8]()
        nibbles.reserveCapacity(chars.count)
        for (i, c) in chars.enumerated() {
            guard let v = value(of: c) else { throw .invalidCharacter(c, offset: i) }
            nibbles.append(v)
        }
        guard nibbles.count % 2 == 0 else { throw .oddLength(nibbles.count) }
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }

    /// True when every character is modhex (case-insensitive); the empty string is modhex.
    public static func isModhex(_ text: String) -> Bool {
        text.allSatisfy { value(of: $0) != nil }
    }

    /// Hex digits to modhex (`0123456789abcdef` → `cbdefghijklnrtuv`), nil when `hex` is not hex.
    public static func fromHex(_ hex: String) -> String? {
        guard let bytes = try? Hex.decode(hex) else { return nil }
        return encode(bytes)
    }
}
