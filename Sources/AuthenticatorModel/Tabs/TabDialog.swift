import KeyKit

/// A tab's open dialog: which one (the tab's own kinds) and its form. The tabs name it with their kinds
/// (`FIDODialog = TabDialog<FIDODialogKind>`, ...); the OATH tab's dialog, which also remembers the URI it was
/// filled from, has a type of its own.
public struct TabDialog<Kind: Sendable & Hashable>: Sendable, Hashable {
    public var kind: Kind
    public var form: Form

    public init(kind: Kind, form: Form) {
        self.kind = kind
        self.form = form
    }
}

/// What a tab makes of its dialog's submit (see `tabDialogKey`).
enum DialogSubmit {
    /// The dialog's command: the form waits, busy, for its answer.
    case send(Command)
    /// The tab did all there was to do itself (closed the dialog, asked ...), and these are its commands.
    case done([Command])
}

/// A key press in the tab's dialog at `path`, the way the key tabs' dialogs take it. The form handles the key. A
/// cancel closes the dialog, its secrets wiped, and `cancel` says what follows. While the form is edited (and
/// neither busy nor asking), `problem` says what is wrong with it so far. A submit stays open with the problem
/// `problem` finds then, closes when no key is selected, and otherwise hands the dialog and the key to `submit`.
func tabDialogKey<Kind>(
    _ state: inout AppState, _ key: KeyPress, _ path: WritableKeyPath<AppState, TabDialog<Kind>?>,
    problem: (TabDialog<Kind>, _ submitting: Bool) -> UIText?,
    cancel: (inout AppState, TabDialog<Kind>) -> [Command] = { _, _ in [] },
    submit: (inout AppState, inout TabDialog<Kind>, KeyDescriptor) -> DialogSubmit
) -> [Command] {
    guard var dialog = state[keyPath: path] else { return [] }
    switch dialog.form.handle(key, now: state.now) {
    case .cancel:
        dialog.form.wipeSecrets()
        state[keyPath: path] = nil
        return cancel(&state, dialog)
    case .editing:
        if !dialog.form.busy && dialog.form.confirming == nil { dialog.form.problem = problem(dialog, false) }
        state[keyPath: path] = dialog
        return []
    case .submit:
        if let problem = problem(dialog, true) {
            dialog.form.problem = problem
            state[keyPath: path] = dialog
            return []
        }
        guard let entry = state.selectedKey else {
            dialog.form.wipeSecrets()
            state[keyPath: path] = nil
            return []
        }
        switch submit(&state, &dialog, entry.descriptor) {
        case .done(let commands):
            return commands
        case .send(let command):
            dialog.form.sent()
            state[keyPath: path] = dialog
            return [command]
        }
    }
}

/// Pasted text into the focused text field of the tab's dialog at `path`, whose problem line then says what
/// `problem` finds; false when there is no dialog or nothing in it could take the text.
func tabDialogPaste<Kind>(
    _ state: inout AppState, _ text: String, _ path: WritableKeyPath<AppState, TabDialog<Kind>?>,
    problem: (TabDialog<Kind>) -> UIText?
) -> Bool {
    guard var dialog = state[keyPath: path], dialog.form.paste(text) else { return false }
    dialog.form.problem = problem(dialog)
    state[keyPath: path] = dialog
    return true
}
