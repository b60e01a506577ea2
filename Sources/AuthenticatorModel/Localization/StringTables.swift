import FoundationEssentials
import KeyKit
import Glibc
import Synchronization

/// The languages ykterm's string tables exist in.
public enum Language: String, Sendable, Equatable, CaseIterable {
    case en, de

    /// The language of a locale name as in LANG: `de_DE.UTF-8`, `de_AT@euro`, `de` → `.de`;
    /// `C`, `POSIX`, empty, or a language without tables → nil.
    public static func fromLocale(_ locale: String) -> Language? {
        let code = locale.prefix { $0 != "_" && $0 != "." && $0 != "@" && $0 != "-" }.lowercased()
        return Language(rawValue: code)
    }

    /// The language to use: `configured` (the config file's `language`, nil for "auto"), else the first of
    /// LC_ALL, LC_MESSAGES and LANG that is set and not empty (as POSIX orders them: a later one is not
    /// consulted even when the first names a language without tables), else English.
    public static func preferred(configured: Language?, environment: [String: String]) -> Language {
        if let configured { return configured }
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = environment[name], !value.isEmpty {
                return fromLocale(value) ?? .en
            }
        }
        return .en
    }
}

/// A string table that cannot be used.
public struct StringsError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// The user's texts, from `Resources/strings/<language>.json`: the chosen language over English.
///
/// Format of the files: one flat JSON object, key → text. Keys are dotted names grouped by where the text
/// appears (`tab.oath`, `status.keyRemoved`). A text may hold named placeholders, `{name}` (an ASCII letter,
/// then letters, digits or `_`), filled from the arguments given with the key; every language has the same
/// placeholders for a key (a unit test checks), and braces that do not form a known placeholder stay as
/// they are.
///
/// Where the files are looked for, first found wins: `$YKTERM_RESOURCES/strings` (a directory laid out as
/// `Resources/` or `share/ykterm/`), `<directory of the executable>/../share/ykterm/strings` (an installed
/// ykterm), then the source tree this file was compiled from (a build from a clone).
///
/// The language: the config file's `language` when it names one (`StringTables.configuredLanguage`, set
/// once at start-up), else LC_ALL, LC_MESSAGES, LANG. A key the language lacks falls back to English, and a
/// key English lacks shows as itself, so the program keeps working with broken tables; `problem` says why.
public struct StringTables: Sendable {
    public var primary: [String: String]
    public var english: [String: String]
    /// Why the tables could not be loaded as they should; nil when they were.
    public var problem: String?

    public init(primary: [String: String], english: [String: String], problem: String? = nil) {
        self.primary = primary
        self.english = english
        self.problem = problem
    }

    /// The language the config file chose (nil: from the locale variables). Set once by the executable
    /// before anything is shown; every later `load()` follows it.
    public static let configuredLanguage = Mutex<Language?>(nil)

    // MARK: Texts

    /// The text for `key` with `{name}` placeholders filled; English when the language lacks the key, the
    /// key itself when English lacks it too.
    public func format(_ key: String, _ arguments: [String: String]) -> String {
        StringTables.fill(primary[key] ?? english[key] ?? key, arguments)
    }

    /// The model's text: its literal when it has one, else its key and arguments looked up (nested texts
    /// first, each in the same way).
    public func text(_ uiText: UIText) -> String {
        if let literal = uiText.literal { return literal }
        guard !uiText.nested.isEmpty else { return format(uiText.key, uiText.arguments) }
        var arguments = uiText.arguments
        for (name, inner) in uiText.nested { arguments[name] = text(inner) }
        return format(uiText.key, arguments)
    }

