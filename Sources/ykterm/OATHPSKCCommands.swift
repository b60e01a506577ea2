import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

/// How `oath add --output` protects the PSKC file it writes.
enum PSKCEncryption: String, ExpressibleByArgument, CaseIterable {
    case key, passphrase
}

/// `oath add --output FILE [--encrypt key|passphrase]`: the account written to a PSKC file (RFC 6030) as well as
/// added to the key, as `ykman oath accounts add -O` does. The key or passphrase is never an argument: it is
/// asked for (twice on a terminal), or read from a line of standard input.
struct PSKCOutputOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also write the account to FILE as PSKC (RFC 6030), mode 0600; plain unless --encrypt.",
            valueName: "FILE"))
    var output: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Encrypt the PSKC file (AES-CBC and HMAC) with a pre-shared key (32 or 64 hex digits) or a passphrase (PBKDF2), asked for after the secret.",
            valueName: "key|passphrase"))
    var encrypt: PSKCEncryption?

    func validate() throws {
        if encrypt != nil && output == nil { throw ValidationError(words("cli.pskc.encryptNeedsOutput")) }
    }

    /// The file's protection, asked for now (before the key is opened); nil without --output. An existing FILE
    /// is refused unless `force`, before anything is asked.
    func protection(_ prompt: Prompt, force: Bool) throws -> PSKC.Protection? {
        guard let output else { return nil }
        if !force && access(output, F_OK) == 0 {
            throw YktermError.usage(words("cli.pskc.outputExists", ["path": output]))
        }
        switch encrypt {
        case nil: return PSKC.Protection.none
        case .passphrase:
            let passphrase = try prompt.newSecret(
                words("cli.pskc.newPassphrase"), again: words("cli.pskc.newPassphraseAgain"))
            guard passphrase.count >= PSKC.minimumPassphraseLength else {
                throw YktermError.usage(
                    words("cli.pskc.passphraseShort", ["minimum": String(PSKC.minimumPassphraseLength)]))
            }
            return .passphrase(SecretBytes(utf8: passphrase))
        case .key:
            var key = try decodeHex(
                try prompt.newSecret(words("cli.pskc.newKey"), again: words("cli.pskc.newKeyAgain")).trimmingSpaces,
                what: words("cli.pskc.what.key"), secret: true)
            guard key.count == 16 || key.count == 32 else {
                let count = key.count
                SecretBytes.wipe(&key)
                throw PSKCError.keyLength(count)
            }
            return .key(SecretBytes(wiping: &key))
        }
    }

    /// Writes `accounts` to FILE with `protection`.
    func write(_ accounts: [CredentialData], _ protection: PSKC.Protection?) throws {
        guard let output, let protection else { return }
        var document = try PSKC.document(accounts, protection: protection)
        defer { SecretBytes.wipe(&document) }
        try PSKCFiles.write(document, to: output)
        out(words("cli.pskc.written", ["path": output]))
    }
}

enum PSKCFiles {
    /// The most a PSKC file may hold (a file of thousands of accounts is a few megabytes).
    static let maximumSize = 16 << 20

    /// Writes `bytes` to `path`, created (or emptied) with mode 0600: a PSKC file holds secrets.
    static func write(_ bytes: [UInt8], to path: String) throws {
        try PIVFiles.write(bytes, toFile: path, flags: O_CREAT | O_TRUNC, mode: 0o600)
    }

    /// The accounts in the PSKC file at `path`, its key or passphrase asked for when it is encrypted. Key
    /// packages that are no OATH account (a PIN, a hash the key lacks) are named on standard error.
    static func accounts(_ path: String, prompt: Prompt) throws -> [CredentialData] {
        var bytes = try PIVFiles.read(path)
        defer { SecretBytes.wipe(&bytes) }
        guard bytes.count <= maximumSize else { throw PSKCError.unsupported("\(bytes.count) bytes") }
        let file = try PSKC.File(bytes)
        var key: SecretBytes?
        switch file.needs {
        case .nothing: break
        case .passphrase:
            let passphrase = SecretBytes(utf8: try prompt.secret(words("cli.pskc.passphrase")))
            key = try file.key(passphrase: passphrase)
        case .key(_, let length):
            var bytes = try decodeHex(
                try prompt.secret(words("cli.pskc.key", ["digits": String(length * 2)])).trimmingSpaces,
                what: words("cli.pskc.what.key"), secret: true)
            key = SecretBytes(wiping: &bytes)
        }
        let read = try file.accounts(key: key)
        for skipped in read.skipped {
            warn("ykterm: " + words("cli.pskc.skipped", ["id": skipped.id, "reason": reason(skipped.reason)]))
        }
        guard !read.accounts.isEmpty else { throw YktermError.failed(words("cli.pskc.noAccounts", ["path": path])) }
        return read.accounts
    }

    static func reason(_ reason: PSKC.SkipReason) -> String {
        switch reason {
        case .algorithm(let a): return words("cli.pskc.skip.algorithm", ["value": a])
        case .responseFormat(let f): return words("cli.pskc.skip.responseFormat", ["value": f])
        case .suite(let s): return words("cli.pskc.skip.suite", ["value": s])
        case .noSecret: return words("cli.pskc.skip.noSecret")
        case .startTime(let t): return words("cli.pskc.skip.startTime", ["value": t])
        }
    }
}

extension OATHCommand {
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Add every OATH account of a PSKC file (RFC 6030).",
            discussion: """
                Reads the HOTP and TOTP key packages of FILE (what ykman oath accounts add -O writes, and what \
                token vendors ship) and adds each to the key; other key packages (a PIN, an unknown algorithm) \
                are named and left out. An encrypted file's pre-shared key (hex) or passphrase is asked for \
                without echo, or read from the first line of standard input; a wrong one is refused by the \
                file's MAC before anything is added. The account's name is the key package's UserId (its CN), \
                else its FriendlyName or Id; the issuer is Issuer, else the part of FriendlyName before a colon. \
                An existing account with the same ID is overwritten only after confirmation, or with --force; \
                with --all-keys or --device A,B the accounts go to each key, as oath add does.
                """)

        @OptionGroup var options: OATHKeysOptions

        @Argument(help: ArgumentHelp("The PSKC file.", valueName: "file"))
        var file: String

        @Flag(name: .long, help: "Require a touch for every code.")
        var touch = false

        @Flag(name: .long, help: "Overwrite accounts with the same IDs without asking.")
        var force = false

        func run() async throws {
            let prompt = Prompt()
            var accounts = try PSKCFiles.accounts(file, prompt: prompt)
            if touch {
                accounts = accounts.map {
                    var a = $0; a.touch = true; return a
                }
            }
            for a in accounts { try a.id.validate() }
            try await OATHCommand.add(accounts, options, force: force, prompt: prompt)
        }
    }
}
