import KeyKit

/// One application over one transport, as a toggle in the device view.
public struct DeviceConfigToggle: Sendable, Equatable {
    public var transport: ConfigTransport
    public var application: Capabilities
}

/// A change of the enabled applications waiting for the user's yes in the device view.
public struct PendingConfigChange: Sendable, Equatable {
    public var keyID: String
    public var change: ApplicationsChange
    /// The interface the change turns off that the TUI reaches the key through, if it does.
    public var cuts: KeyInterfaceKind?
    /// When the key that asked arrived: a `y` of the same burst is no answer (`Form.answer`).
    public var askedAt: Double
}

/// The device view's toggles: the one the cursor is on, a change waiting to be confirmed, a write under way.
public struct DeviceConfigState: Sendable, Equatable {
    public var cursor = 0
    public var pending: PendingConfigChange?
    public var writing = false

    public init() {}
}

extension KeyEntry {
    /// The device view's toggles of this key: each application it has over USB, then over NFC; none for a
    /// key whose configuration cannot be changed (no Management application, firmware before 5.0).
    public var configToggles: [DeviceConfigToggle] {
        guard let d = info?.device, d.fromManagement, d.version >= ManagementFeature.writeConfig.minimum else { return [] }
        var out = Capabilities.named.map(\.0).filter { d.supportedUSB.contains($0) }
            .map { DeviceConfigToggle(transport: .usb, application: $0) }
        if let nfc = d.supportedNFC {
            out += Capabilities.named.map(\.0).filter { nfc.contains($0) }.map { DeviceConfigToggle(transport: .nfc, application: $0) }
        }
        return out
    }

    /// The interface the runner reaches the Management application through: the reader, else FIDO HID, else OTP HID.
    var managementInterface: KeyInterfaceKind {
        if descriptor.reader != nil { return descriptor.overNFC ? .nfc : .ccid }
        return descriptor.fidoHID != nil ? .fido : .otp
    }
}

/// The device view's keys: the arrows move between the toggles, Space asks to turn the one under the cursor
/// on or off (the same checks as `ykterm config`: what changes, before → after, then y or n), K opens the key
/// switcher over it, any other key closes it.
func deviceViewKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if let pending = state.deviceConfig.pending {
        // As every question before a change: only a y typed after it showed says yes; n, Enter and Esc say no.
        switch Form.answer(key, askedAt: pending.askedAt, now: state.now) {
        case nil:
            return []
        case false?:
            state.deviceConfig.pending = nil
            state.status = StatusMessage(UIText("error.declined"), kind: .info, expires: state.now + statusSeconds)
            return []
        case true?:
            state.deviceConfig.pending = nil
        }
        guard let entry = state.keys.first(where: { $0.id == pending.keyID }) else { return [] }
        state.deviceConfig.writing = true
        state.status = StatusMessage(UIText("config.tui.writing"), kind: .info)
        return [.writeConfig(entry.descriptor, pending.change.configuration, reboot: pending.change.needsReboot)]
    }
    let toggles = state.selectedKey?.configToggles ?? []
    if !toggles.isEmpty {
        let cursor = min(state.deviceConfig.cursor, toggles.count - 1)
        switch key {
        case .up, .left:
            state.deviceConfig.cursor = max(0, cursor - 1)
            return []
        case .down, .right:
            state.deviceConfig.cursor = min(toggles.count - 1, cursor + 1)
            return []
        case .char(" "):
            askToToggle(&state, toggles[cursor])
            return []
        default:
            break
        }
    }
    // The keys binding opens the key switcher over the device view, which then shows the key chosen.
    if state.bindings.action(for: key) == .keys, state.keys.count > 1 {
        openKeySwitcher(&state)
    } else {
        state.showDeviceInfo = false
    }
    return []
}

private func askToToggle(_ state: inout AppState, _ toggle: DeviceConfigToggle) {
    guard let entry = state.selectedKey, let device = entry.info?.device else { return }
    guard !state.deviceConfig.writing else { return }
    if device.isConfigLocked {
        state.status = StatusMessage(UIText("config.tui.locked"), kind: .warning, expires: state.now + 3 * statusSeconds)
        return
    }
    let enabled = toggle.transport == .usb ? device.enabledUSB : device.enabledNFC ?? []
    let on = enabled.contains(toggle.application)
    do {
        let change = try ApplicationsChange(device: device, transport: toggle.transport,
                                            enable: on ? [] : toggle.application, disable: on ? toggle.application : [])
        let interface = entry.managementInterface
        state.deviceConfig.pending = PendingConfigChange(keyID: entry.id, change: change,
                                                         cuts: change.cuts(interface) ? interface : nil, askedAt: state.now)
    } catch {
        state.status = StatusMessage(ErrorExplanation(error).text, kind: .error, expires: state.now + 3 * statusSeconds)
    }
}

/// The answer to a configuration write: the key is read again, written or not (a refusal may mean another
/// program locked it meanwhile; a key that restarts is read when it is back).
func configWritten(_ state: inout AppState, keyID: String, failure: UIText?) -> [Command] {
    state.deviceConfig.writing = false
    if let failure {
        state.status = StatusMessage(failure, kind: .error, expires: state.now + 3 * statusSeconds)
    } else {
        state.status = StatusMessage(UIText("config.done"), kind: .success, expires: state.now + statusSeconds)
    }
    guard let entry = state.keys.first(where: { $0.id == keyID }) else { return [] }
    return [.probe(entry.descriptor)]
}
