import ArgumentParser
import Foundation
import KeyKit
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

struct Ykterm: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "ykterm",
        abstract: "A terminal authenticator for YubiKeys and keys that speak the same protocols.",
        discussion: """
        Keys are reached through pcscd (USB keys and NFC readers). Choose one with --reader or --device \
        (defaults from YKTERM_READER and YKTERM_DEVICE), or use --virtual for the built-in virtual key.

        Exit status: 0 ok, 1 the operation failed, 2 usage or bad input, 3 no key found.
        """,
        version: version,
        subcommands: [ListCommand.self, OATHCommand.self, OTPCommand.self, FIDOCommand.self, U2FCommand.self, APDUCommand.self, DoctorCommand.self, MonitorCommand.self,
                      VirtualKeyCommand.self]
    )

    @OptionGroup var key: KeyOptions

    @Option(name: .long, help: ArgumentHelp(
        "Colours in the TUI: auto, always or never (NO_COLOR set means never).", valueName: "WHEN"))
    var color: CursesConfiguration.ColorMode = .auto

    /// With no subcommand: the TUI.
    func run() async throws {
        try TUI.run(options: key, colors: color, clipboard: Clipboard(method: .auto), localize: TUI.localizer())
    }

    /// Parses and runs; returns the exit status.
    static func main(arguments: [String]) async -> Int32 {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return ExitStatus.ok
        } catch {
            return report(error)
        }
    }

    static func report(_ error: Error) -> Int32 {
        let (status, message) = classify(error)
        if !message.isEmpty {
            let stream = status == ExitStatus.ok ? FileHandle.standardOutput : FileHandle.standardError
            stream.write(Data((message.hasSuffix("\n") ? message : message + "\n").utf8))
        }
        return status
    }

    static func classify(_ error: Error) -> (Int32, String) {
        switch error {
        case let e as YktermError:
            return (e.status, "ykterm: " + e.message)
        case let e as KeyFinderError:
            if case .ambiguous = e { return (ExitStatus.usage, "ykterm: \(e)") }
            return (ExitStatus.noKey, "ykterm: \(e)")
        case let e as OATHError:
            switch e {
            case .invalidCredential, .invalidURI: return (ExitStatus.usage, "ykterm: \(e)")
            default: return (ExitStatus.failed, "ykterm: \(e)")
            }
        case let e as FIDOSessionError:
            switch e {
            case .pinTooShort, .pinTooLong, .pinHasNUL: return (ExitStatus.usage, "ykterm: \(e)")
            default: return (ExitStatus.failed, "ykterm: \(e)")
            }
        case let e as CTAPError:
            return (ExitStatus.failed, "ykterm: \(e)")
        case let e as FIDOTransportError:
            return (ExitStatus.failed, "ykterm: \(e)")
        case let e as SmartCardError:
            switch e {
            case .serviceUnavailable, .noReaders: return (ExitStatus.noKey, "ykterm: \(e)")
            default: return (ExitStatus.failed, "ykterm: \(e)")
            }
        case let e as ExitCode:
            return (e.rawValue, "")
        default:
            let code = exitCode(for: error)
            let text = fullMessage(for: error)
            if code == .success { return (ExitStatus.ok, text) }
            if code == .validationFailure { return (ExitStatus.usage, text) }
            if isArgumentParserError(error) { return (ExitStatus.usage, text) }
            return (ExitStatus.failed, "ykterm: \(error)")
        }
    }

    private static func isArgumentParserError(_ error: Error) -> Bool {
        String(reflecting: type(of: error)).hasPrefix("ArgumentParser")
    }
}

/// Writes a line to standard output at once (unbuffered, so pipes see each line as it is made).
func out(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// Writes a line to standard error.
func warn(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// JSON with the key order given, pretty-printed, for `--json` outputs.
func printJSON(_ value: Any) throws {
    let data = try JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted, .sortedKeys,
                                                                          .withoutEscapingSlashes])
    FileHandle.standardOutput.write(data)
    FileHandle.standardOutput.write(Data("\n".utf8))
}
