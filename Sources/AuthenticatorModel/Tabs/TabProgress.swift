/// What the tabs that run operations on a key (OATH, FIDO2, PIV, SSH, OpenPGP) share: the operation in flight, the
/// tab's phase, and a failed operation with its reason. Each tab names them with its own operations and reasons
/// (`FIDOBusy = KeyBusy<FIDOOperation>`, ...).

/// The operations of a tab that works on a key (what runs, what failed). Their words in the string tables are named
/// by their raw values: `<words>.working.<operation>` after the tab's title while one runs, and
/// `touch.for.<words>.<operation>` when the key waits for a touch for it.
public protocol KeyTabOperation: RawRepresentable, CaseIterable, Sendable, Hashable where RawValue == String {
    /// The tab's prefix in the string tables.
    static var words: String { get }
    /// Reading what the tab shows of the key.
    static var load: Self { get }
    /// The operation's name in its working words: its raw value, unless the tab names it otherwise; nil when the tab
    /// says nothing after its title while it runs.
    var workingName: String? { get }
}

extension KeyTabOperation {
    public var workingName: String? { rawValue }

    /// The string key of what the tab is doing, after its title while the operation runs (nil: nothing is said).
    public var workingKey: String? { workingName.map { Self.words + ".working." + $0 } }

    /// The string key said once when the key starts to wait for a touch for the operation.
    public var touchKey: String { "touch.for." + Self.words + "." + rawValue }
}

/// A command in flight, and whether the key waits for a touch.
public struct KeyBusy<Operation: Sendable & Hashable>: Sendable, Hashable {
    public var operation: Operation
    public var touch: Bool

    public init(_ operation: Operation, touch: Bool = false) {
        self.operation = operation
        self.touch = touch
    }
}

/// Where a tab is with the selected key.
public enum KeyTabPhase: Sendable, Hashable {
    case noKey
    case loading
    /// The application is behind a password: what it holds shows once the password is given (OATH).
    case locked
    case ready
    /// The key lacks the tab's application (or the interface that carries it), or could not be read: why.
    case unavailable(UIText)
}

/// An operation that failed, and why (in the tab's own terms).
public struct KeyFailure<Operation: Sendable & Hashable, Reason: Sendable & Hashable>: Sendable, Hashable {
    public var operation: Operation
    public var reason: Reason

    public init(_ operation: Operation, _ reason: Reason) {
        self.operation = operation
        self.reason = reason
    }
}

/// A tab's failure reasons that word an error by its explanation: the application or interface missing, the key
/// gone, or the explanation's text.
protocol ExplainedFailureReason {
    static var keyGone: Self { get }
    static func notAvailable(_ why: UIText) -> Self
    /// A key that enforces PIN complexity refused the new PIN, PUK or password: the explanation's text (the form
    /// stays, to be typed again).
    static func tooSimple(_ text: UIText) -> Self
    static func other(_ text: UIText) -> Self
}

extension ExplainedFailureReason {
    /// `error` worded by `ErrorExplanation`, for the errors the tab has no words of its own for.
    static func explained(_ error: any Error) -> Self {
        let explanation = ErrorExplanation(error)
        switch explanation.kind {
        case .interfaceMissing, .applicationMissing: return .notAvailable(explanation.text)
        case .pinTooSimple: return .tooSimple(explanation.text)
        case _ where explanation.kind.keyGone: return .keyGone
        default: return .other(explanation.text)
        }
    }
}

/// The state of a tab that runs its own operations on the selected key (FIDO2, PIV, SSH, OpenPGP): what the helpers
/// below keep the same way for each of them, through the tab's place in `AppState`.
protocol KeyTabState: Sendable {
    associatedtype Operation: KeyTabOperation
    associatedtype DialogKind: Sendable & Hashable
    /// The tab as it is before it has seen a key.
    init()
    /// Where the tab is with the selected key.
    var phase: KeyTabPhase { get set }
    /// The key what the tab shows belongs to (its descriptor id).
    var keyID: String? { get set }
    var dialog: TabDialog<DialogKind>? { get set }
    var busy: KeyBusy<Operation>? { get set }
}

