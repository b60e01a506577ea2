import ArgumentParser
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
        subcommands: [List.self, Code.self, Add.self, Delete.self, Rename.self, Password.self, Reset.self])
}

/// Options every `oath` subcommand shares.
struct OATHOptions: ParsableArguments {
    @OptionGroup var key: KeyOptions

    @Flag(name: .long, help: "Remember the access key for this key after a successful unlock.")
    var remember = false

    var choice: OATHChoice { OATHChoice(key: key.choice, remember: remember) }
}

/// OATHOptions as parsed: the key, and whether to remember its access key.
struct OATHChoice: Equatable, Sendable {
    var key: KeyChoice
    var remember = false
}

func withOATH<T>(_ options: OATHOptions, prompt: Prompt, unlock: Bool = true,
                 _ body: (OATHSession) async throws -> T) async throws -> T {
    try await withOATH(options.choice, prompt: prompt, unlock: unlock, body)
}

/// Connects, SELECTs OATH, unlocks when needed, runs `body`, closes. Every OATH command is one task with one
/// connection, so its pcsc-lite calls are made inline (`KeyChoice.inlineCalls`).
func withOATH<T>(_ options: OATHChoice, prompt: Prompt, unlock: Bool = true,
                 _ body: (OATHSession) async throws -> T) async throws -> T {
    let connection = try await options.key.connect(calls: KeyChoice.inlineCalls)
    do {
        let session = try await OATHSession.make(connection: connection)
        if unlock { try await unlockIfNeeded(session, remember: options.remember, prompt: prompt) }
        let result = try await body(session)
        await connection.close()
        return result
    } catch {
        await connection.close()
        throw error
    }
}

func unlockIfNeeded(_ session: OATHSession, remember: Bool, prompt: Prompt,
                    label: String = "Password") async throws {
    let access = OATHAccess(store: RememberedKeys.reporting())
    let known = try await access.unlockWithKnownKey(session)
    if known.rememberedForgotten {
        warn("ykterm: the remembered OATH password no longer works and was forgotten")
    }
    guard known.needsPassword else { return }
    _ = try await access.unlock(session, password: SecretBytes(utf8: try prompt.secret(label)), remember: remember)
}

/// Finds one account by exact ID, or by a unique case-insensitive part of it.
func findCredential(_ query: String, in credentials: [Credential]) throws -> Credential {
    if let exact = credentials.first(where: { $0.id.string == query }) { return exact }
    let q = query.lowercased()
    let exactCI = credentials.filter { $0.id.string.lowercased() == q }
    if exactCI.count == 1 { return exactCI[0] }
    let matches = credentials.filter { $0.id.string.lowercased().contains(q) }
    switch matches.count {
    case 0: throw OATHError.noSuchCredential(query)
    case 1: return matches[0]
    default:
        throw YktermError.usage("\"\(query)\" matches several accounts; give more of the name:\n"
                                + matches.map { "  " + $0.id.string }.joined(separator: "\n"))
    }
}

func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

