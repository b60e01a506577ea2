import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

struct APDUCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apdu",
        abstract: "Send raw command APDUs to a key and print the answers.",
        discussion: """
            Each HEX argument is one command APDU; spaces and colons between hex digits are allowed \
            (quote them). Without arguments, commands are read from standard input, one per line \
            ('#' starts a comment). For each command the response data is printed in hex, then \
            SW=XXXX with its meaning. 61xx answers are followed with GET RESPONSE and 6Cxx answers \
            re-sent with the right Le unless --no-chain is given. Malformed hex exits with status 2 \
            before anything is sent.
            """)

    @OptionGroup var key: KeyOptions

    @Argument(help: ArgumentHelp("Command APDUs in hex.", valueName: "HEX"))
    var commands: [String] = []

    @Flag(name: .long, help: "Do not follow 61xx with GET RESPONSE or re-send on 6Cxx.")
    var noChain = false

    @Flag(name: [.short, .long], help: "Show every exchange on the wire ('>' command, '<' answer).")
    var verbose = false

    @Flag(name: .long, help: "Exit with status 1 when any answer is not SW=9000.")
    var strict = false

    /// Parses one line: nil for blank lines and comments.
    static func parse(_ line: String) throws -> [UInt8]? {
        let text =
            line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first
            .map(String.init)?.trimmingSpaces ?? ""
        if text.isEmpty { return nil }
        let bytes: [UInt8]
        do {
            bytes = try Hex.decode(text)
        } catch {
            throw YktermError.usage(invalid(text, error))
        }
        do {
            _ = try APDU(parsing: bytes)
        } catch {
            throw YktermError.usage(invalid(text, error))
        }
        return bytes
    }

    /// What is wrong with a command the user gave, quoting at most an excerpt of it.
    private static func invalid(_ text: String, _ error: any Error) -> String {
        StringTables.load().text(
            UIText("cli.apdu.invalid", ["detail": explained(error).1], nested: ["apdu": .excerpt(text)]))
    }

    func run() async throws {
        let interactive = commands.isEmpty && isatty(STDIN_FILENO) == 1
        var queue = [[UInt8]]()
        if !commands.isEmpty {
            queue = try commands.compactMap(APDUCommand.parse)
            guard !queue.isEmpty else { throw YktermError.usage(words("cli.apdu.none")) }
        } else if !interactive {
            var lineNumber = 0
            while let line = readLine() {
                lineNumber += 1
                do {
                    if let c = try APDUCommand.parse(line) { queue.append(c) }
                } catch let e as YktermError {
                    throw YktermError.usage(words("cli.apdu.line", ["line": String(lineNumber), "problem": e.message]))
                }
            }
        }
        // Typed commands wait for the user: the key is not held between them, each is a transaction of its own.
        var observer: (@Sendable (APDUExchange) -> Void)?
        if verbose {
            observer = { exchange in
                out("> " + exchange.command.hex.uppercased())
                out("< " + exchange.response.hex.uppercased())
            }
        }
        let chaining: APDUOperations.Chaining = noChain ? .none : .standard
        let (sawFailure, sawBadInput) = try await APDUOperations(key.choice.opener(calls: .queued)).withConsole(
            perCommand: interactive
        ) { console in
            var sawFailure = false
            var sawBadInput = false
            if interactive {
                warn(words("cli.apdu.typeCommands"))
                while let line = readLine() {
                    do {
                        guard let c = try APDUCommand.parse(line) else { continue }
                        sawFailure =
                            try await show(console.send(c, chaining: chaining, observer: observer)) || sawFailure
                    } catch let e as YktermError {
                        warn("ykterm: \(e.message)")
                        sawBadInput = true
                    }
                }
            } else {
                for c in queue {
                    sawFailure = try await show(console.send(c, chaining: chaining, observer: observer)) || sawFailure
                }
            }
            return (sawFailure, sawBadInput)
        }
        if sawBadInput { throw ExitCode(ExitStatus.usage) }
        if strict && sawFailure { throw ExitCode(ExitStatus.failed) }
    }

    /// Prints one command's answer: its data in hex, then its status with what it means; true when the status was
    /// not 9000.
    private func show(_ answer: APDUOperations.Answer) -> Bool {
        let response = answer.response
        if !response.data.isEmpty { out(response.data.hex.uppercased()) }
        out(
            StringTables.load().text(
                UIText(
                    "apdu.status", ["sw": response.status.hexString],
                    nested: ["meaning": ErrorExplanation.statusText(response.status)])))
        return !response.status.isSuccess
    }
}
