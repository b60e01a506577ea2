import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

/// `ykterm ssh`: SSH keys kept on the key as OpenSSH keeps them — discoverable FIDO credentials of `ssh:`
/// relying parties, used through the `sk-ssh-ed25519@openssh.com` and `sk-ecdsa-sha2-nistp256@openssh.com` key
/// types, whose files hold only a key handle.
struct SSHCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh",
        abstract: "SSH keys on the key (FIDO ssh: credentials, as OpenSSH makes and uses them).",
        discussion: """
            An SSH key on a FIDO key is a discoverable credential whose relying party is ssh: and a name \
            (ssh-keygen -t ed25519-sk -O resident makes one). Its private key never leaves the key; OpenSSH \
            uses it through a key handle file (what ssh-keygen -K writes). Listing, exporting and deleting \
            need the FIDO2 PIN; making one needs the PIN when the key has one, and a touch.
            """,
        subcommands: [List.self, New.self, Export.self, Delete.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "Every SSH key on the key as its authorized_keys line (needs the PIN).")

        @OptionGroup var key: KeyOptions

        @Flag(
            name: .long,
            help: ArgumentHelp(
                "JSON: type, public_key, fingerprint, application, user, cred_protect, touch_required, verify_required, credential_id, file."
            ))
        var json = false

        func run() async throws {
            let (keys, _, _) = try await SSHCommand.keys(key.choice, prompt: Prompt())
            if json {
                try printJSON(keys.map(SSHKeyJSON.init))
                return
            }
            if keys.isEmpty {
                warn(words("cli.ssh.none"))
                return
            }
            for k in keys {
                out(k.authorizedKeysLine)
                out("  " + SSHCommand.describe(k))
            }
        }
    }

    struct New: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new",
            abstract: "Make an SSH key on the key and write its handle file and .pub (asks before replacing).",
            discussion: """
                The key is made as OpenSSH makes it for ssh-keygen -t TYPE-sk -O resident: relying party \
                APPLICATION, user ID NAME (up to 31 bytes), credProtect 2, or 3 with --verify-required. The \
                handle file (mode 0600) is written to --out, by default ~/.ssh/ and the name ssh-keygen -K gives \
                it (id_ed25519_sk_rk_NAME...), and FILE.pub beside it. A key that already holds an SSH key for \
                the same application and user is asked about (or needs --force): the new one replaces it.
                """)

        @OptionGroup var key: KeyOptions

        @Option(name: .long, help: ArgumentHelp("The application: ssh: and a name.", valueName: "ssh:NAME"))
        var application = "ssh:"

        @Option(name: .long, help: ArgumentHelp("The user the key is for (OpenSSH's -O user=).", valueName: "NAME"))
        var user: String?

        @Option(name: .long, help: ArgumentHelp("ed25519 (YubiKey 5.2 and later) or ecdsa.", valueName: "TYPE"))
        var type: String = "ed25519"

        @Flag(name: .long, help: "Every use needs the PIN (credProtect 3, OpenSSH's verify-required).")
        var verifyRequired = false

        @Flag(name: .long, help: "Uses need no touch (the server must allow it: no-touch-required).")
        var noTouchRequired = false

        @Option(
            name: .customLong("out"), help: ArgumentHelp("The handle file (its .pub beside it).", valueName: "FILE"))
        var file: String?

        @Flag(name: .long, help: "Replace an SSH key on the key, and files, without asking.")
        var force = false

        func validate() throws {
            guard SSHKeyType(rawValue: type) != nil else {
                throw ValidationError(
                    words(
                        "cli.option.oneOf",
                        ["option": "--type", "allowed": oneOf(SSHKeyType.allCases.map(\.rawValue)), "value": type]))
            }
        }

        func run() async throws {
            let prompt = Prompt()
            let operations = fidoOperations(key.choice)
            let (application, user, force) = (self.application, self.user, self.force)
            let (verify, touch, type) = (verifyRequired, !noTouchRequired, SSHKeyType(rawValue: self.type)!)
            let made = try await FIDOCommand.askingPIN(prompt) { pin in
                do {
                    return try await operations.newSSHKey(
                        application: application, user: user, type: type, verifyRequired: verify,
                        touchRequired: touch, replacing: force, pin: pin)
                } catch SSHOperationError.exists {
                    try prompt.requireForce(
                        false,
                        otherwise: words("cli.ssh.existsNeedsForce", ["application": application, "user": user ?? "-"]))
                    try prompt.confirmUnlessForced(
                        false, words("cli.ssh.replaceQuestion", ["application": application, "user": user ?? "-"]),
                        otherwise: words("cli.ssh.nothingMade"))
                    return try await operations.newSSHKey(
                        application: application, user: user, type: type, verifyRequired: verify,
                        touchRequired: touch, replacing: true, pin: pin)
                } catch let e as CTAPError where e.code == CTAPError.unsupportedAlgorithm {
                    throw YktermError.failed(words("cli.ssh.typeUnsupported", ["type": type.rawValue]))
                }
            }
            let path = file.map(PathString.expandingHome) ?? SSHCommand.sshDirectory() + "/" + made.exportName
            try SSHCommand.writeFiles(made, to: path, prompt: prompt, force: force)
            out(words("cli.ssh.made", ["type": made.key.typeName, "path": path]))
            out(made.authorizedKeysLine)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write the handle files and .pub of SSH keys on the key, as ssh-keygen -K does (needs the PIN).",
            discussion: """
                Every SSH key, or the one whose credential ID starts with ID, into DIR (default: the current \
                directory, as ssh-keygen -K), named as ssh-keygen -K names them. An existing file is asked \
                about (or needs --force).
                """)

        @OptionGroup var key: KeyOptions

        @Argument(help: "Credential ID in hex (a unique prefix is enough); all SSH keys without it.")
        var id: String?

        @Option(name: .long, help: ArgumentHelp("Where the files go.", valueName: "DIR"))
        var dir = "."

        @Flag(name: .long, help: "Replace existing files without asking.")
        var force = false

        func run() async throws {
            let prompt = Prompt()
            let (keys, _, _) = try await SSHCommand.keys(key.choice, prompt: prompt)
            let chosen = try id.map { [try FIDOOperations.sshKey($0, in: keys)] } ?? keys
            if chosen.isEmpty { warn(words("cli.ssh.none")) }
            for k in chosen {
                let path = PathString.expandingHome(dir) + "/" + k.exportName
                try SSHCommand.writeFiles(k, to: path, prompt: prompt, force: force)
                out(words("cli.ssh.exported", ["application": k.application, "path": path]))
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete an SSH key from the key by its credential ID (asks first, unless --force; needs the PIN)."
        )

        @OptionGroup var key: KeyOptions

        @Argument(help: "Credential ID in hex (a unique prefix is enough), as ssh list --json shows it.")
        var id: String

        @Flag(name: .long, help: "Delete without asking.")
        var force = false

        func run() async throws {
            let prompt = Prompt()
            try prompt.requireForce(force, otherwise: words("cli.ssh.deleteNeedsForce"))
            let (keys, operations, pin) = try await SSHCommand.keys(key.choice, prompt: prompt)
            let k = try FIDOOperations.sshKey(id, in: keys)
            try prompt.confirmDeletion(
                force,
                words("cli.ssh.deleteQuestion", ["application": k.application, "fingerprint": k.key.fingerprint]))
            _ = try await operations.deleteCredential(k.credentialID, .pin(pin))
            out(words("cli.ssh.deleted", ["application": k.application, "fingerprint": k.key.fingerprint]))
        }
    }

    // MARK: Shared

    /// The SSH keys on the chosen key, after its PIN.
    static func keys(_ key: KeyChoice, prompt: Prompt) async throws -> (
        keys: [SSHKeyOnKey], operations: FIDOOperations, pin: String
    ) {
        let (operations, info) = try await FIDOCommand.pinOperations(key, pinSet: true)
        let pin = try askPIN(prompt, words("fido.pin.pin"), minimum: info.minPINLength, new: false)
        return (try await operations.sshKeys(.pin(pin)), operations, pin)
    }

    /// "ecdsa-sk, ssh:work, user alice, credProtect 2, touch, SHA256:…".
    static func describe(_ k: SSHKeyOnKey) -> String {
        var facts = [k.application]
        if let user = k.user { facts.append(words("cli.ssh.user", ["user": user])) }
        if let level = k.credProtect { facts.append("credProtect \(level)") }
        facts.append(
            words(k.key.flags.contains(.userVerificationRequired) ? "cli.ssh.needsPIN" : "cli.ssh.touchOnly"))
        facts.append(k.key.fingerprint)
        return facts.joined(separator: ", ")
    }

    /// Writes the handle file (0600) and the .pub (0644), asking before either replaces a file.
    static func writeFiles(_ k: SSHKeyOnKey, to path: String, prompt: Prompt, force: Bool) throws {
        for file in SSHKeyOnKey.files(at: path) where access(file, F_OK) == 0 {
            try prompt.requireForce(force, otherwise: words("cli.ssh.fileNeedsForce", ["path": file]))
            try prompt.confirmUnlessForced(
                force, words("cli.ssh.replaceFile", ["path": file]), otherwise: words("cli.ssh.nothingWritten"))
        }
        do {
            try k.writeFiles(to: path)
        } catch {
            throw YktermError.failed(words("cli.ssh.unwritable", ["detail": "\(error)"]))
        }
    }

    static func sshDirectory() -> String { PathString.expandingHome("~/.ssh") }
}

extension SSHKeyJSON {
    init(_ k: SSHKeyOnKey) {
        type = k.key.typeName
        publicKey = k.authorizedKeysLine
        fingerprint = k.key.fingerprint
        application = k.application
        user = k.user
        credProtect = k.credProtect
        touchRequired = k.key.flags.contains(.userPresenceRequired)
        verifyRequired = k.key.flags.contains(.userVerificationRequired)
        credentialID = k.credentialID.hex
        file = k.exportName
    }
}
