import KeyKit

/// One account on the OATH tab.
public struct OATHAccount: Sendable, Hashable, Identifiable {
    public var credential: Credential
    public var digits: Int
    public var code: Code?
    /// A CALCULATE for this account is on its way (a touch account waits for the touch).
    public var calculating = false

    public init(credential: Credential, digits: Int, code: Code? = nil) {
        self.credential = credential
        self.digits = digits
        self.code = code
    }

    public var id: String { credential.id.string }
    public var requiresTouch: Bool { credential.touch == true }
    public var isHOTP: Bool { credential.type == .hotp }
    /// HOTP and touch accounts are calculated only when asked for.
    public var onRequest: Bool { isHOTP || requiresTouch }
    public var period: Int { credential.period }
    public var issuer: String? { credential.issuer }
    public var name: String { credential.name }

    /// The code while it is valid; a HOTP code stays until the next one is asked for.
    public func validCode(at now: Double) -> Code? {
        guard let code else { return nil }
        if isHOTP { return code }
        return Double(code.validTo) > now ? code : nil
    }
}

/// What the OATH tab knows about the selected key.
public typealias OATHPhase = KeyTabPhase

/// The dialogs of the OATH tab.
public enum OATHDialogKind: Sendable, Hashable {
    case unlock
    /// The password of another key of the all-keys view (its key ID).
    case unlockOther(keyID: String)
    /// Adding an account; `filledFromURI` is the URI its fields were last filled from (they are the user's to
    /// change after that).
    case add(filledFromURI: String?)
    case rename(accountID: String)
    case delete(accountID: String)
    case password

    /// Whether this is the Add dialog, whatever it was filled from.
    public var isAdd: Bool {
        if case .add = self { return true }
        return false
    }

    /// Whether the dialog can act on several keys (with check boxes of the other keys).
    public var acrossKeys: Bool {
        switch self {
        case .add, .rename, .delete: return true
        case .unlock, .unlockOther, .password: return false
        }
    }
}

public typealias OATHDialog = TabDialog<OATHDialogKind>

public struct OATHTabState: Sendable, Hashable {
    public var phase: OATHPhase = .noKey
    /// The key the accounts belong to (its descriptor id).
    public var keyID: String?
    public var deviceID: String?
    public var version: Version?
    public var hasPassword = false
    public var accounts: [OATHAccount] = []
    /// Pinned accounts (credential id strings), stored per device ID.
    public var pinned: Set<String> = []
    public var filter = TextField(maxLength: 64)
    public var filterFocused = false
    /// The selected account's id (kept across refreshes and re-sorting).
    public var selectedID: String?
    /// A CALCULATE ALL is on its way.
    public var refreshing = false
    public var dialog: OATHDialog?
    /// The account to copy when its requested code arrives.
    public var copyWhenReady: String?
    /// The key that calculates `copyWhenReady` (nil: the selected key).
    public var copyWhenReadyOn: String?

    /// The accounts of every key with OATH at once (`[oath] all_keys`, toggled with `A`), or the selected key's.
    public var allKeys = false
    /// The comparison of the selected key's accounts with each other key's is shown (`D`), scrolled by this many lines.
    public var comparing = false
    public var compareScroll = 0
    /// The Add dialog's check boxes for the other keys start checked (`[oath] add_to_all_keys`).
    public var addToAllKeys = false
    /// In the all-keys view: the keys other than the selected one, by key ID (the selected key's accounts are the
    /// fields above, as in the one-key view).
    public var others: [String: OATHKeyAccounts] = [:]
    /// The Add dialog's accounts on their way to the keys, and what each key answered.
    public var change: OATHKeysChange?
    /// The Add dialog's secret was made in it (Ctrl-G): once the account is added, it is shown once (`shown`).
    public var secretMade = false
    /// The image (the path in the Add dialog's URI field) being read for its QR code.
    public var readingImage: String?
    /// The account whose secret the Add dialog made, shown once as a URI and a QR code for a phone app; it stays in
    /// memory only until it is closed.
    public var shown: OATHShownAccount?

    public init() {}

