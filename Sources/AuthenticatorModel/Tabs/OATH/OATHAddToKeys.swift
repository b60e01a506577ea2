import KeyKit

// The Add dialog over several keys: the selected key always, and each other key with OATH whose check box is on.
// Every key is given the account at once and answers for itself; the dialog shows each key's answer, a key that did
// not take it is named and the others keep it, and Enter tries the keys that did not take it again (the secret stays
// in the dialog for that, until it closes).

/// The keys the Add dialog gives accounts `ids` to: the selected key and the other keys checked, less those that took
/// them already (an earlier Enter of the same dialog for the same accounts).
func addTargets(_ state: AppState, _ dialog: OATHDialog, ids: [String]) -> [KeyEntry] {
    let earlier = state.oath.adding.flatMap { $0.ids == ids ? $0 : nil }
    var targets = [KeyEntry]()
    if let selected = state.selectedKey, earlier?.answers[selected.id] != .added { targets.append(selected) }
    for key in state.otherOATHKeys
    where dialog.form.isOn(AlsoOnField(key.id)) && earlier?.answers[key.id] != .added {
        targets.append(key)
    }
    return targets
}

/// Whether the key `keyID` is known to hold an account of one of `ids`: its accounts are on the tab, or it said so
/// when given them.
func holds(_ state: AppState, _ keyID: String, _ ids: [String]) -> Bool {
    if let accounts = state.oathAccounts(of: keyID)?.accounts, accounts.contains(where: { ids.contains($0.id) }) {
        return true
    }
    if case .taken(let taken)? = state.oath.adding?.answers[keyID], taken.contains(where: ids.contains) { return true }
    return false
}

/// Enter in the Add dialog, its question answered: the accounts to each key at once, replacing accounts of the same
/// name only on the keys the question named.
func submitAdd(_ state: inout AppState, _ dialog: OATHDialog) -> [Command] {
    var dialog = dialog
    guard case .success(let accounts) = addFormCredentials(dialog.form) else { return [] }
    let ids = accounts.map(\.id.string)
    let targets = addTargets(state, dialog, ids: ids)
    var adding = state.oath.adding.flatMap { $0.ids == ids ? $0 : nil } ?? OATHAdding(ids: ids, keys: [])
    guard !targets.isEmpty else {
        // Every key asked for holds the accounts already.
        state.oath.adding = adding
        finishAdding(&state, closing: true)
        return []
    }
    var commands = [OATHTabCommand]()
    for key in targets {
        if !adding.keys.contains(key.id) { adding.keys.append(key.id) }
        adding.answers[key.id] = .working
        adding.labels[key.id] = state.keyLabel(key)
        commands.append(.add(key.descriptor, accounts, overwrite: holds(state, key.id, ids), time: state.now))
    }
    if let selected = state.selectedKeyID, let i = adding.keys.firstIndex(of: selected), i > 0 {
        // The selected key's line comes first.
        adding.keys.remove(at: i)
        adding.keys.insert(selected, at: 0)
    }
    adding.text = nil
    dialog.form.busy = true
    dialog.form.problem = nil
    state.oath.dialog = dialog
    state.oath.adding = adding
    return OATHTabCommand.together(commands)
}

/// A key's answer, as the Add dialog waiting for it takes it.
func addAnswer(_ state: inout AppState, _ msg: OATHTabMsg) {
    guard let adding = state.oath.adding else { return }
    let answer: OATHAddAnswer
    let keyID: String
    switch msg {
    case .changed(let id, _, let text):
        guard adding.answers[id] == .working else { return }
        (keyID, answer) = (id, .added)
        if id == state.selectedKeyID { state.oath.adding?.text = text }
    case .failed(let id, let failure) where failure.operation == .add:
        guard adding.answers[id] == .working else { return }
        keyID = id
        if !failure.taken.isEmpty {
            answer = .taken(failure.taken)
        } else if failure.keyGone {
            answer = .failed(UIText("oath.add.keyLeft"))
        } else {
            answer = .failed(failure.message)
        }
    case .locked(let id, _, _):
        guard adding.answers[id] == .working else { return }
        (keyID, answer) = (id, .failed(UIText("oath.add.locked")))
    default:
        return
    }
    state.oath.adding?.answers[keyID] = answer
    finishAdding(&state)
}

/// Once every key answered: the dialog closes when each key holds the accounts (saying where they went), else it
/// shows each key's answer, its check boxes of the keys that took them off, and Enter tries the others again.
func finishAdding(_ state: inout AppState, closing: Bool = false) {
    guard let adding = state.oath.adding, !adding.working, var dialog = state.oath.dialog, dialog.kind.isAdd else {
        return
    }
    let notAdded = adding.keys.filter { adding.answers[$0] != .added }
    if notAdded.isEmpty || closing {
        dialog.form.wipeSecrets()
        state.oath.dialog = nil
        state.oath.adding = nil
        let text: UIText
        if adding.keys == [state.selectedKeyID], let own = adding.text {
            text = own
        } else {
            text = addedText(state, adding)
        }
        state.status = StatusMessage(text, kind: .success, expires: state.now + statusSeconds)
        return
    }
    for key in adding.added { dialog.form[AlsoOnField(key)] = "no" }
    dialog.form.busy = false
    dialog.form.problem = addReport(state, adding, retry: notAdded)
    state.oath.dialog = dialog
}

/// "Added GitHub:alice to daily, backup" (or the number of accounts of an export).
private func addedText(_ state: AppState, _ adding: OATHAdding) -> UIText {
    let keys = adding.added.map { adding.label(of: $0, state) }.joined(separator: ", ")
    if adding.ids.count == 1 { return UIText("oath.addedTo", ["account": adding.ids[0], "keys": keys]) }
    return UIText("oath.addedSeveralTo", ["count": String(adding.ids.count), "keys": keys])
}

/// The dialog's result when a key did not take the accounts: where they went, why each other key did not take them,
/// and what Enter does now.
private func addReport(_ state: AppState, _ adding: OATHAdding, retry: [String]) -> UIText {
    var parts = [UIText]()
    if !adding.added.isEmpty {
        let keys = adding.added.map { adding.label(of: $0, state) }.joined(separator: ", ")
        parts.append(UIText("oath.add.addedOn", ["keys": keys]))
    }
    for key in retry {
        let label = adding.label(of: key, state)
        switch adding.answers[key] {
        case .taken(let ids)?:
            parts.append(UIText("oath.add.takenOn", ["key": label, "accounts": ids.joined(separator: ", ")]))
        case .failed(let why)?:
            parts.append(UIText("oath.add.failedOn", ["key": label], nested: ["why": why]))
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
            UIText("oath.add.retry", ["keys": again.map { adding.label(of: $0, state) }.joined(separator: ", ")]))
    }
    return parts.dropFirst().reduce(parts[0]) { UIText("text.then", nested: ["first": $0, "then": $1]) }
}

extension OATHAdding {
    /// The key's name as it was when it was given the accounts.
    func label(of keyID: String, _ state: AppState) -> String { labels[keyID] ?? state.keyLabel(id: keyID) }
}
