import KeyKit

// The OATH tab's all-keys view (`A`, `[oath] all_keys`): the accounts of every key with OATH at once, each account
// once with the keys that hold it. The selected key is kept as in the one-key view (`OATHTabState`'s own fields);
// the other keys are `OATHTabState.others`, answered by the same messages (each names its key).

/// One account of the all-keys view.
public struct OATHMergedAccount: Sendable, Hashable, Identifiable {
    /// The account as shown: from the first key that holds it with a code, else from the first key that holds it.
    public var account: OATHAccount
    /// The key `account` is from.
    public var keyID: String
    /// The keys that hold it, in the order of `AppState.oathKeys`.
    public var holders: [String]
    /// The keys whose accounts are known and that do not hold it.
    public var missing: [String]

    public var id: String { account.id }
}

extension AppState {
    /// The keys plugged in that carry OATH, in the order the key switcher lists them: the order of "daily · backup",
    /// and the first that holds an account is the one it is calculated on.
    public var oathKeys: [KeyEntry] {
        keys.filter { key in
            guard key.descriptor.has(.oath) else { return false }
            if let apps = key.info?.applications, !apps.isEmpty, !apps.contains("OATH") { return false }
            return true
        }
    }

    /// How the OATH tab calls a key: the name given it, else its serial, else its reader's name.
    public func keyLabel(_ key: KeyEntry) -> String {
        givenName(of: key) ?? key.knownSerial.map(String.init) ?? key.descriptor.name
    }

    /// The label of the key with `id` (its ID when it is gone).
    public func keyLabel(id: String) -> String {
        keys.first { $0.id == id }.map(keyLabel) ?? id
    }

    /// What the OATH tab has of a key: the selected key's state, or another key's in the all-keys view.
    public func oathAccounts(of keyID: String) -> (phase: OATHPhase, accounts: [OATHAccount])? {
        if keyID == selectedKeyID { return (oath.phase, oath.accounts) }
        return oath.others[keyID].map { ($0.phase, $0.accounts) }
    }

    /// The keys whose accounts are known: read, or being read again with those of last time still shown.
    public var oathAnsweredKeys: [String] {
        oathKeys.map(\.id).filter { id in
            guard let (phase, accounts) = oathAccounts(of: id) else { return false }
            return phase == .ready || (phase == .loading && !accounts.isEmpty)
        }
    }

    /// Every account of the keys once, in the order the tab lists accounts (not filtered, not pinned first).
    public var mergedOATHAccounts: [OATHMergedAccount] {
        let answered = oathAnsweredKeys
        let perKey = answered.map { oathAccounts(of: $0)?.accounts ?? [] }
        return OATHAcrossKeys.merge(perKey) { $0.credential.id }.map { m in
            let shown = m.holders.first { $0.row.validCode(at: now) != nil } ?? m.holders[0]
            let holders = m.keys.map { answered[$0] }
            return OATHMergedAccount(
                account: shown.row, keyID: answered[shown.key], holders: holders,
                missing: answered.filter { !holders.contains($0) })
        }
    }

    /// The all-keys view's rows as shown: filtered, pinned (on the selected key) first.
    public var visibleOATHRows: [OATHMergedAccount] {
        let needle = oath.filter.text.lowercased()
        let rows = mergedOATHAccounts.filter { needle.isEmpty || $0.id.lowercased().contains(needle) }
        return rows.filter { oath.pinned.contains($0.id) } + rows.filter { !oath.pinned.contains($0.id) }
    }

    /// The IDs of the accounts the OATH tab lists, in the order shown.
    var oathVisibleIDs: [String] {
        oath.allKeys ? visibleOATHRows.map(\.id) : oath.visibleAccounts.map(\.id)
    }

    /// The all-keys view's selected row.
    public var selectedOATHRow: OATHMergedAccount? {
        let rows = visibleOATHRows
        return rows.first { $0.id == oath.selectedID } ?? rows.first
    }

    /// The keys the Add dialog offers besides the selected one: the other keys with OATH (in the all-keys view,
    /// those whose OATH application could be read or is behind a password).
    var otherOATHKeys: [KeyEntry] {
        oathKeys.filter { key in
            guard key.id != selectedKeyID else { return false }
            guard oath.allKeys, let other = oath.others[key.id] else { return true }
            if case .unavailable = other.phase { return false }
            return true
        }
    }
}

