import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

struct PIVCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "piv",
        abstract: "PIV: certificates, keys, signing and the signature check, PIN, PUK and management key.",
        discussion: """
            Slots are named as ykman names them: 9a (authentication), 9c (signature), 9d (key management), 9e (card \
            authentication) and the retired 82 to 95. PINs, PUKs and management keys are never taken from the \
            command line: on a terminal they are asked for without echo, otherwise read from standard input, one per \
            line, in the order the command needs them (management key first when one is needed and is not the \
            default, then the PIN, then new values). A management key that is still the default is used without \
            asking.
            """,
        subcommands: [
            Info.self, Verify.self, Sign.self, Certificates.self, Keys.self, SSHKey.self, PINCommand.self,
            PUKCommand.self, ManagementKey.self, Access.self, Objects.self, Reset.self,
        ])
}

/// A slot argument: 9a, 9c, 9d, 9e or 82-95 (with or without 0x).
struct SlotArgument: ExpressibleByArgument {
    let slot: PIV.Slot
    init?(argument: String) {
        guard let slot = PIV.Slot(name: argument), slot != .attestation else { return nil }
        self.slot = slot
    }
    static var defaultCompletionKind: CompletionKind { .list(PIV.Slot.all.map { $0.description.lowercased() }) }
}

/// The key and the slot of a PIV command that works on one slot: `--reader`, `--device`, `--virtual` and the
/// slot argument, as every such command takes them.
struct PIVSlotOptions: ParsableArguments {
    @OptionGroup var key: KeyOptions
    @Argument(help: "The slot: 9a, 9c, 9d, 9e or 82-95.") var slot: SlotArgument

    /// The PIV operations on the chosen key.
    var piv: PIVOperations { key.piv }
}

extension KeyOptions {
    /// The PIV operations on the key these options chose.
    var piv: PIVOperations { PIVOperations(opener(for: .piv)) }
}

/// The secrets PIV commands ask for, each from the prompt (no echo) or a line of standard input.
enum PIVSecrets {
    static func pin(_ prompt: Prompt, _ label: String = words("piv.field.pin")) throws -> SecretBytes {
        SecretBytes(utf8: try prompt.secret(label))
    }

    /// A new PIN or PUK: asked twice on a terminal (the second time as `again`), 6 to 8 characters (checked
    /// before anything is sent).
    static func newPIN(_ prompt: Prompt, _ label: String, again: String) throws -> SecretBytes {
        let value = try prompt.newSecret(label, again: again)
        guard (6...PIV.pinLength).contains(value.utf8.count) else {
            throw YktermError.usage(words("cli.piv.pinLength", ["count": String(value.utf8.count)]))
        }
        return SecretBytes(utf8: value)
    }

    /// A change of the PIN or the PUK: the secret that allows it (`current`), then the new one twice (`new`,
    /// `again`); `change` makes it with the two, and `done` is said.
    static func change(
        _ current: String, then new: String, again: String, done: String,
        _ change: (SecretBytes, SecretBytes) async throws -> PIVOverview
    ) async throws {
        let prompt = Prompt()
        let allowed = try pin(prompt, current)
        let new = try newPIN(prompt, new, again: again)
        _ = try await change(allowed, new)
        out(done)
    }

    /// A management key in hex.
    static func managementKey(_ prompt: Prompt, _ label: String = words("cli.piv.prompt.managementKey")) throws
        -> SecretBytes
    {
        var bytes = try Hex.decode(try prompt.secret(label).trimmingSpaces)
        return SecretBytes(wiping: &bytes)
    }
}

/// The answers a PIV command has given its operation so far (`PIVOperationError.needs`).
struct PIVAnswers {
    var pin: SecretBytes?
    var managementKey: SecretBytes?
    var newManagementKey: SecretBytes?

    func wipe() {
        for secret in [pin, managementKey, newManagementKey] { secret?.wipe() }
    }

