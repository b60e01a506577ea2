import KeyKit

// MARK: - Keys

func pivTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.piv.dialog != nil { return pivDialogKey(&state, key) }
    let rows = state.piv.info?.rows ?? []
    if state.piv.showDetails {
        switch key {
        case .up, .char("k"): state.piv.detailsScroll = max(0, state.piv.detailsScroll - 1); return []
        case .down, .char("j"):
            state.piv.detailsScroll = min(PIVTabState.maxDetailsScroll, state.piv.detailsScroll + 1); return []
        case .pageUp, .home, .char("g"): state.piv.detailsScroll = 0; return []
        case .pageDown:
            state.piv.detailsScroll = min(PIVTabState.maxDetailsScroll, state.piv.detailsScroll + 5); return []
        case .escape, .enter, .left:
            state.piv.showDetails = false
            return []
        default:
            break
        }
    } else {
        func move(_ to: Int) { state.piv.selectedRow = max(0, min(max(0, rows.count - 1), to)) }
        switch key {
        case .up, .char("k"): move(state.piv.selectedRow - 1); return []
        case .down, .char("j"): move(state.piv.selectedRow + 1); return []
        // g makes a certificate here (in the details it still scrolls to the top).
        case .pageUp, .home: move(0); return []
        case .pageDown, .end, .char("G"): move(rows.count - 1); return []
        default: break
        }
    }
    // Everything else asks the key, one command at a time.
    guard state.piv.busy == nil, let entry = state.selectedKey else { return [] }
    if key == .char("r") { return pivLoad(&state) }
    guard state.piv.phase == .ready, let info = state.piv.info else { return [] }
    let row = state.piv.selected
    switch key {
    case .enter, .right:
        guard let row else { return [] }
        if row.isEmpty { return pivNote(&state, UIText("piv.slotEmpty", ["slot": row.slot.description])) }
        state.piv.showDetails = true
        state.piv.detailsScroll = 0
    case .char("v"):
        guard let row else { return [] }
        let slot = row.slot.description
        if row.certificate == nil { return pivNote(&state, UIText("piv.noCertificate", ["slot": slot])) }
        if info.hasMetadata && row.key == nil { return pivNote(&state, UIText("piv.noKey", ["slot": slot])) }
        if PIVSignatureCheck.needsPIN(row.slot, pinPolicy: row.key?.pinPolicy) {
            if info.pinRetries == 0 { return pivNote(&state, UIText("piv.alert.pinBlocked")) }
            state.piv.dialog = pivDialog(.verify(row.slot))
            return []
        }
        state.piv.busy = PIVBusy(.verify)
        return [.piv(.verify(entry.descriptor, slot: row.slot, pin: nil))]
    case .char("p"):
        if info.pinRetries == 0 { return pivNote(&state, UIText("piv.alert.pinBlocked")) }
        state.piv.dialog = pivDialog(.changePIN)
    case .char("u"):
        if info.pukRetries == 0 { return pivNote(&state, UIText("piv.alert.pukBlocked")) }
        state.piv.dialog = pivDialog(.changePUK)
    case .char("b"):
        if info.pukRetries == 0 { return pivNote(&state, UIText("piv.alert.bothBlocked")) }
        state.piv.dialog = pivDialog(.unblockPIN)
    case .char("e"):
        guard let row else { return [] }
        if row.certificate == nil {
            return pivNote(&state, UIText("piv.noCertificate", ["slot": row.slot.description]))
        }
        state.piv.dialog = pivDialog(.export(row.slot))
    case .char("g"):
        guard let row else { return [] }
        if let note = pivSigningKeyNote(row, info) { return pivNote(&state, note) }
        let pin = PIVSignatureCheck.needsPIN(row.slot, pinPolicy: row.key?.pinPolicy)
        if pin && info.pinRetries == 0 { return pivNote(&state, UIText("piv.alert.pinBlocked")) }
        let managementKey: PIVManagementKeyField =
            switch info.managementKeyDefault {
            case true?: .notAsked
            case false?: .required
            case nil: .optional
            }
        state.piv.dialog = pivDialog(.generateCertificate(row.slot, managementKey: managementKey, pin: pin))
    case .char("s"):
        guard let row else { return [] }
        if let note = pivPublicKeyNote(row, info) { return pivNote(&state, note) }
        if row.algorithm == .x25519 {
            return pivNote(
                &state, UIText("piv.sshKey.unsupported", ["slot": row.slot.description, "algorithm": "X25519"]))
        }
        state.piv.busy = PIVBusy(.sshKey)
        return [.piv(.sshKey(entry.descriptor, slot: row.slot))]
    default:
        break
    }
    return []
}

