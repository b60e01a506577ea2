import ArgumentParser
import AuthenticatorModel
import CBuildInfo
import FoundationEssentials
import Glibc
import KeyKit
import Synchronization
import TerminalUI

/// Exit statuses, as documented in the man page.
enum ExitStatus {
    static let ok: Int32 = 0
    static let failed: Int32 = 1
    static let usage: Int32 = 2
    static let noKey: Int32 = 3
}

/// An error with its exit status and one line for the user.
struct YktermError: Error, CustomStringConvertible {
    var status: Int32
    var message: String

    static func usage(_ message: String) -> YktermError { YktermError(status: ExitStatus.usage, message: message) }
    static func failed(_ message: String) -> YktermError { YktermError(status: ExitStatus.failed, message: message) }

    var description: String { message }
}

extension CursesConfiguration.ColorMode: ExpressibleByArgument {}

struct Ykterm: RequestCommand {
    /// `0.1.0 (abc1234)`: the version (written in one place, Sources/CBuildInfo/include/build_info.h) and the commit
    /// the build was made from; the version alone when the build was not told the commit (a plain `swift build`, a
    /// tree without git).
    static let version = versionString(YKTERM_VERSION, commit: String(cString: ykterm_commit()))

    static func versionString(_ version: String, commit: String) -> String {
        commit.isEmpty ? version : "\(version) (\(commit))"
    }

    /// The configuration ArgumentParser reads: `fullConfiguration`, or while a command line without
    /// `--generate-completion-script` is parsed, the same with a super-command name. ArgumentParser looks for
    /// that flag by parsing the command line twice more, as two commands of its own, unless the root has a
    /// super-command name; that look costs a third of the instructions of `ykterm oath code` (6.4 M of 19.7 M,
    /// callgrind), and finds nothing when the flag is not there. The name is taken away again before anything
    /// (help, usage, error messages) prints it.
    static var configuration: CommandConfiguration {
        parsingWithoutCompletionFlag.load(ordering: .relaxed) ? quickConfiguration : fullConfiguration
    }

    private static let parsingWithoutCompletionFlag = Atomic<Bool>(false)
    private static let quickConfiguration = {
        var c = fullConfiguration
        c._superCommandName = fullConfiguration.commandName
        return c
    }()

    /// `parseAsRoot`, without ArgumentParser's search for `--generate-completion-script` when the command line
    /// does not have it.
    static func parseCommandLine(_ arguments: [String]) throws -> ParsableCommand {
        let quick = !arguments.contains { $0.hasPrefix("--generate-completion-script") }
        parsingWithoutCompletionFlag.store(quick, ordering: .relaxed)
        defer { parsingWithoutCompletionFlag.store(false, ordering: .relaxed) }
        return try parseAsRoot(arguments)
    }

    static let fullConfiguration = CommandConfiguration(
        commandName: "ykterm",
        abstract: "A terminal authenticator for YubiKeys and keys that speak the same protocols.",
        discussion: """
            Keys are reached through pcscd (USB keys and NFC readers). Choose one with --reader or --device \
            (defaults from YKTERM_READER and YKTERM_DEVICE, then the config file), or use --virtual for the \
            built-in virtual key.

            Settings (default key, clipboard, colours, key bindings, language, OTP AES keys and parsers) are read \
            from $XDG_CONFIG_HOME/ykterm/config.toml (~/.config/ykterm/config.toml; YKTERM_CONFIG names another \
            file); a bad file stops ykterm with status 2 and the line at fault. See ykterm(1).

            ykterm --verbose COMMAND (--verbose before the subcommand) writes a redacted trace of every APDU \
            and CTAP message, for bug reports, to $YKTERM_LOG or else ~/.local/state/ykterm/trace.log; \
            YKTERM_LOG=FILE alone does too. PINs, passwords, secrets and codes are left out.

            Exit status: 0 ok, 1 the operation failed, 2 usage or bad input, 3 no key found, 130 Ctrl-C (ended by \
            SIGINT, after cancelling a FIDO request that waits on the key).
            """,
        version: version,
        subcommands: [
            ListCommand.self, InfoCommand.self, OATHCommand.self, OTPCommand.self, FIDOCommand.self, U2FCommand.self,
            PIVCommand.self,
            OpenPGPCommand.self,
            HSMAuthCommand.self,
            SSHCommand.self, APDUCommand.self, ConfigCommand.self, KeyCommand.self, DoctorCommand.self,
            MonitorCommand.self, RemoteCommand.self,
            VirtualKeyCommand.self,
        ]
    )

