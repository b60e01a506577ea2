import KeyKit

/// One thing a key typed (or its NDEF tag held, or the virtual key's touch gave), classified and, when an AES
/// key is configured for its public ID, decrypted.
public struct OTPCaptureEntry: Sendable, Hashable {
    public enum Source: Sendable, Hashable { case typed, touch, ndef, pasted }

    /// The fields of a decrypted Yubico OTP whose CRC checked.
    public struct Decoded: Sendable, Hashable {
        /// Hex.
        public var privateID: String
        /// The non-volatile usage counter (yubiotp's `session`).
        public var usageCounter: Int
        /// OTPs since power-up (yubiotp's `counter`).
        public var sessionCounter: Int
        /// The 8 Hz timer, 24 bits.
        public var timestamp: Int
        /// True when the counters are not after those of an earlier capture of the same public ID.
        public var replayed: Bool

        public init(privateID: String, usageCounter: Int, sessionCounter: Int, timestamp: Int, replayed: Bool = false) {
            self.privateID = privateID
            self.usageCounter = usageCounter
            self.sessionCounter = sessionCounter
            self.timestamp = timestamp
            self.replayed = replayed
        }
    }

    public enum Decryption: Sendable, Hashable {
        /// Not a Yubico OTP, or no AES key is configured for its public ID.
        case noKey
        case decoded(Decoded)
        /// The configured key gives a token whose CRC fails: a wrong key, or an altered OTP.
        case wrongKey
    }

    public var time: Double
    public var source: Source
    public var kind: OTPKind
    /// Yubico OTP and OATH-HOTP: the text as the key meant it. A static password is a secret and is not kept.
    public var text: String?
    /// Characters captured.
    public var length: Int
    public var layout: KeyboardLayout
    /// Yubico OTP: the modhex public ID; HOTP: the token identifier, when present.
    public var publicID: String?
    public var serial: UInt32?
    /// HOTP: the code.
    public var code: String?
    public var decryption: Decryption
}

/// The Yubico OTP form of the challenge-response answer shown under the captures.
public struct ChallengeResponseResult: Sendable, Hashable {
    public var keyID: String
    public var slot: Int
    /// Hex, as entered (normalised: lowercase, no spaces).
    public var challenge: String
    /// Hex.
    public var response: String
}

/// A bound character that arrived when no burst was going on: a key's OTP may start with it (modhex letters,
/// digits), so it is performed only when no further character follows within the burst gap.
public struct DeferredKey: Sendable, Hashable {
    public var character: Character
    public var time: Double
}

/// The OTP tab's state: the captures, the burst in progress, the challenge-response form and its answer.
///
/// Keyboard: while the tab is shown it listens, so every printable key comes to it (`textFocused` is true)
/// and a key's OTP is never taken as bindings. A bound character (`q`, `?`, `K`, `i`, `1`-`4`, and the tab's
/// `x` and `T`) that does not belong to a burst is performed once `detector.maxGap` has passed with no
/// further character (`wakeAt` tells the app loop when to look again), or at once when a key no key types
/// follows. The tab's other bindings are such keys: F5 / Ctrl-R read NDEF, Ctrl-T touches the virtual key,
/// Up/Down choose a capture, Del clears.
///
/// NFC: when the selected key is on an NFC reader (its ATR says so), the tab reads its NDEF tag by itself,
/// once each time the key is presented (or selected) while the tab is open.
public struct OTPTabState: Sendable {
    /// Yubico OTP AES keys by public ID (lowercase modhex), from the configuration (and, in `--virtual`
    /// mode, the virtual key's own). Secret: never shown, never logged.
    public var aesKeys: [String: [UInt8]] = [:]
    /// The config file's `[otp] parsers`: patterns that find the OTP in what a key types (a URL, say).
    public var parsers: [Config.OTPPattern] = []
    /// Newest first, at most `maxCaptures`.
    public var captures: [OTPCaptureEntry] = []
    public var selected = 0
    public var detector = BurstDetector()
    /// When the last character of the current burst came (nil: no burst).
    public var lastCharacter: Double?
    public var deferred: DeferredKey?
    /// Set while a deferred binding is performed through the app's key routing.
    var resolving = false
    /// The challenge-response form.
    public var form: Form?
    public var busy: Busy?
    /// The challenge-response slot waits for a touch.
    public var waitingForTouch = false
    public var response: ChallengeResponseResult?
    /// The last thing typed too slowly for a key: how many characters were ignored.
    public var ignoredTyping: Int?
    /// Characters dropped from bursts that a pause ended (typed by hand) since the last Enter.
    var slowCharacters = 0
    /// The key whose NDEF tag was read when it was found on an NFC reader (read once per arrival).
    public var ndefReadKeyID: String?

