/// Comma-separated values as RFC 4180 writes them (and Python's csv module, which ykman's --csv uses): a field
/// with a comma, a double quote, CR or LF in it is quoted, its double quotes doubled; each row ends with CR LF.
enum CSV {
    static func text(_ rows: [[String]]) -> String {
        rows.map { $0.map(field).joined(separator: ",") + "\r\n" }.joined()
    }

    static func field(_ value: String) -> String {
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else {
            return value
        }
        var quoted = "\""
        for c in value {
            if c == "\"" { quoted.append("\"") }
            quoted.append(c)
        }
        return quoted + "\""
    }
}
