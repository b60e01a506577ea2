import KeyKit

/// The FIDO2 tab: the authenticator at a glance, PIN set/change/verify, credentials, guided reset.
enum FIDOTab: TabModel {
    static let tab = Tab.fido
    static let application: KeyApplication? = .fido

    static func update(_ state: inout AppState, _ msg: Msg) -> [Command]? {
        guard case .fido(let m) = msg else { return nil }
        return fidoTabUpdate(&state, m)
    }

    static func keyPress(_ state: inout AppState, _ key: KeyPress) -> [Command] { fidoTabKey(&state, key) }
    static func paste(_ state: inout AppState, _ text: String) -> Bool { fidoTabPaste(&state, text) }
    static func opened(_ state: inout AppState) -> [Command] { fidoTabOpened(&state) }
    static func tick(_ state: inout AppState) -> [Command] { fidoTabTick(&state) }
    static func selectedKeyChanged(_ state: inout AppState) -> [Command] { fidoTabKeyChanged(&state) }
    static func probed(_ state: inout AppState, keyID: String) -> [Command] { fidoOtherKeyProbed(&state, keyID: keyID) }
    static func keyLeft(_ state: inout AppState, keyID: String) -> [Command] {
        fidoOtherKeyLeft(&state, keyID: keyID)
        return []
    }
    /// Another tab opened: the credentials view's other keys end there (a PIN dialog of one is wiped).
    static func closed(_ state: inout AppState) -> [Command] {
        fidoEndComparison(&state)
        return []
    }
    static func form(_ state: AppState) -> Form? { state.fido.dialog?.form }
    static func textFocused(_ state: AppState) -> Bool { state.fido.textFocused }
    static func help(_ state: AppState) -> [HelpEntry] { fidoTabHelp(state) }
}
