/// BER-TLV encoding and strict decoding: multi-byte tags, long-form lengths, nesting.
/// Truncated or malformed input is an error, never a crash.
public struct TLV: Hashable, Sendable {
    /// The tag with all its bytes, e.g. `0x7F49`.
    public var tag: UInt32
    public var value: [UInt8]

    public init(_ tag: UInt32, _ value: [UInt8]) {
        self.tag = tag
        self.value = value
    }

    public init(_ tag: UInt32, children: [TLV]) {
        self.tag = tag
        self.value = children.flatMap { $0.encoded }
    }

    public enum TagMode: Sendable {
        /// ISO 7816 BER: low five bits all set in the first byte start a multi-byte tag.
        case ber
        /// Every tag is one byte (the YubiKey applications' simple TLV).
        case simple
    }

    public enum DecodeError: Error, Hashable, Sendable {
        case truncatedTag(offset: Int)
        case tagTooLong(offset: Int)
        case truncatedLength(offset: Int)
        case indefiniteLength(offset: Int)
        case lengthTooLong(offset: Int)
        case truncatedValue(offset: Int, needed: Int, available: Int)
        case unexpectedTag(expected: UInt32, found: UInt32)
        case missingTag(UInt32)
    }

    /// Whether the constructed bit (0x20 of the first tag byte) is set.
    public var isConstructed: Bool { tagBytes.first.map { $0 & 0x20 != 0 } ?? false }

    public var tagBytes: [UInt8] {
        var t = tag
        var out = [UInt8]()
        repeat {
            out.insert(UInt8(t & 0xFF), at: 0)
            t >>= 8
        } while t != 0
        return out
    }

    public static func lengthBytes(_ n: Int) -> [UInt8] {
        switch n {
        case ..<0x80: return [UInt8(n)]
        case ..<0x100: return [0x81, UInt8(n)]
        case ..<0x10000: return [0x82, UInt8(n >> 8), UInt8(n & 0xFF)]
        case ..<0x1000000: return [0x83, UInt8(n >> 16), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
        default: return [0x84] + BigEndian.bytes(UInt64(n), count: 4)
        }
    }

    public var encoded: [UInt8] { tagBytes + TLV.lengthBytes(value.count) + value }

    /// Parses one TLV at `offset`, returning it and the offset after it.
    public static func parse(
        _ bytes: [UInt8], at offset: Int = 0,
        mode: TagMode = .ber
    ) throws(DecodeError) -> (TLV, next: Int) {
        var i = offset
        guard i < bytes.count else { throw .truncatedTag(offset: i) }
        var tag = UInt32(bytes[i])
        let first = bytes[i]
        i += 1
        if mode == .ber, first & 0x1F == 0x1F {
            var count = 1
            while true {
                guard i < bytes.count else { throw .truncatedTag(offset: offset) }
                let b = bytes[i]
                i += 1
                count += 1
                guard count <= 4 else { throw .tagTooLong(offset: offset) }
                tag = tag << 8 | UInt32(b)
                if b & 0x80 == 0 { break }
            }
        }
        guard i < bytes.count else { throw .truncatedLength(offset: i) }
        var length = Int(bytes[i])
        i += 1
        if length == 0x80 { throw .indefiniteLength(offset: i - 1) }
        if length > 0x80 {
            let n = length & 0x7F
            guard n <= 4 else { throw .lengthTooLong(offset: i - 1) }
            guard i + n <= bytes.count else { throw .truncatedLength(offset: i - 1) }
            length = 0
            for k in 0..<n { length = length << 8 | Int(bytes[i + k]) }
            i += n
        }
        let available = bytes.count - i
        guard length <= available else {
            throw .truncatedValue(offset: i, needed: length, available: available)
        }
        return (TLV(tag, Array(bytes[i..<(i + length)])), i + length)
    }

    /// Parses a sequence of TLVs that must fill `bytes` exactly.
    public static func parseAll(_ bytes: [UInt8], mode: TagMode = .ber) throws(DecodeError) -> [TLV] {
        var out = [TLV]()
        var i = 0
        while i < bytes.count {
            let (tlv, next) = try parse(bytes, at: i, mode: mode)
            out.append(tlv)
            i = next
        }
        return out
    }

    /// Parses the value as nested TLVs.
    public func children(mode: TagMode = .ber) throws(DecodeError) -> [TLV] {
        try TLV.parseAll(value, mode: mode)
    }
}

extension Array where Element == TLV {
    /// The value of the first TLV with `tag`.
    public func value(for tag: UInt32) -> [UInt8]? { first { $0.tag == tag }?.value }

    /// A dictionary from tag to value (last wins).
    public var dictionary: [UInt32: [UInt8]] {
        var d = [UInt32: [UInt8]]()
        for t in self { d[t.tag] = t.value }
        return d
    }
}
