import AuthenticatorModel

/// The FIDO tab.
struct FIDOTabView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        app.planned(UIText("view.tab.fidoPlanned"), area)
    }

    /// The tab's own bindings for the help overlay.
    static func helpRows(_ state: AppState) -> [(String, UIText)] { [] }
}
