import KeyKit

// MARK: - Opening, closing, keys coming and going

/// Reads the selected key's SSH keys (again).
func sshLoad(_ state: inout AppState) -> [Command] {
    guard let entry = state.selectedKey, state.ssh.busy == nil else { return [] }
    state.ssh.keyID = entry.id
    if state.ssh.load == nil { state.ssh.phase = .loading }
    state.ssh.busy = SSHBusy(.load)
    return [.ssh(.load(entry.descriptor))]
}

func sshTabOpened(_ state: inout AppState) -> [Command] {
    // Read on each visit: ssh-keygen or another program may have changed the keys meanwhile.
    keyTabOpened(&state, \.ssh, load: sshLoad)
}

/// The visit ends: the PIN kept for it is wiped, and the FIDO keys it listed are not shown again without it.
func sshTabClosed(_ state: inout AppState) -> [Command] {
    state.ssh.dialog?.form.wipeSecrets()
    state.ssh.dialog = nil
    state.ssh.showDetails = false
    state.ssh.pinDeclined = false
    // A PIN held, or one the key is checking (the runner may yet keep it; its answer forgets it too).
    let checking = state.ssh.busy?.operation == .verifyPIN
    guard let id = state.ssh.keyID, state.ssh.pinHeld || checking else { return [] }
    state.ssh.pinHeld = false
    state.ssh.load?.fidoKeys = []
    if state.ssh.load?.fido == .listed { state.ssh.load?.fido = .pinNeeded }
    return [.ssh(.forgetPIN(keyID: id))]
}

func sshTabKeyChanged(_ state: inout AppState) -> [Command] {
    guard state.ssh.keyID != state.selectedKeyID else { return [] }
    // The runner forgets the PIN it held (or may yet keep) for the key the tab showed.
    var commands = [Command]()
    if let old = state.ssh.keyID, state.ssh.pinHeld || state.ssh.busy?.operation == .verifyPIN {
        commands.append(.ssh(.forgetPIN(keyID: old)))
    }
    return commands + keyTabKeyChanged(&state, \.ssh, shown: .ssh, load: sshLoad)
}

// MARK: - Answers

func sshTabUpdate(_ state: inout AppState, _ msg: SSHTabMsg) -> [Command] {
    func current(_ keyID: String) -> Bool { state.ssh.keyID == keyID && state.selectedKeyID == keyID }
    switch msg {
    case .loaded(let id, let load):
        guard current(id) else { return [] }
        keyTabLoaded(&state, \.ssh)
        setSSHLoad(&state, load)
        state.ssh.pinHeld = load.fido == .listed
        // The list is what the visit is for: its PIN is asked at once (Esc shows the PIV slots without it).
        if load.fido == .pinNeeded, state.tab == .ssh, state.ssh.dialog == nil, !state.ssh.pinDeclined {
            state.ssh.dialog = sshPINDialog(thenNew: false, minimum: load.minPINLength)
        }
        return []
    case .touch(let id, let waiting):
        if current(id) { keyTabTouch(&state, \.ssh, waiting: waiting) }
        return []
    case .listed(let id, let keys):
        guard current(id) else {
            // The key changed while it checked the PIN: the runner may have kept it; it must not.
            return [.ssh(.forgetPIN(keyID: id))]
        }
        guard state.tab == .ssh else {
            // The visit ended while the key checked the PIN: it is not kept.
            if state.ssh.busy?.operation == .verifyPIN { state.ssh.busy = nil }
            return [.ssh(.forgetPIN(keyID: id))]
        }
        let thenNew: Bool
        if case .pin(let then)? = state.ssh.dialog?.kind { thenNew = then } else { thenNew = false }
        sshFinish(&state)
        state.ssh.pinHeld = true
        var load = state.ssh.load ?? SSHTabLoad(fido: .listed)
        load.fido = .listed
        load.fidoKeys = keys
        setSSHLoad(&state, load)
        if thenNew { state.ssh.dialog = sshNewDialog(state.ssh.load) }
        return []
    case .filesExist(let id, let paths):
        guard current(id) else { return [] }
        return sshAsk(&state, .files, UIText("ssh.replaceFiles", ["paths": paths.joined(separator: ", ")]))
    case .keyExists(let id, let application, let user):
        guard current(id) else { return [] }
        return sshAsk(
            &state, .key,
            UIText(
                user == nil ? "ssh.replaceKey" : "ssh.replaceKeyOfUser",
                ["application": application, "user": user ?? ""]))
    case .made(let id, let key, let path, let keys):
        guard current(id) else { return [] }
        sshMade(&state, key, keys)
        state.status = StatusMessage(
            UIText("ssh.made", ["type": SSHTabKey.fido(key).shortType, "path": path]), kind: .success,
            expires: state.now + 2 * statusSeconds)
        return []
    case .madeWithoutFiles(let id, let key, let problem, let keys):
        guard current(id) else { return [] }
        sshMade(&state, key, keys)
        state.status = StatusMessage(
            UIText("ssh.madeWithoutFiles", nested: ["why": problem]), kind: .error,
            expires: state.now + 3 * statusSeconds)
        return []
    case .exported(let id, let paths):
        guard current(id) else { return [] }
        sshFinish(&state)
        let text =
            paths.count == 1
            ? UIText("ssh.exported", ["path": paths[0]])
            : UIText(
                "ssh.exportedMany", ["count": String(paths.count), "directory": PathString.directory(of: paths[0])])
        state.status = StatusMessage(text, kind: .success, expires: state.now + 2 * statusSeconds)
        return []
    case .deleted(let id, let key, let remaining):
        guard current(id) else { return [] }
        sshFinish(&state)
        state.ssh.load?.fidoKeys = remaining
        state.ssh.showDetails = false
        let rows = state.ssh.rows
        state.ssh.selectedRow = min(state.ssh.selectedRow, max(0, rows.count - 1))
        state.status = StatusMessage(
            UIText("ssh.deleted", ["application": key.application, "fingerprint": key.key.fingerprint]),
            kind: .success, expires: state.now + 2 * statusSeconds)
        return []
    case .failed(let id, let failure):
        guard current(id) else { return [] }
        return sshFailed(&state, failure)
    }
}

