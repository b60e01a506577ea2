import KeyKit

// A dialog's change over several keys: the Add dialog gives an account to the selected key and each other key with
// OATH whose check box is on; in the all-keys view, rename and delete act on the selected key and each other key that
// holds the account and is checked ("also on backup"). Every key is asked at once and answers for itself; the dialog
// shows each key's answer, a key that did not do it is named and the others keep what they did, and Enter tries the
// keys that did not do it again (an Add dialog's secret stays in it for that, until it closes).

/// The change the dialog makes: the accounts it adds, or the account it renames or deletes.
func keysChange(_ state: AppState, _ dialog: OATHDialog) -> (kind: OATHKeysChangeKind, ids: [String])? {
    switch dialog.kind {
    case .add:
        guard case .success(let accounts) = addFormCredentials(dialog.form) else { return nil }
        return (.add, accounts.map(\.id.string))
    case .rename(let id):
        guard let a = state.oath.accounts.first(where: { $0.id == id }) else {
            // The selected key has it under its new name already: the dialog is trying the other keys again.
            guard let change = state.oath.change, change.ids == [id] else { return nil }
            return (change.kind, [id])
        }
        return (.rename(to: renamedID(a, dialog.form).string), [id])
    case .delete(let id):
        return (.delete, [id])
    case .unlock, .unlockOther, .password:
        return nil
    }
}

/// The ID account `a` gets from the rename dialog (type and period stay the account's own).
func renamedID(_ a: OATHAccount, _ form: Form) -> CredentialID {
    let (issuer, name) = splitIssuer(form[RenameField.name])
    return CredentialID(name: name, issuer: issuer, type: a.credential.type, period: a.period)
}

/// The keys the dialog's change goes to: the selected key and the other keys checked, less those that did it already
/// (an earlier Enter of the same dialog for the same change).
func changeTargets(_ state: AppState, _ dialog: OATHDialog) -> [KeyEntry] {
    guard let (kind, ids) = keysChange(state, dialog) else { return [] }
    let earlier = state.oath.change.flatMap { $0.ids == ids && $0.kind == kind ? $0 : nil }
    var targets = [KeyEntry]()
    if let selected = state.selectedKey, earlier?.answers[selected.id] != .done { targets.append(selected) }
    for key in state.otherOATHKeys
    where dialog.form.has(AlsoOnField(key.id)) && dialog.form.isOn(AlsoOnField(key.id))
        && earlier?.answers[key.id] != .done
    {
        targets.append(key)
    }
    return targets
}

/// The other keys of the all-keys view that hold the account `id`: the rename and delete dialogs offer them.
func otherHolders(_ state: AppState, of id: String) -> [KeyEntry] {
    guard state.oath.allKeys else { return [] }
    return state.otherOATHKeys.filter { key in
        state.oathAccounts(of: key.id)?.accounts.contains { $0.id == id } == true
    }
}

/// The check boxes of the other keys a dialog may act on too ("Also on backup"), checked when `[oath]
/// add_to_all_keys` says so.
func alsoOnFields(_ state: AppState, _ keys: [KeyEntry], label: String) -> [Form.Field] {
    keys.map { key in
        Form.Field(
            AlsoOnField(key.id), UIText(label, ["key": state.keyLabel(key)]),
            TextField(state.oath.addToAllKeys ? "yes" : "no"), toggle: true)
    }
}

/// Whether the key `keyID` is known to hold an account of one of `ids`: its accounts are on the tab, or it said so
/// when given them.
func holds(_ state: AppState, _ keyID: String, _ ids: [String]) -> Bool {
    if let accounts = state.oathAccounts(of: keyID)?.accounts, accounts.contains(where: { ids.contains($0.id) }) {
        return true
    }
    if case .taken(let taken)? = state.oath.change?.answers[keyID], taken.contains(where: ids.contains) { return true }
    return false
}

/// Enter in a dialog acting on several keys, its question answered: the change to each key at once (an add replaces
/// accounts of the same name only on the keys the question named).
func submitChange(_ state: inout AppState, _ dialog: OATHDialog) -> [Command] {
    var dialog = dialog
    guard let (kind, ids) = keysChange(state, dialog) else { return [] }
    let targets = changeTargets(state, dialog)
    var change =
        state.oath.change.flatMap { $0.ids == ids && $0.kind == kind ? $0 : nil }
        ?? OATHKeysChange(kind, ids: ids, keys: [])
    guard !targets.isEmpty else {
        // Every key asked has done it already.
        state.oath.change = change
        finishChange(&state, closing: true)
        return []
    }
    var commands = [OATHTabCommand]()
    for key in targets {
        guard let command = changeCommand(state, dialog, kind, on: key) else {
            change.answers[key.id] = .failed(UIText("oath.change.notOnKey"))
            continue
        }
        if !change.keys.contains(key.id) { change.keys.append(key.id) }
        change.answers[key.id] = .working
        change.labels[key.id] = state.keyLabel(key)
        commands.append(command)
    }
    if let selected = state.selectedKeyID, let i = change.keys.firstIndex(of: selected), i > 0 {
        // The selected key's line comes first.
        change.keys.remove(at: i)
        change.keys.insert(selected, at: 0)
    }
    change.text = nil
    dialog.form.busy = true
    dialog.form.problem = nil
    if kind != .add { dialog.form.wipeSecrets() }
    state.oath.dialog = dialog
    state.oath.change = change
    return OATHTabCommand.together(commands)
}

