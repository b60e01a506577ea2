import FoundationEssentials
import Glibc
import KeyKit

// MARK: - Update

func appendLog(_ state: inout AppState, _ lines: [APDULogLine]) {
    appendLog(&state.apdu, lines)
}

func apduTabUpdate(_ state: inout AppState, _ msg: APDUTabMsg) -> [Command] {
    switch msg {
    case .answered(let keyID, let id, let exchanges, let response):
        guard keyID == state.apdu.keyID, id == state.apdu.pending else { return [] }
        state.apdu.pending = nil
        state.apdu.connected = true
        let command = exchanges.first?.command ?? []
        if let app = apduSelected(command) { state.apdu.application = response.status.isSuccess ? app : nil }
        appendLog(
            &state, apduAnswerLines(exchanges: exchanges, response: response, application: state.apdu.application))
        return []
    case .failed(let keyID, let id, let message, let keyGone):
        guard keyID == state.apdu.keyID, id == state.apdu.pending else { return [] }
        state.apdu.pending = nil
        // The work dropped its connection: the next command opens a new one, with nothing selected.
        state.apdu.connected = false
        state.apdu.application = nil
        appendLog(
            &state,
            [APDULogLine(.error, message)]
                + (keyGone ? [APDULogLine(.error, UIText("status.keyGoneMidOperation"))] : []))
        return []
    case .saved(let kind, let path):
        state.status = StatusMessage(
            UIText(kind == .transcript ? "apdu.save.saved.transcript" : "apdu.save.saved.history", ["path": path]),
            kind: .success,
            expires: state.now + statusSeconds)
        return []
    case .saveFailed(let kind, let path, let message, let exists):
        if exists {
            // The path goes in the note, which wraps: a long one would not fit the title.
            let form = Form.confirmation(
                title: UIText("apdu.save.overwriteTitle"),
                note: UIText("apdu.save.overwriteNote", ["path": path]), askedAt: state.now)
            state.apdu.dialog = APDUDialog(kind: .overwrite(kind, path: path), form: form)
            return []
        }
        state.status = StatusMessage(message, kind: .error, expires: state.now + 2 * statusSeconds)
        return []
    }
}

func apduTabOpened(_ state: inout AppState) -> [Command] {
    state.apdu.inputFocused = true
    return []
}

func apduTabTick(_ state: inout AppState) -> [Command] { [] }

/// The selected key changed or left: the console's connection belonged to the old one.
func apduTabKeyChanged(_ state: inout AppState) -> [Command] {
    guard let old = state.apdu.keyID, old != state.selectedKeyID else { return [] }
    let wasOpen = state.apdu.connected || state.apdu.pending != nil
    state.apdu.keyID = nil
    state.apdu.connected = false
    state.apdu.pending = nil
    state.apdu.application = nil
    state.apdu.otherWork = []
    guard wasOpen else { return [] }
    appendLog(
        &state,
        [
            APDULogLine(
                .note, UIText(state.keys.contains { $0.id == old } ? "apdu.note.closedChanged" : "apdu.note.closedLeft")
            )
        ])
    return [.apdu(.close)]
}

/// Called with every batch of commands `update` returns: other tabs' work on the console's key may change
/// the application selected on it, which the log notes before the console's next command.
func apduNoteKeyWork(_ state: inout AppState, _ commands: [Command]) {
    guard state.apdu.connected, let keyID = state.apdu.keyID else { return }
    for command in commands {
        for (id, name) in command.keyApplications where (id ?? state.selectedKeyID) == keyID {
            apduNote(&state, keyID: keyID, name)
        }
    }
}

private func apduNote(_ state: inout AppState, keyID: String, _ name: String) {
    // FIDO2 over HID leaves the smart-card interface's selection as it was.
    if name == "FIDO2", let key = state.keys.first(where: { $0.id == keyID }),
        key.descriptor.channels(for: .fido).first == .fidoHID
    {
        return
    }
    if !state.apdu.otherWork.contains(name) { state.apdu.otherWork.append(name) }
}

func apduTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.apdu.dialog != nil { return apduDialogKey(&state, key) }
    switch key {
    case .pageUp:
        state.apdu.scroll = min(max(0, state.apdu.log.count - 1), state.apdu.scroll + APDUTabState.page)
        return []
    case .pageDown:
        state.apdu.scroll = max(0, state.apdu.scroll - APDUTabState.page)
        return []
    default: break
    }
    if state.apdu.inputFocused { return apduInputKey(&state, key) }
    func scroll(_ by: Int) { state.apdu.scroll = max(0, min(max(0, state.apdu.log.count - 1), state.apdu.scroll + by)) }
    switch key {
    case .enter, .char(":"):
        state.apdu.inputFocused = true
    case .up, .char("k"): scroll(1)
    case .down, .char("j"): scroll(-1)
    case .home, .char("g"): scroll(state.apdu.log.count)
    case .end, .char("G"): state.apdu.scroll = 0
    case .char("s"): state.apdu.dialog = saveDialog(.transcript, state)
    case .char("h"): state.apdu.dialog = saveDialog(.history, state)
    case .char("x"):
        state.apdu.log = []
        state.apdu.scroll = 0
    default:
        if state.bindings.action(for: key) == .filter { state.apdu.inputFocused = true }
    }
    return []
}

func apduInputKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    var apdu = state.apdu
    defer { state.apdu = apdu }
    switch key {
    case .escape:
        apdu.inputFocused = false
    case .enter:
        switch apdu.parsed {
        case .problem(let why):
            // Nothing is sent: the line stays as typed, to be corrected; the log and the status line say why.
            appendLog(&apdu, [APDULogLine(.error, UIText("apdu.log.notSent", ["input": apdu.input.text]), suffix: why)])
            state.status = StatusMessage(why, kind: .error, expires: state.now + statusSeconds)
            return []
        case .command where apdu.pending != nil:
            state.status = StatusMessage(
                UIText("apdu.status.pending"), kind: .warning, expires: state.now + statusSeconds)
            return []
        default:
            return apduSend(&apdu, state)
        }
    case .up:
        guard !apdu.history.isEmpty else { return [] }
        if let i = apdu.historyIndex {
            apdu.historyIndex = max(0, i - 1)
        } else {
            apdu.draft = apdu.input.text
            apdu.historyIndex = apdu.history.count - 1
        }
        apdu.input = TextField(apdu.history[apdu.historyIndex!], maxLength: APDUTabState.maxInput)
    case .down:
        guard let i = apdu.historyIndex else { return [] }
        if i + 1 < apdu.history.count {
            apdu.historyIndex = i + 1
            apdu.input = TextField(apdu.history[i + 1], maxLength: APDUTabState.maxInput)
        } else {
            apdu.historyIndex = nil
            apdu.input = TextField(apdu.draft, maxLength: APDUTabState.maxInput)
        }
    default:
        let before = apdu.input.text
        apdu.input.handle(key)
        if apdu.input.text != before { apdu.historyIndex = nil }
    }
    return []
}

/// Enter in the input: sends what is typed when it is a command (nothing while one is on its way).
func apduSend(_ apdu: inout APDUTabState, _ state: AppState) -> [Command] {
    guard case .command(let bytes, let label, _) = apdu.parsed else { return [] }
    guard let key = state.selectedKey else {
        appendLog(&apdu, [APDULogLine(.error, UIText("apdu.error.noKey"))])
        return []
    }
    guard apdu.pending == nil else { return [] }
    var lines = [APDULogLine]()
    if apdu.keyID != key.id || !apdu.connected {
        apdu.keyID = key.id
        apdu.otherWork = []
        lines.append(APDULogLine(.note, UIText("apdu.note.connecting", ["name": key.model ?? key.descriptor.name])))
    } else if !apdu.otherWork.isEmpty {
        lines.append(
            APDULogLine(.note, UIText("apdu.note.otherWork", ["what": apdu.otherWork.joined(separator: ", ")])))
        apdu.otherWork = []
    }
    lines.append(
        APDULogLine(.command, .literal("> " + Hex.encode(bytes, uppercase: true)), suffix: label.map { .literal($0) }))
    appendLog(&apdu, lines)
    let typed = apdu.input.text.trimmingSpaces
    if apdu.history.last != typed { apdu.history.append(typed) }
    if apdu.history.count > APDUTabState.maxHistory {
        apdu.history.removeFirst(apdu.history.count - APDUTabState.maxHistory)
    }
    apdu.historyIndex = nil
    apdu.draft = ""
    apdu.input = TextField(maxLength: APDUTabState.maxInput)
    let id = apdu.nextID
    apdu.nextID += 1
    apdu.pending = id
    // OATH fetches the rest of a long answer with SEND REMAINING; the other applications with GET RESPONSE.
    // A SELECT's own answer already comes from the application it selects.
    let target = apduSelected(bytes) ?? apdu.application
    let remaining: UInt8 = target == "OATH" ? YKOATH.Ins.sendRemaining : SmartCardProtocol.getResponse
    return [.apdu(.send(key.descriptor, bytes: bytes, remaining: remaining, id: id))]
}

