import KeyKit

/// The OATH tab: accounts with live codes, add/rename/delete, password.
enum OATHTab: TabModel {
    static let tab = Tab.oath
    static let application: KeyApplication? = .oath

    static func update(_ state: inout AppState, _ msg: Msg) -> [Command]? {
        switch msg {
        case .oath,
            .pinsLoaded, .copied:
            let commands = oathMessage(&state, msg)
            askNextPassword(&state)
            return commands
        default:
            return nil
        }
    }

    static func keyPress(_ state: inout AppState, _ key: KeyPress) -> [Command] {
        let commands = oathKey(&state, key)
        askNextPassword(&state)
        return commands
    }
    static func paste(_ state: inout AppState, _ text: String) -> Bool { oathPaste(&state, text) }
    /// The accounts are read when a key is selected, whichever tab is shown.
    static func opened(_ state: inout AppState) -> [Command] { [] }
    /// An account shown once goes with the tab.
    static func closed(_ state: inout AppState) -> [Command] {
        closeShownAccount(&state)
        return []
    }
    static func tick(_ state: inout AppState) -> [Command] { oathDue(&state) }
    /// `select` opens the OATH application of a newly selected key itself; in the all-keys view the key shown
    /// before is read again if it had not been read.
    static func selectedKeyChanged(_ state: inout AppState) -> [Command] { openOtherKeys(&state) }
    /// In the all-keys view a key joins once it is probed.
    static func probed(_ state: inout AppState, keyID: String) -> [Command] { oathKeyProbed(&state, keyID: keyID) }
    static func keyLeft(_ state: inout AppState, keyID: String) -> [Command] {
        oathKeyLeft(&state, keyID: keyID)
        return []
    }
    static func form(_ state: AppState) -> Form? { state.oath.dialog?.form }
    static func textFocused(_ state: AppState) -> Bool {
        state.oath.filterFocused || state.oath.dialog != nil || state.oath.shown != nil
    }
    static func help(_ state: AppState) -> [HelpEntry] { oathHelp(state.bindings) }
}
