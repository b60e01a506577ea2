import KeyKit

// MARK: - Keys

func fidoTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.fido.dialog != nil { return fidoDialogKey(&state, key) }
    if let stage = state.fido.reset {
        switch stage {
        case .sending:
            if key == .escape { return [.fido(.cancel)] }
        case .removeKey, .insertKey:
            if key == .escape {
                state.fido.reset = nil
                state.status = StatusMessage(
                    UIText("fido.resetCancelled"), kind: .warning, expires: state.now + statusSeconds)
            }
        }
        return []
    }
    if state.fido.busy != nil {
        if key == .escape { return [.fido(.cancel)] }
        return []
    }
    guard let entry = state.selectedKey else { return [] }
    let info = state.fido.info
    let ready = state.fido.phase == .ready && info != nil
    if state.fido.showCredentials {
        // The all-keys binding (A unless rebound): the other keys' credentials beside these, or these alone again.
        if state.bindings.action(for: key) == .allKeys { return fidoToggleOtherKeys(&state) }
        let count = state.fido.sortedCredentials.count
        func move(_ to: Int) { state.fido.selectedCredential = max(0, min(max(0, count - 1), to)) }
        switch key {
        case .up, .char("k"): move(state.fido.selectedCredential - 1); return []
        case .down, .char("j"): move(state.fido.selectedCredential + 1); return []
        case .pageUp: move(state.fido.selectedCredential - 10); return []
        case .pageDown: move(state.fido.selectedCredential + 10); return []
        case .home, .char("g"): move(0); return []
        case .end, .char("G"): move(count - 1); return []
        case .escape:
            if state.fido.showCredentialDetail {
                state.fido.showCredentialDetail = false
            } else {
                state.fido.showCredentials = false
                fidoEndComparison(&state)
            }
            return []
        case .enter:
            state.fido.showCredentialDetail = state.fido.selected != nil
            return []
        case .char("n"):
            guard let c = state.fido.selected else { return [] }
            if info?.updateUser != true { return note(&state, "fido.noUpdateUser") }
            state.fido.dialog = renameDialog(c)
            return []
        case .char("d"), .delete:
            guard let c = state.fido.selected else { return [] }
            let who = c.who ?? "?"
            let form = Form.confirmation(
                title: UIText("fido.delete.title", ["user": who, "rp": c.rpID]),
                note: UIText("fido.delete.note", ["rp": c.rpID]), askedAt: state.now)
            state.fido.dialog = FIDODialog(kind: .deleteCredential(id: c.id), form: form)
            return []
        default:
            break
        }
    }
    switch key {
    case .up, .char("k"): state.fido.infoScroll = max(0, state.fido.infoScroll - 1)
    case .down, .char("j"): state.fido.infoScroll = min(FIDOTabState.maxInfoScroll, state.fido.infoScroll + 1)
    case .pageUp, .home, .char("g"): state.fido.infoScroll = 0
    case .pageDown: state.fido.infoScroll = min(FIDOTabState.maxInfoScroll, state.fido.infoScroll + 5)
    case .char("s"):
        guard ready, let info else { return [] }
        if info.pinSet == nil { return note(&state, "fido.noPINSupport") }
        if info.pinSet == true { return note(&state, "fido.pinAlreadySet") }
        state.fido.dialog = pinDialog(.setPIN, info)
    case .char("c"):
        guard ready, let info else { return [] }
        if info.pinSet == nil { return note(&state, "fido.noPINSupport") }
        if info.pinSet == false { return note(&state, "fido.noPIN") }
        state.fido.dialog = pinDialog(.changePIN, info)
    case .char("v"):
        guard ready, let info else { return [] }
        if info.pinSet == nil { return note(&state, "fido.noPINSupport") }
        if info.pinSet == false { return note(&state, "fido.noPIN") }
        state.fido.dialog = pinDialog(.verifyPIN(thenList: false), info)
    case .char("l"):
        guard ready, let info else { return [] }
        if state.fido.showCredentials {
            state.fido.showCredentials = false
            state.fido.showCredentialDetail = false
            fidoEndComparison(&state)
            return []
        }
        if !info.credentialManagement { return note(&state, "fido.noCredentialManagement") }
        if info.pinSet != true { return note(&state, "fido.listNeedsPIN") }
        if state.fido.hasToken {
            state.fido.busy = FIDOBusy(.list)
            return [.fido(.listCredentials(entry.descriptor))]
        }
        state.fido.dialog = pinDialog(.verifyPIN(thenList: true), info)
    case .char("R"):
        guard ready else { return [] }
        let form = Form.confirmation(
            title: UIText("fido.reset.title"), note: UIText("fido.reset.note"), askedAt: state.now)
        state.fido.dialog = FIDODialog(kind: .reset, form: form)
    case .char("r"):
        return fidoLoad(&state)
    default:
        break
    }
    return []
}

