import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import KeyKit

/// `piv keys info | export | import | move | delete` and `piv access set-retries`: what ykman's `piv keys` and
/// `piv access` do beyond generating and attesting.
extension PIVCommand.Keys {
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show a slot's key: algorithm, PIN and touch policy, origin and public key (firmware 5.3+).")

        @OptionGroup var target: PIVSlotOptions
        @Flag(name: .long, help: "JSON: slot, name, algorithm, origin, pin_policy, touch_policy, public_key_pem.")
        var json = false

        func run() async throws {
            let slot = target.slot.slot
            let m = try await target.piv.keyInfo(slot)
            let pem = PEM.encode(m.publicKey.spki, label: PEM.publicKey)
            if json {
                try printJSON(
                    PIVKeyJSON(
                        slot: slot.description, name: PIVInfoText.slotName(slot), algorithm: m.algorithm.description,
                        origin: m.origin == .generated ? "generated" : "imported",
                        pinPolicy: PIVInfoText.name(m.pinPolicy), touchPolicy: PIVInfoText.name(m.touchPolicy),
                        publicKeyPEM: pem))
                return
            }
            out(words("cli.piv.info.slot", ["slot": "\(slot)", "name": PIVInfoText.localizedSlotName(slot)]))
            let rows: [(String, String)] = [
                (
                    "cli.piv.info.key",
                    words(
                        m.origin == .generated ? "cli.piv.info.generated" : "cli.piv.info.imported",
                        ["algorithm": "\(m.algorithm)"])
                ),
                ("cli.piv.info.pinPolicy", PIVInfoText.name(m.pinPolicy)),
                ("cli.piv.info.touchPolicy", PIVInfoText.name(m.touchPolicy)),
            ]
            // The value column as `piv info` has it: 22 characters, or one more than the longest label.
            InfoLines.lines(rows.map { ("  " + words($0.0), $0.1) }).forEach(out)
            out(pem.hasSuffix("\n") ? String(pem.dropLast()) : pem)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write a slot's public key (PEM, or DER with --format der).",
            discussion: "From the key's metadata (firmware 5.3 and later), else from the slot's certificate.")

        @OptionGroup var target: PIVSlotOptions
        @Option(help: ArgumentHelp("Write here instead of standard output.", valueName: "FILE")) var out: String?
        @OptionGroup var format: PEMOrDER

        func run() async throws {
            try format.write(publicKey: try await target.piv.publicKey(in: target.slot.slot).spki, to: out)
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import a private key (PKCS#8, PEM or DER) into a slot. Needs the management key.",
            discussion: """
                Replaces any key in the slot; asks first when it holds one (--force when not on a terminal). \
                RSA keys (1024 to 4096 bits, exponent 65537), EC P-256 and P-384, Ed25519 and X25519 (the last \
                two, RSA 3072 and 4096 from firmware 5.7). An encrypted key file is refused: decrypt it first \
                (openssl pkcs8 -topk8 -nocrypt). The file is wiped from memory once sent.
                """)

        @OptionGroup var target: PIVSlotOptions
        @Argument(help: ArgumentHelp("The private key file.", valueName: "FILE")) var file: String
        @OptionGroup var policies: PIVPolicyOptions
        @Flag(name: .long, help: "Do not ask before replacing a key.") var force = false

        func run() async throws {
            let slot = target.slot.slot
            var bytes = try PIVFiles.read(file)
            defer { SecretBytes.wipe(&bytes) }
            let privateKey = try PIVKeyFile.privateKey(bytes, path: file)
            let prompt = Prompt()
            if !force, (try? await target.piv.keyInfo(slot)) != nil {
                try prompt.confirmUnlessForced(
                    force, words("cli.piv.keys.replaceQuestion", ["slot": "\(slot)"]),
                    otherwise: words("cli.piv.keys.notReplaced", ["slot": "\(slot)"]))
            }
            let (pin, touch) = (policies.pin, policies.touch)
            let algorithm = try await PIVAnswers.asking(prompt) { answers in
                try await target.piv.importKey(
                    privateKey, in: slot, pinPolicy: pin, touchPolicy: touch, managementKey: answers.managementKey)
            }
            out(words("cli.piv.keys.imported", ["slot": "\(slot)", "algorithm": "\(algorithm)"]))
        }
    }

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "move",
            abstract: "Move a slot's key to an empty slot (firmware 5.7). Needs the management key.",
            discussion: "Certificates stay where they are: move or import the certificate too if it should follow.")

        @OptionGroup var key: KeyOptions
        @Argument(help: "The slot the key is in.") var source: SlotArgument
        @Argument(help: "The empty slot it goes to.") var destination: SlotArgument
        @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

        func run() async throws {
            let (from, to) = (source.slot, destination.slot)
            // Checked here, not in validate(): ArgumentParser reports an unknown option only after validate().
            guard from != to else { throw YktermError.usage(words("cli.piv.keys.sameSlot", ["slot": "\(from)"])) }
            try await PIVAnswers.confirmed(
                force, words("cli.piv.keys.moveQuestion", ["from": "\(from)", "to": "\(to)"]),
                otherwise: words("cli.piv.keys.notMoved")
            ) { answers in
                try await key.piv.moveKey(from: from, to: to, managementKey: answers.managementKey)
            }
            out(words("cli.piv.keys.moved", ["from": "\(from)", "to": "\(to)"]))
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a slot's key (firmware 5.7). Needs the management key; asks first.",
            discussion: "The slot's certificate, if any, stays (piv certificates delete removes it).")

        @OptionGroup var target: PIVSlotOptions
        @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

        func run() async throws {
            let slot = target.slot.slot
            try await PIVAnswers.confirmed(
                force, words("cli.piv.keys.deleteQuestion", ["slot": "\(slot)"]),
                otherwise: words("cli.piv.keys.notDeleted", ["slot": "\(slot)"])
            ) { answers in
                try await target.piv.deleteKey(in: slot, managementKey: answers.managementKey)
            }
            out(words("cli.piv.keys.deleted", ["slot": "\(slot)"]))
        }
    }
}