    @OptionGroup var key: KeyOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Colours in the TUI: auto, always or never (NO_COLOR set means never). Default: the config file's, else auto.",
            valueName: "WHEN"))
    var color: CursesConfiguration.ColorMode?

    /// The command line's values, as DirectCommandLine also reads them without ArgumentParser.
    var request: Request { Request(key: key.choice, color: color) }

    /// With no subcommand: the TUI, set up from the config file (options win).
    struct Request: CommandRequest, Equatable, Sendable {
        var key: KeyChoice
        var color: CursesConfiguration.ColorMode?

        func run() async throws {
            let config = LoadedConfig.current
            try TUI.run(
                options: key, colors: color ?? config.colorMode, clipboard: Clipboard(method: config.clipboardMethod),
                localize: TUI.localizer(), aesKeys: config.aesKeyBytes, config: config)
        }
    }

    /// --device A,B is for the commands that work on several keys (`oath add`); the others take one key.
    static func refuseDeviceList(_ command: any ParsableCommand, _ arguments: [String]) throws {
        guard !(command is OATHCommand.Add) else { return }
        var values = [String]()
        for (i, a) in arguments.enumerated() {
            if a == "--" { break }
            if a == "--device", i + 1 < arguments.count { values.append(arguments[i + 1]) }
            if a.hasPrefix("--device=") { values.append(String(a.dropFirst("--device=".count))) }
        }
        if values.contains(where: { $0.contains(",") }) { throw ValidationError(words("cli.device.one")) }
    }

    /// Parses and runs; returns the exit status.
    static func main(arguments: [String]) async -> Int32 {
        do {
            var arguments = arguments
            let verbose = takeVerbose(&arguments)
            TouchNotice.command.withLock { $0 = commandPath(arguments).joined(separator: " ") }
            switch DirectCommandLine.parse(arguments) {
            case .version?:
                StandardStream.write(version + "\n", to: 1)
            case .request(let request)?:
                try LoadedConfig.load()
                try await traced(request.commandName, verbose: verbose) { try await request.run() }
            case nil:
                let command = try parseCommandLine(arguments)
                try refuseDeviceList(command, arguments)
                // The config file, before anything runs; `doctor` reports a bad one instead of stopping, and
                // help (ArgumentParser's own command) needs none.
                if command is DoctorCommand {
                    try? LoadedConfig.load()
                } else if !_typeName(type(of: command)).hasPrefix("ArgumentParser.") {
                    try LoadedConfig.load()
                }
                try await traced(type(of: command)._commandName, verbose: verbose) { try await execute(command) }
            }
            return ExitStatus.ok
        } catch let interrupted as FIDOInterrupt.Interrupted {
            FIDOInterrupt.end(interrupted)
        } catch {
            return report(error)
        }
    }

    /// The subcommand names in `arguments` ("fido credentials delete"), for what a touch notice says it is for.
    static func commandPath(_ arguments: [String]) -> [String] {
        var level = fullConfiguration.subcommands
        var path = [String]()
        for word in arguments {
            guard let next = level.first(where: { $0._commandName == word || $0.configuration.aliases.contains(word) })
            else { continue }
            path.append(word)
            level = next.configuration.subcommands
        }
        return path
    }

    static func execute(_ parsed: ParsableCommand) async throws {
        var command = parsed
        if var asyncCommand = command as? AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    }

    /// Removes a `--verbose` given before the subcommand and says whether there was one. It is taken out
    /// before parsing, not declared as an option, because a root option would also capture the `--verbose`
    /// of subcommands that have their own (`ykterm apdu --verbose`).
    static func takeVerbose(_ arguments: inout [String]) -> Bool {
        guard arguments.contains("--verbose") else { return false }
        let names = Set(configuration.subcommands.map { $0._commandName })
        let end = arguments.firstIndex { names.contains($0) || $0 == "--" } ?? arguments.endIndex
        guard let i = arguments[..<end].firstIndex(of: "--verbose") else { return false }
        arguments.remove(at: i)
        return true
    }

    /// Runs `body` inside the trace of `--verbose` or `YKTERM_LOG=FILE`, when there is one; `command` names
    /// the command in the trace's first line.
    static func traced(
        _ command: @autoclosure () -> String, verbose: Bool,
        _ body: () async throws -> Void
    ) async throws {
        guard let path = WireTracer.path(verbose: verbose, environment: ProcessEnvironment.current) else {
            return try await body()
        }
        let tracer: WireTracer
        do {
            tracer = try WireTracer.open(path: path)
        } catch {
            throw YktermError.usage(error.description)
        }
        if verbose { warn("ykterm: " + words("cli.verbose.trace", ["path": path])) }
        tracer.logger.info("ykterm \(version) \(command()), pid \(getpid())")
        try await tracer.run(body)
    }

    static func report(_ error: Error) -> Int32 {
        let (status, message) = classify(error)
        if !message.isEmpty {
            let shown = VisibleText.escaped(message, keepingLineBreaks: true)
            StandardStream.write(shown.hasSuffix("\n") ? shown : shown + "\n", to: status == ExitStatus.ok ? 1 : 2)
        }
        return status
    }

    /// The exit status and the line for `error`: ykterm's own and the argument parser's as they are, every
    /// other through the one explanation table (`ErrorExplanation`), in the user's language.
    static func classify(_ error: Error) -> (Int32, String) {
        switch error {
        case let e as YktermError:
            return (e.status, "ykterm: " + e.message)
        case let e as ExitCode:
            return (e.rawValue, "")
        default:
            if isArgumentParserError(error) || error is ValidationError {
                let code = exitCode(for: error)
                let text = fullMessage(for: error)
                return (code == .success ? ExitStatus.ok : ExitStatus.usage, text)
            }
            let (kind, text) = explained(error)
            return (exitStatus(kind), "ykterm: " + text)
        }
    }

    static func exitStatus(_ kind: ErrorKind) -> Int32 {
        switch kind.exit {
        case .failed: return ExitStatus.failed
        case .usage: return ExitStatus.usage
        case .noKey: return ExitStatus.noKey
        }
    }

    private static func isArgumentParserError(_ error: Error) -> Bool {
        String(reflecting: type(of: error)).hasPrefix("ArgumentParser")
    }
}

