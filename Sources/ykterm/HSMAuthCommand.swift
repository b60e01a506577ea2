import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import KeyKit

struct HSMAuthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hsmauth",
        abstract: "YubiHSM Auth: credentials for YubiHSM 2 sessions, their session keys, the management password.",
        discussion: """
            The management password and credential passwords are up to 16 characters (or 32 hex digits for 16 \
            bytes), as ykman takes them; an empty management password is the default one. They and every key are \
            never taken from the command line: on a terminal they are asked for without echo, otherwise read from \
            standard input, one per line, in the order the command asks for them.
            """,
        subcommands: [Info.self, Reset.self, Credentials.self, Access.self])
}

extension KeyOptions {
    /// The YubiHSM Auth operations on the key these options chose.
    var hsmauth: HSMAuthOperations {
        HSMAuthOperations(opener(for: .hsmAuth))
    }
}

/// The secrets `hsmauth` commands ask for, each from the prompt (no echo) or a line of standard input.
enum HSMAuthSecrets {
    /// A management or credential password: up to 16 bytes, or 32 hex digits.
    static func password(_ prompt: Prompt, _ label: String, new: Bool = false, again: String = "") throws
        -> SecretBytes
    {
        let text = new ? try prompt.newSecret(label, again: again) : try prompt.secret(label)
        guard let padded = HSMAuth.paddedPassword(text) else {
            throw YktermError.usage(words("cli.hsmauth.passwordLength", ["count": String(text.utf8.count)]))
        }
        return padded
    }

    static func managementPassword(_ prompt: Prompt) throws -> SecretBytes {
        try password(prompt, words("cli.hsmauth.prompt.management"))
    }

    static func newCredentialPassword(_ prompt: Prompt) throws -> SecretBytes {
        try password(
            prompt, words("cli.hsmauth.prompt.newCredential"), new: true, again: words("cli.hsmauth.prompt.again"))
    }

    /// A 16-byte AES key as 32 hex digits.
    static func aesKey(_ prompt: Prompt, _ label: String) throws -> SecretBytes {
        var text = try prompt.secret(label)
        defer { text = "" }
        guard text.count == 32, var bytes = try? Hex.decode(text) else {
            throw YktermError.usage(words("cli.hsmauth.aesKeyFormat", ["what": label]))
        }
        return SecretBytes(wiping: &bytes)
    }
}

extension HSMAuthCredentialJSON {
    init(_ c: HSMAuthCredential) {
        label = c.label
        type = c.algorithm.name
        touch = c.touchRequired
        retries = c.retries
    }
}

/// The options of the commands that add a credential.
struct HSMAuthAddOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("The credential's label (1 to 64 bytes).", valueName: "LABEL")) var label: String
    @Flag(name: [.short, .long], help: "Require a touch of the key for each use of the credential.")
    var touch = false

    func validate() throws {
        guard HSMAuth.labelLengths.contains(label.utf8.count) else {
            throw ValidationError(words("error.hsmauth-label-length", ["count": String(label.utf8.count)]))
        }
    }

    /// Asks for the management password and the new credential password, then adds the credential `credential`
    /// makes (it may ask for more) to the key; every secret is wiped after.
    func put(on key: KeyOptions, _ prompt: Prompt, _ credential: () throws -> HSMAuthNewCredential) async throws {
        let management = try HSMAuthSecrets.managementPassword(prompt)
        defer { management.wipe() }
        let password = try HSMAuthSecrets.newCredentialPassword(prompt)
        defer { password.wipe() }
        let new = try credential()
        defer { new.wipe() }
        _ = try await key.hsmauth.add(
            label: label, new, credentialPassword: password, managementKey: management, touchRequired: touch)
    }

    /// Says that the credential was added (`text`: the string table's words, with the label).
    func added(_ text: String) {
        out(words(text, ["label": VisibleText.escaped(label)]))
    }
}

extension HSMAuthCommand {
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info", abstract: "Show the application's version and the management password's tries left.")
        @OptionGroup var key: KeyOptions
        @Flag(name: .long, help: "JSON: version, management_key_retries, credentials (their number).")
        var json = false

        func run() async throws {
            let o = try await key.hsmauth.overview()
            if json {
                try printJSON(
                    HSMAuthInfoJSON(
                        version: o.version.description, management_key_retries: o.managementKeyRetries,
                        credentials: o.credentials.count))
                return
            }
            out(words("cli.hsmauth.info.version", ["version": o.version.description]))
            out(
                words(
                    "cli.hsmauth.info.retries",
                    ["retries": String(o.managementKeyRetries), "max": String(HSMAuth.initialRetries)]))
            out(words("cli.hsmauth.info.credentials", ["count": String(o.credentials.count)]))
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Delete every YubiHSM Auth credential and restore the default (empty) management password.",
            discussion: "Asks for confirmation on a terminal; give --force when not on one.")
        @OptionGroup var key: KeyOptions
        @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

