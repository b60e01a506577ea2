import KeyKit

/// The OTP tab: OTPs typed by a key's touch, the NDEF tag on NFC, challenge-response.
enum OTPTab: TabModel {
    static let tab = Tab.otp
    static let application: KeyApplication? = .otp

    static func update(_ state: inout AppState, _ msg: Msg) -> [Command]? {
        guard case .otp(let m) = msg else { return nil }
        return otpTabUpdate(&state, m)
    }

    static func keyPress(_ state: inout AppState, _ key: KeyPress) -> [Command] { otpTabKey(&state, key) }
    static func paste(_ state: inout AppState, _ text: String) -> Bool { otpTabPaste(&state, text) }
    static func opened(_ state: inout AppState) -> [Command] { otpTabOpened(&state) }
    static func tick(_ state: inout AppState) -> [Command] { otpTabTick(&state) }
    static func selectedKeyChanged(_ state: inout AppState) -> [Command] { otpTabKeyChanged(&state) }
    static func probed(_ state: inout AppState, keyID: String) -> [Command] { otpTabProbed(&state, keyID) }
    static func form(_ state: AppState) -> Form? { state.otp.form ?? state.otp.slotDialog?.form }
    static func textFocused(_ state: AppState) -> Bool { state.otp.textFocused }
    static func help(_ state: AppState) -> [HelpEntry] { otpTabHelp(state) }
}
