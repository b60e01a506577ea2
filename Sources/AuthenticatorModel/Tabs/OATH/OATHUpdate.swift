import FoundationEssentials
import Glibc
import KeyKit

// MARK: - Answers

func oathMessage(_ state: inout AppState, _ msg: Msg) -> [Command] {
    guard case .oath(let answer) = msg else { return selectedKeyAnswer(&state, msg) }
    if let commands = addDialogAnswer(&state, answer) { return commands }
    // A dialog acting on several keys hears them once their part of the tab changed: each answer is its key's line of
    // the result.
    defer { changeAnswer(&state, answer) }
    return otherKeyAnswer(&state, answer) ?? selectedKeyAnswer(&state, msg)
}

/// An answer of the selected key (or the tab's own messages).
private func selectedKeyAnswer(_ state: inout AppState, _ msg: Msg) -> [Command] {
    func current(_ keyID: String) -> Bool { state.oath.keyID == keyID && state.selectedKeyID == keyID }
    switch msg {
    case .oath(.opened(let id, let snapshot)):
        guard current(id) else { return [] }
        state.oath.hasPassword = snapshot.hasPassword
        return opened(&state, snapshot)
    case .oath(.unlocked(let id, let snapshot, let remembered)):
        guard current(id) else { return [] }
        state.oath.dialog = nil
        state.oath.hasPassword = true
        state.status = StatusMessage(
            UIText(remembered ? "oath.unlockedRemembered" : "oath.unlocked"),
            kind: .success, expires: state.now + statusSeconds)
        return opened(&state, snapshot)
    case .oath(.locked(let id, let deviceID, let version)):
        guard current(id) else { return [] }
        state.oath.phase = .locked
        state.oath.deviceID = deviceID
        state.oath.version = version
        state.oath.hasPassword = true
        // An Add dialog with its result on screen stays; Enter asks for the password once it is closed.
        if state.oath.dialog?.kind.isAdd != true {
            if case .unlockOther(let other) = state.oath.dialog?.kind {
                state.oath.others[other]?.askedForPassword = false
            }
            state.oath.dialog = unlockDialog()
        }
        return [.loadPins(deviceID: deviceID)]
    case .oath(.codes(let id, let entries)):
        guard current(id) else { return [] }
        state.oath.refreshing = false
        merge(&state.oath, entries, replaceList: false)
        return []
    case .oath(.code(let id, let accountID, let code)):
        guard current(id), let i = state.oath.accounts.firstIndex(where: { $0.id == accountID }) else { return [] }
        state.oath.accounts[i].code = code
        state.oath.accounts[i].calculating = false
        state.oath.refreshing =
            state.oath.refreshing && state.oath.accounts.contains { $0.calculating && !$0.onRequest }
        if state.oath.copyWhenReady == accountID && (state.oath.copyWhenReadyOn ?? id) == id {
            state.oath.copyWhenReady = nil
            state.oath.copyWhenReadyOn = nil
            return [.copy(code.value, status: UIText("status.copied", ["account": accountID]))]
        }
        return []
    case .oath(.changed(let id, let snapshot, let text)):
        guard current(id) else { return [] }
        // A change on several keys closes its dialog itself, once every key answered (`finishChange`).
        if state.oath.change?.answers[id] != .working {
            state.oath.dialog = nil
            state.status = StatusMessage(text, kind: .success, expires: state.now + statusSeconds)
        }
        state.oath.hasPassword = snapshot.hasPassword
        return opened(&state, snapshot)
    case .oath(.failed(let id, let failure)):
        guard current(id) else { return [] }
        // The dialog acting on several keys took the answer as its key's line. The selected key pulled out closes the tab's dialogs
        // with it: what the removal cut short is said as when one key was asked.
        if failure.operation == state.oath.change?.kind.operation, state.oath.change?.answers[id] == .working {
            state.oath.refreshing = false
            if failure.keyGone {
                state.status = StatusMessage(
                    UIText("status.keyGoneMidOperation"), kind: .error, subject: .operationCutShort)
            }
            return []
        }
        return failed(&state, failure)
    case .pinsLoaded(let deviceID, let pins):
        if state.oath.deviceID == deviceID { state.oath.pinned = pins }
        return []
    case .copied(let ok, let text):
        state.status = StatusMessage(text, kind: ok ? .success : .warning, expires: state.now + statusSeconds)
        return []
    default:
        return []
    }
}

