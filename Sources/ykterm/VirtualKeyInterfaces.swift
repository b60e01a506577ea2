import AuthenticatorModel
import KeyKit
import VirtualKey

/// The virtual key as a key source: present from the start, never leaving, shaped as a USB YubiKey with its
/// three interfaces (CCID, FIDO HID, OTP HID), so each tab reaches it as it would reach a real key.
struct VirtualBackend: KeyBackend {
    /// The ATR a USB YubiKey's CCID interface gives.
    static let usbATR: [UInt8] = [
        0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15, 0x80, 0x73, 0xC0, 0x21,
        0xC0, 0x57, 0x59, 0x75, 0x62, 0x69, 0x4B, 0x65, 0x79, 0x40,
    ]
    static let descriptor: KeyDescriptor = {
        var d = KeyDescriptor(transport: .virtual, name: "Virtual Key", atr: usbATR)
        d.fidoHID = HIDDeviceInfo(
            path: "virtual:fido", vendorID: HIDDeviceInfo.yubicoVendorID, productID: 0x0407,
            productName: "Virtual Key")
        d.otpHID = HIDDeviceInfo(
            path: "virtual:otp", vendorID: HIDDeviceInfo.yubicoVendorID, productID: 0x0407,
            productName: "Virtual Key")
        return d
    }()
    let key: VirtualKey

    func events() -> AsyncStream<KeyEvent> {
        AsyncStream { continuation in
            continuation.yield(.keyArrived(Self.descriptor))
        }
    }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        USBCardConnection(inner: VirtualKeyConnection(key: key, name: descriptor.name))
    }

    /// FIDO over the virtual key's HID interface (CTAPHID), as on a USB key.
    func connectFIDO(_ descriptor: KeyDescriptor, observer: (@Sendable (APDUExchange) -> Void)?) async throws
        -> any FIDOConnection
    {
        try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "Virtual Key (FIDO HID)")
    }

    /// A touch of the virtual key's button: the Yubico OTP of its NDEF credential, as a real key would type it.
    func touchForOTP() -> String? {
        key.typeOTP()
    }
}

/// The built-in virtual key as the command line's `--virtual` opens it: a fresh key loaded with the demo
/// accounts for each opening (changes are not kept), its FIDO interface over CTAPHID with a 0.2 s touch.
struct VirtualKeyChoice: KeyOpener {
    private static var state: VirtualKeyState { VirtualKeyState.yubiKey5NFC().withDemoAccounts() }

    func openSmartCard() async throws -> any SmartCardConnection {
        TouchNotice.opened(VirtualBackend.descriptor.name)
        return VirtualKeyConnection(key: VirtualKey(state: Self.state))
    }

    func openFIDO() async throws -> any FIDOConnection {
        try await CTAPHIDConnection(
            device: VirtualKey(state: Self.state, touchDelay: 0.2).makeFIDOHIDDevice(),
            name: "Virtual Key (HID)")
    }

    /// Through its smart-card interface, where the OTP application answers.
    func openOTP() async throws -> OpenedOTP {
        try await VirtualBackend.descriptor.openOTP(card: openSmartCard)
    }

    func openManagement() async throws -> OpenedManagement {
        try await OpenedManagement.card(try await openSmartCard())
    }
}

/// The virtual key's CCID interface as a USB key's: the ATR a USB YubiKey gives.
final class USBCardConnection: SmartCardConnection {
    let inner: VirtualKeyConnection
    var atr: [UInt8] { VirtualBackend.usbATR }

    init(inner: VirtualKeyConnection) {
        self.inner = inner
    }
    var name: String { inner.name }

    func transmit(_ command: [UInt8]) async throws -> [UInt8] { try await inner.transmit(command) }
    func close() async { await inner.close() }
}
