/// An editable line of text with a cursor (counted in characters).
public struct TextField: Sendable, Hashable {
    public var text: String
    public var cursor: Int
    /// Shown as bullets; the view never draws the characters.
    public var secret: Bool
    public var maxLength: Int

    public init(_ text: String = "", secret: Bool = false, maxLength: Int = 1024) {
        self.text = text
        self.cursor = text.count
        self.secret = secret
        self.maxLength = maxLength
    }

    /// Applies an editing key; false when the key is not an editing key (the caller handles it).
    @discardableResult
    public mutating func handle(_ key: KeyPress) -> Bool {
        switch key {
        case .char(let c):
            guard text.count < maxLength, !c.isNewline else { return true }
            let i = text.index(text.startIndex, offsetBy: cursor)
            text.insert(c, at: i)
            cursor += 1
        case .backspace, .ctrl("h"):
            guard cursor > 0 else { return true }
            let i = text.index(text.startIndex, offsetBy: cursor - 1)
            text.remove(at: i)
            cursor -= 1
        case .delete, .ctrl("d"):
            guard cursor < text.count else { return true }
            text.remove(at: text.index(text.startIndex, offsetBy: cursor))
        case .left, .ctrl("b"): cursor = max(0, cursor - 1)
        case .right, .ctrl("f"): cursor = min(text.count, cursor + 1)
        case .home, .ctrl("a"): cursor = 0
        case .end, .ctrl("e"): cursor = text.count
        case .ctrl("u"):
            text.removeSubrange(text.startIndex..<text.index(text.startIndex, offsetBy: cursor))
            cursor = 0
        case .ctrl("k"):
            text.removeSubrange(text.index(text.startIndex, offsetBy: cursor)...)
        case .ctrl("w"):
            let chars = Array(text)
            var start = cursor
            while start > 0 && chars[start - 1] == " " { start -= 1 }
            while start > 0 && chars[start - 1] != " " { start -= 1 }
            text = String(chars[..<start] + chars[cursor...])
            cursor = start
        default:
            return false
        }
        return true
    }

    /// Inserts pasted text at the cursor, as far as `maxLength` allows. A field is one line: line breaks and
    /// tabs become nothing and spaces (a URI copied with a trailing newline stays one URI).
    public mutating func insert(_ pasted: String) {
        for c in pasted {
            if c == "\n" || c == "\r\n" || c == "\r" { continue }
            guard text.count < maxLength else { break }
            let i = text.index(text.startIndex, offsetBy: cursor)
            text.insert(c == "\t" ? " " : c, at: i)
            cursor += 1
        }
    }

    /// Overwrites and empties the text (what Swift allows for a String held by value).
    public mutating func clear() {
        text = String(repeating: "\0", count: text.count)
        text = ""
        cursor = 0
    }
}
