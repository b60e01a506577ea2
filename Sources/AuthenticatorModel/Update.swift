import KeyKit

/// How long a status message stays, in seconds.
let statusSeconds = 5.0

/// The commands to run when the app starts.
public func initialCommands(_ state: AppState) -> [Command] {
    [.watchKeys]
}

/// The app's whole behaviour: applies `msg` to `state` and returns the work to do. No I/O, no clock:
/// time arrives in `.tick` messages and in `state.now`.
public func update(_ state: inout AppState, _ msg: Msg) -> [Command] {
    let commands = route(&state, msg)
    for model in tabModels { model.commandsIssued(&state, commands) }
    state.endTouchAlertWhenDone()
    return commands
}

func route(_ state: inout AppState, _ msg: Msg) -> [Command] {
    switch msg {
    case .keyPress(let key):
        // A new action replaces what the status line said about the last one (unless it says something itself).
        let (status, dialog) = (state.status, state.dialogOpen)
        let commands = handleKey(&state, key)
        if state.status == status, status?.subject != .pcscdMissing,
            commands.contains(where: \.isAction) || (!dialog && state.dialogOpen)
        {
            state.status = nil
        }
        return commands
    case .paste(let text):
        return handlePaste(&state, text)
    case .configWritten(let keyID, let failure):
        return configWritten(&state, keyID: keyID, failure: failure)
    case .keyNamed(let serial, let name, let problem):
        return keyNamed(&state, serial: serial, name: name, problem: problem)
    case .notice(let text, let kind):
        state.status = StatusMessage(text, kind: kind, expires: state.now + 3 * statusSeconds)
        return []
    case .tick(let now):
        state.now = now
        if let s = state.status, let e = s.expires, e <= now { state.status = nil }
        return tabModels.flatMap { $0.tick(&state) }
    case .keyEvent(let event):
        return keyEvent(&state, event)
    case .probed(let id, let info):
        guard let i = state.keys.firstIndex(where: { $0.id == id }) else { return [] }
        state.keys[i].probed = true
        state.keys[i].info = info
        state.keys[i].serial = info?.device.serial
        state.keys[i].version = info?.device.version
        state.keys[i].model = info?.device.productName
        // The key the user chose earlier came back in another reader: follow it.
        if let preferred = state.preferredSerial, info?.device.serial == preferred, state.selectedKeyID != id,
            state.selectedKey?.serial != preferred
        {
            return select(&state, id)
        }
        // A key that does not answer (a reader stuck in pcscd still shows a card) is not the one to show while
        // another answers: go on with that one (K switches back). Not when the user chose a key by serial.
        if state.preferredSerial == nil {
            if info != nil, state.selectedKeyID != id, let shown = state.selectedKey, shown.probed, shown.info == nil {
                return select(&state, id)
            }
            if info == nil, state.selectedKeyID == id,
                let answering = state.keys.first(where: { $0.id != id && $0.info != nil })
            {
                return select(&state, answering.id)
            }
        }
        // The OTP tab, for one, reads the NDEF tag of a key it now knows is on an NFC reader.
        return tabModels.flatMap { $0.probed(&state, keyID: id) }
    default:
        // A tab's own message goes to that tab; each answers only for its own.
        for model in tabModels {
            if let commands = model.update(&state, msg) { return commands }
        }
        return []
    }
}

/// Every tab hears of the selected key changing (nil: no key), so it can drop what belonged to the old one.
func selectedKeyChanged(_ state: inout AppState) -> [Command] {
    tabModels.flatMap { $0.selectedKeyChanged(&state) }
}

/// Switches tabs; the tab that opens may start work (the OTP tab listens, the FIDO2 tab reads the key's info).
func switchTab(_ state: inout AppState, to tab: Tab) -> [Command] {
    guard tab != state.tab else { return [] }
    let closing = state.tab.model.closed(&state)
    state.tab = tab
    // pcscd serves the smart-card interface only: on a tab that works without it, its absence is not news.
    if tab.application == .fido, state.status?.subject == .pcscdMissing { state.status = nil }
    return closing + tab.model.opened(&state)
}

// MARK: - Keys arriving and leaving

