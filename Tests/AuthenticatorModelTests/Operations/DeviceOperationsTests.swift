import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The virtual key's smart-card interface (which also carries Management), counting openings and closings, and
/// which kind of opening each was (held for a console, or one transaction).
private final class CardKey: SmartCardOpener, ManagementOpener, @unchecked Sendable {
    // @unchecked: the counters are LockedValues; `key` is set once.
    let key: VirtualKey
    let opened = LockedValue(0)
    let held = LockedValue(0)
    let closed = LockedValue(0)

    init(_ state: VirtualKeyState = VirtualKeyState.yubiKey5NFC().withDemoAccounts()) {
        key = VirtualKey(state: state)
    }

    func openSmartCard() async throws -> any SmartCardConnection {
        opened.withLock { $0 += 1 }
        return CountedConnection(VirtualKeyConnection(key: key), closed: closed, atr: USBFixture.usbATR)
    }

    func openHeldSmartCard() async throws -> any SmartCardConnection {
        held.withLock { $0 += 1 }
        return try await openSmartCard()
    }

    func openManagement() async throws -> OpenedManagement {
        try await OpenedManagement.card(try await openSmartCard())
    }

    var allClosed: Bool { opened.withLock { $0 } == closed.withLock { $0 } }
}

/// SELECT of the OATH application, and its LIST (which the key answers in parts when it holds many accounts).
private let selectOATH: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x05, 0x27, 0x21, 0x01]
private let listOATH: [UInt8] = [0x00, 0xA1, 0x00, 0x00, 0x00]

@Suite struct DeviceOperationsTests {
    @Test func theKeyIsReadOverTheReaderAndClosedAfter() async throws {
        let key = CardKey()
        let device = try await DeviceOperations(key).configurableDevice()
        #expect(device.info.serial == key.key.state.serial)
        #expect(device.info.version == key.key.state.version)
        #expect(device.interface == .ccid)
        #expect(key.allClosed && key.opened.withLock { $0 } == 1)
    }

    @Test func aKeyTooOldToBeConfiguredIsRefusedBeforeAnyChange() async throws {
        let key = CardKey(VirtualKeyState.yubiKey4())
        await #expect(throws: ManagementError.self) {
            _ = try await DeviceOperations(key).configurableDevice()
        }
        #expect(key.allClosed)
    }

    @Test func aModeIsSetModeOnAYubiKey4AndTheDeviceConfigurationOnAYubiKey5() async throws {
        let yk4 = CardKey(VirtualKeyState.yubiKey4())
        try await DeviceOperations(yk4).setMode(
            USBMode(parsing: "CCID")!, challengeResponseTimeout: 10, autoEject: 60)
        #expect(Capabilities(rawValue: yk4.key.state.usbEnabled) == [.oath, .piv, .openpgp])
        #expect(yk4.key.state.deviceFlags & USBMode.touchEjectFlag != 0 && yk4.key.state.autoEjectTimeout == 60)
        let yk5 = CardKey()
        try await DeviceOperations(yk5).setMode(USBMode(parsing: "o+f")!, challengeResponseTimeout: 0, autoEject: nil)
        #expect(Capabilities(rawValue: yk5.key.state.usbEnabled) == [.otp, .u2f, .fido2])
        #expect(yk5.key.state.challengeResponseTimeout == 0)
        #expect(try await DeviceOperations(yk5).device().info.enabledUSB == [.otp, .u2f, .fido2])
        #expect(yk4.allClosed && yk5.allClosed)
    }

    @Test func aLockCodeOnceSetIsNeededForTheNextChange() async throws {
        let key = CardKey()
        let device = DeviceOperations(key)
        let code = [UInt8](repeating: 0x42, count: 16)
        try await device.write(DeviceConfiguration(), newLockCode: code)
        #expect(try await device.configurableDevice().info.isConfigLocked)
        var timeout = DeviceConfiguration()
        timeout.autoEjectTimeout = 30
        // Without the code the key refuses; with it, the change is made.
        await #expect(throws: (any Error).self) { try await device.write(timeout) }
        #expect(try await device.configurableDevice().info.autoEjectTimeout ?? 0 == 0)
        try await device.write(timeout, currentLockCode: code)
        #expect(try await device.configurableDevice().info.autoEjectTimeout == 30)
        #expect(key.allClosed)
    }

    @Test func aResetIsCheckedAndAskedForBeforeItIsDone() async throws {
        let key = CardKey()
        let accounts = key.key.state.oath.credentials.count
        #expect(accounts > 0)
        await #expect(throws: DeviceOperationError.resetNeedsConfirmation) {
            try await DeviceOperations(key).reset(confirmed: false)
        }
        #expect(key.key.state.oath.credentials.count == accounts)
        try await DeviceOperations(key).reset(confirmed: true)
        #expect(key.key.state.oath.credentials.isEmpty)
        #expect(key.allClosed)
    }

    @Test func aKeyBeforeDeviceResetSaysSoWithoutAsking() async throws {
        let key = CardKey(VirtualKeyState.yubiKey5NFC(version: Version(5, 4, 3)).withDemoAccounts())
        await #expect(throws: ManagementError.self) { try await DeviceOperations(key).reset(confirmed: false) }
        #expect(!key.key.state.oath.credentials.isEmpty && key.allClosed)
    }

    @Test func theNDEFTagHoldsTheOTPATouchWouldType() async throws {
        let key = CardKey()
        let records = try await NDEFOperations(key).read()
        var otp = Config.OTP()
        otp.parsers = []
        let read = try otp.extract(from: records)
        #expect(OTPClassifier.classify(read).publicID != nil)
        #expect(key.allClosed)
    }
}

