import KeyKit

// The FIDO2 tab's credentials beside those of the other keys plugged in (the all-keys binding, `A`, in the credentials
// view): each other key's FIDO2 PIN is asked for once, in a dialog that names the key, its discoverable credentials are
// read with it, and each relying party shows the keys that hold a credential for it ("daily · backup") or lack one
// ("not on backup"). The PIN goes to the key with its command and is not kept (nor is a PIN token of another key):
// leaving the view, another key chosen or the key pulled out ends what was read of it.

/// Another key beside the selected one in the credentials view.
public struct FIDOOtherKey: Sendable, Hashable {
    public enum Phase: Sendable, Hashable {
        /// Its FIDO2 information is being read.
        case loading
        /// Its PIN is to be asked for (the dialog opens when no other dialog is open).
        case needsPIN
        /// The PIN was sent: its credentials are being read.
        case reading
        /// Its discoverable credentials.
        case read([FIDOCredential])
        /// Left out, and why: Esc in its PIN dialog, no PIN, no credential management, or the key's answer.
        case skipped(UIText)
    }

    public var phase: Phase
    /// Its FIDO2 information, once read (the PIN dialog's minimum, the retries).
    public var info: FIDOInfo?

    public init(phase: Phase = .loading, info: FIDOInfo? = nil) {
        self.phase = phase
        self.info = info
    }

    /// Its credentials, once read.
    public var credentials: [FIDOCredential]? {
        if case .read(let list) = phase { return list }
        return nil
    }
}

/// A relying party in the credentials view while other keys are compared: the keys that hold a credential for it,
/// and the keys read that hold none.
public struct FIDORelyingPartyRow: Sendable, Hashable {
    public var rpID: String
    public var rpName: String?
    /// The keys that hold a credential for it, in the key switcher's order.
    public var holders: [String]
    /// The keys whose credentials are known and that hold none for it.
    public var missing: [String]
}

extension AppState {
    /// The keys plugged in that carry FIDO2, in the key switcher's order.
    public var fidoKeys: [KeyEntry] {
        keys.filter { key in
            guard key.descriptor.has(.fido) else { return false }
            if let apps = key.info?.applications, !apps.isEmpty, !apps.contains("FIDO2") { return false }
            return true
        }
    }

    /// The keys with FIDO2 besides the selected one: what the all-keys binding reads in the credentials view.
    public var otherFIDOKeys: [KeyEntry] { fidoKeys.filter { $0.id != selectedKeyID } }

    /// The keys whose credentials the view compares: the selected key (its list), then the other keys read, in the
    /// key switcher's order. Empty while no other key was read.
    public var fidoComparedKeys: [String] {
        let read = keys.map(\.id).filter { fido.others[$0]?.credentials != nil }
        guard !read.isEmpty, let selected = selectedKeyID, fido.credentials != nil else { return [] }
        return keys.map(\.id).filter { $0 == selected || read.contains($0) }
    }

    /// The credentials of a key the view compares (the selected key's list, or another key's as read).
    public func fidoCredentials(of keyID: String) -> [FIDOCredential]? {
        keyID == selectedKeyID ? fido.credentials : fido.others[keyID]?.credentials
    }

    /// Every relying party of the keys compared, once, by ID: the keys that hold a credential for it and those that
    /// hold none. Only the selected key's, without marks, while no other key was read.
    public var fidoRelyingParties: [FIDORelyingPartyRow] {
        let compared = fidoComparedKeys
        let keyIDs = compared.isEmpty ? [selectedKeyID].compactMap { $0 } : compared
        return FIDOAcrossKeys.relyingParties(keyIDs.map { fidoCredentials(of: $0) ?? [] }).map { p in
            FIDORelyingPartyRow(
                rpID: p.rpID, rpName: p.rpName, holders: compared.isEmpty ? [] : p.holders.map { keyIDs[$0] },
                missing: compared.isEmpty ? [] : p.missing.map { keyIDs[$0] })
        }
    }
}

// MARK: - Starting and ending

/// The all-keys binding in the credentials view: the other keys' credentials are read (each asks for its PIN), or,
/// while they are shown, the view goes back to the selected key's alone.
func fidoToggleOtherKeys(_ state: inout AppState) -> [Command] {
    if !state.fido.others.isEmpty {
        fidoEndComparison(&state)
        return note(&state, "fido.others.off", kind: .info)
    }
    let others = state.otherFIDOKeys
    guard !others.isEmpty else { return note(&state, "fido.others.none") }
    for key in others { state.fido.others[key.id] = FIDOOtherKey() }
    state.status = StatusMessage(
        UIText("fido.others.on", ["keys": others.map(state.keyLabel).joined(separator: ", ")]), kind: .info,
        expires: state.now + statusSeconds)
    return [.fido(.loadOthers(others.map(\.descriptor)))]
}

/// The other keys leave the view: what was read of them goes, and a PIN dialog of one of them is wiped and closed.
func fidoEndComparison(_ state: inout AppState) {
    if case .otherPIN? = state.fido.dialog?.kind {
        state.fido.dialog?.form.wipeSecrets()
        state.fido.dialog = nil
    }
    state.fido.others = [:]
}

/// A key left: its marks go (and its PIN dialog, if open).
func fidoOtherKeyLeft(_ state: inout AppState, keyID: String) {
    guard state.fido.others[keyID] != nil else { return }
    state.fido.others[keyID] = nil
    if case .otherPIN(keyID)? = state.fido.dialog?.kind {
        state.fido.dialog?.form.wipeSecrets()
        state.fido.dialog = nil
    }
}