    /// Accounts as shown: filtered, pinned first, then by issuer and name (case-insensitive).
    public var visibleAccounts: [OATHAccount] {
        // The sort keys are made once per account, not in every comparison: with a thousand accounts this
        // runs on every filter keystroke.
        let needle = filter.text.lowercased()
        var rows: [(pinned: Bool, issuer: String, name: String, account: OATHAccount)] = []
        rows.reserveCapacity(accounts.count)
        for account in accounts {
            if !needle.isEmpty && !account.id.lowercased().contains(needle) { continue }
            let key = account.credential.id.displayOrder
            rows.append((pinned.contains(account.id), key.issuer, key.name, account))
        }
        rows.sort { a, b in
            if a.pinned != b.pinned { return a.pinned }
            if a.issuer != b.issuer { return a.issuer < b.issuer }
            if a.name != b.name { return a.name < b.name }
            return a.account.id < b.account.id
        }
        return rows.map(\.account)
    }

    public var selectedAccount: OATHAccount? {
        let visible = visibleAccounts
        return visible.first { $0.id == selectedID } ?? visible.first
    }

    public var selectedIndex: Int? {
        let visible = visibleAccounts
        guard !visible.isEmpty else { return nil }
        return visible.firstIndex { $0.id == selectedID } ?? 0
    }

    /// The TOTP accounts (not touch) whose code is missing or expired at `now`, split into those the
    /// 30-second CALCULATE ALL refreshes and those with another period, calculated one by one.
    public func dueAccounts(at now: Double) -> (all: Bool, single: [OATHAccount]) {
        Self.due(accounts, at: now)
    }

    static func due(_ accounts: [OATHAccount], at now: Double) -> (all: Bool, single: [OATHAccount]) {
        var all = false
        var single = [OATHAccount]()
        for a in accounts where !a.onRequest && !a.calculating && a.validCode(at: now) == nil {
            if a.period == CredentialData.defaultPeriod { all = true } else { single.append(a) }
        }
        return (all, single)
    }

    /// When the next shown code expires (the next time the key needs to be asked), if any.
    public func nextExpiry(after now: Double) -> Double? {
        accounts.compactMap { a -> Double? in
            guard !a.isHOTP, let c = a.code else { return nil }
            let t = Double(c.validTo)
            return t > now ? t : nil
        }.min()
    }

    /// Whether a code counts down on the tab (the screen then wakes every second).
    public var counting: Bool {
        func counts(_ accounts: [OATHAccount]) -> Bool { accounts.contains { !$0.isHOTP && $0.code != nil } }
        return (phase == .ready && counts(accounts))
            || others.values.contains { $0.phase == .ready && counts($0.accounts) }
    }
}

/// Another key's accounts in the all-keys view: what the one-key view keeps of the selected key.
public struct OATHKeyAccounts: Sendable, Hashable {
    public var keyID: String
    public var phase: OATHPhase = .loading
    public var deviceID: String?
    public var version: Version?
    public var accounts: [OATHAccount] = []
    /// A refresh is on its way.
    public var refreshing = false
    /// The key asked for its password and the unlock dialog was shown for it: it asks once (R asks again).
    public var askedForPassword = false

    public init(keyID: String) {
        self.keyID = keyID
    }
}

/// What a key answered a change asked of several keys (Add, and rename or delete with "also on").
public enum OATHKeyAnswer: Sendable, Hashable {
    case working
    case done
    /// Why not (full, locked, pulled out ...).
    case failed(UIText)
    /// The key holds accounts of these IDs already: Enter asks whether to replace them there.
    case taken([String])
}

/// What a change across keys does.
public enum OATHKeysChangeKind: Sendable, Hashable {
    case add
    /// Renamed to this ID.
    case rename(to: String)
    case delete

    /// The operation of the work's answers that belong to it.
    var operation: OATHFailure.Operation {
        switch self {
        case .add: return .add
        case .rename: return .rename
        case .delete: return .delete
        }
    }
}