@Suite struct APDUOperationsTests {
    @Test func anAnswerInPartsIsGatheredUnlessChainingIsOff() async throws {
        // Forty accounts with long names: their list does not fit one answer.
        var state = VirtualKeyState.yubiKey5NFC()
        state.oath.credentials = (0..<40).map { i in
            OATHState.StoredCredential(
                id: Array("Example Service \(i):someone.with.a.long.name@example.com".utf8), type: .totp,
                algorithm: .sha1, digits: 6, secret: Array("12345678901234567890".utf8))
        }
        let key = CardKey(state)
        let apdu = APDUOperations(key)
        let (whole, parts) = try await apdu.withConsole(perCommand: false) { console in
            _ = try await console.send(selectOATH)
            let whole = try await console.send(listOATH, chaining: .follow(remaining: 0xA5))
            let parts = try await console.send(listOATH, chaining: .none)
            return (whole, parts)
        }
        // Followed, it ends 9000 after SEND REMAINING (A5) parts; not followed, the first part ends 61xx.
        #expect(whole.response.status.isSuccess)
        #expect(whole.exchanges.count > 1 && whole.exchanges.dropFirst().allSatisfy { $0.command[1] == 0xA5 })
        #expect(parts.exchanges.count == 1 && parts.response.status.sw1 == 0x61)
        #expect(whole.response.data.starts(with: parts.response.data))
        #expect(key.allClosed && key.held.withLock { $0 } == 0)
    }

    @Test func aConsoleTheUserTypesIntoHoldsTheKeyWithoutATransactionAndIsClosedAfterAFailure() async throws {
        let key = CardKey()
        struct Stop: Error {}
        let collected = LockedValue<[APDUExchange]>([])
        await #expect(throws: Stop.self) {
            try await APDUOperations(key).withConsole(perCommand: true) { console in
                _ = try await console.send(selectOATH) { exchange in collected.withLock { $0.append(exchange) } }
                throw Stop()
            }
        }
        let seen = collected.withLock { $0 }
        #expect(seen.count == 1 && seen[0].command == selectOATH && seen[0].response.suffix(2) == [0x90, 0x00])
        #expect(key.held.withLock { $0 } == 1 && key.allClosed)
    }
}
