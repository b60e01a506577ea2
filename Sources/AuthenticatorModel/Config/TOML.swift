/// A small, strict TOML subset, enough for ykterm's config file, with a line number on every value and
/// every error.
///
/// Supported: `# comments`; `[table]` and `[dotted.table]` headers; `key = value` with bare keys
/// (A-Z a-z 0-9 _ -) or quoted keys; basic strings `"..."` with the TOML escapes (\b \t \n \f \r \" \\
/// \uXXXX \UXXXXXXXX); literal strings `'...'`; integers (decimal with optional sign and `_` between
/// digits, 0x / 0o / 0b); `true` / `false`; arrays of those (over several lines, trailing comma and
/// comments allowed). Not supported, each with its own error: multi-line strings, floats, dates, inline
/// tables, arrays of tables `[[...]]`, dotted keys, nested arrays. A key or a table given twice is an error.
enum TOML {
    struct ParseError: Error, Equatable {
        var line: Int
        var message: String
    }

    indirect enum Value: Equatable {
        case string(String)
        case integer(Int64)
        case bool(Bool)
        case array([Located])

        /// The kind of value, for "must be a string, not an integer" messages.
        var kind: String {
            switch self {
            case .string: return "a string"
            case .integer: return "an integer"
            case .bool: return "a boolean"
            case .array: return "an array"
            }
        }
    }

    struct Located: Equatable {
        var value: Value
        var line: Int
    }

    struct Entry: Equatable {
        var key: String
        var value: Value
        var line: Int
    }

    struct Table: Equatable {
        /// Header parts; empty for the entries before the first header.
        var name: [String]
        /// Line of the header (0 for the top level).
        var line: Int
        var entries: [Entry]

        var dottedName: String { name.joined(separator: ".") }
    }

    /// Parses `text` into its tables, in file order (the top level first, even when empty).
    static func parse(_ text: String) throws(ParseError) -> [Table] {
        var parser = Parser(Array(text.unicodeScalars))
        return try parser.document()
    }

    private struct Parser {
        let s: [Unicode.Scalar]
        var i = 0
        var line = 1

        init(_ scalars: [Unicode.Scalar]) {
            s = scalars
            if s.first == "\u{FEFF}" { i = 1 }
        }

        var atEnd: Bool { i >= s.count }
        var current: Unicode.Scalar? { i < s.count ? s[i] : nil }

        func fail(_ message: String) -> ParseError { ParseError(line: line, message: message) }

        mutating func document() throws(ParseError) -> [Table] {
            var tables = [Table(name: [], line: 0, entries: [])]
            var headers = [String: Int]()
            var keys = [String: Int]()  // "table\u{0}key" -> line
            while true {
                skipSpaces()
                guard let c = current else { break }
                if c == "\n" || c == "\r" {
                    try newline()
                    continue
                }
                if c == "#" {
                    try comment()
                    continue
                }
                if c == "[" {
                    let headerLine = line
                    let name = try header()
                    let dotted = name.joined(separator: ".")
                    if let first = headers[dotted] {
                        throw ParseError(
                            line: headerLine,
                            message: "table [\(dotted)] is defined twice "
                                + "(first on line \(first))")
                    }
                    headers[dotted] = headerLine
                    tables.append(Table(name: name, line: headerLine, entries: []))
                } else {
                    let entryLine = line
                    let key = try simpleKey(what: "a key")
                    skipSpaces()
                    if current == "." {
                        throw fail("dotted keys are not supported: put \"\(key)\" under a [table] header")
                    }
                    guard current == "=" else {
                        throw fail("expected \"=\" after the key \"\(key)\", found \(describe(current))")
                    }
                    i += 1
                    skipSpaces()
                    let value = try value(allowArray: true)
                    let table = tables[tables.count - 1].dottedName
                    let id = table + "\u{0}" + key
                    if let first = keys[id] {
                        throw ParseError(
                            line: entryLine,
                            message: "\"\(key)\" is set twice"
                                + (table.isEmpty ? "" : " in [\(table)]") + " (first on line \(first))")
                    }
                    keys[id] = entryLine
                    tables[tables.count - 1].entries.append(Entry(key: key, value: value, line: entryLine))
                }
                try endOfLine()
            }
            return tables
        }

        // MARK: Lines

        mutating func skipSpaces() {
            while let c = current, c == " " || c == "\t" { i += 1 }
        }

