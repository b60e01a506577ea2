import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import KeyKit

/// `piv pin ...`, `piv puk ...`, `piv management-key ...`: the secrets that guard the PIV application.
extension PIVCommand {
    struct PINCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pin", abstract: "Change the PIN, or unblock it with the PUK.",
            subcommands: [Change.self, Unblock.self])

        struct Change: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "change", abstract: "Change the PIN (current PIN, then the new one: 6 to 8 characters).")
            @OptionGroup var key: KeyOptions

            func run() async throws {
                try await PIVSecrets.change(
                    words("piv.field.currentPIN"), then: words("piv.field.newPIN"),
                    again: words("cli.prompt.repeatNewPIN"), done: words("cli.piv.pinChanged")
                ) { try await key.piv.changePIN(current: $0, new: $1) }
            }
        }

        struct Unblock: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "unblock",
                abstract: "Set a new PIN with the PUK, which also unblocks it (PUK, then the new PIN).")
            @OptionGroup var key: KeyOptions

            func run() async throws {
                try await PIVSecrets.change(
                    words("piv.field.puk"), then: words("piv.field.newPIN"), again: words("cli.prompt.repeatNewPIN"),
                    done: words("cli.piv.pinUnblocked")
                ) { try await key.piv.unblockPIN(puk: $0, new: $1) }
            }
        }
    }

    struct PUKCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "puk", abstract: "Change the PUK.", subcommands: [Change.self])

        struct Change: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "change", abstract: "Change the PUK (current PUK, then the new one: 6 to 8 characters).")
            @OptionGroup var key: KeyOptions

            func run() async throws {
                try await PIVSecrets.change(
                    words("piv.field.currentPUK"), then: words("piv.field.newPUK"),
                    again: words("cli.piv.prompt.repeatNewPUK"), done: words("cli.piv.pukChanged")
                ) { try await key.piv.changePUK(current: $0, new: $1) }
            }
        }
    }

    struct ManagementKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "management-key", abstract: "Change the management key.", subcommands: [Change.self])

        struct Change: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "change",
                abstract: "Change the management key (current key unless it is the default, then the new one, in hex).",
                discussion: """
                    With --generate a random key is made and printed once: keep it, nothing else knows it. AES keys \
                    need firmware 5.4 or later.
                    """)
            @OptionGroup var key: KeyOptions
            @Option(
                name: [.short, .long],
                help: ArgumentHelp(
                    "TDES, AES128, AES192 or AES256. Default: the key's current algorithm.", valueName: "ALGORITHM"))
            var algorithm: String?
            @Flag(name: .long, help: "Make a random key and print it, instead of reading one.") var generate = false
            @Flag(name: .long, help: "Ask for a touch whenever the new key is used.") var touch = false

            func validate() throws {
                if let algorithm, PIV.Algorithm(name: algorithm)?.isManagementKey != true {
                    throw ValidationError(
                        words(
                            "cli.option.oneOf",
                            [
                                "option": "--algorithm", "allowed": oneOf(["TDES", "AES128", "AES192", "AES256"]),
                                "value": algorithm,
                            ]))
                }
            }

            func run() async throws {
                let prompt = Prompt()
                let algorithm = algorithm.flatMap { PIV.Algorithm(name: $0) }
                let set = try await PIVAnswers.asking(prompt) { answers in
                    try await key.piv.changeManagementKey(
                        algorithm: algorithm,
                        to: generate ? .generate : .given(answers.newManagementKey),
                        requireTouch: touch, managementKey: answers.managementKey)
                }
                if generate { out(Hex.encode(set.copyBytes())) }
                set.wipe()
                warn(words("cli.piv.managementKeyChanged"))
            }
        }
    }
}
