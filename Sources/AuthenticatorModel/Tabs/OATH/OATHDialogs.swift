import FoundationEssentials
import Glibc
import KeyKit

// MARK: - Dialogs

/// The fields of the unlock dialog.
public enum UnlockField: String, FormFieldID { case password, remember }

/// The fields of the password dialog (the current password only when the key has one).
public enum PasswordField: String, FormFieldID { case current, new, confirm }

/// The field of the rename dialog.
public enum RenameField: String, FormFieldID { case name }

/// A check box of the Add dialog: the account goes to this other key too (its key ID).
public struct AlsoOnField: FormFieldID, Hashable {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ keyID: String) { rawValue = Self.prefix + keyID }

    static let prefix = "alsoOn:"
}

/// The unlock dialog: for the selected key, or (`keyID`, named `label`) another key of the all-keys view.
func unlockDialog(keyID: String? = nil, label: String? = nil) -> OATHDialog {
    var form = Form(
        title: keyID == nil ? UIText("oath.unlock.title") : UIText("oath.unlock.titleOf", ["key": label ?? ""]),
        fields: [
            Form.Field(UnlockField.password, UIText("oath.unlock.password"), TextField(secret: true, maxLength: 256)),
            Form.Field(UnlockField.remember, UIText("oath.unlock.remember"), TextField("no"), toggle: true),
        ])
    form.note = UIText("oath.unlock.note")
    return OATHDialog(kind: keyID.map { .unlockOther(keyID: $0) } ?? .unlock, form: form)
}

/// The fields of the add dialog, in the order shown.
public enum AddField: String, CaseIterable, FormFieldID {
    case uri, issuer, name, secret, type, algorithm, digits, period, counter, touch
}

func addDialog() -> OATHDialog {
    func field(_ f: AddField, _ input: TextField, toggle: Bool = false, choices: [String] = []) -> Form.Field {
        let labels: [AddField: String] = [
            .uri: "oath.add.uri", .issuer: "oath.add.issuer", .name: "oath.add.name", .secret: "oath.add.secret",
            .type: "oath.add.type", .algorithm: "oath.add.algorithm", .digits: "oath.add.digits",
            .period: "oath.add.period", .counter: "oath.add.counter", .touch: "oath.add.touch",
        ]
        return Form.Field(f, UIText(labels[f]!), input, toggle: toggle, choices: choices)
    }
    var form = Form(
        title: UIText("oath.add.title"),
        fields: [
            field(.uri, TextField(maxLength: 4096)),
            field(.issuer, TextField(maxLength: 64)),
            field(.name, TextField(maxLength: 64)),
            field(.secret, TextField(secret: true, maxLength: 1024)),
            field(.type, TextField("TOTP"), choices: ["TOTP", "HOTP"]),
            field(.algorithm, TextField("SHA1"), choices: ["SHA1", "SHA256", "SHA512"]),
            field(.digits, TextField("6"), choices: ["6", "7", "8"]),
            field(.period, TextField("30", maxLength: 4)),
            field(.counter, TextField("0", maxLength: 10)),
            field(.touch, TextField("no"), toggle: true),
        ])
    form.note = UIText("oath.add.note")
    return OATHDialog(kind: .add(filledFromURI: nil), form: form)
}

/// The Add dialog with a check box for each other key with OATH (checked when `[oath] add_to_all_keys` says so):
/// the account goes to the selected key and to those checked.
func addDialog(for state: AppState) -> OATHDialog {
    var dialog = addDialog()
    dialog.form.fields += alsoOnFields(state, state.otherOATHKeys, label: "oath.add.alsoOn")
    return dialog
}

/// Whether pasted text is a URI the add dialog takes.
func isAccountURI(_ text: String) -> Bool {
    let t = text.trimmingWhitespace.lowercased()
    return t.hasPrefix("otpauth://") || t.hasPrefix("otpauth-migration://")
}

/// The accounts an `otpauth://` or `otpauth-migration://` URI carries.
func accountsInURI(_ uri: String) -> Result<[CredentialData], OATHError> {
    Result { () throws(OATHError) in try OTPAuthURI.accounts(in: uri) }
}

