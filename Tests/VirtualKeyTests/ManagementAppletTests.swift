import Foundation
import KeyKit
import Synchronization
import Testing
import VirtualKey

private let lock = [UInt8](0x10..<0x20)
private let selectOATH = try! APDU.select(aid: AID.oath).encoded()
private let selectFIDO = try! APDU.select(aid: AID.fido).encoded()
private let selectPIV = try! APDU.select(aid: AID.piv).encoded()

/// A Management session on `key` (in process, as over NFC unless the key says otherwise).
private func management(_ key: VirtualKey) async throws -> ManagementSession {
    try await ManagementSession.make(connection: VirtualKeyConnection(key: key))
}

private func status(_ answer: [UInt8]) -> String { Hex.encode(answer.suffix(2), uppercase: true) }

/// WRITE CONFIG and DEVICE RESET of the virtual key's Management application, with the rules a YubiKey 5 has.
@Suite struct ManagementAppletTests {
    @Test func disabledApplicationIsNotSelectableOverThatTransportOnly() async throws {
        let nfcKey = VirtualKey()
        try await management(nfcKey).writeConfiguration(DeviceConfiguration(enabledNFC: [.otp, .piv]))
        #expect(status(nfcKey.process(selectOATH)) == "6A82")
        #expect(status(nfcKey.process(selectFIDO)) == "6A82")
        #expect(status(nfcKey.process(selectPIV)) == "9000")
        // The USB set is untouched: the same state served as a USB key's CCID interface still has OATH.
        let usbKey = VirtualKey(state: nfcKey.state, smartCardTransport: .usb)
        #expect(status(usbKey.process(selectOATH)) == "9000")
        let info = try await management(nfcKey).deviceInfo()
        #expect(info.enabledNFC == [.otp, .piv] && info.enabledUSB == .all)
        #expect(
            try await KeyProbe.inspect(connection: VirtualKeyConnection(key: nfcKey)).applications == ["OTP", "PIV"])
    }

    /// NFC restricted (5.7): nothing answers over NFC, the USB interface reads the flag and still has every
    /// application, and power from USB lifts it; a key before 5.7, or without NFC, refuses it.
    @Test func nfcRestrictedUntilUSBPower() async throws {
        let usbKey = VirtualKey(smartCardTransport: .usb)
        var configuration = DeviceConfiguration()
        configuration.restrictNFC = true
        try await management(usbKey).writeConfiguration(configuration)
        #expect(try await management(usbKey).deviceInfo().nfcRestricted)
        #expect(status(usbKey.process(selectOATH)) == "9000")
        let overNFC = VirtualKey(state: usbKey.state)
        for select in [selectOATH, selectPIV, selectFIDO, try APDU.select(aid: AID.management).encoded()] {
            #expect(status(overNFC.process(select)) == "6A82")
        }
        // The applications enabled over NFC are kept for when it is on again.
        #expect(overNFC.state.nfcEnabled == VirtualKeyState.yubiKey5NFC().nfcEnabled)
        usbKey.poweredFromUSB()
        #expect(try await management(usbKey).deviceInfo().nfcRestricted == false)
        #expect(status(VirtualKey(state: usbKey.state).process(selectOATH)) == "9000")

        for state in [VirtualKeyState.yubiKey5NFC(version: Version(5, 4, 3)), .yubiKey4()] {
            let key = VirtualKey(state: state, smartCardTransport: .usb)
            await #expect(throws: (any Error).self) { try await management(key).writeConfiguration(configuration) }
            #expect(key.state.nfcRestricted == false)
        }
    }

    @Test func lockCodeRules() async throws {
        let key = VirtualKey()
        let session = try await management(key)
        try await session.writeConfiguration(DeviceConfiguration(), newLockCode: lock)
        #expect(try await session.deviceInfo().isConfigLocked)
        // Locked: nothing changes without the lock code, or with a wrong one (63C0).
        await #expect(throws: ManagementError.wrongLockCode) {
            try await session.writeConfiguration(DeviceConfiguration(enabledUSB: [.otp]))
        }
        await #expect(throws: ManagementError.wrongLockCode) {
            try await session.writeConfiguration(
                DeviceConfiguration(enabledUSB: [.otp]), currentLockCode: lock.reversed())
        }
        await #expect(throws: ManagementError.wrongLockCode) {
            try await session.writeConfiguration(
                DeviceConfiguration(), newLockCode: DeviceConfiguration.clearedLockCode)
        }
        #expect(key.state.usbEnabled == Capabilities.all.rawValue && key.state.configLocked)
        // With it, the change is made; then 16 zero bytes clear the lock.
        try await session.writeConfiguration(DeviceConfiguration(enabledUSB: [.otp, .oath]), currentLockCode: lock)
        #expect(key.state.usbEnabled == Capabilities([.otp, .oath]).rawValue)
        try await session.writeConfiguration(
            DeviceConfiguration(), currentLockCode: lock,
            newLockCode: DeviceConfiguration.clearedLockCode)
        #expect(try await session.deviceInfo().isConfigLocked == false)
        #expect(key.state.configLockCode == nil)
        try await session.writeConfiguration(DeviceConfiguration(challengeResponseTimeout: 40, deviceFlags: 0x80))
        let info = try await session.deviceInfo()
        #expect(info.challengeResponseTimeout == 40 && info.deviceFlags == 0x80)
    }

    @Test func refusesWhatAYubiKeyRefuses() {
        let key = VirtualKey()
        _ = key.process(try! APDU.select(aid: AID.management).encoded())
        // No application left over USB; a length byte that does not match; a lock code of 15 bytes.
        #expect(status(key.process(hex("001C0000050403020000"))) == "6A80")
        #expect(status(key.process(hex("001C00000405030200"))) == "6700")
        #expect(status(key.process(hex("001C000012110A0F" + String(repeating: "11", count: 15)))) == "6A80")
        // Bits of applications the key does not have are dropped.
        #expect(status(key.process(hex("001C000005040302FFFF"))) == "9000")
        #expect(key.state.usbEnabled == Capabilities.all.rawValue)
    }

    @Test func stateFileKeepsTheLockCodeAsHex() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vk-config-\(UUID().uuidString).json")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = VirtualKeyStateFile(path: path)
        var state = VirtualKeyState.yubiKey5NFC()
        state.configLocked = true
        state.configLockCode = lock
        state.nfcEnabled = Capabilities.oath.rawValue
        try file.save(state)
        #expect(try file.load() == state)
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("\"configLockCode\" : \"" + lock.hex + "\""))
    }

    @Test func rebootFlagRestartsTheKeyOnceAnswered() async throws {
        let key = VirtualKey()
        let restarts = Mutex(0)
        key.setRebootHandler { restarts.withLock { $0 += 1 } }
        let session = try await management(key)
        try await session.writeConfiguration(DeviceConfiguration(enabledUSB: [.otp, .u2f, .fido2]), reboot: true)
        #expect(restarts.withLock { $0 } == 1)
        try await session.writeConfiguration(DeviceConfiguration(enabledNFC: [.otp]))
        #expect(restarts.withLock { $0 } == 1)
    }

    @Test func deviceResetClearsTheApplicationsButNotTheConfiguration() async throws {
        var state = VirtualKeyState.yubiKey5NFC().withDemoAccounts()
        state.nfcEnabled = Capabilities([.oath, .piv]).rawValue
        let key = VirtualKey(state: state)
        #expect(!key.state.oath.credentials.isEmpty)
        try await management(key).deviceReset()
        #expect(key.state.oath.credentials.isEmpty)
        #expect(key.state.nfcEnabled == Capabilities([.oath, .piv]).rawValue)
        let old = VirtualKey(state: .yubiKey5NFC(version: Version(5, 4, 3)))
        await #expect(
            throws: ManagementError.needsFirmware(.deviceReset, minimum: Version(5, 6, 0), actual: Version(5, 4, 3))
        ) {
            try await management(old).deviceReset()
        }
    }

    @Test func fidoHIDObeysTheUSBSet() throws {
        var state = VirtualKeyState.yubiKey5NFC()
        state.usbEnabled = Capabilities([.otp, .u2f, .oath]).rawValue
        let key = VirtualKey(state: state)
        let handler = key.fidoHIDHandler()
        // CTAP2 getInfo: FIDO2 is off over USB.
        #expect(handler(CTAPHID.Command.cbor, [CTAP2.Command.getInfo.rawValue], { _ in }) == [CTAPError.invalidCommand])
        // U2F VERSION still answers.
        #expect(handler(CTAPHID.Command.msg, hex("0003000000"), { _ in }).suffix(2) == [0x90, 0x00])
    }

    @Test func fidoOverNFCObeysTheNFCSet() {
        var state = VirtualKeyState.yubiKey5NFC()
        state.nfcEnabled = Capabilities([.u2f, .oath]).rawValue
        let key = VirtualKey(state: state)
        #expect(status(key.process(selectFIDO)) == "9000")
        // NFCCTAP_MSG with getInfo: FIDO2 is off over NFC; U2F VERSION answers.
        #expect(status(key.process(hex("80100000010400"))) == "6D00")
        #expect(status(key.process(hex("0003000000"))) == "9000")
        state.nfcEnabled = Capabilities([.fido2]).rawValue
        let fido2Only = VirtualKey(state: state)
        _ = fido2Only.process(selectFIDO)
        #expect(status(fido2Only.process(hex("0003000000"))) == "6D00")
        // getInfo answers (in parts when it is longer than one short answer: 61xx).
        let getInfo = status(fido2Only.process(hex("80100000010400")))
        #expect(getInfo == "9000" || getInfo.hasPrefix("61"))
    }

    @Test func writeConfigOverTheFIDOAndOTPInterfaces() async throws {
        let key = VirtualKey()
        let fido = try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "virtual", timeout: 10)
        let set = try DeviceConfiguration(enabledNFC: [.oath]).writeConfigData(reboot: false, newLockCode: lock)
        try await ManagementHID.writeConfig(fido: fido, data: set)
        #expect(try await ManagementHID.readDeviceInfo(fido: fido).isConfigLocked)
        // Locked: refused without the lock code (CTAPHID ERR_OTHER), taken with it.
        let unlocked = try DeviceConfiguration(enabledNFC: [.piv]).writeConfigData(reboot: false)
        await #expect(throws: ManagementError.configurationRefused) {
            try await ManagementHID.writeConfig(fido: fido, data: unlocked)
        }
        await fido.close()
        let otp = OTPHIDConnection(device: key.makeOTPHIDDevice(), name: "virtual otp")
        let sequence = key.state.otpSequence
        await #expect(throws: ManagementError.configurationRefused) {
            try await ManagementHID.writeConfig(otp: otp, data: unlocked)
        }
        #expect(key.state.otpSequence == sequence)
        let withCode = try DeviceConfiguration(enabledNFC: [.piv]).writeConfigData(
            reboot: false, currentLockCode: lock,
            newLockCode: DeviceConfiguration.clearedLockCode)
        try await ManagementHID.writeConfig(otp: otp, data: withCode)
        #expect(key.state.otpSequence == sequence &+ 1)
        let info = try await ManagementHID.readDeviceInfo(otp: otp)
        #expect(info.enabledNFC == [.piv] && !info.isConfigLocked)
        await otp.close()
    }
}

