import KeyKit

// MARK: - What the tab knows

/// The FIDO2 authenticator's information at a glance (getInfo and the PIN retries), as the tab shows it.
public struct FIDOInfo: Sendable, Hashable {
    public var versions: [String]
    public var extensions: [String]
    public var aaguid: String
    public var options: [String: Bool]
    /// True when a PIN is set; nil when the key has no PIN support.
    public var pinSet: Bool?
    public var retries: Int?
    /// Three wrong PINs in a row: the key must be removed and inserted again before the next try.
    public var powerCycleNeeded: Bool
    public var minPINLength: Int
    public var remainingCredentials: Int?
    public var forcePINChange: Bool
    public var credentialManagement: Bool
    /// "5.7.2" when getInfo reports a firmware version.
    public var firmware: String?

    public init(versions: [String], extensions: [String] = [], aaguid: String, options: [String: Bool],
                pinSet: Bool?, retries: Int?, powerCycleNeeded: Bool = false, minPINLength: Int = 4,
                remainingCredentials: Int? = nil, forcePINChange: Bool = false, credentialManagement: Bool = true,
                firmware: String? = nil) {
        self.versions = versions
        self.extensions = extensions
        self.aaguid = aaguid
        self.options = options
        self.pinSet = pinSet
        self.retries = retries
        self.powerCycleNeeded = powerCycleNeeded
        self.minPINLength = minPINLength
        self.remainingCredentials = remainingCredentials
        self.forcePINChange = forcePINChange
        self.credentialManagement = credentialManagement
        self.firmware = firmware
    }

    public init(_ info: AuthenticatorInfo, retries: Int?, powerCycleNeeded: Bool) {
        self.init(versions: info.versions, extensions: info.extensions, aaguid: info.aaguidString,
                  options: info.options, pinSet: info.pinSet, retries: retries,
                  powerCycleNeeded: powerCycleNeeded, minPINLength: max(4, info.minPINLength),
                  remainingCredentials: info.remainingDiscoverableCredentials, forcePINChange: info.forcePINChange,
                  credentialManagement: info.supportsCredentialManagement,
                  firmware: info.firmwareVersion.map { "\($0 >> 16).\(($0 >> 8) & 0xFF).\($0 & 0xFF)" })
    }
}

/// A discoverable credential on the key, as the credentials list shows it.
public struct FIDOCredential: Sendable, Hashable, Identifiable {
    public var rpID: String
    public var rpName: String?
    public var userName: String?
    public var displayName: String?
    public var credentialID: [UInt8]

    public init(rpID: String, rpName: String? = nil, userName: String? = nil, displayName: String? = nil,
                credentialID: [UInt8]) {
        self.rpID = rpID
        self.rpName = rpName
        self.userName = userName
        self.displayName = displayName
        self.credentialID = credentialID
    }

    public var id: String { credentialID.hex }
    /// Who the credential is for: the user name, else the display name, else nothing.
    public var who: String? { userName ?? displayName }
}

/// The dialogs of the FIDO2 tab.
public enum FIDODialogKind: Sendable, Hashable {
    /// New PIN twice (no PIN set yet).
    case setPIN
    /// Current PIN, then the new one twice.
    case changePIN
    /// The PIN; `thenList` when the credentials list asked for it.
    case verifyPIN(thenList: Bool)
    case deleteCredential(id: String)
    /// The warning before a reset.
    case reset
}

public struct FIDODialog: Sendable, Hashable {
    public var kind: FIDODialogKind
    public var form: Form

    public init(kind: FIDODialogKind, form: Form) {
        self.kind = kind
        self.form = form
    }
}

/// Where a guided reset stands.
public enum FIDOResetStage: Sendable, Hashable {
    /// The reset is on its way to this key (a touch follows).
    case sending(keyID: String)
    /// The key refused (inserted too long ago): waiting for it to be removed.
    case removeKey(KeyDescriptor)
    /// Removed: waiting for it to come back, then the reset goes at once.
    case insertKey(KeyDescriptor)
}

/// The key operations of the tab (what is running, what failed).
public enum FIDOOperation: Sendable, Hashable {
    case load, setPIN, changePIN, verifyPIN, list, delete, reset
}

/// A command in flight, and whether the key waits for a touch.
public struct FIDOBusy: Sendable, Hashable {
    public var operation: FIDOOperation
    public var touch: Bool