func appendLog(_ apdu: inout APDUTabState, _ lines: [APDULogLine]) {
    apdu.log += lines
    if apdu.log.count > APDUTabState.maxLog { apdu.log.removeFirst(apdu.log.count - APDUTabState.maxLog) }
    apdu.scroll = 0
}

/// The field of the save dialog.
public enum SaveField: String, FormFieldID { case path }

func saveDialog(_ kind: APDUSaveKind, _ state: AppState) -> APDUDialog {
    let name = kind == .transcript ? "ykterm-apdu-transcript.txt" : "ykterm-apdu-history.txt"
    var form = Form(
        title: UIText(kind == .transcript ? "apdu.save.title.transcript" : "apdu.save.title.history"),
        fields: [Form.Field(SaveField.path, UIText("apdu.save.path"), TextField(name, maxLength: 4096))])
    form.note = UIText(kind == .transcript ? "apdu.save.note.transcript" : "apdu.save.note.history")
    let empty = kind == .transcript ? state.apdu.log.isEmpty : state.apdu.history.isEmpty
    if empty { form.problem = nothingToSave(kind) }
    return APDUDialog(kind: .save(kind), form: form)
}

func apduDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    guard var dialog = state.apdu.dialog else { return [] }
    let outcome = dialog.form.handle(key, now: state.now)
    switch outcome {
    case .cancel:
        state.apdu.dialog = nil
        return []
    case .editing:
        if case .save = dialog.kind {
            dialog.form.problem =
                dialog.form[SaveField.path].trimmingSpaces.isEmpty ? UIText("apdu.save.pathEmpty") : nil
        }
        state.apdu.dialog = dialog
        return []
    case .submit:
        let kind: APDUSaveKind, path: String, overwrite: Bool
        switch dialog.kind {
        case .save(let k):
            kind = k
            path = dialog.form[SaveField.path].trimmingSpaces
            overwrite = false
            guard !path.isEmpty else {
                dialog.form.problem = UIText("apdu.save.pathEmpty")
                state.apdu.dialog = dialog
                return []
            }
        case .overwrite(let k, let p):
            kind = k
            path = p
            overwrite = true
        }
        let content: APDUSaveContent = kind == .transcript ? .transcript(state.apdu.log) : .history(state.apdu.history)
        let empty = kind == .transcript ? state.apdu.log.isEmpty : state.apdu.history.isEmpty
        guard !empty else {
            dialog.form.problem = nothingToSave(kind)
            state.apdu.dialog = dialog
            return []
        }
        state.apdu.dialog = nil
        return [.apdu(.save(path: path, content, overwrite: overwrite))]
    }
}

func nothingToSave(_ kind: APDUSaveKind) -> UIText {
    UIText(kind == .transcript ? "apdu.save.nothing.transcript" : "apdu.save.nothing.history")
}

/// Pasted text on the APDU tab goes into the file-name dialog or the command line (where it is checked as
/// typed text is); it is never sent by itself.
func apduTabPaste(_ state: inout AppState, _ text: String) -> Bool {
    if var dialog = state.apdu.dialog {
        guard dialog.form.paste(text) else { return false }
        state.apdu.dialog = dialog
        return true
    }
    guard state.apdu.inputFocused else { return false }
    state.apdu.input.insert(text)
    return true
}

/// The tab's keys, for the help overlay.
func apduTabHelp(_ state: AppState) -> [HelpEntry] {
    [
        HelpEntry("Enter", UIText("apdu.help.enter")),
        HelpEntry("Up/Down", UIText("apdu.help.history")),
        HelpEntry("PgUp/PgDn", UIText("apdu.help.scroll")),
        HelpEntry("Esc", UIText("apdu.help.escape")),
        HelpEntry(": \(state.bindings.key(for: .filter))", UIText("apdu.help.focus")),
        HelpEntry("select NAME", UIText("apdu.help.select")),
        HelpEntry("s / h", UIText("apdu.help.save")),
        HelpEntry("x", UIText("apdu.help.clear")),
    ]
}