    public enum Busy: Sendable, Hashable { case ndef, challenge, touch }

    public static let maxCaptures = 100
    /// The tab's own printable bindings (deferred like the global ones).
    public static let challengeKey: Character = "x"
    public static let touchKey: Character = "T"

    public init(aesKeys: [String: [UInt8]] = [:]) {
        self.aesKeys = aesKeys
    }

    /// The tab listens to every key; false only while a deferred binding is handed to the global bindings.
    public var textFocused: Bool { !resolving }

    /// When the app should send a tick so a deferred binding is performed (nil: nothing pending).
    public var wakeAt: Double? { deferred.map { $0.time + detector.maxGap + 0.01 } }

    /// Characters of the burst in progress.
    public var pendingCount: Int { detector.pending.count }

    /// True while a burst is coming in (two characters or more within the gap): a key is typing.
    public var receiving: Bool { pendingCount >= 2 }

    public var selectedCapture: OTPCaptureEntry? {
        captures.indices.contains(selected) ? captures[selected] : nil
    }
}

/// Answers of the OTP tab's commands.
public enum OTPTabMsg: Sendable {
    /// The virtual key's touch typed this (nil: the backend cannot be touched from software).
    case touched(String?)
    case ndefRead(keyID: String, otp: String)
    case challengeWaitingForTouch(keyID: String)
    case challengeAnswered(keyID: String, slot: Int, challenge: [UInt8], response: [UInt8])
    case failed(keyID: String?, OTPTabFailure)
}

/// Why an OTP tab command failed.
public struct OTPTabFailure: Sendable, Equatable {
    public enum Operation: Sendable, Equatable { case ndef, challenge, touch }
    public var operation: Operation
    public var message: UIText
    public var keyGone: Bool

    public init(operation: Operation, message: UIText, keyGone: Bool = false) {
        self.operation = operation
        self.message = message
        self.keyGone = keyGone
    }
}

public enum OTPTabCommand: Sendable, Equatable {
    /// Ask the backend for the OTP a touch of the (virtual) key types.
    case touch
    case readNDEF(KeyDescriptor)
    case challengeResponse(KeyDescriptor, slot: Int, challenge: [UInt8])
}

// MARK: - Routing

func otpTabOpened(_ state: inout AppState) -> [Command] {
    state.otp.detector.reset()
    state.otp.lastCharacter = nil
    state.otp.deferred = nil
    state.otp.slowCharacters = 0
    return autoReadNDEF(&state)
}

/// The key `id` was probed: when it is the selected one and sits on an NFC reader, its tag is read.
func otpTabProbed(_ state: inout AppState, _ id: String) -> [Command] {
    guard id == state.selectedKeyID else { return [] }
    return autoReadNDEF(&state)
}

/// Reads the selected key's NDEF tag when the tab is open, the key is on an NFC reader and its tag was not
/// read since it arrived (or was selected).
func autoReadNDEF(_ state: inout AppState) -> [Command] {
    guard state.tab == .otp, let key = state.selectedKey, key.info?.overNFC == true,
          state.otp.ndefReadKeyID != key.id, state.otp.busy == nil else { return [] }
    state.otp.ndefReadKeyID = key.id
    state.otp.busy = .ndef
    return [.otp(.readNDEF(key.descriptor))]
}

func otpTabTick(_ state: inout AppState) -> [Command] {
    guard state.otp.deferred != nil else { return [] }
    guard state.tab == .otp else {
        state.otp.deferred = nil
        state.otp.detector.reset()
        state.otp.lastCharacter = nil
        return []
    }
    guard let due = state.otp.wakeAt, state.now >= due - 0.01 else { return [] }
    return resolveDeferred(&state)
}

func otpTabKeyChanged(_ state: inout AppState) -> [Command] {
    if let r = state.otp.response, r.keyID != state.selectedKeyID { state.otp.response = nil }
    state.otp.ndefReadKeyID = nil
    if let busy = state.otp.busy, busy != .touch {
        // The key the work was for left (its answer, if any, is for a key no longer selected).
        state.otp.busy = nil
        state.otp.waitingForTouch = false
        if busy == .challenge {
            state.otp.form = nil
            state.status = StatusMessage(UIText("status.keyGoneMidOperation"), kind: .error)
        }
    } else if state.otp.form != nil {
        let problem = UIText(state.selectedKey == nil ? "otp.noKey" : "otp.keyChanged")
        state.otp.form?.problem = problem
    }
    return autoReadNDEF(&state)
}

