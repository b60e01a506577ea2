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

/// The fields of the device view's lock code dialogs.
public enum DeviceLockField: String, FormFieldID { case current, clear, new, again }

/// What a lock code dialog of the device view is for.
public enum DeviceLockDialogKind: Sendable, Equatable {
    /// The lock code a confirmed change of a locked key needs before it is written.
    case unlock(PendingConfigChange)
    /// Set, change or (`clear`) remove the lock code of key `keyID`; `locked`: it has one now.
    case lockCode(keyID: String, locked: Bool)
}

/// A lock code dialog over the device view. The codes are secret fields: shown as bullets, wiped once sent.
public struct DeviceLockDialog: Sendable, Equatable {
    public var kind: DeviceLockDialogKind
    public var form: Form
}

/// The device view's toggles: the one the cursor is on, a change waiting to be confirmed, the lock code
/// dialog, a write under way.
public struct DeviceConfigState: Sendable, Equatable {
    public var cursor = 0
    public var pending: PendingConfigChange?
    public var lockDialog: DeviceLockDialog?
    /// The dialog that names the key (`n`).
    public var nameDialog: KeyNameDialog?
    public var writing = false

    /// Opens the dialog that sets, changes or removes the lock code (on a key whose configuration can be
    /// written).
    public static let lockCodeKey: Character = "L"

    public init() {}
}

extension KeyEntry {
    /// The device view's toggles of this key: each application it has over USB, then over NFC; none for a
    /// key whose configuration cannot be changed (no Management application, firmware before 5.0).
    public var configToggles: [DeviceConfigToggle] {
        guard let d = info?.device, d.fromManagement, d.version >= ManagementFeature.writeConfig.minimum else {
            return []
        }
        var out = Capabilities.named.map(\.0).filter { d.supportedUSB.contains($0) }
            .map { DeviceConfigToggle(transport: .usb, application: $0) }
        if let nfc = d.supportedNFC {
            out += Capabilities.named.map(\.0).filter { nfc.contains($0) }.map {
                DeviceConfigToggle(transport: .nfc, application: $0)
            }
        }
        return out
    }

    /// The interface the runner reaches the Management application through (`KeyDescriptor.managementInterface`).
    var managementInterface: KeyInterfaceKind {
        descriptor.managementInterface ?? .otp
    }
}

/// The device view's keys: the arrows move between the toggles, Space asks to turn the one under the cursor
/// on or off (the same checks as `ykterm config`: what changes, before → after, then y or n, then the lock
/// code on a locked key), L sets, changes or removes the lock code, K opens the key switcher over it, any
/// other key closes it.
func deviceViewKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.deviceConfig.lockDialog != nil { return lockDialogKey(&state, key) }
    if state.deviceConfig.nameDialog != nil { return nameDialogKey(&state, key) }
    // n names the key, whatever it can be configured to do.
    if key == .char("n"), state.deviceConfig.pending == nil {
        openNameDialog(&state)
        return []
    }
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
        if entry.info?.device.isConfigLocked == true {
            // As `ykterm config` does after its question: the lock code, then the write.
            state.deviceConfig.lockDialog = DeviceLockDialog(kind: .unlock(pending), form: unlockForm())
            return []
        }
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
        case .char(DeviceConfigState.lockCodeKey):
            openLockCodeDialog(&state)
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
    let enabled = toggle.transport == .usb ? device.enabledUSB : device.enabledNFC ?? []
    let on = enabled.contains(toggle.application)
    do {
        let change = try ApplicationsChange(
            device: device, transport: toggle.transport,
            enable: on ? [] : toggle.application, disable: on ? toggle.application : [])
        let interface = entry.managementInterface
        state.deviceConfig.pending = PendingConfigChange(
            keyID: entry.id, change: change,
            cuts: change.cuts(interface) ? interface : nil, askedAt: state.now)
    } catch {
        state.status = StatusMessage(ErrorExplanation(error).text, kind: .error, expires: state.now + 3 * statusSeconds)
    }
}

