import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The one Management route (`KeyDescriptor.openManagement`): the reader, else FIDO HID, else OTP HID, and
/// what the TUI's device view and `ykterm config` name as the interface.
@Suite struct ManagementRouteTests {
    typealias U = USBFixture

    @Test func theInterfaceIsTheReaderElseFIDOElseOTP() {
        #expect(U.full.managementInterface == .ccid)
        #expect(U.hidOnly.managementInterface == .fido)
        let otpOnly = KeyDescriptor(transport: .hid(path: U.otpNode.path), name: "YubiKey OTP", otpHID: U.otpNode)
        #expect(otpOnly.managementInterface == .otp)
        #expect(U.securityKey.managementInterface == .fido)
        var nfc = U.full
        nfc.atr = [
            0x3B, 0x8F, 0x80, 0x01, 0x80, 0x4F, 0x0C, 0xA0, 0x00, 0x00, 0x03, 0x06, 0x03, 0x00, 0x03, 0x00, 0x00,
            0x00, 0x00, 0x68,
        ]
        #expect(KeyProbe.isNFC(atr: nfc.atr) && nfc.managementInterface == .nfc)
        // The device view's entry says the same.
        #expect(KeyEntry(descriptor: U.hidOnly).managementInterface == .fido)
    }

    @Test func aKeyWithItsReaderIsReadThroughTheReaderAndClosedAfter() async throws {
        let key = VirtualKey(state: VirtualKeyState.yubiKey5NFC())
        let closed = LockedValue(0)
        let serial = try await U.full.withManagement(
            card: {
                CountedConnection(VirtualKeyConnection(key: key), closed: closed, atr: U.usbATR)
            },
            fido: {
                Issue.record("FIDO HID opened although the reader carries Management")
                throw KeyRouteError.notOnThisKey(.management, [])
            }
        ) { management in
            #expect(management.interface == .ccid)
            return try await management.link.deviceInfo().serial
        }
        #expect(serial == key.state.serial)
        #expect(closed.withLock { $0 } == 1)
    }

    @Test func aFailureInsideStillCloses() async throws {
        let key = VirtualKey(state: VirtualKeyState.yubiKey5NFC())
        let closed = LockedValue(0)
        struct Stop: Error {}
        await #expect(throws: Stop.self) {
            try await U.full.withManagement(
                card: { CountedConnection(VirtualKeyConnection(key: key), closed: closed) },
                fido: { throw Stop() }
            ) { _ in throw Stop() }
        }
        #expect(closed.withLock { $0 } == 1)
    }

    @Test func aKeyWithoutAnyInterfaceForManagementSaysSo() async {
        // A reader whose key is gone from it and no HID interface: nothing carries Management.
        var gone = KeyDescriptor(transport: .virtual, name: "Gone")
        gone.reader = nil
        #expect(gone.channels(for: .management).isEmpty && gone.managementInterface == nil)
        await #expect(throws: KeyRouteError.notOnThisKey(.management, gone.interfaces)) {
            _ = try await gone.openManagement()
        }
    }
}

/// A smart-card connection that counts its close (and answers to reset with `atr` when given).
final class CountedConnection: SmartCardConnection {
    let inner: VirtualKeyConnection
    let closed: LockedValue<Int>
    let atr: [UInt8]
    init(_ inner: VirtualKeyConnection, closed: LockedValue<Int>, atr: [UInt8]? = nil) {
        self.inner = inner
        self.closed = closed
        self.atr = atr ?? inner.atr
    }
    var name: String { inner.name }
    func transmit(_ command: [UInt8]) async throws -> [UInt8] { try await inner.transmit(command) }
    func withTransaction<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await inner.withTransaction(body)
    }
    func close() async {
        closed.withLock { $0 += 1 }
        await inner.close()
    }
}
