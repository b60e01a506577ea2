import ArgumentParser
import Dispatch
import AuthenticatorModel
import FoundationEssentials
import Glibc
import Synchronization
import KeyKit
import VirtualKey

struct FIDOCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fido",
        abstract: "FIDO2: information, PIN, settings, discoverable credentials, fingerprints, reset, self-test.",
        discussion: """
            USB keys are reached through hidraw (FIDO HID); with --reader, or when no FIDO HID device is \
            present, through pcscd (NFC readers). PINs are never taken from the command line: on a terminal \
            they are asked for without echo, otherwise read from standard input one per line (current PIN \
            first, then the new one).
            """,
        subcommands: [Info.self, PIN.self, Config.self, Credentials.self, Fingerprints.self, Reset.self, SelfTest.self])
}

/// Ctrl-C while a CTAP2 request is with the key (a touch, a fingerprint sample, or a slow key's keepalives): the
/// request is cancelled first (CTAPHID_CANCEL on its channel, or NFCCTAP_GETRESPONSE with the cancel flag) so the
/// key stops waiting, and the request throws `Interrupted`. On its way out the command may undo on the key what
/// it began (`fido fingerprints add` has the key drop the template: cancelCurrentEnrollment) — the requests after
/// the interrupted one go through as they are — and may give the reason the user is told; the top level
/// (`Ykterm.main`) then ends ykterm as Ctrl-C ends it (`end`): the terminal settings given back, SIGINT, which a
/// shell reports as status 130. A request the key finished before it saw the cancel keeps its answer, and the
/// next one throws. A second Ctrl-C ends ykterm at once, and so does the first when ykterm has not ended two
/// seconds after the cancel (a key that does not answer it, an undo that hangs). Outside such a request Ctrl-C
/// works as always.
enum FIDOInterrupt {
    /// Thrown by the request Ctrl-C cancelled (or, when the key finished that one, by the next); `reason`, set by
    /// a command that undid what it began, is what the user is told (through the explanation table).
    struct Interrupted: Error {
        var reason: (any Error)?
    }