func otpTabUpdate(_ state: inout AppState, _ msg: OTPTabMsg) -> [Command] {
    switch msg {
    case .touched(let otp):
        if state.otp.busy == .touch { state.otp.busy = nil }
        guard let otp else {
            state.status = StatusMessage(UIText("otp.touchRealKey"), kind: .info, expires: state.now + statusSeconds)
            return []
        }
        capture(&state, otp, source: .touch)
    case .ndefRead(let keyID, let otp):
        guard keyID == state.selectedKeyID else { return [] }
        if state.otp.busy == .ndef { state.otp.busy = nil }
        capture(&state, otp, source: .ndef)
    case .challengeWaitingForTouch(let keyID):
        guard keyID == state.selectedKeyID, state.otp.busy == .challenge else { return [] }
        state.otp.waitingForTouch = true
    case .challengeAnswered(let keyID, let slot, let challenge, let response):
        guard keyID == state.selectedKeyID else { return [] }
        state.otp.busy = nil
        state.otp.waitingForTouch = false
        state.otp.form = nil
        state.otp.response = ChallengeResponseResult(keyID: keyID, slot: slot, challenge: challenge.hex,
                                                     response: response.hex)
        state.status = StatusMessage(UIText("otp.chalresp.done", ["slot": String(slot)]), kind: .success,
                                     expires: state.now + statusSeconds)
    case .failed(let keyID, let failure):
        if let keyID, keyID != state.selectedKeyID { return [] }
        state.otp.busy = nil
        state.otp.waitingForTouch = false
        if failure.operation == .challenge, state.otp.form != nil, !failure.keyGone {
            state.otp.form?.busy = false
            state.otp.form?.problem = failure.message
            return []
        }
        if failure.operation == .challenge { state.otp.form = nil }
        var message = failure.message
        // A card on an NFC reader that has no tag is not one to hold on a reader: say what it lacks.
        if failure.operation == .ndef, message.key == "otp.ndef.notAvailable", state.selectedKey?.info?.overNFC == true {
            message = UIText("otp.ndef.noTag")
        }
        state.status = StatusMessage(failure.keyGone ? UIText("status.keyGoneMidOperation") : message, kind: .error)
    }
    return []
}

// MARK: - Keys

func otpTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.otp.resolving { return [] }
    if state.otp.form != nil { return challengeFormKey(&state, key) }
    var commands = [Command]()
    if let d = state.otp.deferred {
        let typed: Bool
        switch key {
        case .char, .enter: typed = true
        default: typed = false
        }
        if state.now - d.time > state.otp.detector.maxGap || !typed {
            // No tick came in between, or a key no key types followed: the bound one was pressed alone.
            // Perform the binding, then this key as if it came after it.
            commands = resolveDeferred(&state)
            if state.quitting { return commands }
            return commands + handleKey(&state, key)
        }
        // Another character within the gap: the bound one began a burst.
        state.otp.deferred = nil
    }
    switch key {
    case .char(let c):
        return commands + feed(&state, c)
    case .enter:
        return commands + feed(&state, "\r")
    case .up:
        state.otp.selected = max(0, state.otp.selected - 1)
    case .down:
        state.otp.selected = min(max(0, state.otp.captures.count - 1), state.otp.selected + 1)
    case .home:
        state.otp.selected = 0
    case .end:
        state.otp.selected = max(0, state.otp.captures.count - 1)
    case .function(5), .ctrl("r"):
        return commands + readNDEF(&state)
    case .ctrl("t"):
        return commands + touch(&state)
    case .delete:
        state.otp.captures = []
        state.otp.selected = 0
        state.otp.response = nil
        state.otp.ignoredTyping = nil
    case .escape:
        state.otp.ignoredTyping = nil
        state.otp.slowCharacters = 0
        state.otp.detector.reset()
        state.otp.lastCharacter = nil
    default:
        break
    }
    return commands
}

/// Characters that do something when typed alone: the global bindings and the tab's own.
func otpBound(_ state: AppState, _ c: Character) -> Bool {
    isGlobalAction(state, c) || c == OTPTabState.challengeKey || c == OTPTabState.touchKey
}

