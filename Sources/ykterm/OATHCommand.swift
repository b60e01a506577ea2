import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

struct OATHCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oath",
        abstract: "OATH accounts (TOTP and HOTP codes) on the key.",
        discussion: """
            Passwords are never taken from the command line: they are asked for without echo on a terminal, \
            or read from standard input one per line (after any secret or URI given as -), in the order the \
            command needs them. --remember keeps the derived access key (never the password) in \
            $XDG_CONFIG_HOME/ykterm/oath-keys.json, mode 0600.
            """,
        subcommands: [
            Info.self, List.self, Code.self, Add.self, Import.self, Delete.self, Rename.self, Diff.self,
            Password.self, Reset.self,
        ])
}

/// Options every `oath` subcommand shares.
struct OATHOptions: ParsableArguments {
    @OptionGroup var key: KeyOptions

    @Flag(name: .long, help: "Remember the access key for this key after a successful unlock.")
    var remember = false

    var choice: OATHChoice { OATHChoice(key: key.choice, remember: remember) }
}

/// The options of a command that may work on several keys (`oath add`): those of OATHOptions, with --device taking
/// a list, and --all-keys.
struct OATHKeysOptions: ParsableArguments {
    @OptionGroup var key: KeyOptions

    @Flag(name: .long, help: "Every key plugged in that has OATH.")
    var allKeys = false

    @Flag(name: .long, help: "Remember the access key for this key after a successful unlock.")
    var remember = false

    var devices: [String] { key.devices }
    var reader: String? { key.reader }

    /// More than one key: --all-keys, or a --device list.
    var several: Bool { allKeys || devices.count > 1 }

    func validate() throws {
        try key.refuse(allKeys: allKeys)
        // The virtual key is one key: no --device list beside it either.
        try key.refuse(allKeys: key.virtual && several)
    }

    /// The one key, when there is one.
    var choice: OATHChoice { OATHChoice(key: key.choice, remember: remember) }
}

/// OATHOptions as parsed: the key, and whether to remember its access key.
struct OATHChoice: Equatable, Sendable {
    var key: KeyChoice
    var remember = false
}

/// The command line's OATH operations on the key `options` chose. A key whose password neither a remembered
/// access key nor one given earlier in the command opens is asked for it (without echo on a terminal, else a
/// line of standard input), and the operation runs again with it (`--remember` keeps its access key); the key
/// is not held open while the user types, and the password is asked for at most once per command. A remembered
/// access key that no longer works is said to have been forgotten.
struct OATHCommandKey {
    let operations: OATHOperations
    let options: OATHChoice
    let prompt: Prompt
    private var held: SecretBytes?

    init(_ options: OATHChoice, prompt: Prompt) {
        self.operations = OATHOperations(options.key.opener(), store: RememberedKeys.reporting())
        self.options = options
        self.prompt = prompt
    }

    mutating func run<T: Sendable>(
        _ body: (OATHOperations, OATHOperations.Unlock) async throws
            -> OATHOperations.Outcome<T>
    ) async throws -> T {
        var outcome = try await body(operations, OATHOperations.Unlock(held: held))
        if case .locked(let opened) = outcome {
            if opened.rememberedForgotten {
                warn("ykterm: " + words("cli.oath.rememberedForgotten"))
            }
            let password = SecretBytes(utf8: try prompt.secret(words("oath.unlock.password")))
            outcome = try await body(operations, OATHOperations.Unlock(password: password, remember: options.remember))
        }
        switch outcome {
        case .done(let value, let opened):
            held = opened.accessKey
            return value
        case .locked: throw OATHError.passwordRequired
        }
    }
}

/// One OATH operation for the command line (`OATHCommandKey`).
func oathOperation<T: Sendable>(
    _ options: OATHChoice, prompt: Prompt,
    _ body: (OATHOperations, OATHOperations.Unlock) async throws
        -> OATHOperations.Outcome<T>
) async throws -> T {
    var key = OATHCommandKey(options, prompt: prompt)
    return try await key.run(body)
}

