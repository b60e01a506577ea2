import CTOMLPlusPlus

/// The config file's TOML (1.0, read by toml++ through the C API of `Sources/CTOMLPlusPlus`) as the schema sees it:
/// its tables in file order, each with its entries, and a line on every value and every error.
///
/// A table is listed once however the file makes it — a `[header]`, a dotted key (`ui.color = ...`) or an inline
/// table (`ui = { color = ... }`) — with the line that made it; a table that holds nothing but tables (`otp` of a lone
/// `[otp.aes_keys]`) is left out. Tables inside arrays (`[[name]]`, `[{ ... }]`) are values of kind `.table`.
/// Whatever else TOML has (floats, dates and times, multi-line strings, nested arrays) is a value of its own kind
/// for the schema to take or refuse. What TOML forbids, a key or a table given twice among it, is an error with
/// toml++'s message and line.
enum TOML {
    struct ParseError: Error, Equatable {
        var line: Int
        var message: String
    }

    indirect enum Value: Equatable {
        case string(String)
        case integer(Int64)
        case float(Double)
        case bool(Bool)
        /// A local date, a local time, or a date and time (with its offset when it has one), written as RFC 3339
        /// writes them.
        case date(String)
        case time(String)
        case dateTime(String)
        case array([Located])
        /// A table inside an array: no setting takes one, so what it holds is not kept.
        case table

        /// The kind of value, for "must be a string, not an integer" messages.
        var kind: String {
            switch self {
            case .string: return "a string"
            case .integer: return "an integer"
            case .float: return "a floating-point number"
            case .bool: return "a boolean"
            case .date: return "a date"
            case .time: return "a time"
            case .dateTime: return "a date and time"
            case .array: return "an array"
            case .table: return "a table"
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
        /// The keys that name it; empty for the top level.
        var name: [String]
        /// Line of the header, dotted key or inline table that made it (0 for the top level).
        var line: Int
        var entries: [Entry]

        var dottedName: String { name.joined(separator: ".") }
    }

    /// Parses `text` into its tables, in file order (the top level first, even when empty).
    static func parse(_ text: String) throws(ParseError) -> [Table] {
        var text = text
        let parsed = text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { ykterm_toml_parse($0.baseAddress, $0.count) }
        }
        // As Swift's own allocations do when memory runs out.
        guard let document = parsed else { fatalError("out of memory reading TOML") }
        defer { ykterm_toml_free(document) }
        var line: UInt32 = 0
        var column: UInt32 = 0
        if let error = ykterm_toml_error(document, &line, &column) {
            var message = String(cString: error)
            if let word = bareWord(in: text, line: Int(line), column: Int(column)) {
                message += "; \"\(word)\" is not a value: strings need quotes (\"...\" or '...')"
            }
            throw ParseError(line: Int(line), message: message)
        }
        var count = 0
        let nodes = ykterm_toml_nodes(document, &count)
        var reader = Reader(nodes: UnsafeBufferPointer(start: nodes, count: count))
        reader.table(name: [])
        // File order: by line, and on one line in the order read (a table before the tables inside it).
        return reader.tables.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }
            .map(\.element)
    }

    /// The word without quotes where a value begins (after `=`, `[` or `,`, outside strings) at the place toml++
    /// stopped: toml++ takes `color = never` for a broken number ("expected 'nan', saw 'ne'").
    static func bareWord(in text: String, line: Int, column: Int) -> String? {
        let lines = text.split(separator: "\n", maxSplits: line, omittingEmptySubsequences: false)
        guard line >= 1, line <= lines.count else { return nil }
        var scalars = Array(lines[line - 1].unicodeScalars)
        if line == 1, scalars.first == "\u{FEFF}" { scalars.removeFirst() }  // toml++ does not count it
        func isBare(_ c: Unicode.Scalar) -> Bool {
            ("A"..."Z").contains(c) || ("a"..."z").contains(c) || ("0"..."9").contains(c) || c == "_" || c == "-"
        }
        var start = min(max(column - 1, 0), scalars.count)
        while start > 0, isBare(scalars[start - 1]) { start -= 1 }
        var end = start
        while end < scalars.count, isBare(scalars[end]) { end += 1 }
        guard end > start, ("A"..."Z").contains(scalars[start]) || ("a"..."z").contains(scalars[start]) else {
            return nil
        }
        // Inside a string on this line, the word is the string's.
        var quote: Unicode.Scalar?
        var i = 0
        while i < start {
            let c = scalars[i]
            if let q = quote {
                if c == "\\" && q == "\"" { i += 1 } else if c == q { quote = nil }
            } else if c == "\"" || c == "'" {
                quote = c
            } else if c == "#" {
                return nil
            }
            i += 1
        }
        var before = start
        while before > 0, scalars[before - 1] == " " || scalars[before - 1] == "\t" { before -= 1 }
        guard quote == nil, before > 0, ["=", "[", ","].contains(scalars[before - 1]) else { return nil }
        var word = ""
        word.unicodeScalars.append(contentsOf: scalars[start..<end])
        return ["true", "false", "inf", "nan"].contains(word) ? nil : word
    }

    /// Reads the nodes in the order the C API gives them: each followed by the nodes inside it.
    private struct Reader {
        let nodes: UnsafeBufferPointer<ykterm_toml_node>
        var next = 0
        var tables = [Table]()

        /// The table at `next`, and every table inside it.
        mutating func table(name: [String]) {
            let node = nodes[next]
            next += 1
            var entries = [Entry]()
            var holdsTables = false
            let index = tables.count
            tables.append(Table(name: name, line: name.isEmpty ? 0 : Int(node.line), entries: []))
            for _ in 0..<node.children {
                let child = nodes[next]
                let key = Self.string(child.key, child.key_length)
                if child.kind == .YKTERM_TOML_TABLE {
                    holdsTables = true
                    table(name: name + [key])
                } else {
                    entries.append(Entry(key: key, value: value(), line: Int(child.line)))
                }
            }
            if !name.isEmpty, entries.isEmpty, holdsTables {
                tables.remove(at: index)
            } else {
                tables[index].entries = entries
            }
        }

        /// The value at `next`, with what is inside it.
        mutating func value() -> Value {
            let node = nodes[next]
            next += 1
            switch node.kind {
            case .YKTERM_TOML_STRING: return .string(Self.string(node.text, node.text_length))
            case .YKTERM_TOML_INTEGER: return .integer(node.integer)
            case .YKTERM_TOML_FLOAT: return .float(node.number)
            case .YKTERM_TOML_BOOLEAN: return .bool(node.boolean)
            case .YKTERM_TOML_DATE: return .date(Self.string(node.text, node.text_length))
            case .YKTERM_TOML_TIME: return .time(Self.string(node.text, node.text_length))
            case .YKTERM_TOML_DATE_TIME: return .dateTime(Self.string(node.text, node.text_length))
            case .YKTERM_TOML_ARRAY:
                var items = [Located]()
                for _ in 0..<node.children {
                    let line = Int(nodes[next].line)
                    items.append(Located(value: value(), line: line))
                }
                return .array(items)
            case .YKTERM_TOML_TABLE:
                for _ in 0..<node.children { _ = value() }
                return .table
            }
        }

        static func string(_ pointer: UnsafePointer<CChar>?, _ length: Int) -> String {
            guard let pointer else { return "" }
            return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            }
        }
    }
}
