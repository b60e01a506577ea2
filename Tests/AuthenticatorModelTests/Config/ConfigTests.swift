import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel

/// Parses `text` as a config file and returns the error, or nil when it was accepted.
private func configError(_ text: String, mode: UInt32? = nil) -> ConfigError? {
    do {
        _ = try Config.parse(text: text, path: "config.toml", mode: mode)
        return nil
    } catch {
        return error
    }
}

@Suite("Config: TOML through toml++")
struct TOMLTests {
    @Test func valuesWithTheirLines() throws {
        let tables = try TOML.parse(
            """
            # a comment
            top = 1
            [a]
            s = "x\\ty\\u00e9"   # trailing comment
            l = 'C:\\path\\(\\d+)'
            n = -16
            h = 0xff
            u = 1_000
            flag = true
            arr = [
              "one",  # comment inside
              'two',
            ]
            [a.b]
            "quoted key" = false
            """)
        #expect(tables.map(\.dottedName) == ["", "a", "a.b"])
        #expect(tables[0].entries == [TOML.Entry(key: "top", value: .integer(1), line: 2)])
        let a = tables[1].entries
        #expect(tables[1].line == 3)
        #expect(a[0] == TOML.Entry(key: "s", value: .string("x\ty\u{e9}"), line: 4))
        #expect(a[1].value == .string("C:\\path\\(\\d+)"))
        #expect(a[2].value == .integer(-16))
        #expect(a[3].value == .integer(255))
        #expect(a[4].value == .integer(1000))
        #expect(a[5].value == .bool(true))
        #expect(
            a[6].value
                == .array([
                    TOML.Located(value: .string("one"), line: 11),
                    TOML.Located(value: .string("two"), line: 12),
                ]))
        #expect(a[6].line == 10)
        #expect(tables[2].entries == [TOML.Entry(key: "quoted key", value: .bool(false), line: 15)])
    }

    @Test func crlfAndBOMAreAccepted() throws {
        let tables = try TOML.parse("\u{FEFF}[ui]\r\ncolor = \"never\"\r\n")
        #expect(tables[1].entries == [TOML.Entry(key: "color", value: .string("never"), line: 2)])
    }

    @Test func everyOtherFormOfTOMLIsReadWithItsLines() throws {
        let tables = try TOML.parse(
            """
            a = 1.5
            b = 2024-01-01
            c = 07:32:00.5
            d = 1979-05-27T07:32:00-07:00
            e = \"\"\"
            two
            lines\"\"\"
            f = [[1], ['x']]
            [t]
            x.y = 1
            i = { k = true }
            [[arr]]
            n = 1
            [[arr]]
            """)
        // [t] holds nothing but tables: its tables are listed, not it.
        #expect(tables.map(\.dottedName) == ["", "t.x", "t.i"])
        #expect(
            tables[0].entries == [
                TOML.Entry(key: "a", value: .float(1.5), line: 1),
                TOML.Entry(key: "b", value: .date("2024-01-01"), line: 2),
                TOML.Entry(key: "c", value: .time("07:32:00.5"), line: 3),
                TOML.Entry(key: "d", value: .dateTime("1979-05-27T07:32:00-07:00"), line: 4),
                TOML.Entry(key: "e", value: .string("two\nlines"), line: 5),
                TOML.Entry(
                    key: "f",
                    value: .array([
                        TOML.Located(value: .array([TOML.Located(value: .integer(1), line: 8)]), line: 8),
                        TOML.Located(value: .array([TOML.Located(value: .string("x"), line: 8)]), line: 8),
                    ]), line: 8),
                TOML.Entry(
                    key: "arr",
                    value: .array([TOML.Located(value: .table, line: 12), TOML.Located(value: .table, line: 14)]),
                    line: 12),
            ])
        #expect(
            tables[1]
                == TOML.Table(
                    name: ["t", "x"], line: 10, entries: [TOML.Entry(key: "y", value: .integer(1), line: 10)]))
        #expect(
            tables[2]
                == TOML.Table(
                    name: ["t", "i"], line: 11, entries: [TOML.Entry(key: "k", value: .bool(true), line: 11)]))
    }

    @Test func tablesAreInFileOrderWithTheirHeadersLines() throws {
        let tables = try TOML.parse("[otp.aes_keys]\nvvcc = 'x'\n\n[ui]\ncolor = 'never'\n[otp]\nparsers = []\n")
        #expect(tables.map(\.dottedName) == ["", "otp.aes_keys", "ui", "otp"])
        #expect(tables.map(\.line) == [0, 1, 4, 6])
        #expect(try TOML.parse("") == [TOML.Table(name: [], line: 0, entries: [])])
    }

    @Test func stringsAndKeysKeepEveryCharacter() throws {
        let tables = try TOML.parse(#""k\u0000é" = "a\u0000b\U0001F511""#)
        #expect(tables[0].entries == [TOML.Entry(key: "k\u{0}é", value: .string("a\u{0}b\u{1F511}"), line: 1)])
    }

    @Test(arguments: [
        ("a = 1\na = 2", 2, "cannot redefine existing integer 'a'"),
        ("[x]\n[x]", 2, "cannot redefine existing table 'x'"),
        ("a.b = 1\n[a]", 2, "cannot redefine existing table 'a'"),
        ("[a]\nb = 1\n[a.b]", 3, "cannot redefine existing integer 'a.b' as table"),
        ("a = bare", 1, "could not determine value type; \"bare\" is not a value: strings need quotes"),
        ("[ui]\ncolor = never", 2, "\"never\" is not a value: strings need quotes (\"...\" or '...')"),
        ("\u{FEFF}a = [1,\ttwo]", 1, "\"two\" is not a value"),
        ("a = \"open", 1, "Error while parsing string"),
        ("a = \"open\nb = 1", 1, "Error while parsing string"),
        ("a = \"\\q\"", 1, "unknown escape sequence '\\q'"),
        ("a = 1 2", 1, "expected a comment or whitespace, saw '2'"),
        ("a = 012", 1, "leading zeroes are prohibited"),
        ("a =", 1, "encountered end-of-file"),
        ("a = 99999999999999999999", 1, "is not representable in 64 bits"),
        ("\n\na = [1,\n", 3, "Error while parsing array"),
        ("a = 2024-13-01", 1, "expected month between 1 and 12"),
        ("\n# \u{01}", 2, "control characters"),
    ])
    func syntaxErrorsNameTheLine(text: String, line: Int, words: String) {
        #expect(throws: TOML.ParseError.self) { try TOML.parse(text) }
        do {
            _ = try TOML.parse(text)
        } catch {
            #expect(error.line == line, "\(text)")
            #expect(error.message.contains(words), "\(error.message)")
        }
    }

    @Test(arguments: [
        "a = \"x \\q\"", "a = \"x = never", "a = 'x = never", "a = \"\\\" = never", "a = true false", "a = \"x\"never",
        "a = 1 2 # = never",
    ])
    func onlyBareValuesGetTheQuotesHint(text: String) {
        #expect(throws: TOML.ParseError.self) { try TOML.parse(text) }
        do {
            _ = try TOML.parse(text)
        } catch {
            #expect(error.line == 1)
            #expect(!error.message.contains("need quotes"), "\(error.message)")
        }
    }
}

