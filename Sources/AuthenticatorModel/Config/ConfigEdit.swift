import FoundationEssentials
import Glibc
import KeyKit

/// A setting the TUI changes in the config file itself (the OATH tab's all-keys view, `[oath] all_keys`): one line
/// of the file is replaced or added, every other line (comments, order, the other settings) stays as it was.
public enum ConfigEdit {
    /// Why the file was not changed.
    public struct Problem: Error, Sendable, Equatable {
        public var path: String
        public var detail: String
    }

    /// `text` with `key = value` (a boolean) in `[table]`: the line that sets it, else a line under the table's
    /// header, else the table at the end. A file that sets the table or the key another way (an inline table, a
    /// dotted key) is left to the user: nil.
    static func setting(_ key: String, to value: Bool, in table: String, of text: String) -> String? {
        guard let tables = try? TOML.parse(text) else { return nil }
        // Split on the byte: "\r\n" is one Character to Swift.
        var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        let assignment = "\(key) = \(value)"
        if let found = tables.first(where: { $0.dottedName == table }) {
            if let entry = found.entries.first(where: { $0.key == key }) {
                let i = entry.line - 1
                guard lines.indices.contains(i), let replaced = replacingValue(of: key, in: lines[i], with: value)
                else { return nil }
                lines[i] = replaced
            } else {
                let i = found.line - 1
                guard lines.indices.contains(i), isHeader(lines[i], of: table) else { return nil }
                lines.insert(assignment + (lines[i].hasSuffix("\r") ? "\r" : ""), at: i + 1)
            }
            return lines.joined(separator: "\n")
        }
        var out = text
        if !out.isEmpty && !out.hasSuffix("\n") { out += "\n" }
        if !out.isEmpty { out += "\n" }
        return out + "[\(table)]\n\(assignment)\n"
    }

    /// The line `key = true|false  # comment` with the value replaced; nil for any other form.
    private static func replacingValue(of key: String, in line: String, with value: Bool) -> String? {
        let text = Substring(line)
        let indent = text.prefix { $0 == " " || $0 == "\t" }
        var rest = text.dropFirst(indent.count)
        guard rest.hasPrefix(key) else { return nil }
        rest = rest.dropFirst(key.count)
        let beforeEquals = rest.prefix { $0 == " " || $0 == "\t" }
        rest = rest.dropFirst(beforeEquals.count)
        guard rest.hasPrefix("=") else { return nil }
        rest = rest.dropFirst()
        let afterEquals = rest.prefix { $0 == " " || $0 == "\t" }
        rest = rest.dropFirst(afterEquals.count)
        let old = rest.hasPrefix("true") ? "true" : rest.hasPrefix("false") ? "false" : nil
        guard let old else { return nil }
        let tail = rest.dropFirst(old.count)
        guard tail.isEmpty || tail.first == " " || tail.first == "\t" || tail.first == "#" || tail.first == "\r"
        else { return nil }
        return String(indent) + key + String(beforeEquals) + "=" + String(afterEquals) + String(value) + String(tail)
    }

    /// Whether `line` is the header `[table]` (spaces and a comment allowed).
    private static func isHeader(_ line: String, of table: String) -> Bool {
        var text = Substring(line).drop { $0 == " " || $0 == "\t" }
        guard text.hasPrefix("[") else { return false }
        text = text.dropFirst().drop { $0 == " " || $0 == "\t" }
        guard text.hasPrefix(table) else { return false }
        text = text.dropFirst(table.count).drop { $0 == " " || $0 == "\t" }
        return text.hasPrefix("]")
    }

    /// Sets `[oath] all_keys` in the config file at `path` (made, 0600, when there is none). A symbolic link is
    /// followed: the file it names is the one changed. The new text is checked before it replaces the old.
    public static func rememberOATHAllKeys(_ on: Bool, path: String) throws(Problem) {
        try set("all_keys", to: on, in: "oath", path: path)
    }

    static func set(_ key: String, to value: Bool, in table: String, path: String) throws(Problem) {
        var target = path
        if let resolved = realpath(path, nil) {
            target = String(cString: resolved)
            free(resolved)
        }
        var mode: mode_t = 0o600
        var text = ""
        var st = stat()
        if stat(target, &st) == 0 {
            mode = st.st_mode & 0o777
            guard let data = FileManager.default.contents(atPath: target),
                let read = String(validating: data, as: UTF8.self)
            else { throw Problem(path: path, detail: "cannot be read") }
            text = read
        } else {
            try? FileManager.default.createDirectory(
                atPath: PathString.directory(of: target), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        guard let changed = setting(key, to: value, in: table, of: text) else {
            throw Problem(path: path, detail: "sets [\(table)] in a way ykterm does not change; edit \(key) there")
        }
        do {
            _ = try Config.parse(text: changed, path: path, mode: mode)
        } catch {
            throw Problem(path: path, detail: error.message)
        }
        do {
            try AtomicFile.write(Array(changed.utf8), to: target, mode: mode)
        } catch {
            throw Problem(path: path, detail: error.reason)
        }
    }
}
