import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import KeyKit

struct OpenPGPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "openpgp",
        abstract: "OpenPGP: the card's keys, touch policies, PIN, reset code and admin PIN, and its reset.",
        discussion: """
            Key slots are named as ykman names them: sig (signature), dec (decryption), aut (authentication) and \
            att (attestation). PINs are never taken from the command line: on a terminal they are asked for without \
            echo, otherwise read from standard input, one per line, in the order the command asks for them.
            """,
        subcommands: [Info.self, Reset.self, Access.self, Keys.self, Certificates.self])
}

/// A key slot argument: sig, dec, aut or att.
struct OpenPGPSlotArgument: ExpressibleByArgument {
    let slot: OpenPGP.KeySlot
    init?(argument: String) {
        guard let slot = OpenPGP.KeySlot(name: argument) else { return nil }
        self.slot = slot
    }
    static var defaultCompletionKind: CompletionKind { .list(OpenPGP.KeySlot.allCases.map(\.name)) }
}

/// A touch policy argument: off, on, fixed, cached or cached-fixed.
struct OpenPGPTouchArgument: ExpressibleByArgument {
    let policy: OpenPGP.TouchPolicy
    init?(argument: String) {
        guard let policy = OpenPGP.TouchPolicy(name: argument) else { return nil }
        self.policy = policy
    }
    static var defaultCompletionKind: CompletionKind { .list(OpenPGP.TouchPolicy.allCases.map(\.name)) }
}

/// A signature PIN policy argument: always or once.
struct OpenPGPSignaturePolicyArgument: ExpressibleByArgument {
    let policy: OpenPGPSignaturePolicy
    init?(argument: String) {
        guard let policy = OpenPGPSignaturePolicy(rawValue: argument) else { return nil }
        self.policy = policy
    }
    static var defaultCompletionKind: CompletionKind { .list(OpenPGPSignaturePolicy.allCases.map(\.rawValue)) }
}

extension KeyOptions {
    /// The OpenPGP operations on the key these options chose.
    var openpgp: OpenPGPOperations {
        OpenPGPOperations(opener(for: .openPGP))
    }
}

/// The passwords OpenPGP commands ask for, each from the prompt (no echo) or a line of standard input.
enum OpenPGPSecrets {
    static func current(_ prompt: Prompt, _ password: OpenPGP.Password) throws -> SecretBytes {
        SecretBytes(utf8: try prompt.secret(words("cli.openpgp.prompt." + password.textName)))
    }

    /// A new password: asked twice on a terminal, and as long as the card takes it (checked before anything is
    /// sent).
    static func new(_ prompt: Prompt, _ password: OpenPGP.Password) throws -> SecretBytes {
        let value = try prompt.newSecret(
            words("cli.openpgp.prompt.new-" + password.textName),
            again: words("cli.openpgp.prompt.again-" + password.textName))
        let count = value.utf8.count
        guard (password.minimumLength...OpenPGP.maximumPINLength).contains(count) else {
            throw YktermError.usage(
                words(
                    "cli.openpgp.passwordLength",
                    [
                        "count": String(count), "minimum": String(password.minimumLength),
                        "maximum": String(OpenPGP.maximumPINLength),
                        "password": words("openpgp.password." + password.textName),
                    ]))
        }
        return SecretBytes(utf8: value)
    }
}

