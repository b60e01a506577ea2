import KeyKit

// MARK: - Keys

func openpgpTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.openpgp.dialog != nil { return openpgpDialogKey(&state, key) }
    let rows = state.openpgp.info?.keys ?? []
    func move(_ to: Int) { state.openpgp.selectedRow = max(0, min(max(0, rows.count - 1), to)) }
    switch key {
    case .up, .char("k"): move(state.openpgp.selectedRow - 1); return []
    case .down, .char("j"): move(state.openpgp.selectedRow + 1); return []
    case .pageUp, .home, .char("g"): move(0); return []
    case .pageDown, .end, .char("G"): move(rows.count - 1); return []
    default: break
    }
    // Everything else asks the key, one command at a time.
    guard state.openpgp.busy == nil, state.selectedKey != nil else { return [] }
    if key == .char("r") { return openpgpLoad(&state) }
    guard state.openpgp.phase == .ready, let info = state.openpgp.info else { return [] }
    let row = state.openpgp.selected
    func blocked(_ password: OpenPGP.Password) -> Bool { info.tries(password) == 0 }
    switch key {
    case .char("p"):
        if blocked(.user) { return openpgpNote(&state, UIText("openpgp.blocked.pin")) }
        state.openpgp.dialog = openpgpDialog(.changePIN)
    case .char("a"):
        if blocked(.admin) { return openpgpNote(&state, UIText("openpgp.blocked.admin-pin")) }
        state.openpgp.dialog = openpgpDialog(.changeAdminPIN)
    case .char("c"):
        if blocked(.admin) { return openpgpNote(&state, UIText("openpgp.blocked.admin-pin")) }
        state.openpgp.dialog = openpgpDialog(.setResetCode)
    case .char("b"):
        // With the reset code when one is set (it has tries), else with the admin PIN.
        if !blocked(.reset) {
            state.openpgp.dialog = openpgpDialog(.unblockPIN(withResetCode: true))
        } else if !blocked(.admin) {
            state.openpgp.dialog = openpgpDialog(.unblockPIN(withResetCode: false))
        } else {
            return openpgpNote(&state, UIText("openpgp.blocked.admin-pin"))
        }
    case .char("t"):
        guard let row else { return [] }
        let slot = openpgpSlotLabel(row.slot)
        guard let policy = row.touchPolicy else {
            return openpgpNote(&state, UIText("openpgp.touch.unsupported", ["slot": slot]))
        }
        if policy.isFixed { return openpgpNote(&state, UIText("openpgp.touch.isFixed", ["slot": slot])) }
        if blocked(.admin) { return openpgpNote(&state, UIText("openpgp.blocked.admin-pin")) }
        state.openpgp.dialog = openpgpDialog(.touchPolicy(row.slot), current: policy)
    case .char("e"):
        guard let row else { return [] }
        state.openpgp.dialog = openpgpDialog(.export(row.slot))
    case .char("A"):
        guard let row else { return [] }
        let slot = openpgpSlotLabel(row.slot)
        if !info.canAttest {
            return openpgpNote(&state, UIText("openpgp.attest.unsupported", ["version": info.version]))
        }
        if !row.hasKey { return openpgpNote(&state, UIText("openpgp.noKey", ["slot": slot])) }
        if blocked(.user) { return openpgpNote(&state, UIText("openpgp.blocked.pin")) }
        state.openpgp.dialog = openpgpDialog(.attest(row.slot))
    case .char("d"):
        if blocked(.admin) { return openpgpNote(&state, UIText("openpgp.blocked.admin-pin")) }
        state.openpgp.dialog = openpgpDialog(.kdf(on: !info.kdfEnabled))
    case .char("R"):
        // A question, answered only by a y typed after it showed.
        var dialog = openpgpDialog(.reset)
        dialog.form.askedAt = state.now
        state.openpgp.dialog = dialog
    default:
        break
    }
    return []
}

func openpgpNote(_ state: inout AppState, _ text: UIText) -> [Command] {
    state.status = StatusMessage(text, kind: .warning, expires: state.now + statusSeconds)
    return []
}

// MARK: - Dialogs

/// The password a field of the dialog holds.
func openpgpPassword(_ kind: OpenPGPDialogKind, _ field: OpenPGPField) -> OpenPGP.Password {
    switch (kind, field) {
    case (_, .adminPIN), (.changeAdminPIN, _): return .admin
    case (.setResetCode, .new), (.setResetCode, .confirm), (_, .resetCode): return .reset
    default: return .user
    }
}

/// The choices of the touch policy dialog, as ykman names them.
let openpgpTouchChoices = OpenPGP.TouchPolicy.allCases.map(\.name)