    public init(_ operation: FIDOOperation, touch: Bool = false) {
        self.operation = operation
        self.touch = touch
    }
}

public enum FIDOPhase: Sendable, Hashable {
    case noKey
    case loading
    case ready
    /// The key has no FIDO2 application on its smart-card interface, or it could not be read.
    case unavailable(UIText)
}

/// The FIDO2 tab: the information, the PIN dialogs, the credentials list and the guided reset.
public struct FIDOTabState: Sendable, Hashable {
    public var phase: FIDOPhase = .noKey
    /// The key the information belongs to (its descriptor id).
    public var keyID: String?
    public var info: FIDOInfo?
    public var dialog: FIDODialog?
    public var busy: FIDOBusy?
    /// The credentials once listed (nil: not listed since the tab got this key).
    public var credentials: [FIDOCredential]?
    /// The credentials list is showing (instead of the information).
    public var showCredentials = false
    /// The first line of the information shown (it scrolls with Up/Down when the terminal is short).
    public var infoScroll = 0
    public var selectedCredential = 0
    public var reset: FIDOResetStage?
    /// The runner holds a PIN token for this key (the token itself never enters the state).
    public var hasToken = false
    /// Something the user must know until it changes (PIN blocked, re-insert needed).
    public var alert: UIText?

    public init() {}

    /// True while a text field of the tab has the keyboard.
    public var textFocused: Bool { dialog != nil }

    /// The credentials in list order: by relying party, then user.
    public var sortedCredentials: [FIDOCredential] {
        (credentials ?? []).sorted { a, b in
            if a.rpID != b.rpID { return a.rpID < b.rpID }
            return (a.who ?? "", a.id) < (b.who ?? "", b.id)
        }
    }

    public var selected: FIDOCredential? {
        let list = sortedCredentials
        guard !list.isEmpty else { return nil }
        return list[max(0, min(list.count - 1, selectedCredential))]
    }
}

// MARK: - Messages and commands

/// Why a FIDO2 command failed, sorted so the tab can explain it.
public enum FIDOFailureReason: Sendable, Hashable {
    /// The key went away during the command.
    case keyGone
    /// No FIDO2 over the smart-card interface.
    case notAvailable
    case wrongPIN(retriesLeft: Int?)
    /// Too many wrong PINs: only a reset helps.
    case pinBlocked
    /// Three wrong PINs in a row: remove and re-insert the key.
    case pinAuthBlocked
    /// The key refused the new PIN (its rules).
    case policyViolation
    /// A PIN rule the session checked before sending (length, NUL).
    case pinRule(UIText)
    /// The held PIN token is no longer accepted, or there is none.
    case tokenInvalid
    /// The key does not allow this now (a reset long after insertion).
    case notAllowed
    case cancelled
    /// Not touched in time.
    case timeout
    case noPIN
    case noPINSupport
    case other(UIText)
}

public struct FIDOFailure: Sendable, Hashable {
    public var operation: FIDOOperation
    public var reason: FIDOFailureReason

    public init(_ operation: FIDOOperation, _ reason: FIDOFailureReason) {
        self.operation = operation
        self.reason = reason
    }
}

public enum FIDOTabMsg: Sendable, Equatable {
    case loaded(keyID: String, FIDOInfo)
    /// The key started (true) or stopped (false) waiting for a touch.
    case touch(keyID: String, waiting: Bool)
    /// A PIN was set (`changed` false) or changed.
    case pinSet(keyID: String, FIDOInfo, changed: Bool)
    /// The PIN was right; the runner holds a token. With the credentials when the list asked.
    case verified(keyID: String, FIDOInfo, credentials: [FIDOCredential]?)
    case credentials(keyID: String, [FIDOCredential])
    case deleted(keyID: String, FIDOCredential, remaining: [FIDOCredential], FIDOInfo)
    case resetDone(keyID: String, FIDOInfo)
    case failed(keyID: String, FIDOFailure)
}