extension OpenPGPCommand {
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show the versions, the tries left, the signature PIN policy, KDF, the signature counter and "
                + "each slot's key, touch policy and certificate.")
        @OptionGroup var key: KeyOptions
        @Flag(
            name: .long,
            help:
                "JSON: versions, serial, tries, signature_pin_policy, kdf_enabled, signature_counter, keys, certificates."
        )
        var json = false

        func run() async throws {
            let overview = try await key.openpgp.overview(withCertificates: true)
            if json {
                try printJSON(OpenPGPInfoText.json(overview))
            } else {
                for line in OpenPGPInfoText.lines(overview) { out(line) }
            }
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Erase the OpenPGP keys and data and restore the default PIN (123456) and admin PIN (12345678).",
            discussion: """
                The PIN and the admin PIN are blocked first (by wrong tries), as the key requires. Asks for \
                confirmation on a terminal; give --force when not on one.
                """)
        @OptionGroup var key: KeyOptions
        @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

        func run() async throws {
            try Prompt().confirmReset(force, words("cli.openpgp.reset.question"))
            try await key.openpgp.reset()
            out(words("cli.openpgp.reset.done"))
        }
    }

    struct Access: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "access",
            abstract: "The PIN, the reset code and the admin PIN, and their tries.",
            subcommands: [
                SetRetries.self, ChangePIN.self, ChangeResetCode.self, ChangeAdminPIN.self, UnblockPIN.self,
                SetSignaturePolicy.self, KDF.self,
            ])
    }

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keys", abstract: "The keys in the slots, and their touch policies.",
            subcommands: [KeyInfo.self, SetTouch.self, Import.self, Attest.self])
    }
}

extension OpenPGPCommand.Access {
    struct SetRetries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-retries",
            abstract: "Set the tries of the PIN, the reset code and the admin PIN (1 to 255 each; asks for the "
                + "admin PIN).",
            discussion: "Each counter starts again at its new number. Asks first on a terminal; give --force when "
                + "not on one.")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("Tries of the PIN.", valueName: "USER-TRIES")) var pin: Int
        @Argument(help: ArgumentHelp("Tries of the reset code.", valueName: "RESET-CODE-TRIES")) var resetCode: Int
        @Argument(help: ArgumentHelp("Tries of the admin PIN.", valueName: "ADMIN-TRIES")) var admin: Int
        @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

        func validate() throws {
            for (name, value) in [
                ("USER-TRIES", pin), ("RESET-CODE-TRIES", resetCode), ("ADMIN-TRIES", admin),
            ]
            where !(1...255).contains(value) {
                throw ValidationError(words("cli.openpgp.retriesRange", ["name": name, "value": String(value)]))
            }
        }

        func run() async throws {
            let prompt = Prompt()
            let question = words(
                "cli.openpgp.setRetries.question",
                ["pin": String(pin), "reset": String(resetCode), "admin": String(admin)])
            try prompt.requireConfirmation(force, question, otherwise: words("cli.openpgp.notConfirmed"))
            let adminPIN = try OpenPGPSecrets.current(prompt, .admin)
            defer { adminPIN.wipe() }
            try await key.openpgp.setRetries(user: pin, reset: resetCode, admin: admin, adminPIN: adminPIN)
            out(words("cli.openpgp.retriesSet"))
        }
    }

    struct ChangePIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change-pin", abstract: "Change the PIN (current PIN, then the new one: 6 to 127 characters).")
        @OptionGroup var key: KeyOptions

        func run() async throws {
            let prompt = Prompt()
            let current = try OpenPGPSecrets.current(prompt, .user)
            defer { current.wipe() }
            let new = try OpenPGPSecrets.new(prompt, .user)
            defer { new.wipe() }
            try await key.openpgp.changePIN(current: current, new: new)
            out(words("cli.openpgp.pinChanged"))
        }
    }

    struct ChangeAdminPIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change-admin-pin",
            abstract: "Change the admin PIN (current admin PIN, then the new one: 8 to 127 characters).")
        @OptionGroup var key: KeyOptions

        func run() async throws {
            let prompt = Prompt()
            let current = try OpenPGPSecrets.current(prompt, .admin)
            defer { current.wipe() }
            let new = try OpenPGPSecrets.new(prompt, .admin)
            defer { new.wipe() }
            try await key.openpgp.changeAdminPIN(current: current, new: new)
            out(words("cli.openpgp.adminPINChanged"))
        }
    }

    struct ChangeResetCode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change-reset-code",
            abstract: "Set the reset code, which sets a new PIN when it is forgotten (admin PIN, then the new reset "
                + "code: 8 to 127 characters).")
        @OptionGroup var key: KeyOptions

        func run() async throws {
            let prompt = Prompt()
            let adminPIN = try OpenPGPSecrets.current(prompt, .admin)
            defer { adminPIN.wipe() }
            let code = try OpenPGPSecrets.new(prompt, .reset)
            defer { code.wipe() }
            try await key.openpgp.setResetCode(code, adminPIN: adminPIN)
            out(words("cli.openpgp.resetCodeSet"))
        }
    }

    struct UnblockPIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unblock-pin",
            abstract: "Set a new PIN with the reset code, which also unblocks it (reset code, then the new PIN).",
            discussion: "With --admin the admin PIN is asked for instead of the reset code.")
        @OptionGroup var key: KeyOptions
        @Flag(name: .customLong("admin"), help: "Ask for the admin PIN instead of the reset code.")
        var useAdminPIN = false

        func run() async throws {
            let prompt = Prompt()
            let first = try OpenPGPSecrets.current(prompt, useAdminPIN ? .admin : .reset)
            defer { first.wipe() }
            let new = try OpenPGPSecrets.new(prompt, .user)
            defer { new.wipe() }
            try await key.openpgp.unblockPIN(
                newPIN: new, resetCode: useAdminPIN ? nil : first, adminPIN: useAdminPIN ? first : nil)
            out(words("cli.openpgp.pinUnblocked"))
        }
    }
}

