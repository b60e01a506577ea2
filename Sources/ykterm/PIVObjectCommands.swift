import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import KeyKit

/// `piv objects export | import | generate`: the PIV data objects as they are, as ykman's `piv objects` has them.
extension PIVCommand {
    struct Objects: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "objects",
            abstract: "Read and write PIV data objects as they are, and generate a CHUID or CCC.",
            discussion: """
                OBJECT is a name as ykman takes it (CHUID, CCC or CAPABILITY, AUTHENTICATION, SIGNATURE, \
                KEY_MANAGEMENT, CARD_AUTH, FINGERPRINTS, SECURITY, FACIAL, PRINTED, KEY_HISTORY, IRIS, DISCOVERY, \
                RETIRED1 to RETIRED20, ATTESTATION; any case, - for _), or the object's identifier in hex (5fc102; \
                the YubiKey keeps objects 5f0000 to 5fffff).
                """,
            subcommands: [Export.self, Import.self, Generate.self])

        struct Export: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "export",
                abstract: "Write a data object's content (the value of its 53 tag) to a file or standard output (-).",
                discussion: """
                    Fingerprints, facial image, printed information and iris images are read after the PIN, which \
                    is asked for when the key wants it.
                    """)

            @OptionGroup var target: PIVObjectOptions
            @Argument(help: ArgumentHelp("The file to write, or - for standard output.", valueName: "FILE"))
            var output: String

            func run() async throws {
                let id = target.object.id
                let content = try await PIVAnswers.asking(Prompt()) { answers in
                    try await target.piv.readObject(id, pin: answers.pin)
                }
                try PIVFiles.write(content, to: output)
                if output != "-" {
                    out(words("cli.piv.objects.exported", ["object": PIVObjectArgument.label(id), "path": output]))
                }
            }
        }

        struct Import: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "import",
                abstract:
                    "Store a file's bytes (or standard input's, with -) as a data object. Needs the management key.",
                discussion: """
                    The bytes are the object's content as they are (the value of its 53 tag); an empty file deletes \
                    the object. With - the data is all of standard input, so a management key that is not the \
                    default cannot come from there: give the data in a file then.
                    """)

            @OptionGroup var target: PIVObjectOptions
            @Argument(help: ArgumentHelp("The file to read, or - for standard input.", valueName: "FILE"))
            var file: String

            func run() async throws {
                let id = target.object.id
                let data = try PIVFiles.read(file)
                try await PIVAnswers.asking(Prompt()) { answers in
                    try await target.piv.writeObject(id, data, managementKey: answers.managementKey)
                }
                out(
                    words(
                        "cli.piv.objects.imported",
                        ["object": PIVObjectArgument.label(id), "count": String(data.count)]))
            }
        }

        struct Generate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "generate",
                abstract: "Make a new CHUID or CCC (as ykman makes them) and store it. Needs the management key.",
                discussion: """
                    CHUID: the non-federal FASC-N, a random GUID and the expiry date 2030-01-01. CCC: a random card \
                    identifier. Either replaces the object there; a new CHUID is how PIV middleware learns that \
                    the card's keys changed.
                    """)

            @OptionGroup var key: KeyOptions
            @Argument(help: ArgumentHelp("chuid or ccc.", valueName: "OBJECT")) var object: PIVObjectArgument

            func run() async throws {
                let id = object.id
                guard let generated = PIVOperations.GeneratedObject(id: id) else {
                    throw YktermError.usage(
                        words("cli.piv.objects.notGenerated", ["object": PIVObjectArgument.label(id)]))
                }
                _ = try await PIVAnswers.asking(Prompt()) { answers in
                    try await key.piv.generateObject(generated, managementKey: answers.managementKey)
                }
                out(words("cli.piv.objects.generated", ["object": PIVObjectArgument.label(id)]))
            }
        }
    }
}

/// The key and the data object of `piv objects export` and `piv objects import`.
struct PIVObjectOptions: ParsableArguments {
    @OptionGroup var key: KeyOptions
    @Argument(help: ArgumentHelp("The object: a name or its identifier in hex.", valueName: "OBJECT"))
    var object: PIVObjectArgument

    /// The PIV operations on the chosen key.
    var piv: PIVOperations { key.piv }
}

/// A PIV data object argument: a name as ykman takes it, or the identifier in hex.
struct PIVObjectArgument: ExpressibleByArgument {
    let id: [UInt8]
    init?(argument: String) {
        guard let id = PIV.ObjectID.named(argument) else { return nil }
        self.id = id
    }
    static var defaultCompletionKind: CompletionKind {
        .list(["ccc"] + PIV.ObjectID.names.map { $0.name.lowercased() })
    }

    /// The identifier in hex, with its name when it has one: 5FC102 (CHUID).
    static func label(_ id: [UInt8]) -> String {
        let hex = Hex.encode(id).uppercased()
        guard let name = PIV.ObjectID.name(of: id) else { return hex }
        return "\(hex) (\(name))"
    }
}
