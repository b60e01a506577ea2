import KeyKit

// MARK: - Opening, keys coming and going

/// Reads the PIV application of the selected key (again).
func pivLoad(_ state: inout AppState) -> [Command] {
    guard let entry = state.selectedKey, state.piv.busy == nil else { return [] }
    state.piv.keyID = entry.id
    guard entry.descriptor.has(.piv) else {
        state.piv.info = nil
        state.piv.phase = .unavailable(notOnKeyText(entry.descriptor, state.service, application: "PIV"))
        return []
    }
    if state.piv.info == nil { state.piv.phase = .loading }
    state.piv.busy = PIVBusy(.load)
    return [.piv(.load(entry.descriptor))]
}

func pivTabOpened(_ state: inout AppState) -> [Command] {
    // Read each time the tab opens: another program may have changed the slots meanwhile.
    keyTabOpened(&state, \.piv, load: pivLoad)
}

func pivTabKeyChanged(_ state: inout AppState) -> [Command] {
    keyTabKeyChanged(&state, \.piv, shown: .piv, load: pivLoad)
}

// MARK: - Answers

func pivTabUpdate(_ state: inout AppState, _ msg: PIVTabMsg) -> [Command] {
    func current(_ keyID: String) -> Bool { state.piv.keyID == keyID && state.selectedKeyID == keyID }
    switch msg {
    case .loaded(let id, let info):
        guard current(id) else { return [] }
        keyTabLoaded(&state, \.piv)
        setPIVInfo(&state, info)
        return []
    case .touch(let id, let waiting):
        if current(id) { keyTabTouch(&state, \.piv, waiting: waiting) }
        return []
    case .verified(let id, let slot, let outcome, let info):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.piv)
        setPIVInfo(&state, info)
        let (text, kind) = pivOutcomeText(outcome, slot: slot)
        state.status = StatusMessage(text, kind: kind, expires: state.now + 2 * statusSeconds)
        return []
    case .changed(let id, let operation, let info):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.piv)
        setPIVInfo(&state, info)
        let key =
            operation == .changePUK
            ? "piv.pukChanged" : operation == .unblockPIN ? "piv.pinUnblocked" : "piv.pinChanged"
        state.status = StatusMessage(UIText(key), kind: .success, expires: state.now + statusSeconds)
        return []
    case .exportExists(let id, let path):
        guard current(id) else { return [] }
        keyTabAsk(&state, \.piv, UIText("piv.export.overwrite", ["path": path])) {
            if case .export = $0 { true } else { false }
        }
        return []
    case .exported(let id, let slot, let path):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.piv)
        state.status = StatusMessage(
            UIText("piv.exported", ["slot": slot.description, "path": path]), kind: .success,
            expires: state.now + 2 * statusSeconds)
        return []
    case .certificateGenerated(let id, let slot, let subject, let info):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.piv)
        state.status = StatusMessage(
            UIText("piv.generated", ["slot": slot.description, "subject": subject]), kind: .success,
            expires: state.now + 2 * statusSeconds)
        // The certificate is stored either way; when the read after it failed, the tab reads again.
        guard let info else { return pivLoad(&state) }
        setPIVInfo(&state, info)
        return []
    case .sshKeyRead(let id, let slot, let line):
        guard current(id) else { return [] }
        if state.piv.busy?.operation == .sshKey { state.piv.busy = nil }
        // The copy's outcome, and how, comes back as `.copied` to the status line.
        return [.copy(line, status: UIText("piv.sshKeyCopied", ["slot": slot.description]))]
    case .failed(let id, let failure):
        guard current(id) else { return [] }
        return pivFailed(&state, failure)
    }
}

/// New information: the cursor stays on its slot when it can.
func setPIVInfo(_ state: inout AppState, _ info: PIVInfo) {
    let slot = state.piv.selected?.slot
    state.piv.info = info
    let rows = info.rows
    state.piv.selectedRow = rows.firstIndex { $0.slot == slot } ?? min(state.piv.selectedRow, max(0, rows.count - 1))
    if state.piv.showDetails, state.piv.selected?.isEmpty ?? true { state.piv.showDetails = false }
}

/// The certificate dialog asked anew (another secret is needed): the same subject and validity, the problem
/// said, the cursor on the first secret.
private func pivAskAgain(_ state: inout AppState, _ dialog: PIVDialog, _ kind: PIVDialogKind, _ text: UIText)
    -> [Command]
{
    var rebuilt = pivRebuiltDialog(dialog, kind)
    rebuilt.form.problem = text
    if let first = rebuilt.form.fields.firstIndex(where: { $0.input.secret }) { rebuilt.form.focus = first }
    state.piv.dialog = rebuilt
    return []
}

