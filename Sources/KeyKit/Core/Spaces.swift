extension Array where Element == String {
    /// The strings one after another, `separator` between each two: what `joined(separator:)` makes. That one
    /// is generic over the collection, and its first call in a process looks up `Array<String>: Collection`,
    /// a scan of every conformance record in the binary (190,000 instructions, more than printing the lines).
    public func concatenated(separator: String = "") -> String {
        var text = ""
        var first = true
        for part in self {
            if !first { text += separator }
            text += part
            first = false
        }
        return text
    }
}

extension String {
    /// `count` spaces (none for a count below one). Built from the bytes: `String(repeating: " ", count:)` takes
    /// the generic repeated-string path, about 15,000 instructions for a 100-column line, and a frame fills
    /// every line of the screen with one.
    public static func spaces(_ count: Int) -> String {
        guard count > 0 else { return "" }
        return String(unsafeUninitializedCapacity: count) { buffer in
            buffer.initialize(repeating: 0x20)
            return count
        }
    }
}