    /// Runs `body` until its operation needs nothing more: each question is asked once, from the prompt, when the
    /// operation asks it (the management key before the PIN, as the lines of standard input come). The key is
    /// not held while the user types: the operation ends before each question and runs again with the answer.
    static func asking<T>(_ prompt: Prompt, _ body: (PIVAnswers) async throws -> T) async throws -> T {
        var answers = PIVAnswers()
        defer { answers.wipe() }
        while true {
            do {
                return try await body(answers)
            } catch PIVOperationError.needs(let question) {
                switch question {
                case .pin where answers.pin == nil:
                    answers.pin = try PIVSecrets.pin(prompt)
                case .managementKey where answers.managementKey == nil:
                    answers.managementKey = try PIVSecrets.managementKey(prompt)
                case .newManagementKey where answers.newManagementKey == nil:
                    answers.newManagementKey = try PIVSecrets.managementKey(
                        prompt, words("cli.piv.prompt.newManagementKey"))
                default:
                    throw PIVOperationError.needs(question)
                }
            }
        }
    }
}

extension PIVCommand {
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract:
                "Show version, serial, PIN and PUK tries, the management key and every slot's key and certificate.")

        @OptionGroup var key: KeyOptions

        @Flag(
            name: .long, help: "JSON: version, serial, pin_tries, puk_tries, management_key, slots (with certificates)."
        )
        var json = false

        func run() async throws {
            let overview = try await key.piv.overview()
            if json {
                try printJSON(PIVInfoText.json(overview))
            } else {
                for line in PIVInfoText.lines(overview) { out(line) }
            }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Sign a fresh challenge with the slot's key and verify it with the slot certificate's key.",
            discussion: """
                Asks for the PIN when the slot's key needs it, and says "Touch your key" when its touch policy asks \
                for a touch. Prints OK, or why the signature did not verify; exits 1 when it did not.
                """)

        @OptionGroup var target: PIVSlotOptions

        func run() async throws {
            let prompt = Prompt()
            let slot = target.slot.slot
            let (outcome, _) = try await PIVAnswers.asking(prompt) { answers in
                try await target.piv.verify(slot: slot, pin: answers.pin) { waiting in
                    if waiting { TouchNotice.show() }
                }
            }
            switch outcome {
            case .verified(let algorithm):
                out(words("cli.piv.verify.verified", ["slot": "\(slot)", "algorithm": "\(algorithm)"]))
            case .noCertificate:
                throw YktermError.failed(words("cli.piv.verify.noCertificate", ["slot": "\(slot)"]))
            case .unsupportedCertificateKey:
                throw YktermError.failed(words("cli.piv.verify.unsupportedKey", ["slot": "\(slot)"]))
            case .mismatch(let algorithm):
                throw YktermError.failed(
                    words("cli.piv.verify.mismatch", ["slot": "\(slot)", "algorithm": "\(algorithm)"]))
            case .differentAlgorithm(let certificate, let keyAlgorithm):
                throw YktermError.failed(
                    words(
                        "cli.piv.verify.differentAlgorithm",
                        ["slot": "\(slot)", "certificate": "\(certificate)", "key": "\(keyAlgorithm)"]))
            }
        }
    }

    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign",
            abstract: "Sign a file with a slot's key.",
            discussion: """
                The signature goes to standard output, or to --out: DER ECDSA for EC keys, the raw signature (as long \
                as the modulus) for RSA keys, 64 bytes for Ed25519. RSA padding is made here: PKCS #1 v1.5 or PSS \
                (MGF1 with the same hash, salt as long as the hash). `openssl dgst -sha256 -verify KEY -signature SIG \
                FILE` checks it (with `-sigopt rsa_padding_mode:pss` for PSS).
                """)

        @OptionGroup var target: PIVSlotOptions
        @Option(name: .customLong("in"), help: ArgumentHelp("The file to sign.", valueName: "FILE")) var input: String
        @Option(
            help: ArgumentHelp(
                "The hash: sha256, sha384 or sha512 (Ed25519 signs the file itself).",
                valueName: "HASH"))
        var hash = "sha256"
        @Option(help: ArgumentHelp("RSA padding: pkcs1 or pss.", valueName: "PADDING")) var padding = "pkcs1"
        @Option(help: ArgumentHelp("Write the signature here instead of standard output.", valueName: "FILE"))
        var out: String?

        func validate() throws {
            guard ["sha256", "sha384", "sha512"].contains(hash) else {
                throw ValidationError(
                    words(
                        "cli.option.oneOf",
                        [
                            "option": "--hash", "allowed": oneOf(["sha256", "sha384", "sha512"]),
                            "value": hash,
                        ]))
            }
            guard ["pkcs1", "pss"].contains(padding) else {
                throw ValidationError(
                    words(
                        "cli.option.oneOf",
                        ["option": "--padding", "allowed": oneOf(["pkcs1", "pss"]), "value": padding]))
            }
        }

        func run() async throws {
            let message = try PIVFiles.read(input)
            let digest: SignatureDigest = hash == "sha384" ? .sha384 : hash == "sha512" ? .sha512 : .sha256
            let scheme = PIVSignatureScheme(digest: digest, padding: padding == "pss" ? .pss : .pkcs1)
            let prompt = Prompt()
            let slot = target.slot.slot
            let signature = try await PIVAnswers.asking(prompt) { answers in
                try await target.piv.sign(message, slot: slot, scheme: scheme, pin: answers.pin) {
                    TouchNotice.show()
                }
            }
            try PIVFiles.write(signature, to: out)
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Erase every PIV key and certificate and restore the default PIN, PUK and management key.",
            discussion: """
                The PIN and the PUK are blocked first (by wrong tries), as the key requires. Asks for confirmation \
                on a terminal; give --force when not on one.
                """)

        @OptionGroup var key: KeyOptions
        @Flag(name: .long, help: "Do not ask for confirmation.") var force = false

        func run() async throws {
            try Prompt().confirmReset(force, words("cli.piv.reset.question"))
            try await key.piv.reset()
            out(words("cli.piv.reset.done"))
        }
    }
}

