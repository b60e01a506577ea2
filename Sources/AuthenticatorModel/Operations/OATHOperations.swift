import KeyKit

/// The OATH application's actions, written once for the TUI's OATH tab and `ykterm oath`.
///
/// Each opens the key's smart-card interface (`withSmartCard`, which always closes it), selects OATH, gets past
/// its password with what `Unlock` holds, does one thing and returns a typed result. None prints, prompts or
/// formats. What needs the user's answer comes back as a value — `.locked` (the password), `AddResult.taken`
/// (overwrite?) — and the face asks in its own way (a prompt or `--force` on the command line, a dialog in the
/// TUI), then calls again with the answer. The key is never held open while a person types.
public struct OATHOperations: Sendable {
    public let opener: any SmartCardOpener
    public let access: OATHAccess
    public let observer: (@Sendable (APDUExchange) -> Void)?

    public init(
        _ opener: any SmartCardOpener, store: RememberedKeys,
        observer: (@Sendable (APDUExchange) -> Void)? = nil
    ) {
        self.opener = opener
        self.access = OATHAccess(store: store)
        self.observer = observer
    }

    /// How an operation gets past the OATH password.
    public struct Unlock: Sendable {
        /// The access key held in memory for this key (the TUI keeps one per key while it runs).
        public var held: SecretBytes?
        /// The password the user gave after `.locked`.
        public var password: SecretBytes?
        /// Remember the access key on this computer once the password has unlocked the key.
        public var remember: Bool

        public init(held: SecretBytes? = nil, password: SecretBytes? = nil, remember: Bool = false) {
            self.held = held
            self.password = password
            self.remember = remember
        }
    }

    /// The application as an operation found it.
    public struct Opened: Sendable {
        public var deviceID: String
        public var version: Version
        /// The key has a password (whether or not it had to be given this time).
        public var hasPassword: Bool
        /// The access key that opened it, nil without a password: what the TUI holds for its next operation.
        public var accessKey: SecretBytes?
        /// The access key remembered on this computer no longer opened the key and has been forgotten.
        public var rememberedForgotten = false
    }

    /// What an operation came to.
    public enum Outcome<T: Sendable>: Sendable {
        case done(T, Opened)
        /// The key has a password that neither the held nor the remembered access key opens: ask for it, then
        /// call again with `Unlock.password`. Nothing was done.
        case locked(Opened)

        /// The result turned into another (a face's message), `.locked` left as it is.
        public func map<U: Sendable>(_ transform: (T, Opened) throws -> U) rethrows -> Outcome<U> {
            switch self {
            case .done(let value, let opened): return .done(try transform(value, opened), opened)
            case .locked(let opened): return .locked(opened)
            }
        }
    }

    /// An account as `list` gives it: the touch flag from CALCULATE ALL, the digits when a code was calculated.
    public struct Account: Sendable {
        public var credential: Credential
        public var digits: Int?
    }

    /// A code as `codes(matching:)` gives it, with the account as LIST gives it when asked for.
    public struct CodeRow: Sendable {
        public var entry: OATHSession.Entry
        public var listed: Credential?
    }

    /// An account renamed.
    public struct Renamed: Sendable, Equatable {
        public var old: String
        public var new: String
    }

    /// An account by itself, or by what the user typed of its ID.
    public enum Target: Sendable {
        case account(Credential)
        /// The exact ID, else the one account whose ID matches it without regard to case or contains it.
        case matching(String)
    }

    /// What `add` came to.
    public enum AddResult: Sendable {
        /// Added (or replaced) these IDs; the codes afterwards when asked for.
        case added([String], entries: [OATHSession.Entry]?)
        /// These IDs exist on the key and replacing was not allowed: nothing was added. Ask, then call again.
        case taken([String])
    }

    /// A change of the account list, and the codes afterwards when asked for.
    public struct Changed<Detail: Sendable>: Sendable {
        public var detail: Detail
        public var entries: [OATHSession.Entry]?
    }

    /// What a password change is to do.
    public enum PasswordChange: Sendable {
        case set(new: SecretBytes)
        case change(current: SecretBytes, new: SecretBytes)
        case clear(current: SecretBytes)
    }

    /// What a password change did.
    public enum PasswordChanged: Sendable, Equatable {
        case set, changed, cleared
    }