        func run() async throws {
            try Prompt().confirmReset(force, words("cli.hsmauth.reset.question"))
            try await key.hsmauth.reset()
            out(words("cli.hsmauth.reset.done"))
        }
    }

    struct Credentials: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "credentials",
            abstract: "The credentials: list, add, delete, export, passwords, session keys.",
            subcommands: [
                List.self, Symmetric.self, Derive.self, Generate.self, Import.self, Delete.self, Export.self,
                ChangePassword.self, Calculate.self,
            ])
    }

    struct Access: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "access", abstract: "The management password.",
            subcommands: [ChangeManagementPassword.self])
    }
}

extension HSMAuthCommand.Credentials {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the credentials: label, type, touch and password tries left.")
        @OptionGroup var key: KeyOptions
        @Flag(name: .long, help: "JSON: an array of {label, type, touch, retries}.") var json = false

        func run() async throws {
            let credentials = try await key.hsmauth.credentials()
            if json {
                try printJSON(credentials.map(HSMAuthCredentialJSON.init))
                return
            }
            guard !credentials.isEmpty else {
                out(words("cli.hsmauth.list.none"))
                return
            }
            let header = [
                words("cli.hsmauth.list.label"), words("cli.hsmauth.list.type"), words("cli.hsmauth.list.touch"),
                words("cli.hsmauth.list.retries"),
            ]
            let rows = credentials.map {
                [
                    VisibleText.escaped($0.label), words("cli.hsmauth.type." + $0.algorithm.name),
                    words($0.touchRequired ? "cli.hsmauth.touch.on" : "cli.hsmauth.touch.off"), String($0.retries),
                ]
            }
            let width = (0..<3).map { c in ([header] + rows).map { $0[c].count }.max() ?? 0 }
            for row in [header] + rows {
                out(
                    (0..<3).map { row[$0] + String(repeating: " ", count: width[$0] - row[$0].count) }
                        .joined(separator: "  ") + "  " + row[3])
            }
        }
    }

    struct Symmetric: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "symmetric",
            abstract: "Add a symmetric credential from an ENC and a MAC key (or random ones with --generate).",
            discussion: """
                Asks for the management password, the new credential password, then the ENC key and the MAC key \
                (32 hex digits each). --generate makes random keys and prints them once: the YubiHSM 2's \
                authentication key needs the same two.
                """)
        @OptionGroup var key: KeyOptions
        @OptionGroup var add: HSMAuthAddOptions
        @Flag(name: [.short, .long], help: "Generate random ENC and MAC keys and print them.") var generate = false

        func run() async throws {
            let prompt = Prompt()
            // Random keys are printed once they are on the key: the YubiHSM 2's authentication key needs them.
            var generated: (enc: String, mac: String)?
            try await add.put(on: key, prompt) {
                guard generate else {
                    return .symmetric(
                        enc: try HSMAuthSecrets.aesKey(prompt, words("cli.hsmauth.prompt.enc")),
                        mac: try HSMAuthSecrets.aesKey(prompt, words("cli.hsmauth.prompt.mac")))
                }
                var e = Crypto.random(16)
                var m = Crypto.random(16)
                generated = (Hex.encode(e), Hex.encode(m))
                return .symmetric(enc: SecretBytes(wiping: &e), mac: SecretBytes(wiping: &m))
            }
            if let generated {
                out(words("cli.hsmauth.generatedKeys"))
                out("ENC-KEY: " + generated.enc)
                out("MAC-KEY: " + generated.mac)
            }
            add.added("cli.hsmauth.added.symmetric")
        }
    }

    struct Derive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "derive",
            abstract: "Add a symmetric credential whose keys are derived from a password, as the YubiHSM 2 does.",
            discussion: """
                Asks for the management password, the new credential password, then the derivation password (the \
                one the YubiHSM 2's authentication key was made from: PBKDF2-HMAC-SHA256, salt "Yubico", 10000 \
                iterations).
                """)
        @OptionGroup var key: KeyOptions
        @OptionGroup var add: HSMAuthAddOptions

        func run() async throws {
            let prompt = Prompt()
            try await add.put(on: key, prompt) {
                .derived(
                    password: SecretBytes(
                        utf8: try prompt.newSecret(
                            words("cli.hsmauth.prompt.derivation"), again: words("cli.hsmauth.prompt.again"))))
            }
            add.added("cli.hsmauth.added.derived")
        }
    }

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate",
            abstract: "Generate an asymmetric credential (a P-256 key) on the key (firmware 5.6 and later).",
            discussion: "Asks for the management password, then the new credential password. `credentials export` "
                + "writes its public key, for the YubiHSM 2's asymmetric authentication key.")
        @OptionGroup var key: KeyOptions
        @OptionGroup var add: HSMAuthAddOptions

        func run() async throws {
            try await add.put(on: key, Prompt()) { .generated }
            add.added("cli.hsmauth.added.generated")
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Add an asymmetric credential from a P-256 private key file (PKCS#8, PEM or DER; firmware 5.6).",
            discussion: "Asks for the management password, then the new credential password. An encrypted key "
                + "file is refused: decrypt it first (openssl pkcs8 -topk8 -nocrypt). The file is wiped from memory "
                + "once sent.")
        @OptionGroup var key: KeyOptions
        @OptionGroup var add: HSMAuthAddOptions
        @Argument(help: ArgumentHelp("The private key file.", valueName: "FILE")) var file: String

        func run() async throws {
            var bytes = try PIVFiles.read(file)
            defer { SecretBytes.wipe(&bytes) }
            let privateKey = try PIVKeyFile.privateKey(bytes, path: file, unreadable: "cli.hsmauth.notP256")
            guard privateKey.type == .p256 else {
                throw YktermError.usage(words("cli.hsmauth.notP256", ["path": file]))
            }
            let scalar = try HSMAuth.privateScalar(privateKey)
            defer { scalar.wipe() }
            try await add.put(on: key, Prompt()) { .asymmetric(privateKey: scalar) }
            add.added("cli.hsmauth.added.imported")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a credential (asks for the management password; asks first).",
            discussion: "Asks for confirmation on a terminal; give --force when not on one.")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("The credential's label.", valueName: "LABEL")) var label: String
        @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

        func run() async throws {
            let prompt = Prompt()
            let shown = VisibleText.escaped(label)
            try prompt.requireForce(force, otherwise: words("cli.hsmauth.delete.needsForce"))
            try prompt.confirmUnlessForced(
                force, words("cli.hsmauth.delete.question", ["label": shown]),
                otherwise: words("cli.hsmauth.delete.notConfirmed", ["label": shown]))
            let management = try HSMAuthSecrets.managementPassword(prompt)
            defer { management.wipe() }
            try await key.hsmauth.delete(label: label, managementKey: management)
            out(words("cli.hsmauth.deleted", ["label": shown]))
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write an asymmetric credential's public key (PEM, or DER with --format der).")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("The credential's label.", valueName: "LABEL")) var label: String
        @Argument(help: ArgumentHelp("Write here (- or none: standard output).", valueName: "FILE")) var file: String?
        @OptionGroup var format: PEMOrDER

        func run() async throws {
            try format.write(publicKey: try await key.hsmauth.publicKey(label: label).spki, to: file)
        }
    }

    struct ChangePassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change-password",
            abstract: "Change a credential's password (firmware 5.8 and later).",
            discussion: "Asks for the current credential password (or, with --admin, the management password), then "
                + "the new one.")
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("The credential's label.", valueName: "LABEL")) var label: String
        @Flag(name: .long, help: "Authorise with the management password instead of the current credential password.")
        var admin = false

        func run() async throws {
            let prompt = Prompt()
            let authority: HSMAuthPasswordAuthority
            let current: SecretBytes
            if admin {
                current = try HSMAuthSecrets.managementPassword(prompt)
                authority = .managementKey(current)
            } else {
                current = try HSMAuthSecrets.password(prompt, words("cli.hsmauth.prompt.credential"))
                authority = .credentialPassword(current)
            }
            defer { current.wipe() }
            let new = try HSMAuthSecrets.newCredentialPassword(prompt)
            defer { new.wipe() }
            try await key.hsmauth.changeCredentialPassword(label: label, authority: authority, new: new)
            out(words("cli.hsmauth.passwordChanged", ["label": VisibleText.escaped(label)]))
        }
    }

    struct Calculate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "calculate",
            abstract: "Calculate a credential's session keys for a YubiHSM 2 session (for tests and scripts).",
            discussion: """
                Symmetric credentials: --context is the host challenge then the YubiHSM 2's challenge (8 bytes \
                each, 32 hex digits), as CREATE SESSION exchanges them. Asymmetric credentials: --device-key is \
                the YubiHSM 2's public key (PEM or DER); the key's ephemeral public key (EPK.OCE) is printed as \
                "EPK-OCE: HEX", and the YubiHSM 2's answer is then read as one line: its ephemeral public key and \
                its receipt in hex (65 + 16 bytes). Asks for the credential password first; prints S-ENC, S-MAC \
                and S-RMAC in hex. The YubiHSM 2 itself is not reached: this is what a client hands it.
                """)
        @OptionGroup var key: KeyOptions
        @Argument(help: ArgumentHelp("The credential's label.", valueName: "LABEL")) var label: String
        @Option(help: ArgumentHelp("Host challenge then HSM challenge, 32 hex digits.", valueName: "HEX"))
        var context: String?
        @Option(help: ArgumentHelp("The YubiHSM 2's card cryptogram, to pass on (16 hex digits).", valueName: "HEX"))
        var cardCryptogram: String?
        @Option(help: ArgumentHelp("The YubiHSM 2's public key, for an asymmetric credential.", valueName: "FILE"))
        var deviceKey: String?
        @Flag(name: .long, help: "JSON: enc, mac, rmac (hex).") var json = false

        func run() async throws {
            // Checked here, not in validate(): ArgumentParser reports an unknown option only after validate().
            var context16: [UInt8]?
            if deviceKey != nil {
                guard context == nil, cardCryptogram == nil else {
                    throw YktermError.usage(words("cli.hsmauth.contextOrDeviceKey"))
                }
            } else {
                guard let context, let bytes = try? Hex.decode(context), bytes.count == 16 else {
                    throw YktermError.usage(words("cli.hsmauth.contextFormat"))
                }
                context16 = bytes
                if let cardCryptogram, (try? Hex.decode(cardCryptogram))?.count != 8 {
                    throw YktermError.usage(words("cli.hsmauth.cryptogramFormat"))
                }
            }
            let pkSD = try deviceKey.map { try Self.publicKey($0) }
            let prompt = Prompt()
            let password = try HSMAuthSecrets.password(prompt, words("cli.hsmauth.prompt.credential"))
            defer { password.wipe() }
            var keys: HSMAuthSessionKeys
            if let pkSD {
                keys = try await key.hsmauth.asymmetricSessionKeys(label: label, credentialPassword: password) {
                    epkOCE in
                    out("EPK-OCE: " + Hex.encode(epkOCE))
                    let line = try Prompt().line(words("cli.hsmauth.prompt.deviceAnswer"))
                    guard let answer = try? Hex.decode(line.trimmingSpaces), answer.count == 81 else {
                        throw YktermError.usage(words("cli.hsmauth.deviceAnswerFormat"))
                    }
                    return HSMAuthDeviceAnswer(
                        epkSD: Array(answer[0..<65]), pkSD: pkSD, receipt: Array(answer[65..<81]))
                }
            } else {
                keys = try await key.hsmauth.sessionKeys(
                    label: label, context: context16 ?? [], credentialPassword: password,
                    cardCryptogram: try cardCryptogram.map { try Hex.decode($0) })
            }
            defer { keys.wipe() }
            if json {
                try printJSON(
                    HSMAuthSessionKeysJSON(
                        enc: Hex.encode(keys.enc), mac: Hex.encode(keys.mac), rmac: Hex.encode(keys.rmac)))
            } else {
                out("S-ENC: " + Hex.encode(keys.enc))
                out("S-MAC: " + Hex.encode(keys.mac))
                out("S-RMAC: " + Hex.encode(keys.rmac))
            }
        }

        /// A P-256 public key file: PEM "PUBLIC KEY" or DER SubjectPublicKeyInfo.
        static func publicKey(_ path: String) throws -> P256PublicKey {
            let bytes = try PIVFiles.read(path)
            var der = bytes
            if PEM.isPEM(bytes) {
                der = PEM.decode(String(decoding: bytes, as: UTF8.self), label: PEM.publicKey)?.first ?? []
            }
            guard let key = try? P256PublicKey(spki: der) else {
                throw YktermError.usage(words("cli.hsmauth.notP256Public", ["path": path]))
            }
            return key
        }
    }
}

extension HSMAuthCommand.Access {
    struct ChangeManagementPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change-management-password",
            abstract: "Change the management password (asks for the current one, then the new one).",
            discussion: "An empty password is the default management key (16 zero bytes).")
        @OptionGroup var key: KeyOptions

        func run() async throws {
            let prompt = Prompt()
            let current = try HSMAuthSecrets.password(prompt, words("cli.hsmauth.prompt.currentManagement"))
            defer { current.wipe() }
            let new = try HSMAuthSecrets.password(
                prompt, words("cli.hsmauth.prompt.newManagement"), new: true, again: words("cli.hsmauth.prompt.again"))
            defer { new.wipe() }
            try await key.hsmauth.changeManagementKey(current: current, new: new)
            out(words("cli.hsmauth.managementChanged"))
        }
    }
}