// MARK: - The toggle, and the keys it reads

/// `A`: the all-keys view on or off; the choice is written to the config file for the next start.
func toggleAllKeys(_ state: inout AppState) -> [Command] {
    state.oath.allKeys.toggle()
    state.status = StatusMessage(
        UIText(state.oath.allKeys ? "oath.allKeys.on" : "oath.allKeys.off"), kind: .info,
        expires: state.now + statusSeconds)
    var commands: [Command] = [.rememberOATHAllKeys(state.oath.allKeys)]
    if state.oath.allKeys {
        commands += openOtherKeys(&state)
    } else {
        state.oath.others = [:]
        if state.oath.copyWhenReadyOn != state.selectedKeyID { state.oath.copyWhenReady = nil }
        state.oath.copyWhenReadyOn = nil
        if case .unlockOther = state.oath.dialog?.kind { state.oath.dialog = nil }
    }
    return commands
}

/// Reads the OATH application of each key with OATH that the all-keys view does not have yet, all at once.
func openOtherKeys(_ state: inout AppState) -> [Command] {
    guard state.oath.allKeys else { return [] }
    var commands = [OATHTabCommand]()
    for key in state.oathKeys where key.id != state.selectedKeyID && state.oath.others[key.id] == nil {
        state.oath.others[key.id] = OATHKeyAccounts(keyID: key.id)
        commands.append(.open(key.descriptor, time: state.now))
    }
    return OATHTabCommand.together(commands)
}

/// A key was probed: in the all-keys view a new key joins, and one that could not be read is read again.
func oathKeyProbed(_ state: inout AppState, keyID: String) -> [Command] {
    guard state.oath.allKeys, keyID != state.selectedKeyID else { return [] }
    if let other = state.oath.others[keyID], case .unavailable = other.phase,
        let key = state.keys.first(where: { $0.id == keyID })
    {
        state.oath.others[keyID]?.phase = .loading
        return [.oath(.open(key.descriptor, time: state.now))]
    }
    return openOtherKeys(&state)
}

/// A key left: only its part of the all-keys view goes (its accounts, its marks); an account on its way to it
/// from the Add dialog is said to have missed it.
func oathKeyLeft(_ state: inout AppState, keyID: String) {
    state.oath.others[keyID] = nil
    if state.oath.copyWhenReadyOn == keyID {
        state.oath.copyWhenReady = nil
        state.oath.copyWhenReadyOn = nil
    }
    if case .unlockOther(keyID) = state.oath.dialog?.kind { state.oath.dialog = nil }
    guard var dialog = state.oath.dialog, dialog.kind.acrossKeys else { return }
    let field = AlsoOnField(keyID).rawValue
    if let i = dialog.form.fields.firstIndex(where: { $0.id == field }) {
        dialog.form.fields.remove(at: i)
        dialog.form.focus = min(dialog.form.focus, dialog.form.fields.count - 1)
        state.oath.dialog = dialog
    }
    if state.oath.change?.answers[keyID] == .working {
        state.oath.change?.answers[keyID] = .failed(UIText("oath.add.keyLeft"))
        finishChange(&state)
    }
}

extension OATHTabState {
    /// The tab for the key `keyID` (nil: none) after the selection changed: the one-key view starts afresh; the
    /// all-keys view keeps its keys, filter and selection, the key shown before joins the other keys and the new
    /// one leaves them (its accounts stay on screen while it is read again).
    func switching(to keyID: String?, keys: [KeyEntry]) -> OATHTabState {
        var s = OATHTabState()
        s.keyID = keyID
        s.allKeys = allKeys
        s.addToAllKeys = addToAllKeys
        guard allKeys else { return s }
        s.others = others
        s.filter = filter
        s.selectedID = selectedID
        // A key that was still being read is read again as one of the others (`openOtherKeys`).
        if let old = self.keyID, old != keyID, keys.contains(where: { $0.id == old }),
            phase == .ready || phase == .locked
        {
            var column = OATHKeyAccounts(keyID: old)
            column.phase = phase
            column.deviceID = deviceID
            column.version = version
            column.accounts = accounts.map { a in
                var a = a
                a.calculating = false
                return a
            }
            s.others[old] = column
        }
        if let keyID, let column = s.others.removeValue(forKey: keyID) {
            s.accounts = column.accounts
        }
        return s
    }
}