public enum FIDOTabCommand: Sendable, Equatable {
    /// getInfo and the PIN retries.
    case load(KeyDescriptor)
    case setPIN(KeyDescriptor, new: String)
    case changePIN(KeyDescriptor, current: String, new: String)
    /// Verifies the PIN and keeps a token (credential management permission); `thenList` lists credentials.
    case verifyPIN(KeyDescriptor, pin: String, thenList: Bool)
    /// Lists the credentials with the token the runner holds.
    case listCredentials(KeyDescriptor)
    case deleteCredential(KeyDescriptor, credentialID: [UInt8])
    case reset(KeyDescriptor)
    /// Stops a wait for a touch (performed at once, not after the command that waits).
    case cancel
}

extension FIDOTabCommand {
    /// Commands the runner performs at once instead of queueing them behind the key work.
    public var runsAtOnce: Bool { self == .cancel }
}

// MARK: - PIN rules as typed

/// The first rule `pin` breaks, as the key and CTAP 2.1 define them: at least `minimum` code points (4 at
/// least), at most 63 bytes of UTF-8, no NUL.
public func fidoPINProblem(_ pin: String, minimum: Int) -> UIText? {
    let minimum = max(4, minimum)
    if pin.unicodeScalars.contains("\0") { return UIText("fido.pin.nul") }
    if pin.utf8.count > PINRules.maxBytes { return UIText("fido.pin.tooLong", ["bytes": String(pin.utf8.count)]) }
    let count = pin.unicodeScalars.count
    if count < minimum {
        return UIText("fido.pin.tooShort", ["minimum": String(minimum), "count": String(count)])
    }
    return nil
}

// MARK: - Update

func fidoTabUpdate(_ state: inout AppState, _ msg: FIDOTabMsg) -> [Command] {
    func current(_ keyID: String) -> Bool { state.fido.keyID == keyID && state.selectedKeyID == keyID }
    switch msg {
    case .loaded(let id, let info):
        guard current(id) else { return [] }
        if state.fido.busy?.operation == .load { state.fido.busy = nil }
        state.fido.phase = .ready
        setInfo(&state, info)
        return []
    case .touch(let id, let waiting):
        guard current(id), state.fido.busy != nil else { return [] }
        state.fido.busy?.touch = waiting
        return []
    case .pinSet(let id, let info, let changed):
        guard current(id) else { return [] }
        finish(&state)
        state.fido.hasToken = false
        setInfo(&state, info)
        state.status = StatusMessage(UIText(changed ? "fido.pinChanged" : "fido.pinSetDone"), kind: .success,
                                     expires: state.now + statusSeconds)
        return []
    case .verified(let id, let info, let credentials):
        guard current(id) else { return [] }
        finish(&state)
        state.fido.hasToken = true
        setInfo(&state, info)
        if let credentials {
            showList(&state, credentials)
        } else {
            state.status = StatusMessage(UIText("fido.pinCorrect", ["retries": info.retries.map(String.init) ?? "?"]),
                                         kind: .success, expires: state.now + statusSeconds)
        }
        return []
    case .credentials(let id, let credentials):
        guard current(id) else { return [] }
        finish(&state)
        showList(&state, credentials)
        return []
    case .deleted(let id, let credential, let remaining, let info):
        guard current(id) else { return [] }
        finish(&state)
        setInfo(&state, info)
        showList(&state, remaining)
        state.status = StatusMessage(UIText("fido.deleted", ["user": credential.who ?? "?", "rp": credential.rpID]),
                                     kind: .success, expires: state.now + statusSeconds)
        return []
    case .resetDone(let id, let info):
        guard state.selectedKeyID == id else { return [] }
        state.fido = FIDOTabState()
        state.fido.keyID = id
        state.fido.phase = .ready
        state.fido.info = info
        state.status = StatusMessage(UIText("fido.resetDone"), kind: .success, expires: state.now + 2 * statusSeconds)
        return []
    case .failed(let id, let failure):
        if failure.operation == .reset, case .sending(let target) = state.fido.reset, target == id {
            return resetFailed(&state, failure)
        }
        guard current(id) else { return [] }
        return failed(&state, failure)
    }
}

private func setInfo(_ state: inout AppState, _ info: FIDOInfo) {
    state.fido.info = info
    if info.pinSet == true && info.powerCycleNeeded {
        state.fido.alert = UIText("fido.alert.reinsert")
    } else if info.pinSet == true && info.retries == 0 {
        state.fido.alert = UIText("fido.alert.blocked")
    } else if info.forcePINChange {
        state.fido.alert = UIText("fido.alert.forceChange")
    } else {
        state.fido.alert = nil
    }
}