extension PIVCommand {
    struct Access: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "access", abstract: "How many tries the PIN and the PUK have.",
            subcommands: [SetRetries.self])

        struct SetRetries: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "set-retries",
                abstract: "Set the PIN and PUK tries (1-255 each); both go back to their defaults.",
                discussion: """
                    Needs the management key and the PIN. The PIN becomes 123456 and the PUK 12345678 again: \
                    change them afterwards (piv pin change, piv puk change). Asks first (--force when not on a \
                    terminal).
                    """)

            @OptionGroup var key: KeyOptions
            // Value names without "PIN" or "PUK": options named so would carry a secret, and none is taken here.
            @Argument(help: ArgumentHelp("Tries of the PIN (1-255).", valueName: "USER-TRIES")) var pinTries: Int
            @Argument(help: ArgumentHelp("Tries of the PUK (1-255).", valueName: "UNBLOCK-TRIES")) var pukTries: Int
            @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

            func validate() throws {
                for (name, value) in [("USER-TRIES", pinTries), ("UNBLOCK-TRIES", pukTries)]
                where !(1...255).contains(value) {
                    throw ValidationError(
                        words("cli.option.range", ["option": name, "low": "1", "high": "255", "value": String(value)]))
                }
            }

            func run() async throws {
                let overview = try await PIVAnswers.confirmed(
                    force,
                    words("cli.piv.access.retriesQuestion", ["pin": String(pinTries), "puk": String(pukTries)]),
                    otherwise: words("cli.piv.access.retriesNotSet")
                ) { answers in
                    try await key.piv.setRetries(
                        pin: pinTries, puk: pukTries, pin: answers.pin, managementKey: answers.managementKey)
                }
                out(
                    words(
                        "cli.piv.access.retriesSet",
                        ["pin": String(overview.pin?.totalRetries ?? pinTries), "puk": String(pukTries)]))
            }
        }
    }
}

extension PIVAnswers {
    /// A change that cannot be undone: asked first (or `force`), then `body` run until it needs nothing more.
    @discardableResult
    static func confirmed<T>(
        _ force: Bool, _ question: String, otherwise refusal: String, _ body: (PIVAnswers) async throws -> T
    ) async throws -> T {
        let prompt = Prompt()
        try prompt.confirmUnlessForced(force, question, otherwise: refusal)
        return try await asking(prompt, body)
    }
}

/// A private key file, as `piv keys import` takes it.
enum PIVKeyFile {
    /// The key in `bytes`; `unreadable` names the words for a file that holds none this command takes.
    static func privateKey(_ bytes: [UInt8], path: String, unreadable: String = "cli.piv.keys.notPKCS8") throws
        -> AsymmetricPrivateKey
    {
        var der = bytes
        if PEM.isPEM(bytes) {
            let text = String(decoding: bytes, as: UTF8.self)
            if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
                throw YktermError.usage(words("cli.piv.keys.encrypted", ["path": path]))
            }
            guard let found = PEM.decode(text, label: "PRIVATE KEY")?.first else {
                throw YktermError.usage(words(unreadable, ["path": path]))
            }
            der = found
        }
        defer { if der != bytes { SecretBytes.wipe(&der) } }
        do {
            return try AsymmetricPrivateKey(pkcs8: der)
        } catch {
            throw YktermError.usage(words(unreadable, ["path": path]))
        }
    }
}

/// --pin-policy and --touch-policy, as `piv keys generate` and `piv keys import` take them.
struct PIVPolicyOptions: ParsableArguments {
    @Option(
        name: .customLong("pin-policy"),
        help: ArgumentHelp("default, never, once or always.", valueName: "POLICY"))
    var pinPolicy = "default"
    @Option(
        name: .customLong("touch-policy"),
        help: ArgumentHelp("default, never, always or cached.", valueName: "POLICY"))
    var touchPolicy = "default"

    private static let pins: [String: PIV.PINPolicy] = [
        "default": .default, "never": .never, "once": .once, "always": .always,
    ]
    private static let touches: [String: PIV.TouchPolicy] = [
        "default": .default, "never": .never, "always": .always, "cached": .cached,
    ]

    var pin: PIV.PINPolicy { Self.pins[pinPolicy.lowercased()] ?? .default }
    var touch: PIV.TouchPolicy { Self.touches[touchPolicy.lowercased()] ?? .default }

    func validate() throws {
        guard Self.pins[pinPolicy.lowercased()] != nil else {
            throw ValidationError(
                words(
                    "cli.option.oneOf",
                    [
                        "option": "--pin-policy", "allowed": oneOf(["default", "never", "once", "always"]),
                        "value": pinPolicy,
                    ]))
        }
        guard Self.touches[touchPolicy.lowercased()] != nil else {
            throw ValidationError(
                words(
                    "cli.option.oneOf",
                    [
                        "option": "--touch-policy", "allowed": oneOf(["default", "never", "always", "cached"]),
                        "value": touchPolicy,
                    ]))
        }
    }
}