func note(_ state: inout AppState, _ key: String, kind: StatusMessage.Kind = .warning) -> [Command] {
    state.status = StatusMessage(UIText(key), kind: kind, expires: state.now + statusSeconds)
    return []
}

/// The fields of the PIN dialogs: set (new, confirm), change (current, new, confirm), verify (pin).
public enum PINField: String, FormFieldID { case current, new, confirm, pin }

/// The fields of the dialog that renames a credential's user.
public enum CredentialNameField: String, FormFieldID { case name, displayName }

/// The user name and display name of `c`, as they are, to edit (an empty one is removed).
func renameDialog(_ c: FIDOCredential) -> FIDODialog {
    // 64 bytes is what WebAuthn lets an authenticator keep of each name.
    let form = Form(
        title: UIText("fido.rename.title", ["rp": c.rpID]),
        fields: [
            Form.Field(
                CredentialNameField.name, UIText("fido.rename.name"), TextField(c.userName ?? "", maxLength: 64)),
            Form.Field(
                CredentialNameField.displayName, UIText("fido.rename.displayName"),
                TextField(c.displayName ?? "", maxLength: 64)),
        ], note: UIText("fido.rename.note"))
    return FIDODialog(kind: .renameCredential(id: c.id), form: form)
}

func pinDialog(_ kind: FIDODialogKind, _ info: FIDOInfo?) -> FIDODialog {
    let minimum = String(max(4, info?.minPINLength ?? 4))
    func field(_ f: PINField) -> Form.Field {
        // 63 bytes of UTF-8 are at most 63 characters; one more lets the rule be seen as it is broken.
        Form.Field(f, UIText("fido.pin.\(f.rawValue)"), TextField(secret: true, maxLength: PINRules.maxBytes + 1))
    }
    var form: Form
    switch kind {
    case .setPIN:
        form = Form(
            title: UIText("fido.setPIN.title"), fields: [field(.new), field(.confirm)],
            note: UIText("fido.setPIN.note", ["minimum": minimum]))
    case .changePIN:
        form = Form(
            title: UIText("fido.changePIN.title"), fields: [field(.current), field(.new), field(.confirm)],
            note: UIText("fido.changePIN.note", ["minimum": minimum]))
    case .verifyPIN(let thenList):
        form = Form(
            title: UIText(thenList ? "fido.listPIN.title" : "fido.verifyPIN.title"), fields: [field(.pin)],
            note: UIText(thenList ? "fido.listPIN.note" : "fido.verifyPIN.note"))
    case .otherPIN:
        // Named by the caller (`fidoAskNextOtherPIN`): the key's model and name.
        form = Form(title: UIText("fido.others.pinTitle", ["key": ""]), fields: [field(.pin)])
    case .deleteCredential, .renameCredential, .reset:
        // Not a PIN dialog: confirmations are made where they are opened, with the time of the key that
        // opened them. One made here could never be answered yes (only Esc closes it).
        form = Form.confirmation(title: UIText("fido.reset.title"), askedAt: .infinity)
    }
    return FIDODialog(kind: kind, form: form)
}