    /// A password change done: what it did, the key afterwards (`accessKey` the new access key, nil when
    /// cleared) and the codes when asked for.
    public struct PasswordOutcome: Sendable {
        public var done: PasswordChanged
        public var opened: Opened
        public var entries: [OATHSession.Entry]?
    }

    // MARK: - Reading

    /// The accounts as LIST gives them (no touch flag), in the key's order.
    public func list(_ unlock: Unlock = Unlock()) async throws -> Outcome<[Credential]> {
        try await run(unlock) { session, _ in try await session.list() }
    }

    /// Every account, in the order the TUI shows them.
    public func accounts(at time: Int64, _ unlock: Unlock = Unlock()) async throws -> Outcome<[Account]> {
        try await run(unlock) { session, _ in
            let listed = try await session.list()
            let calculated = try await session.calculateAll(at: time)
            return listed.sorted { $0.id.displayOrder < $1.id.displayOrder }.map { c in
                let entry = calculated.first { $0.credential.rawID == c.rawID }
                var c = c
                c.touch = entry?.credential.touch
                return Account(credential: c, digits: entry?.digits)
            }
        }
    }

    /// The codes CALCULATE ALL gives at `time` (HOTP and touch accounts without one).
    public func codes(at time: Int64, otherPeriods: Bool = true, _ unlock: Unlock = Unlock()) async throws
        -> Outcome<[OATHSession.Entry]>
    {
        try await run(unlock) { session, _ in try await session.calculateAll(at: time, otherPeriods: otherPeriods) }
    }

    /// The codes of `single` (accounts calculated one by one: HOTP, touch, other periods) at `time`, after those
    /// of CALCULATE ALL when `all` is set.
    public func refresh(at time: Int64, all: Bool, single: [Credential], _ unlock: Unlock = Unlock()) async throws
        -> Outcome<[OATHSession.Entry]>
    {
        try await run(unlock) { session, _ in
            var entries = all ? try await session.calculateAll(at: time, otherPeriods: false) : []
            for credential in single {
                let code = try await session.calculate(credential, at: time)
                entries.removeAll { $0.credential.id == credential.id }
                entries.append(OATHSession.Entry(credential: credential, code: code, digits: code.value.count))
            }
            return entries
        }
    }

    /// One account's code at `time` (a touch account waits for the touch; `touching` is called before).
    public func code(
        _ credential: Credential, at time: Int64, touching: (@Sendable () -> Void)? = nil,
        _ unlock: Unlock = Unlock()
    ) async throws -> Outcome<Code> {
        try await run(unlock) { session, _ in
            if credential.touch == true { touching?() }
            return try await session.calculate(credential, at: time)
        }
    }

    /// The codes of the accounts whose ID contains `query` (all without one), in the order the TUI shows them.
    /// When one account is left and CALCULATE ALL gave it no code (HOTP, touch), it is calculated on its own:
    /// `touching` is called before a touch account's. With `algorithms`, each entry carries its account as LIST
    /// gives it (CALCULATE ALL does not give the hash algorithm).
    public func codes(
        matching query: String?, at time: Int64, algorithms: Bool,
        touching: (@Sendable () -> Void)? = nil, _ unlock: Unlock = Unlock()
    ) async throws
        -> Outcome<[CodeRow]>
    {
        try await run(unlock) { session, _ in
            var entries = try await session.calculateAll(at: time)
            let listed = algorithms ? try await session.list() : []
            if let query {
                let q = query.lowercased()
                let exact = entries.filter { $0.credential.id.string.lowercased() == q }
                entries = exact.count == 1 ? exact : entries.filter { $0.credential.id.string.lowercased().contains(q) }
                if entries.count == 1, entries[0].code == nil {
                    if entries[0].credential.touch == true { touching?() }
                    entries[0].code = try await session.calculate(entries[0].credential, at: time)
                }
            }
            let byID = Dictionary(listed.map { ($0.rawID, $0) }, uniquingKeysWith: { first, _ in first })
            entries.sort { $0.credential.id.displayOrder < $1.credential.id.displayOrder }
            return entries.map { CodeRow(entry: $0, listed: byID[$0.credential.rawID]) }
        }
    }

    // MARK: - Changing

