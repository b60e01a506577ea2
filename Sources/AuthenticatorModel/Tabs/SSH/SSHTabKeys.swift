import KeyKit

// MARK: - Keys

func sshTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.ssh.dialog != nil { return sshDialogKey(&state, key) }
    if state.ssh.busy != nil {
        // Esc stops a wait for a touch (a new key); everything else waits for the command.
        if key == .escape, state.ssh.busy?.touch == true { return [.ssh(.cancel)] }
        return []
    }
    let rows = state.ssh.rows
    if state.ssh.showDetails {
        switch key {
        case .escape, .enter, .left:
            state.ssh.showDetails = false
            return []
        default: break
        }
    } else {
        func move(_ to: Int) { state.ssh.selectedRow = max(0, min(max(0, rows.count - 1), to)) }
        switch key {
        case .up, .char("k"): move(state.ssh.selectedRow - 1); return []
        case .down, .char("j"): move(state.ssh.selectedRow + 1); return []
        case .pageUp, .home: move(0); return []
        case .pageDown, .end, .char("G"): move(rows.count - 1); return []
        case .enter, .right:
            state.ssh.showDetails = state.ssh.selected != nil
            return []
        default: break
        }
    }
    guard state.selectedKey != nil else { return [] }
    if key == .char("r") { return sshLoad(&state) }
    guard state.ssh.phase == .ready, let load = state.ssh.load else { return [] }
    let selected = state.ssh.selected
    switch key {
    case .char("c"):
        guard let selected else { return sshNote(&state, UIText("ssh.noneSelected")) }
        return [.copy(selected.line, status: sshCopiedText(selected))]
    case .char("v"):
        guard load.fido == .pinNeeded || load.fido == .listed else { return sshNote(&state, load.fidoNote) }
        state.ssh.dialog = sshPINDialog(thenNew: false, minimum: load.minPINLength)
    case .char("n"):
        switch load.fido {
        case .unavailable(let why): return sshNote(&state, why)
        case .pinNeeded:
            // The PIN first (once per visit), then the new key's dialog.
            state.ssh.dialog = sshPINDialog(thenNew: true, minimum: load.minPINLength)
        default:
            state.ssh.dialog = sshNewDialog(load)
        }
    case .char("e"), .char("E"):
        let keys: [SSHKeyOnKey]
        if key == .char("E") {
            keys = load.fidoKeys
            if keys.isEmpty { return sshNote(&state, load.fidoNote) }
        } else {
            guard case .fido(let k)? = selected else { return sshNote(&state, UIText("ssh.exportFIDOOnly")) }
            keys = [k]
        }
        state.ssh.dialog = sshExportDialog(keys.count == 1 ? keys[0].credentialID : nil, count: keys.count)
    case .char("d"), .delete:
        guard case .fido(let k)? = selected else { return sshNote(&state, UIText("ssh.deleteFIDOOnly")) }
        // Deleting is credential management: the PIN of this visit (a key made without a PIN cannot be deleted
        // before one is set).
        guard state.ssh.pinHeld else {
            guard load.fido == .pinNeeded else { return sshNote(&state, load.fidoNote) }
            state.ssh.dialog = sshPINDialog(thenNew: false, minimum: load.minPINLength)
            return []
        }
        let form = Form.confirmation(
            title: UIText("ssh.delete.title", ["application": k.application]),
            note: UIText("ssh.delete.note", ["fingerprint": k.key.fingerprint]), askedAt: state.now)
        state.ssh.dialog = SSHDialog(kind: .delete(credentialID: k.credentialID), form: form)
    default:
        break
    }
    return []
}

func sshNote(_ state: inout AppState, _ text: UIText) -> [Command] {
    state.status = StatusMessage(text, kind: .warning, expires: state.now + statusSeconds)
    return []
}

/// What the status line says once `key`'s line is on the clipboard (its `how` is added then).
func sshCopiedText(_ key: SSHTabKey) -> UIText {
    switch key {
    case .fido(let k):
        if let user = k.user { return UIText("ssh.copiedOfUser", ["key": k.application, "user": user]) }
        return UIText("ssh.copied", ["key": k.application])
    case .piv(let k):
        return UIText("ssh.copied", ["key": "PIV " + k.slot.description])
    }
}

// MARK: - Dialogs

func sshPINDialog(thenNew: Bool, minimum: Int) -> SSHDialog {
    let form = Form(
        title: UIText("ssh.pin.title"),
        // 63 bytes of UTF-8 are at most 63 characters; one more lets the rule be seen as it is broken.
        fields: [
            Form.Field(SSHField.pin, UIText("ssh.field.pin"), TextField(secret: true, maxLength: PINRules.maxBytes + 1))
        ],
        note: UIText("ssh.pin.note", ["minimum": String(max(4, minimum))]))
    return SSHDialog(kind: .pin(thenNew: thenNew), form: form)
}

/// The new key's options, as `ykterm ssh new` takes them: Ed25519 first where the key makes it.
func sshNewDialog(_ load: SSHTabLoad?) -> SSHDialog {
    let types = (load?.edDSA ?? true) ? ["ed25519", "ecdsa"] : ["ecdsa"]
    let form = Form(
        title: UIText("ssh.new.title"),
        fields: [
            Form.Field(SSHField.application, UIText("ssh.field.application"), TextField("ssh:", maxLength: 128)),
            Form.Field(SSHField.user, UIText("ssh.field.user"), TextField(maxLength: 40)),
            Form.Field(SSHField.type, UIText("ssh.field.type"), TextField(types[0]), choices: types),
            Form.Field(SSHField.verifyRequired, UIText("ssh.field.verifyRequired"), TextField("no"), toggle: true),
            Form.Field(SSHField.touchRequired, UIText("ssh.field.touchRequired"), TextField("yes"), toggle: true),
            Form.Field(SSHField.directory, UIText("ssh.field.directory"), TextField("~/.ssh", maxLength: 1024)),
        ],
        note: UIText("ssh.new.note"))
    return SSHDialog(kind: .new, form: form)
}