/// What is wrong with the PIN dialog as typed so far; on submit, empty fields count too.
func fidoDialogProblem(_ dialog: FIDODialog, minimum: Int, submitting: Bool = false) -> UIText? {
    let form = dialog.form
    switch dialog.kind {
    case .setPIN, .changePIN:
        let current = form.has(PINField.current) ? form[PINField.current] : nil
        let new = form[PINField.new], confirm = form[PINField.confirm]
        if submitting, let current, current.isEmpty { return UIText("fido.pin.currentEmpty") }
        if !new.isEmpty || submitting || form.focusIsPast(PINField.new) {
            if let problem = fidoPINProblem(new, minimum: minimum) { return problem }
        }
        // The confirmation is compared as it is typed: a wrong character shows at once.
        if (!confirm.isEmpty && !new.hasPrefix(confirm)) || (submitting && new != confirm) {
            return UIText("fido.pin.mismatch")
        }
        if submitting, let current, current == new { return UIText("fido.pin.same") }
    case .verifyPIN, .otherPIN:
        if submitting && form[PINField.pin].isEmpty { return UIText("fido.pin.empty") }
        if let problem = PINRules.problem(form[PINField.pin]), case .pinTooLong = problem {
            return pinRuleText(problem)
        }
    case .deleteCredential, .renameCredential, .reset:
        return nil
    }
    return nil
}

func fidoDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    let minimum = state.fido.info?.minPINLength ?? 4
    return tabDialogKey(
        &state, key, \.fido.dialog,
        problem: { fidoDialogProblem($0, minimum: minimum, submitting: $1) },
        cancel: { state, dialog in
            if case .otherPIN(let id) = dialog.kind {
                fidoSkipOtherKey(&state, keyID: id)
                fidoAskNextOtherPIN(&state)
                return []
            }
            // A dialog closed while its command runs: the answer still comes, in the status line.
            if dialog.form.busy { return [.fido(.cancel)] }
            // Another key that waited for this dialog to close asks for its PIN now.
            fidoAskNextOtherPIN(&state)
            return []
        },
        submit: fidoDialogSubmit)
}

/// The command of a FIDO2 dialog submitted for key `d`.
private func fidoDialogSubmit(_ state: inout AppState, _ dialog: inout FIDODialog, _ d: KeyDescriptor)
    -> DialogSubmit
{
    let command: FIDOTabCommand
    switch dialog.kind {
    case .setPIN:
        command = .setPIN(d, new: dialog.form[PINField.new])
        state.fido.busy = FIDOBusy(.setPIN)
    case .changePIN:
        command = .changePIN(d, current: dialog.form[PINField.current], new: dialog.form[PINField.new])
        state.fido.busy = FIDOBusy(.changePIN)
    case .verifyPIN(let thenList):
        command = .verifyPIN(d, pin: dialog.form[PINField.pin], thenList: thenList)
        state.fido.busy = FIDOBusy(.verifyPIN)
    case .deleteCredential(let id):
        guard let c = state.fido.credentials?.first(where: { $0.id == id }) else {
            state.fido.dialog = nil
            return .done([])
        }
        state.fido.busy = FIDOBusy(.delete)
        state.fido.dialog = nil
        return .done([.fido(.deleteCredential(d, credentialID: c.credentialID))])
    case .renameCredential(let id):
        guard let c = state.fido.credentials?.first(where: { $0.id == id }) else {
            state.fido.dialog = nil
            return .done([])
        }
        let name = dialog.form[CredentialNameField.name], display = dialog.form[CredentialNameField.displayName]
        command = .updateUser(
            d, credentialID: c.credentialID, userID: c.userID, name: name.isEmpty ? nil : name,
            displayName: display.isEmpty ? nil : display)
        state.fido.busy = FIDOBusy(.update)
    case .reset:
        state.fido.dialog = nil
        state.fido.reset = .sending(keyID: d.id)
        state.fido.busy = FIDOBusy(.reset)
        state.fido.hasToken = false
        return .done([.fido(.reset(d))])
    case .otherPIN(let id):
        // Another key's PIN (the credentials compared across keys): it goes to that key.
        return .done(fidoSubmitOtherPIN(&state, dialog, keyID: id))
    }
    // The PIN leaves the state with the command.
    return .send(.fido(command))
}