/// SET MODE: taken by a YubiKey 4, refused by a YubiKey 5 (which ykman configures with WRITE CONFIG).
@Suite struct ManagementSetModeTests {
    @Test func setModeOverTheFIDOAndOTPInterfaces() async throws {
        let key = VirtualKey(state: VirtualKeyState.yubiKey4())
        let fido = try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "virtual", timeout: 10)
        try await ManagementLink.fido(fido).setMode(
            USBMode(parsing: "o+f")!.setModeData(challengeResponseTimeout: 0, autoEject: nil))
        #expect(Capabilities(rawValue: key.state.usbEnabled) == [.otp, .u2f])
        await fido.close()
        let otp = OTPHIDConnection(device: key.makeOTPHIDDevice(), name: "virtual otp")
        let sequence = key.state.otpSequence
        try await ManagementLink.otp(otp).setMode(
            USBMode(parsing: "o+c")!.setModeData(challengeResponseTimeout: 30, autoEject: nil))
        #expect(Capabilities(rawValue: key.state.usbEnabled) == [.otp, .oath, .piv, .openpgp])
        #expect(key.state.challengeResponseTimeout == 30 && key.state.otpSequence == sequence &+ 1)
        await otp.close()
        // A YubiKey 5 refuses it over FIDO HID as over CCID.
        let yk5 = VirtualKey()
        let fido5 = try await CTAPHIDConnection(device: yk5.makeFIDOHIDDevice(), name: "virtual", timeout: 10)
        await #expect(throws: ManagementError.configurationRefused) {
            try await ManagementLink.fido(fido5).setMode([0x06, 0, 0, 0])
        }
        await fido5.close()
    }

    @Test func aModeTakenRestartsTheKeyOnceAnsweredOnEveryInterface() async throws {
        let key = VirtualKey(state: VirtualKeyState.yubiKey4())
        let restarts = Mutex(0)
        key.setRebootHandler { restarts.withLock { $0 += 1 } }
        try await management(key).setMode(
            USBMode(parsing: "FIDO")!.setModeData(challengeResponseTimeout: 0, autoEject: nil))
        #expect(restarts.withLock { $0 } == 1)
        let fido = try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "virtual", timeout: 10)
        try await ManagementLink.fido(fido).setMode(
            USBMode(parsing: "o+f")!.setModeData(challengeResponseTimeout: 0, autoEject: nil))
        await fido.close()
        #expect(restarts.withLock { $0 } == 2)
        let otp = OTPHIDConnection(device: key.makeOTPHIDDevice(), name: "virtual otp")
        try await ManagementLink.otp(otp).setMode(
            USBMode(parsing: "o+c")!.setModeData(challengeResponseTimeout: 0, autoEject: nil))
        await otp.close()
        #expect(restarts.withLock { $0 } == 3)
        // A mode refused (7 does not exist) leaves the key as it is, and so does a YubiKey 5 refusing SET MODE.
        #expect(status(key.process(hex("00 16 11 00 04 07 00 00 00"))) == "6A80")
        #expect(restarts.withLock { $0 } == 3)
        let yk5 = VirtualKey()
        yk5.setRebootHandler { restarts.withLock { $0 += 1 } }
        _ = try await management(yk5)
        #expect(status(yk5.process(hex("00 16 11 00 04 06 00 00 00"))) == "6D00")
        #expect(restarts.withLock { $0 } == 3)
    }

    @Test func aYubiKey4TakesTheModeAndAYubiKey5RefusesIt() async throws {
        let yk4 = VirtualKey(state: VirtualKeyState.yubiKey4())
        try await management(yk4).setMode(
            USBMode(parsing: "CCID")!.setModeData(challengeResponseTimeout: 20, autoEject: 300))
        #expect(Capabilities(rawValue: yk4.state.usbEnabled) == [.oath, .piv, .openpgp])
        #expect(yk4.state.deviceFlags & 0x80 != 0)
        #expect(yk4.state.autoEjectTimeout == 300 && yk4.state.challengeResponseTimeout == 20)
        try await management(yk4).setMode(
            USBMode(parsing: "o+f")!.setModeData(challengeResponseTimeout: 0, autoEject: nil))
        #expect(Capabilities(rawValue: yk4.state.usbEnabled) == [.otp, .u2f])
        #expect(yk4.state.deviceFlags & 0x80 == 0)
        // The mode taken, the key restarted (without a USB server to plug it in again, it power-cycled): nothing is
        // selected any more.
        #expect(status(yk4.process(hex("00 16 11 00 04 06 00 00 00"))) == "6985")
        // Mode 7 does not exist; a YubiKey 5 does not know the instruction.
        _ = try await management(yk4)
        #expect(status(yk4.process(hex("00 16 11 00 04 07 00 00 00"))) == "6A80")
        let yk5 = VirtualKey()
        _ = try await management(yk5)
        #expect(status(yk5.process(hex("00 16 11 00 04 06 00 00 00"))) == "6D00")
    }
}

private func hex(_ text: String) -> [UInt8] { try! Hex.decode(text) }