/// A sentence from the string tables in the user's language (`StringTables`), as the TUI words it.
func words(_ key: String, _ arguments: [String: String] = [:]) -> String {
    loadedTables().text(UIText(key, arguments))
}

/// The language whose tables `loadedTables` read last, and those tables.
private let tablesRead = Mutex<(language: String, tables: StringTables)?>(nil)

/// The string tables in the user's language, read once per language (a command's messages are many lines:
/// `piv info` words each field).
func loadedTables() -> StringTables {
    let language = StringTables.language()
    return tablesRead.withLock { read in
        if let read, read.language == language { return read.tables }
        let tables = StringTables.load(language: language)
        read = (language, tables)
        return tables
    }
}

/// Refuses `option`, when `given`, together with the first of `others` that is given too ("--csv and --json
/// exclude each other"): the one rule for options that cannot be combined.
func refuseTogether(_ option: String, _ given: Bool, with others: [(name: String, given: Bool)]) throws {
    guard given, let other = others.first(where: \.given) else { return }
    throw ValidationError(words("cli.option.exclude", ["option": option, "other": other.name]))
}

/// "A, B or C" in the user's language.
func oneOf(_ items: [String]) -> String {
    guard let last = items.last, items.count > 1 else { return items.first ?? "" }
    return words("cli.list.or", ["first": items.dropLast().joined(separator: ", "), "last": last])
}

