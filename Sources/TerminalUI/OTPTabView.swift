import AuthenticatorModel

/// The OTP tab.
struct OTPTabView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        app.planned(UIText("view.tab.otpPlanned"), area)
    }

    /// The tab's own bindings for the help overlay.
    static func helpRows(_ state: AppState) -> [(String, UIText)] { [] }
}
