import KeyKit

/// State files keep byte strings as lower-case hex; a value that is not hex is reported with its key.
func decodeHex<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> [UInt8] {
    let text = try c.decode(String.self, forKey: key)
    do {
        return try Hex.decode(text)
    } catch {
        throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "\(error)")
    }
}

extension KeyedEncodingContainer {
    /// Writes `bytes` as state files keep byte strings, in lower-case hex; nothing for nil.
    mutating func encodeHex(_ bytes: [UInt8]?, forKey key: Key) throws {
        try encodeIfPresent(bytes?.hex, forKey: key)
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