@Suite("Config: schema")
struct ConfigSchemaTests {
    static let full = """
        [key]
        reader = "Yubico"
        serial = 28123456

        [ui]
        clipboard = "wl-copy"
        color = "never"
        language = "de"

        [colors]
        code = "cyan"
        bar-low = "magenta"
        tab = "none"

        [keys]
        copy = "y"
        quit = "x"

        [otp]
        parsers = ['https://otp\\.example\\.com/\\?otp=([cbdefghijklnrtuv]{32,64})']

        [otp.aes_keys]
        vvccccdbhfhh = "00112233445566778899AABBCCDDEEFF"
        """

    @Test func everySettingIsRead() throws {
        let config = try Config.parse(text: Self.full, path: "config.toml", mode: 0o600)
        #expect(config.key == Config.KeyDefaults(reader: "Yubico", serial: 28_123_456))
        #expect(config.ui.clipboard == .wlCopy)
        #expect(config.ui.color == .never)
        #expect(config.ui.language == .de)
        #expect(config.colors == [.code: .cyan, .barLow: .magenta, .tab: .none])
        #expect(config.keyBindings.action(for: .char("y")) == .copy)
        #expect(config.keyBindings.action(for: .char("x")) == .quit)
        #expect(config.keyBindings.action(for: .char("c")) == nil)
        #expect(config.keyBindings.key(for: .add) == "a")
        #expect(config.otp.parsers.map(\.pattern) == ["https://otp\\.example\\.com/\\?otp=([cbdefghijklnrtuv]{32,64})"])
        #expect(config.otp.aesKeys["vvccccdbhfhh"]?.bytes == Array(0..<16).map { UInt8($0 * 0x11) })
    }