    /// Replaces each `{name}` in `template` that `arguments` has a value for, in one pass (a value that
    /// itself contains `{...}` is not expanded again).
    public static func fill(_ template: String, _ arguments: [String: String]) -> String {
        guard !arguments.isEmpty, template.contains("{") else { return template }
        var out = ""
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            let afterOpen = rest.index(after: open)
            if let close = rest[afterOpen...].firstIndex(of: "}"), isPlaceholderName(rest[afterOpen..<close]),
                let value = arguments[String(rest[afterOpen..<close])]
            {
                out += value
                rest = rest[rest.index(after: close)...]
            } else {
                out.append("{")
                rest = rest[afterOpen...]
            }
        }
        return out + rest
    }

    /// The placeholder names in `template`.
    public static func placeholders(in template: String) -> Set<String> {
        var names = Set<String>()
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            let afterOpen = rest.index(after: open)
            if let close = rest[afterOpen...].firstIndex(of: "}"), isPlaceholderName(rest[afterOpen..<close]) {
                names.insert(String(rest[afterOpen..<close]))
                rest = rest[rest.index(after: close)...]
            } else {
                rest = rest[afterOpen...]
            }
        }
        return names
    }

    static func isPlaceholderName(_ name: Substring) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        return name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
        }
    }

    // MARK: Language

    /// The language code to load: the configured language, else the locale variables, else "en".
    public static func language(
        environment: [String: String] = ProcessEnvironment.current,
        configured: Language? = StringTables.configuredLanguage.withLock { $0 }
    ) -> String {
        Language.preferred(configured: configured, environment: environment).rawValue
    }

    // MARK: Loading

    /// The directories that may hold the `<language>.json` files, in the order they are tried.
    public static func directories(
        environment: [String: String] = ProcessEnvironment.current,
        executablePath: String? = StringTables.executablePath()
    ) -> [String] {
        var dirs = [String]()
        if let resources = environment["YKTERM_RESOURCES"], !resources.isEmpty {
            dirs.append(resources + "/strings")
        }
        if let executablePath {
            dirs.append(PathString.normalized(PathString.directory(of: executablePath) + "/../share/ykterm/strings"))
        }
        // Sources/AuthenticatorModel/Localization/StringTables.swift → the package root.
        var root = #filePath
        for _ in 0..<4 { root = PathString.directory(of: root) }
        dirs.append(PathString.normalized(root + "/Resources/strings"))
        return dirs
    }

    /// This program's executable (through /proc/self/exe, so a symlink in PATH leads to the real install).
    public static func executablePath() -> String? {
        PathString.executable()
    }

    /// The first of `directories` with an `en.json`.
    public static func directory(among directories: [String]) -> String? {
        directories.first { FileManager.default.isReadableFile(atPath: $0 + "/en.json") }
    }

    /// Loads `language` over English from the first directory with tables; throws when there is none, or a
    /// needed table is missing or malformed (for tests and `ykterm doctor`).
    public static func validated(
        language: String,
        directories: [String] = StringTables.directories()
    ) throws(StringsError) -> StringTables {
        guard let dir = directory(among: directories) else {
            throw StringsError(
                "no string tables (en.json) in " + directories.joined(separator: ", ")
                    + "; set YKTERM_RESOURCES to the directory holding strings/")
        }
        let english = try loadTable(dir + "/en.json")
        let primary = language == "en" ? english : try loadTable(dir + "/\(language).json")
        return StringTables(primary: primary, english: english)
    }

    /// For the program: never fails. Falls back to English when the language's table is unusable, and to
    /// the keys themselves when English is; `problem` then says what went wrong.
    public static func load(
        language: String = StringTables.language(),
        directories: [String] = StringTables.directories()
    ) -> StringTables {
        do {
            return try validated(language: language, directories: directories)
        } catch let languageError {
            if language != "en", let english = try? validated(language: "en", directories: directories) {
                return StringTables(primary: english.english, english: english.english, problem: languageError.message)
            }
            return StringTables(primary: [:], english: [:], problem: languageError.message)
        }
    }

    /// Reads one table: a flat JSON object whose values are all strings.
    public static func loadTable(_ path: String) throws(StringsError) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StringsError("\(path) cannot be read")
        }
        // A table as it should be is read by FlatStringTable (JSONDecoder took 0.75 ms for English, on every
        // start of the TUI); only one that is not goes through JSONDecoder, to say what is wrong with it.
        if let table = FlatStringTable.parse(data) { return table }
        // Each kind of mistake gets its own message.
        let parsed: TableJSON
        do {
            parsed = try JSONDecoder().decode(TableJSON.self, from: data)
        } catch {
            throw StringsError("\(path) is not valid JSON: \(error)")
        }
        guard let members = parsed.members else {
            throw StringsError("\(path) must hold one JSON object (key → text)")
        }
        var table = [String: String]()
        for (key, member) in members {
            guard let text = member.text else {
                throw StringsError("\(path): the value of \"\(key)\" must be a string")
            }
            table[key] = text
        }
        return table
    }
}