// MARK: - The other keys' answers

/// An answer of a key other than the selected one: its part of the all-keys view changes. Nil when the view has no
/// such key.
func otherKeyAnswer(_ state: inout AppState, _ msg: OATHTabMsg) -> [Command]? {
    let id: String
    switch msg {
    case .opened(let k, _), .locked(let k, _, _), .codes(let k, _), .code(let k, _, _), .unlocked(let k, _, _),
        .changed(let k, _, _), .failed(let k, _):
        id = k
    case .secretMade, .imageRead:
        return nil
    }
    guard state.oath.allKeys, id != state.selectedKeyID, var column = state.oath.others[id] else { return nil }
    var commands = [Command]()
    switch msg {
    case .opened(_, let snapshot), .changed(_, let snapshot, _):
        column.read(snapshot)
    case .unlocked(_, let snapshot, let remembered):
        column.read(snapshot)
        if case .unlockOther(id) = state.oath.dialog?.kind {
            state.oath.dialog = nil
            state.status = StatusMessage(
                UIText(
                    remembered ? "oath.unlockedKeyRemembered" : "oath.unlockedKey", ["key": state.keyLabel(id: id)]),
                kind: .success, expires: state.now + statusSeconds)
        }
    case .locked(_, let deviceID, let version):
        column.phase = .locked
        column.refreshing = false
        column.deviceID = deviceID
        column.version = version
    case .codes(_, let entries):
        column.refreshing = false
        column.accounts = merged(column.accounts, entries, replaceList: false)
    case .code(_, let accountID, let code):
        guard let i = column.accounts.firstIndex(where: { $0.id == accountID }) else { break }
        column.accounts[i].code = code
        column.accounts[i].calculating = false
        column.refreshing = column.refreshing && column.accounts.contains { $0.calculating && !$0.onRequest }
        if state.oath.copyWhenReady == accountID && state.oath.copyWhenReadyOn == id {
            state.oath.copyWhenReady = nil
            state.oath.copyWhenReadyOn = nil
            commands.append(.copy(code.value, status: UIText("status.copied", ["account": accountID])))
        }
    case .failed(_, let failure):
        column.refreshing = false
        for i in column.accounts.indices { column.accounts[i].calculating = false }
        if state.oath.copyWhenReadyOn == id {
            state.oath.copyWhenReady = nil
            state.oath.copyWhenReadyOn = nil
        }
        if case .unlockOther(id) = state.oath.dialog?.kind {
            state.oath.dialog?.form.failed(failure)
        } else if failure.notAvailable || failure.operation == .open {
            column.phase = .unavailable(failure.message)
        } else if !failure.keyGone
            && !(failure.operation == state.oath.change?.kind.operation && state.oath.change?.answers[id] == .working)
        {
            // The monitor reports a key that left; anything else is said, naming the key.
            state.status = StatusMessage(
                UIText("oath.failedOn", ["key": state.keyLabel(id: id)], nested: ["why": failure.message]),
                kind: .error, expires: state.now + 2 * statusSeconds)
        }
    case .secretMade, .imageRead:
        break
    }
    state.oath.others[id] = column
    return commands + oathDue(&state)
}

extension OATHKeyAccounts {
    /// The key's accounts and codes as its OATH application gave them.
    mutating func read(_ snapshot: OATHSnapshot) {
        phase = .ready
        refreshing = false
        deviceID = snapshot.deviceID
        version = snapshot.version
        accounts = merged(accounts, snapshot.entries, replaceList: true)
    }
}

/// Another key of the all-keys view waits for its password: asked for it (the unlock dialog, naming the key) once,
/// when no other dialog is open.
func askNextPassword(_ state: inout AppState) {
    guard state.oath.allKeys, state.oath.dialog == nil else { return }
    for key in state.oathKeys {
        guard var column = state.oath.others[key.id], column.phase == .locked, !column.askedForPassword else {
            continue
        }
        column.askedForPassword = true
        state.oath.others[key.id] = column
        state.oath.dialog = unlockDialog(keyID: key.id, label: state.keyLabel(key))
        return
    }
}

// MARK: - Time

