// The floor of a Swift program that parses its arguments with ArgumentParser, in `make bench`: a root command with
// one option and a version, a subcommand, and a sub-subcommand with a flag and an argument — the shape of
// `ykterm oath code`, and nothing else. Built like ykterm's release binary, against the same ArgumentParser objects.
import ArgumentParser
import Glibc

struct Code: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "code")
    @Flag(name: .long) var json = false
    @Argument var query: String?
    func run() { print(json ? "[]" : "code") }
}

struct OATH: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "oath", subcommands: [Code.self])
}

struct Root: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "argparse_floor", version: "argparse_floor 1",
        subcommands: [OATH.self])
    @Option(name: .long) var reader: String?
}

@main
enum Main {
    static func main() {
        do {
            var command = try Root.parseAsRoot(Array(CommandLine.arguments.dropFirst()))
            try command.run()
        } catch {
            print(Root.fullMessage(for: error))
        }
        fflush(nil)
        _exit(0)
    }
}