    /// A request is with the key.
    private static let armed = Atomic<Bool>(false)
    /// Ctrl-C came while armed.
    private static let requested = Atomic<Bool>(false)
    /// `Interrupted` was thrown: requests since then undo what the command began.
    private static let thrown = Atomic<Bool>(false)
    /// `end` has begun.
    private static let ending = Atomic<Bool>(false)
    /// How long after the cancel ykterm ends whatever happens.
    static let deadline: UInt64 = 2_000_000_000
    /// The connection whose request is with the key, while `armed`: what the watch cancels.
    private static let current = Mutex<(any FIDOConnection)?>(nil)
    /// Looks for a claimed Ctrl-C every 20 ms from the first request on. A Dispatch timer, not a task per
    /// request: a request costs two stores instead of a task started and stopped (and Swift's first task that
    /// sleeps costs the runtime's lookup of `Never: Error`, 300,000 instructions), and the watch runs whatever
    /// the task pool is busy with. `nonisolated(unsafe)`: Dispatch sources may be used from any thread, but
    /// Dispatch does not say so to the compiler.
    nonisolated(unsafe) private static let watch: DispatchSourceTimer = {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "ykterm.interrupt-watch"))
        timer.schedule(deadline: .now() + .milliseconds(20), repeating: .milliseconds(20), leeway: .milliseconds(5))
        timer.setEventHandler {
            guard isRequested,
                let connection = current.withLock({ c in
                    defer { c = nil }; return c
                })
            else { return }
            watch.cancel()
            connection.requestCancel()
            Blocking.after(Double(deadline) / 1e9) { end(Interrupted()) }
        }
        timer.resume()
        return timer
    }()

    /// For the SIGINT handler (async-signal-safe: lock-free atomics only): true when it is to leave the
    /// interrupt to the request, which then cancels it.
    static func claim() -> Bool {
        guard armed.load(ordering: .sequentiallyConsistent) else { return false }
        return requested.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
    }

    static var isRequested: Bool { requested.load(ordering: .sequentiallyConsistent) }

    /// The interrupt, once: the first caller gets true and throws `Interrupted`.
    private static func throwOnce() -> Bool {
        !thrown.exchange(true, ordering: .sequentiallyConsistent)
    }

    /// Sends one CTAP2 request on `connection` with Ctrl-C cancelling it.
    static func send(
        _ connection: any FIDOConnection, _ request: [UInt8],
        progress: (@Sendable (FIDOProgress) -> Void)?
    ) async throws -> [UInt8] {
        if isRequested {
            if throwOnce() { throw Interrupted() }
            return try await connection.sendCBOR(request, progress: progress)
        }
        _ = watch
        current.withLock { $0 = connection }
        armed.store(true, ordering: .sequentiallyConsistent)
        defer {
            armed.store(false, ordering: .sequentiallyConsistent)
            current.withLock { $0 = nil }
        }
        let answer: [UInt8]
        do {
            answer = try await connection.sendCBOR(request, progress: progress)
        } catch {
            if isRequested && throwOnce() { throw Interrupted() }
            throw error
        }
        // A success the key gave before it saw the cancel stands; the next request throws.
        if isRequested && answer.first != CTAP2.ok && throwOnce() { throw Interrupted() }
        return answer
    }

    /// Ends ykterm as Ctrl-C does, saying why (the terminal settings given back first). Once: a second caller
    /// (the deadline, while the top level ends it) waits for the end.
    static func end(_ interrupted: Interrupted) -> Never {
        if ending.exchange(true, ordering: .sequentiallyConsistent) {
            while true { pause() }
        }
        warn("ykterm: " + explained(interrupted.reason ?? KeyRequestInterrupted()).1)
        Prompt.restoreTerminal()
        signal(SIGINT, SIG_DFL)
        // To the process, not this thread: the threads of Swift's task pool block signals.
        kill(getpid(), SIGINT)
        usleep(500_000)
        _exit(130)
    }
}

/// A FIDO connection whose CTAP2 requests Ctrl-C cancels on the key (see `FIDOInterrupt`).
final class InterruptibleFIDOConnection: FIDOConnection {
    let inner: any FIDOConnection

    init(_ inner: any FIDOConnection) { self.inner = inner }

    var name: String { inner.name }
    var announcesCTAP2: Bool? { inner.announcesCTAP2 }

    func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        try await FIDOInterrupt.send(inner, request, progress: progress)
    }

    func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] { try await inner.sendU2F(apdu) }
    func cancel() async { await inner.cancel() }
    func requestCancel() { inner.requestCancel() }
    func close() async { await inner.close() }
}

/// The FIDO operations on the key `key` chose: the in-process virtual key over CTAPHID, a FIDO HID device, or a
/// key on PC/SC (`SelectedKey.openFIDO`), each connection wrapped so that Ctrl-C cancels the request under way
/// (`InterruptibleFIDOConnection`). A command is one task that closes the connection after its last request, so
/// a FIDO HID device is used inline (CTAPHIDConnection: no thread hand-offs); Ctrl-C reaches the request through
/// `requestCancel`, which needs no task. A touch the key waits for is asked for once.
func fidoOperations(_ key: KeyChoice) -> FIDOOperations {
    fidoOperations(key.opener())
}

/// The FIDO operations on the key `opener` opens, as `fidoOperations(_:)` makes them for a chosen key.
func fidoOperations(_ opener: any KeyOpener) -> FIDOOperations {
    FIDOOperations(
        WrappedFIDOOpener(opener, wrap: InterruptibleFIDOConnection.init),
        hooks: FIDOOperations.Hooks(progress: { progress, connection in
            if progress == .waitingForUserPresence { TouchNotice.once(key: connection.name) }
        }))
}