extension OpenPGPCommand.Access {
    struct SetSignaturePolicy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-signature-policy",
            abstract: "Ask the PIN for every signature (always) or once per session (once); asks for the admin PIN.")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("always or once.", valueName: "POLICY")) var policy: OpenPGPSignaturePolicyArgument

        func run() async throws {
            let adminPIN = try OpenPGPSecrets.current(Prompt(), .admin)
            defer { adminPIN.wipe() }
            try await key.openpgp.setSignaturePolicy(policy.policy, adminPIN: adminPIN)
            out(words("cli.openpgp.signaturePolicySet." + policy.policy.rawValue))
        }
    }
}

extension OpenPGPCommand.Access {
    struct KDF: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "kdf",
            abstract: "Turn the key's PIN derivation (KDF) on or off; asks for the admin PIN.",
            discussion: """
                With the KDF on, no PIN crosses the wire as typed: ykterm, GnuPG and ykman send the PIN's \
                iterated and salted S2K (SHA-256) instead, as GnuPG's kdf-setup sets it up. Either way the PIN and \
                the admin PIN become the defaults (123456 and 12345678) and the reset code is removed: change them \
                afterwards. Asks first on a terminal; give --force when not on one.
                """)
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("on or off.", valueName: "STATE")) var state: OnOff
        @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

        enum OnOff: String, ExpressibleByArgument, CaseIterable {
            case on, off
        }

        func run() async throws {
            let prompt = Prompt()
            try prompt.requireConfirmation(
                force, words("cli.openpgp.kdf.question." + state.rawValue), otherwise: words("cli.openpgp.notConfirmed")
            )
            let adminPIN = try OpenPGPSecrets.current(prompt, .admin)
            defer { adminPIN.wipe() }
            try await key.openpgp.setKDF(state == .on, adminPIN: adminPIN)
            out(words("cli.openpgp.kdf.done." + state.rawValue))
        }
    }
}

extension OpenPGPCommand.Keys {
    struct KeyInfo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info", abstract: "Show a slot's key: algorithm, fingerprint, creation, origin, touch policy.")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("sig, dec, aut or att.", valueName: "SLOT")) var slot: OpenPGPSlotArgument
        @Flag(
            name: .long,
            help: "JSON: slot, has_key, algorithm, fingerprint, created, origin, touch_policy (as in info --json).")
        var json = false