/// New keys: the cursor stays on its key when it can.
func setSSHLoad(_ state: inout AppState, _ load: SSHTabLoad) {
    let selected = state.ssh.selected?.id
    state.ssh.load = load
    let rows = state.ssh.rows
    state.ssh.selectedRow =
        rows.firstIndex { $0.id == selected } ?? min(state.ssh.selectedRow, max(0, rows.count - 1))
    if state.ssh.showDetails, state.ssh.selected == nil { state.ssh.showDetails = false }
}

/// A key was made: the list as the key has it now (`keys`), or, where the key cannot list them, with the new key in
/// it; the cursor on the new key.
func sshMade(_ state: inout AppState, _ key: SSHKeyOnKey, _ keys: [SSHKeyOnKey]?) {
    sshFinish(&state)
    var load = state.ssh.load ?? SSHTabLoad(fido: .noPIN)
    if let keys {
        load.fidoKeys = keys
        load.fido = .listed
    } else {
        // Not listable (no PIN set): the key made now is shown, the others the key may hold are not.
        load.fidoKeys.removeAll { $0.application == key.application && $0.userID == key.userID }
        load.fidoKeys.append(key)
    }
    state.ssh.load = load
    state.ssh.selectedRow = state.ssh.rows.firstIndex(of: .fido(key)) ?? state.ssh.selectedRow
}

/// The command that was running answered: the busy mark and the dialog go.
func sshFinish(_ state: inout AppState) {
    keyTabFinish(&state, \.ssh)
    state.ssh.replacing = []
}

/// The work found something the dialog's command would replace: the dialog asks before it goes on.
func sshAsk(_ state: inout AppState, _ what: SSHReplacement, _ question: UIText) -> [Command] {
    if keyTabAsk(&state, \.ssh, question) { state.ssh.asking = what }
    return []
}

func sshFailed(_ state: inout AppState, _ failure: SSHFailure) -> [Command] {
    state.ssh.busy = nil
    let operation: FIDOOperation = failure.operation == .verifyPIN ? .verifyPIN : .list
    var text = fidoFailureText(failure.reason, operation: operation)
    switch failure.reason {
    case .keyGone:
        return keyTabKeyGone(&state, \.ssh, text)
    case .wrongPIN, .tokenInvalid:
        // The PIN the visit held was refused (changed elsewhere), or there was none: it is asked (again); the keys
        // listed stay on screen.
        state.ssh.pinHeld = false
        if state.ssh.load?.fido == .listed { state.ssh.load?.fido = .pinNeeded }
        if failure.reason == .tokenInvalid { text = UIText("ssh.pinAgain") }
        if case .pin? = state.ssh.dialog?.kind {
        } else {
            state.ssh.dialog?.form.wipeSecrets()
            state.ssh.dialog = sshPINDialog(thenNew: false, minimum: state.ssh.load?.minPINLength ?? 4)
        }
    case .pinBlocked, .pinAuthBlocked:
        state.ssh.pinHeld = false
        state.ssh.dialog?.form.wipeSecrets()
        state.ssh.dialog = nil
        state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
        return []
    default:
        break
    }
    if failure.operation == .load {
        if state.ssh.load == nil { state.ssh.phase = .unavailable(text) }
        state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
        return []
    }
    if var dialog = state.ssh.dialog {
        // Stay in the dialog: say what went wrong, empty the secrets, and start again at the first field.
        dialog.form.busy = false
        dialog.form.problem = text
        dialog.form.wipeSecrets()
        dialog.form.focus = 0
        state.ssh.dialog = dialog
        return []
    }
    state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
    return []
}