/// What the signature check found, as the status line says it.
func pivOutcomeText(_ outcome: PIVSignatureCheck.Outcome, slot: PIV.Slot) -> (UIText, StatusMessage.Kind) {
    let s = slot.description
    switch outcome {
    case .verified(let algorithm):
        return (UIText("piv.verify.verified", ["slot": s, "algorithm": algorithm.description]), .success)
    case .noCertificate:
        return (UIText("piv.noCertificate", ["slot": s]), .warning)
    case .unsupportedCertificateKey:
        return (UIText("piv.verify.unsupportedKey", ["slot": s]), .error)
    case .mismatch(let algorithm):
        return (UIText("piv.verify.mismatch", ["slot": s, "algorithm": algorithm.description]), .error)
    case .differentAlgorithm(let certificate, let key):
        return (
            UIText(
                "piv.verify.differentAlgorithm",
                [
                    "slot": s, "certificate": certificate.description,
                    "key": key.description,
                ]), .error
        )
    }
}

/// What the user reads about a failure.
func pivFailureText(_ reason: PIVFailureReason, operation: PIVOperation) -> UIText {
    switch reason {
    case .keyGone: return UIText("status.keyGoneMidOperation")
    case .notAvailable(let why): return why
    case .wrongPIN(let n):
        return UIText(operation == .changePIN ? "piv.wrongCurrentPIN" : "piv.wrongPIN", ["retries": String(n)])
    case .wrongPUK(let n):
        return UIText(operation == .changePUK ? "piv.wrongCurrentPUK" : "piv.wrongPUK", ["retries": String(n)])
    case .pinBlocked: return UIText("piv.alert.pinBlocked")
    case .pukBlocked: return UIText("piv.alert.pukBlocked")
    case .pinRequired: return UIText("piv.pinRequired")
    case .managementKeyRequired: return UIText("piv.managementKeyRequired")
    case .wrongManagementKey: return UIText("piv.wrongManagementKey")
    case .tooSimple(let text), .other(let text): return text
    }
}

func pivFailed(_ state: inout AppState, _ failure: PIVFailure) -> [Command] {
    state.piv.busy = nil
    let text = pivFailureText(failure.reason, operation: failure.operation)
    // The tries the key reported are the ones shown from now on.
    switch failure.reason {
    case .wrongPIN(let n): state.piv.info?.pinRetries = n
    case .wrongPUK(let n): state.piv.info?.pukRetries = n
    case .pinBlocked: state.piv.info?.pinRetries = 0
    case .pukBlocked: state.piv.info?.pukRetries = 0
    default: break
    }
    switch failure.reason {
    case .keyGone:
        return keyTabKeyGone(&state, \.piv, text)
    case .notAvailable:
        state.piv.dialog = nil
        state.piv.info = nil
        state.piv.phase = .unavailable(text)
        return []
    case .pinRequired:
        // The key wants the PIN after all: ask for it, saying why.
        if failure.operation == .verify, let slot = state.piv.selected?.slot {
            var dialog = pivDialog(.verify(slot))
            dialog.form.problem = text
            state.piv.dialog = dialog
            return []
        }
        if let dialog = state.piv.dialog, case .generateCertificate(let slot, let managementKey, false) = dialog.kind {
            return pivAskAgain(
                &state, dialog, .generateCertificate(slot, managementKey: managementKey, pin: true), text)
        }
    case .managementKeyRequired:
        // Not the default after all (changed since the tab read the key): ask for it.
        if let dialog = state.piv.dialog, case .generateCertificate(let slot, .notAsked, let pin) = dialog.kind {
            return pivAskAgain(&state, dialog, .generateCertificate(slot, managementKey: .required, pin: pin), text)
        }
    default:
        break
    }
    if failure.operation == .load {
        if state.piv.info == nil { state.piv.phase = .unavailable(text) }
        state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
        return []
    }
    if var dialog = state.piv.dialog, failure.reason != .pinBlocked, failure.reason != .pukBlocked {
        // Stay in the dialog: say what the key answered, empty the secrets, and put the cursor on the first field
        // (the secret the key refused is the first one, or the new one was too simple and all are typed again in
        // their order; in the certificate dialog, its first secret, as each is typed again).
        dialog.form.busy = false
        dialog.form.problem = text
        dialog.form.wipeSecrets()
        dialog.form.focus = 0
        if case .generateCertificate = dialog.kind,
            let first = dialog.form.fields.firstIndex(where: { $0.input.secret })
        {
            dialog.form.focus = first
        }
        state.piv.dialog = dialog
        return []
    }
    state.piv.dialog?.form.wipeSecrets()
    state.piv.dialog = nil
    state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
    return []
}
