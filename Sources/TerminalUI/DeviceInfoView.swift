import AuthenticatorModel

/// The Management information of the selected key, as an overlay.
struct DeviceInfoView {
    let app: AppView

    func render(_ state: AppState) {}
}