/// A dialog's change on its way to the keys (the selected key, and the other keys checked): the Add dialog's accounts,
/// or the account the rename or delete dialog acts on.
public struct OATHKeysChange: Sendable, Hashable {
    public var kind: OATHKeysChangeKind
    /// The IDs of the accounts changed.
    public var ids: [String]
    /// Each key's answer, by key ID, in the order the keys were asked.
    public var keys: [String]
    public var answers: [String: OATHKeyAnswer]
    /// How each key is called, as it was when asked (a key pulled out is still named).
    public var labels: [String: String] = [:]
    /// The selected key's own words for what it did (the status line's, when it was the only key).
    public var text: UIText?

    public init(_ kind: OATHKeysChangeKind = .add, ids: [String], keys: [String]) {
        self.kind = kind
        self.ids = ids
        self.keys = keys
        answers = Dictionary(uniqueKeysWithValues: keys.map { ($0, .working) })
    }

    public var working: Bool { answers.values.contains(.working) }
    /// The keys that did it.
    public var done: [String] { keys.filter { answers[$0] == .done } }
}

extension CredentialID {
    /// How accounts are listed, in the TUI and by `oath code` / `oath list`: by issuer (an account without
    /// one by its name), then name, case-insensitive; the ID decides between equals.
    public var displayOrder: (issuer: String, name: String, id: String) {
        ((issuer ?? name).lowercased(), name.lowercased(), string)
    }
}

/// The OATH tab's answers from its work.
public enum OATHTabMsg: Sendable {
    case opened(keyID: String, OATHSnapshot)
    case locked(keyID: String, deviceID: String, version: Version)
    case codes(keyID: String, [OATHSession.Entry])
    case code(keyID: String, accountID: String, Code)
    case unlocked(keyID: String, OATHSnapshot, remembered: Bool)
    case changed(keyID: String, OATHSnapshot, UIText)
    case failed(keyID: String, OATHFailure)
    /// A new random secret for the Add dialog (Base32).
    case secretMade(String)
    /// The Add dialog's image at `path`: the account URI in its QR code, or why there is none.
    case imageRead(path: String, Result<String, QRImageError>)
}

/// The OATH tab's work for the runner.
public enum OATHTabCommand: Sendable, Equatable {
    case open(KeyDescriptor, time: Double)
    /// CALCULATE ALL (30-second accounts) and single CALCULATEs for `single` (other periods).
    case refresh(KeyDescriptor, time: Double, all: Bool, single: [Credential])
    case calculate(KeyDescriptor, Credential, time: Double)
    case unlock(KeyDescriptor, password: String, remember: Bool, time: Double)
    /// PUT each account (an export may carry several); `overwrite` replaces accounts of the same name, which
    /// the user confirmed.
    case add(KeyDescriptor, [CredentialData], overwrite: Bool, time: Double)
    case rename(KeyDescriptor, Credential, to: CredentialID, time: Double)
    case delete(KeyDescriptor, Credential, time: Double)
    /// Set, change (current given) or remove (new empty) the password.
    case setPassword(KeyDescriptor, current: String?, new: String, time: Double)
    /// Make a random secret for the Add dialog (no key involved).
    case makeSecret
    /// Read the QR code in the image at `path` for the Add dialog (no key involved).
    case readImage(path: String)
    /// Each command on its own key, all at once (the all-keys view's refreshes, an account added to several
    /// keys): each posts its own answer as its key gives it, so one key never waits for another.
    indirect case each([OATHTabCommand])

    /// The keys the command works on.
    public var keys: [KeyDescriptor] {
        switch self {
        case .open(let d, _), .refresh(let d, _, _, _), .calculate(let d, _, _), .unlock(let d, _, _, _),
            .add(let d, _, _, _), .rename(let d, _, _, _), .delete(let d, _, _), .setPassword(let d, _, _, _):
            return [d]
        case .makeSecret, .readImage:
            return []
        case .each(let commands):
            return commands.flatMap(\.keys)
        }
    }

    /// One command for `commands`: the command itself when there is one, else all of them at once.
    static func together(_ commands: [OATHTabCommand]) -> [Command] {
        switch commands.count {
        case 0: return []
        case 1: return [.oath(commands[0])]
        default: return [.oath(.each(commands))]
        }
    }
}