func keyEvent(_ state: inout AppState, _ event: KeyEvent) -> [Command] {
    switch event {
    case .keyArrived(let d):
        state.keys.removeAll { $0.id == d.id }
        state.keys.append(KeyEntry(descriptor: d))
        // A FIDO2 reset waiting for this key goes first: keys allow it only just after insertion.
        var commands: [Command] = fidoTabKeyArrived(&state, d) + [.probe(d)]
        if state.selectedKeyID == nil {
            commands += select(&state, d.id)
            if state.keys.count == 1 {
                state.status = StatusMessage(
                    UIText("status.keyArrived", ["name": d.name]), kind: .info, expires: state.now + statusSeconds)
            }
        }
        return commands
    case .keyChanged(let d):
        guard let i = state.keys.firstIndex(where: { $0.id == d.id }) else { return keyEvent(&state, .keyArrived(d)) }
        let old = state.keys[i].descriptor
        state.keys[i].descriptor = d
        // The interface a waiting FIDO2 reset needs may be the one that came back.
        var commands: [Command] = fidoTabKeyArrived(&state, d) + [.probe(d)]
        guard state.selectedKeyID == d.id else { return commands }
        if old.reader != d.reader {
            commands += select(&state, d.id)
        } else if old.channels(for: .fido) != d.channels(for: .fido) || old.fidoHID != d.fidoHID {
            commands += fidoTabInterfacesChanged(&state)
        }
        return commands
    case .keyLeft(let id):
        let wasSelected = state.selectedKeyID == id
        let name = state.keys.first { $0.id == id }?.descriptor.name ?? id
        state.keys.removeAll { $0.id == id }
        var commands: [Command] = [.forgetKey(keyID: id)] + tabModels.flatMap { $0.keyLeft(&state, keyID: id) }
        if wasSelected {
            state.selectedKeyID = nil
            state.oath = state.oath.switching(to: nil, keys: state.keys)
            // What an operation cut short by the removal said stays: it tells what to do next.
            if state.status?.subject != .operationCutShort {
                state.status = StatusMessage(UIText("status.keyRemoved", ["name": name]), kind: .warning)
            }
            if let next = state.keys.first {
                commands += select(&state, next.id)
            } else {
                commands += selectedKeyChanged(&state)
            }
        }
        state.keySwitcherIndex = min(state.keySwitcherIndex, max(0, state.keys.count - 1))
        return commands
    case .serviceUnavailable, .serviceRefused:
        let refused = event == .serviceRefused
        state.service = refused ? .refused : .unavailable
        // HID interfaces work without pcscd: the FIDO2 tab is not told about it.
        if state.tab != .fido {
            let text =
                refused
                ? UIText("status.pcscdRefused", ["user": PCSCDaemon.userName()]) : UIText("status.pcscdMissing")
            state.status = StatusMessage(text, kind: .error, subject: .pcscdMissing)
        }
        return reopenWithoutReader(&state)
    case .serviceAvailable:
        state.service = .available
        if state.status?.subject == .pcscdMissing { state.status = nil }
        return []
    case .readerAdded, .readerRemoved:
        return []
    }
}

/// Makes `id` the key the tabs work on and opens its OATH application (on a key without a smart-card
/// interface, the OATH tab says what it lacks instead).
func select(_ state: inout AppState, _ id: String) -> [Command] {
    guard let entry = state.keys.first(where: { $0.id == id }) else { return [] }
    state.selectedKeyID = id
    state.oath = state.oath.switching(to: id, keys: state.keys)
    guard entry.descriptor.has(.oath) else {
        state.oath.phase = .unavailable(notOnKeyText(entry.descriptor, state.service, application: "OATH"))
        return selectedKeyChanged(&state)
    }
    state.oath.phase = .loading
    return [.oath(.open(entry.descriptor, time: state.now))] + selectedKeyChanged(&state)
}