/// A string table file as parsed: its members when it is a JSON object, nil when it is any other value.
private struct TableJSON: Decodable {
    let members: [String: AnyJSONValue]?

    init(from decoder: any Decoder) throws {
        members = try? decoder.singleValueContainer().decode([String: AnyJSONValue].self)
    }
}

/// Any JSON value; keeps the text when it is a string.
private struct AnyJSONValue: Decodable {
    let text: String?

    init(from decoder: any Decoder) throws {
        text = try? decoder.singleValueContainer().decode(String.self)
    }
}

/// A string table read without JSONDecoder: one JSON object whose members are all strings, nothing else. Any
/// other text (another kind of value, a member named twice, bad syntax) gives nil, and the caller lets
/// JSONDecoder say what is wrong.
enum FlatStringTable {
    static func parse(_ data: Data) -> [String: String]? {
        data.withUnsafeBytes { raw in
            var reader = Reader(bytes: raw.bindMemory(to: UInt8.self))
            return reader.table()
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        mutating func table() -> [String: String]? {
            var table = [String: String](minimumCapacity: bytes.count / 24)
            guard next() == UInt8(ascii: "{") else { return nil }
            at += 1
            if next() == UInt8(ascii: "}") {
                at += 1
            } else {
                while true {
                    guard let key = string(), next() == UInt8(ascii: ":") else { return nil }
                    at += 1
                    guard let value = string(), table.updateValue(value, forKey: key) == nil else { return nil }
                    let separator = next()
                    at += 1
                    if separator == UInt8(ascii: "}") { break }
                    guard separator == UInt8(ascii: ",") else { return nil }
                }
            }
            return next() == nil ? table : nil
        }

        /// The next byte that is not JSON white space (nil at the end); `at` points at it.
        mutating func next() -> UInt8? {
            while at < bytes.count {
                switch bytes[at] {
                case 0x20, 0x09, 0x0A, 0x0D: at += 1
                default: return bytes[at]
                }
            }
            return nil
        }

        /// A JSON string, escapes resolved; nil when there is none or it is malformed.
        mutating func string() -> String? {
            guard next() == UInt8(ascii: "\"") else { return nil }
            at += 1
            var utf8 = [UInt8]()
            var runStart = at
            let count = bytes.count
            while at < count {
                // Up to the next quote, backslash or control character, in locals (the loop most bytes go through).
                var i = at
                while i < count {
                    let b = bytes[i]
                    if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 { break }
                    i += 1
                }
                at = i
                guard at < count else { return nil }
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    let run = UnsafeBufferPointer(rebasing: bytes[runStart..<at])
                    at += 1
                    // Most strings have no escapes: made from the bytes.
                    if utf8.isEmpty { return Reader.validUTF8(run) }
                    utf8.append(contentsOf: run)
                    return utf8.withUnsafeBufferPointer(Reader.validUTF8)
                }
                if byte < 0x20 { return nil }
                utf8.append(contentsOf: bytes[runStart..<at])
                at += 1
                guard at < bytes.count else { return nil }
                let escape = bytes[at]
                at += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(scalar) {
                        // A high surrogate must be followed by an escaped low one.
                        guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u")
                        else { return nil }
                        at += 2
                        guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    utf8.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    return nil
                }
                runStart = at
            }
            return nil
        }

        /// `run` as text when it is valid UTF-8, else nil. Decoding repairs invalid bytes, so the text must read back
        /// as the same bytes; this is several times faster than `String(validating:as:)`, whose generic validation
        /// was most of the time spent loading a table.
        static func validUTF8(_ run: UnsafeBufferPointer<UInt8>) -> String? {
            var text = String(decoding: run, as: UTF8.self)
            let same = text.withUTF8 { made in
                made.count == run.count && (run.isEmpty || memcmp(made.baseAddress!, run.baseAddress!, run.count) == 0)
            }
            return same ? text : nil
        }

        /// Four hex digits after `\u`.
        mutating func hex4() -> UInt32? {
            guard at + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[at]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
                at += 1
            }
            return value
        }
    }
}