        mutating func newline() throws(ParseError) {
            if current == "\r" {
                i += 1
                guard current == "\n" else { throw fail("a carriage return must be followed by a line feed") }
            }
            i += 1
            line += 1
        }

        mutating func comment() throws(ParseError) {
            while let c = current, c != "\n", c != "\r" {
                if isControl(c) && c != "\t" { throw fail("control character U+\(hex4(c)) in a comment") }
                i += 1
            }
        }

        /// After a header or a value: spaces, an optional comment, then the end of the line or of the file.
        mutating func endOfLine() throws(ParseError) {
            skipSpaces()
            if current == "#" { try comment() }
            guard let c = current else { return }
            guard c == "\n" || c == "\r" else {
                throw fail("expected the end of the line, found \(describe(c))")
            }
            try newline()
        }

        // MARK: Keys and headers

        mutating func header() throws(ParseError) -> [String] {
            i += 1  // [
            if current == "[" {
                throw fail("arrays of tables ([[...]]) are not supported")
            }
            var parts = [String]()
            while true {
                skipSpaces()
                parts.append(try simpleKey(what: "a table name"))
                skipSpaces()
                if current == "." {
                    i += 1
                    continue
                }
                guard current == "]" else {
                    throw fail("expected \"]\" to end the table header, found \(describe(current))")
                }
                i += 1
                return parts
            }
        }

        mutating func simpleKey(what: String) throws(ParseError) -> String {
            guard let c = current else { throw fail("expected \(what), found the end of the file") }
            if c == "\"" { return try basicString() }
            if c == "'" { return try literalString() }
            var key = ""
            while let c = current, isBareKey(c) {
                key.unicodeScalars.append(c)
                i += 1
            }
            guard !key.isEmpty else { throw fail("expected \(what), found \(describe(c))") }
            return key
        }

        func isBareKey(_ c: Unicode.Scalar) -> Bool {
            ("A"..."Z").contains(c) || ("a"..."z").contains(c) || ("0"..."9").contains(c) || c == "_" || c == "-"
        }

        // MARK: Values

        mutating func value(allowArray: Bool) throws(ParseError) -> Value {
            guard let c = current, c != "\n", c != "\r", c != "#" else { throw fail("a value is missing after \"=\"") }
            switch c {
            case "\"":
                if s.count > i + 2, s[i + 1] == "\"", s[i + 2] == "\"" {
                    throw fail("multi-line strings (\"\"\") are not supported")
                }
                return .string(try basicString())
            case "'":
                if s.count > i + 2, s[i + 1] == "'", s[i + 2] == "'" {
                    throw fail("multi-line strings (''') are not supported")
                }
                return .string(try literalString())
            case "[":
                guard allowArray else { throw fail("nested arrays are not supported") }
                return try array()
            case "{":
                throw fail("inline tables ({...}) are not supported: use a [table] header")
            default:
                var word = ""
                while let c = current,
                    !(c == " " || c == "\t" || c == "\n" || c == "\r" || c == "," || c == "]"
                        || c == "#")
                {
                    word.unicodeScalars.append(c)
                    i += 1
                }
                if word == "true" { return .bool(true) }
                if word == "false" { return .bool(false) }
                if let n = integer(word) { return .integer(n) }
                if word.contains(".") || word.lowercased().contains("e") && word.first.map({ $0.isNumber }) == true
                    || word == "inf" || word == "nan" || word == "+inf" || word == "-inf"
                {
                    throw fail("\"\(word)\" is not an integer; floating-point numbers are not supported")
                }
                if word.first?.isNumber == true, word.contains("-") || word.contains(":") {
                    throw fail("\"\(word)\": dates and times are not supported")
                }
                if word.first?.isNumber == true || word.first == "+" || word.first == "-" {
                    throw fail("\"\(word)\" is not a valid integer")
                }
                throw fail(
                    "\(word.isEmpty ? describe(c) : "\"\(word)\"") is not a value: "
                        + "strings need quotes (\"...\" or '...')")
            }
        }

