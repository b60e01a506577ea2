import KeyKit

/// The field of the device view's name dialog.
public enum KeyNameField: String, FormFieldID { case name }

/// The device view's name dialog: what the key with `serial` is called ("daily", "backup"); empty forgets it.
public struct KeyNameDialog: Sendable, Equatable {
    public var serial: UInt32
    public var form: Form
}

extension KeyEntry {
    /// The key's serial number, from its probe or its descriptor.
    public var knownSerial: UInt32? { serial ?? info?.device.serial ?? descriptor.serial }
}

extension AppState {
    /// The name the user gave `key` (`ykterm key name`, or `n` in the device view).
    public func givenName(of key: KeyEntry) -> String? {
        key.knownSerial.flatMap { keyNames[$0] }
    }

    /// How the status line, the key switcher and touch prompts call `key`: its model (else its reader or device
    /// name), then the name given it in quotes.
    public func displayName(of key: KeyEntry) -> String {
        let model = key.model ?? key.descriptor.name
        return givenName(of: key).map { "\(model) '\($0)'" } ?? model
    }
}

/// Opens the name dialog for the selected key (one whose serial is known: names are kept by serial).
func openNameDialog(_ state: inout AppState) {
    guard let entry = state.selectedKey else { return }
    guard let serial = entry.knownSerial else {
        state.status = StatusMessage(UIText("keyName.noSerial"), kind: .warning, expires: state.now + statusSeconds)
        return
    }
    let current = state.keyNames[serial] ?? ""
    let form = Form(
        title: UIText("keyName.title", ["serial": String(serial)]),
        fields: [
            Form.Field(
                KeyNameField.name, UIText("keyName.field"), TextField(current, maxLength: KeyNames.maxLength + 8))
        ],
        note: UIText("keyName.note"))
    state.deviceConfig.nameDialog = KeyNameDialog(serial: serial, form: form)
}

/// The problem with the name as typed (an empty one forgets the name: no problem).
private func nameProblem(_ form: Form) -> UIText? {
    let typed = form[KeyNameField.name]
    guard !typed.trimmingSpaces.isEmpty else { return nil }
    do {
        _ = try KeyNames.check(typed)
        return nil
    } catch {
        return error.text
    }
}

func nameDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    guard var dialog = state.deviceConfig.nameDialog else { return [] }
    switch dialog.form.handle(key, now: state.now) {
    case .cancel:
        state.deviceConfig.nameDialog = nil
        return []
    case .editing:
        if !dialog.form.busy { dialog.form.problem = nameProblem(dialog.form) }
        state.deviceConfig.nameDialog = dialog
        return []
    case .submit:
        if let problem = nameProblem(dialog.form) {
            dialog.form.problem = problem
            state.deviceConfig.nameDialog = dialog
            return []
        }
        let typed = dialog.form[KeyNameField.name].trimmingSpaces
        dialog.form.busy = true
        state.deviceConfig.nameDialog = dialog
        return [.nameKey(serial: dialog.serial, name: typed.isEmpty ? nil : typed)]
    }
}

/// Pasted text into the name dialog.
func nameDialogPaste(_ state: inout AppState, _ text: String) -> Bool {
    guard var dialog = state.deviceConfig.nameDialog, dialog.form.paste(text) else { return false }
    dialog.form.problem = nameProblem(dialog.form)
    state.deviceConfig.nameDialog = dialog
    return true
}

/// The name was kept (or forgotten), or could not be: the dialog closes, or says why.
func keyNamed(_ state: inout AppState, serial: UInt32, name: String?, problem: UIText?) -> [Command] {
    if let problem {
        state.deviceConfig.nameDialog?.form.busy = false
        state.deviceConfig.nameDialog?.form.problem = problem
        return []
    }
    state.keyNames[serial] = name
    state.deviceConfig.nameDialog = nil
    let text =
        name.map { UIText("keyName.named", ["serial": String(serial), "name": $0]) }
        ?? UIText("keyName.forgotten", ["serial": String(serial)])
    state.status = StatusMessage(text, kind: .success, expires: state.now + statusSeconds)
    return []
}
