import KeyKit

// MARK: - PIN rules as typed

/// The first rule `pin` breaks (`PINRules`), as the dialog says it.
public func fidoPINProblem(_ pin: String, minimum: Int) -> UIText? {
    PINRules.problem(pin, minimum: minimum).flatMap(pinRuleText)
}

/// The text for a broken PIN rule (the one explanation the command line gives too); nil for other errors.
func pinRuleText(_ error: FIDOSessionError) -> UIText? {
    switch error {
    case .pinHasNUL, .pinTooLong, .pinTooShort: return ErrorExplanation(error).text
    default: return nil
    }
}

// MARK: - Update

func fidoTabUpdate(_ state: inout AppState, _ msg: FIDOTabMsg) -> [Command] {
    let commands = fidoOtherKeyAnswer(&state, msg) ?? selectedKeyAnswer(&state, msg)
    // Whatever held the keyboard or the key may have let go: another key waiting for its PIN asks now.
    fidoAskNextOtherPIN(&state)
    return commands
}

/// An answer of the selected key (or of one that was selected when it was asked).
private func selectedKeyAnswer(_ state: inout AppState, _ msg: FIDOTabMsg) -> [Command] {
    func current(_ keyID: String) -> Bool { state.fido.keyID == keyID && state.selectedKeyID == keyID }
    switch msg {
    case .loaded(let id, let info):
        guard current(id) else { return [] }
        keyTabLoaded(&state, \.fido)
        setInfo(&state, info)
        return []
    case .touch(let id, let waiting):
        if current(id) { keyTabTouch(&state, \.fido, waiting: waiting) }
        return []
    case .pinSet(let id, let info, let changed):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.fido)
        state.fido.hasToken = false
        setInfo(&state, info)
        state.status = StatusMessage(
            UIText(changed ? "fido.pinChanged" : "fido.pinSetDone"), kind: .success,
            expires: state.now + statusSeconds)
        return []
    case .verified(let id, let info, let credentials):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.fido)
        state.fido.hasToken = true
        setInfo(&state, info)
        if let credentials {
            showList(&state, credentials)
        } else {
            state.status = StatusMessage(
                UIText("fido.pinCorrect", ["retries": info.retries.map(String.init) ?? "?"]),
                kind: .success, expires: state.now + statusSeconds)
        }
        return []
    case .fingerprints(let id, let fingerprints):
        guard current(id) else { return [] }
        state.fido.fingerprints = fingerprints
        return []
    case .credentials(let id, let credentials):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.fido)
        showList(&state, credentials)
        return []
    case .deleted(let id, let credential, let remaining, let info):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.fido)
        setInfo(&state, info)
        state.fido.showCredentialDetail = false
        showList(&state, remaining)
        state.status = StatusMessage(
            UIText("fido.deleted", ["user": credential.who ?? "?", "rp": credential.rpID]),
            kind: .success, expires: state.now + statusSeconds)
        return []
    case .updated(let id, let credential, let credentials):
        guard current(id) else { return [] }
        keyTabFinish(&state, \.fido)
        showList(&state, credentials)
        state.status = StatusMessage(
            UIText("fido.updated", ["user": credential.who ?? "?", "rp": credential.rpID]),
            kind: .success, expires: state.now + statusSeconds)
        return []
    case .resetDone(let id, let info):
        guard state.selectedKeyID == id else { return [] }
        state.fido = FIDOTabState()
        state.fido.keyID = id
        state.fido.phase = .ready
        state.fido.info = info
        state.status = StatusMessage(UIText("fido.resetDone"), kind: .success, expires: state.now + 2 * statusSeconds)
        return []
    case .failed(let id, let failure):
        if failure.operation == .reset, case .sending(let target) = state.fido.reset, target == id {
            return resetFailed(&state, failure)
        }
        guard current(id) else {
            // The key left before its failure came in: a PIN set or change it cut short still says which PIN
            // the key has now (the removal alone would leave the user guessing).
            if failure.reason == .keyGone, failure.operation == .setPIN || failure.operation == .changePIN {
                state.status = StatusMessage(
                    fidoFailureText(.keyGone, operation: failure.operation), kind: .error,
                    subject: .operationCutShort)
            }
            return []
        }
        return failed(&state, failure)
    case .otherInfo, .otherCredentials, .otherFailed:
        return []
    }
}

func setInfo(_ state: inout AppState, _ info: FIDOInfo) {
    state.fido.info = info
    if info.pinSet == true && info.powerCycleNeeded {
        state.fido.alert = UIText("fido.alert.reinsert")
    } else if info.pinSet == true && info.retries == 0 {
        state.fido.alert = UIText("fido.alert.blocked")
    } else if info.forcePINChange {
        state.fido.alert = UIText("fido.alert.forceChange")
    } else {
        state.fido.alert = nil
    }
}

