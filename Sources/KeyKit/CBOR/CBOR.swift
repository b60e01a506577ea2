/// A CBOR value (RFC 8949), with CTAP2's canonical encoding and a strict decoder.
public indirect enum CBOR: Hashable, Sendable {
    case unsigned(UInt64)
    /// The negative integer -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([CBOR: CBOR])
    case tagged(UInt64, CBOR)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    public init(_ value: Int) {
        self = value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-1 - value))
    }

    // MARK: Accessors

    public var int: Int? {
        switch self {
        case .unsigned(let v): return v <= UInt64(Int.max) ? Int(v) : nil
        case .negative(let v): return v <= UInt64(Int.max) ? -1 - Int(v) : nil
        default: return nil
        }
    }

    public var bytes: [UInt8]? { if case .bytes(let b) = self { return b }; return nil }
    public var string: String? { if case .text(let s) = self { return s }; return nil }
    public var array: [CBOR]? { if case .array(let a) = self { return a }; return nil }
    public var map: [CBOR: CBOR]? { if case .map(let m) = self { return m }; return nil }
    public var bool: Bool? { if case .bool(let b) = self { return b }; return nil }

    public subscript(key: Int) -> CBOR? { map?[CBOR(key)] }
    public subscript(key: String) -> CBOR? { map?[.text(key)] }
}

extension CBOR: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(integerLiteral value: Int) { self.init(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: CBOR...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (CBOR, CBOR)...) {
        var m = [CBOR: CBOR]()
        for (k, v) in elements { m[k] = v }
        self = .map(m)
    }
}

// MARK: Encoding

extension CBOR {
    /// CTAP2 canonical encoding: shortest heads, definite lengths, map keys sorted by major type, then
    /// length, then bytes of their encoding, as CTAP2's "canonical CBOR" requires.
    public var encoded: [UInt8] {
        var out = [UInt8]()
        encode(into: &out)
        return out
    }

    static func head(_ major: UInt8, _ value: UInt64, into out: inout [UInt8]) {
        let m = major << 5
        switch value {
        case ..<24: out.append(m | UInt8(value))
        case ..<0x100: out += [m | 24, UInt8(value)]
        case ..<0x10000: out += [m | 25] + BigEndian.bytes(value, count: 2)
        case ..<0x1_0000_0000: out += [m | 26] + BigEndian.bytes(value, count: 4)
        default: out += [m | 27] + BigEndian.bytes(value, count: 8)
        }
    }

    func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let v): CBOR.head(0, v, into: &out)
        case .negative(let v): CBOR.head(1, v, into: &out)
        case .bytes(let b):
            CBOR.head(2, UInt64(b.count), into: &out)
            out += b
        case .text(let s):
            let u = Array(s.utf8)
            CBOR.head(3, UInt64(u.count), into: &out)
            out += u
        case .array(let a):
            CBOR.head(4, UInt64(a.count), into: &out)
            for e in a { e.encode(into: &out) }
        case .map(let m):
            CBOR.head(5, UInt64(m.count), into: &out)
            let pairs = m.map { ($0.key.encoded, $0.value) }.sorted { CBOR.canonicalLess($0.0, $1.0) }
            for (k, v) in pairs {
                out += k
                v.encode(into: &out)
            }
        case .tagged(let t, let v):
            CBOR.head(6, t, into: &out)
            v.encode(into: &out)
        case .bool(let b): out.append(b ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .float(let d):
            out.append(0xFB)
            out += BigEndian.bytes(d.bitPattern, count: 8)
        }
    }

    /// CTAP2 canonical order: lower major type first, then shorter encoding, then byte-wise.
    static func canonicalLess(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let ma = (a.first ?? 0) >> 5, mb = (b.first ?? 0) >> 5
        if ma != mb { return ma < mb }
        if a.count != b.count { return a.count < b.count }
        return a.lexicographicallyPrecedes(b)
    }
}

// MARK: Decoding

/// The canonical encodings of a map's keys so far, to find a repeated one. A CTAP map has a handful of keys:
/// up to 16 they are compared one by one, which spares a process the Swift runtime's first lookup of
/// `[UInt8]: Hashable` and `UInt8: Hashable` for a `Set<[UInt8]>` (a scan of every conformance record in the
/// binary each, 650,000 instructions: 6% of `fido credentials list`). Larger maps go into a set.
struct CanonicalKeys {
    private var few = [[UInt8]]()
    private var many: Set<[UInt8]>?
    private static let listLimit = 16

    /// Adds `key`; false when it was there already.
    mutating func insert(_ key: [UInt8]) -> Bool {
        if many != nil { return many!.insert(key).inserted }
        if few.contains(where: { $0 == key }) { return false }
        if few.count < Self.listLimit {
            few.append(key)
        } else {
            many = Set(few)
            many!.insert(key)
            few = []
        }
        return true
    }
}

public enum CBORError: Error, Hashable, Sendable {
    case truncated(offset: Int)
    case trailingBytes(offset: Int)
    case reservedAdditionalInfo(offset: Int)
    case indefiniteLength(offset: Int)
    case tooDeep
    case tooLong(offset: Int)
    case invalidUTF8(offset: Int)
    case duplicateKey(offset: Int)
    case nonCanonical(offset: Int)
    case unsupportedSimple(UInt8, offset: Int)
}