/// Why an application that needs a smart-card interface is not on `key`: pcscd is not running (so its CCID
/// interface is not seen), or the key has none (a FIDO-only key).
public func notOnKeyText(_ key: KeyDescriptor, _ service: ServiceState, application: String) -> UIText {
    if service == .unavailable { return UIText("view.notOnKey.pcscd", ["application": application]) }
    if service == .refused { return UIText("view.notOnKey.pcscdRefused", ["application": application]) }
    return UIText(
        "view.notOnKey.ccid",
        [
            "application": application,
            "interfaces": key.interfaces.map { $0.rawValue.uppercased() }.joined(separator: "+"),
        ])
}

/// pcscd went away: the key keeps its HID interfaces, and the tabs that need the reader say why they cannot.
func reopenWithoutReader(_ state: inout AppState) -> [Command] {
    guard let key = state.selectedKey, !key.descriptor.has(.oath) else { return [] }
    if case .unavailable = state.oath.phase {
        state.oath.phase = .unavailable(notOnKeyText(key.descriptor, state.service, application: "OATH"))
    }
    return []
}

// MARK: - Keyboard

func handleKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if key == .ctrl("c") {
        state.quitting = true
        return [.quit]
    }
    if state.showHelp {
        helpKey(&state, key)
        return []
    }
    if state.showKeySwitcher { return keySwitcher(&state, key) }
    if state.showDeviceInfo { return deviceViewKey(&state, key) }
    // Tab and Shift-Tab switch tabs, except in a dialog, where they move between its fields.
    if !state.dialogOpen {
        switch key {
        case .tab: return switchTab(&state, to: state.tab.next)
        case .backTab: return switchTab(&state, to: state.tab.previous)
        default: break
        }
    }
    if state.textFocused { return tabKey(&state, key) }
    switch key {
    case .char(let c) where Tab.numberKeys.contains(c):
        if let n = c.wholeNumberValue, let tab = Tab(rawValue: n - 1) { return switchTab(&state, to: tab) }
        return []
    default: break
    }
    switch state.bindings.action(for: key) {
    case .quit:
        state.quitting = true
        return [.quit]
    case .help:
        state.showHelp = true
        return []
    case .device:
        state.showDeviceInfo = true
        return []
    case .keys:
        openKeySwitcher(&state)
        return []
    default:
        return tabKey(&state, key)
    }
}

/// Pasted text. It is never replayed as key presses, so a paste cannot delete, reset or quit: a focused text
/// field or dialog takes it, the OATH list opens Add with a pasted `otpauth://` or `otpauth-migration://`
/// URI, the OTP tab decodes a pasted OTP, and anything else is dropped with a word in the status line.
func handlePaste(_ state: inout AppState, _ text: String) -> [Command] {
    let overlay = state.showHelp || state.showKeySwitcher || state.showDeviceInfo
    if !overlay, state.tab.model.paste(&state, text) { return [] }
    if state.showDeviceInfo && !state.showHelp && !state.showKeySwitcher
        && (lockDialogPaste(&state, text) || nameDialogPaste(&state, text))
    {
        return []
    }
    state.status = StatusMessage(
        UIText(state.tab == .oath ? "status.pasteIgnoredOATH" : "status.pasteIgnored"),
        kind: .warning, expires: state.now + statusSeconds)
    return []
}

func openKeySwitcher(_ state: inout AppState) {
    state.showKeySwitcher = true
    state.keySwitcherIndex = state.keys.firstIndex { $0.id == state.selectedKeyID } ?? 0
}

func keySwitcher(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    switch key {
    case .escape:
        state.showKeySwitcher = false
    case _ where [.quit, .keys].contains(state.bindings.action(for: key)):
        // The quit and keys bindings (q and K unless rebound) close it too.
        state.showKeySwitcher = false
    case .up, .char("k"):
        state.keySwitcherIndex = max(0, state.keySwitcherIndex - 1)
    case .down, .char("j"):
        state.keySwitcherIndex = min(max(0, state.keys.count - 1), state.keySwitcherIndex + 1)
    case .enter:
        state.showKeySwitcher = false
        guard state.keys.indices.contains(state.keySwitcherIndex) else { return [] }
        let entry = state.keys[state.keySwitcherIndex]
        if let serial = entry.serial { state.preferredSerial = serial }
        if entry.id != state.selectedKeyID { return select(&state, entry.id) }
    default:
        break
    }
    return []
}

func tabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    state.tab.model.keyPress(&state, key)
}
