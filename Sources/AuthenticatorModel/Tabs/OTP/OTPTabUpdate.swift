import KeyKit

// MARK: - Routing

func otpTabOpened(_ state: inout AppState) -> [Command] {
    state.otp.detector.reset()
    state.otp.lastCharacter = nil
    state.otp.deferred = nil
    state.otp.slowCharacters = 0
    return autoReadNDEF(&state) + autoReadSlots(&state)
}

/// Reads the selected key's slot status when the tab is open and it was not read for this key yet: over
/// the reader, or over the OTP HID interface when the key has no OTP application there.
func autoReadSlots(_ state: inout AppState) -> [Command] {
    guard state.tab == .otp, let key = state.selectedKey, key.descriptor.has(.otp),
        state.otp.slots?.keyID != key.id
    else { return [] }
    state.otp.slots = OTPSlots(keyID: key.id, status: nil)
    return [.otp(.readSlots(key.descriptor))]
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
        state.otp.ndefReadKeyID != key.id, state.otp.busy == nil
    else { return [] }
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
        if busy == .challenge || busy == .slots {
            state.otp.form = nil
            state.otp.slotDialog = nil
            state.status = StatusMessage(
                UIText("status.keyGoneMidOperation"), kind: .error, subject: .operationCutShort)
        }
    } else if state.otp.form != nil || state.otp.slotDialog != nil {
        let problem = UIText(state.selectedKey == nil ? "otp.noKey" : "otp.keyChanged")
        state.otp.form?.problem = problem
        state.otp.slotDialog?.form.problem = problem
    }
    if state.otp.slots?.keyID != state.selectedKeyID { state.otp.slots = nil }
    return autoReadNDEF(&state) + autoReadSlots(&state)
}

func otpTabUpdate(_ state: inout AppState, _ msg: OTPTabMsg) -> [Command] {
    switch msg {
    case .slotsRead(let slots):
        guard slots.keyID == state.selectedKeyID else { return [] }
        state.otp.slots = slots
        return []
    case .slotsWritten(let write, let slots):
        if state.otp.busy == .slots { state.otp.busy = nil }
        state.otp.slotDialog = nil
        guard slots.keyID == state.selectedKeyID else { return [] }
        state.otp.slots = slots
        let text: UIText
        switch write {
        case .programmed(let slot, let secrets):
            state.otp.programmed = secrets
            text = UIText("otp.slots.programmed", ["slot": String(slot)])
        case .swapped: text = UIText("otp.slots.swapped")
        case .deleted(let slot): text = UIText("otp.slots.deleted", ["slot": String(slot)])
        case .accessCodeChanged(let slot, let removed):
            text = UIText(removed ? "otp.slots.access.removed" : "otp.slots.access.set", ["slot": String(slot)])
        }
        state.status = StatusMessage(text, kind: .success, expires: state.now + statusSeconds)
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
        if !state.otp.waitingForTouch { state.alertTouch(UIText("touch.for.otp.challenge")) }
        state.otp.waitingForTouch = true
    case .challengeAnswered(let keyID, let slot, let challenge, let response):
        guard keyID == state.selectedKeyID else { return [] }
        state.otp.busy = nil
        state.otp.waitingForTouch = false
        state.otp.form = nil
        state.otp.response = ChallengeResponseResult(
            keyID: keyID, slot: slot, challenge: challenge.hex,
            response: response.hex)
        state.status = StatusMessage(
            UIText("otp.chalresp.done", ["slot": String(slot)]), kind: .success,
            expires: state.now + statusSeconds)
    case .failed(let keyID, let failure):
        if let keyID, keyID != state.selectedKeyID { return [] }
        state.otp.busy = nil
        state.otp.waitingForTouch = false
        if failure.operation == .slots {
            // The dialog stays for another try (a wrong access code, say); its secrets were wiped.
            if state.otp.slotDialog != nil && !failure.keyGone {
                state.otp.slotDialog?.form.busy = false
                state.otp.slotDialog?.form.problem = failure.message
                return []
            }
            state.otp.slotDialog = nil
        }
        if failure.operation == .challenge, state.otp.form != nil, !failure.keyGone {
            state.otp.form?.busy = false
            state.otp.form?.problem = failure.message
            return []
        }
        if failure.operation == .challenge { state.otp.form = nil }
        var message = failure.message
        // A card on an NFC reader that has no tag is not one to hold on a reader: say what it lacks.
        if failure.operation == .ndef, failure.applicationMissing, state.selectedKey?.info?.overNFC == true {
            message = UIText("otp.ndef.noTag")
        }
        state.status = StatusMessage(
            failure.keyGone ? UIText("status.keyGoneMidOperation") : message, kind: .error,
            subject: failure.keyGone ? .operationCutShort : nil)
    }
    return []
}

// MARK: - Keys

func otpTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.otp.resolving { return [] }
    if state.otp.form != nil { return challengeFormKey(&state, key) }
    if state.otp.slotDialog != nil { return slotDialogKey(&state, key) }
    if state.otp.programmed != nil {
        // The values shown once: Esc or Enter puts them away (a key's typing is not taken for either).
        if key == .escape || key == .enter { state.otp.programmed = nil }
        return []
    }
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
        || c == OTPTabState.programKey || c == OTPTabState.swapKey || c == OTPTabState.deleteKey
        || c == OTPTabState.accessCodeKey
}

/// One character (Enter as "\r") into the burst detector, at `state.now`.
func feed(_ state: inout AppState, _ c: Character) -> [Command] {
    let isEnter = c == "\r"
    let gap = state.otp.detector.maxGap
    let startsBurst =
        state.otp.detector.pending.isEmpty || (state.otp.lastCharacter.map { state.now - $0 > gap } ?? true)
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
    if c == OTPTabState.programKey { return openSlotDialog(&state, .program) }
    if c == OTPTabState.swapKey { return openSlotDialog(&state, .swap) }
    if c == OTPTabState.deleteKey { return openSlotDialog(&state, .delete) }
    if c == OTPTabState.accessCodeKey { return openSlotDialog(&state, .accessCode) }
    return []
}

/// Whether `c` is taken by the app before the tab (tab numbers, quit, help, keys, device).
func isGlobalAction(_ state: AppState, _ c: Character) -> Bool {
    if Tab.numberKeys.contains(c) { return true }
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
    var entry = OTPCaptureEntry(
        time: state.now, source: source, kind: c.kind,
        text: c.kind == .staticPassword ? nil : c.text, length: c.raw.count,
        layout: c.layout, publicID: c.publicID, serial: c.serial, code: c.code,
        decryption: .noKey)
    if c.kind == .yubicoOTP, let id = c.publicID, let key = state.otp.aesKeys[id.lowercased()] {
        if let d = try? YubicoOTP.decrypt(c.text, key: key), d.crcOK {
            let t = d.token
            var decoded = OTPCaptureEntry.Decoded(
                privateID: t.privateID.hex, usageCounter: Int(t.usageCounter),
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
