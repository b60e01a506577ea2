/// Hexadecimal encoding and strict decoding of byte strings.
public enum Hex {
    public enum DecodeError: Error, Equatable {
        /// A character that is no hex digit, at `offset` (0-based, in Unicode scalars).
        case invalidCharacter(Character, offset: Int)
        /// An odd number of hex digits.
        case oddLength(Int)
    }

    private static let digits = Array("0123456789abcdef".utf8)
    private static let upperDigits = Array("0123456789ABCDEF".utf8)

    /// Lower-case hex with no separators.
    public static func encode<S: Sequence>(_ bytes: S, uppercase: Bool = false) -> String where S.Element == UInt8 {
        let table = uppercase ? upperDigits : digits
        var out = [UInt8]()
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(table[Int(b >> 4)])
            out.append(table[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex digits; white space, colons and an optional `0x` prefix per group are allowed as separators.
    public static func decode(_ text: String) throws(DecodeError) -> [UInt8] {
        let scalars = Array(text.unicodeScalars)
        var nibbles = [UInt8]()
        nibbles.reserveCapacity(scalars.count)
        func isSeparator(_ c: Unicode.Scalar) -> Bool {
            c == ":" || c.properties.isWhitespace
        }
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            if isSeparator(c) {
                i += 1
                continue
            }
            if c == "0", i + 1 < scalars.count, scalars[i + 1] == "x" || scalars[i + 1] == "X",
                i == 0 || isSeparator(scalars[i - 1])
            {
                i += 2
                continue
            }
            guard c.isASCII, let v = Character(c).hexDigitValue else {
                throw .invalidCharacter(Character(c), offset: i)
            }
            nibbles.append(UInt8(v))
            i += 1
        }
        guard nibbles.count % 2 == 0 else { throw .oddLength(nibbles.count) }
        var out = [UInt8]()
        out.reserveCapacity(nibbles.count / 2)
        var j = 0
        while j < nibbles.count {
            out.append(nibbles[j] << 4 | nibbles[j + 1])
            j += 2
        }
        return out
    }
}

extension Array where Element == UInt8 {
    /// Lower-case hex.
    public var hex: String { Hex.encode(self) }
}

extension ArraySlice where Element == UInt8 {
    public var hex: String { Hex.encode(self) }
}

/// Big-endian integer helpers.
public enum BigEndian {
    public static func bytes(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(count - 1 - $0))) }
    }

    public static func integer<C: Collection>(_ bytes: C) -> UInt64 where C.Element == UInt8 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