/// The command that was running answered: the busy mark and the dialog go.
private func finish(_ state: inout AppState) {
    state.fido.busy = nil
    state.fido.dialog?.form.wipeSecrets()
    state.fido.dialog = nil
}

private func showList(_ state: inout AppState, _ credentials: [FIDOCredential]) {
    let previous = state.fido.selected?.id
    state.fido.credentials = credentials
    state.fido.showCredentials = true
    let list = state.fido.sortedCredentials
    state.fido.selectedCredential = min(list.firstIndex { $0.id == previous } ?? state.fido.selectedCredential,
                                        max(0, list.count - 1))
}

/// What the user reads about a failure.
func fidoFailureText(_ reason: FIDOFailureReason, operation: FIDOOperation) -> UIText {
    switch reason {
    case .keyGone: return UIText("status.keyGoneMidOperation")
    case .notAvailable: return UIText("fido.notAvailable")
    case .wrongPIN(let r?):
        return UIText(operation == .changePIN ? "fido.wrongCurrentPIN" : "fido.wrongPIN", ["retries": String(r)])
    case .wrongPIN(nil): return UIText("fido.wrongPINUnknown")
    case .pinBlocked: return UIText("fido.alert.blocked")
    case .pinAuthBlocked: return UIText("fido.alert.reinsert")
    case .policyViolation: return UIText("fido.policyViolation")
    case .pinRule(let text): return text
    case .tokenInvalid: return UIText("fido.tokenInvalid")
    case .notAllowed: return UIText("fido.notAllowed")
    case .cancelled: return UIText(operation == .reset ? "fido.resetCancelled" : "fido.cancelled")
    case .timeout: return UIText(operation == .reset ? "fido.resetTimeout" : "fido.touchTimeout")
    case .noPIN: return UIText("fido.noPIN")
    case .noPINSupport: return UIText("fido.noPINSupport")
    case .other(let text): return text
    }
}

private func failed(_ state: inout AppState, _ failure: FIDOFailure) -> [Command] {
    state.fido.busy = nil
    let text = fidoFailureText(failure.reason, operation: failure.operation)
    switch failure.reason {
    case .keyGone:
        state.fido.dialog?.form.wipeSecrets()
        state.fido.dialog = nil
        state.status = StatusMessage(text, kind: .error)
        return []
    case .notAvailable:
        state.fido.dialog = nil
        state.fido.phase = .unavailable(text)
        return []
    case .wrongPIN(let retries):
        if let retries, var info = state.fido.info {
            info.retries = retries
            setInfo(&state, info)
        }
    case .pinBlocked:
        if var info = state.fido.info { info.retries = 0; setInfo(&state, info) }
        state.fido.alert = text
    case .pinAuthBlocked:
        if var info = state.fido.info { info.powerCycleNeeded = true; setInfo(&state, info) }
        state.fido.alert = text
    case .tokenInvalid:
        state.fido.hasToken = false
        if failure.operation == .list || failure.operation == .delete {
            // The token is gone (expired, or the key was re-inserted): ask for the PIN again.
            var dialog = pinDialog(.verifyPIN(thenList: true), state.fido.info)
            dialog.form.problem = text
            state.fido.dialog = dialog
            return []
        }
    default:
        break
    }
    if failure.operation == .load {
        state.fido.phase = .unavailable(text)
        return []
    }
    if var dialog = state.fido.dialog, !dialog.form.isConfirmation {
        // Stay in the PIN dialog: say what the key answered, empty the fields, and put the cursor where the
        // answer points (the current PIN when it was wrong, the new one when the key refused it).
        dialog.form.busy = false
        dialog.form.problem = text
        dialog.form.wipeSecrets()
        switch failure.reason {
        case .policyViolation, .pinRule: dialog.form.focus = dialog.kind == .changePIN ? 1 : 0
        default: dialog.form.focus = 0
        }
        switch failure.reason {
        case .pinBlocked, .pinAuthBlocked:
            state.fido.dialog = nil
            state.status = StatusMessage(text, kind: .error)
        default:
            state.fido.dialog = dialog
        }
        return []
    }
    state.fido.dialog = nil
    state.status = StatusMessage(text, kind: .error, expires: state.now + 2 * statusSeconds)
    return []
}