/// One character (Enter as "\r") into the burst detector, at `state.now`.
func feed(_ state: inout AppState, _ c: Character) -> [Command] {
    let isEnter = c == "\r"
    let gap = state.otp.detector.maxGap
    let startsBurst = state.otp.detector.pending.isEmpty || (state.otp.lastCharacter.map { state.now - $0 > gap } ?? true)
    // A pause ends a burst: what it held was typed by hand (or is the tail of a burst without Enter).
    if startsBurst && !isEnter { state.otp.slowCharacters += state.otp.detector.pending.count }
    let event = state.otp.detector.feed(c, at: state.now)
    state.otp.lastCharacter = isEnter ? nil : state.now
    if startsBurst && !isEnter && otpBound(state, c) {
        state.otp.deferred = DeferredKey(character: c, time: state.now)
    }
    switch event {
    case .captured(let text)?:
        state.otp.ignoredTyping = nil
        state.otp.slowCharacters = 0
        capture(&state, text, source: .typed)
    case .rejected(let text)?:
        state.otp.ignoredTyping = state.otp.slowCharacters + text.count
        state.otp.slowCharacters = 0
    case nil:
        break
    }
    return []
}

/// Performs the deferred binding: the character was a key press of its own, not the start of a burst.
func resolveDeferred(_ state: inout AppState) -> [Command] {
    guard let d = state.otp.deferred else { return [] }
    state.otp.deferred = nil
    state.otp.detector.reset()
    state.otp.lastCharacter = nil
    let c = d.character
    if isGlobalAction(state, c) {
        state.otp.resolving = true
        defer { state.otp.resolving = false }
        return handleKey(&state, .char(c))
    }
    if c == OTPTabState.challengeKey { return openChallengeForm(&state) }
    if c == OTPTabState.touchKey { return touch(&state) }
    return []
}

/// Whether `c` is taken by the app before the tab (tab numbers, quit, help, keys, device).
func isGlobalAction(_ state: AppState, _ c: Character) -> Bool {
    if ["1", "2", "3", "4"].contains(c) { return true }
    switch state.bindings.action(for: .char(c)) {
    case .quit?, .help?, .keys?, .device?: return true
    default: return false
    }
}

// MARK: - Captures

/// Classifies what arrived (typed in a burst, touched, or read from NDEF), decrypts it when its AES key is
/// configured, and puts it at the top of the list.
func capture(_ state: inout AppState, _ raw: String, source: OTPCaptureEntry.Source) {
    var parsed = raw
    if source != .ndef {  // NDEF records went through the parsers when they were read
        for parser in state.otp.parsers {
            if let otp = parser.firstMatch(in: raw) {
                parsed = otp
                break
            }
        }
    }
    let c = OTPClassifier.classify(parsed)
    var entry = OTPCaptureEntry(time: state.now, source: source, kind: c.kind,
                                text: c.kind == .staticPassword ? nil : c.text, length: c.raw.count,
                                layout: c.layout, publicID: c.publicID, serial: c.serial, code: c.code,
                                decryption: .noKey)
    if c.kind == .yubicoOTP, let id = c.publicID, let key = state.otp.aesKeys[id.lowercased()] {
        if let d = try? YubicoOTP.decrypt(c.text, key: key), d.crcOK {
            let t = d.token
            var decoded = OTPCaptureEntry.Decoded(privateID: t.privateID.hex, usageCounter: Int(t.usageCounter),
                                                  sessionCounter: Int(t.sessionCounter), timestamp: Int(t.timestamp))
            // A genuine OTP has counters after every earlier one of its public ID.
            decoded.replayed = state.otp.captures.contains { earlier in
                guard earlier.publicID == c.publicID, case .decoded(let e) = earlier.decryption else { return false }
                return (decoded.usageCounter, decoded.sessionCounter) <= (e.usageCounter, e.sessionCounter)
            }
            entry.decryption = .decoded(decoded)
        } else {
            entry.decryption = .wrongKey
        }
    }
    state.otp.captures.insert(entry, at: 0)
    if state.otp.captures.count > OTPTabState.maxCaptures { state.otp.captures.removeLast() }
    state.otp.selected = 0
    let kind: StatusMessage.Kind = entry.decryption == .wrongKey ? .warning : .success
    let text: String
    switch entry.kind {
    case .yubicoOTP: text = entry.decryption == .wrongKey ? "otp.status.wrongKey" : "otp.status.yubico"
    case .oathHOTP: text = "otp.status.hotp"
    case .staticPassword: text = "otp.status.static"
    }
    state.status = StatusMessage(UIText(text), kind: kind, expires: state.now + statusSeconds)
}

// MARK: - Work