/// After the URI field changed: a URI with one account fills every field, so what will be added can be seen
/// (and changed) before Enter adds it. A URI with several accounts (an export) leaves the fields empty.
func fillFromURI(_ dialog: inout OATHDialog) {
    let uri = dialog.form[AddField.uri].trimmingWhitespace
    guard case .add(let filled) = dialog.kind, uri != filled else { return }
    dialog.form.note = UIText("oath.add.note")
    guard !uri.isEmpty, case .success(let accounts) = accountsInURI(uri) else {
        dialog.kind = .add(filledFromURI: nil)
        return
    }
    dialog.kind = .add(filledFromURI: uri)
    guard accounts.count == 1, let data = accounts.first else {
        for f in [AddField.issuer, .name, .secret] { dialog.form[f] = "" }
        dialog.form.note = UIText("oath.add.several", ["count": String(accounts.count)])
        return
    }
    dialog.form[AddField.issuer] = data.issuer ?? ""
    dialog.form[AddField.name] = data.name
    dialog.form[AddField.secret] = Base32.encode(data.secret)
    dialog.form[AddField.type] = data.type == .hotp ? "HOTP" : "TOTP"
    dialog.form[AddField.algorithm] = data.algorithm.rawValue
    dialog.form[AddField.digits] = String(data.digits)
    dialog.form[AddField.period] = String(data.period)
    dialog.form[AddField.counter] = String(data.counter)
    dialog.form[AddField.touch] = data.touch ? "yes" : "no"
}

/// The accounts the add dialog describes, or the first problem with it. A URI with one account has filled
/// the fields, and the fields (as the user may have changed them) are what is added; an export with several
/// accounts adds them as they are.
public func addFormCredentials(_ form: Form) -> Result<[CredentialData], OATHError> {
    let uri = form[AddField.uri].trimmingWhitespace
    if !uri.isEmpty {
        switch accountsInURI(uri) {
        case .failure(let e): return .failure(e)
        case .success(let accounts) where accounts.count > 1: return .success(accounts)
        case .success: break
        }
    }
    var fields = AccountFields(name: form[AddField.name], issuer: form[AddField.issuer], secret: form[AddField.secret])
    fields.type = form[AddField.type]
    fields.algorithm = form[AddField.algorithm]
    fields.digits = form[AddField.digits]
    fields.period = form[AddField.period]
    fields.counter = form[AddField.counter]
    fields.touch = form.isOn(AddField.touch)
    return Result { () throws(OATHError) in [try fields.credential()] }
}

func passwordDialog(hasPassword: Bool) -> OATHDialog {
    var fields = [Form.Field]()
    func field(_ f: PasswordField) -> Form.Field {
        Form.Field(f, UIText("oath.password.\(f.rawValue)"), TextField(secret: true, maxLength: 256))
    }
    if hasPassword { fields.append(field(.current)) }
    fields += [field(.new), field(.confirm)]
    var form = Form(title: UIText(hasPassword ? "oath.password.changeTitle" : "oath.password.setTitle"), fields: fields)
    form.note = UIText(hasPassword ? "oath.password.changeNote" : "oath.password.setNote")
    return OATHDialog(kind: .password, form: form)
}

/// Whether Enter submits the dialog from whichever field: rename and delete always; Add once it was filled from a URI
/// or a key did not take its account, and what it describes is an account.
private func enterSubmits(_ dialog: OATHDialog, _ state: AppState) -> Bool {
    switch dialog.kind {
    case .rename, .delete: return true
    case .add(let uri):
        guard uri != nil || state.oath.change != nil, case .success = addFormCredentials(dialog.form) else {
            return false
        }
        return true
    case .unlock, .unlockOther, .password: return false
    }
}

func oathDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if let commands = addDialogKey(&state, key) { return commands }
    guard var dialog = state.oath.dialog else { return [] }
    var outcome = dialog.form.handle(key, now: state.now)
    // Filled from a URI, the add dialog is ready for review: one Enter adds, from whichever field. So it is after a
    // key did not take the account: Enter tries again. Rename and delete submit from any field (what follows the name
    // are the other keys' check boxes, set as the config says).
    if key == .enter, outcome == .editing, dialog.form.confirming == nil, !dialog.form.busy, enterSubmits(dialog, state)
    {
        outcome = .submit
    }
    return oathDialogOutcome(&state, &dialog, outcome)
}