func opened(_ state: inout AppState, _ snapshot: OATHSnapshot) -> [Command] {
    let newDevice = state.oath.deviceID != snapshot.deviceID
    state.oath.phase = .ready
    state.oath.refreshing = false
    state.oath.deviceID = snapshot.deviceID
    state.oath.version = snapshot.version
    merge(&state.oath, snapshot.entries, replaceList: true)
    var commands: [Command] = newDevice ? [.loadPins(deviceID: snapshot.deviceID)] : []
    commands += oathDue(&state)
    return commands
}

/// Takes the entries of a CALCULATE ALL. With `replaceList`, the list is the key's (accounts that are gone
/// go); otherwise only codes are updated. Codes of on-request accounts survive until they expire.
func merge(_ oath: inout OATHTabState, _ entries: [OATHSession.Entry], replaceList: Bool) {
    oath.accounts = merged(oath.accounts, entries, replaceList: replaceList)
    // In the all-keys view the selected account may be another key's.
    if !oath.allKeys, let s = oath.selectedID, !oath.accounts.contains(where: { $0.id == s }) { oath.selectedID = nil }
}

/// `accounts` with the entries of a CALCULATE ALL (see `merge`).
func merged(_ accounts: [OATHAccount], _ entries: [OATHSession.Entry], replaceList: Bool) -> [OATHAccount] {
    var old = [String: OATHAccount]()
    for a in accounts { old[a.id] = a }
    var result = [OATHAccount]()
    for e in entries {
        var account = OATHAccount(credential: e.credential, digits: e.digits, code: e.code)
        if let previous = old[account.id] {
            if e.code == nil { account.code = previous.code }
            account.calculating = e.code == nil && previous.calculating
        }
        result.append(account)
        old[account.id] = nil
    }
    if !replaceList {
        // Accounts the answer did not mention stay as they were (a single-CALCULATE refresh).
        result += accounts.filter { old[$0.id] != nil }
    }
    return result
}

extension Form {
    /// The dialog's work failed: the form takes input again and says why; after a wrong password, the secrets are
    /// typed again from the first field.
    mutating func failed(_ failure: OATHFailure) {
        busy = false
        problem = failure.message
        if failure.wrongPassword {
            wipeSecrets()
            focus = 0
        }
    }
}

func failed(_ state: inout AppState, _ failure: OATHFailure) -> [Command] {
    state.oath.refreshing = false
    for i in state.oath.accounts.indices { state.oath.accounts[i].calculating = false }
    if (state.oath.copyWhenReadyOn ?? state.selectedKeyID) == state.selectedKeyID {
        state.oath.copyWhenReady = nil
        state.oath.copyWhenReadyOn = nil
    }
    if failure.notAvailable {
        state.oath.phase = .unavailable(failure.message)
        state.oath.dialog = nil
        return []
    }
    if failure.keyGone {
        // The monitor reports the key leaving; until then, say what happened and keep what is shown.
        state.oath.dialog = nil
        state.status = StatusMessage(UIText("status.keyGoneMidOperation"), kind: .error, subject: .operationCutShort)
        return []
    }
    if state.oath.dialog != nil {
        state.oath.dialog?.form.failed(failure)
        return []
    }
    if failure.operation == .open { state.oath.phase = .unavailable(failure.message) }
    state.status = StatusMessage(failure.message, kind: .error, expires: state.now + 2 * statusSeconds)
    return []
}
