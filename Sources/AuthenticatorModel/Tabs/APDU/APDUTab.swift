import KeyKit

/// The APDU console: raw commands to the key's smart-card interface, with the log and its TLV view.
enum APDUTab: TabModel {
    static let tab = Tab.apdu
    static let application: KeyApplication? = .apdu

    static func update(_ state: inout AppState, _ msg: Msg) -> [Command]? {
        guard case .apdu(let m) = msg else { return nil }
        return apduTabUpdate(&state, m)
    }

    static func keyPress(_ state: inout AppState, _ key: KeyPress) -> [Command] { apduTabKey(&state, key) }
    static func paste(_ state: inout AppState, _ text: String) -> Bool { apduTabPaste(&state, text) }
    static func opened(_ state: inout AppState) -> [Command] { apduTabOpened(&state) }
    static func tick(_ state: inout AppState) -> [Command] { apduTabTick(&state) }
    static func selectedKeyChanged(_ state: inout AppState) -> [Command] { apduTabKeyChanged(&state) }
    static func commandsIssued(_ state: inout AppState, _ commands: [Command]) { apduNoteKeyWork(&state, commands) }
    static func form(_ state: AppState) -> Form? { state.apdu.dialog?.form }
    static func textFocused(_ state: AppState) -> Bool { state.apdu.textFocused }
    static func help(_ state: AppState) -> [HelpEntry] { apduTabHelp(state) }
}
