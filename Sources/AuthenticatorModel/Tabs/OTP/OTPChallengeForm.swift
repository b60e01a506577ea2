import KeyKit

// MARK: - Challenge-response form

/// The fields of the challenge-response form.
public enum ChallengeField: String, FormFieldID { case slot, challenge }

func openChallengeForm(_ state: inout AppState) -> [Command] {
    guard state.selectedKey != nil else {
        state.status = StatusMessage(UIText("otp.noKey"), kind: .warning, expires: state.now + statusSeconds)
        return []
    }
    var form = Form(
        title: UIText("otp.chalresp.title"),
        fields: [
            Form.Field(ChallengeField.slot, UIText("otp.chalresp.slot"), TextField("2"), choices: ["1", "2"]),
            Form.Field(ChallengeField.challenge, UIText("otp.chalresp.challenge"), TextField(maxLength: 200)),
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
        form.problem = form[ChallengeField.challenge].isEmpty ? nil : challengeProblem(form[ChallengeField.challenge])
        state.otp.form = form
        return []
    case .submit:
        if let problem = challengeProblem(form[ChallengeField.challenge]) {
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
        guard let challenge = try? Hex.decode(form[ChallengeField.challenge].filter { $0 != " " }) else { return [] }
        let slot = form[ChallengeField.slot] == "1" ? 1 : 2
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
    if state.otp.slotDialog != nil { return slotDialogPaste(&state, text) }
    if state.otp.programmed != nil { return false }
    if var form = state.otp.form {
        guard form.paste(text) else { return false }
        form.problem = form[ChallengeField.challenge].isEmpty ? nil : challengeProblem(form[ChallengeField.challenge])
        state.otp.form = form
        return true
    }
    let line = text.trimmingWhitespace
    guard !line.isEmpty, !line.contains(where: \.isNewline), line.count <= OTPTabState.maxPastedOTP else {
        return false
    }
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
        HelpEntry(String(OTPTabState.programKey), UIText("otp.help.program")),
        HelpEntry(String(OTPTabState.swapKey), UIText("otp.help.swap")),
        HelpEntry(String(OTPTabState.deleteKey), UIText("otp.help.delete")),
        HelpEntry(String(OTPTabState.accessCodeKey), UIText("otp.help.accessCode")),
        HelpEntry("Up/Down", UIText("otp.help.select")),
        HelpEntry("Del", UIText("otp.help.clear")),
        HelpEntry("", UIText("otp.help.typing")),
    ]
}