extension FIDOCommand {
    struct Credentials: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "credentials",
            abstract: "Discoverable credentials (passkeys) on the key: list, update the user names, delete.",
            subcommands: [List.self, Update.self, Delete.self])

        /// Every discoverable credential on the chosen key, with the FIDO operations and the PIN they were read
        /// with (asked for once the key is known to have one, and to do what `check` asks of it; the key is not
        /// held while the user types).
        static func all(_ key: KeyChoice, prompt: Prompt, check: (FIDOInfo) throws -> Void = { _ in }) async throws
            -> (credentials: [FIDOCredential], operations: FIDOOperations, pin: String)
        {
            let (operations, info) = try await FIDOCommand.pinOperations(key, pinSet: true)
            try check(info)
            let pin = try askPIN(prompt, words("fido.pin.pin"), minimum: info.minPINLength, new: false)
            return (try await operations.credentials(.pin(pin)).credentials, operations, pin)
        }

        struct List: RequestCommand {
            static let configuration = CommandConfiguration(
                commandName: "list", abstract: "List credentials by relying party (needs the PIN).",
                discussion: """
                    With --all-keys, every key plugged in that has FIDO2, one PIN prompt per key (in the order \
                    the keys are found: on a terminal each asked for by name, otherwise one line of standard input \
                    each): each relying party once, with the keys that hold a credential for it and "(not on KEY)" \
                    for those that hold none, then its credentials, each with its key. A key without a PIN or \
                    without credential management is named and left out; one that refuses (a wrong PIN) is named \
                    and the others go on (exit status 1).
                    """)

            @OptionGroup var key: KeyOptions

            @Flag(
                name: .long,
                help: ArgumentHelp(
                    "JSON: rp_id, credential_id (hex), user_id (hex), user_name, display_name, cred_protect, large_blob_key."
                ))
            var json = false

            @Flag(
                name: [.long, .customShort("c")],
                help: ArgumentHelp(
                    "CSV as ykman's --csv: credential_id, rp_id, user_name, user_display_name, user_id (IDs in hex)."))
            var csv = false

            @Flag(
                name: .long,
                help:
                    "Every key plugged in: each relying party once, with the keys that hold it (JSON: rp_id, rp_name, keys, not_on, credentials with their key's serial and name)."
            )
            var allKeys = false

            func validate() throws {
                try key.refuse(allKeys: allKeys)
                try refuseTogether("--csv", csv, with: [("--json", json), ("--all-keys", allKeys)])
            }

            /// The command line's values, as DirectCommandLine also reads them without ArgumentParser.
            var request: Request { Request(key: key.choice, json: json, allKeys: allKeys, csv: csv) }

            /// The work of `fido credentials list`, from the values of its command line.
            struct Request: CommandRequest, Equatable, Sendable {
                var key: KeyChoice
                var json: Bool
                var allKeys = false
                var csv = false

                func run() async throws {
                    if allKeys { return try await Credentials.listAcrossKeys(reader: key.reader, json: json) }
                    let creds = try await Credentials.all(key, prompt: Prompt()).credentials
                    if csv {
                        let header = ["credential_id", "rp_id", "user_name", "user_display_name", "user_id"]
                        let rows = creds.map {
                            [$0.credentialID.hex, $0.rpID, $0.userName ?? "", $0.displayName ?? "", $0.userID.hex]
                        }
                        StandardStream.write(CSV.text([header] + rows), to: 1)
                        return
                    }
                    if json {
                        try printJSON(
                            creds.map {
                                CredentialJSON(
                                    rpID: $0.rpID, credentialID: $0.credentialID.hex, userID: $0.userID.hex,
                                    userName: $0.userName, displayName: $0.displayName,
                                    credProtect: $0.credProtect, largeBlobKey: $0.largeBlobKey)
                            })
                        return
                    }
                    if creds.isEmpty { out(words("cli.fido.credentials.none")); return }
                    // One write for all the lines, as `oath code` does.
                    var lines = [String]()
                    for (rp, group) in Dictionary(grouping: creds, by: \.rpID).sorted(by: { $0.key < $1.key }) {
                        lines.append(rp)
                        for c in group { lines.append(Credentials.line(c)) }
                    }
                    out(lines.concatenated(separator: "\n"))
                }
            }
        }

        /// A credential's line under its relying party: who it is for and its ID ("on KEY" with `key`), then its
        /// protection level and whether it has a large-blob key.
        static func line(_ c: FIDOCredential, on key: String? = nil) -> String {
            let who = [c.userName, c.displayName.map { "(\($0))" }].compactMap { $0 }.concatenated(separator: " ")
            var details = [String]()
            if let level = c.credProtect {
                details.append(words("cli.fido.credentials.credProtect", ["level": "\(level)"]))
            }
            if c.largeBlobKey { details.append(words("cli.fido.credentials.largeBlobKey")) }
            var arguments = ["who": who.isEmpty ? words("cli.fido.credentials.noName") : who, "id": c.credentialID.hex]
            if let key { arguments["key"] = key }
            return "  " + words(key == nil ? "cli.fido.credentials.line" : "cli.fido.credentials.lineOn", arguments)
                + details.map { "  " + $0 }.concatenated()
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "delete",
                abstract: "Delete a credential by its ID (hex, or a unique start of it); needs the PIN.")

            @OptionGroup var target: HexIDDeletion<FIDOCredential>

            func run() async throws {
                let prompt = Prompt()
                let (c, operations, pin) = try await target.confirmed(
                    prompt, otherwise: words("cli.fido.credentials.deleteNeedsForce"),
                    among: { try await Credentials.all($0.choice, prompt: prompt) },
                    question: {
                        words("cli.fido.credentials.deleteQuestion", ["user": $0.userName ?? "?", "rp": $0.rpID])
                    })
                _ = try await operations.deleteCredential(c.credentialID, .pin(pin))
                out(words("cli.fido.credentials.deleted", ["rp": c.rpID, "user": c.userName ?? c.userID.hex]))
            }
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Reset the FIDO application: deletes every FIDO credential and the PIN.",
            discussion: """
                Keys accept a reset only within seconds of being inserted, with a touch. ykterm asks for \
                confirmation (unless --force), then, if the key refuses because it was inserted too long \
                ago, asks you to remove and re-insert it, waits for it, and sends the reset at once.
                """)

        @OptionGroup var key: KeyOptions

        @Flag(name: .long, help: "Do not ask for confirmation.")
        var force = false

        @Option(name: .long, help: "Seconds to wait for the key to be removed and inserted again.")
        var wait: Int = 30

        func run() async throws {
            let prompt = Prompt()
            try prompt.confirmReset(force, words("cli.fido.reset.question"))
            do {
                _ = try await fidoOperations(key.choice).reset()
            } catch let e as CTAPError where e.code == CTAPError.notAllowed && !key.virtual {
                warn(words("cli.fido.reset.reinsert"))
                try await waitForReinsertion(timeout: Double(wait))
                _ = try await fidoOperations(key.choice).reset()
            }
            out(words("cli.fido.reset.done"))
        }

        private func waitForReinsertion(timeout: Double) async throws {
            let selector = key.selector
            let deadline = Date().addingTimeInterval(timeout)
            var left = false
            let monitor = KeyMonitor()
            let events = monitor.events()
            let timer = Task {
                try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            }
            defer { timer.cancel() }
            for await event in events {
                if Date() > deadline { break }
                switch event {
                case .keyLeft(let id) where selector.matches(readerName: String(id.dropFirst(5))):
                    left = true
                case .keyArrived(let d) where left && selector.matches(readerName: d.name):
                    return
                default: break
                }
            }
            throw YktermError.failed(words("cli.fido.reset.timeout"))
        }
    }

    struct SelfTest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Make a credential and an assertion with a throwaway relying party and check both signatures.",
            discussion: """
                Uses the relying party ykterm-selftest.invalid. With a PIN set, the PIN is asked for and the \
                credential is made discoverable, then deleted again through credential management.
                """)

        @OptionGroup var key: KeyOptions

        func run() async throws {
            let rpID = "ykterm-selftest.invalid"
            let test = try await FIDOCommand.askingPIN(key) { try await $0.selfTest(rpID: rpID, pin: $1) }
            var lines = [
                "ok  " + words("cli.fido.test.made", ["format": test.format]),
                "ok  " + words("cli.fido.test.asserted", ["counter": "\(test.counter)"]),
            ]
            if test.deleted { lines.append("ok  " + words("cli.fido.test.deleted")) }
            lines.forEach(out)
            out(words("cli.fido.test.passed"))
        }
    }
}

