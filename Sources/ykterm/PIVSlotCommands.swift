import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

/// `piv certificates ...` and `piv keys ...`: what the slots hold.
extension PIVCommand {
    struct Certificates: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "certificates",
            abstract: "Export, import, generate, request and delete slot certificates.",
            subcommands: [Export.self, Import.self, Generate.self, Request.self, Delete.self])

        struct Generate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "generate",
                abstract: "Make a self-signed certificate for the slot's key, signed on the key, and store it.",
                discussion: """
                    The slot's key signs the certificate itself (SHA-256; Ed25519 keys sign plainly), so PKCS #11 \
                    modules such as ykcs11 and OpenSC, which show a slot only when it holds a certificate, offer \
                    its key (to ssh -I, for one). SUBJECT is NAME=value pairs separated by commas \
                    (CN=alice,O=Example), or a plain name for CN. Needs the management key, and the PIN when the \
                    slot's policy wants it; replaces the slot's certificate.
                    """)

            @OptionGroup var target: PIVSlotOptions
            @Option(name: [.long, .short], help: ArgumentHelp("The subject (and issuer).", valueName: "SUBJECT"))
            var subject: String
            @Option(name: .long, help: ArgumentHelp("Days the certificate is valid from now.", valueName: "DAYS"))
            var validDays = 365
            @OptionGroup var chuid: PIVUpdateCHUIDOption

            func validate() throws {
                guard (1...36500).contains(validDays) else {
                    throw ValidationError(words("cli.piv.certificates.validDays", ["value": String(validDays)]))
                }
            }

            func run() async throws {
                let subject = try PIVOperations.subject(self.subject)
                let (slot, days) = (target.slot.slot, validDays)
                let certificate = try await PIVAnswers.asking(Prompt()) { answers in
                    let made = try await target.piv.generateCertificate(
                        in: slot, subject: subject, days: days, pin: answers.pin,
                        managementKey: answers.managementKey, touch: { TouchNotice.show() })
                    try await chuid.update(target.piv, managementKey: answers.managementKey)
                    return made
                }
                out(
                    words(
                        "cli.piv.certificates.generated",
                        [
                            "slot": "\(slot)", "subject": certificate.subject,
                            "fingerprint": certificate.sha256FingerprintText,
                        ]))
                chuid.say()
            }
        }

        struct Request: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "request",
                abstract: "Write a certificate request (PKCS #10) for the slot's key, signed on the key.",
                discussion: """
                    For a certificate authority to sign: PEM (or DER with --der) on standard output or to --out. \
                    SUBJECT as for generate. Needs the PIN when the slot's policy wants it.
                    """)

            @OptionGroup var target: PIVSlotOptions
            @Option(name: [.long, .short], help: ArgumentHelp("The subject.", valueName: "SUBJECT"))
            var subject: String
            @Flag(name: .long, help: "DER instead of PEM.") var der = false
            @Option(
                help: ArgumentHelp(
                    "Write here instead of standard output (not over an existing file).", valueName: "FILE"))
            var out: String?

            func run() async throws {
                let subject = try PIVOperations.subject(self.subject)
                let slot = target.slot.slot
                let request = try await PIVAnswers.asking(Prompt()) { answers in
                    try await target.piv.certificateRequest(
                        in: slot, subject: subject, pin: answers.pin, touch: { TouchNotice.show() })
                }
                try PIVFiles.write(
                    der ? request : Array(PEM.encode(request, label: "CERTIFICATE REQUEST").utf8), to: out,
                    replace: false)
            }
        }

        struct Export: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "export", abstract: "Write a slot's certificate (PEM, or DER with --der).")

            @OptionGroup var target: PIVSlotOptions
            @Flag(name: .long, help: "DER instead of PEM.") var der = false
            @Option(
                help: ArgumentHelp(
                    "Write here instead of standard output (not over an existing file).",
                    valueName: "FILE"))
            var out: String?

            func run() async throws {
                let slot = target.slot.slot
                guard let certificate = try await target.piv.certificate(in: slot) else {
                    throw YktermError.failed(words("cli.piv.certificates.none", ["slot": "\(slot)"]))
                }
                try PIVFiles.write(der ? certificate.der : Array(certificate.pem.utf8), to: out, replace: false)
            }
        }

        struct Import: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "import",
                abstract: "Store a certificate (PEM or DER file) in a slot.",
                discussion: """
                    Needs the management key. When the slot holds a key whose public key is not the certificate's, \
                    the certificate is refused unless --force is given.
                    """)

            @OptionGroup var target: PIVSlotOptions
            @Argument(help: "The certificate file, PEM or DER.") var file: String
            @Flag(name: .long, help: "Store it gzip-compressed (for large certificates).") var compress = false
            @Flag(name: .long, help: "Store it even when the slot's key is not the certificate's.") var force = false
            @OptionGroup var chuid: PIVUpdateCHUIDOption

            func run() async throws {
                let certificate: X509Certificate
                do {
                    certificate = try X509Certificate(derOrPEM: try PIVFiles.read(file))
                } catch let e as YktermError {
                    throw e
                } catch {
                    throw YktermError.usage(words("cli.piv.certificates.notCertificate", ["file": file]))
                }
                let prompt = Prompt()
                let slot = target.slot.slot
                try await PIVAnswers.asking(prompt) { answers in
                    try await target.piv.importCertificate(
                        certificate, in: slot, compress: compress, force: force,
                        managementKey: answers.managementKey)
                    try await chuid.update(target.piv, managementKey: answers.managementKey)
                }
                out(words("cli.piv.certificates.imported", ["subject": certificate.subject, "slot": "\(slot)"]))
                chuid.say()
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "delete",
                abstract: "Delete a slot's certificate (the key stays). Needs the management key.")

            @OptionGroup var target: PIVSlotOptions
            @OptionGroup var chuid: PIVUpdateCHUIDOption

            func run() async throws {
                let prompt = Prompt()
                let slot = target.slot.slot
                try await PIVAnswers.asking(prompt) { answers in
                    try await target.piv.deleteCertificate(in: slot, managementKey: answers.managementKey)
                    try await chuid.update(target.piv, managementKey: answers.managementKey)
                }
                out(words("cli.piv.certificates.deleted", ["slot": "\(slot)"]))
                chuid.say()
            }
        }
    }

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keys", abstract: "Generate, import, move, delete, export and attest slot keys.",
            subcommands: [
                Generate.self, Import.self, Info.self, Export.self, Move.self, Delete.self, Attest.self,
            ])

        struct Generate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "generate",
                abstract: "Generate a key in a slot; its public key (PEM) goes to standard output or --out.",
                discussion: """
                    Needs the management key. Replaces any key in the slot; the slot's certificate, if any, then no \
                    longer matches (import or generate a new one). Algorithms: ECCP256, ECCP384, RSA1024, RSA2048, \
                    RSA3072, RSA4096, ED25519, X25519 (the last four from firmware 5.7).
                    """)

            @OptionGroup var target: PIVSlotOptions
            @Option(name: [.short, .long], help: ArgumentHelp("The key's algorithm.", valueName: "ALGORITHM"))
            var algorithm = "ECCP256"
            @OptionGroup var policies: PIVPolicyOptions
            @Option(help: ArgumentHelp("Write the public key here instead of standard output.", valueName: "FILE"))
            var out: String?

            func validate() throws {
                guard let a = PIV.Algorithm(name: algorithm), !a.isManagementKey else {
                    throw ValidationError(
                        words(
                            "cli.piv.algorithm",
                            [
                                "value": algorithm,
                                "allowed": oneOf([
                                    "ECCP256", "ECCP384", "RSA1024", "RSA2048", "RSA3072", "RSA4096", "ED25519",
                                    "X25519",
                                ]),
                            ]))
                }
            }

            func run() async throws {
                let prompt = Prompt()
                let slot = target.slot.slot
                let algorithm = PIV.Algorithm(name: algorithm)!
                let (pin, touch) = (policies.pin, policies.touch)
                let publicKey = try await PIVAnswers.asking(prompt) { answers in
                    try await target.piv.generateKey(
                        in: slot, algorithm: algorithm, pinPolicy: pin, touchPolicy: touch,
                        managementKey: answers.managementKey
                    ) {
                        warn(words("cli.piv.keys.slowRSA"))
                    }
                }
                try PIVFiles.write(Array(PEM.encode(publicKey.spki, label: PEM.publicKey).utf8), to: out)
            }
        }

        struct Attest: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "attest",
                abstract: "Write the attestation certificate of a key generated on the key (PEM).",
                discussion: """
                    The attestation is checked before it is written: it must be signed by the key of the attestation \
                    certificate in slot F9, and certify the key now in the slot.
                    """)

            @OptionGroup var target: PIVSlotOptions
            @Option(help: ArgumentHelp("Write here instead of standard output.", valueName: "FILE")) var out: String?

            func run() async throws {
                let slot = target.slot.slot
                let attestation = try await target.piv.attest(slot)
                try PIVFiles.write(Array(attestation.certificate.pem.utf8), to: out)
                warn(words("cli.piv.keys.attestedBy", ["subject": attestation.attestationCertificate.subject]))
            }
        }
    }
}

/// `--update-chuid` of the certificate commands, as ykman has it: a new CHUID once the certificate changed, which is
/// how middleware that caches the card (Windows' smart-card stack, for one) learns to read its certificates again.
struct PIVUpdateCHUIDOption: ParsableArguments {
    @Flag(
        name: .customLong("update-chuid"),
        help: "Also store a new CHUID, so that middleware caching the card reads its certificates again.")
    var update = false

    /// Stores a new CHUID when asked to (with the management key the certificate change took).
    func update(_ piv: PIVOperations, managementKey: SecretBytes?) async throws {
        if update { try await piv.generateObject(.chuid, managementKey: managementKey) }
    }

    /// Says that it did.
    func say() {
        if update { out(words("cli.piv.objects.generated", ["object": PIVObjectArgument.label(PIV.ObjectID.chuid)])) }
    }
}
