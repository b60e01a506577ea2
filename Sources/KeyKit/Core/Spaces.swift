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