func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

extension OATHCommand {
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show the application's version, whether it has a password, and whether it is remembered.",
            discussion: "Nothing is unlocked: no password is asked for.")

        @OptionGroup var key: KeyOptions

        @Flag(name: .long, help: "JSON: version, password (whether the key has one), remembered.")
        var json = false

        func run() async throws {
            let status = try await OATHOperations(key.opener(for: .oath), store: RememberedKeys.reporting()).status()
            if json {
                try printJSON(
                    OATHInfoJSON(
                        version: status.version.description, password: status.hasPassword,
                        remembered: status.remembered))
                return
            }
            out(words("cli.oath.info.version", ["version": status.version.description]))
            let state = words(status.hasPassword ? "cli.oath.info.passwordSet" : "cli.oath.info.passwordNone")
            out(words("cli.oath.info.password", ["state": state]))
            if status.hasPassword && status.remembered { out(words("cli.oath.info.remembered")) }
        }
    }

    struct List: RequestCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the accounts.")

        @OptionGroup var options: OATHOptions

        @Flag(name: .long, help: "Print a JSON array (id, issuer, name, type, algorithm, digits, period, touch).")
        var json = false

        @Flag(
            name: .long,
            help:
                "Every key plugged in: each account once, with the keys that hold it (JSON: keys, with serial and name)."
        )
        var allKeys = false

        func validate() throws {
            try options.key.refuse(allKeys: allKeys)
        }

        /// The command line's values, as DirectCommandLine also reads them without ArgumentParser.
        var request: Request { Request(options: options.choice, json: json, allKeys: allKeys) }

        /// The work of `oath list`, from the values of its command line.
        struct Request: CommandRequest, Equatable, Sendable {
            var options: OATHChoice
            var json: Bool
            var allKeys = false

            func run() async throws {
                if allKeys { return try await OATHCommand.listAcrossKeys(options, json: json) }
                let prompt = Prompt()
                let entries = try await oathOperation(options, prompt: prompt) { operations, unlock in
                    try await operations.accounts(at: now(), unlock)
                }
                if json {
                    try printJSON(entries.map { OATHAccountJSON($0.credential, digits: $0.digits) })
                } else {
                    for c in entries.map(\.credential) {
                        var line = c.id.string
                        var tags = [String]()
                        if c.type == .hotp { tags.append("HOTP") }
                        if c.touch == true { tags.append(words("cli.oath.touchTag")) }
                        if !tags.isEmpty { line += "  [" + tags.concatenated(separator: ", ") + "]" }
                        out(line)
                    }
                }
            }
        }
    }

    struct Code: RequestCommand {
        static let configuration = CommandConfiguration(
            commandName: "code",
            abstract: "Show codes; QUERY keeps the accounts whose ID contains it.",
            discussion: """
                TOTP codes are calculated at once. HOTP and touch accounts are calculated only when QUERY \
                leaves just that account (a touch account then asks for a touch). With --single the query must \
                leave one account, and its code alone is printed (for scripts: ykterm oath code github -s).
                """)

        @OptionGroup var options: OATHOptions

        @Argument(help: "Part of an account ID (case-insensitive).")
        var query: String?

        @Flag(name: .long, help: "Print a JSON array (fields of list, plus code, valid_from, valid_to).")
        var json = false

        @Flag(
            name: .long,
            help:
                "Every key plugged in, asked at once: each account once, with the code of the first key that holds it and the keys that hold it (JSON: keys, with serial and name)."
        )
        var allKeys = false

        @Flag(name: [.long, .short], help: "Print only the code of the one account QUERY leaves (several: an error).")
        var single = false

        func validate() throws {
            try options.key.refuse(allKeys: allKeys)
            try refuseTogether("--single", single, with: [("--json", json), ("--all-keys", allKeys)])
        }

        /// The command line's values, as DirectCommandLine also reads them without ArgumentParser.
        var request: Request {
            Request(options: options.choice, query: query, json: json, allKeys: allKeys, single: single)
        }

        /// The work of `oath code`, from the values of its command line.
        struct Request: CommandRequest, Equatable, Sendable {
            var options: OATHChoice
            var query: String?
            var json: Bool
            var allKeys = false
            var single = false

            func run() async throws {
                if allKeys { return try await OATHCommand.codesAcrossKeys(options, query: query, json: json) }
                let prompt = Prompt()
                // With --single no query is the query that keeps every account: one left is calculated even when
                // it is a HOTP or touch account.
                let query = single ? self.query ?? "" : self.query
                let json = self.json
                // A touch account is said before the key waits (on standard error; with --json only on a terminal).
                let touching: @Sendable () -> Void = {
                    if !json || isatty(STDERR_FILENO) == 1 { TouchNotice.show() }
                }
                let rows = try await oathOperation(options, prompt: prompt) { operations, unlock in
                    // Only JSON shows the hash algorithm, which CALCULATE ALL does not give: LIST just for it.
                    try await operations.codes(matching: query, at: now(), algorithms: json, touching: touching, unlock)
                }
                if let query = self.query, rows.isEmpty {
                    throw YktermError.failed(words("cli.oath.noMatch", ["query": query]))
                }
                if single {
                    if rows.isEmpty { throw YktermError.failed(words("cli.oath.noAccounts")) }
                    guard rows.count == 1, let code = rows[0].entry.code?.value else {
                        guard let query = self.query else {
                            throw YktermError.usage(words("cli.oath.singleNeedsQuery", ["count": String(rows.count)]))
                        }
                        throw OATHOperationError.ambiguous(query, rows.map { $0.entry.credential.id.string })
                    }
                    return out(code)
                }
                if json {
                    try printJSON(
                        rows.map { row in
                            let e = row.entry
                            var c = e.credential
                            c.algorithm = row.listed?.algorithm
                            return OATHCodeJSON(
                                account: OATHAccountJSON(c, digits: e.digits), code: e.code?.value,
                                validFrom: e.code.map { Int($0.validFrom) },
                                validTo: e.code.flatMap { $0.validTo == Int64.max ? nil : Int($0.validTo) })
                        })
                } else {
                    let width = min(rows.map { $0.entry.credential.id.string.count }.max() ?? 0, 60)
                    let touchTag =
                        rows.contains { $0.entry.code == nil && $0.entry.credential.touch == true }
                        ? "[" + words("cli.oath.touchTag") + "]" : ""
                    // One write for all the lines (a write per line took as long as the codes' APDUs).
                    let lines = rows.map { row -> String in
                        let e = row.entry
                        let id = e.credential.id.string
                        let pad = String.spaces(max(width - id.count, 0))
                        let code =
                            e.code?.value
                            ?? (e.credential.touch == true ? touchTag : e.credential.type == .hotp ? "[HOTP]" : "")
                        return "\(id)\(pad)  \(code)"
                    }
                    if !lines.isEmpty { out(lines.concatenated(separator: "\n")) }
                }
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add an account from an otpauth:// URI, or from its fields.",
            discussion: """
                URI may be otpauth://totp/..., otpauth://hotp/..., or otpauth-migration://offline?data=... \
                (several accounts). Give - to read the URI from standard input; with --name and no --secret, \
                the secret is asked for without echo (or read from standard input). A URI or secret on the \
                command line is visible to other users of this machine while the command runs. An existing \
                account with the same ID is overwritten only after confirmation, or with --force.

                With --all-keys or --device A,B the account goes to each key (a daily key and its backup: a \
                secret cannot be read back from a key, so adding it to both at once is the only backup there is). \
                Each key answers for itself: one that is full, locked or pulled out is named, and the others keep \
                the account; the exit status is then 1.

                --qr IMAGE reads the URI from a QR code in a PNG or JPEG image (a screenshot of a site's enrolment \
                page, or of an authenticator app's export). --generate makes a random 160-bit secret for an account \
                given by --name and the other fields, and prints it once, as a URI and a QR code for a phone app, \
                before adding it.
                """)

        @OptionGroup var options: OATHKeysOptions

        @Argument(help: "otpauth:// or otpauth-migration:// URI, or - for standard input.")
        var uri: String?

        @Option(name: .long, help: "Issuer (e.g. the service's name).")
        var issuer: String?

        @Option(name: .long, help: "Account name.")
        var name: String?

        @Option(name: .long, help: "Base32 secret, or - to read it from standard input.")
        var secret: String?

        @Option(name: .long, help: "totp or hotp.")
        var type: String = "totp"

        @Option(name: .long, help: "SHA1, SHA256 or SHA512.")
        var algorithm: String = "SHA1"

        @Option(name: .long, help: "6, 7 or 8.")
        var digits = "6"

        @Option(name: .long, help: "TOTP period in seconds.")
        var period = "30"

        @Option(name: .long, help: "HOTP initial counter.")
        var counter = "0"

        @Flag(name: .long, help: "Require a touch for every code.")
        var touch = false

        @Flag(name: .long, help: "Overwrite an account with the same ID without asking.")
        var force = false

        @Option(
            name: .long,
            help: ArgumentHelp("A PNG or JPEG image with the account's QR code (instead of a URI).", valueName: "IMAGE")
        )
        var qr: String?

        @Flag(name: .long, help: "Make a random secret, and print it once as a URI and a QR code.")
        var generate = false

        @OptionGroup var pskc: PSKCOutputOptions

        func validate() throws {
            if generate && (secret != nil || uri != nil || qr != nil) {
                throw ValidationError(words("cli.oath.generateAlone"))
            }
            if (uri != nil || qr != nil) && (name != nil || secret != nil || issuer != nil) {
                throw ValidationError(words("cli.oath.uriOrFields"))
            }
            if uri != nil && qr != nil { throw ValidationError(words("cli.oath.uriOrImage")) }
            if uri == nil && qr == nil && name == nil {
                throw ValidationError(words("cli.oath.nothingToAdd"))
            }
        }

        func readAccounts(_ prompt: Prompt) throws -> [CredentialData] {
            if let qr {
                return OATHQR.touching(try OTPAuthURI.accounts(in: QRImage.accountURI(inFile: qr)), touch)
            }
            if var text = uri {
                if text == "-" {
                    text = try prompt.line(words("oath.add.uri"))
                } else {
                    warn("ykterm: " + words("cli.oath.uriOnCommandLine"))
                }
                var accounts = try OTPAuthURI.accounts(in: text.trimmingWhitespace)
                if touch {
                    accounts = accounts.map {
                        var a = $0; a.touch = true; return a
                    }
                }
                return accounts
            }
            var secretText: String
            if generate {
                secretText = OATHQR.generatedSecret()
            } else if let secret, secret != "-" {
                warn("ykterm: " + words("cli.oath.secretOnCommandLine"))
                secretText = secret
            } else {
                secretText = try prompt.secret(words("oath.add.secret"))
            }
            var fields = AccountFields(name: name ?? "", issuer: issuer, secret: secretText)
            secretText = ""
            fields.type = type
            fields.algorithm = algorithm
            fields.digits = digits
            fields.period = period
            fields.counter = counter
            fields.touch = touch
            return [try fields.credential()]
        }

        func run() async throws {
            let prompt = Prompt()
            let accounts = try readAccounts(prompt)
            for a in accounts { try a.id.validate() }
            let protection = try pskc.protection(prompt, force: force)
            if generate, let account = accounts.first { OATHQR.show(account) }
            try await OATHCommand.add(accounts, options, force: force, prompt: prompt)
            try pskc.write(accounts, protection)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete an account (asks first, unless --force).")

        @OptionGroup var options: OATHOptions

        @Argument(help: "The account's ID, or a unique part of it.")
        var id: String

        @Flag(name: .long, help: "Delete without asking.")
        var force = false

        @Flag(name: .long, help: "From every key plugged in that holds it (one question for all).")
        var allKeys = false

        func validate() throws {
            try options.key.refuse(allKeys: allKeys)
        }

        func run() async throws {
            let prompt = Prompt()
            let (id, force) = (self.id, self.force)
            if allKeys {
                return try await OATHCommand.deleteAcrossKeys(id, options.choice, force: force, prompt: prompt)
            }
            var key = OATHCommandKey(options.choice, prompt: prompt)
            // The account is found first, so that the question names it as the key has it; the key is not held
            // open while the question waits.
            let c = try OATHOperations.find(
                .matching(id),
                in: try await key.run { operations, unlock in
                    try await operations.list(unlock)
                })
            try prompt.requireForce(force, otherwise: words("cli.oath.deleteNeedsForce", ["account": c.id.string]))
            try prompt.confirmDeletion(force, words("cli.oath.deleteQuestion", ["account": c.id.string]))
            let deleted = try await key.run { operations, unlock in
                try await operations.delete(.account(c), unlock)
            }.detail
            out(words("oath.deleted", ["account": deleted]))
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rename",
            abstract: "Rename an account (firmware 5.3.1 and later).",
            discussion: "NEW_ID is [ISSUER:]NAME; the account keeps its type and period.")

        @OptionGroup var options: OATHOptions

        @Argument(help: "The account's ID, or a unique part of it.")
        var id: String

        @Argument(help: "The new [ISSUER:]NAME.")
        var newID: String

        @Flag(name: .long, help: "On every key plugged in that holds it.")
        var allKeys = false

        func validate() throws {
            try options.key.refuse(allKeys: allKeys)
        }

        func run() async throws {
            let prompt = Prompt()
            let (id, newText) = (self.id, self.newID)
            if allKeys {
                return try await OATHCommand.renameAcrossKeys(id, to: newText, options.choice, prompt: prompt)
            }
            let renamed = try await oathOperation(options.choice, prompt: prompt) { operations, unlock in
                try await operations.rename(.matching(id), to: newText, unlock)
            }.detail
            let (old, new) = (renamed.old, renamed.new)
            out(words("oath.renamed", ["old": old, "new": new]))
        }
    }
}

extension OATHAccountJSON {
    init(_ c: Credential, digits: Int?) {
        id = c.id.string
        issuer = c.issuer
        name = c.name
        type = c.type.description
        algorithm = c.algorithm?.rawValue
        self.digits = digits
        period = c.period
        touch = c.touch
    }
}

extension OATHCommand {
    /// Adds `accounts` to the key or keys `options` chose (`oath add`, `oath import`). On one key, every account that
    /// would replace one is asked about first (unless `force`): nothing is added unless all are confirmed, so a
    /// refusal leaves the key as it was.
    static func add(_ accounts: [CredentialData], _ options: OATHKeysOptions, force: Bool, prompt: Prompt) async throws
    {
        if options.several {
            return try await addAcrossKeys(accounts, options, force: force, prompt: prompt)
        }
        var key = OATHCommandKey(options.choice, prompt: prompt)
        var result = try await key.run { operations, unlock in
            try await operations.add(accounts, replacing: force, unlock)
        }
        if case .taken(let ids) = result {
            for id in ids {
                guard prompt.confirm(words("cli.oath.overwrite", ["account": id])) else {
                    throw OATHError.credentialExists(id)
                }
            }
            result = try await key.run { operations, unlock in
                try await operations.add(accounts, replacing: true, unlock)
            }
        }
        switch result {
        case .added(let ids, _): for id in ids { out(words("oath.added", ["account": id])) }
        case .taken(let ids): throw OATHError.credentialExists(ids[0])
        }
    }
}
