/// A firmware version `major.minor.patch`.
public struct Version: Comparable, Hashable, Sendable, CustomStringConvertible, Codable {
    public var major: Int
    public var minor: Int
    public var patch: Int

    public init(_ major: Int, _ minor: Int, _ patch: Int) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// From three bytes, as the applications report it.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count >= 3 else { return nil }
        let a = Array(bytes.prefix(3))
        self.init(Int(a[0]), Int(a[1]), Int(a[2]))
    }

    /// Parses the first `a.b.c` found in `text` (the management application answers e.g. "5.7.2").
    public init?(parsing text: String) {
        let tokens = text.split { !($0.isASCII && ($0.isNumber || $0 == ".")) }
        for token in tokens {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count >= 3 else { continue }
            let nums = parts.prefix(3).compactMap { Int($0) }
            guard nums.count == 3, nums.allSatisfy({ (0...255).contains($0) }) else { continue }
            self.init(nums[0], nums[1], nums[2])
            return
        }
        return nil
    }

    public var bytes: [UInt8] { [UInt8(clamping: major), UInt8(clamping: minor), UInt8(clamping: patch)] }

    public var description: String { "\(major).\(minor).\(patch)" }

    public static func < (l: Version, r: Version) -> Bool {
        (l.major, l.minor, l.patch) < (r.major, r.minor, r.patch)
    }

    public init(from decoder: any Decoder) throws {
        let s = try decoder.singleValueContainer().decode(String.self)
        guard let v = Version(parsing: s) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "not a version: \(s)"))
        }
        self = v
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
