import KeyKit
import VirtualKey
import Testing
@testable import AuthenticatorModel

/// The device view's application toggles: the same checks and confirmation as `ykterm config`.
@Suite struct DeviceConfigModelTests {
    static let usbKey = KeyDescriptor(
        transport: .pcsc(reader: "Yubico YubiKey OTP+FIDO+CCID 00 00"),
        name: "Yubico YubiKey OTP+FIDO+CCID 00 00",
        atr: [0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15])

    static func state(locked: Bool = false, enabledUSB: Capabilities = .all) -> AppState {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(usbKey)))
        let device = DeviceInfo(
            serial: 7, version: Version(5, 7, 2), supportedUSB: .all, enabledUSB: enabledUSB,
            supportedNFC: .all, enabledNFC: .all, isConfigLocked: locked)
        _ = update(
            &state,
            .probed(
                keyID: usbKey.id,
                KeyInfo(
                    reader: usbKey.name, atr: usbKey.atr, device: device,
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
        #expect(
            update(&state, .keyPress(.char("y"))) == [
                .writeConfig(
                    Self.usbKey, DeviceConfiguration(enabledUSB: Capabilities.all.subtracting(.otp)), reboot: true)
            ])
        #expect(state.deviceConfig.writing)
        // A second Space while the write is under way asks nothing.
        _ = update(&state, .keyPress(.char(" ")))
        #expect(state.deviceConfig.pending == nil)
        // Refused (locked meanwhile by another program): said, and the key read again.
        #expect(
            update(
                &state,
                .configWritten(keyID: Self.usbKey.id, failure: ErrorExplanation(ManagementError.wrongLockCode).text))
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

    static let lock: [UInt8] = Array(0..<16)
    static let lockHex = "000102030405060708090a0b0c0d0e0f"

    static func type(_ text: String, _ state: inout AppState) {
        for c in text { _ = update(&state, .keyPress(.char(c))) }
    }

    @Test func aConfirmedChangeOfALockedKeyAsksForTheLockCodeAndAWrongOneStays() throws {
        var state = Self.state(locked: true)
        _ = update(&state, .keyPress(.char(" ")))
        #expect(state.deviceConfig.pending?.change.after == Capabilities.all.subtracting(.otp))
        _ = update(&state, .tick(now: state.now + 1))
        // Yes: nothing is written yet; the lock code is asked for (masked).
        #expect(update(&state, .keyPress(.char("y"))).isEmpty)
        let dialog = try #require(state.deviceConfig.lockDialog)
        #expect(dialog.form.fields.map(\.id) == ["current"] && dialog.form.fields[0].input.secret)
        #expect(state.openForm == dialog.form && !state.deviceConfig.writing)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.deviceConfig.lockDialog?.form.problem == ErrorExplanation(ConfigProblem.lockCodeFormat).text)
        Self.type("00112233", &state)
        #expect(state.deviceConfig.lockDialog?.form.problem == nil)
        Self.type("zz", &state)
        #expect(state.deviceConfig.lockDialog?.form.problem == ErrorExplanation(ConfigProblem.lockCodeFormat).text)
        _ = update(&state, .keyPress(.ctrl("u")))
        Self.type(Self.lockHex.uppercased(), &state)
        let change = DeviceConfiguration(enabledUSB: Capabilities.all.subtracting(.otp))
        #expect(
            update(&state, .keyPress(.enter)) == [
                .writeConfig(Self.usbKey, change, reboot: true, currentLockCode: Self.lock)
            ])
        // The code left the state with the command.
        #expect(state.deviceConfig.lockDialog?.form[DeviceLockField.current] == "" && state.deviceConfig.writing)
        // Wrong: the dialog stays, says why, and takes another try (the key is read again meanwhile).
        let wrong = ErrorExplanation(ManagementError.wrongLockCode).text
        #expect(update(&state, .configWritten(keyID: Self.usbKey.id, failure: wrong)) == [.probe(Self.usbKey)])
        #expect(
            state.deviceConfig.lockDialog?.form.problem == wrong && state.deviceConfig.lockDialog?.form.busy == false)
        Self.type(Self.lockHex, &state)
        #expect(update(&state, .keyPress(.enter)).count == 1)
        #expect(update(&state, .configWritten(keyID: Self.usbKey.id, failure: nil)) == [.probe(Self.usbKey)])
        #expect(state.deviceConfig.lockDialog == nil && state.status?.text == UIText("config.done"))
        // Esc in the dialog writes nothing.
        _ = update(&state, .keyPress(.char(" ")))
        _ = update(&state, .tick(now: state.now + 1))
        _ = update(&state, .keyPress(.char("y")))
        #expect(update(&state, .keyPress(.escape)).isEmpty && state.deviceConfig.lockDialog == nil)
        #expect(state.status?.text == UIText("error.declined") && state.showDeviceInfo)
    }

    @Test func lOnAnUnlockedKeySetsALockCodeTypedTwiceAfterTheQuestion() {
        var state = Self.state()
        _ = update(&state, .keyPress(.char("L")))
        #expect(state.deviceConfig.lockDialog?.kind == .lockCode(keyID: Self.usbKey.id, locked: false))
        #expect(state.deviceConfig.lockDialog?.form.fields.map(\.id) == ["new", "again"])
        Self.type(String(repeating: "0", count: 32), &state)
        #expect(state.deviceConfig.lockDialog?.form.problem == ErrorExplanation(ConfigProblem.lockCodeFormat).text)
        _ = update(&state, .keyPress(.ctrl("u")))
        Self.type(Self.lockHex, &state)
        _ = update(&state, .keyPress(.enter))
        Self.type(String(Self.lockHex.dropLast()) + "e", &state)
        #expect(state.deviceConfig.lockDialog?.form.problem == ErrorExplanation(ConfigProblem.lockCodeMismatch).text)
        #expect(update(&state, .keyPress(.enter)).isEmpty && state.deviceConfig.lockDialog?.form.confirming == nil)
        _ = update(&state, .keyPress(.backspace))
        Self.type("f", &state)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(
            state.deviceConfig.lockDialog?.form.confirming?.question
                == UIText("config.tui.lock.confirm", nested: ["change": UIText("config.change.lock-set")]))
        state.now += 1
        #expect(
            update(&state, .keyPress(.char("y")))
                == [
                    .writeConfig(
                        Self.usbKey, DeviceConfiguration(), reboot: false, currentLockCode: nil, newLockCode: Self.lock)
                ])
        #expect(
            state.deviceConfig.lockDialog?.form[DeviceLockField.new] == ""
                && state.deviceConfig.lockDialog?.form[DeviceLockField.again] == "")
    }

    @Test func lOnALockedKeyClearsTheLockWithTheCurrentCode() {
        var state = Self.state(locked: true)
        _ = update(&state, .keyPress(.char("L")))
        #expect(state.deviceConfig.lockDialog?.form.fields.map(\.id) == ["clear", "current", "new", "again"])
        _ = update(&state, .keyPress(.char(" ")))
        #expect(state.deviceConfig.lockDialog?.form.fields.map(\.id) == ["clear", "current"])
        _ = update(&state, .keyPress(.down))
        Self.type(Self.lockHex, &state)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(
            state.deviceConfig.lockDialog?.form.confirming?.question
                == UIText("config.tui.lock.confirm", nested: ["change": UIText("config.change.lock-cleared")]))
        state.now += 1
        #expect(
            update(&state, .keyPress(.char("y")))
                == [
                    .writeConfig(
                        Self.usbKey, DeviceConfiguration(), reboot: false, currentLockCode: Self.lock,
                        newLockCode: DeviceConfiguration.clearedLockCode)
                ])
        // Changing it instead: the current code, then the new one twice.
        var change = Self.state(locked: true)
        _ = update(&change, .keyPress(.char("L")))
        _ = update(&change, .keyPress(.down))
        Self.type(Self.lockHex, &change)
        _ = update(&change, .keyPress(.enter))
        Self.type(String(repeating: "ab", count: 16), &change)
        _ = update(&change, .keyPress(.enter))
        Self.type(String(repeating: "AB", count: 16), &change)
        _ = update(&change, .keyPress(.enter))
        #expect(
            change.deviceConfig.lockDialog?.form.confirming?.question
                == UIText("config.tui.lock.confirm", nested: ["change": UIText("config.change.lock-changed")]))
        change.now += 1
        #expect(
            update(&change, .keyPress(.char("y")))
                == [
                    .writeConfig(
                        Self.usbKey, DeviceConfiguration(), reboot: false, currentLockCode: Self.lock,
                        newLockCode: [UInt8](repeating: 0xAB, count: 16))
                ])
    }

    @Test func refusedChangesAskNothing() {
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

/// The device view's WRITE CONFIG performed by the real runner against the virtual key in process.
@Suite struct DeviceConfigWorkTests {
    static func written(_ msg: Msg) -> UIText?? {
        if case .configWritten(_, let failure) = msg { return .some(failure) } else { return nil }
    }

    @Test func aLockCodeSetBindsLaterChangesAndIsCleared() async throws {
        let backend = InProcessBackend(VirtualKeyState.yubiKey5NFC())
        let h = Harness(backend, directory: temporaryDirectory())
        let d = InProcessBackend.descriptor
        let lock = DeviceConfigModelTests.lock
        let noOATH = DeviceConfiguration(enabledNFC: Capabilities.all.subtracting(.oath))
        #expect(
            try await h.run(.writeConfig(d, DeviceConfiguration(), reboot: false, newLockCode: lock), Self.written)
                == .some(nil))
        #expect(backend.key.state.configLocked)
        // Without the code, and with a wrong one, the key refuses and nothing changes.
        let wrong = ErrorExplanation(ManagementError.wrongLockCode).text
        #expect(try await h.run(.writeConfig(d, noOATH, reboot: false), Self.written) == .some(wrong))
        #expect(
            try await h.run(
                .writeConfig(d, noOATH, reboot: false, currentLockCode: [UInt8](repeating: 9, count: 16)),
                Self.written) == .some(wrong))
        #expect(backend.key.state.nfcEnabled & Capabilities.oath.rawValue != 0)
        // With it, the change is written; then the lock is cleared and no code is needed.
        #expect(
            try await h.run(.writeConfig(d, noOATH, reboot: false, currentLockCode: lock), Self.written) == .some(nil))
        #expect(backend.key.state.nfcEnabled & Capabilities.oath.rawValue == 0)
        #expect(
            try await h.run(
                .writeConfig(
                    d, DeviceConfiguration(), reboot: false, currentLockCode: lock,
                    newLockCode: DeviceConfiguration.clearedLockCode), Self.written) == .some(nil))
        #expect(!backend.key.state.configLocked)
        let all = DeviceConfiguration(enabledNFC: .all)
        #expect(try await h.run(.writeConfig(d, all, reboot: false), Self.written) == .some(nil))
    }
}