/// Why the slot's public key cannot be had, or nil: firmware 5.3 and later tell the key of each slot, older
/// firmware only a certificate's.
func pivPublicKeyNote(_ row: PIVSlotInfo, _ info: PIVInfo) -> UIText? {
    let slot = row.slot.description
    if info.hasMetadata {
        guard row.key == nil else { return nil }
        return UIText(row.certificate == nil ? "piv.slotNoKey" : "piv.noKey", ["slot": slot])
    }
    return row.certificate == nil ? UIText("piv.keyUnknown", ["slot": slot]) : nil
}

/// Why the slot's key cannot sign a certificate for itself, or nil.
func pivSigningKeyNote(_ row: PIVSlotInfo, _ info: PIVInfo) -> UIText? {
    if let note = pivPublicKeyNote(row, info) { return note }
    // X25519 agrees on keys; it has no signature.
    if row.algorithm == .x25519 { return UIText("piv.generate.cannotSign", ["slot": row.slot.description]) }
    return nil
}

/// The subject the certificate dialog starts with: the slot, as the SSH line's comment names it.
func pivDefaultSubject(_ slot: PIV.Slot) -> String { "CN=PIV slot \(slot)" }

/// Validity in days the certificate dialog starts with, and the most it takes (as `piv certificates generate`).
let pivDefaultValidDays = 365
let pivMaxValidDays = 36_500

func pivNote(_ state: inout AppState, _ text: UIText) -> [Command] {
    state.status = StatusMessage(text, kind: .warning, expires: state.now + statusSeconds)
    return []
}

// MARK: - Dialogs

/// The PIN or PUK a field holds, for the texts that name it.
private func secretName(_ kind: PIVDialogKind, _ field: PIVField) -> String {
    switch (kind, field) {
    case (.changePUK, _), (.unblockPIN, .puk): return "PUK"
    default: return "PIN"
    }
}

func pivDialog(_ kind: PIVDialogKind) -> PIVDialog {
    func secret(_ field: PIVField, _ label: String) -> Form.Field {
        // Eight bytes at most; a few more let the rule be seen as it is broken.
        Form.Field(field, UIText(label), TextField(secret: true, maxLength: PIV.pinLength + 4))
    }
    let form: Form
    switch kind {
    case .verify(let slot):
        form = Form(
            title: UIText("piv.verify.title", ["slot": slot.description]), fields: [secret(.pin, "piv.field.pin")],
            note: UIText("piv.verify.note", ["slot": slot.description]))
    case .changePIN:
        form = Form(
            title: UIText("piv.changePIN.title"),
            fields: [
                secret(.current, "piv.field.currentPIN"), secret(.new, "piv.field.newPIN"),
                secret(.confirm, "piv.field.confirmPIN"),
            ],
            note: UIText("piv.changePIN.note"))
    case .changePUK:
        form = Form(
            title: UIText("piv.changePUK.title"),
            fields: [
                secret(.current, "piv.field.currentPUK"), secret(.new, "piv.field.newPUK"),
                secret(.confirm, "piv.field.confirmPUK"),
            ],
            note: UIText("piv.changePUK.note"))
    case .unblockPIN:
        form = Form(
            title: UIText("piv.unblock.title"),
            fields: [
                secret(.puk, "piv.field.puk"), secret(.new, "piv.field.newPIN"),
                secret(.confirm, "piv.field.confirmPIN"),
            ],
            note: UIText("piv.unblock.note"))
    case .export(let slot):
        let name = "piv-\(slot.description.lowercased())-certificate.pem"
        form = Form(
            title: UIText("piv.export.title", ["slot": slot.description]),
            fields: [Form.Field(PIVField.path, UIText("piv.field.path"), TextField(name, maxLength: 4096))],
            note: UIText("piv.export.note"))
    case .generateCertificate(let slot, let managementKey, let pin):
        var fields = [
            Form.Field(
                PIVField.subject, UIText("piv.field.subject"), TextField(pivDefaultSubject(slot), maxLength: 1024)),
            Form.Field(
                PIVField.days, UIText("piv.field.validDays"), TextField(String(pivDefaultValidDays), maxLength: 5)),
        ]
        switch managementKey {
        case .notAsked: break
        case .required:
            fields.append(
                Form.Field(
                    PIVField.managementKey, UIText("piv.field.managementKey"), TextField(secret: true, maxLength: 96)))
        case .optional:
            fields.append(
                Form.Field(
                    PIVField.managementKey, UIText("piv.field.managementKeyOptional"),
                    TextField(secret: true, maxLength: 96)))
        }
        if pin { fields.append(secret(.pin, "piv.field.pin")) }
        form = Form(
            title: UIText("piv.generate.title", ["slot": slot.description]), fields: fields,
            note: UIText("piv.generate.note", ["slot": slot.description]))
    }
    return PIVDialog(kind: kind, form: form)
}