/// A key tab opens: it reads the selected key with `load`, or, with no key selected, its phase says so.
func keyTabOpened<State: KeyTabState>(
    _ state: inout AppState, _ tab: WritableKeyPath<AppState, State>, load: (inout AppState) -> [Command]
) -> [Command] {
    guard state.selectedKey != nil else {
        state[keyPath: tab].phase = .noKey
        return []
    }
    return load(&state)
}

/// The selected key changed: a tab that showed another key starts over for it (the dialog's secrets wiped), and
/// reads it with `load` when it is the tab shown.
func keyTabKeyChanged<State: KeyTabState>(
    _ state: inout AppState, _ tab: WritableKeyPath<AppState, State>, shown: Tab,
    load: (inout AppState) -> [Command]
) -> [Command] {
    let selected = state.selectedKeyID
    guard state[keyPath: tab].keyID != selected else { return [] }
    state[keyPath: tab].dialog?.form.wipeSecrets()
    state[keyPath: tab] = State()
    state[keyPath: tab].keyID = selected
    state[keyPath: tab].phase = selected == nil ? .noKey : .loading
    if selected != nil, state.tab == shown { return load(&state) }
    return []
}

/// The key answered the tab's read: it is ready, and no longer busy reading.
func keyTabLoaded<State: KeyTabState>(_ state: inout AppState, _ tab: WritableKeyPath<AppState, State>) {
    if state[keyPath: tab].busy?.operation == .load { state[keyPath: tab].busy = nil }
    state[keyPath: tab].phase = .ready
}

/// The tab's command that was running answered: the busy mark and the dialog go (its secrets wiped).
func keyTabFinish<State: KeyTabState>(_ state: inout AppState, _ tab: WritableKeyPath<AppState, State>) {
    state[keyPath: tab].busy = nil
    state[keyPath: tab].dialog?.form.wipeSecrets()
    state[keyPath: tab].dialog = nil
}

/// The work found something the dialog's command would replace: the dialog, when it is still open and of the kind
/// `expected`, asks `question` before it goes on. False when nothing is asked.
@discardableResult
func keyTabAsk<State: KeyTabState>(
    _ state: inout AppState, _ tab: WritableKeyPath<AppState, State>, _ question: UIText,
    expected: (State.DialogKind) -> Bool = { _ in true }
) -> Bool {
    state[keyPath: tab].busy = nil
    // The dialog may have been closed meanwhile: then nothing is made or written, and nothing asked.
    guard var dialog = state[keyPath: tab].dialog, expected(dialog.kind) else { return false }
    dialog.form.busy = false
    dialog.form.ask(question, at: state.now)
    state[keyPath: tab].dialog = dialog
    return true
}

/// The key went away while the tab's command ran: the dialog goes (its secrets wiped), and the status line says
/// `text` of the operation cut short.
func keyTabKeyGone<State: KeyTabState>(
    _ state: inout AppState, _ tab: WritableKeyPath<AppState, State>, _ text: UIText
) -> [Command] {
    keyTabFinish(&state, tab)
    state.status = StatusMessage(text, kind: .error, subject: .operationCutShort)
    return []
}

/// The key of the tab's operation in flight started (`waiting`) or stopped waiting for a touch: the mark follows
/// it, and a new wait is signalled once, with the operation's touch words.
func keyTabTouch<State: KeyTabState>(_ state: inout AppState, _ tab: WritableKeyPath<AppState, State>, waiting: Bool) {
    guard let current = state[keyPath: tab].busy else { return }
    if waiting && !current.touch { state.alertTouch(UIText(current.operation.touchKey)) }
    state[keyPath: tab].busy?.touch = waiting
}