func openpgpDialog(_ kind: OpenPGPDialogKind, current policy: OpenPGP.TouchPolicy = .off) -> OpenPGPDialog {
    func secret(_ field: OpenPGPField, _ label: String) -> Form.Field {
        // As long as the card takes; a few more let the rule be seen as it is broken.
        Form.Field(field, UIText(label), TextField(secret: true, maxLength: OpenPGP.maximumPINLength + 4))
    }
    let form: Form
    switch kind {
    case .changePIN:
        form = Form(
            title: UIText("openpgp.changePIN.title"),
            fields: [
                secret(.current, "openpgp.field.currentPIN"), secret(.new, "openpgp.field.newPIN"),
                secret(.confirm, "openpgp.field.confirmPIN"),
            ],
            note: UIText("openpgp.changePIN.note"))
    case .changeAdminPIN:
        form = Form(
            title: UIText("openpgp.changeAdminPIN.title"),
            fields: [
                secret(.current, "openpgp.field.currentAdminPIN"), secret(.new, "openpgp.field.newAdminPIN"),
                secret(.confirm, "openpgp.field.confirmAdminPIN"),
            ],
            note: UIText("openpgp.changeAdminPIN.note"))
    case .setResetCode:
        form = Form(
            title: UIText("openpgp.setResetCode.title"),
            fields: [
                secret(.adminPIN, "openpgp.field.adminPIN"), secret(.new, "openpgp.field.newResetCode"),
                secret(.confirm, "openpgp.field.confirmResetCode"),
            ],
            note: UIText("openpgp.setResetCode.note"))
    case .unblockPIN(let withResetCode):
        form = Form(
            title: UIText("openpgp.unblock.title"),
            fields: [
                withResetCode
                    ? secret(.resetCode, "openpgp.field.resetCode") : secret(.adminPIN, "openpgp.field.adminPIN"),
                secret(.new, "openpgp.field.newPIN"), secret(.confirm, "openpgp.field.confirmPIN"),
            ],
            note: UIText(withResetCode ? "openpgp.unblock.noteResetCode" : "openpgp.unblock.noteAdminPIN"))
    case .touchPolicy(let slot):
        form = Form(
            title: UIText("openpgp.touch.title", ["slot": openpgpSlotLabel(slot)]),
            fields: [
                Form.Field(
                    OpenPGPField.policy, UIText("openpgp.field.policy"), TextField(policy.name),
                    choices: openpgpTouchChoices),
                secret(.adminPIN, "openpgp.field.adminPIN"),
            ],
            note: UIText("openpgp.touch.note"))
    case .export(let slot):
        let name = "openpgp-\(slot.name)-certificate.pem"
        form = Form(
            title: UIText("openpgp.export.title", ["slot": openpgpSlotLabel(slot)]),
            fields: [Form.Field(OpenPGPField.path, UIText("openpgp.field.path"), TextField(name, maxLength: 4096))],
            note: UIText("openpgp.export.note"))
    case .attest(let slot):
        form = Form(
            title: UIText("openpgp.attest.title", ["slot": openpgpSlotLabel(slot)]),
            fields: [secret(.pin, "openpgp.field.pin")],
            note: UIText("openpgp.attest.note", ["slot": openpgpSlotLabel(slot)]))
    case .reset:
        form = Form.confirmation(
            title: UIText("openpgp.reset.title"), note: UIText("openpgp.reset.note"), askedAt: .infinity)
    case .kdf(let on):
        let state = on ? "on" : "off"
        form = Form(
            title: UIText("openpgp.kdf.title." + state), fields: [secret(.adminPIN, "openpgp.field.adminPIN")],
            note: UIText("openpgp.kdf.note." + state))
    }
    return OpenPGPDialog(kind: kind, form: form)
}

/// What is wrong with the dialog as typed so far; on submit, empty fields count too. Passwords are bytes to the
/// card: their UTF-8 length is what counts.
func openpgpDialogProblem(_ dialog: OpenPGPDialog, submitting: Bool = false) -> UIText? {
    let form = dialog.form
    func name(_ f: OpenPGPField) -> UIText { UIText("openpgp.password." + openpgpPassword(dialog.kind, f).textName) }
    func length(_ f: OpenPGPField) -> Int { form[f].utf8.count }
    func tooLong(_ f: OpenPGPField) -> UIText? {
        length(f) > OpenPGP.maximumPINLength
            ? UIText(
                "openpgp.rule.long", ["maximum": String(OpenPGP.maximumPINLength), "count": String(length(f))],
                nested: ["secret": name(f)]) : nil
    }
    func empty(_ f: OpenPGPField) -> UIText? {
        submitting && form[f].isEmpty ? UIText("openpgp.rule.empty", nested: ["secret": name(f)]) : nil
    }
    switch dialog.kind {
    case .changePIN, .changeAdminPIN, .setResetCode, .unblockPIN:
        let first = form.fields.first.flatMap { OpenPGPField(rawValue: $0.id) } ?? .current
        if let problem = tooLong(first) ?? empty(first) { return problem }
        let new = form[OpenPGPField.new], confirm = form[OpenPGPField.confirm]
        let minimum = openpgpPassword(dialog.kind, .new).minimumLength
        if let problem = tooLong(.new) { return problem }
        if (submitting || form.focusIsPast(OpenPGPField.new)) && length(.new) < minimum {
            return UIText(
                "openpgp.rule.short", ["minimum": String(minimum), "count": String(length(.new))],
                nested: ["secret": name(.new)])
        }
        // The confirmation is compared as it is typed: a wrong character shows at once.
        if (!confirm.isEmpty && !new.hasPrefix(confirm)) || (submitting && new != confirm) {
            return UIText("openpgp.rule.mismatch", nested: ["secret": name(.new)])
        }
        if submitting, dialog.kind == .changePIN || dialog.kind == .changeAdminPIN, form[OpenPGPField.current] == new {
            return UIText("openpgp.rule.same", nested: ["secret": name(.new)])
        }
    case .touchPolicy, .kdf:
        if let problem = tooLong(.adminPIN) ?? empty(.adminPIN) { return problem }
    case .attest:
        if let problem = tooLong(.pin) ?? empty(.pin) { return problem }
    case .export:
        if form[OpenPGPField.path].trimmingSpaces.isEmpty { return UIText("openpgp.export.pathEmpty") }
    case .reset:
        break
    }
    return nil
}

func openpgpDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    // A dialog closed while its command runs cancels nothing: the answer still comes, in the status line.
    tabDialogKey(
        &state, key, \.openpgp.dialog, problem: { openpgpDialogProblem($0, submitting: $1) },
        submit: openpgpDialogSubmit)
}

/// The command of an OpenPGP dialog submitted for key `d`.
private func openpgpDialogSubmit(_ state: inout AppState, _ dialog: inout OpenPGPDialog, _ d: KeyDescriptor)
    -> DialogSubmit
{
    let form = dialog.form
    let command: OpenPGPTabCommand
    let operation: OpenPGPTabOperation
    switch dialog.kind {
    case .changePIN:
        (command, operation) = (
            .changePIN(d, current: form[OpenPGPField.current], new: form[OpenPGPField.new]), .changePIN
        )
    case .changeAdminPIN:
        (command, operation) = (
            .changeAdminPIN(d, current: form[OpenPGPField.current], new: form[OpenPGPField.new]), .changeAdminPIN
        )
    case .setResetCode:
        (command, operation) = (
            .setResetCode(d, adminPIN: form[OpenPGPField.adminPIN], new: form[OpenPGPField.new]), .setResetCode
        )
    case .unblockPIN(let withResetCode):
        (command, operation) = (
            .unblockPIN(
                d, resetCode: withResetCode ? form[OpenPGPField.resetCode] : nil,
                adminPIN: withResetCode ? nil : form[OpenPGPField.adminPIN], new: form[OpenPGPField.new]),
            .unblockPIN
        )
    case .touchPolicy(let slot):
        let policy = OpenPGP.TouchPolicy(name: form[OpenPGPField.policy]) ?? .off
        // A fixed policy stays until the key is replaced: asked first, and only a typed y goes on.
        if policy.isFixed && !form.confirmed {
            dialog.form.ask(
                UIText("openpgp.touch.fixedQuestion", ["slot": openpgpSlotLabel(slot), "policy": policy.name]),
                at: state.now)
            state.openpgp.dialog = dialog
            return .done([])
        }
        (command, operation) = (
            .setTouchPolicy(
                d, slot: slot, policy: policy, adminPIN: form[OpenPGPField.adminPIN], confirmed: policy.isFixed),
            .touchPolicy
        )
    case .export(let slot):
        let path = form[OpenPGPField.path].trimmingSpaces
        (command, operation) = (.export(d, slot: slot, path: path, overwrite: form.confirmed), .export)
    case .attest(let slot):
        (command, operation) = (.attest(d, slot: slot, pin: form[OpenPGPField.pin]), .attest)
    case .reset:
        (command, operation) = (.reset(d), .reset)
    case .kdf(let on):
        (command, operation) = (.setKDF(d, on: on, adminPIN: form[OpenPGPField.adminPIN]), .kdf)
    }
    // The passwords leave the state with the command.
    state.openpgp.busy = OpenPGPBusy(operation)
    return .send(.openpgp(command))
}

/// Pasted text on the OpenPGP tab goes only into a dialog's field.
func openpgpTabPaste(_ state: inout AppState, _ text: String) -> Bool {
    tabDialogPaste(&state, text, \.openpgp.dialog) { openpgpDialogProblem($0) }
}

/// The tab's keys, for the help overlay.
func openpgpTabHelp(_ state: AppState) -> [HelpEntry] {
    [
        HelpEntry("Up/Down j/k", UIText("openpgp.help.move")),
        HelpEntry("p", UIText("openpgp.help.pin")),
        HelpEntry("a", UIText("openpgp.help.adminPIN")),
        HelpEntry("c", UIText("openpgp.help.resetCode")),
        HelpEntry("b", UIText("openpgp.help.unblock")),
        HelpEntry("t", UIText("openpgp.help.touch")),
        HelpEntry("e", UIText("openpgp.help.export")),
        HelpEntry("A", UIText("openpgp.help.attest")),
        HelpEntry("d", UIText("openpgp.help.kdf")),
        HelpEntry("R", UIText("openpgp.help.reset")),
        HelpEntry("r", UIText("openpgp.help.reload")),
    ]
}