    /// Adds `accounts`. An ID the key already holds is replaced only when `replacing` is set; otherwise nothing
    /// is added and the taken IDs come back. With `refreshAt`, the codes at that time come back too.
    public func add(
        _ accounts: [CredentialData], replacing: Bool, refreshAt: Int64? = nil,
        _ unlock: Unlock = Unlock()
    ) async throws -> Outcome<AddResult> {
        for account in accounts { try account.id.validate() }
        return try await run(unlock) { session, _ in
            let existing = Set(try await session.list().map(\.id.string))
            let taken = accounts.map(\.id.string).filter { existing.contains($0) }
            if !replacing && !taken.isEmpty { return .taken(taken) }
            for account in accounts { _ = try await session.put(account) }
            return .added(accounts.map(\.id.string), entries: try await refresh(session, refreshAt))
        }
    }

    /// Renames an account to `newID` ([ISSUER:]NAME; it keeps its type and period). Another account with that
    /// ID is `OATHOperationError.renameTargetTaken`. Returns the old and the new ID.
    public func rename(
        _ target: Target, to newID: String, refreshAt: Int64? = nil,
        _ unlock: Unlock = Unlock()
    ) async throws -> Outcome<Changed<Renamed>> {
        try await run(unlock) { session, _ in
            let credentials = try await session.list()
            let c = try Self.find(target, in: credentials)
            let id = Self.credentialID(newID, like: c)
            if credentials.contains(where: { $0.rawID == id.bytes && $0.rawID != c.rawID }) {
                throw OATHOperationError.renameTargetTaken(id.string)
            }
            _ = try await session.rename(c, to: id)
            return Changed(
                detail: Renamed(old: c.id.string, new: id.string), entries: try await refresh(session, refreshAt))
        }
    }

    /// Deletes an account; returns its ID.
    public func delete(_ target: Target, refreshAt: Int64? = nil, _ unlock: Unlock = Unlock()) async throws
        -> Outcome<Changed<String>>
    {
        try await run(unlock) { session, _ in
            let c = try Self.find(target, in: try await session.list())
            try await session.delete(c)
            return Changed(detail: c.id.string, entries: try await refresh(session, refreshAt))
        }
    }

    /// What the key is, without unlocking it: whether it has a password, and its device ID.
    public func inspect() async throws -> Opened {
        try await withSmartCard(opener) { c in await Self.opened(try await make(c)) }
    }

    /// The application at a glance (`ykterm oath info`): its version, whether it has a password, and whether an
    /// access key for it is remembered on this computer. Nothing is unlocked.
    public struct Status: Sendable, Equatable {
        public var version: Version
        public var hasPassword: Bool
        public var remembered: Bool
    }

    /// The application's `Status`, without unlocking it.
    public func status() async throws -> Status {
        let opened = try await inspect()
        var key = try access.store.key(for: opened.deviceID)
        defer { if key != nil { SecretBytes.wipe(&key!) } }
        return Status(version: opened.version, hasPassword: opened.hasPassword, remembered: key != nil)
    }

    /// Unlocks the key with `password` and remembers its access key on this computer, for the commands after
    /// (ykman's `oath access remember`). A key without a password is `OATHOperationError.noPassword`, a wrong
    /// password `OATHError.wrongPassword`; neither remembers anything.
    public func remember(password: SecretBytes) async throws -> Opened {
        try await withSmartCard(opener) { c in
            let session = try await make(c)
            var opened = await Self.opened(session)
            guard opened.hasPassword else { throw OATHOperationError.noPassword }
            opened.accessKey = try await access.unlock(session, password: password, remember: true)
            return opened
        }
    }

    /// Sets, changes or clears the password; the current one proves knowing it (a wrong one changes nothing).
    /// `set` on a key that has one is `OATHOperationError.hasPassword`, `change` or `clear` on a key without
    /// one `.noPassword`. The remembered access key follows (`OATHAccess.setPassword`). `Opened.accessKey` is
    /// the new access key.
    public func setPassword(_ change: PasswordChange, remember: Bool, refreshAt: Int64? = nil) async throws
        -> PasswordOutcome
    {
        try await withSmartCard(opener) { c in
            let session = try await make(c)
            var opened = await Self.opened(session)
            let hasPassword = opened.hasPassword
            let current: SecretBytes?, new: SecretBytes?, done: PasswordChanged
            switch change {
            case .set(let n):
                guard !hasPassword else { throw OATHOperationError.hasPassword }
                (current, new, done) = (nil, n, .set)
            case .change(let cur, let n):
                guard hasPassword else { throw OATHOperationError.noPassword }
                (current, new, done) = (cur, n, .changed)
            case .clear(let cur):
                guard hasPassword else { throw OATHOperationError.noPassword }
                (current, new, done) = (cur, nil, .cleared)
            }
            opened.accessKey = try await access.setPassword(session, current: current, new: new, remember: remember)
            opened.hasPassword = done != .cleared
            return PasswordOutcome(done: done, opened: opened, entries: try await refresh(session, refreshAt))
        }
    }

