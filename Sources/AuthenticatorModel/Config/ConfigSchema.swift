import KeyKit

/// Checks parsed TOML tables against the config schema and builds a `Config`, with a line for every error.
struct ConfigSchema {
    let path: String
    let mode: UInt32?
    var config = Config()
    private var bindingOverrides = [Action: Character]()
    private var bindingLines = [Action: Int]()
    private var aesKeysLine: Int?

    /// The tables a file may have, and the keys each may hold (nil: keys are data, as in [otp.aes_keys]).
    static let tables: [(name: String, keys: [String]?)] = [
        ("key", ["reader", "serial"]),
        ("ui", ["clipboard", "color", "language"]),
        ("colors", Config.ThemeRole.allCases.map(\.rawValue)),
        ("keys", Action.allCases.map(\.rawValue)),
        ("otp", ["parsers"]),
        ("otp.aes_keys", nil),
        ("notify", ["touch"]),
        ("oath", ["all_keys", "add_to_all_keys"]),
    ]

    init(path: String, mode: UInt32?) {
        self.path = path
        self.mode = mode
    }

    func error(_ line: Int, _ message: String) -> ConfigError {
        ConfigError(path: path, line: line, message: message)
    }

    mutating func apply(_ table: TOML.Table) throws(ConfigError) {
        let name = table.dottedName
        if table.name.isEmpty {
            if let first = table.entries.first {
                if let error = arrayOfTables(first, in: table) { throw error }
                throw error(
                    first.line,
                    "unknown key \"\(first.key)\" outside any table; keys go under a table: "
                        + ConfigSchema.tables.map { "[\($0.name)]" }.joined(separator: ", "))
            }
            return
        }
        guard let spec = ConfigSchema.tables.first(where: { $0.name == name }) else {
            throw error(
                table.line,
                "unknown table [\(name)]; allowed: "
                    + ConfigSchema.tables.map { $0.name }.joined(separator: ", "))
        }
        if let allowed = spec.keys {
            for entry in table.entries where !allowed.contains(entry.key) {
                if let error = arrayOfTables(entry, in: table) { throw error }
                throw error(
                    entry.line,
                    "unknown key \"\(entry.key)\" in [\(name)]; allowed: "
                        + allowed.joined(separator: ", "))
            }
        }
        for entry in table.entries {
            switch name {
            case "key": try keyEntry(entry)
            case "ui": try uiEntry(entry)
            case "keys": try bindingEntry(entry)
            case "colors":
                config.colors[Config.ThemeRole(rawValue: entry.key)!] = try choice(entry, Config.ColorName.self)
            case "otp": try otpEntry(entry)
            case "notify": try notifyEntry(entry)
            case "oath": try oathEntry(entry)
            default: try aesKeyEntry(entry)
            }
        }
        if name == "otp.aes_keys" { aesKeysLine = table.line }
    }

    mutating func finish() throws(ConfigError) -> Config {
        if let line = aesKeysLine, let mode, mode & 0o077 != 0 {
            throw error(
                line,
                "[otp.aes_keys] holds secret keys, but others can read this file (mode "
                    + octal(mode) + "); run: chmod 600 \(path)")
        }
        do {
            config.keyBindings = try KeyBindings(overrides: bindingOverrides)
        } catch {
            // Point at the line of an override involved in the clash.
            let line: Int
            switch error {
            case .duplicate(_, let a, let b): line = bindingLines[b] ?? bindingLines[a] ?? 0
            case .reserved(let c): line = bindingLines.first { bindingOverrides[$0.key] == c }?.value ?? 0
            }
            throw self.error(line, "[keys]: \(error)")
        }
        return config
    }

    /// The error for `[[name]]` (or `name = [{ ... }]`): an array of tables, which this file has none of.
    private func arrayOfTables(_ entry: TOML.Entry, in table: TOML.Table) -> ConfigError? {
        guard case .array(let items) = entry.value, !items.isEmpty, items.allSatisfy({ $0.value == .table }) else {
            return nil
        }
        let name = (table.name + [entry.key]).joined(separator: ".")
        return error(
            entry.line,
            "[[\(name)]] is an array of tables; the tables are "
                + ConfigSchema.tables.map { "[\($0.name)]" }.joined(separator: ", ") + ", each given once")
    }

    // MARK: Tables

    private mutating func keyEntry(_ entry: TOML.Entry) throws(ConfigError) {
        switch entry.key {
        case "reader":
            let reader = try string(entry)
            guard !reader.trimmingSpaces.isEmpty else {
                throw error(entry.line, "reader must not be empty (leave it out to use any reader)")
            }
            config.key.reader = reader
        default:
            guard case .integer(let n) = entry.value else {
                throw error(entry.line, "serial must be an integer (the key's serial number), not \(entry.value.kind)")
            }
            guard let serial = UInt32(exactly: n) else {
                throw error(entry.line, "serial must be between 0 and \(UInt32.max), not \(n)")
            }
            config.key.serial = serial
        }
    }

