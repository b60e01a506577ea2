import KeyKit

/// The SSH tab: every SSH key on the key in one list — the FIDO `ssh:` credentials OpenSSH uses through key handle
/// files, and the PIV slots it uses through a PKCS #11 module — with their lines, new FIDO keys, their files and
/// their deletion.
enum SSHTab: TabModel {
    static let tab = Tab.ssh
    /// FIDO first: its keys are what the tab makes and deletes (the PIV slots are read beside them).
    static let application: KeyApplication? = .fido

    static func update(_ state: inout AppState, _ msg: Msg) -> [Command]? {
        guard case .ssh(let m) = msg else { return nil }
        return sshTabUpdate(&state, m)
    }

    static func keyPress(_ state: inout AppState, _ key: KeyPress) -> [Command] { sshTabKey(&state, key) }
    static func paste(_ state: inout AppState, _ text: String) -> Bool { sshTabPaste(&state, text) }
    static func opened(_ state: inout AppState) -> [Command] { sshTabOpened(&state) }
    static func closed(_ state: inout AppState) -> [Command] { sshTabClosed(&state) }
    static func tick(_ state: inout AppState) -> [Command] { [] }
    static func selectedKeyChanged(_ state: inout AppState) -> [Command] { sshTabKeyChanged(&state) }
    static func form(_ state: AppState) -> Form? { state.ssh.dialog?.form }
    static func textFocused(_ state: AppState) -> Bool { state.ssh.dialog != nil }
    static func help(_ state: AppState) -> [HelpEntry] { sshTabHelp(state) }
}