/// Reading and writing the files PIV commands take and give.
enum PIVFiles {
    /// The whole of the file at `path`, or of standard input when `path` is "-".
    static func read(_ path: String) throws -> [UInt8] {
        let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw YktermError.usage(
                words("cli.piv.file.unreadable", ["path": path, "detail": String(cString: strerror(errno))]))
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw YktermError.usage(
                    words("cli.piv.file.unreadable", ["path": path, "detail": String(cString: strerror(errno))]))
            }
            if n == 0 { return out }
            out += buffer[0..<n]
        }
    }

    /// Writes `bytes` to `path` (created with mode 0644, never over an existing file unless `replace`), or to
    /// standard output when `path` is nil or "-".
    static func write(_ bytes: [UInt8], to path: String?, replace: Bool = true) throws {
        guard let path, path != "-" else {
            guard bytes.withUnsafeBytes({ StandardStream.writeAll($0, to: 1) }) else {
                throw YktermError.failed(
                    words("cli.piv.file.standardOutput", ["detail": String(cString: strerror(errno))]))
            }
            return
        }
        try write(bytes, toFile: path, flags: O_CREAT | (replace ? O_TRUNC : O_EXCL), mode: 0o644)
    }

    /// Writes `bytes` to the file at `path`, opened for writing with `flags` (and `mode` when it is created).
    static func write(_ bytes: [UInt8], toFile path: String, flags: Int32, mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC | flags, mode)
        guard fd >= 0 else {
            throw YktermError.failed(
                words("cli.piv.file.unwritable", ["path": path, "detail": String(cString: strerror(errno))]))
        }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw YktermError.failed(
                    words("cli.piv.file.unwritable", ["path": path, "detail": String(cString: strerror(errno))]))
            }
            offset += n
        }
    }
}

extension PIVCommand {
    struct SSHKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ssh-key",
            abstract: "The slot's public key as an authorized_keys line (what ssh-keygen -D shows for it).",
            discussion: """
                From the slot's metadata (firmware 5.3 and later), else its certificate. RSA, ECDSA P-256 and \
                P-384 and Ed25519 keys; OpenSSH uses them through a PKCS #11 module (ssh -I libykcs11.so), which \
                shows a slot that holds a certificate (piv certificates generate makes one).
                """)

        @OptionGroup var target: PIVSlotOptions
        @Option(name: .long, help: ArgumentHelp("The comment after the key.", valueName: "TEXT"))
        var comment: String?

        func run() async throws {
            let slot = target.slot.slot
            let publicKey = try await target.piv.publicKey(in: slot)
            guard let line = SSHPublicKey.authorizedKeysLine(publicKey, comment: comment ?? PIVSSHKey.comment(slot))
            else {
                throw YktermError.failed(words("cli.piv.sshKey.unsupported", ["type": "\(publicKey.type)"]))
            }
            out(line)
        }
    }
}