/// Pasted text on the OATH tab: into the open dialog's field or the filter, or, on the list, a URI that
/// opens Add filled in from it. False when the tab has no use for it.
func oathPaste(_ state: inout AppState, _ text: String) -> Bool {
    if state.oath.shown != nil { return false }
    if var dialog = state.oath.dialog {
        guard dialog.form.paste(text) else { return false }
        _ = oathDialogOutcome(&state, &dialog, .editing)
        return true
    }
    if state.oath.filterFocused {
        state.oath.filter.insert(text)
        state.oath.selectedID = state.oath.visibleAccounts.first?.id
        return true
    }
    guard state.oath.phase == .ready, isAccountURI(text) else { return false }
    var dialog = addDialog(for: state)
    dialog.form.paste(text.trimmingWhitespace)
    _ = oathDialogOutcome(&state, &dialog, .editing)
    return true
}

func oathDialogOutcome(_ state: inout AppState, _ dialog: inout OATHDialog, _ outcome: Form.Outcome) -> [Command] {
    switch outcome {
    case .cancel:
        // Closed after some keys took the account and others did not: a secret made here is still shown.
        showMadeAccount(&state, dialog)
        dialog.form.wipeSecrets()
        state.oath.dialog = nil
        state.oath.change = nil
        state.oath.readingImage = nil
        return []
    case .editing:
        if dialog.kind.isAdd { filled(&state, &dialog) }
        if dialog.form.confirming == nil { dialog.form.problem = liveProblem(dialog, state) }
        state.oath.dialog = dialog
        return []
    case .submit:
        if dialog.kind.isAdd { filled(&state, &dialog) }
        if let problem = liveProblem(dialog, state, submitting: true) {
            dialog.form.problem = problem
            state.oath.dialog = dialog
            return []
        }
        // What cannot be undone is asked first: replacing an account, removing the password.
        if !dialog.form.confirmed, let question = oathQuestion(dialog, state) {
            dialog.form.problem = nil
            dialog.form.ask(question, at: state.now)
            state.oath.dialog = dialog
            return []
        }
        guard let key = state.selectedKey else { state.oath.dialog = nil; return [] }
        dialog.form.busy = true
        dialog.form.problem = nil
        // Rename and delete offered other keys that hold the account: each key checked does it too, and answers for
        // itself.
        if dialog.kind.acrossKeys, dialog.form.fields.contains(where: { $0.id.hasPrefix(AlsoOnField.prefix) }) {
            return submitChange(&state, dialog)
        }
        var commands = [Command]()
        let now = state.now
        switch dialog.kind {
        case .unlock:
            commands = [
                .oath(
                    .unlock(
                        key.descriptor, password: dialog.form[UnlockField.password],
                        remember: dialog.form.isOn(UnlockField.remember), time: now))
            ]
        case .unlockOther(let id):
            guard let other = state.keys.first(where: { $0.id == id }) else { state.oath.dialog = nil; return [] }
            commands = [
                .oath(
                    .unlock(
                        other.descriptor, password: dialog.form[UnlockField.password],
                        remember: dialog.form.isOn(UnlockField.remember), time: now))
            ]
        case .add:
            // The secret stays in the dialog until it closes: a key that did not take the account can be tried again.
            return submitChange(&state, dialog)
        case .rename(let id):
            guard let a = state.oath.accounts.first(where: { $0.id == id }) else { state.oath.dialog = nil; return [] }
            let (issuer, name) = splitIssuer(dialog.form[RenameField.name])
            commands = [
                .oath(
                    .rename(
                        key.descriptor, a.credential,
                        to: CredentialID(name: name, issuer: issuer, type: a.credential.type, period: a.period),
                        time: now))
            ]
        case .delete(let id):
            guard let a = state.oath.accounts.first(where: { $0.id == id }) else { state.oath.dialog = nil; return [] }
            commands = [.oath(.delete(key.descriptor, a.credential, time: now))]
        case .password:
            let current = dialog.form.has(PasswordField.current) ? dialog.form[PasswordField.current] : nil
            commands = [
                .oath(.setPassword(key.descriptor, current: current, new: dialog.form[PasswordField.new], time: now))
            ]
        }
        dialog.form.wipeSecrets()
        state.oath.dialog = dialog
        return commands
    }
}

/// The Add dialog after an edit: filled from a URI in its URI field (whose secret replaces one made here), and its
/// note.
private func filled(_ state: inout AppState, _ dialog: inout OATHDialog) {
    fillFromURI(&dialog)
    if dialog.kind != .add(filledFromURI: nil) { state.oath.secretMade = false }
    addDialogNote(state, &dialog)
}