/// The reset's answer was a failure: too late after insertion means "remove and re-insert" (not possible
/// with the virtual demo key); anything else ends the reset.
private func resetFailed(_ state: inout AppState, _ failure: FIDOFailure) -> [Command] {
    state.fido.busy = nil
    if failure.reason == .notAllowed, !state.virtualMode, let key = state.selectedKey {
        var target = key.descriptor
        target.serial = target.serial ?? key.serial
        state.fido.reset = .removeKey(target)
        return []
    }
    state.fido.reset = nil
    let text = failure.reason == .notAllowed ? UIText("fido.notAllowedVirtual")
                                             : fidoFailureText(failure.reason, operation: .reset)
    state.status = StatusMessage(text, kind: failure.reason == .cancelled ? .warning : .error,
                                 expires: state.now + 2 * statusSeconds)
    return []
}

// MARK: - Keys

func fidoTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.fido.dialog != nil { return fidoDialogKey(&state, key) }
    if let stage = state.fido.reset {
        switch stage {
        case .sending:
            if key == .escape { return [.fido(.cancel)] }
        case .removeKey, .insertKey:
            if key == .escape {
                state.fido.reset = nil
                state.status = StatusMessage(UIText("fido.resetCancelled"), kind: .warning, expires: state.now + statusSeconds)
            }
        }
        return []
    }
    if state.fido.busy != nil {
        if key == .escape { return [.fido(.cancel)] }
        return []
    }
    guard let entry = state.selectedKey else { return [] }
    let info = state.fido.info
    let ready = state.fido.phase == .ready && info != nil
    if state.fido.showCredentials {
        let count = state.fido.sortedCredentials.count
        func move(_ to: Int) { state.fido.selectedCredential = max(0, min(max(0, count - 1), to)) }
        switch key {
        case .up, .char("k"): move(state.fido.selectedCredential - 1); return []
        case .down, .char("j"): move(state.fido.selectedCredential + 1); return []
        case .pageUp: move(state.fido.selectedCredential - 10); return []
        case .pageDown: move(state.fido.selectedCredential + 10); return []
        case .home, .char("g"): move(0); return []
        case .end, .char("G"): move(count - 1); return []
        case .escape:
            state.fido.showCredentials = false
            return []
        case .char("d"), .delete:
            guard let c = state.fido.selected else { return [] }
            let who = c.who ?? "?"
            let form = Form.confirmation(title: UIText("fido.delete.title", ["user": who, "rp": c.rpID]),
                                         note: UIText("fido.delete.note", ["rp": c.rpID]), askedAt: state.now)
            state.fido.dialog = FIDODialog(kind: .deleteCredential(id: c.id), form: form)
            return []
        default:
            break
        }
    }
    switch key {
    case .up, .char("k"): state.fido.infoScroll = max(0, state.fido.infoScroll - 1)
    case .down, .char("j"): state.fido.infoScroll = min(FIDOTabState.maxInfoScroll, state.fido.infoScroll + 1)
    case .pageUp, .home, .char("g"): state.fido.infoScroll = 0
    case .pageDown: state.fido.infoScroll = min(FIDOTabState.maxInfoScroll, state.fido.infoScroll + 5)
    case .char("s"):
        guard ready, let info else { return [] }
        if info.pinSet == nil { return note(&state, "fido.noPINSupport") }
        if info.pinSet == true { return note(&state, "fido.pinAlreadySet") }
        state.fido.dialog = pinDialog(.setPIN, info)
    case .char("c"):
        guard ready, let info else { return [] }
        if info.pinSet == nil { return note(&state, "fido.noPINSupport") }
        if info.pinSet == false { return note(&state, "fido.noPIN") }
        state.fido.dialog = pinDialog(.changePIN, info)
    case .char("v"):
        guard ready, let info else { return [] }
        if info.pinSet == nil { return note(&state, "fido.noPINSupport") }
        if info.pinSet == false { return note(&state, "fido.noPIN") }
        state.fido.dialog = pinDialog(.verifyPIN(thenList: false), info)
    case .char("l"):
        guard ready, let info else { return [] }
        if state.fido.showCredentials {
            state.fido.showCredentials = false
            return []
        }
        if !info.credentialManagement { return note(&state, "fido.noCredentialManagement") }
        if info.pinSet != true { return note(&state, "fido.listNeedsPIN") }
        if state.fido.hasToken {
            state.fido.busy = FIDOBusy(.list)
            return [.fido(.listCredentials(entry.descriptor))]
        }
        state.fido.dialog = pinDialog(.verifyPIN(thenList: true), info)
    case .char("R"):
        guard ready else { return [] }
        let form = Form.confirmation(title: UIText("fido.reset.title"), note: UIText("fido.reset.note"), askedAt: state.now)
        state.fido.dialog = FIDODialog(kind: .reset, form: form)
    case .char("r"):
        return fidoLoad(&state)
    default:
        break
    }
    return []
}