    @Test func emptyFileGivesTheDefaults() throws {
        let config = try Config.parse(text: "# nothing set\n", path: "config.toml")
        #expect(config == Config())
        #expect(config.keyBindings == KeyBindings())
        #expect(config.ui.language == nil)
        #expect(config.ui.clipboard == .auto)
    }

    @Test func languageAutoMeansTheLocale() throws {
        let config = try Config.parse(text: "[ui]\nlanguage = \"auto\"", path: "c")
        #expect(config.ui.language == nil)
    }

    @Test(arguments: [
        ("[colour]", 1, "unknown table [colour]; allowed: key, ui, colors, keys, otp, otp.aes_keys"),
        ("x = 1", 1, "outside any table"),
        ("[ui]\nclipbaord = \"osc52\"", 2, "unknown key \"clipbaord\" in [ui]; allowed: clipboard, color, language"),
        (
            "[ui]\nclipboard = \"pbcopy\"", 2,
            "clipboard must be one of \"osc52\", \"wl-copy\", \"xclip\", \"auto\", \"none\", not \"pbcopy\""
        ),
        ("[ui]\ncolor = true", 2, "color must be one of \"auto\", \"always\", \"never\", not a boolean"),
        ("[ui]\nlanguage = \"fr\"", 2, "language must be one of \"en\", \"de\", \"auto\", not \"fr\""),
        ("[key]\nserial = \"123\"", 2, "serial must be an integer"),
        ("[key]\nserial = -1", 2, "serial must be between 0 and 4294967295"),
        ("[key]\nreader = \" \"", 2, "reader must not be empty"),
        ("[keys]\ncopy = \"yy\"", 2, "copy must be a single character"),
        ("[keys]\ncopy = \" \"", 2, "visible character"),
        ("[keys]\ncopy = \"j\"", 2, "reserved"),
        ("[keys]\ncopy = \"y\"\nadd = \"y\"", 3, "\"y\" is bound to both copy (line 2) and add"),
        ("[keys]\ncopy = \"a\"", 2, "\"a\" is bound to both"),
        ("[keys]\nfly = \"f\"", 2, "unknown key \"fly\" in [keys]; allowed: quit, help"),
        ("[colors]\ncode = \"pink\"", 2, "code must be one of \"black\""),
        ("[colors]\nbackground = \"red\"", 2, "unknown key \"background\" in [colors]"),
        ("[otp]\nparsers = \"x\"", 2, "parsers must be an array of strings"),
        ("[otp]\nparsers = [\n  '(a)',\n  '(b',\n]", 4, "parsers[1] \"(b\" is not a valid regular expression"),
        ("[otp]\nparsers = ['abc']", 2, "must have exactly one capture group (the OTP), not 0"),
        ("[otp]\nparsers = [1]", 2, "parsers[0] must be a string"),
        // TOML's other kinds of value, each refused where no setting takes it.
        ("[ui]\ncolor = 1.5", 2, "color must be one of \"auto\", \"always\", \"never\", not a floating-point number"),
        (
            "[key]\nserial = 2.8e7", 2,
            "serial must be an integer (the key's serial number), not a floating-point number"
        ),
        ("[key]\nreader = 2024-01-01", 2, "reader must be a string, not a date"),
        ("[keys]\ncopy = 07:00:00", 2, "copy must be a string, not a time"),
        ("[otp.aes_keys]\nvvcc = 1979-05-27T07:32:00Z", 2, "must be a string of 32 hex digits, not a date and time"),
        ("[otp]\nparsers = [['(a)']]", 2, "parsers[0] must be a string (a regular expression), not an array"),
        (
            "[otp]\nparsers = [\n  { p = '(a)' },\n]", 3,
            "parsers[0] must be a string (a regular expression), not a table"
        ),
        ("\n[[otp.parsers]]\np = '(a)'", 2, "parsers[0] must be a string (a regular expression), not a table"),
        (
            "[[ui]]\ncolor = \"never\"", 1,
            "[[ui]] is an array of tables; the tables are [key], [ui], [colors], [keys], [otp], [otp.aes_keys], "
                + "[notify], [oath], each given once"
        ),
        ("[ui]\n\n[[ui.theme]]", 3, "[[ui.theme]] is an array of tables"),
        // Tables made by inline tables and dotted keys are checked as [headers] are.
        ("a = { b = 1 }", 1, "unknown table [a]; allowed: key, ui"),
        ("[ui]\n\nx.y = 1", 3, "unknown table [ui.x]"),
        ("ui = { colour = 'never' }", 1, "unknown key \"colour\" in [ui]"),
        ("[otp.aes_keys]\nxyz = \"00112233445566778899aabbccddeeff\"", 2, "is not a public ID"),
        ("[otp.aes_keys]\nvvcc = 5", 2, "must be a string of 32 hex digits, not an integer"),
        ("[otp.aes_keys]\nvvcc = \"0011\"", 2, "must be 32 hex digits (16 bytes)"),
        (
            "[otp.aes_keys]\nvvcc = \"00112233445566778899aabbccddeeff\"\nVVCC = \"00112233445566778899aabbccddeeff\"",
            3, "has two keys"
        ),
    ])
    func badValuesNameTheLineAndWhatIsAllowed(text: String, line: Int, words: String) {
        let error = configError(text)
        #expect(error?.line == line, "\(text)")
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "accepted")")
        #expect(error?.description.hasPrefix("config.toml:\(line): ") == true)
    }

    @Test func dottedKeysInlineTablesAndMultiLineStringsAreTables() throws {
        let text = """
            ui.color = "never"
            colors = { code = "cyan", tab = "none" }
            [key]
            reader = \"\"\"Yubico\"\"\"
            [otp.aes_keys]
            vvcc = '00112233445566778899aabbccddeeff'
            [otp]
            parsers = [
              \'\'\'x(\\d+)\'\'\',
            ]
            """
        let config = try Config.parse(text: text, path: "config.toml", mode: 0o600)
        #expect(config.ui.color == .never)
        #expect(config.colors == [.code: .cyan, .tab: .none])
        #expect(config.key.reader == "Yubico")
        #expect(config.otp.aesKeys.keys.sorted() == ["vvcc"])
        #expect(config.otp.parsers.map(\.pattern) == [#"x(\d+)"#])
        // The AES keys' table made by a dotted key: its line is the key's.
        let error = configError(
            "[ui]\ncolor = 'never'\n[otp]\naes_keys.vvcc = '00112233445566778899aabbccddeeff'", mode: 0o644)
        #expect(error?.line == 4)
        #expect(error?.message.contains("others can read this file") == true)
    }

    @Test func aesKeyErrorsNeverEchoTheKey() {
        let secret = "00112233445566778899aabbccddeeZZ"
        let error = configError("[otp.aes_keys]\nvvcc = \"\(secret)\"")
        #expect(error != nil)
        #expect(error?.description.contains(secret) == false)
        #expect(error?.description.contains("00112233") == false)
        let key = Config.AESKey(bytes: Array(repeating: 0xAB, count: 16))!
        #expect("\(key)" == "AESKey(<redacted>)")
        #expect(String(reflecting: key).contains("ab") == false)
    }

    @Test func aesKeysNeedAPrivateFile() {
        let text = "[ui]\ncolor = \"never\"\n\n[otp.aes_keys]\nvvcc = \"00112233445566778899aabbccddeeff\""
        for mode: UInt32 in [0o644, 0o640, 0o604, 0o660] {
            let error = configError(text, mode: mode)
            #expect(error?.line == 4)
            #expect(error?.message.contains("others can read this file (mode 0" + String(mode, radix: 8) + ")") == true)
            #expect(error?.message.contains("chmod 600 config.toml") == true)
        }
        #expect(configError(text, mode: 0o600) == nil)
        #expect(configError(text, mode: 0o400) == nil)
        // Without AES keys any mode will do.
        #expect(configError("[ui]\ncolor = \"never\"", mode: 0o644) == nil)
    }
}