/// The refreshes the clock calls for, on every key of the view at once: per key, CALCULATE ALL when a 30-second
/// code expired and a single CALCULATE for each account of another period whose code expired.
func oathDue(_ state: inout AppState) -> [Command] {
    var commands = [OATHTabCommand]()
    if state.oath.phase == .ready, !state.oath.refreshing, let key = state.selectedKey {
        let (all, single) = state.oath.dueAccounts(at: state.now)
        if all || !single.isEmpty {
            state.oath.refreshing = true
            commands.append(.refresh(key.descriptor, time: state.now, all: all, single: single.map(\.credential)))
        }
    }
    if state.oath.allKeys {
        for key in state.oathKeys where key.id != state.selectedKeyID {
            guard var column = state.oath.others[key.id], column.phase == .ready, !column.refreshing else { continue }
            let (all, single) = OATHTabState.due(column.accounts, at: state.now)
            guard all || !single.isEmpty else { continue }
            column.refreshing = true
            state.oath.others[key.id] = column
            commands.append(.refresh(key.descriptor, time: state.now, all: all, single: single.map(\.credential)))
        }
    }
    return OATHTabCommand.together(commands)
}

// MARK: - Keys

/// Enter or c in the all-keys view: the code shown is copied; an HOTP or touch account is calculated on the first
/// key that holds it, and copied when it comes.
func copyOrCalculateAcrossKeys(_ state: inout AppState) -> [Command] {
    guard let row = state.selectedOATHRow else { return [] }
    state.oath.selectedID = row.id
    let a = row.account
    if !a.isHOTP, let code = a.validCode(at: state.now) {
        return [.copy(code.value, status: UIText("status.copied", ["account": a.id]))]
    }
    guard a.onRequest || a.code == nil, let keyID = row.holders.first,
        let key = state.keys.first(where: { $0.id == keyID })
    else { return [] }
    let account: OATHAccount
    if keyID == state.selectedKeyID {
        guard let i = state.oath.accounts.firstIndex(where: { $0.id == a.id }), !state.oath.accounts[i].calculating
        else { return [] }
        state.oath.accounts[i].calculating = true
        account = state.oath.accounts[i]
    } else {
        guard let i = state.oath.others[keyID]?.accounts.firstIndex(where: { $0.id == a.id }),
            state.oath.others[keyID]?.accounts[i].calculating == false
        else { return [] }
        state.oath.others[keyID]?.accounts[i].calculating = true
        account = state.oath.others[keyID]!.accounts[i]
    }
    state.oath.copyWhenReady = a.id
    state.oath.copyWhenReadyOn = keyID
    if account.requiresTouch { state.alertTouch(UIText("touch.for.oath", ["account": a.id]), on: key) }
    return [.oath(.calculate(key.descriptor, account.credential, time: state.now))]
}

/// The account rename, delete and the rest act on: the selected one, on the selected key. In the all-keys view an
/// account the selected key does not hold is said to be elsewhere (K chooses the key).
func accountOnSelectedKey(_ state: inout AppState) -> OATHAccount? {
    guard state.oath.allKeys else { return state.oath.selectedAccount }
    guard let row = state.selectedOATHRow else { return nil }
    if let account = state.oath.accounts.first(where: { $0.id == row.id }) { return account }
    state.status = StatusMessage(
        UIText(
            "oath.notOnSelectedKey",
            [
                "account": row.id, "key": state.selectedKey.map(state.keyLabel) ?? "",
                "keys": row.holders.map { state.keyLabel(id: $0) }.joined(separator: ", "),
                "switch": String(state.bindings.key(for: .keys)),
            ]), kind: .warning, expires: state.now + statusSeconds)
    return nil
}

/// R in the all-keys view: every key's accounts read again, at once; a key that waits for its password asks again.
func reopenAllKeys(_ state: inout AppState) -> [Command] {
    var commands = [OATHTabCommand]()
    if let key = state.selectedKey {
        state.oath = OATHTabState.reloading(from: state.oath)
        commands.append(.open(key.descriptor, time: state.now))
    }
    for key in state.oathKeys where key.id != state.selectedKeyID {
        var column = state.oath.others[key.id] ?? OATHKeyAccounts(keyID: key.id)
        column.phase = .loading
        column.refreshing = false
        column.askedForPassword = false
        state.oath.others[key.id] = column
        commands.append(.open(key.descriptor, time: state.now))
    }
    return OATHTabCommand.together(commands)
}
