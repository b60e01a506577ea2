/// What the tabs that run operations on a key (OATH, FIDO2, PIV) share: the operation in flight, the tab's phase, and
/// a failed operation with its reason. Each tab names them with its own operations and reasons
/// (`FIDOBusy = KeyBusy<FIDOOperation>`, ...).

/// The operations of a tab that works on a key (what runs, what failed). Their words in the string tables are named
/// by their raw values: `<words>.working.<operation>` after the tab's title while one runs, and
/// `touch.for.<words>.<operation>` when the key waits for a touch for it.
public protocol KeyTabOperation: RawRepresentable, CaseIterable, Sendable, Hashable where RawValue == String {
    /// The tab's prefix in the string tables.
    static var words: String { get }
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
    static func other(_ text: UIText) -> Self
}

extension ExplainedFailureReason {
    /// `error` worded by `ErrorExplanation`, for the errors the tab has no words of its own for.
    static func explained(_ error: any Error) -> Self {
        let explanation = ErrorExplanation(error)
        switch explanation.kind {
        case .interfaceMissing, .applicationMissing: return .notAvailable(explanation.text)
        case _ where explanation.kind.keyGone: return .keyGone
        default: return .other(explanation.text)
        }
    }
}

/// A key tab opens: it reads the selected key with `load`, or, with no key selected, its `phase` says so.
func keyTabOpened(
    _ state: inout AppState, _ phase: WritableKeyPath<AppState, KeyTabPhase>, load: (inout AppState) -> [Command]
) -> [Command] {
    guard state.selectedKey != nil else {
        state[keyPath: phase] = .noKey
        return []
    }
    return load(&state)
}

/// The key of the tab's operation in flight (`busy`) started (`waiting`) or stopped waiting for a touch: the mark
/// follows it, and a new wait is signalled once, with the operation's touch words.
func keyTabTouch<Operation: KeyTabOperation>(
    _ state: inout AppState, _ busy: WritableKeyPath<AppState, KeyBusy<Operation>?>, waiting: Bool
) {
    guard let current = state[keyPath: busy] else { return }
    if waiting && !current.touch { state.alertTouch(UIText(current.operation.touchKey)) }
    state[keyPath: busy]?.touch = waiting
}
