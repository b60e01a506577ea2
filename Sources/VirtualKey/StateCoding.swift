import KeyKit

/// A byte string as state files keep it: lower-case hex. A struct whose file form needs nothing else (no
/// default for a field older files lack) marks its byte strings with it and lets Swift write its coders; the
/// others read and write theirs by hand with `decodeHex` and `encodeHex`, which keep the same form.
@propertyWrapper
public struct HexBytes: Codable, Sendable, Equatable {
    public var wrappedValue: [UInt8]

    public init(wrappedValue: [UInt8]) {
        self.wrappedValue = wrappedValue
    }

    /// A value that is not hex is reported with where it stands in the file.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        do {
            wrappedValue = try Hex.decode(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "\(error)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(wrappedValue.hex)
    }
}

func decodeHex<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> [UInt8] {
    try c.decode(HexBytes.self, forKey: key).wrappedValue
}

extension KeyedEncodingContainer {
    /// Writes `bytes` as `HexBytes` does; nothing for nil.
    mutating func encodeHex(_ bytes: [UInt8]?, forKey key: Key) throws {
        try encodeIfPresent(bytes.map(HexBytes.init), forKey: key)
    }
}

/// An enumeration (a PIV or OpenPGP policy, origin or status) stored as its raw byte.
func decodeRaw<K: CodingKey, T: RawRepresentable>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> T
where T.RawValue == UInt8 {
    let raw = try c.decode(UInt8.self, forKey: key)
    guard let value = T(rawValue: raw) else {
        throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "unknown value \(raw)")
    }
    return value
}