/// The certificate dialog again with the management key and the PIN asked as `kind` says, keeping the subject
/// and the validity typed (the secrets are typed anew).
func pivRebuiltDialog(_ dialog: PIVDialog, _ kind: PIVDialogKind) -> PIVDialog {
    var rebuilt = pivDialog(kind)
    rebuilt.form[PIVField.subject] = dialog.form[PIVField.subject]
    rebuilt.form[PIVField.days] = dialog.form[PIVField.days]
    return rebuilt
}

/// What is wrong with the dialog as typed so far; on submit, empty fields count too. PINs and PUKs are bytes
/// to the key: their UTF-8 length is what counts. `info` tells the management key's algorithm (its length).
func pivDialogProblem(_ dialog: PIVDialog, _ info: PIVInfo?, submitting: Bool = false) -> UIText? {
    let form = dialog.form
    func length(_ f: PIVField) -> Int { form[f].utf8.count }
    func tooLong(_ f: PIVField) -> UIText? {
        length(f) > PIV.pinLength
            ? UIText("piv.rule.long", ["secret": secretName(dialog.kind, f), "count": String(length(f))]) : nil
    }
    switch dialog.kind {
    case .verify:
        if let problem = tooLong(.pin) { return problem }
        if submitting && form[PIVField.pin].isEmpty { return UIText("piv.rule.empty", ["secret": "PIN"]) }
    case .changePIN, .changePUK, .unblockPIN:
        let first: PIVField = dialog.kind == .unblockPIN ? .puk : .current
        let name = secretName(dialog.kind, .new)
        if let problem = tooLong(first) { return problem }
        if submitting && form[first].isEmpty {
            return UIText("piv.rule.empty", ["secret": secretName(dialog.kind, first)])
        }
        let new = form[PIVField.new], confirm = form[PIVField.confirm]
        if let problem = tooLong(.new) { return problem }
        if (submitting || form.focusIsPast(PIVField.new)) && length(.new) < 6 {
            return UIText("piv.rule.short", ["secret": name, "count": String(length(.new))])
        }
        // The confirmation is compared as it is typed: a wrong character shows at once.
        if (!confirm.isEmpty && !new.hasPrefix(confirm)) || (submitting && new != confirm) {
            return UIText("piv.rule.mismatch", ["secret": name])
        }
        if submitting, dialog.kind != .unblockPIN, form[PIVField.current] == new {
            return UIText("piv.rule.same", ["secret": name])
        }
    case .export:
        if form[PIVField.path].trimmingSpaces.isEmpty { return UIText("piv.export.pathEmpty") }
    case .generateCertificate(_, let managementKey, _):
        let subject = form[PIVField.subject]
        if submitting || form.focusIsPast(PIVField.subject) {
            if subject.trimmingSpaces.isEmpty { return UIText("piv.rule.subjectEmpty") }
            if (try? PIVOperations.subject(subject)) == nil {
                return ErrorExplanation(PIVOperationError.badSubject(subject)).text
            }
        }
        // Whole days from 1 to the most: a wrong character or number shows at once, an empty field once passed.
        let days = form[PIVField.days]
        let inRange = Int(days).map { (1...pivMaxValidDays).contains($0) } ?? false
        if !days.allSatisfy({ $0.isASCII && $0.isNumber })
            || (!inRange && (!days.isEmpty || submitting || form.focusIsPast(PIVField.days)))
        {
            return UIText("piv.rule.days", ["max": String(pivMaxValidDays)])
        }
        if form.has(PIVField.managementKey),
            let problem = pivManagementKeyProblem(
                form[PIVField.managementKey], managementKey, algorithm: info?.managementKey,
                final: submitting || form.focusIsPast(PIVField.managementKey))
        {
            return problem
        }
        if let problem = tooLong(.pin) { return problem }
        if submitting && form.has(PIVField.pin) && form[PIVField.pin].isEmpty {
            return UIText("piv.rule.empty", ["secret": "PIN"])
        }
    }
    return nil
}