@Suite("Config: the file")
struct ConfigFileTests {
    func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "ykterm-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    func write(_ text: String, to path: String, mode: Int) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    @Test func pathFollowsXDG() {
        #expect(
            Config.defaultPath(environment: ["XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"])
                == "/x/cfg/ykterm/config.toml")
        #expect(Config.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.config/ykterm/config.toml")
        // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
        #expect(
            Config.defaultPath(environment: ["XDG_CONFIG_HOME": "cfg", "HOME": "/home/u"])
                == "/home/u/.config/ykterm/config.toml")
        #expect(
            Config.defaultPath(environment: ["YKTERM_CONFIG": "/etc/y.toml", "XDG_CONFIG_HOME": "/x"]) == "/etc/y.toml")
    }

    @Test func missingFileGivesTheDefaults() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try Config.load(path: dir + "/none.toml") == Config())
    }

    @Test func fileModeIsChecked() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/config.toml"
        try write("[otp.aes_keys]\nvvccccdbhfhh = \"00112233445566778899aabbccddeeff\"\n", to: path, mode: 0o644)
        #expect(throws: ConfigError.self) { try Config.load(path: path) }
        do {
            _ = try Config.load(path: path)
        } catch {
            #expect(
                error.description == "\(path):1: [otp.aes_keys] holds secret keys, but others can read this file "
                    + "(mode 0644); run: chmod 600 \(path)")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(try Config.load(path: path).otp.aesKeys.keys.sorted() == ["vvccccdbhfhh"])
    }

    @Test func unreadableOrStrangeFilesAreErrors() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A directory where the file should be.
        try FileManager.default.createDirectory(atPath: dir + "/d.toml", withIntermediateDirectories: false)
        #expect(throws: ConfigError(path: dir + "/d.toml", line: nil, message: "is not a regular file")) {
            try Config.load(path: dir + "/d.toml")
        }
        // Not UTF-8.
        try Data([0x5B, 0xFF, 0x5D]).write(to: URL(fileURLWithPath: dir + "/bin.toml"))
        #expect(throws: ConfigError(path: dir + "/bin.toml", line: nil, message: "is not valid UTF-8")) {
            try Config.load(path: dir + "/bin.toml")
        }
        // A syntax error keeps its line.
        try write("[ui]\n\ncolor = never\n", to: dir + "/bad.toml", mode: 0o644)
        do {
            _ = try Config.load(path: dir + "/bad.toml")
            Issue.record("a bad file was accepted")
        } catch {
            #expect(error.line == 3)
            #expect(error.description.hasPrefix(dir + "/bad.toml:3: "))
        }
    }
}