        func run() async throws {
            let info = try await key.openpgp.keyInfo(slot.slot)
            if json { return try printJSON(OpenPGPInfoText.keyJSON(info)) }
            for line in OpenPGPInfoText.keyLines(info, indent: "") { out(line) }
        }
    }

    struct SetTouch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-touch",
            abstract: "Set a slot's touch policy: off, on, fixed, cached or cached-fixed (asks for the admin PIN).",
            discussion: """
                Fixed policies cannot be turned off again without replacing the slot's key: they are asked about \
                first on a terminal; give --force when not on one. Cached policies let a touch count for 15 seconds.
                """)
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("sig, dec, aut or att.", valueName: "SLOT")) var slot: OpenPGPSlotArgument
        @Argument(help: ArgumentHelp("off, on, fixed, cached or cached-fixed.", valueName: "POLICY"))
        var policy: OpenPGPTouchArgument
        @Flag(name: .long, help: "Do not ask before setting a fixed policy.") var force = false

        func run() async throws {
            let prompt = Prompt()
            let p = policy.policy
            if p.isFixed && !force {
                let question = words("cli.openpgp.setTouch.question", ["slot": slot.slot.name, "policy": p.name])
                guard prompt.confirm(question) else { throw YktermError.usage(words("cli.openpgp.notConfirmed")) }
            }
            let adminPIN = try OpenPGPSecrets.current(prompt, .admin)
            defer { adminPIN.wipe() }
            try await key.openpgp.setTouchPolicy(slot.slot, p, adminPIN: adminPIN, confirmed: true)
            out(words("cli.openpgp.touchSet", ["slot": slot.slot.name, "policy": p.name]))
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import a private key (PKCS#8, PEM or DER) into a slot (asks for the admin PIN).",
            discussion: """
                RSA 2048, 3072 and 4096 (exponent 65537), EC P-256 and P-384 (ECDSA, or ECDH in dec), Ed25519 \
                (sig, aut, att) and X25519 (dec); att from firmware 5.2. The slot's algorithm is set to the key's \
                first, and its fingerprint and creation time (now) are written as GnuPG computes them (OpenPGP v4). \
                Replaces any key in the slot: asks first when it holds one (--force when not on a terminal). An \
                encrypted key file is refused: decrypt it first (openssl pkcs8 -topk8 -nocrypt). The key is wiped \
                from memory once sent.
                """)
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("sig, dec, aut or att.", valueName: "SLOT")) var slot: OpenPGPSlotArgument
        @Argument(help: ArgumentHelp("The private key file.", valueName: "FILE")) var file: String
        @Flag(name: .long, help: "Do not ask before replacing a key.") var force = false

        func run() async throws {
            let slot = slot.slot
            var bytes = try PIVFiles.read(file)
            defer { SecretBytes.wipe(&bytes) }
            let privateKey = try PIVKeyFile.privateKey(bytes, path: file, unreadable: "cli.openpgp.keys.notPKCS8")
            do {
                _ = try OpenPGPKeyImport.attributes(privateKey, slot: slot)
            } catch {
                throw YktermError.usage(
                    words("cli.openpgp.keys.wrongKind", ["slot": slot.name, "algorithm": "\(privateKey.type)"]))
            }
            let prompt = Prompt()
            if !force, (try? await key.openpgp.keyInfo(slot)) != nil {
                guard prompt.confirm(words("cli.openpgp.keys.replaceQuestion", ["slot": slot.name])) else {
                    throw YktermError.usage(words("cli.openpgp.notConfirmed"))
                }
            }
            let adminPIN = try OpenPGPSecrets.current(prompt, .admin)
            defer { adminPIN.wipe() }
            let now = UInt32(clamping: Int(Date().timeIntervalSince1970))
            let info = try await key.openpgp.importKey(
                privateKey, into: slot, adminPIN: adminPIN, replacing: true, created: now)
            out(words("cli.openpgp.keys.imported", ["slot": slot.name]))
            for line in OpenPGPInfoText.keyLines(info, indent: "") { out(line) }
        }
    }

    struct Attest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "attest",
            abstract: "Write the attestation certificate of a slot's key (firmware 5.2; asks for the PIN).",
            discussion: """
                The key certifies the slot's key with its attestation key and keeps the certificate as the slot's \
                certificate. It is checked before it is written: signed by the key of the attestation certificate \
                (the att slot's), for the key now in the slot.
                """)
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("sig, dec or aut.", valueName: "SLOT")) var slot: OpenPGPSlotArgument
        @Option(help: ArgumentHelp("Write here instead of standard output.", valueName: "FILE")) var out: String?
        @Option(help: ArgumentHelp("pem or der.", valueName: "FORMAT")) var format = "pem"

        func run() async throws {
            guard ["pem", "der"].contains(format) else {
                throw YktermError.usage(words("cli.openpgp.format", ["value": format]))
            }
            let pin = try OpenPGPSecrets.current(Prompt(), .user)
            defer { pin.wipe() }
            let attestation = try await key.openpgp.attest(slot.slot, pin: pin)
            let bytes = format == "der" ? attestation.certificate.der : Array(attestation.certificate.pem.utf8)
            try PIVFiles.write(bytes, to: out)
            warn(words("cli.piv.keys.attestedBy", ["subject": attestation.attestationCertificate.subject]))
        }
    }
}

