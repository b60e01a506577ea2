import KeyKit
import Testing
@testable import AuthenticatorModel

/// The device view's application toggles: the same checks and confirmation as `ykterm config`.
@Suite struct DeviceConfigModelTests {
    static let usbKey = KeyDescriptor(transport: .pcsc(reader: "Yubico YubiKey OTP+FIDO+CCID 00 00"),
                                      name: "Yubico YubiKey OTP+FIDO+CCID 00 00",
                                      atr: [0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15])

    static func state(locked: Bool = false, enabledUSB: Capabilities = .all) -> AppState {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(usbKey)))
        let device = DeviceInfo(serial: 7, version: Version(5, 7, 2), supportedUSB: .all, enabledUSB: enabledUSB,
                                supportedNFC: .all, enabledNFC: .all, isConfigLocked: locked)
        _ = update(&state, .probed(keyID: usbKey.id, KeyInfo(reader: usbKey.name, atr: usbKey.atr, device: device,
                                                             applications: device.enabledUSB.names, overNFC: false)))
        _ = update(&state, .keyPress(.char("i")))
        return state
    }

    @Test func togglesAreEveryApplicationOverUSBThenNFC() throws {
        let state = Self.state()
        let toggles = try #require(state.selectedKey?.configToggles)
        #expect(toggles.count == 14)
        #expect(toggles.first == DeviceConfigToggle(transport: .usb, application: .otp))
        #expect(toggles[7] == DeviceConfigToggle(transport: .nfc, application: .otp))
    }

    @Test func noOrAnyOtherKeyLeavesTheKeyAsItIs() {
        var state = Self.state()
        _ = update(&state, .keyPress(.char(" ")))
        let pending = state.deviceConfig.pending
        #expect(pending?.change.before == .all && pending?.change.after == Capabilities.all.subtracting(.otp))
        // OTP off over USB: the OTP HID interface goes, so the key restarts; CCID stays.
        #expect(pending?.change.needsReboot == true && pending?.cuts == nil)
        // A y in the same burst as the Space is no answer; other keys neither: the question stays.
        #expect(update(&state, .keyPress(.char("y"))).isEmpty && state.deviceConfig.pending != nil)
        #expect(update(&state, .keyPress(.down)).isEmpty && state.deviceConfig.pending != nil)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.deviceConfig.pending == nil && state.showDeviceInfo)
        _ = update(&state, .keyPress(.char(" ")))
        _ = update(&state, .tick(now: state.now + 1))
        #expect(update(&state, .keyPress(.char("y"))) == [.writeConfig(Self.usbKey, DeviceConfiguration(enabledUSB: Capabilities.all.subtracting(.otp)), reboot: true)])
        #expect(state.deviceConfig.writing)
        // A second Space while the write is under way asks nothing.
        _ = update(&state, .keyPress(.char(" ")))
        #expect(state.deviceConfig.pending == nil)
        // Refused (locked meanwhile by another program): said, and the key read again.
        #expect(update(&state, .configWritten(keyID: Self.usbKey.id, failure: ErrorExplanation(ManagementError.wrongLockCode).text))
                == [.probe(Self.usbKey)])
        #expect(!state.deviceConfig.writing && state.status?.kind == .error)
    }

    @Test func turningOffTheCCIDInterfaceInUseIsSaidInTheQuestion() {
        var state = Self.state(enabledUSB: [.otp, .u2f, .fido2, .oath])
        // OTP U2F FIDO2 OATH: the cursor to OATH, the last CCID application.
        for _ in 0..<3 { _ = update(&state, .keyPress(.right)) }
        _ = update(&state, .keyPress(.char(" ")))
        #expect(state.deviceConfig.pending?.cuts == .ccid)
        #expect(state.deviceConfig.pending?.change.needsReboot == true)
    }

    @Test func lockedAndRefusedChangesAskNothing() {
        var locked = Self.state(locked: true)
        _ = update(&locked, .keyPress(.char(" ")))
        #expect(locked.deviceConfig.pending == nil && locked.status?.text.key == "config.tui.locked")
        var last = Self.state(enabledUSB: [.otp])
        _ = update(&last, .keyPress(.char(" ")))
        #expect(last.deviceConfig.pending == nil && last.status?.text.key == "error.disables-all")
        // The cursor stays within the toggles; Escape closes the view.
        for _ in 0..<40 { _ = update(&last, .keyPress(.down)) }
        #expect(last.deviceConfig.cursor == 13)
        _ = update(&last, .keyPress(.escape))
        #expect(!last.showDeviceInfo)
    }
}