/// Where the handle files of one key (`credentialID`) or of every listed key go.
func sshExportDialog(_ credentialID: [UInt8]?, count: Int) -> SSHDialog {
    let form = Form(
        title: UIText(credentialID == nil ? "ssh.export.titleAll" : "ssh.export.title", ["count": String(count)]),
        fields: [
            Form.Field(SSHField.directory, UIText("ssh.field.directory"), TextField("~/.ssh", maxLength: 1024))
        ],
        note: UIText("ssh.export.note"))
    return SSHDialog(kind: .export(credentialID: credentialID), form: form)
}

/// What is wrong with the dialog as typed so far; on submit, empty fields count too.
func sshDialogProblem(_ dialog: SSHDialog, submitting: Bool = false) -> UIText? {
    let form = dialog.form
    switch dialog.kind {
    case .pin:
        let pin = form[SSHField.pin]
        if submitting && pin.isEmpty { return UIText("fido.pin.empty") }
        if let problem = PINRules.problem(pin), case .pinTooLong = problem { return pinRuleText(problem) }
    case .new:
        let application = form[SSHField.application]
        if !application.hasPrefix("ssh:") && (submitting || !"ssh:".hasPrefix(application)) {
            return UIText("ssh.problem.application")
        }
        if form[SSHField.user].utf8.count > 31 { return UIText("ssh.problem.user") }
        if submitting && form[SSHField.directory].isEmpty { return UIText("ssh.problem.directory") }
    case .export:
        if submitting && form[SSHField.directory].isEmpty { return UIText("ssh.problem.directory") }
    case .delete:
        return nil
    }
    return nil
}

func sshDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    tabDialogKey(
        &state, key, \.ssh.dialog, problem: { sshDialogProblem($0, submitting: $1) },
        cancel: { state, dialog in
            state.ssh.replacing = []
            if case .pin = dialog.kind { state.ssh.pinDeclined = true }
            // A dialog closed while its key waits for a touch: the wait stops (the answer still comes).
            return state.ssh.busy?.touch == true ? [.ssh(.cancel)] : []
        },
        submit: sshDialogSubmit)
}

/// The command of an SSH dialog submitted for key `d`.
private func sshDialogSubmit(_ state: inout AppState, _ dialog: inout SSHDialog, _ d: KeyDescriptor) -> DialogSubmit {
    // A yes answers the question asked; a submit after an edit starts over.
    if dialog.form.confirmed, let asked = state.ssh.asking {
        state.ssh.replacing.insert(asked)
    } else if !dialog.form.confirmed {
        state.ssh.replacing = []
    }
    state.ssh.asking = nil
    let command: SSHTabCommand
    switch dialog.kind {
    case .pin:
        command = .verifyPIN(d, pin: dialog.form[SSHField.pin])
        state.ssh.busy = SSHBusy(.verifyPIN)
    case .new:
        let f = dialog.form
        let user = f[SSHField.user]
        command = .new(
            d,
            SSHNewKeyRequest(
                application: f[SSHField.application], user: user.isEmpty ? nil : user,
                type: SSHKeyType(rawValue: f[SSHField.type]) ?? .ecdsa,
                verifyRequired: f.isOn(SSHField.verifyRequired), touchRequired: f.isOn(SSHField.touchRequired),
                directory: f[SSHField.directory], replacingFiles: state.ssh.replacing.contains(.files),
                replacingKey: state.ssh.replacing.contains(.key)))
        state.ssh.busy = SSHBusy(.new)
    case .export(let id):
        let keys = state.ssh.fidoKeys.filter { id == nil || $0.credentialID == id }
        command = .export(
            d, keys, directory: dialog.form[SSHField.directory],
            overwrite: state.ssh.replacing.contains(.files))
        state.ssh.busy = SSHBusy(.export)
    case .delete(let id):
        state.ssh.busy = SSHBusy(.delete)
        state.ssh.dialog = nil
        return .done([.ssh(.delete(d, credentialID: id))])
    }
    // The command carries what was typed: the state keeps no PIN while the key works.
    return .send(.ssh(command))
}

/// Pasted text on the SSH tab goes only into a dialog's text field.
func sshTabPaste(_ state: inout AppState, _ text: String) -> Bool {
    tabDialogPaste(&state, text, \.ssh.dialog) { sshDialogProblem($0) }
}

/// The tab's keys, for the help overlay.
func sshTabHelp(_ state: AppState) -> [HelpEntry] {
    [
        HelpEntry("Enter", UIText("ssh.help.details")),
        HelpEntry("c", UIText("ssh.help.copy")),
        HelpEntry("n", UIText("ssh.help.new")),
        HelpEntry("e / E", UIText("ssh.help.export")),
        HelpEntry("d / Del", UIText("ssh.help.delete")),
        HelpEntry("v", UIText("ssh.help.pin")),
        HelpEntry("r", UIText("ssh.help.reload")),
        HelpEntry("Esc", UIText("ssh.help.escape")),
    ]
}
