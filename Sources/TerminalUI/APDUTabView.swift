import AuthenticatorModel

/// The APDU tab.
struct APDUTabView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        app.planned(UIText("view.tab.apduPlanned"), area)
    }

    /// The tab's own bindings for the help overlay.
    static func helpRows(_ state: AppState) -> [(String, UIText)] { [] }
}