func showList(_ state: inout AppState, _ credentials: [FIDOCredential]) {
    let previous = state.fido.selected?.id
    state.fido.credentials = credentials
    state.fido.showCredentials = true
    let list = state.fido.sortedCredentials
    state.fido.selectedCredential = min(
        list.firstIndex { $0.id == previous } ?? state.fido.selectedCredential,
        max(0, list.count - 1))
}

/// What the user reads about a failure.
func fidoFailureText(_ reason: FIDOFailureReason, operation: FIDOOperation) -> UIText {
    switch reason {
    case .keyGone:
        // A PIN set or change cut short: the key holds one of two PINs, and the user must know which to try.
        if operation == .changePIN { return UIText("fido.keyGone.change") }
        if operation == .setPIN { return UIText("fido.keyGone.set") }
        return UIText("status.keyGoneMidOperation")
    case .notAvailable: return UIText("fido.notAvailable")
    case .u2fOnly: return UIText("fido.u2fOnly")
    case .wrongPIN(let r?):
        return UIText(operation == .changePIN ? "fido.wrongCurrentPIN" : "fido.wrongPIN", ["retries": String(r)])
    case .wrongPIN(nil): return UIText("fido.wrongPINUnknown")
    case .pinBlocked: return UIText("fido.alert.blocked")
    case .pinAuthBlocked: return UIText("fido.alert.reinsert")
    case .policyViolation: return UIText("fido.policyViolation")
    case .pinRule(let text): return text
    case .tokenInvalid: return UIText("fido.tokenInvalid")
    case .notAllowed: return UIText("fido.notAllowed")
    case .cancelled: return UIText(operation == .reset ? "fido.resetCancelled" : "fido.cancelled")
    case .timeout: return UIText(operation == .reset ? "fido.resetTimeout" : "fido.touchTimeout")
    case .noPIN: return UIText("fido.noPIN")
    case .noPINSupport: return UIText("fido.noPINSupport")
    case .other(let text): return text
    }
}

func failed(_ state: inout AppState, _ failure: FIDOFailure) -> [Command] {
    state.fido.busy = nil
    let text = fidoFailureText(failure.reason, operation: failure.operation)
    switch failure.reason {
    case .keyGone:
        return keyTabKeyGone(&state, \.fido, text)
    case .notAvailable, .u2fOnly:
        state.fido.dialog = nil
        state.fido.phase = .unavailable(text)
        return []
    case .wrongPIN(let retries):
        if let retries, var info = state.fido.info {
            info.retries = retries
            setInfo(&state, info)
        }
    case .pinBlocked:
        if var info = state.fido.info { info.retries = 0; setInfo(&state, info) }
        state.fido.alert = text
    case .pinAuthBlocked:
        if var info = state.fido.info { info.powerCycleNeeded = true; setInfo(&state, info) }
        state.fido.alert = text
    case .tokenInvalid:
        state.fido.hasToken = false
        if failure.operation == .list || failure.operation == .delete || failure.operation == .update {
            // The token is gone (expired, or the key was re-inserted): ask for the PIN again.
            var dialog = pinDialog(.verifyPIN(thenList: true), state.fido.info)
            dialog.form.problem = text
            state.fido.dialog = dialog
            return []
        }
    default:
        break
    }
    if failure.operation == .load {
        state.fido.phase = .unavailable(text)
        return []
    }
    if var dialog = state.fido.dialog, !dialog.form.isConfirmation {
        // Stay in the PIN dialog: say what the key answered, empty the fields, and put the cursor where the
        // answer points (the current PIN when it was wrong, the new one when the key refused it).
        dialog.form.busy = false
        dialog.form.problem = text
        dialog.form.wipeSecrets()
        switch failure.reason {
        case .policyViolation, .pinRule: dialog.form.focus = dialog.kind == .changePIN ? 1 : 0
        default: dialog.form.focus = 0
        }
        switch failure.reason {
        case .pinBlocked, .pinAuthBlocked:
            state.fido.dialog = nil
            state.status = StatusMessage(text, kind: .error)
        default:
            state.fido.dialog = dialog
        }
        return []
    }
    state.fido.dialog = nil
    state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
    return []
}

/// The reset's answer was a failure: too late after insertion means "remove and re-insert" (not possible
/// with the virtual demo key); anything else ends the reset.
func resetFailed(_ state: inout AppState, _ failure: FIDOFailure) -> [Command] {
    state.fido.busy = nil
    if failure.reason == .notAllowed, !state.virtualMode, let key = state.selectedKey {
        var target = key.descriptor
        target.serial = target.serial ?? key.serial
        state.fido.reset = .removeKey(target)
        return []
    }
    state.fido.reset = nil
    let text =
        failure.reason == .notAllowed
        ? UIText("fido.notAllowedVirtual")
        : fidoFailureText(failure.reason, operation: .reset)
    state.status = StatusMessage(
        text, kind: failure.reason == .cancelled ? .warning : .error,
        expires: state.now + 2 * statusSeconds)
    return []
}
