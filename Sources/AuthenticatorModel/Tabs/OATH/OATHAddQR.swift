import KeyKit

// The Add dialog's QR codes: Ctrl-G fills the secret with a new random one (made by the work, as `oath add
// --generate` makes it), and once the account is added it is shown once as a URI and a QR code for a phone app; a
// path typed (or dropped) in the URI field is an image, read by the work for its QR code when Enter is pressed (as
// `oath add --qr`), and the URI found fills the dialog as a pasted one does.

/// An account whose secret the Add dialog made, shown once (its URI carries the secret).
public struct OATHShownAccount: Sendable, Hashable {
    /// The account's ID ("Issuer:name").
    public var id: String
    /// Its `otpauth://` URI, secret included.
    public var uri: String

    public init(id: String, uri: String) {
        self.id = id
        self.uri = uri
    }

    /// Overwrites and empties the URI (what Swift allows for a String held by value).
    mutating func wipe() {
        uri = String(repeating: "\0", count: uri.count)
        uri = ""
    }
}

/// The key that fills the Add dialog's secret with a new random one.
public let addNewSecretKey = KeyPress.ctrl("g")

/// The image path the Add dialog's URI field holds: text that is not an account URI, without the quotes or the
/// `file://` a terminal may add to a file dropped on it; nil for an empty field or a URI.
public func addImagePath(_ text: String) -> String? {
    var path = text.trimmingWhitespace
    guard !path.isEmpty, !isAccountURI(path) else { return nil }
    for quote in ["'", "\""] where path.count >= 2 && path.hasPrefix(quote) && path.hasSuffix(quote) {
        path = String(path.dropFirst().dropLast())
    }
    if path.hasPrefix("file://") { path = String(path.dropFirst("file://".count)) }
    return path.isEmpty ? nil : path
}

/// A key in the Add dialog that the dialog's form does not take: Ctrl-G asks for a new secret, and Enter with an
/// image path in the URI field reads the image. Nil: the form handles the key.
func addDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command]? {
    guard var dialog = state.oath.dialog, dialog.kind.isAdd, !dialog.form.busy, dialog.form.confirming == nil,
        state.oath.change == nil
    else { return nil }
    switch key {
    case addNewSecretKey:
        return [.oath(.makeSecret)]
    case .enter:
        guard let path = addImagePath(dialog.form[AddField.uri]) else { return nil }
        dialog.form.busy = true
        dialog.form.problem = nil
        state.oath.readingImage = path
        state.oath.dialog = dialog
        return [.oath(.readImage(path: path))]
    default:
        return nil
    }
}

/// The work's answers for the Add dialog (a secret made, an image read); nil for the other messages.
func addDialogAnswer(_ state: inout AppState, _ msg: OATHTabMsg) -> [Command]? {
    switch msg {
    case .secretMade(let secret):
        guard var dialog = state.oath.dialog, dialog.kind.isAdd, !dialog.form.busy, dialog.form.confirming == nil
        else { return [] }
        // The fields describe the account now: a URI typed before no longer does.
        dialog.form.clear(AddField.uri)
        dialog.kind = .add(filledFromURI: nil)
        dialog.form[AddField.secret] = secret
        dialog.form.confirmed = false
        state.oath.secretMade = true
        addDialogNote(state, &dialog)
        // On to what is still to fill in: the issuer or the name (the URI field, emptied, is left).
        if let empty = [AddField.issuer, .name].first(where: { dialog.form[$0].isEmpty }) {
            dialog.form.focus(on: empty)
        } else if !dialog.form.focusIsPast(AddField.uri) {
            dialog.form.focus(on: AddField.name)
        }
        dialog.form.problem = liveProblem(dialog, state)
        state.oath.dialog = dialog
        return []
    case .imageRead(let path, let result):
        guard state.oath.readingImage == path, var dialog = state.oath.dialog, dialog.kind.isAdd else { return [] }
        state.oath.readingImage = nil
        dialog.form.busy = false
        switch result {
        case .success(let uri):
            // As a pasted URI: the fields fill in for review (an export's accounts are added as they are).
            dialog.form[AddField.uri] = uri
            dialog.form.focus(on: AddField.uri)
            fillFromURI(&dialog)
            addDialogNote(state, &dialog)
            if dialog.kind != .add(filledFromURI: nil) { state.oath.secretMade = false }
            dialog.form.problem = liveProblem(dialog, state)
        case .failure(let error):
            dialog.form.problem = ErrorExplanation(error).text
        }
        state.oath.dialog = dialog
        return []
    default:
        return nil
    }
}

/// The Add dialog's note once its fields changed: what Enter does with an image path, or that the secret made here
/// is shown once after adding (`fillFromURI` says what a URI holds).
func addDialogNote(_ state: AppState, _ dialog: inout OATHDialog) {
    guard case .add(let filled) = dialog.kind, filled == nil else { return }
    if addImagePath(dialog.form[AddField.uri]) != nil {
        dialog.form.note = UIText("oath.add.imageNote")
    } else if state.oath.secretMade {
        dialog.form.note = UIText("oath.add.secretMadeNote")
    }
}

/// The Add dialog closes with its account added: an account whose secret it made is shown once, for a phone app.
func showMadeAccount(_ state: inout AppState, _ dialog: OATHDialog) {
    defer { state.oath.secretMade = false }
    guard state.oath.secretMade, dialog.kind.isAdd, state.oath.change?.done.isEmpty == false,
        case .success(let accounts) = addFormCredentials(dialog.form), accounts.count == 1, let account = accounts.first
    else { return }
    state.oath.shown = OATHShownAccount(id: account.id.string, uri: OTPAuthURI.make(account))
}

/// A key while an account is shown once: Enter or Esc closes it (its URI wiped); nothing else does anything.
func shownAccountKey(_ state: inout AppState, _ key: KeyPress) {
    guard key == .enter || key == .escape else { return }
    closeShownAccount(&state)
}

/// The account shown once goes, its URI wiped.
func closeShownAccount(_ state: inout AppState) {
    state.oath.shown?.wipe()
    state.oath.shown = nil
}
