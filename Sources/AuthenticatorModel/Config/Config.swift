import FoundationEssentials
import Glibc
import KeyKit

/// ykterm's configuration file, `$XDG_CONFIG_HOME/ykterm/config.toml` (`~/.config/ykterm/config.toml`
/// when XDG_CONFIG_HOME is unset; `YKTERM_CONFIG` names another file). A missing file gives the defaults.
///
/// ```toml
/// [key]                  # the key to use when several are present (command-line options win)
/// reader = "Yubico"      # a case-insensitive part of the reader name
/// serial = 28123456      # or its serial number
///
/// [ui]
/// clipboard = "auto"     # osc52 | wl-copy | xclip | auto | none
/// color = "auto"         # auto | always | never
/// language = "auto"      # en | de | auto (from LC_ALL, LC_MESSAGES, LANG)
///
/// [colors]               # the TUI's colours by role: black red green yellow blue magenta cyan white, or none
/// code = "cyan"          # roles: see `ThemeRole` (tab, code, expiring, success, warning, error, pinned,
///                        #        bar, bar-low, border)
///
/// [keys]                 # TUI key bindings: one character each, no two actions on one character
/// copy = "c"             # actions: see `Action` (quit, help, keys, device, filter, copy, add, delete,
///                        #          rename, pin, password, refresh, all_keys,
///                        #          compare); 1-7, j and k are reserved
///
/// [oath]
/// all_keys = false       # the OATH tab shows every key's accounts at once (A toggles it and writes it here)
/// add_to_all_keys = false  # the Add dialog's other keys are checked to begin with
///
/// [otp]
/// parsers = ['https://otp\.example\.com/\?otp=([cbdefghijklnrtuv]{32,64})']   # one capture group: the OTP
///
/// [otp.aes_keys]         # Yubico OTP AES keys by public ID (modhex); the file must then be mode 0600
/// vvccccdbhfhh = "00112233445566778899aabbccddeeff"
/// ```
///
/// The file is parsed strictly (see `TOML`): an unknown table or key, a value of the wrong type or out of
/// range is an error naming the file, the line and what is allowed (`ConfigError`).
public struct Config: Sendable, Equatable {
    public var key = KeyDefaults()
    public var ui = UI()
    /// The TUI's key bindings: the defaults with the `[keys]` overrides applied.
    public var keyBindings = KeyBindings()
    public var otp = OTP()
    /// `[oath]`.
    public var oath = OATH()
    /// `[notify]`.
    public var notify = Notify()
    /// `[colors]`: the colour of each role the file names (the others keep the built-in theme).
    public var colors: [ThemeRole: ColorName] = [:]

    public init() {}

    /// The parts of the TUI's theme that `[colors]` can change.
    public enum ThemeRole: String, Sendable, Equatable, CaseIterable {
        /// The selected tab's background.
        case tab
        /// OATH codes.
        case code
        /// A code in its last seconds.
        case expiring
        case success, warning, error
        /// Pinned accounts.
        case pinned
        /// The countdown bar, and the bar in its last seconds.
        case bar
        case barLow = "bar-low"
        /// Dialog borders.
        case border
    }

    /// A terminal colour, or `none` for the terminal's own.
    public enum ColorName: String, Sendable, Equatable, CaseIterable {
        case black, red, green, yellow, blue, magenta, cyan, white, none
    }

    /// `[key]`: which key commands and the TUI use when no option says.
    public struct KeyDefaults: Sendable, Equatable {
        /// A case-insensitive part of the reader name.
        public var reader: String?
        /// A serial number.
        public var serial: UInt32?

        public init(reader: String? = nil, serial: UInt32? = nil) {
            self.reader = reader
            self.serial = serial
        }
    }

    /// `[notify]`: how a touch the key waits for is signalled beyond the words on screen.
    public struct Notify: Sendable, Equatable {
        /// The terminal's bell, and a desktop notification (OSC 777 and OSC 9); both by default.
        public var touch: Set<TouchSignal> = [.bell, .osc]

        public init() {}
    }

    /// `[oath]`: the OATH tab over several keys.
    public struct OATH: Sendable, Equatable {
        /// The tab shows the accounts of every key plugged in at once (the TUI's toggle writes it).
        public var allKeys = false
        /// The Add dialog's check boxes for the other keys start checked.
        public var addToAllKeys = false

        public init() {}
    }

    /// `[ui]`.
    public struct UI: Sendable, Equatable {
        public var clipboard: Clipboard = .auto
        public var color: ColorMode = .auto
        /// nil: "auto", from the locale environment variables.
        public var language: Language?

        public init() {}
    }

    /// How copied codes reach the clipboard; the raw values are those of TerminalUI's `ClipboardMethod`.
    public enum Clipboard: String, Sendable, Equatable, CaseIterable {
        case osc52
        case wlCopy = "wl-copy"
        case xclip
        case auto
        case none
    }

    public enum ColorMode: String, Sendable, Equatable, CaseIterable {
        case auto, always, never
    }

    /// `[otp]` and `[otp.aes_keys]`.
    public struct OTP: Sendable, Equatable {
        /// AES keys for decrypting Yubico OTPs, by public ID (lowercase modhex).
        public var aesKeys: [String: AESKey] = [:]
        /// Extra patterns that find an OTP in NDEF records or typed text, tried in order.
        public var parsers: [OTPPattern] = []