/// The answer to a configuration write: the key is read again, written or not (a refusal may mean another
/// program locked it meanwhile; a key that restarts is read when it is back). A refused lock code dialog stays
/// open, saying why, for another try.
func configWritten(_ state: inout AppState, keyID: String, failure: UIText?) -> [Command] {
    state.deviceConfig.writing = false
    if let failure, state.deviceConfig.lockDialog != nil {
        state.deviceConfig.lockDialog?.form.busy = false
        state.deviceConfig.lockDialog?.form.problem = failure
    } else if let failure {
        state.status = StatusMessage(failure, kind: .error, expires: state.now + 3 * statusSeconds)
    } else {
        state.deviceConfig.lockDialog = nil
        state.status = StatusMessage(UIText("config.done"), kind: .success, expires: state.now + statusSeconds)
    }
    guard let entry = state.keys.first(where: { $0.id == keyID }) else { return [] }
    return [.probe(entry.descriptor)]
}

// MARK: - Lock code

/// A lock code field: secret, 32 hex digits (spaces allowed).
private func lockCodeField(_ id: DeviceLockField, _ label: String) -> Form.Field {
    Form.Field(id, UIText(label), TextField(secret: true, maxLength: 2 * DeviceConfiguration.lockCodeLength + 8))
}

/// The lock code a change of a locked key needs.
func unlockForm() -> Form {
    Form(
        title: UIText("config.tui.unlock.title"), fields: [lockCodeField(.current, "config.tui.field.current")],
        note: UIText("config.tui.unlock.note"))
}

/// Set, change or remove: the current code on a locked key (with Clear), the new one twice unless cleared.
func lockCodeForm(locked: Bool, clear: Bool = false, current: String = "") -> Form {
    var fields = [Form.Field]()
    if locked {
        fields.append(
            Form.Field(
                DeviceLockField.clear, UIText("config.tui.field.clear"), TextField(clear ? "yes" : "no"),
                toggle: true))
        var field = lockCodeField(.current, "config.tui.field.current")
        field.input = TextField(current, secret: true, maxLength: field.input.maxLength)
        fields.append(field)
    }
    if !clear {
        fields += [lockCodeField(.new, "config.tui.field.new"), lockCodeField(.again, "config.tui.field.again")]
    }
    return Form(
        title: UIText("config.tui.lock.title"), fields: fields,
        note: UIText(locked ? "config.tui.lock.noteLocked" : "config.tui.lock.note"))
}

/// Opens the lock code dialog for the selected key (one whose configuration can be written).
private func openLockCodeDialog(_ state: inout AppState) {
    guard let entry = state.selectedKey, let device = entry.info?.device, !state.deviceConfig.writing else { return }
    state.deviceConfig.lockDialog = DeviceLockDialog(
        kind: .lockCode(keyID: entry.id, locked: device.isConfigLocked),
        form: lockCodeForm(locked: device.isConfigLocked))
}

/// What a lock code dialog writes: the current code and the new one (`clearedLockCode` to remove it).
struct LockCodeWrite: Equatable {
    var current: [UInt8]?
    var new: [UInt8]?
}

/// The codes typed, or the first problem with them. While editing (`submitting` false) a code still being
/// typed (fewer than 32 hex digits) is no problem yet.
func lockDialogOutcome(_ dialog: DeviceLockDialog, submitting: Bool) -> Result<LockCodeWrite, ConfigProblem> {
    let form = dialog.form
    func code(_ field: DeviceLockField, new: Bool) -> Result<[UInt8]?, ConfigProblem> {
        let text = form[field].filter { $0 != " " }
        if !submitting && text.count < 2 * DeviceConfiguration.lockCodeLength && text.allSatisfy(\.isHexDigit) {
            return .success(nil)
        }
        do { return .success(try LockCodeText.parse(text, new: new)) } catch { return .failure(error) }
    }
    var current: [UInt8]?
    if form.has(DeviceLockField.current) {
        switch code(.current, new: false) {
        case .failure(let why): return .failure(why)
        case .success(let c): current = c
        }
    }
    guard case .lockCode = dialog.kind else { return .success(LockCodeWrite(current: current)) }
    if form.isOn(DeviceLockField.clear) {
        return .success(LockCodeWrite(current: current, new: DeviceConfiguration.clearedLockCode))
    }
    let new: [UInt8]?
    switch code(.new, new: true) {
    case .failure(let why): return .failure(why)
    case .success(let n): new = n
    }
    let again = form[DeviceLockField.again].filter { $0 != " " }.lowercased()
    if submitting || again.count >= 2 * DeviceConfiguration.lockCodeLength,
        again != form[DeviceLockField.new].filter({ $0 != " " }).lowercased()
    {
        return .failure(.lockCodeMismatch)
    }
    return .success(LockCodeWrite(current: current, new: new))
}

