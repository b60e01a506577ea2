import ArgumentParser
import TerminalUI

/// The command lines run most often — the TUI, `--version`, `list`, `oath list`, `oath code`, `fido info`,
/// `fido credentials list` — read without ArgumentParser.
///
/// ArgumentParser finds a command's options by reflecting over it and casting each property to its own
/// protocols, and the Swift runtime answers each new type-and-protocol pair by scanning every conformance
/// record in the binary: 14.0 M of the 18.4 M instructions of `ykterm oath code` (callgrind). These few
/// command lines are read here instead, into the same command values ArgumentParser would make, which then
/// run as they always do. Only what is certain is read here: anything else — help, an unknown or repeated
/// option, a value that looks like an option, `--`, a short option, a value that does not convert or
/// validate — returns nil, and ArgumentParser parses the whole command line and says what is wrong as it
/// always has. YktermTests checks that every command line read here gives what ArgumentParser gives.
enum DirectCommandLine {
    /// What a command line asks for, when it is one of the few read here.
    enum Parsed {
        /// `ykterm --version`.
        case version
        case command(any AsyncParsableCommand)
    }

    static func parse(_ arguments: [String]) -> Parsed? {
        if arguments == ["--version"] { return .version }
        let path = arguments.prefix { !$0.hasPrefix("-") && known.contains($0) }
        let rest = Array(arguments[path.count...])
        switch Array(path) {
        case []:
            guard let words = Words(rest, flags: ["virtual"], options: ["reader", "device", "color"]),
                  words.positional == nil, let key = words.key else { return nil }
            var root = Ykterm()
            root.key = key
            if let when = words.values["color"] {
                guard let mode = CursesConfiguration.ColorMode(argument: when) else { return nil }
                root.color = mode
            } else {
                root.color = nil
            }
            return .command(root)
        case ["list"]:
            guard let words = Words(rest, flags: ["virtual", "json", "readers"], options: ["reader", "device"]),
                  words.positional == nil, let key = words.key else { return nil }
            var list = ListCommand()
            list.key = key
            list.json = words.flags.contains("json")
            list.readers = words.flags.contains("readers")
            return .command(list)
        case ["oath", "list"]:
            guard let words = Words(rest, flags: ["virtual", "remember", "json"], options: ["reader", "device"]),
                  words.positional == nil, let options = words.oathOptions else { return nil }
            var list = OATHCommand.List()
            list.options = options
            list.json = words.flags.contains("json")
            return .command(list)
        case ["oath", "code"]:
            guard let words = Words(rest, flags: ["virtual", "remember", "json"], options: ["reader", "device"]),
                  let options = words.oathOptions else { return nil }
            var code = OATHCommand.Code()
            code.options = options
            code.query = words.positional
            code.json = words.flags.contains("json")
            return .command(code)
        case ["fido", "info"]:
            guard let words = Words(rest, flags: ["virtual", "json"], options: ["reader", "device"]),
                  words.positional == nil, let key = words.key else { return nil }
            var info = FIDOCommand.Info()
            info.key = key
            info.json = words.flags.contains("json")
            return .command(info)
        case ["fido", "credentials", "list"]:
            guard let words = Words(rest, flags: ["virtual", "json"], options: ["reader", "device"]),
                  words.positional == nil, let key = words.key else { return nil }
            var list = FIDOCommand.Credentials.List()
            list.key = key
            list.json = words.flags.contains("json")
            return .command(list)
        default:
            return nil
        }
    }

    /// The subcommand names on the paths above.
    private static let known: Set<String> = ["list", "oath", "code", "fido", "info", "credentials"]

    /// A command's words after its path: `--flag`, `--option VALUE` or `--option=VALUE` (each at most once),
    /// and at most one positional argument. nil when anything else is there.
    struct Words {
        var flags = Set<String>()
        var values = [String: String]()
        var positional: String?

        init?(_ words: [String], flags allowedFlags: Set<String>, options allowedOptions: Set<String>) {
            var i = 0
            while i < words.count {
                let word = words[i]
                i += 1
                guard word.hasPrefix("--") else {
                    // A positional argument: one, not empty, not what ArgumentParser might take for an option.
                    guard positional == nil, !word.isEmpty, !word.hasPrefix("-") else { return nil }
                    positional = word
                    continue
                }
                let body = word.dropFirst(2)
                if let equals = body.firstIndex(of: "=") {
                    let name = String(body[..<equals])
                    guard allowedOptions.contains(name), values[name] == nil else { return nil }
                    values[name] = String(body[body.index(after: equals)...])
                } else if allowedFlags.contains(String(body)) {
                    guard flags.insert(String(body)).inserted else { return nil }
                } else if allowedOptions.contains(String(body)) {
                    guard values[String(body)] == nil, i < words.count, !words[i].hasPrefix("-") else { return nil }
                    values[String(body)] = words[i]
                    i += 1
                } else {
                    return nil
                }
            }
        }

        /// --reader, --device and --virtual, as KeyOptions holds them once validated; nil when a value does
        /// not convert or validate (ArgumentParser then says why).
        var key: KeyOptions? {
            var key = KeyOptions()
            key.reader = values["reader"]
            if let device = values["device"] {
                guard let serial = UInt32(argument: device) else { return nil }
                key.device = serial
            } else {
                key.device = nil
            }
            key.virtual = flags.contains("virtual")
            guard (try? key.validate()) != nil else { return nil }
            return key
        }

        var oathOptions: OATHOptions? {
            guard let key else { return nil }
            var options = OATHOptions()
            options.key = key
            options.remember = flags.contains("remember")
            return options
        }
    }
}
