import KeyKit
import Testing

private let select = "00 A4 04 00 08 A0 00 00 05 27 47 11 17 00"
private let lockA = [UInt8](0x00..<0x10)
private let lockB = [UInt8](repeating: 0xAB, count: 16)

/// WRITE CONFIG's data as yubikit lays it out (DeviceConfig.get_bytes): a length byte, then reboot (0C),
/// current lock code (0B), USB enabled (03), NFC enabled (0E), auto-eject (06), challenge-response timeout
/// (07), device flags (08), new lock code (0A).
@Suite struct DeviceConfigurationTests {
    @Test func everyFieldInYubikitsOrder() throws {
        let config = DeviceConfiguration(
            enabledUSB: [.otp, .fido2], enabledNFC: [.oath], autoEjectTimeout: 300,
            challengeResponseTimeout: 30, deviceFlags: 0x80)
        let data = try config.writeConfigData(reboot: true, currentLockCode: lockA, newLockCode: lockB)
        let expected =
            "0c00" + "0b10" + lockA.hex + "03020201" + "0e020020" + "0602012c" + "07011e" + "080180"
            + "0a10" + lockB.hex
        #expect(data.hex == String(format2(data.count - 1)) + expected)
        #expect(Int(data[0]) == data.count - 1)
    }

    @Test func onlyWhatIsGivenIsWritten() throws {
        #expect(try DeviceConfiguration().writeConfigData(reboot: false) == [0])
        #expect(try DeviceConfiguration(enabledNFC: []).writeConfigData(reboot: false).hex == "040e020000")
        #expect(
            try DeviceConfiguration().writeConfigData(reboot: false, newLockCode: DeviceConfiguration.clearedLockCode)
                .hex
                == "120a10" + String(repeating: "00", count: 16))
    }

    @Test func lockCodesAreSixteenBytes() {
        #expect(throws: ManagementError.lockCodeLength(15)) {
            try DeviceConfiguration().writeConfigData(reboot: false, currentLockCode: Array(lockA.prefix(15)))
        }
        #expect(throws: ManagementError.lockCodeLength(17)) {
            try DeviceConfiguration().writeConfigData(reboot: false, newLockCode: lockA + [1])
        }
    }

    @Test func writeSendsINS1CAndMaps63C0ToWrongLockCode() async throws {
        let data = try DeviceConfiguration(enabledUSB: [.otp]).writeConfigData(reboot: false, currentLockCode: lockA)
        let apdu = "00 1C 00 00 " + format2(data.count) + data.hex
        let card = ScriptedConnection([(select, "35 2E 37 2E 32 90 00"), (apdu, "90 00"), (apdu, "63 C0")])
        let session = try await ManagementSession.make(connection: card)
        try await session.writeConfiguration(DeviceConfiguration(enabledUSB: [.otp]), currentLockCode: lockA)
        await #expect(throws: ManagementError.wrongLockCode) {
            try await session.writeConfiguration(DeviceConfiguration(enabledUSB: [.otp]), currentLockCode: lockA)
        }
        #expect(card.remaining == 0)
    }

    @Test func firmwareGates() async throws {
        let card = ScriptedConnection([(select, "34 2E 33 2E 37 90 00")])
        let old = try await ManagementSession.make(connection: card)
        await #expect(
            throws: ManagementError.needsFirmware(.writeConfig, minimum: Version(5, 0, 0), actual: Version(4, 3, 7))
        ) {
            try await old.writeConfiguration(DeviceConfiguration(enabledUSB: [.otp]))
        }
        let card55 = ScriptedConnection([(select, "35 2E 35 2E 30 90 00")])
        let fiveFive = try await ManagementSession.make(connection: card55)
        await #expect(
            throws: ManagementError.needsFirmware(.deviceReset, minimum: Version(5, 6, 0), actual: Version(5, 5, 0))
        ) {
            try await fiveFive.deviceReset()
        }
        #expect(card.sent.count == 1 && card55.sent.count == 1)  // nothing sent past SELECT
        let card57 = ScriptedConnection([
            (select, "35 2E 37 2E 32 90 00"), ("00 1F 00 00", "90 00"), ("00 1F 00 00", "6D 00"),
        ])
        let fiveSeven = try await ManagementSession.make(connection: card57)
        try await fiveSeven.deviceReset()
        await #expect(throws: ManagementError.resetRefused(.invalidInstruction)) { try await fiveSeven.deviceReset() }
    }

    @Test func applicationsAndTheirUSBInterfaces() {
        #expect(
            Capabilities(name: "openpgp") == .openpgp && Capabilities(name: "FIDO2") == .fido2
                && Capabilities(name: "x") == nil)
        #expect(Capabilities.all.usbInterfaces == [.otp, .fido, .ccid])
        #expect(Capabilities([.u2f]).usbInterfaces == [.fido])
        #expect(Capabilities([.otp, .hsmauth]).usbInterfaces == [.otp, .ccid])
        #expect(Capabilities().usbInterfaces.isEmpty)
    }
}

private func format2(_ n: Int) -> String {
    let s = String(n, radix: 16)
    return s.count == 1 ? "0" + s : s
}