        /// TOML integers: decimal (no leading zeros), 0x, 0o, 0b; `_` only between digits.
        func integer(_ word: String) -> Int64? {
            var text = Substring(word)
            var negative = false
            if text.first == "+" || text.first == "-" {
                negative = text.first == "-"
                text = text.dropFirst()
            }
            var radix = 10
            if text.count > 2, text.hasPrefix("0x") || text.hasPrefix("0o") || text.hasPrefix("0b") {
                if word.first == "+" || word.first == "-" { return nil }
                radix = text.hasPrefix("0x") ? 16 : text.hasPrefix("0o") ? 8 : 2
                text = text.dropFirst(2)
            } else if text.count > 1, text.first == "0" {
                return nil
            }
            guard let first = text.first, let last = text.last, first != "_", last != "_",
                !text.contains("__")
            else { return nil }
            let digits = text.filter { $0 != "_" }
            guard let magnitude = UInt64(digits, radix: radix) else { return nil }
            if negative {
                return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil
            }
            return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
        }

        mutating func array() throws(ParseError) -> Value {
            i += 1  // [
            var items = [Located]()
            while true {
                try skipBlanksInArray()
                guard let c = current else { throw fail("the array is not closed with \"]\"") }
                if c == "]" {
                    i += 1
                    return .array(items)
                }
                let itemLine = line
                items.append(Located(value: try value(allowArray: false), line: itemLine))
                try skipBlanksInArray()
                if current == "," {
                    i += 1
                    continue
                }
                guard current == "]" else {
                    throw fail("expected \",\" or \"]\" in the array, found \(describe(current))")
                }
            }
        }

        /// Spaces, line breaks and comments, as allowed between array items.
        mutating func skipBlanksInArray() throws(ParseError) {
            while let c = current {
                if c == " " || c == "\t" {
                    i += 1
                } else if c == "\n" || c == "\r" {
                    try newline()
                } else if c == "#" {
                    try comment()
                } else {
                    return
                }
            }
        }

        mutating func literalString() throws(ParseError) -> String {
            i += 1  // '
            var out = ""
            while let c = current {
                if c == "'" {
                    i += 1
                    return out
                }
                if c == "\n" || c == "\r" { break }
                if isControl(c) && c != "\t" { throw fail("control character U+\(hex4(c)) in a string") }
                out.unicodeScalars.append(c)
                i += 1
            }
            throw fail("the string is not closed with ' before the end of the line")
        }

        mutating func basicString() throws(ParseError) -> String {
            i += 1  // "
            var out = ""
            while let c = current {
                if c == "\"" {
                    i += 1
                    return out
                }
                if c == "\n" || c == "\r" { break }
                if c == "\\" {
                    i += 1
                    guard let e = current else { break }
                    i += 1
                    switch e {
                    case "b": out.unicodeScalars.append("\u{08}")
                    case "t": out.unicodeScalars.append("\t")
                    case "n": out.unicodeScalars.append("\n")
                    case "f": out.unicodeScalars.append("\u{0C}")
                    case "r": out.unicodeScalars.append("\r")
                    case "\"": out.unicodeScalars.append("\"")
                    case "\\": out.unicodeScalars.append("\\")
                    case "u", "U":
                        let count = e == "u" ? 4 : 8
                        guard i + count <= s.count else { throw fail("\\\(e) needs \(count) hex digits") }
                        var digits = ""
                        digits.unicodeScalars.append(contentsOf: s[i..<i + count])
                        guard digits.allSatisfy(\.isHexDigit), let v = UInt32(digits, radix: 16),
                            let scalar = Unicode.Scalar(v)
                        else {
                            throw fail("\\\(e)\(digits) is not a Unicode scalar value")
                        }
                        out.unicodeScalars.append(scalar)
                        i += count
                    default:
                        throw fail(
                            "unknown escape \"\\\(e)\" in a string (allowed: \\b \\t \\n \\f \\r \\\" "
                                + "\\\\ \\uXXXX \\UXXXXXXXX; use '...' for regular expressions)")
                    }
                    continue
                }
                if isControl(c) && c != "\t" { throw fail("control character U+\(hex4(c)) in a string") }
                out.unicodeScalars.append(c)
                i += 1
            }
            throw fail("the string is not closed with \" before the end of the line")
        }

        // MARK: Helpers

        func isControl(_ c: Unicode.Scalar) -> Bool { c.value < 0x20 || c.value == 0x7F }

        func hex4(_ c: Unicode.Scalar) -> String {
            let h = String(c.value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, 4 - h.count)) + h
        }

        func describe(_ c: Unicode.Scalar?) -> String {
            guard let c else { return "the end of the file" }
            if c == "\n" || c == "\r" { return "the end of the line" }
            if isControl(c) { return "U+\(hex4(c))" }
            return "\"\(c)\""
        }
    }
}