extension OATHCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the accounts.")

        @OptionGroup var options: OATHOptions

        @Flag(name: .long, help: "Print a JSON array (id, issuer, name, type, algorithm, digits, period, touch).")
        var json = false

        /// The command line's values, as DirectCommandLine also reads them without ArgumentParser.
        var request: Request { Request(options: options.choice, json: json) }

        func run() async throws { try await request.run() }

        /// The work of `oath list`, from the values of its command line.
        struct Request: Equatable, Sendable {
            var options: OATHChoice
            var json: Bool

            func run() async throws {
                let prompt = Prompt()
                let entries = try await withOATH(options, prompt: prompt) { session -> [(Credential, Int?)] in
                    let listed = try await session.list()
                    let calculated = try await session.calculateAll(at: now())
                    return listed.sorted { $0.id.displayOrder < $1.id.displayOrder }.map { c in
                        let e = calculated.first { $0.credential.rawID == c.rawID }
                        var c = c
                        c.touch = e?.credential.touch
                        return (c, e?.digits)
                    }
                }
                if json {
                    try printJSON(entries.map { credentialJSON($0.0, digits: $0.1) })
                } else {
                    for (c, _) in entries {
                        var line = c.id.string
                        var tags = [String]()
                        if c.type == .hotp { tags.append("HOTP") }
                        if c.touch == true { tags.append("touch") }
                        if !tags.isEmpty { line += "  [" + tags.concatenated(separator: ", ") + "]" }
                        out(line)
                    }
                }
            }
        }
    }

    struct Code: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "code",
            abstract: "Show codes; QUERY keeps the accounts whose ID contains it.",
            discussion: """
            TOTP codes are calculated at once. HOTP and touch accounts are calculated only when QUERY \
            leaves just that account (a touch account then asks for a touch).
            """)

        @OptionGroup var options: OATHOptions

        @Argument(help: "Part of an account ID (case-insensitive).")
        var query: String?

        @Flag(name: .long, help: "Print a JSON array (fields of list, plus code, valid_from, valid_to).")
        var json = false

        /// The command line's values, as DirectCommandLine also reads them without ArgumentParser.
        var request: Request { Request(options: options.choice, query: query, json: json) }

        func run() async throws { try await request.run() }

        /// The work of `oath code`, from the values of its command line.
        struct Request: Equatable, Sendable {
            var options: OATHChoice
            var query: String?
            var json: Bool

            func run() async throws {
                let prompt = Prompt()
                let query = self.query
                let json = self.json
                let rows = try await withOATH(options, prompt: prompt) { session -> [(OATHSession.Entry, Credential?)] in
                    let time = now()
                    var entries = try await session.calculateAll(at: time)
                    // Only JSON shows the hash algorithm, which CALCULATE ALL does not give: LIST just for it.
                    let listed = json ? try await session.list() : []
                    if let query {
                        let q = query.lowercased()
                        let exact = entries.filter { $0.credential.id.string.lowercased() == q }
                        entries = exact.count == 1 ? exact
                            : entries.filter { $0.credential.id.string.lowercased().contains(q) }
                        if entries.count == 1, entries[0].code == nil {
                            if entries[0].credential.touch == true, !json || isatty(STDERR_FILENO) == 1 {
                                warn("Touch your key…")
                            }
                            entries[0].code = try await session.calculate(entries[0].credential, at: now())
                        }
                    }
                    let byID = Dictionary(listed.map { ($0.rawID, $0) }, uniquingKeysWith: { first, _ in first })
                    // In the order the TUI shows them (the key's own order is the order they were added).
                    entries.sort { $0.credential.id.displayOrder < $1.credential.id.displayOrder }
                    return entries.map { e in (e, byID[e.credential.rawID]) }
                }
                if let query, rows.isEmpty {
                    throw YktermError.failed("no account matches \"\(query)\"")
                }
                if json {
                    try printJSON(rows.map { e, listed in
                        var c = e.credential
                        c.algorithm = listed?.algorithm
                        var o = credentialJSON(c, digits: e.digits)
                        o["code"] = e.code?.value ?? JSONNull()
                        o["valid_from"] = e.code.map { Int($0.validFrom) as Any } ?? JSONNull()
                        o["valid_to"] = e.code.flatMap { $0.validTo == Int64.max ? nil : Int($0.validTo) as Any }
                            ?? JSONNull()
                        return o
                    })
                } else {
                    let width = min(rows.map { $0.0.credential.id.string.count }.max() ?? 0, 60)
                    // One write for all the lines (a write per line took as long as the codes' APDUs).
                    let lines = rows.map { e, _ -> String in
                        let id = e.credential.id.string
                        let pad = String.spaces(max(width - id.count, 0))
                        let code = e.code?.value
                            ?? (e.credential.touch == true ? "[touch]" : e.credential.type == .hotp ? "[HOTP]" : "")
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
            """)

        @OptionGroup var options: OATHOptions

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

        func validate() throws {
            if uri != nil && (name != nil || secret != nil || issuer != nil) {
                throw ValidationError("give either a URI or --name/--secret, not both")
            }
            if uri == nil && name == nil {
                throw ValidationError("give an otpauth:// URI (or -), or --name with --secret")
            }
        }

        func readAccounts(_ prompt: Prompt) throws -> [CredentialData] {
            if var text = uri {
                if text == "-" {
                    text = try prompt.line("otpauth URI")
                } else {
                    warn("ykterm: warning: a URI on the command line holds the secret and is visible to other "
                         + "users (ps); use - to read it from standard input")
                }
                var accounts = try OTPAuthURI.accounts(in: text.trimmingWhitespace)
                if touch { accounts = accounts.map { var a = $0; a.touch = true; return a } }
                return accounts
            }
            var secretText: String
            if let secret, secret != "-" {
                warn("ykterm: warning: a secret on the command line is visible to other users (ps); "
                     + "use --secret - to read it from standard input")
                secretText = secret
            } else {
                secretText = try prompt.secret("Secret (Base32)")
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
            let force = self.force
            let added = try await withOATH(options, prompt: prompt) { session -> [String] in
                let existing = Set(try await session.list().map(\.id.string))
                var added = [String]()
                for a in accounts {
                    let id = a.id.string
                    if existing.contains(id) && !force {
                        guard prompt.confirm("An account \"\(id)\" exists. Overwrite it?") else {
                            throw OATHError.credentialExists(id)
                        }
                    }
                    try await session.put(a)
                    added.append(id)
                }
                return added
            }
            for id in added { out("Added \(id)") }
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

        func run() async throws {
            let prompt = Prompt()
            let (id, force) = (self.id, self.force)
            let deleted = try await withOATH(options, prompt: prompt) { session -> String in
                let c = try findCredential(id, in: try await session.list())
                try prompt.requireForce(force, for: "deleting \"\(c.id)\"")
                try prompt.confirmUnlessForced(force, "Delete \"\(c.id)\"? Its codes cannot be recovered.",
                                                nothingWas: "deleted")
                try await session.delete(c)
                return c.id.string
            }
            out("Deleted \(deleted)")
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

        func run() async throws {
            let prompt = Prompt()
            let (id, newText) = (self.id, self.newID)
            let (old, new) = try await withOATH(options, prompt: prompt) { session -> (String, String) in
                let credentials = try await session.list()
                let c = try findCredential(id, in: credentials)
                var target = CredentialID(name: newText, issuer: nil, type: c.type, period: c.period)
                if let colon = newText.firstIndex(of: ":"), colon != newText.startIndex {
                    target = CredentialID(name: String(newText[newText.index(after: colon)...]),
                                          issuer: String(newText[..<colon]), type: c.type, period: c.period)
                }
                if credentials.contains(where: { $0.rawID == target.bytes && $0.rawID != c.rawID }) {
                    throw YktermError.failed("an account \"\(target)\" already exists; nothing was renamed")
                }
                try await session.rename(c, to: target)
                return (c.id.string, target.string)
            }
            out("Renamed \(old) to \(new)")
        }
    }
}

func credentialJSON(_ c: Credential, digits: Int?) -> [String: Any] {
    [
        "id": c.id.string,
        "issuer": c.issuer ?? JSONNull(),
        "name": c.name,
        "type": c.type.description,
        "algorithm": c.algorithm?.rawValue ?? JSONNull(),
        "digits": digits ?? JSONNull(),
        "period": c.period,
        "touch": c.touch ?? JSONNull(),
    ]
}