/// A FIDO credential or fingerprint as a command names it: its ID in hex, or a unique start of it.
protocol HexIdentified {
    /// The ID, in lower-case hex.
    var hexID: String { get }
    /// The help of the argument that names one.
    static var idHelp: String { get }
    /// The error for a start of an ID that none has.
    static func noSuch(_ query: String) -> any Error
    /// The words for a start of an ID that more than one has.
    static var ambiguous: String { get }
}

/// The argument of `fido credentials update` and `delete` and `fido fingerprints rename` and `delete`: the ID of
/// the `Item` they work on.
struct HexID<Item: HexIdentified>: ParsableArguments {
    @Argument(help: ArgumentHelp(Item.idHelp))
    var id: String

    /// The one item among `items` whose ID starts with it.
    func one(of items: [Item]) throws -> Item {
        let query = id.lowercased()
        let matches = items.filter { $0.hexID.hasPrefix(query) }
        guard matches.count == 1, !query.isEmpty else {
            if matches.isEmpty { throw Item.noSuch(query) }
            throw YktermError.usage(words(Item.ambiguous, ["id": query]))
        }
        return matches[0]
    }
}

/// What `fido credentials delete` and `fido fingerprints delete` take: the key, the ID of the `Item` to delete, and
/// --force, which is needed without a terminal to ask on.
struct HexIDDeletion<Item: HexIdentified>: ParsableArguments {
    @OptionGroup var key: KeyOptions