    /// Forgets the access key remembered on this computer for this key; false when none was.
    public func forgetRemembered() async throws -> Bool {
        let opened = try await inspect()
        return try access.store.forget(opened.deviceID)
    }

    /// Deletes every account and the password (and the remembered access key of the key it was).
    public func reset() async throws {
        try await withSmartCard(opener) { c in try await access.reset(try await make(c)) }
    }

    // MARK: - Finding an account

    /// The account `target` names in `credentials`: an exact ID, else the one whose ID matches without regard to
    /// case, else the one whose ID contains it. None is `OATHError.noSuchCredential`, several
    /// `OATHOperationError.ambiguous`.
    public static func find(_ target: Target, in credentials: [Credential]) throws -> Credential {
        switch target {
        case .account(let c):
            guard let found = credentials.first(where: { $0.rawID == c.rawID }) else {
                throw OATHError.noSuchCredential(c.id.string)
            }
            return found
        case .matching(let query):
            if let exact = credentials.first(where: { $0.id.string == query }) { return exact }
            let q = query.lowercased()
            let sameButCase = credentials.filter { $0.id.string.lowercased() == q }
            if sameButCase.count == 1 { return sameButCase[0] }
            let matches = credentials.filter { $0.id.string.lowercased().contains(q) }
            switch matches.count {
            case 0: throw OATHError.noSuchCredential(query)
            case 1: return matches[0]
            default: throw OATHOperationError.ambiguous(query, matches.map(\.id.string))
            }
        }
    }

    /// `text` ([ISSUER:]NAME) as the ID of an account of `c`'s type and period.
    public static func credentialID(_ text: String, like c: Credential) -> CredentialID {
        if let colon = text.firstIndex(of: ":"), colon != text.startIndex {
            return CredentialID(
                name: String(text[text.index(after: colon)...]), issuer: String(text[..<colon]),
                type: c.type, period: c.period)
        }
        return CredentialID(name: text, issuer: nil, type: c.type, period: c.period)
    }

    // MARK: - Opening

    private func make(_ connection: any SmartCardConnection) async throws -> OATHSession {
        try await OATHSession.make(connection: connection, observer: observer)
    }

    private static func opened(_ session: OATHSession) async -> Opened {
        Opened(
            deviceID: await session.deviceID, version: session.version, hasPassword: await session.isLocked,
            accessKey: nil)
    }

    private func refresh(_ session: OATHSession, _ time: Int64?) async throws -> [OATHSession.Entry]? {
        guard let time else { return nil }
        return try await session.calculateAll(at: time)
    }

    /// Opens the key, selects OATH and unlocks it: with the password when one is given, else with the held access
    /// key or the one remembered on this computer; `.locked` when none of them does. Then `body`.
    private func run<T: Sendable>(_ unlock: Unlock, _ body: (OATHSession, Opened) async throws -> T) async throws
        -> Outcome<T>
    {
        try await withSmartCard(opener) { c in
            let session = try await make(c)
            var opened = await Self.opened(session)
            if let password = unlock.password {
                opened.accessKey = try await access.unlock(session, password: password, remember: unlock.remember)
            } else {
                let known = try await access.unlockWithKnownKey(session, held: unlock.held)
                opened.accessKey = known.key
                opened.rememberedForgotten = known.rememberedForgotten
                if known.needsPassword { return .locked(opened) }
            }
            return .done(try await body(session, opened), opened)
        }
    }
}

/// What an OATH operation refuses, beyond what the key says (`OATHError`).
public enum OATHOperationError: Error, Equatable, Sendable {
    /// What the user typed matches several accounts.
    case ambiguous(String, [String])
    /// A rename to the ID of another account.
    case renameTargetTaken(String)
    /// Setting a password on a key that has one.
    case hasPassword
    /// Changing or clearing the password of a key without one.
    case noPassword
}
