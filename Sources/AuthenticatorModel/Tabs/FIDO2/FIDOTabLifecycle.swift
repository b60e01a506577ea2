import KeyKit

// MARK: - Opening, time, keys coming and going

/// Reads the information of the selected key again.
func fidoLoad(_ state: inout AppState) -> [Command] {
    guard let entry = state.selectedKey, state.fido.busy == nil, state.fido.reset == nil else { return [] }
    state.fido.keyID = entry.id
    guard entry.descriptor.has(.fido) else {
        state.fido.info = nil
        state.fido.phase = .unavailable(
            UIText(
                "fido.notOnKey",
                [
                    "interfaces": entry.descriptor.interfaces
                        .map { $0.rawValue.uppercased() }.joined(separator: "+")
                ]))
        return []
    }
    if state.fido.info == nil { state.fido.phase = .loading }
    state.fido.busy = FIDOBusy(.load)
    return [.fido(.load(entry.descriptor))]
}

func fidoTabOpened(_ state: inout AppState) -> [Command] {
    keyTabOpened(&state, \.fido, load: fidoLoad)
}

func fidoTabTick(_ state: inout AppState) -> [Command] { [] }

/// The selected key gained or lost its FIDO interface: what the tab showed of it is read again.
func fidoTabInterfacesChanged(_ state: inout AppState) -> [Command] {
    guard state.fido.reset == nil, state.fido.busy == nil else { return [] }
    fidoEndComparison(&state)
    state.fido.dialog = nil
    state.fido.credentials = nil
    state.fido.fingerprints = nil
    state.fido.showCredentials = false
    state.fido.showCredentialDetail = false
    state.fido.info = nil
    return state.tab == .fido ? fidoLoad(&state) : []
}

func fidoTabKeyChanged(_ state: inout AppState) -> [Command] {
    let selected = state.selectedKeyID
    let stage = state.fido.reset
    switch stage {
    case .removeKey(let target)? where selected != target.id:
        // Removed (or another key took its place): wait for it to come back.
        state.fido = FIDOTabState()
        state.fido.reset = .insertKey(target)
    case .sending(let target)? where selected == target:
        // The key that was waited for is back and selected; its reset is already on its way.
        state.fido.keyID = selected
        state.fido.phase = .loading
        return []
    case .insertKey?:
        state.fido = FIDOTabState()
        state.fido.reset = stage
    default:
        guard state.fido.keyID != selected else { return [] }
        // What was read of the other keys goes with the key they were compared with.
        fidoEndComparison(&state)
        state.fido = FIDOTabState()
    }
    state.fido.keyID = selected
    state.fido.phase = selected == nil ? .noKey : .loading
    if selected != nil, state.tab == .fido, state.fido.reset == nil { return fidoLoad(&state) }
    return []
}

/// A key arrived. When a guided reset waits for this key, the reset goes first, before anything else
/// reads the key: the key allows it only within seconds of being inserted.
///
/// On USB the reset goes over the FIDO HID interface, so it waits for that interface: the window is timed
/// from the moment it is back. The key is recognised by its id or by an interface it had before (the same
/// reader or hidraw node); a key never seen is not reset.
func fidoTabKeyArrived(_ state: inout AppState, _ d: KeyDescriptor) -> [Command] {
    guard case .insertKey(let target)? = state.fido.reset, d.has(.fido),
        target.id == d.id || !target.addresses.isDisjoint(with: d.addresses)
            || (target.serial != nil && target.serial == d.serial)
    else { return [] }
    var commands: [Command] = [.fido(.reset(d))]
    state.fido.reset = .sending(keyID: d.id)
    if state.selectedKeyID != nil && state.selectedKeyID != d.id {
        commands += select(&state, d.id)
    }
    state.fido.keyID = d.id
    state.fido.busy = FIDOBusy(.reset)
    return commands
}

/// Pasted text on the FIDO2 tab goes only into a PIN field; a paste never answers a confirmation.
func fidoTabPaste(_ state: inout AppState, _ text: String) -> Bool {
    let minimum = state.fido.info?.minPINLength ?? 4
    return tabDialogPaste(&state, text, \.fido.dialog) { fidoDialogProblem($0, minimum: minimum) }
}

/// The tab's keys, for the help overlay.
func fidoTabHelp(_ state: AppState) -> [HelpEntry] {
    [
        HelpEntry("s", UIText("fido.help.set")),
        HelpEntry("c", UIText("fido.help.change")),
        HelpEntry("v", UIText("fido.help.verify")),
        HelpEntry("l", UIText("fido.help.list")),
        HelpEntry("d / Del", UIText("fido.help.delete")),
        HelpEntry("Enter", UIText("fido.help.details")),
        HelpEntry("n", UIText("fido.help.rename")),
        HelpEntry(String(state.bindings.key(for: .allKeys)), UIText("fido.help.otherKeys")),
        HelpEntry("R", UIText("fido.help.reset")),
        HelpEntry("r", UIText("fido.help.reload")),
        HelpEntry("Enter / Esc", UIText("fido.help.dialog")),
    ]
}

extension FIDOTabState {
    /// A bound on the information's scrolling; the view shows no further than its last line.
    public static let maxInfoScroll = 40
}