extension CBOR {
    /// Limits that keep hostile input from using unbounded memory or stack.
    public struct Limits: Sendable {
        public var maxDepth: Int
        public var maxLength: Int
        /// Reject maps whose keys are not in canonical order (CTAP2 authenticators must send them sorted).
        public var requireCanonicalKeys: Bool

        public init(maxDepth: Int = 16, maxLength: Int = 1 << 20, requireCanonicalKeys: Bool = false) {
            self.maxDepth = maxDepth
            self.maxLength = maxLength
            self.requireCanonicalKeys = requireCanonicalKeys
        }

        public static let standard = Limits()
    }

    /// Decodes exactly one value that fills `bytes`.
    public static func decode(_ bytes: [UInt8], limits: Limits = .standard) throws(CBORError) -> CBOR {
        let (value, end) = try decodePrefix(bytes, limits: limits)
        guard end == bytes.count else { throw .trailingBytes(offset: end) }
        return value
    }

    /// Decodes one value at the start of `bytes`; returns it and where it ends.
    public static func decodePrefix(_ bytes: [UInt8], limits: Limits = .standard) throws(CBORError) -> (CBOR, Int) {
        var reader = Reader(bytes: bytes, limits: limits)
        let v = try reader.value(depth: 0)
        return (v, reader.offset)
    }

    struct Reader {
        let bytes: [UInt8]
        let limits: Limits
        var offset = 0

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.count else { throw .truncated(offset: offset) }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ n: Int) throws(CBORError) -> [UInt8] {
            guard n >= 0, n <= bytes.count - offset else { throw .truncated(offset: offset) }
            defer { offset += n }
            return Array(bytes[offset..<(offset + n)])
        }

        mutating func argument(_ info: UInt8, at start: Int) throws(CBORError) -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24: return UInt64(try byte())
            case 25: return BigEndian.integer(try take(2))
            case 26: return BigEndian.integer(try take(4))
            case 27: return BigEndian.integer(try take(8))
            case 31: throw .indefiniteLength(offset: start)
            default: throw .reservedAdditionalInfo(offset: start)
            }
        }

        mutating func length(_ info: UInt8, at start: Int) throws(CBORError) -> Int {
            let n = try argument(info, at: start)
            guard n <= UInt64(limits.maxLength) else { throw .tooLong(offset: start) }
            return Int(n)
        }

        mutating func value(depth: Int) throws(CBORError) -> CBOR {
            guard depth <= limits.maxDepth else { throw .tooDeep }
            let start = offset
            let initial = try byte()
            let major = initial >> 5
            let info = initial & 0x1F
            switch major {
            case 0: return .unsigned(try argument(info, at: start))
            case 1: return .negative(try argument(info, at: start))
            case 2: return .bytes(try take(try length(info, at: start)))
            case 3:
                let raw = try take(try length(info, at: start))
                guard let s = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8(offset: start) }
                return .text(s)
            case 4:
                let n = try length(info, at: start)
                // Each element needs at least one byte: a count larger than what is left is truncated input.
                guard n <= bytes.count - offset else { throw .truncated(offset: offset) }
                var a = [CBOR]()
                a.reserveCapacity(n)
                for _ in 0..<n { a.append(try value(depth: depth + 1)) }
                return .array(a)
            case 5:
                let n = try length(info, at: start)
                guard n <= (bytes.count - offset) / 2 else { throw .truncated(offset: offset) }
                var m = [CBOR: CBOR]()
                // Keys are also compared by their canonical encoding: NaN is not equal to itself, so two NaN
                // keys would both go into the dictionary and then encode as a map with a duplicate key.
                var canonicalKeys = CanonicalKeys()
                var previousKey: [UInt8]?
                for _ in 0..<n {
                    let keyStart = offset
                    let k = try value(depth: depth + 1)
                    let keyBytes = Array(bytes[keyStart..<offset])
                    if limits.requireCanonicalKeys, let p = previousKey, !CBOR.canonicalLess(p, keyBytes) {
                        throw .nonCanonical(offset: keyStart)
                    }
                    previousKey = keyBytes
                    let v = try value(depth: depth + 1)
                    guard canonicalKeys.insert(k.encoded), m.updateValue(v, forKey: k) == nil else {
                        throw .duplicateKey(offset: keyStart)
                    }
                }
                return .map(m)
            case 6:
                let tag = try argument(info, at: start)
                return .tagged(tag, try value(depth: depth + 1))
            default:
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 23: return .undefined
                case 25: return .float(Double(Float16(bitPattern: UInt16(BigEndian.integer(try take(2))))))
                case 26: return .float(Double(Float(bitPattern: UInt32(BigEndian.integer(try take(4))))))
                case 27: return .float(Double(bitPattern: BigEndian.integer(try take(8))))
                case 31: throw .indefiniteLength(offset: start)
                default: throw .unsupportedSimple(info, offset: start)
                }
            }
        }
    }
}