/// What is wrong with a management key typed in hex (separators allowed, as `Hex.decode` takes them), or nil.
/// Its characters are never repeated: it is a secret. Once `final`, its length counts, and an empty one where
/// the key said it is not the default.
func pivManagementKeyProblem(
    _ text: String, _ field: PIVManagementKeyField, algorithm: PIV.Algorithm?, final: Bool
) -> UIText? {
    let digits = text.filter { $0 != " " && $0 != ":" }
    if !digits.allSatisfy(\.isHexDigit) { return UIText("piv.rule.managementKeyHex") }
    guard final else { return nil }
    if digits.isEmpty { return field == .required ? UIText("piv.rule.managementKeyEmpty") : nil }
    // Firmware that does not tell the algorithm (before 5.3) has 3DES management keys only.
    let kind = algorithm ?? .tripleDES
    let expected = (kind.keyLength ?? 24) * 2
    guard digits.count == expected else {
        return UIText(
            "piv.rule.managementKeyLength",
            ["algorithm": kind.description, "expected": String(expected), "count": String(digits.count)])
    }
    return nil
}

func pivDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    let info = state.piv.info
    // A dialog closed while its command runs cancels nothing: the answer still comes, in the status line.
    return tabDialogKey(
        &state, key, \.piv.dialog, problem: { pivDialogProblem($0, info, submitting: $1) }, submit: pivDialogSubmit)
}

/// The command of a PIV dialog submitted for key `d`.
private func pivDialogSubmit(_ state: inout AppState, _ dialog: inout PIVDialog, _ d: KeyDescriptor) -> DialogSubmit {
    let form = dialog.form
    let command: PIVTabCommand
    let operation: PIVOperation
    switch dialog.kind {
    case .verify(let slot):
        (command, operation) = (.verify(d, slot: slot, pin: form[PIVField.pin]), .verify)
    case .changePIN:
        (command, operation) = (.changePIN(d, current: form[PIVField.current], new: form[PIVField.new]), .changePIN)
    case .changePUK:
        (command, operation) = (.changePUK(d, current: form[PIVField.current], new: form[PIVField.new]), .changePUK)
    case .unblockPIN:
        (command, operation) = (.unblockPIN(d, puk: form[PIVField.puk], new: form[PIVField.new]), .unblockPIN)
    case .export(let slot):
        let path = form[PIVField.path].trimmingSpaces
        (command, operation) = (.export(d, slot: slot, path: path, overwrite: form.confirmed), .export)
    case .generateCertificate(let slot, _, _):
        // A certificate the slot holds is replaced only once the user said so.
        let row = state.piv.info?.rows.first { $0.slot == slot }
        if !form.confirmed, let row, row.certificate != nil || row.certificateProblem != nil {
            dialog.form.ask(UIText("piv.generate.replace", ["slot": slot.description]), at: state.now)
            state.piv.dialog = dialog
            return .done([])
        }
        let managementKey = form[PIVField.managementKey].trimmingSpaces
        (command, operation) = (
            .generateCertificate(
                d, slot: slot, subject: form[PIVField.subject].trimmingSpaces,
                days: Int(form[PIVField.days]) ?? pivDefaultValidDays,
                pin: form.has(PIVField.pin) ? form[PIVField.pin] : nil,
                managementKey: managementKey.isEmpty ? nil : managementKey),
            .generateCertificate
        )
    }
    // The PIN leaves the state with the command.
    state.piv.busy = PIVBusy(operation)
    return .send(.piv(command))
}

/// Pasted text on the PIV tab goes only into a dialog's field.
func pivTabPaste(_ state: inout AppState, _ text: String) -> Bool {
    let info = state.piv.info
    return tabDialogPaste(&state, text, \.piv.dialog) { pivDialogProblem($0, info) }
}

/// The tab's keys, for the help overlay.
func pivTabHelp(_ state: AppState) -> [HelpEntry] {
    [
        HelpEntry("Up/Down j/k", UIText("piv.help.move")),
        HelpEntry("Enter / Esc", UIText("piv.help.details")),
        HelpEntry("v", UIText("piv.help.verify")),
        HelpEntry("p", UIText("piv.help.pin")),
        HelpEntry("u", UIText("piv.help.puk")),
        HelpEntry("b", UIText("piv.help.unblock")),
        HelpEntry("e", UIText("piv.help.export")),
        HelpEntry("g", UIText("piv.help.certificate")),
        HelpEntry("s", UIText("piv.help.sshKey")),
        HelpEntry("r", UIText("piv.help.reload")),
    ]
}