/// The work that makes the change on one key, with that key's own account (nil: the key no longer holds it).
private func changeCommand(
    _ state: AppState, _ dialog: OATHDialog, _ kind: OATHKeysChangeKind, on key: KeyEntry
) -> OATHTabCommand? {
    let now = state.now
    switch kind {
    case .add:
        guard case .success(let accounts) = addFormCredentials(dialog.form) else { return nil }
        let ids = accounts.map(\.id.string)
        return .add(key.descriptor, accounts, overwrite: holds(state, key.id, ids), time: now)
    case .rename, .delete:
        guard let id = keysChange(state, dialog)?.ids.first,
            let a = state.oathAccounts(of: key.id)?.accounts.first(where: { $0.id == id })
        else { return nil }
        if kind == .delete { return .delete(key.descriptor, a.credential, time: now) }
        return .rename(key.descriptor, a.credential, to: renamedID(a, dialog.form), time: now)
    }
}

/// A key's answer, as the dialog waiting for it takes it.
func changeAnswer(_ state: inout AppState, _ msg: OATHTabMsg) {
    guard let change = state.oath.change else { return }
    let answer: OATHKeyAnswer
    let keyID: String
    switch msg {
    case .changed(let id, _, let text):
        guard change.answers[id] == .working else { return }
        (keyID, answer) = (id, .done)
        if id == state.selectedKeyID { state.oath.change?.text = text }
    case .failed(let id, let failure) where failure.operation == change.kind.operation:
        guard change.answers[id] == .working else { return }
        keyID = id
        if !failure.taken.isEmpty {
            answer = .taken(failure.taken)
        } else if failure.keyGone {
            answer = .failed(UIText("oath.add.keyLeft"))
        } else {
            answer = .failed(failure.message)
        }
    case .locked(let id, _, _):
        guard change.answers[id] == .working else { return }
        (keyID, answer) = (id, .failed(UIText("oath.add.locked")))
    default:
        return
    }
    state.oath.change?.answers[keyID] = answer
    finishChange(&state)
}

/// Once every key answered: the dialog closes when each key did it (saying where), else it shows each key's answer,
/// its check boxes of the keys that did it off, and Enter tries the others again.
func finishChange(_ state: inout AppState, closing: Bool = false) {
    guard let change = state.oath.change, !change.working, var dialog = state.oath.dialog, dialog.kind.acrossKeys
    else {
        return
    }
    let notDone = change.keys.filter { change.answers[$0] != .done }
    if notDone.isEmpty || closing {
        showMadeAccount(&state, dialog)
        dialog.form.wipeSecrets()
        state.oath.dialog = nil
        state.oath.change = nil
        let text: UIText
        if change.keys == [state.selectedKeyID], let own = change.text {
            text = own
        } else {
            text = doneText(state, change)
        }
        state.status = StatusMessage(text, kind: .success, expires: state.now + statusSeconds)
        return
    }
    for key in change.done { dialog.form[AlsoOnField(key)] = "no" }
    dialog.form.busy = false
    dialog.form.problem = changeReport(state, change, retry: notDone)
    state.oath.dialog = dialog
}

/// "Added GitHub:alice to daily, backup" (or the number of accounts of an export), "Deleted … from …", "Renamed … on
/// …".
private func doneText(_ state: AppState, _ change: OATHKeysChange) -> UIText {
    let keys = change.done.map { change.label(of: $0, state) }.joined(separator: ", ")
    switch change.kind {
    case .add:
        if change.ids.count == 1 { return UIText("oath.addedTo", ["account": change.ids[0], "keys": keys]) }
        return UIText("oath.addedSeveralTo", ["count": String(change.ids.count), "keys": keys])
    case .rename(let new):
        return UIText("oath.renamedOn", ["old": change.ids[0], "new": new, "keys": keys])
    case .delete:
        return UIText("oath.deletedFrom", ["account": change.ids[0], "keys": keys])
    }
}

/// The dialog's result when a key did not do it: where it was done, why each other key did not do it, and what Enter
/// does now.
private func changeReport(_ state: AppState, _ change: OATHKeysChange, retry: [String]) -> UIText {
    let words: (doneOn: String, failedOn: String)
    switch change.kind {
    case .add: words = ("oath.add.addedOn", "oath.add.failedOn")
    case .rename: words = ("oath.rename.doneOn", "oath.rename.failedOn")
    case .delete: words = ("oath.delete.doneOn", "oath.delete.failedOn")
    }
    var parts = [UIText]()
    if !change.done.isEmpty {
        let keys = change.done.map { change.label(of: $0, state) }.joined(separator: ", ")
        parts.append(UIText(words.doneOn, ["keys": keys]))
    }
    for key in retry {
        let label = change.label(of: key, state)
        switch change.answers[key] {
        case .taken(let ids)?:
            parts.append(UIText("oath.add.takenOn", ["key": label, "accounts": ids.joined(separator: ", ")]))
        case .failed(let why)?:
            parts.append(UIText(words.failedOn, ["key": label], nested: ["why": why]))
        default:
            break
        }
    }
    // Only a key still plugged in can be tried again.
    let again = retry.filter { id in state.keys.contains { $0.id == id } }
    if again.isEmpty {
        parts.append(UIText("oath.add.close"))
    } else {
        parts.append(
            UIText("oath.add.retry", ["keys": again.map { change.label(of: $0, state) }.joined(separator: ", ")]))
    }
    return parts.dropFirst().reduce(parts[0]) { UIText("text.then", nested: ["first": $0, "then": $1]) }
}

extension OATHKeysChange {
    /// The key's name as it was when it was asked.
    func label(of keyID: String, _ state: AppState) -> String { labels[keyID] ?? state.keyLabel(id: keyID) }
}