/// The question a dialog asks before it submits, if what it does cannot be undone.
func oathQuestion(_ dialog: OATHDialog, _ state: AppState) -> UIText? {
    switch dialog.kind {
    case .add:
        guard case .success(let accounts) = addFormCredentials(dialog.form) else { return nil }
        let ids = accounts.map(\.id.string)
        let targets = changeTargets(state, dialog)
        let holding = targets.filter { holds(state, $0.id, ids) }
        guard !holding.isEmpty else { return nil }
        let existing = ids.filter { id in holding.contains { holds(state, $0.id, [id]) } }
        if targets.map(\.id) == [state.selectedKeyID] {
            return UIText("oath.add.replaceQuestion", ["accounts": existing.joined(separator: ", ")])
        }
        return UIText(
            "oath.add.replaceQuestionOn",
            ["accounts": existing.joined(separator: ", "), "keys": holding.map(state.keyLabel).joined(separator: ", ")])
    case .password:
        let form = dialog.form
        return form.has(PasswordField.current) && form[PasswordField.new].isEmpty && form[PasswordField.confirm].isEmpty
            ? UIText("oath.password.removeQuestion") : nil
    case .delete(let id):
        // With other keys checked, the confirmation comes after the check boxes, naming the keys.
        guard dialog.form.fields.contains(where: { $0.id.hasPrefix(AlsoOnField.prefix) }) else { return nil }
        let keys = changeTargets(state, dialog).map(state.keyLabel).joined(separator: ", ")
        return UIText("oath.delete.questionOn", ["account": id, "keys": keys])
    case .unlock, .unlockOther, .rename:
        return nil
    }
}

/// "Issuer:name" → ("Issuer", "name"); a name without a colon has no issuer.
func splitIssuer(_ text: String) -> (String?, String) {
    let t = text.trimmingSpaces
    guard let colon = t.firstIndex(of: ":") else { return (nil, t) }
    let issuer = String(t[..<colon]).trimmingSpaces
    let name = String(t[t.index(after: colon)...]).trimmingSpaces
    return (issuer.isEmpty ? nil : issuer, name)
}

/// What is wrong with the form as typed so far (checked after each key; on submit, empty required
/// fields count too).
func liveProblem(_ dialog: OATHDialog, _ state: AppState, submitting: Bool = false) -> UIText? {
    let form = dialog.form
    switch dialog.kind {
    case .unlock, .unlockOther:
        if submitting && form[UnlockField.password].isEmpty { return UIText("oath.unlock.empty") }
    case .add:
        let touched = form.fields.prefix(4).contains { !$0.input.text.isEmpty }
        guard submitting || touched else { return nil }
        // An image path: Enter reads it (`addDialogKey`).
        if addImagePath(form[AddField.uri]) != nil { return submitting ? UIText("oath.add.imageNote") : nil }
        if !submitting && form[AddField.uri].isEmpty && (form[AddField.name].isEmpty || form[AddField.secret].isEmpty) {
            return nil
        }
        switch addFormCredentials(form) {
        case .failure(let e):
            return ErrorExplanation(e).text
        case .success(let accounts):
            if let v = state.oath.version,
                let missing = accounts.lazy.compactMap({ $0.unsupportedFeature(on: v) }).first
            {
                return UIText(missing == .touch ? "oath.add.noTouch" : "oath.add.noSHA512")
            }
        }
    case .rename(let id):
        let (issuer, name) = splitIssuer(form[RenameField.name])
        if name.isEmpty { return UIText("oath.rename.empty") }
        guard let a = state.oath.accounts.first(where: { $0.id == id }) else { return nil }
        let newID = CredentialID(name: name, issuer: issuer, type: a.credential.type, period: a.period)
        do { try newID.validate() } catch { return ErrorExplanation(error).text }
        if newID.string != id && state.oath.accounts.contains(where: { $0.id == newID.string }) {
            return UIText("oath.add.exists", ["account": newID.string])
        }
    case .delete:
        return nil
    case .password:
        let hasCurrent = form.has(PasswordField.current)
        let new = form[PasswordField.new], confirm = form[PasswordField.confirm]
        if submitting && hasCurrent && form[PasswordField.current].isEmpty {
            return UIText("oath.password.currentEmpty")
        }
        if !confirm.isEmpty || submitting, new != confirm { return UIText("oath.password.mismatch") }
        if submitting && !hasCurrent && new.isEmpty { return UIText("oath.password.empty") }
    }
    return nil
}
