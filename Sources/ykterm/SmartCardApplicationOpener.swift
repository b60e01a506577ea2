import AuthenticatorModel
import KeyKit

/// The opener of a smart-card application's commands (PIV, OpenPGP, YubiHSM Auth, OATH info and password): when the key cannot be reached
/// over PC/SC and the one key there is, by its HID product name, a key without a smart-card interface (a
/// Security Key, or a YubiKey with CCID turned off), the error says that the application is not on that key,
/// not that pcscd or a reader is missing.
struct SmartCardApplicationOpener: SmartCardOpener {
    var base: any SmartCardOpener
    var application: KeyApplication
    /// The key the command chose; nil for the built-in virtual key.
    var selector: KeySelector?

    func openSmartCard() async throws -> any SmartCardConnection {
        do {
            return try await base.openSmartCard()
        } catch {
            throw await explained(error)
        }
    }

    func openHeldSmartCard() async throws -> any SmartCardConnection {
        do {
            return try await base.openHeldSmartCard()
        } catch {
            throw await explained(error)
        }
    }

    /// `error`, or `noSmartCardInterface` when the key's HID product name lists its interfaces without CCID
    /// (a YubiKey's product string names them: "YubiKey OTP+FIDO+CCID"; a Security Key's has FIDO alone).
    func explained(_ error: any Error) async -> any Error {
        guard let selector else { return error }
        let keys = await KeyDiscovery.keys(selector).keys
        guard keys.count == 1, let key = keys.first, !key.has(application),
            let name = key.fidoHID?.productName ?? key.otpHID?.productName,
            !name.uppercased().contains("CCID")
        else { return error }
        return KeyRouteError.noSmartCardInterface(application, key: name, key.interfaces)
    }
}

extension KeyOptions {
    /// The key these options chose, for the smart-card `application`: a key with no smart-card interface is said to
    /// lack the application rather than pcscd to be missing.
    func opener(for application: KeyApplication) -> SmartCardApplicationOpener {
        SmartCardApplicationOpener(
            base: choice.opener(), application: application, selector: choice.virtual ? nil : choice.selector)
    }
}