/// What the user is told about `error` (`ErrorExplanation`), in their language.
func explained(_ error: any Error) -> (ErrorKind, String) {
    let explanation = ErrorExplanation(error)
    return (explanation.kind, StringTables.load().text(explanation.text))
}

/// Says that a reader was left out of the choice of key because it did not answer (stuck in pcscd).
@Sendable func warnSilentReader(_ reader: String) {
    warn("ykterm: " + explained(SmartCardError.readerNotAnswering(reader)).1)
}

/// Writes a line to standard output at once (unbuffered, so pipes see each line as it is made).
/// Control characters and bidirectional formatting in it (from an account name, say) are written as visible escapes.
func out(_ text: String) {
    StandardStream.write((VisibleText.escaped(text, keepingLineBreaks: true) + "\n"), to: 1)
}

/// Writes a line to standard error, escaped as `out` does.
func warn(_ text: String) {
    StandardStream.write((VisibleText.escaped(text, keepingLineBreaks: true) + "\n"), to: 2)
}

/// Pretty-printed JSON with sorted keys and unescaped slashes, for `--json` outputs (`printJSON`).
enum JSONText {
    struct Unsupported: Error, CustomStringConvertible {
        let type: String
        var description: String { "cannot write a \(type) as JSON" }
    }

    static func append(_ value: JSONValue, to out: inout String, indent: Int) throws {
        switch value {
        case .null:
            out += "null"
        case .bool(let b):
            out += b ? "true" : "false"
        case .string(let s):
            appendString(s, to: &out)
        case .integer(let n):
            out += String(n)
        case .double(let d):
            guard d.isFinite else { throw Unsupported(type: "non-finite number") }
            out += d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .array(let array):
            if array.isEmpty { out += "[]"; return }
            out += "[\n"
            for (i, item) in array.enumerated() {
                out += String(repeating: "  ", count: indent + 1)
                try append(item, to: &out, indent: indent + 1)
                out += i == array.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: "  ", count: indent) + "]"
        case .object(let object):
            if object.isEmpty { out += "{}"; return }
            out += "{\n"
            let keys = object.keys.sorted()
            for (i, key) in keys.enumerated() {
                out += String(repeating: "  ", count: indent + 1)
                appendString(key, to: &out)
                out += " : "
                try append(object[key]!, to: &out, indent: indent + 1)
                out += i == keys.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: "  ", count: indent) + "}"
        }
    }

    /// `value` on one line, without spaces, objects' keys sorted (`monitor --json`: one event a line).
    static func compactLine(_ value: some Encodable) throws -> String {
        var out = ""
        try appendCompact(JSONTree.value(of: value), to: &out)
        return out
    }

    static func appendCompact(_ value: JSONValue, to out: inout String) throws {
        switch value {
        case .array(let array):
            out += "["
            for (i, item) in array.enumerated() {
                if i > 0 { out += "," }
                try appendCompact(item, to: &out)
            }
            out += "]"
        case .object(let object):
            out += "{"
            for (i, key) in object.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                appendString(key, to: &out)
                out += ":"
                try appendCompact(object[key]!, to: &out)
            }
            out += "}"
        default:
            try append(value, to: &out, indent: 0)
        }
    }

    static func appendString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where VisibleText.isUnsafe(scalar):
                // Controls as JSON requires, and DEL, C1 and bidirectional formatting too: the text stays the
                // same for a parser, and a terminal showing the JSON is not driven by it.
                out +=
                    "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
