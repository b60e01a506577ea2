/// `--json` outputs as `Encodable` types: `printJSON(_:)` turns one into the value tree `JSONText` writes (keys
/// sorted, two-space indent, the escapes it makes), so a typed output prints exactly as the dictionaries did. An
/// optional that is nil is written as `null`, not left out: a field is always there, as scripts expect.
func printJSON(_ value: some Encodable) throws {
    try printJSON(try JSONTree.value(of: value))
}

/// Builds JSONText's tree (`[String: Any]`, `[Any]`, strings, numbers, booleans, `JSONNull`) from an Encodable.
enum JSONTree {
    static func value(of value: some Encodable) throws -> Any {
        let encoder = TreeEncoder(codingPath: [])
        try value.encode(to: encoder)
        return resolved(encoder.root.value)
    }

    /// Where an encoder's value goes: set once, or filled in by a container.
    final class Slot {
        var value: Any = JSONNull()
    }

    final class Object {
        var fields: [String: Slot] = [:]
        var value: [String: Any] { fields.mapValues { resolved($0.value) } }
    }

    final class List {
        var items: [Slot] = []
        var value: [Any] { items.map { resolved($0.value) } }
    }

    /// A slot may hold a container that is filled after it was placed: its value then.
    static func resolved(_ value: Any) -> Any {
        switch value {
        case let o as Object: return o.value
        case let l as List: return l.value
        default: return value
        }
    }

    final class TreeEncoder: Encoder {
        let codingPath: [any CodingKey]
        let userInfo: [CodingUserInfoKey: Any] = [:]
        let root = Slot()
        init(codingPath: [any CodingKey]) { self.codingPath = codingPath }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let object = (root.value as? Object) ?? Object()
            root.value = object
            return KeyedEncodingContainer(Keyed<Key>(object: object, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let list = (root.value as? List) ?? List()
            root.value = list
            return Unkeyed(list: list, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(slot: root, codingPath: codingPath)
        }
    }

    /// The value of `value` as the tree holds it: plain values as they are, anything else encoded.
    static func encode(_ value: some Encodable, codingPath: [any CodingKey]) throws -> Any {
        switch value {
        case let v as String: return v
        case let v as Bool: return v
        case let v as Int: return v
        case let v as Int64: return v
        case let v as UInt32: return v
        case let v as UInt8: return v
        case let v as Double: return v
        default:
            let encoder = TreeEncoder(codingPath: codingPath)
            try value.encode(to: encoder)
            return encoder.root.value
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let object: Object
        let codingPath: [any CodingKey]

        private func put(_ value: Any, _ key: Key) {
            let slot = Slot()
            slot.value = value
            object.fields[key.stringValue] = slot
        }

        mutating func encodeNil(forKey key: Key) throws { put(JSONNull(), key) }
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

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                            forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let nested = Object()
            put(nested, key)
            return KeyedEncodingContainer(Keyed<NestedKey>(object: nested, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = List()
            put(nested, key)
            return Unkeyed(list: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }
        mutating func superEncoder(forKey key: Key) -> any Encoder {
            let encoder = TreeEncoder(codingPath: codingPath + [key])
            object.fields[key.stringValue] = encoder.root
            return encoder
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let list: List
        let codingPath: [any CodingKey]
        var count: Int { list.items.count }

        private func append(_ value: Any) {
            let slot = Slot()
            slot.value = value
            list.items.append(slot)
        }

        mutating func encodeNil() throws { append(JSONNull()) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            append(try JSONTree.encode(value, codingPath: codingPath))
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey> {
            let nested = Object()
            append(nested)
            return KeyedEncodingContainer(Keyed<NestedKey>(object: nested, codingPath: codingPath))
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = List()
            append(nested)
            return Unkeyed(list: nested, codingPath: codingPath)
        }
        mutating func superEncoder() -> any Encoder {
            let encoder = TreeEncoder(codingPath: codingPath)
            list.items.append(encoder.root)
            return encoder
        }
    }

    struct Single: SingleValueEncodingContainer {
        let slot: Slot
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { slot.value = JSONNull() }
        mutating func encode<T: Encodable>(_ value: T) throws {
            slot.value = try JSONTree.encode(value, codingPath: codingPath)
        }
    }
}
