import KeyKit

/// The PIV tab: the slots at a glance, a certificate in full, the signature check, PIN and PUK changes, the
/// unblock, the certificate export, a self-signed certificate made on the key, and a slot's SSH line copied.
enum PIVTab: TabModel {
    static let tab = Tab.piv
    static let application: KeyApplication? = .piv

    static func update(_ state: inout AppState, _ msg: Msg) -> [Command]? {
        guard case .piv(let m) = msg else { return nil }
        return pivTabUpdate(&state, m)
    }

    static func keyPress(_ state: inout AppState, _ key: KeyPress) -> [Command] { pivTabKey(&state, key) }
    static func paste(_ state: inout AppState, _ text: String) -> Bool { pivTabPaste(&state, text) }
    static func opened(_ state: inout AppState) -> [Command] { pivTabOpened(&state) }
    static func tick(_ state: inout AppState) -> [Command] { [] }
    static func selectedKeyChanged(_ state: inout AppState) -> [Command] { pivTabKeyChanged(&state) }
    static func form(_ state: AppState) -> Form? { state.piv.dialog?.form }
    static func textFocused(_ state: AppState) -> Bool { state.piv.textFocused }
    static func help(_ state: AppState) -> [HelpEntry] { pivTabHelp(state) }
}