/// A key probed while the view compares: a key with FIDO2 not in the view yet joins it.
func fidoOtherKeyProbed(_ state: inout AppState, keyID: String) -> [Command] {
    guard !state.fido.others.isEmpty, state.fido.showCredentials, state.fido.others[keyID] == nil,
        let key = state.otherFIDOKeys.first(where: { $0.id == keyID })
    else { return [] }
    state.fido.others[keyID] = FIDOOtherKey()
    return [.fido(.loadOthers([key.descriptor]))]
}

// MARK: - The other keys' answers

/// An answer of another key in the view (nil: the message is not one).
func fidoOtherKeyAnswer(_ state: inout AppState, _ msg: FIDOTabMsg) -> [Command]? {
    switch msg {
    case .otherInfo(let id, let info):
        guard state.fido.others[id]?.phase == .loading else { return [] }
        state.fido.others[id]?.info = info
        state.fido.others[id]?.phase = fidoOtherKeyReadiness(info)
    case .otherCredentials(let id, let credentials):
        guard state.fido.others[id]?.phase == .reading else { return [] }
        state.fido.others[id]?.phase = .read(credentials)
        if case .otherPIN(id)? = state.fido.dialog?.kind {
            state.fido.dialog?.form.wipeSecrets()
            state.fido.dialog = nil
        }
        state.status = StatusMessage(
            UIText("fido.others.read", ["key": state.keyLabel(id: id), "count": String(credentials.count)]),
            kind: .success, expires: state.now + statusSeconds)
    case .otherFailed(let id, let failure):
        guard state.fido.others[id] != nil else { return [] }
        fidoOtherKeyFailed(&state, id, failure)
    default:
        return nil
    }
    return []
}

/// Whether another key's credentials can be read, from its information: with its PIN, or not at all (why).
func fidoOtherKeyReadiness(_ info: FIDOInfo) -> FIDOOtherKey.Phase {
    if !info.credentialManagement { return .skipped(UIText("fido.others.noCredentialManagement")) }
    switch info.pinSet {
    case nil: return .skipped(UIText("fido.others.noPINSupport"))
    case false?: return .skipped(UIText("fido.others.noPIN"))
    case true?:
        if info.retries == 0 { return .skipped(UIText("fido.others.blocked")) }
        if info.powerCycleNeeded { return .skipped(UIText("fido.others.reinsert")) }
        return .needsPIN
    }
}

/// Another key refused or failed: a wrong PIN is said in its dialog, which asks again; anything else leaves the key
/// out, saying why.
func fidoOtherKeyFailed(_ state: inout AppState, _ id: String, _ failure: FIDOFailure) {
    let asking: Bool
    if case .otherPIN(id)? = state.fido.dialog?.kind { asking = true } else { asking = false }
    if failure.reason == .keyGone {
        fidoOtherKeyLeft(&state, keyID: id)
        return
    }
    if case .wrongPIN(let retries) = failure.reason, asking, retries != 0, var dialog = state.fido.dialog {
        if let retries { state.fido.others[id]?.info?.retries = retries }
        state.fido.others[id]?.phase = .needsPIN
        dialog.form.busy = false
        dialog.form.problem = fidoFailureText(failure.reason, operation: .verifyPIN)
        dialog.form.wipeSecrets()
        dialog.form.focus = 0
        state.fido.dialog = dialog
        return
    }
    let why = fidoFailureText(failure.reason, operation: failure.operation == .load ? .load : .verifyPIN)
    state.fido.others[id]?.phase = .skipped(why)
    if asking {
        state.fido.dialog?.form.wipeSecrets()
        state.fido.dialog = nil
    }
    state.status = StatusMessage(
        UIText("fido.others.failedOn", ["key": state.keyLabel(id: id)], nested: ["why": why]), kind: .error,
        expires: state.now + 2 * statusSeconds)
}

/// The next other key that waits for its PIN is asked for it (in the key switcher's order), when the view shows the
/// credentials and nothing else holds the keyboard or the key.
func fidoAskNextOtherPIN(_ state: inout AppState) {
    guard state.fido.showCredentials, state.fido.dialog == nil, state.fido.busy == nil, state.fido.reset == nil
    else { return }
    for key in state.keys {
        guard let other = state.fido.others[key.id], other.phase == .needsPIN else { continue }
        var dialog = pinDialog(.otherPIN(keyID: key.id), other.info)
        dialog.form.title = UIText("fido.others.pinTitle", ["key": state.displayName(of: key)])
        dialog.form.note = UIText(
            "fido.others.pinNote",
            ["key": state.keyLabel(key), "retries": other.info?.retries.map(String.init) ?? "?"])
        state.fido.dialog = dialog
        return
    }
}

// MARK: - The PIN dialog of another key

/// Enter in another key's PIN dialog: the PIN goes to that key with the command (the form keeps nothing).
func fidoSubmitOtherPIN(_ state: inout AppState, _ dialog: FIDODialog, keyID: String) -> [Command] {
    guard let key = state.keys.first(where: { $0.id == keyID }), state.fido.others[keyID] != nil else {
        var dialog = dialog
        dialog.form.wipeSecrets()
        state.fido.dialog = nil
        return []
    }
    let pin = dialog.form[PINField.pin]
    state.fido.others[keyID]?.phase = .reading
    var dialog = dialog
    dialog.form.wipeSecrets()
    dialog.form.busy = true
    dialog.form.problem = nil
    state.fido.dialog = dialog
    return [.fido(.readOther(key.descriptor, pin: pin))]
}

/// Esc in another key's PIN dialog: that key is left out (an answer still on its way is not waited for), and the
/// next key is asked.
func fidoSkipOtherKey(_ state: inout AppState, keyID: String) {
    state.fido.dialog?.form.wipeSecrets()
    state.fido.dialog = nil
    if state.fido.others[keyID] != nil { state.fido.others[keyID]?.phase = .skipped(UIText("fido.others.skipped")) }
}
