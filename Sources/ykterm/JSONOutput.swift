import KeyKit

/// `--json` outputs as `Encodable` types: `printJSON(_:)` turns one into a `JSONValue` (`JSONTree`) and writes it
/// with `JSONText` (keys sorted, two-space indent, the escapes it makes). An optional that is nil is written as
/// `null`, not left out: a field is always there, as scripts expect. A field that is sometimes absent is encoded
/// only when present, by the type's own `encode(to:)`.
func printJSON(_ value: some Encodable) throws {
    // Written by hand rather than with JSONSerialization, which on Linux takes ~70 ms for a thousand accounts.
    var text = ""
    try JSONText.append(JSONTree.value(of: value), to: &text, indent: 0)
    text += "\n"
    StandardStream.write(text, to: 1)
}

/// A JSON value, as `JSONText` writes it; also the type of open-ended data in an output (getInfo fields ykterm
/// does not know, CBOR values).
enum JSONValue: Equatable, Sendable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    /// 128 bits, so that a 64-bit integer fits whether signed or not (CBOR's unsigned and negative ones too).
    case integer(Int128)
    case double(Double)
    case bool(Bool)
    case null
}

extension JSONValue: Encodable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// For an encoder other than JSONTree's (which takes the value as it is).
    func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let fields):
            var c = encoder.container(keyedBy: Key.self)
            for (key, value) in fields { try c.encode(value, forKey: Key(stringValue: key)) }
        case .array(let items):
            var c = encoder.unkeyedContainer()
            for item in items { try c.encode(item) }
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case .integer(let n):
            var c = encoder.singleValueContainer()
            if let i = Int64(exactly: n) {
                try c.encode(i)
            } else if let u = UInt64(exactly: n) {
                try c.encode(u)
            } else {
                throw EncodingError.invalidValue(
                    n,
                    EncodingError.Context(
                        codingPath: encoder.codingPath,
                        debugDescription: "beyond 64 bits"))
            }
        case .double(let d):
            var c = encoder.singleValueContainer()
            try c.encode(d)
        case .bool(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        }
    }
}

/// Builds the `JSONValue` of an Encodable.
/// An output whose fields are written with snake_case names: `fromManagement` as `from_management`, `rpID` as
/// `rp_id`, `publicKeyPEM` as `public_key_pem` (`JSONTree.snakeCased`). The names of a dictionary's entries are
/// written as they are.
protocol SnakeCaseJSON: Encodable {}

enum JSONTree {
    /// `name` in snake_case: an underscore before each word a capital begins (after a small letter or a digit, or
    /// at the last capital of a run that a small letter follows), everything in small letters.
    static func snakeCased(_ name: String) -> String {
        let letters = Array(name)
        var out = ""
        for (i, c) in letters.enumerated() {
            guard c.isUppercase else {
                out.append(c)
                continue
            }
            if i > 0 {
                let previous = letters[i - 1]
                let nextIsSmall = i + 1 < letters.count && letters[i + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsSmall) {
                    out.append("_")
                }
            }
            out.append(contentsOf: c.lowercased())
        }
        return out
    }

    static func value(of value: some Encodable) throws -> JSONValue {
        try encode(value, codingPath: []).value
    }

    /// Where an encoder's value goes: set once, or a container filled in after it was placed.
    final class Slot {
        enum Content {
            case value(JSONValue)
            case object(Object)
            case list(List)

            /// The value, containers as they are now.
            var value: JSONValue {
                switch self {
                case .value(let v): v
                case .object(let o): .object(o.fields.mapValues(\.content.value))
                case .list(let l): .array(l.items.map(\.content.value))
                }
            }
        }

        var content: Content
        init(_ content: Content = .value(.null)) { self.content = content }
    }

    final class Object {
        var fields: [String: Slot] = [:]
    }

    final class List {
        var items: [Slot] = []
    }

    final class TreeEncoder: Encoder {
        let codingPath: [any CodingKey]
        let userInfo: [CodingUserInfoKey: Any] = [:]
        let root = Slot()
        /// The value being encoded is a `SnakeCaseJSON`.
        let snakeCase: Bool
        init(codingPath: [any CodingKey], snakeCase: Bool) {
            self.codingPath = codingPath
            self.snakeCase = snakeCase
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let object: Object
            if case .object(let o) = root.content { object = o } else { object = Object() }
            root.content = .object(object)
            return KeyedEncodingContainer(Keyed<Key>(object: object, codingPath: codingPath, snakeCase: snakeCase))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let list: List
            if case .list(let l) = root.content { list = l } else { list = List() }
            root.content = .list(list)
            return Unkeyed(list: list, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(slot: root, codingPath: codingPath)
        }
    }

    /// What a slot holds for `value`: plain values as they are, anything else encoded.
    static func encode(_ value: some Encodable, codingPath: [any CodingKey]) throws -> Slot.Content {
        switch value {
        case let v as JSONValue: return .value(v)
        case let v as String: return .value(.string(v))
        case let v as Bool: return .value(.bool(v))
        case let v as Double: return .value(.double(v))
        case let v as Float: return .value(.double(Double(v)))
        case let v as any BinaryInteger:
            guard let n = Int128(exactly: v) else {
                throw EncodingError.invalidValue(
                    v,
                    EncodingError.Context(
                        codingPath: codingPath,
                        debugDescription: "beyond 128 bits"))
            }
            return .value(.integer(n))
        default:
            let encoder = TreeEncoder(codingPath: codingPath, snakeCase: value is any SnakeCaseJSON)
            try value.encode(to: encoder)
            return encoder.root.content
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let object: Object
        let codingPath: [any CodingKey]
        let snakeCase: Bool

        private func put(_ content: Slot.Content, _ key: Key) {
            object.fields[snakeCase ? JSONTree.snakeCased(key.stringValue) : key.stringValue] = Slot(content)
        }

        mutating func encodeNil(forKey key: Key) throws { put(.value(.null), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            put(try JSONTree.encode(value, codingPath: codingPath + [key]), key)
        }
        // nil is written as null: every field is always there.
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type,
            forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            let nested = Object()
            put(.object(nested), key)
            return KeyedEncodingContainer(
                Keyed<NestedKey>(object: nested, codingPath: codingPath + [key], snakeCase: snakeCase))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = List()
            put(.list(nested), key)
            return Unkeyed(list: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }
        mutating func superEncoder(forKey key: Key) -> any Encoder {
            let encoder = TreeEncoder(codingPath: codingPath + [key], snakeCase: snakeCase)
            object.fields[snakeCase ? JSONTree.snakeCased(key.stringValue) : key.stringValue] = encoder.root
            return encoder
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let list: List
        let codingPath: [any CodingKey]
        var count: Int { list.items.count }

        private func append(_ content: Slot.Content) {
            list.items.append(Slot(content))
        }

        mutating func encodeNil() throws { append(.value(.null)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            append(try JSONTree.encode(value, codingPath: codingPath))
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            let nested = Object()
            append(.object(nested))
            return KeyedEncodingContainer(Keyed<NestedKey>(object: nested, codingPath: codingPath, snakeCase: false))
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = List()
            append(.list(nested))
            return Unkeyed(list: nested, codingPath: codingPath)
        }
        mutating func superEncoder() -> any Encoder {
            let encoder = TreeEncoder(codingPath: codingPath, snakeCase: false)
            list.items.append(encoder.root)
            return encoder
        }
    }

    struct Single: SingleValueEncodingContainer {
        let slot: Slot
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { slot.content = .value(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            slot.content = try JSONTree.encode(value, codingPath: codingPath)
        }
    }
}