/// The problem line of a lock code dialog as typed so far.
private func lockDialogProblem(_ dialog: DeviceLockDialog) -> UIText? {
    if case .failure(let why) = lockDialogOutcome(dialog, submitting: false) { return ErrorExplanation(why).text }
    return nil
}

/// The keys of a lock code dialog: its fields, then (setting or clearing the lock) a question, then the write.
func lockDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    guard var dialog = state.deviceConfig.lockDialog else { return [] }
    let clear = dialog.form.isOn(DeviceLockField.clear)
    switch dialog.form.handle(key, now: state.now) {
    case .cancel:
        dialog.form.wipeSecrets()
        state.deviceConfig.lockDialog = nil
        if !state.deviceConfig.writing {
            state.status = StatusMessage(UIText("error.declined"), kind: .info, expires: state.now + statusSeconds)
        }
        return []
    case .editing:
        if case .lockCode(_, let locked) = dialog.kind, dialog.form.isOn(DeviceLockField.clear) != clear {
            // Clear turned on or off: the new code's fields go or come, the current code kept.
            let focus = dialog.form.focus
            var form = lockCodeForm(locked: locked, clear: !clear, current: dialog.form[DeviceLockField.current])
            dialog.form.wipeSecrets()
            form.focus = min(focus, form.fields.count - 1)
            dialog.form = form
        }
        if !dialog.form.busy && dialog.form.confirming == nil { dialog.form.problem = lockDialogProblem(dialog) }
        state.deviceConfig.lockDialog = dialog
        return []
    case .submit:
        let write: LockCodeWrite
        switch lockDialogOutcome(dialog, submitting: true) {
        case .failure(let why):
            dialog.form.problem = ErrorExplanation(why).text
            state.deviceConfig.lockDialog = dialog
            return []
        case .success(let w):
            write = w
        }
        let keyID: String
        switch dialog.kind {
        case .unlock(let pending): keyID = pending.keyID
        case .lockCode(let id, _): keyID = id
        }
        guard let entry = state.keys.first(where: { $0.id == keyID }) else {
            dialog.form.problem = UIText("status.keyGoneMidOperation")
            state.deviceConfig.lockDialog = dialog
            return []
        }
        let command: Command
        switch dialog.kind {
        case .unlock(let pending):
            command = .writeConfig(
                entry.descriptor, pending.change.configuration, reboot: pending.change.needsReboot,
                currentLockCode: write.current)
        case .lockCode(_, let locked):
            if !dialog.form.confirmed {
                let change =
                    write.new == DeviceConfiguration.clearedLockCode
                    ? "config.change.lock-cleared"
                    : locked ? "config.change.lock-changed" : "config.change.lock-set"
                dialog.form.problem = nil
                dialog.form.ask(UIText("config.tui.lock.confirm", nested: ["change": UIText(change)]), at: state.now)
                state.deviceConfig.lockDialog = dialog
                return []
            }
            command = .writeConfig(
                entry.descriptor, DeviceConfiguration(), reboot: false, currentLockCode: write.current,
                newLockCode: write.new)
        }
        dialog.form.sent()
        state.deviceConfig.lockDialog = dialog
        state.deviceConfig.writing = true
        state.status = StatusMessage(UIText("config.tui.writing"), kind: .info)
        return [command]
    }
}

/// Pasted text into the lock code dialog's focused field.
func lockDialogPaste(_ state: inout AppState, _ text: String) -> Bool {
    guard var dialog = state.deviceConfig.lockDialog, dialog.form.paste(text) else { return false }
    dialog.form.problem = lockDialogProblem(dialog)
    state.deviceConfig.lockDialog = dialog
    return true
}
