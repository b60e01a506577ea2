import KeyKit

/// What a tab is to the app: its state lives in `AppState` (one field per tab), and the parent calls only
/// these, for whichever tab they concern — it never reaches into a tab. A new tab is a folder with a type
/// that conforms, its state, messages, commands and work, and a view of the same name in TerminalUI.
/// Every hook is pure, as `update` is.
protocol TabModel: Sendable {
    /// Which tab this is.
    static var tab: Tab { get }
    /// The key application the tab works with: what it needs of a key (nil: none).
    static var application: KeyApplication? { get }
    /// Its own messages: the commands they call for, or nil when `msg` is not the tab's.
    static func update(_ state: inout AppState, _ msg: Msg) -> [Command]?
    /// A key press while the tab is shown (and no overlay is open).
    static func keyPress(_ state: inout AppState, _ key: KeyPress) -> [Command]
    /// Pasted text while the tab is shown; false when the tab has no use for it.
    static func paste(_ state: inout AppState, _ text: String) -> Bool
    /// The tab became the one shown.
    static func opened(_ state: inout AppState) -> [Command]
    /// The tab stopped being the one shown (another tab opened).
    static func closed(_ state: inout AppState) -> [Command]
    /// The clock moved on (every tab hears it, shown or not).
    static func tick(_ state: inout AppState) -> [Command]
    /// The selected key changed, or left (every tab hears it).
    static func selectedKeyChanged(_ state: inout AppState) -> [Command]
    /// A key was probed (every tab hears it).
    static func probed(_ state: inout AppState, keyID: String) -> [Command]
    /// A key left, selected or not (every tab hears it, before the selection moves on).
    static func keyLeft(_ state: inout AppState, keyID: String) -> [Command]
    /// The commands an update is about to run, whichever tab asked for them (every tab sees them): the APDU
    /// console notes other work on the key its connection holds.
    static func commandsIssued(_ state: inout AppState, _ commands: [Command])
    /// The dialog open on the tab, if any.
    static func form(_ state: AppState) -> Form?
    /// True while a text field or dialog of the tab has the keyboard.
    static func textFocused(_ state: AppState) -> Bool
    /// The tab's own keys, for the help overlay.
    static func help(_ state: AppState) -> [HelpEntry]
}

extension TabModel {
    static func closed(_ state: inout AppState) -> [Command] { [] }
    static func probed(_ state: inout AppState, keyID: String) -> [Command] { [] }
    static func keyLeft(_ state: inout AppState, keyID: String) -> [Command] { [] }
    static func commandsIssued(_ state: inout AppState, _ commands: [Command]) {}
}

/// The tabs' models, in the order of `Tab`.
let tabModels: [any TabModel.Type] = Tab.allCases.map(\.model)

extension Tab {
    /// The tab's model (the one list of them: a new case of `Tab` does not build without its model).
    var model: any TabModel.Type {
        switch self {
        case .oath: return OATHTab.self
        case .otp: return OTPTab.self
        case .fido: return FIDOTab.self
        case .apdu: return APDUTab.self
        case .piv: return PIVTab.self
        case .ssh: return SSHTab.self
        case .openpgp: return OpenPGPTab.self
        }
    }

    /// The key application the tab works with (what it needs of a key).
    public var application: KeyApplication? { model.application }
}