extension OpenPGPCommand {
    struct Certificates: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "certificates", abstract: "The certificates of the slots' keys (DO 7F21; att's: FC).",
            subcommands: [Export.self, Import.self, Delete.self])
    }
}

extension OpenPGPCommand.Certificates {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export", abstract: "Write a slot's certificate (PEM by default); exits 1 when it has none.")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("sig, dec, aut or att.", valueName: "SLOT")) var slot: OpenPGPSlotArgument
        @Option(help: ArgumentHelp("Write here instead of standard output.", valueName: "FILE")) var out: String?
        @Option(help: ArgumentHelp("pem or der.", valueName: "FORMAT")) var format = "pem"

        func run() async throws {
            guard ["pem", "der"].contains(format) else {
                throw YktermError.usage(words("cli.openpgp.format", ["value": format]))
            }
            guard let certificate = try await key.openpgp.certificate(slot.slot) else {
                throw YktermError.failed(words("cli.openpgp.certificates.none", ["slot": slot.slot.name]))
            }
            try PIVFiles.write(format == "der" ? certificate.der : Array(certificate.pem.utf8), to: out)
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Store a certificate (PEM or DER) as a slot's, replacing one there (asks for the admin PIN).")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("sig, dec, aut or att.", valueName: "SLOT")) var slot: OpenPGPSlotArgument
        @Argument(help: ArgumentHelp("The certificate file.", valueName: "FILE")) var file: String

        func run() async throws {
            let bytes = try PIVFiles.read(file)
            guard let certificate = try? X509Certificate(derOrPEM: bytes) else {
                throw YktermError.usage(words("cli.openpgp.certificates.unreadable", ["path": file]))
            }
            let adminPIN = try OpenPGPSecrets.current(Prompt(), .admin)
            defer { adminPIN.wipe() }
            try await key.openpgp.importCertificate(certificate, slot.slot, adminPIN: adminPIN)
            out(words("cli.openpgp.certificates.imported", ["slot": slot.slot.name]))
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a slot's certificate (asks for the admin PIN).")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("sig, dec, aut or att.", valueName: "SLOT")) var slot: OpenPGPSlotArgument

        func run() async throws {
            let adminPIN = try OpenPGPSecrets.current(Prompt(), .admin)
            defer { adminPIN.wipe() }
            try await key.openpgp.deleteCertificate(slot.slot, adminPIN: adminPIN)
            out(words("cli.openpgp.certificates.deleted", ["slot": slot.slot.name]))
        }
    }
}
