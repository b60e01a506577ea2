/// Base32 (RFC 4648 section 6, alphabet `A`–`Z`, `2`–`7`) as used for OATH secrets.
///
/// Decoding is lenient where authenticator apps are lenient and strict where a mistake would silently give
/// a wrong secret:
/// - lower-case letters are accepted;
/// - spaces and tabs anywhere are ignored (secrets are often shown in groups of four); hyphens are *not*
///   ignored, as no common authenticator writes them;
/// - `=` padding may be left out; when present it must come only at the end and be exactly the amount
///   RFC 4648 prescribes (the text, without spaces, is then a multiple of 8 characters);
/// - a text whose length is 1, 3 or 6 more than a multiple of 8 cannot come from any byte string and is
///   rejected;
/// - the unused low bits of the last character need not be zero (RFC 4648 section 3.5 allows decoders to
///   reject such text, but most authenticators accept it, and so do we: the bits are dropped);
/// - an empty secret (nothing but spaces and padding) is an error, so `decode("")` throws even though
///   `encode([])` is `""`.
///
/// Errors are `OATHError.invalidCredential` with a message that starts with "the secret".
public enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// The value of a Base32 character (either case), or nil.
    private static func value(of scalar: Unicode.Scalar) -> UInt8? {
        switch scalar.value {
        case 0x41...0x5A: return UInt8(scalar.value - 0x41)  // A-Z
        case 0x61...0x7A: return UInt8(scalar.value - 0x61)  // a-z
        case 0x32...0x37: return UInt8(scalar.value - 0x32 + 26)  // 2-7
        default: return nil
        }
    }

    /// Characters (not counting padding) left over after the last full group of 8, and the padding
    /// each needs.
    private static func padding(forRemainder remainder: Int) -> Int? {
        switch remainder {
        case 0: return 0
        case 2: return 6
        case 4: return 4
        case 5: return 3
        case 7: return 1
        default: return nil
        }
    }

    /// Decodes a Base32 secret. See the type's documentation for what is accepted.
    public static func decode(_ text: String) throws(OATHError) -> [UInt8] {
        var values = [UInt8]()
        values.reserveCapacity(text.utf8.count)
        var paddingCount = 0
        var firstPadding: Int?  // 1-based position of the first "="
        var position = 0
        for character in text {
            position += 1
            if character == " " || character == "\t" { continue }
            if character == "=" {
                paddingCount += 1
                if firstPadding == nil { firstPadding = position }
                continue
            }
            let scalars = character.unicodeScalars
            guard scalars.count == 1, let v = value(of: scalars.first!) else {
                throw .invalidCredential(.secretCharacter(String(character), position: position))
            }
            if let firstPadding {
                throw .invalidCredential(.secretPaddingEarly(position: firstPadding))
            }
            values.append(v)
        }
        guard !values.isEmpty else { throw .invalidCredential(.emptySecret) }
        let remainder = values.count % 8
        guard let needed = padding(forRemainder: remainder) else {
            throw .invalidCredential(.secretLength(values.count))
        }
        if paddingCount != 0 && paddingCount != needed {
            throw .invalidCredential(.secretPaddingCount(given: paddingCount, count: values.count, needed: needed))
        }
        // Bits left over are the unused low bits of the last character: dropped, even if non-zero.
        return BitGroups.regroup(values, from: 5, to: 8)
    }

    /// Upper-case Base32 of `bytes`; without `=` padding unless `padding` is true (authenticator URIs
    /// usually leave it out).
    public static func encode(_ bytes: [UInt8], padding: Bool = false) -> String {
        var out = BitGroups.regroup(bytes, from: 8, to: 5, padLast: true).map { alphabet[Int($0)] }
        if padding {
            while out.count % 8 != 0 { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