        public init() {}

        /// The OTP in an NDEF message: the first of `parsers` that matches a URI or text record, else what
        /// `NDEFOTP.extract` finds by default (`https://my.yubico.com/yk/#OTP`, a text record).
        public func extract(from records: [NDEFRecord]) throws -> String {
            for parser in parsers {
                if let otp = try? NDEFOTP.extract(from: records, pattern: parser.pattern) { return otp }
            }
            return try NDEFOTP.extract(from: records)
        }

        /// The OTP in typed text: the capture of the first of `parsers` that matches, else the text itself.
        public func extract(fromTyped text: String) -> String {
            for parser in parsers {
                if let otp = parser.firstMatch(in: text) { return otp }
            }
            return text
        }
    }

    /// A 16-byte AES key. Its description never shows the key.
    public struct AESKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
        public let bytes: [UInt8]

        public init?(bytes: [UInt8]) {
            guard bytes.count == 16 else { return nil }
            self.bytes = bytes
        }

        public var description: String { "AESKey(<redacted>)" }
        public var debugDescription: String { description }
    }

    /// A regular expression with exactly one capture group, the OTP; checked when the file is loaded.
    public struct OTPPattern: Sendable, Equatable {
        public let pattern: String

        /// nil when `pattern` does not compile or does not have exactly one capture group.
        public init?(_ pattern: String) {
            guard OTPPattern.problem(with: pattern) == nil else { return nil }
            self.pattern = pattern
        }

        /// Why `pattern` cannot be used, or nil.
        static func problem(with pattern: String) -> String? {
            guard UserPattern.compile(pattern) != nil else { return "is not a valid regular expression" }
            let groups = UserPattern.captureGroups(in: pattern)
            if groups != 1 {
                return "must have exactly one capture group (the OTP), not \(groups)"
            }
            return nil
        }

        /// The text of the capture group in the first match in `text`, or nil.
        public func firstMatch(in text: String) -> String? {
            guard let regex = UserPattern.compile(pattern) else { return nil }
            return UserPattern.firstCapture(of: regex, in: text)
        }
    }
}

/// A config file that cannot be used: `PATH:LINE: message` (or `PATH: message` when no line applies).
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int?
    public var message: String

    public init(path: String, line: Int?, message: String) {
        self.path = path
        self.line = line
        self.message = message
    }

    public var description: String {
        line.map { "\(path):\($0): \(message)" } ?? "\(path): \(message)"
    }
}

extension Config {
    /// The longest config file read (a config file is a few hundred bytes).
    static let maxSize = 1 << 20

    /// The file ykterm reads: `YKTERM_CONFIG` when set and not empty, else
    /// `$XDG_CONFIG_HOME/ykterm/config.toml` (an absolute XDG_CONFIG_HOME only, as the XDG spec says),
    /// else `$HOME/.config/ykterm/config.toml`.
    public static func defaultPath(environment: [String: String]) -> String {
        if let path = environment["YKTERM_CONFIG"], !path.isEmpty { return path }
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg + "/ykterm/config.toml" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? PathString.homeDirectory()
        return home + "/.config/ykterm/config.toml"
    }

    /// `defaultPath(environment:)` for this process's environment.
    public static var defaultPath: String { defaultPath(environment: ProcessInfo.processInfo.environment) }

    /// Loads the file at `path` (default: `defaultPath`). A missing file gives the defaults; an unreadable
    /// file, invalid UTF-8, a syntax error or a schema error throws, as does an `[otp.aes_keys]` table in a
    /// file that others can read.
    public static func load(path: String = Config.defaultPath) throws(ConfigError) -> Config {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return Config() }
            throw ConfigError(path: path, line: nil, message: "cannot be read: " + String(cString: strerror(code)))
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw ConfigError(path: path, line: nil, message: "cannot be read: " + String(cString: strerror(errno)))
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw ConfigError(path: path, line: nil, message: "is not a regular file")
        }
        var bytes = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw ConfigError(path: path, line: nil, message: "cannot be read: " + String(cString: strerror(errno)))
            }
            if n == 0 { break }
            bytes += buffer[0..<n]
            guard bytes.count <= maxSize else {
                throw ConfigError(path: path, line: nil, message: "is larger than \(maxSize / 1024) KiB")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError(path: path, line: nil, message: "is not valid UTF-8")
        }
        return try parse(text: text, path: path, mode: UInt32(st.st_mode & 0o7777))
    }

    /// Parses config text. `path` only names the file in errors. `mode` is the file's permission bits, for the
    /// check that a file with AES keys is private; nil skips that check (text that is not from a file).
    public static func parse(text: String, path: String, mode: UInt32? = nil) throws(ConfigError) -> Config {
        let tables: [TOML.Table]
        do {
            tables = try TOML.parse(text)
        } catch {
            throw ConfigError(path: path, line: error.line, message: error.message)
        }
        var schema = ConfigSchema(path: path, mode: mode)
        for table in tables {
            try schema.apply(table)
        }
        return try schema.finish()
    }
}
