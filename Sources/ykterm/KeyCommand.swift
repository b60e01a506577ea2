import ArgumentParser
import AuthenticatorModel
import KeyKit

/// `ykterm key`: names for keys ("daily", "backup"), kept by serial number; shown wherever the key is (`list`, the
/// TUI's status line and key switcher, touch prompts) and taken by `--device`.
struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Names for keys (a daily key and its backup), taken by --device and shown wherever the key is.",
        discussion: """
            A name is kept by the key's serial number in ~/.config/ykterm/key-names.json (mode 0600); the key need \
            not be plugged in. Names are up to 32 characters, not digits only (--device would take them for a \
            serial number), without commas, and each belongs to one key.
            """,
        subcommands: [Name.self, Forget.self, Names.self])

    struct Name: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "name", abstract: "Give the key with this serial number a name (or a new one).")

        @Argument(help: ArgumentHelp("The key's serial number (or its current name).", valueName: "SERIAL"))
        var serial: String

        @Argument(help: ArgumentHelp("The name: daily, backup, ...", valueName: "NAME"))
        var name: String

        func run() async throws {
            // Checked here rather than in validate(): ArgumentParser's own errors (an unknown option) come first.
            do {
                _ = try KeyNames.check(name)
            } catch {
                throw YktermError.usage(loadedTables().text(error.text))
            }
            let serial = try KeyChoice.serial(device: serial)
            do {
                let kept = try KeyNames().set(name, for: serial)
                out(words("cli.key.named", ["serial": String(serial), "name": kept]))
            } catch {
                throw YktermError.failed(loadedTables().text(error.text))
            }
        }
    }

    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget", abstract: "Forget the name of the key with this serial number.")

        @Argument(help: ArgumentHelp("The key's serial number (or its name).", valueName: "SERIAL"))
        var serial: String

        func run() async throws {
            let serial = try KeyChoice.serial(device: serial)
            do {
                if let old = try KeyNames().forget(serial) {
                    out(words("cli.key.forgotten", ["serial": String(serial), "name": old]))
                } else {
                    warn(words("cli.key.noName", ["serial": String(serial)]))
                }
            } catch {
                throw YktermError.failed(loadedTables().text(error.text))
            }
        }
    }

    struct Names: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "names", abstract: "The names given to keys, by serial number (plugged in or not).")

        @Flag(name: .long, help: "JSON: an array of objects with serial and name.")
        var json = false

        func run() async throws {
            let names = KeyNames().all().sorted { $0.key < $1.key }
            if json {
                try printJSON(names.map { KeyNameJSON(serial: Int($0.key), name: $0.value) })
                return
            }
            if names.isEmpty { warn(words("cli.key.none")) }
            for (serial, name) in names { out("\(serial)  \(name)") }
        }
    }
}
