import KeyKit

// MARK: - Opening, keys coming and going

/// Reads the OpenPGP application of the selected key (again).
func openpgpLoad(_ state: inout AppState) -> [Command] {
    guard let entry = state.selectedKey, state.openpgp.busy == nil else { return [] }
    state.openpgp.keyID = entry.id
    guard entry.descriptor.has(.openPGP) else {
        state.openpgp.info = nil
        state.openpgp.phase = .unavailable(notOnKeyText(entry.descriptor, state.service, application: "OpenPGP"))
        return []
    }
    if state.openpgp.info == nil { state.openpgp.phase = .loading }
    state.openpgp.busy = OpenPGPBusy(.load)
    return [.openpgp(.load(entry.descriptor))]
}

func openpgpTabOpened(_ state: inout AppState) -> [Command] {
    // Read each time the tab opens: GnuPG or ykman may have changed the card meanwhile.
    keyTabOpened(&state, \.openpgp, load: openpgpLoad)
}

func openpgpTabKeyChanged(_ state: inout AppState) -> [Command] {
    keyTabKeyChanged(&state, \.openpgp, shown: .openpgp, load: openpgpLoad)
}

// MARK: - Answers

func openpgpTabUpdate(_ state: inout AppState, _ msg: OpenPGPTabMsg) -> [Command] {
    func current(_ keyID: String) -> Bool { state.openpgp.keyID == keyID && state.selectedKeyID == keyID }
    switch msg {
    case .loaded(let id, let info):
        guard current(id) else { return [] }
        keyTabLoaded(&state, \.openpgp)
        state.openpgp.info = info
        return []
    case .changed(let id, let operation, let info):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.openpgp)
        state.openpgp.info = info
        state.openpgp.phase = .ready
        let text: UIText
        switch operation {
        case .changeAdminPIN: text = UIText("openpgp.adminPINChanged")
        case .setResetCode: text = UIText("openpgp.resetCodeSet")
        case .unblockPIN: text = UIText("openpgp.pinUnblocked")
        case .reset: text = UIText("openpgp.resetDone")
        case .kdf: text = UIText(info.kdfEnabled ? "openpgp.kdfOn" : "openpgp.kdfOff")
        default: text = UIText("openpgp.pinChanged")
        }
        state.status = StatusMessage(text, kind: .success, expires: state.now + 2 * statusSeconds)
        return []
    case .touchPolicySet(let id, let slot, let info):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.openpgp)
        state.openpgp.info = info
        let policy = info.keys.first { $0.slot == slot }?.touchPolicy
        state.status = StatusMessage(
            UIText("openpgp.touchSet", ["slot": openpgpSlotLabel(slot)], nested: ["policy": openpgpTouchText(policy)]),
            kind: .success, expires: state.now + 2 * statusSeconds)
        return []
    case .exportExists(let id, let path):
        guard current(id) else { return [] }
        keyTabAsk(&state, \.openpgp, UIText("openpgp.export.overwrite", ["path": path])) {
            if case .export = $0 { true } else { false }
        }
        return []
    case .exported(let id, let slot, let path):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.openpgp)
        state.status = StatusMessage(
            UIText("openpgp.exported", ["slot": openpgpSlotLabel(slot), "path": path]), kind: .success,
            expires: state.now + 2 * statusSeconds)
        return []
    case .attested(let id, let slot, let issuer, let info):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.openpgp)
        state.openpgp.info = info
        state.status = StatusMessage(
            UIText("openpgp.attested", ["slot": openpgpSlotLabel(slot), "issuer": issuer]), kind: .success,
            expires: state.now + 3 * statusSeconds)
        return []
    case .failed(let id, let failure):
        guard current(id) else { return [] }
        return openpgpFailed(&state, failure)
    }
}

/// The slot as the tab names it: "SIG", "DEC", "AUT".
public func openpgpSlotLabel(_ slot: OpenPGP.KeySlot) -> String { slot.name.uppercased() }

/// A touch policy in words ("on", "fixed: ..."); "unknown" for none.
public func openpgpTouchText(_ policy: OpenPGP.TouchPolicy?) -> UIText {
    UIText("openpgp.touch." + (policy?.name ?? "unknown"))
}

/// What the user reads about a failure.
func openpgpFailureText(_ reason: OpenPGPFailureReason) -> UIText {
    switch reason {
    case .keyGone: return UIText("status.keyGoneMidOperation")
    case .notAvailable(let why): return why
    case .wrongPassword(let p, let n): return UIText("openpgp.wrong." + p.textName, ["retries": String(n)])
    case .passwordBlocked(let p): return UIText("openpgp.blocked." + p.textName)
    case .tooSimple(let text), .other(let text): return text
    }
}

func openpgpFailed(_ state: inout AppState, _ failure: OpenPGPFailure) -> [Command] {
    state.openpgp.busy = nil
    let text = openpgpFailureText(failure.reason)
    // The tries the key reported are the ones shown from now on.
    switch failure.reason {
    case .wrongPassword(.user, let n): state.openpgp.info?.pinTries = n
    case .wrongPassword(.reset, let n): state.openpgp.info?.resetCodeTries = n
    case .wrongPassword(.admin, let n): state.openpgp.info?.adminPINTries = n
    case .passwordBlocked(.user): state.openpgp.info?.pinTries = 0
    case .passwordBlocked(.reset): state.openpgp.info?.resetCodeTries = 0
    case .passwordBlocked(.admin): state.openpgp.info?.adminPINTries = 0
    default: break
    }
    switch failure.reason {
    case .keyGone:
        return keyTabKeyGone(&state, \.openpgp, text)
    case .notAvailable:
        state.openpgp.dialog = nil
        state.openpgp.info = nil
        state.openpgp.phase = .unavailable(text)
        return []
    default:
        break
    }
    if failure.operation == .load {
        if state.openpgp.info == nil { state.openpgp.phase = .unavailable(text) }
        state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
        return []
    }
    let typeAgain: Bool =
        switch failure.reason {
        case .wrongPassword, .tooSimple: true
        default: false
        }
    if typeAgain, var dialog = state.openpgp.dialog {
        // Stay in the dialog: say what the key answered, empty the secrets, and put the cursor on the first secret
        // (the one the key checks first, and the one it refused; or the new one was too simple for a key that
        // enforces PIN complexity, and all are typed again in their order).
        dialog.form.busy = false
        dialog.form.problem = text
        dialog.form.wipeSecrets()
        dialog.form.focus = dialog.form.fields.firstIndex { $0.input.secret } ?? 0
        state.openpgp.dialog = dialog
        return []
    }
    state.openpgp.dialog?.form.wipeSecrets()
    state.openpgp.dialog = nil
    state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
    return []
}