@Suite("Config: OTP parsers")
struct OTPParserTests {
    static let pattern = #"https://otp\.example\.com/\?otp=([cbdefghijklnrtuv]{32,64})"#
    static let otp = "ccccccdbhfhhbhtbjvkkvrvjtnhclclklkfvrucceedv"

    @Test func typedTextGoesThroughTheParsers() {
        var o = Config.OTP()
        o.parsers = [Config.OTPPattern(#"^token:(\d{6})$"#)!, Config.OTPPattern(Self.pattern)!]
        #expect(o.extract(fromTyped: "https://otp.example.com/?otp=" + Self.otp) == Self.otp)
        #expect(o.extract(fromTyped: "token:123456") == "123456")
        // No parser matches: the text as typed.
        #expect(o.extract(fromTyped: Self.otp) == Self.otp)
    }

    @Test func ndefRecordsGoThroughTheParsersThenTheDefault() throws {
        var o = Config.OTP()
        o.parsers = [Config.OTPPattern(Self.pattern)!]
        #expect(try o.extract(from: [.uri("https://otp.example.com/?otp=" + Self.otp)]) == Self.otp)
        // The standard YubiKey URI still works when no parser matches.
        #expect(try o.extract(from: [.uri(NDEFOTP.defaultURIPrefix + Self.otp)]) == Self.otp)
        #expect(throws: (any Error).self) { try o.extract(from: []) }
    }

    @Test func otpTabCapturesGoThroughTheParsers() {
        var state = AppState(now: 1000)
        state.otp.parsers = [Config.OTPPattern(Self.pattern)!]
        capture(&state, "https://otp.example.com/?otp=" + Self.otp, source: .typed)
        #expect(state.otp.captures.first?.kind == .yubicoOTP)
        #expect(state.otp.captures.first?.publicID == "ccccccdbhfhh")
        // Without parsers the URL is taken as it is.
        var plain = AppState(now: 1000)
        capture(&plain, "https://otp.example.com/?otp=" + Self.otp, source: .typed)
        #expect(plain.otp.captures.first?.kind != .yubicoOTP)
    }

    @Test func patternsNeedOneGroup() {
        #expect(Config.OTPPattern("(a)(b)") == nil)
        #expect(Config.OTPPattern("[") == nil)
        #expect(Config.OTPPattern("x(y)")?.firstMatch(in: "axyz") == "y")
    }
}

@Suite("Strings: one loader")
struct StringTablesLoaderTests {
    @Test func placeholdersAreFilledOnce() {
        #expect(StringTables.fill("{a} and {b}", ["a": "{b}", "b": "B"]) == "{b} and B")
        #expect(StringTables.fill("{not a name} {1x} {a}", ["a": "1"]) == "{not a name} {1x} 1")
        #expect(StringTables.placeholders(in: "{a} {b_2} {} {3}") == ["a", "b_2"])
    }

    @Test func configuredLanguageWinsOverTheLocale() {
        #expect(StringTables.language(environment: ["LANG": "de_DE.UTF-8"], configured: .en) == "en")
        #expect(StringTables.language(environment: ["LANG": "C"], configured: .de) == "de")
        #expect(StringTables.language(environment: ["LANG": "C.UTF-8"], configured: nil) == "en")
        #expect(Language.fromLocale("de_AT@euro") == .de)
        #expect(Language.fromLocale("POSIX") == nil)
    }

    @Test func brokenTablesFallBackAndSayWhy() throws {
        let dir = NSTemporaryDirectory() + "ykterm-strings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(#"{"hello": "Hello {name}"}"#.utf8).write(to: URL(fileURLWithPath: dir + "/en.json"))
        try Data(#"{"hello": 5}"#.utf8).write(to: URL(fileURLWithPath: dir + "/de.json"))
        let tables = StringTables.load(language: "de", directories: [dir + "/missing", dir])
        #expect(tables.format("hello", ["name": "Ann"]) == "Hello Ann")
        #expect(tables.problem?.contains("must be a string") == true)
        #expect(throws: StringsError.self) { try StringTables.validated(language: "de", directories: [dir]) }
        let none = StringTables.load(language: "en", directories: [dir + "/missing"])
        #expect(none.format("hello", [:]) == "hello")
        #expect(none.problem?.contains("YKTERM_RESOURCES") == true)
        #expect(
            StringTables.directories(environment: ["YKTERM_RESOURCES": "/r"], executablePath: "/p/bin/ykterm")
                .prefix(2) == ["/r/strings", "/p/share/ykterm/strings"])
    }

    @Test func shippedTablesAreComplete() throws {
        let english = try StringTables.validated(language: "en")
        let german = try StringTables.validated(language: "de")
        #expect(Set(english.primary.keys) == Set(german.primary.keys))
        #expect(german.format("status.keyRemoved", ["name": "YubiKey"]) == "YubiKey wurde entfernt")
    }
}

@Suite("Config: the shipped example")
struct ConfigExampleTests {
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../Resources/config.example.toml").standardized.path

    @Test func exampleParsesToTheDefaults() throws {
        #expect(try Config.load(path: Self.path) == Config())
    }

    @Test func exampleWithEverythingUncommentedIsValid() throws {
        let text = try String(contentsOfFile: Self.path, encoding: .utf8)
        // Uncomment the settings ("# key = value" lines and the table header).
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            if let m = line.wholeMatch(of: /# ([a-z_-]+ = .*?)(\s+#.*)?/) { return String(m.1) }
            if line == "# [otp.aes_keys]" { return "[otp.aes_keys]" }
            return String(line)
        }.joined(separator: "\n")
        let config = try Config.parse(text: uncommented, path: "example", mode: 0o600)
        #expect(config.key.serial == 28_123_456)
        #expect(config.colors[.expiring] == .magenta)
        #expect(config.keyBindings.key(for: .copy) == "y")
        #expect(config.otp.parsers.count == 1)
        #expect(config.otp.aesKeys.count == 1)
    }
}
