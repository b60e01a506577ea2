import KeyKit

/// The OpenPGP tab: the card at a glance as `gpg --card-status` tells it (the three keys with algorithm,
/// fingerprint, creation date and touch policy; the tries left; the signature counter; the cardholder), the PIN,
/// admin PIN and reset code changes, the unblock, the touch policies, a certificate's export, attestation and the
/// reset.
enum OpenPGPTab: TabModel {
    static let tab = Tab.openpgp
    static let application: KeyApplication? = .openPGP

    static func update(_ state: inout AppState, _ msg: Msg) -> [Command]? {
        guard case .openpgp(let m) = msg else { return nil }
        return openpgpTabUpdate(&state, m)
    }

    static func keyPress(_ state: inout AppState, _ key: KeyPress) -> [Command] { openpgpTabKey(&state, key) }
    static func paste(_ state: inout AppState, _ text: String) -> Bool { openpgpTabPaste(&state, text) }
    static func opened(_ state: inout AppState) -> [Command] { openpgpTabOpened(&state) }
    static func tick(_ state: inout AppState) -> [Command] { [] }
    static func selectedKeyChanged(_ state: inout AppState) -> [Command] { openpgpTabKeyChanged(&state) }
    static func form(_ state: AppState) -> Form? { state.openpgp.dialog?.form }
    static func textFocused(_ state: AppState) -> Bool { state.openpgp.textFocused }
    static func help(_ state: AppState) -> [HelpEntry] { openpgpTabHelp(state) }
}