func readNDEF(_ state: inout AppState) -> [Command] {
    guard let key = state.selectedKey else {
        state.status = StatusMessage(UIText("otp.noKey"), kind: .warning, expires: state.now + statusSeconds)
        return []
    }
    guard state.otp.busy == nil else { return [] }
    state.otp.busy = .ndef
    return [.otp(.readNDEF(key.descriptor))]
}

func touch(_ state: inout AppState) -> [Command] {
    guard state.virtualMode else {
        state.status = StatusMessage(UIText("otp.touchRealKey"), kind: .info, expires: state.now + statusSeconds)
        return []
    }
    guard state.otp.busy == nil else { return [] }
    state.otp.busy = .touch
    return [.otp(.touch)]
}

// MARK: - Challenge-response form

func openChallengeForm(_ state: inout AppState) -> [Command] {
    guard state.selectedKey != nil else {
        state.status = StatusMessage(UIText("otp.noKey"), kind: .warning, expires: state.now + statusSeconds)
        return []
    }
    var form = Form(title: UIText("otp.chalresp.title"), fields: [
        Form.Field(UIText("otp.chalresp.slot"), TextField("2"), choices: ["1", "2"]),
        Form.Field(UIText("otp.chalresp.challenge"), TextField(maxLength: 200)),
    ], note: UIText("otp.chalresp.note"))
    form.focus = 1
    state.otp.form = form
    return []
}

/// Why `text` is not a challenge, or nil: hex digits (spaces allowed), whole bytes, 1 to 64 of them.
public func challengeProblem(_ text: String) -> UIText? {
    let digits = text.filter { $0 != " " }
    if digits.isEmpty { return UIText("otp.chalresp.empty") }
    if let bad = digits.first(where: { !$0.isHexDigit }) { return UIText("otp.chalresp.notHex", ["char": String(bad)]) }
    if digits.count % 2 != 0 { return UIText("otp.chalresp.odd") }
    if digits.count / 2 > 64 { return UIText("otp.chalresp.tooLong", ["count": String(digits.count / 2)]) }
    return nil
}

func challengeFormKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    guard var form = state.otp.form else { return [] }
    let outcome = form.handle(key, now: state.now)
    switch outcome {
    case .cancel:
        state.otp.form = nil
        return []
    case .editing:
        form.problem = form[1].isEmpty ? nil : challengeProblem(form[1])
        state.otp.form = form
        return []
    case .submit:
        if let problem = challengeProblem(form[1]) {
            form.problem = problem
            form.focus = 1
            state.otp.form = form
            return []
        }
        guard let key = state.selectedKey else {
            form.problem = UIText("otp.noKey")
            state.otp.form = form
            return []
        }
        guard let challenge = try? Hex.decode(form[1].filter { $0 != " " }) else { return [] }
        let slot = form[0] == "1" ? 1 : 2
        form.busy = true
        form.problem = nil
        state.otp.form = form
        state.otp.busy = .challenge
        state.otp.waitingForTouch = false
        return [.otp(.challengeResponse(key.descriptor, slot: slot, challenge: challenge))]
    }
}

/// Pasted text on the OTP tab: into the challenge-response form, or, as one line, an OTP to decode (as if
/// the key had typed it). Several lines are not an OTP: false, and the paste is dropped.
func otpTabPaste(_ state: inout AppState, _ text: String) -> Bool {
    if var form = state.otp.form {
        guard form.paste(text) else { return false }
        form.problem = form[1].isEmpty ? nil : challengeProblem(form[1])
        state.otp.form = form
        return true
    }
    let line = text.trimmingWhitespace
    guard !line.isEmpty, !line.contains(where: \.isNewline), line.count <= OTPTabState.maxPastedOTP else { return false }
    capture(&state, line, source: .pasted)
    return true
}

extension OTPTabState {
    /// The longest pasted line taken as an OTP (a URL with an OTP in it fits).
    public static let maxPastedOTP = 512
}

/// The tab's keys, for the help overlay.
func otpTabHelp(_ state: AppState) -> [HelpEntry] {
    [
        HelpEntry("F5 / Ctrl-R", UIText("otp.help.ndef")),
        HelpEntry(String(OTPTabState.challengeKey), UIText("otp.help.challenge")),
        HelpEntry("\(OTPTabState.touchKey) / Ctrl-T", UIText("otp.help.touch")),
        HelpEntry("Up/Down", UIText("otp.help.select")),
        HelpEntry("Del", UIText("otp.help.clear")),
        HelpEntry("", UIText("otp.help.typing")),
    ]
}