private func note(_ state: inout AppState, _ key: String) -> [Command] {
    state.status = StatusMessage(UIText(key), kind: .warning, expires: state.now + statusSeconds)
    return []
}

func pinDialog(_ kind: FIDODialogKind, _ info: FIDOInfo?) -> FIDODialog {
    let minimum = String(max(4, info?.minPINLength ?? 4))
    func field(_ label: String) -> Form.Field {
        // 63 bytes of UTF-8 are at most 63 characters; one more lets the rule be seen as it is broken.
        Form.Field(UIText(label), TextField(secret: true, maxLength: PINRules.maxBytes + 1))
    }
    var form: Form
    switch kind {
    case .setPIN:
        form = Form(title: UIText("fido.setPIN.title"), fields: [field("fido.pin.new"), field("fido.pin.confirm")],
                    note: UIText("fido.setPIN.note", ["minimum": minimum]))
    case .changePIN:
        form = Form(title: UIText("fido.changePIN.title"),
                    fields: [field("fido.pin.current"), field("fido.pin.new"), field("fido.pin.confirm")],
                    note: UIText("fido.changePIN.note", ["minimum": minimum]))
    case .verifyPIN(let thenList):
        form = Form(title: UIText(thenList ? "fido.listPIN.title" : "fido.verifyPIN.title"), fields: [field("fido.pin.pin")],
                    note: UIText(thenList ? "fido.listPIN.note" : "fido.verifyPIN.note"))
    case .deleteCredential, .reset:
        // Not a PIN dialog: confirmations are made where they are opened, with the time of the key that
        // opened them. One made here could never be answered yes (only Esc closes it).
        form = Form.confirmation(title: UIText("fido.reset.title"), askedAt: .infinity)
    }
    return FIDODialog(kind: kind, form: form)
}

/// What is wrong with the PIN dialog as typed so far; on submit, empty fields count too.
func fidoDialogProblem(_ dialog: FIDODialog, minimum: Int, submitting: Bool = false) -> UIText? {
    let form = dialog.form
    switch dialog.kind {
    case .setPIN, .changePIN:
        let first = dialog.kind == .changePIN ? 1 : 0
        let current = dialog.kind == .changePIN ? form[0] : nil
        let new = form[first], confirm = form[first + 1]
        if submitting, let current, current.isEmpty { return UIText("fido.pin.currentEmpty") }
        if !new.isEmpty || submitting || form.focus > first {
            if let problem = fidoPINProblem(new, minimum: minimum) { return problem }
        }
        // The confirmation is compared as it is typed: a wrong character shows at once.
        if (!confirm.isEmpty && !new.hasPrefix(confirm)) || (submitting && new != confirm) {
            return UIText("fido.pin.mismatch")
        }
        if submitting, let current, current == new { return UIText("fido.pin.same") }
    case .verifyPIN:
        if submitting && form[0].isEmpty { return UIText("fido.pin.empty") }
        if form[0].utf8.count > PINRules.maxBytes { return UIText("fido.pin.tooLong", ["bytes": String(form[0].utf8.count)]) }
    case .deleteCredential, .reset:
        return nil
    }
    return nil
}

func fidoDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    guard var dialog = state.fido.dialog else { return [] }
    let minimum = state.fido.info?.minPINLength ?? 4
    switch dialog.form.handle(key, now: state.now) {
    case .cancel:
        let wasBusy = dialog.form.busy
        dialog.form.wipeSecrets()
        state.fido.dialog = nil
        // A dialog closed while its command runs: the answer still comes, in the status line.
        return wasBusy ? [.fido(.cancel)] : []
    case .editing:
        if !dialog.form.busy { dialog.form.problem = fidoDialogProblem(dialog, minimum: minimum) }
        state.fido.dialog = dialog
        return []
    case .submit:
        if let problem = fidoDialogProblem(dialog, minimum: minimum, submitting: true) {
            dialog.form.problem = problem
            state.fido.dialog = dialog
            return []
        }
        guard let entry = state.selectedKey else {
            dialog.form.wipeSecrets()
            state.fido.dialog = nil
            return []
        }
        let d = entry.descriptor
        let command: FIDOTabCommand
        switch dialog.kind {
        case .setPIN:
            command = .setPIN(d, new: dialog.form[0])
            state.fido.busy = FIDOBusy(.setPIN)
        case .changePIN:
            command = .changePIN(d, current: dialog.form[0], new: dialog.form[1])
            state.fido.busy = FIDOBusy(.changePIN)
        case .verifyPIN(let thenList):
            command = .verifyPIN(d, pin: dialog.form[0], thenList: thenList)
            state.fido.busy = FIDOBusy(.verifyPIN)
        case .deleteCredential(let id):
            guard let c = state.fido.credentials?.first(where: { $0.id == id }) else {
                state.fido.dialog = nil
                return []
            }
            command = .deleteCredential(d, credentialID: c.credentialID)
            state.fido.busy = FIDOBusy(.delete)
            state.fido.dialog = nil
            return [.fido(command)]
        case .reset:
            state.fido.dialog = nil
            state.fido.reset = .sending(keyID: d.id)
            state.fido.busy = FIDOBusy(.reset)
            state.fido.hasToken = false
            return [.fido(.reset(d))]
        }
        // The PIN leaves the state with the command.
        dialog.form.wipeSecrets()
        dialog.form.busy = true
        dialog.form.problem = nil
        state.fido.dialog = dialog
        return [.fido(command)]
    }
}

// MARK: - Opening, time, keys coming and going

/// Reads the information of the selected key again.
func fidoLoad(_ state: inout AppState) -> [Command] {
    guard let entry = state.selectedKey, state.fido.busy == nil, state.fido.reset == nil else { return [] }
    state.fido.keyID = entry.id
    guard entry.descriptor.has(.fido) else {
        state.fido.info = nil
        state.fido.phase = .unavailable(UIText("fido.notOnKey", ["interfaces": entry.descriptor.interfaces
            .map { $0.rawValue.uppercased() }.joined(separator: "+")]))
        return []
    }
    if state.fido.info == nil { state.fido.phase = .loading }
    state.fido.busy = FIDOBusy(.load)
    return [.fido(.load(entry.descriptor))]
}

func fidoTabOpened(_ state: inout AppState) -> [Command] {
    guard state.selectedKey != nil else {
        state.fido.phase = .noKey
        return []
    }
    return fidoLoad(&state)
}

func fidoTabTick(_ state: inout AppState) -> [Command] { [] }

/// The selected key gained or lost its FIDO interface: what the tab showed of it is read again.
func fidoTabInterfacesChanged(_ state: inout AppState) -> [Command] {
    guard state.fido.reset == nil, state.fido.busy == nil else { return [] }
    state.fido.dialog = nil
    state.fido.credentials = nil
    state.fido.showCredentials = false
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
            || (target.serial != nil && target.serial == d.serial) else { return [] }
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
    guard var dialog = state.fido.dialog, dialog.form.paste(text) else { return false }
    dialog.form.problem = fidoDialogProblem(dialog, minimum: state.fido.info?.minPINLength ?? 4)
    state.fido.dialog = dialog
    return true
}

/// The tab's keys, for the help overlay.
func fidoTabHelp(_ state: AppState) -> [HelpEntry] {
    [
        HelpEntry("s", UIText("fido.help.set")),
        HelpEntry("c", UIText("fido.help.change")),
        HelpEntry("v", UIText("fido.help.verify")),
        HelpEntry("l", UIText("fido.help.list")),
        HelpEntry("d / Del", UIText("fido.help.delete")),
        HelpEntry("R", UIText("fido.help.reset")),
        HelpEntry("r", UIText("fido.help.reload")),
        HelpEntry("Enter / Esc", UIText("fido.help.dialog")),
    ]
}

extension FIDOTabState {
    /// A bound on the information's scrolling; the view shows no further than its last line.
    public static let maxInfoScroll = 40
}
