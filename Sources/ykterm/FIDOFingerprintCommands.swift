import ArgumentParser
import AuthenticatorModel
import KeyKit

/// `fido fingerprints`: the fingerprints of a key with a sensor (CTAP 2.1 authenticatorBioEnrollment).
extension FIDOCommand {
    struct Fingerprints: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fingerprints",
            abstract: "Fingerprints on a key with a sensor (YubiKey Bio): list, add, rename, delete.",
            discussion: """
                Every subcommand needs the PIN (a key with a sensor has one before its first fingerprint). A \
                fingerprint is named by its template ID in hex, as `ykterm fido fingerprints list` shows it; a \
                unique start of it is enough. A key without a sensor is refused.
                """,
            subcommands: [List.self, Add.self, Rename.self, Delete.self])

        /// The FIDO operations on the chosen key, its fingerprints and the PIN they were read with: the key must
        /// have a sensor and a PIN, which is asked for before the key is opened again (it is not held while the
        /// user types).
        static func enrolled(_ key: KeyOptions, _ prompt: Prompt) async throws
            -> (fingerprints: [FIDOFingerprint], operations: FIDOOperations, pin: String)
        {
            let (operations, pin) = try await authorized(key, prompt)
            return (try await operations.fingerprints(.pin(pin)), operations, pin)
        }

        /// The FIDO operations on the chosen key and its PIN: the key must have a sensor and a PIN, which is asked
        /// for while the key is not held.
        static func authorized(_ key: KeyOptions, _ prompt: Prompt) async throws -> (FIDOOperations, String) {
            let (operations, info) = try await FIDOCommand.pinOperations(key.choice, pinSet: true) { info in
                guard info.bioEnrollment else { throw FIDOSessionError.notSupported(.bioEnrollment) }
            }
            return (operations, try askPIN(prompt, words("fido.pin.pin"), minimum: info.minPINLength, new: false))
        }

        /// How a sample went, in the user's words, as the start of a sentence.
        static func sampleText(_ status: CTAP2Session.SampleStatus) -> String {
            let text =
                status.name.map { UIText("bio-sample." + $0) }
                ?? UIText("bio-sample.other", ["number": String(status.rawValue)])
            let words = StringTables.load().text(text)
            return words.prefix(1).uppercased() + words.dropFirst()
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list", abstract: "List the enrolled fingerprints (needs the PIN).")

            @OptionGroup var key: KeyOptions

            @Flag(name: .long, help: ArgumentHelp("JSON: id (hex), name."))
            var json = false

            func run() async throws {
                let prompt = Prompt()
                let prints = try await Fingerprints.enrolled(key, prompt).fingerprints
                if json {
                    try printJSON(prints.map { FingerprintJSON(id: $0.templateID.hex, name: $0.name) })
                    return
                }
                if prints.isEmpty { out(words("cli.fido.fingerprints.none")); return }
                for f in prints { out("\(f.templateID.hex)  \(f.name ?? words("cli.fido.fingerprints.noName"))") }
            }
        }

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Enroll a fingerprint: touch the sensor until it has enough samples; needs the PIN.",
                discussion: """
                    After the PIN, lay the finger on the sensor and lift it again, as many times as the key asks \
                    (\"Touch the sensor again\", with the samples still needed). A sample the sensor cannot use \
                    is said why and asked for again. Ctrl-C stops the enrollment: the key is told to stop waiting \
                    for the sensor and to drop the samples taken, and ykterm ends as Ctrl-C ends a program (status \
                    130 in a shell), saying "cancelled, nothing enrolled".
                    """)

            @OptionGroup var key: KeyOptions

            @Option(name: .long, help: ArgumentHelp("A name for the fingerprint.", valueName: "NAME"))
            var name: String?

            /// How long the key waits for each sample.
            static let timeoutMilliseconds = 30_000

            func run() async throws {
                let prompt = Prompt()
                let name = self.name
                let (operations, pin) = try await Fingerprints.authorized(key, prompt)
                let id = try await operations.enrollFingerprint(
                    name: name, .pin(pin), timeoutMilliseconds: Add.timeoutMilliseconds,
                    progress: { step in
                        switch step {
                        case .touchTheSensor: warn(words("cli.fido.fingerprints.touch"))
                        case .good(let remaining):
                            warn(
                                words(
                                    remaining == 1 ? "cli.fido.fingerprints.againOne" : "cli.fido.fingerprints.again",
                                    ["count": String(remaining)]))
                        case .unusable(let status, let remaining):
                            warn(
                                words(
                                    remaining == 1
                                        ? "cli.fido.fingerprints.sampleAgainOne"
                                        : "cli.fido.fingerprints.sampleAgain",
                                    ["sample": Fingerprints.sampleText(status), "count": String(remaining)]))
                        }
                    },
                    // Ctrl-C cancelled the capture on the key; the key dropped the template: said as such.
                    stopped: { error in
                        error is FIDOInterrupt.Interrupted
                            ? FIDOInterrupt.Interrupted(reason: FIDOSessionError.enrollmentCancelled) : error
                    })
                let named = name.flatMap { $0.isEmpty ? nil : $0 }
                out(
                    named.map { words("cli.fido.fingerprints.enrolledNamed", ["id": id.hex, "name": $0]) }
                        ?? words("cli.fido.fingerprints.enrolled", ["id": id.hex]))
            }
        }

        struct Rename: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rename", abstract: "Give a fingerprint a new name; needs the PIN.")

            @OptionGroup var key: KeyOptions

            @OptionGroup var fingerprint: HexID<FIDOFingerprint>

            @Argument(help: "The new name.")
            var name: String

            func run() async throws {
                let prompt = Prompt()
                let (prints, operations, pin) = try await Fingerprints.enrolled(key, prompt)
                let renamed = try fingerprint.one(of: prints).templateID
                _ = try await operations.renameFingerprint(renamed, to: name, .pin(pin))
                out(words("cli.fido.fingerprints.renamed", ["id": renamed.hex, "name": name]))
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "delete", abstract: "Delete a fingerprint by its ID; needs the PIN.")

            @OptionGroup var target: HexIDDeletion<FIDOFingerprint>

            func run() async throws {
                let prompt = Prompt()
                let (f, operations, pin) = try await target.confirmed(
                    prompt, otherwise: words("cli.fido.fingerprints.deleteNeedsForce"),
                    among: { try await Fingerprints.enrolled($0, prompt) },
                    question: {
                        words("cli.fido.fingerprints.deleteQuestion", ["fingerprint": $0.name ?? $0.templateID.hex])
                    })
                let deleted = try await operations.deleteFingerprint(f.templateID, .pin(pin)).deleted
                out(
                    deleted.name.map {
                        words("cli.fido.fingerprints.deletedNamed", ["id": deleted.templateID.hex, "name": $0])
                    }
                        ?? words("cli.fido.fingerprints.deleted", ["id": deleted.templateID.hex]))
            }
        }
    }
}
