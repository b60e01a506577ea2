import FoundationEssentials
import Glibc
import KeyKit

// MARK: - Keys on the OATH tab

func oathKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.oath.shown != nil {
        shownAccountKey(&state, key)
        return []
    }
    if state.oath.dialog != nil { return oathDialogKey(&state, key) }
    if state.oath.filterFocused {
        switch key {
        case .escape:
            state.oath.filter = TextField(maxLength: 64)
            state.oath.filterFocused = false
        case .enter, .down:
            state.oath.filterFocused = false
        default:
            state.oath.filter.handle(key)
            state.oath.selectedID = state.oathVisibleIDs.first
        }
        return []
    }
    if state.oath.comparing { return compareKey(&state, key) }
    // Locked: Enter asks for the password (in the all-keys view, while other keys' accounts are listed, P does).
    let listing = state.oath.allKeys && !state.oathAnsweredKeys.isEmpty
    if state.oath.phase == .locked
        && ((key == .enter && !listing) || state.bindings.action(for: key) == .password)
    {
        state.oath.dialog = unlockDialog()
        return []
    }
    let visible = state.oathVisibleIDs
    let index: Int? = visible.isEmpty ? nil : visible.firstIndex { $0 == state.oath.selectedID } ?? 0
    func move(_ to: Int) {
        guard !visible.isEmpty else { return }
        state.oath.selectedID = visible[max(0, min(visible.count - 1, to))]
    }
    switch key {
    case .up, .char("k"): move((index ?? 0) - 1); return []
    case .down, .char("j"): move((index ?? -1) + 1); return []
    case .pageUp: move((index ?? 0) - 10); return []
    case .pageDown: move((index ?? 0) + 10); return []
    case .home, .char("g"): move(0); return []
    case .end, .char("G"): move(visible.count - 1); return []
    case .enter: return copyOrCalculate(&state)
    case .escape:
        if !state.oath.filter.text.isEmpty { state.oath.filter = TextField(maxLength: 64) }
        return []
    default: break
    }
    guard let action = state.bindings.action(for: key) else { return [] }
    let ready = state.oath.phase == .ready
    switch action {
    case .filter:
        state.oath.filterFocused = true
    case .copy:
        return copyOrCalculate(&state)
    case .allKeys:
        return toggleAllKeys(&state)
    case .compare:
        return openComparison(&state)
    case .add where ready:
        state.oath.dialog = addDialog(for: state)
    case .rename where ready:
        guard let a = accountOnSelectedKey(&state) else { return [] }
        if let v = state.oath.version, !OATHFeature.rename.isSupported(by: v) {
            state.status = StatusMessage(
                UIText("oath.renameUnsupported", ["version": v.description]), kind: .warning,
                expires: state.now + statusSeconds)
            return []
        }
        let current = a.issuer.map { "\($0):\(a.name)" } ?? a.name
        var form = Form(
            title: UIText("oath.rename.title", ["account": a.id]),
            fields: [Form.Field(RenameField.name, UIText("oath.rename.field"), TextField(current, maxLength: 64))])
        form.fields += alsoOnFields(state, otherHolders(state, of: a.id), label: "oath.add.alsoOn")
        form.note = UIText("oath.rename.note")
        state.oath.dialog = OATHDialog(kind: .rename(accountID: a.id), form: form)
    case .delete where ready:
        guard let a = accountOnSelectedKey(&state) else { return [] }
        let holders = otherHolders(state, of: a.id)
        var form: Form
        if holders.isEmpty {
            form = Form.confirmation(
                title: UIText("oath.delete.title", ["account": a.id]),
                note: UIText("oath.delete.note"), askedAt: state.now)
        } else {
            // Other keys hold the account too: which of them lose it as well is chosen first, then confirmed.
            form = Form(
                title: UIText("oath.delete.title", ["account": a.id]),
                fields: alsoOnFields(state, holders, label: "oath.delete.alsoFrom"))
            form.note = UIText("oath.delete.noteKeys", ["key": state.selectedKey.map(state.keyLabel) ?? ""])
        }
        state.oath.dialog = OATHDialog(kind: .delete(accountID: a.id), form: form)
    case .pin where ready:
        // Pins are the selected key's; in the all-keys view any account listed can be pinned there.
        let id = state.oath.allKeys ? state.selectedOATHRow?.id : state.oath.selectedAccount?.id
        guard let id, let deviceID = state.oath.deviceID else { return [] }
        if state.oath.pinned.contains(id) { state.oath.pinned.remove(id) } else { state.oath.pinned.insert(id) }
        state.oath.selectedID = id
        return [.savePins(deviceID: deviceID, state.oath.pinned)]
    case .password where ready:
        state.oath.dialog = passwordDialog(hasPassword: state.oath.hasPassword)
    case .refresh:
        if state.oath.allKeys { return reopenAllKeys(&state) }
        guard let key = state.selectedKey else { return [] }
        state.oath = OATHTabState.reloading(from: state.oath)
        return [.oath(.open(key.descriptor, time: state.now))]
    default:
        break
    }
    return []
}

extension OATHTabState {
    /// The tab as it is while the accounts are read again: selection, filter and pins stay.
    static func reloading(from old: OATHTabState) -> OATHTabState {
        var s = old
        s.phase = .loading
        s.refreshing = false
        s.dialog = nil
        return s
    }
}

func copyOrCalculate(_ state: inout AppState) -> [Command] {
    if state.oath.allKeys { return copyOrCalculateAcrossKeys(&state) }
    guard state.oath.phase == .ready, let a = state.oath.selectedAccount, let key = state.selectedKey else { return [] }
    state.oath.selectedID = a.id
    if !a.isHOTP, let code = a.validCode(at: state.now) {
        return [.copy(code.value, status: UIText("status.copied", ["account": a.id]))]
    }
    guard a.onRequest || a.code == nil else { return [] }
    guard !a.calculating, let i = state.oath.accounts.firstIndex(where: { $0.id == a.id }) else { return [] }
    state.oath.accounts[i].calculating = true
    state.oath.copyWhenReady = a.id
    // A touch account: the key blinks until it is touched.
    if a.requiresTouch { state.alertTouch(UIText("touch.for.oath", ["account": a.id])) }
    return [.oath(.calculate(key.descriptor, a.credential, time: state.now))]
}