    @OptionGroup var item: HexID<Item>

    @Flag(name: .long, help: "Delete without asking.")
    var force = false

    /// The item the ID names among those `items` reads after the PIN, with the operations and the PIN it read them
    /// with, once deleting it is confirmed: without a terminal and --force, `refusal` is thrown before the PIN is
    /// asked for; on a terminal, `question` about the item is asked unless --force.
    func confirmed(
        _ prompt: Prompt, otherwise refusal: String,
        among items: (KeyOptions) async throws -> ([Item], FIDOOperations, String),
        question: (Item) -> String
    ) async throws -> (Item, FIDOOperations, String) {
        try prompt.requireForce(force, otherwise: refusal)
        let (all, operations, pin) = try await items(key)
        let found = try item.one(of: all)
        try prompt.confirmDeletion(force, question(found))
        return (found, operations, pin)
    }
}

extension FIDOCredential: HexIdentified {
    var hexID: String { credentialID.hex }
    static let idHelp = "Credential ID in hex (a unique prefix is enough)."
    static func noSuch(_ query: String) -> any Error {
        YktermError.failed(words("cli.fido.credentials.noSuch", ["id": query]))
    }
    static let ambiguous = "cli.fido.credentials.ambiguous"
}

extension FIDOFingerprint: HexIdentified {
    var hexID: String { templateID.hex }
    static let idHelp = "Fingerprint ID in hex (a unique prefix is enough)."
    static func noSuch(_ query: String) -> any Error {
        FIDOSessionError.noSuchFingerprint(templateID: (try? Hex.decode(query)) ?? [])
    }
    static let ambiguous = "cli.fido.fingerprints.ambiguous"
}
