import ArgumentParser
import TerminalUI

/// The command lines run most often — the TUI, `--version`, `list`, `oath list`, `oath code` (with `--all-keys`
/// too), `fido info`, `fido credentials list` — read without ArgumentParser.
///
/// ArgumentParser finds a command's options by reflecting over it and casting each property to its own
/// protocols, and the Swift runtime answers each new type-and-protocol pair by scanning every conformance
/// record in the binary: 14.0 M of the 18.4 M instructions of `ykterm oath code` (callgrind). These few
/// command lines are read here instead, into the plain value (the command's `Request`) that the
/// ArgumentParser command's `run()` hands its work to, so the same code runs either way; none of
/// ArgumentParser's property wrappers is made, since even making one costs conformance scans. Only what is
/// certain is read here: anything else — help, an unknown or repeated
/// option, a value that looks like an option, `--`, a short option, a value that does not convert or
/// validate — returns nil, and ArgumentParser parses the whole command line and says what is wrong as it
/// always has. YktermTests checks that every command line read here gives what ArgumentParser gives.
enum DirectCommandLine {
    /// What a command line asks for, when it is one of the few read here.
    enum Parsed: Equatable {
        /// `ykterm --version`.
        case version
        case request(Request)
    }

    /// The work of one of the commands read here, with the values of its command line: the same value the
    /// ArgumentParser command's `request` gives, and run by the same code.
    enum Request: Equatable, Sendable {
        case tui(Ykterm.Request)
        case list(ListCommand.Request)
        case oathList(OATHCommand.List.Request)
        case oathCode(OATHCommand.Code.Request)
        case fidoInfo(FIDOCommand.Info.Request)
        case fidoCredentials(FIDOCommand.Credentials.List.Request)

        /// The command's name, as ArgumentParser's `_commandName` gives it (for the trace's first line).
        var commandName: String {
            switch self {
            case .tui: "ykterm"
            case .list, .oathList, .fidoCredentials: "list"
            case .oathCode: "code"
            case .fidoInfo: "info"
            }
        }

        func run() async throws {
            switch self {
            case .tui(let r): try await r.run()
            case .list(let r): try await r.run()
            case .oathList(let r): try await r.run()
            case .oathCode(let r): try await r.run()
            case .fidoInfo(let r): try await r.run()
            case .fidoCredentials(let r): try await r.run()
            }
        }
    }

    static func parse(_ arguments: [String]) -> Parsed? {
        if arguments == ["--version"] { return .version }
        let path = arguments.prefix(while: known)
        let rest = arguments[path.count...]
        let keyOptions = ["reader", "device"]
        let request: Request
        switch Array(path) {
        case []:
            guard let words = Words(rest, flags: ["virtual"], options: keyOptions + ["color"]),
                words.positional == nil, let key = words.key
            else { return nil }
            var color: CursesConfiguration.ColorMode?
            if let when = words.value("color") {
                guard let mode = CursesConfiguration.ColorMode(argument: when) else { return nil }
                color = mode
            }
            request = .tui(Ykterm.Request(key: key, color: color))
        case ["list"]:
            guard let words = Words(rest, flags: ["virtual", "json", "readers"], options: keyOptions),
                words.positional == nil, let key = words.key
            else { return nil }
            request = .list(ListCommand.Request(key: key, json: words.has("json"), readers: words.has("readers")))
        case ["oath", "list"]:
            guard let words = Words(rest, flags: ["virtual", "remember", "json", "all-keys"], options: keyOptions),
                words.positional == nil, let options = words.oathOptions, let allKeys = words.allKeys
            else { return nil }
            request = .oathList(OATHCommand.List.Request(options: options, json: words.has("json"), allKeys: allKeys))
        case ["oath", "code"]:
            guard
                let words = Words(
                    rest, flags: ["virtual", "remember", "json", "all-keys", "single"], options: keyOptions),
                let options = words.oathOptions, let allKeys = words.allKeys,
                !(words.has("single") && (allKeys || words.has("json")))
            else { return nil }
            request = .oathCode(
                OATHCommand.Code.Request(
                    options: options, query: words.positional, json: words.has("json"), allKeys: allKeys,
                    single: words.has("single")))
        case ["fido", "info"]:
            guard let words = Words(rest, flags: ["virtual", "json"], options: keyOptions),
                words.positional == nil, let key = words.key
            else { return nil }
            request = .fidoInfo(FIDOCommand.Info.Request(key: key, json: words.has("json")))
        case ["fido", "credentials", "list"]:
            guard let words = Words(rest, flags: ["virtual", "json"], options: keyOptions),
                words.positional == nil, let key = words.key
            else { return nil }
            request = .fidoCredentials(FIDOCommand.Credentials.List.Request(key: key, json: words.has("json")))
        default:
            return nil
        }
        return .request(request)
    }

    /// The subcommand names on the paths above.
    private static func known(_ word: String) -> Bool {
        switch word {
        case "list", "oath", "code", "fido", "info", "credentials": true
        default: false
        }
    }

    /// A command's words after its path: `--flag`, `--option VALUE` or `--option=VALUE` (each at most once),
    /// and at most one positional argument. nil when anything else is there. Arrays, not sets or
    /// dictionaries: a handful of words, and no hashing (whose first use of a type costs a conformance scan).
    struct Words {
        private var flags = [String]()
        private var values = [(name: String, value: String)]()
        var positional: String?

        init?(_ words: ArraySlice<String>, flags allowedFlags: [String], options allowedOptions: [String]) {
            var words = words[...]
            while let word = words.popFirst() {
                guard word.hasPrefix("--") else {
                    // A positional argument: one, not empty, not what ArgumentParser might take for an option.
                    guard positional == nil, !word.isEmpty, !word.hasPrefix("-") else { return nil }
                    positional = word
                    continue
                }
                let body = word.dropFirst(2)
                if let equals = body.firstIndex(of: "=") {
                    let name = String(body[..<equals])
                    guard allowedOptions.contains(name), value(name) == nil else { return nil }
                    values.append((name, String(body[body.index(after: equals)...])))
                } else if allowedFlags.contains(String(body)) {
                    guard !has(String(body)) else { return nil }
                    flags.append(String(body))
                } else if allowedOptions.contains(String(body)) {
                    guard value(String(body)) == nil, let next = words.popFirst(), !next.hasPrefix("-") else {
                        return nil
                    }
                    values.append((String(body), next))
                } else {
                    return nil
                }
            }
        }

        func has(_ flag: String) -> Bool { flags.contains(flag) }

        func value(_ option: String) -> String? { values.first { $0.name == option }?.value }

        /// --reader, --device and --virtual, as KeyOptions holds them once validated; nil when a value does
        /// not convert or validate (ArgumentParser then says why).
        var key: KeyChoice? {
            var key = KeyChoice(reader: value("reader"), virtual: has("virtual"))
            if let device = value("device") {
                guard let serial = UInt32(argument: device) else { return nil }
                key.device = serial
            }
            guard (try? KeyChoice.validate(device: key.device)) != nil else { return nil }
            return key
        }

        /// --all-keys, nil beside --device or --virtual (ArgumentParser then says why).
        var allKeys: Bool? {
            guard has("all-keys") else { return false }
            return value("device") == nil && !has("virtual") ? true : nil
        }

        var oathOptions: OATHChoice? {
            key.map { OATHChoice(key: $0, remember: has("remember")) }
        }
    }
}
