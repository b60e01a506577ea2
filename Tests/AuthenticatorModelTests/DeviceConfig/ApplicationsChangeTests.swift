import KeyKit
import Testing
@testable import AuthenticatorModel

/// Checking a change of the enabled applications against what the key says, before anything is sent.
@Suite struct ApplicationsChangeTests {
    static let device = DeviceInfo(
        serial: 1, version: Version(5, 7, 2), supportedUSB: .all, enabledUSB: .all,
        supportedNFC: .all, enabledNFC: [.otp, .oath])

    @Test func beforeAndAfterAndWhatTheKeyIsToldToWrite() throws {
        let change = try ApplicationsChange(device: Self.device, transport: .nfc, enable: [.piv], disable: [.otp])
        #expect(change.before == [.otp, .oath] && change.after == [.oath, .piv])
        #expect(change.configuration == DeviceConfiguration(enabledNFC: [.oath, .piv]))
        #expect(!change.needsReboot)
        #expect(
            change.text
                == UIText(
                    "config.change.applications",
                    [
                        "transport": "NFC", "before": "OTP OATH",
                        "after": "OATH PIV",
                    ]))
    }

    @Test func aUSBKeyRestartsWhenItsInterfacesChange() throws {
        let oath = try ApplicationsChange(device: Self.device, transport: .usb, enable: [], disable: [.oath])
        #expect(!oath.needsReboot && !oath.cuts(.ccid))
        let ccid = try ApplicationsChange(
            device: Self.device, transport: .usb, enable: [],
            disable: Capabilities.onCCID)
        #expect(ccid.needsReboot && ccid.cuts(.ccid) && !ccid.cuts(.fido) && !ccid.cuts(.nfc))
        let nfcOff = try ApplicationsChange(device: Self.device, transport: .nfc, enable: [], disable: [.otp, .oath])
        #expect(nfcOff.cuts(.nfc) && !nfcOff.cuts(.ccid))
    }

    @Test func refusals() throws {
        #expect(throws: ConfigProblem.disablesAll) {
            try ApplicationsChange(device: Self.device, transport: .usb, enable: [], disable: .all)
        }
        #expect(throws: ConfigProblem.enableAndDisable(.oath)) {
            try ApplicationsChange(device: Self.device, transport: .usb, enable: [.oath, .piv], disable: [.oath])
        }
        let usbOnly = DeviceInfo(version: Version(5, 7, 2), supportedUSB: [.otp, .oath], enabledUSB: [.otp, .oath])
        #expect(throws: ConfigProblem.transportNotSupported(.nfc)) {
            try ApplicationsChange(device: usbOnly, transport: .nfc, enable: [.oath], disable: [])
        }
        #expect(throws: ConfigProblem.notSupported([.piv], .usb)) {
            try ApplicationsChange(device: usbOnly, transport: .usb, enable: [.piv], disable: [])
        }
        #expect(throws: ConfigProblem.unknownApplication("ssh")) {
            try ApplicationsChange.applications(["oath", "ssh"])
        }
        #expect(try ApplicationsChange.applications(["oath", "OpenPGP", "fido2"]) == [.oath, .openpgp, .fido2])
    }

    @Test func lockCodes() throws {
        #expect(
            try LockCodeText.parse(" 00112233445566778899AABBCCDDEEFF ")
                == Array([
                    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF,
                ]))
        #expect(throws: ConfigProblem.lockCodeFormat) { try LockCodeText.parse("0011") }
        #expect(throws: ConfigProblem.lockCodeFormat) { try LockCodeText.parse(String(repeating: "zz", count: 16)) }
        #expect(throws: ConfigProblem.lockCodeFormat) {
            try LockCodeText.parse(String(repeating: "00", count: 16), new: true)
        }
        #expect(try LockCodeText.parse(String(repeating: "00", count: 16)) == DeviceConfiguration.clearedLockCode)
    }
}