    private mutating func uiEntry(_ entry: TOML.Entry) throws(ConfigError) {
        switch entry.key {
        case "clipboard":
            config.ui.clipboard = try choice(entry, Config.Clipboard.self)
        case "color":
            config.ui.color = try choice(entry, Config.ColorMode.self)
        default:
            let value = try string(entry)
            if value == "auto" {
                config.ui.language = nil
            } else if let language = Language(rawValue: value) {
                config.ui.language = language
            } else {
                throw error(
                    entry.line,
                    "language must be one of "
                        + (Language.allCases.map { "\"\($0.rawValue)\"" } + ["\"auto\""]).joined(separator: ", ")
                        + ", not \"\(value)\"")
            }
        }
    }

    /// `touch = "bell,osc"`: the signals, comma-separated, or "none".
    private mutating func notifyEntry(_ entry: TOML.Entry) throws(ConfigError) {
        let allowed = "\"bell,osc\", \"bell\", \"osc\" or \"none\""
        let value = try string(entry)
        if value.trimmingSpaces == "none" {
            config.notify.touch = []
            return
        }
        var signals = Set<TouchSignal>()
        for part in value.split(separator: ",", omittingEmptySubsequences: false) {
            guard let signal = TouchSignal(rawValue: String(part).trimmingSpaces) else {
                throw error(entry.line, "touch must be \(allowed), not \"\(value)\"")
            }
            signals.insert(signal)
        }
        config.notify.touch = signals
    }

    private mutating func oathEntry(_ entry: TOML.Entry) throws(ConfigError) {
        guard case .bool(let on) = entry.value else {
            throw error(entry.line, "\(entry.key) must be true or false, not \(entry.value.kind)")
        }
        if entry.key == "all_keys" { config.oath.allKeys = on } else { config.oath.addToAllKeys = on }
    }

    private mutating func bindingEntry(_ entry: TOML.Entry) throws(ConfigError) {
        let action = Action(rawValue: entry.key)!  // checked against the allowed keys
        let text = try string(entry)
        guard text.count == 1, let c = text.first else {
            throw error(entry.line, "\(entry.key) must be a single character, not \"\(text)\"")
        }
        guard !c.isWhitespace, !c.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw error(
                entry.line,
                "\(entry.key) must be a visible character (Enter, Esc, Tab, space and the "
                    + "arrows keep their fixed meanings)")
        }
        if let other = bindingOverrides.first(where: { $0.value == c }) {
            throw error(
                entry.line,
                "\"\(c)\" is bound to both \(other.key.rawValue) (line "
                    + "\(bindingLines[other.key] ?? 0)) and \(entry.key)")
        }
        bindingOverrides[action] = c
        bindingLines[action] = entry.line
    }

    private mutating func otpEntry(_ entry: TOML.Entry) throws(ConfigError) {
        guard case .array(let items) = entry.value else {
            throw error(
                entry.line, "parsers must be an array of strings (regular expressions), not \(entry.value.kind)")
        }
        var patterns = [Config.OTPPattern]()
        for (n, item) in items.enumerated() {
            guard case .string(let pattern) = item.value else {
                throw error(item.line, "parsers[\(n)] must be a string (a regular expression), not \(item.value.kind)")
            }
            if let problem = Config.OTPPattern.problem(with: pattern) {
                throw error(item.line, "parsers[\(n)] \"\(pattern)\" \(problem)")
            }
            patterns.append(Config.OTPPattern(pattern)!)  // checked just above
        }
        config.otp.parsers = patterns
    }

    private mutating func aesKeyEntry(_ entry: TOML.Entry) throws(ConfigError) {
        let id = entry.key.lowercased()
        guard !id.isEmpty, Modhex.isModhex(id), id.count % 2 == 0, id.count <= 32 else {
            throw error(
                entry.line,
                "\"\(entry.key)\" is not a public ID: 2 to 32 modhex characters "
                    + "(cbdefghijklnrtuv), an even number of them")
        }
        guard config.otp.aesKeys[id] == nil else {
            throw error(entry.line, "public ID \"\(id)\" has two keys")
        }
        guard case .string(let text) = entry.value else {
            throw error(entry.line, "the AES key of \(id) must be a string of 32 hex digits, not \(entry.value.kind)")
        }
        // Never echo the value: it is a secret.
        guard text.count == 32, text.allSatisfy(\.isHexDigit), let bytes = try? Hex.decode(text),
            let key = Config.AESKey(bytes: bytes)
        else {
            throw error(entry.line, "the AES key of \(id) must be 32 hex digits (16 bytes)")
        }
        config.otp.aesKeys[id] = key
    }

    // MARK: Values

    private func string(_ entry: TOML.Entry) throws(ConfigError) -> String {
        guard case .string(let s) = entry.value else {
            throw error(entry.line, "\(entry.key) must be a string, not \(entry.value.kind)")
        }
        return s
    }

    private func choice<T: RawRepresentable & CaseIterable>(_ entry: TOML.Entry, _: T.Type) throws(ConfigError) -> T
    where T.RawValue == String {
        let allowed = T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard case .string(let s) = entry.value else {
            throw error(entry.line, "\(entry.key) must be one of \(allowed), not \(entry.value.kind)")
        }
        guard let value = T(rawValue: s) else {
            throw error(entry.line, "\(entry.key) must be one of \(allowed), not \"\(s)\"")
        }
        return value
    }

    private func octal(_ mode: UInt32) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
