import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The virtual key's OTP application over its smart-card interface, counting the openings and closings.
private final class OTPKey: OTPOpener, @unchecked Sendable {
    // @unchecked: the counters are LockedValues; `key` is set once.
    let key = VirtualKey(state: VirtualKeyState.yubiKey5NFC())
    let opened = LockedValue(0)
    let closed = LockedValue(0)

    func openOTP() async throws -> OpenedOTP {
        opened.withLock { $0 += 1 }
        let connection = CountedConnection(VirtualKeyConnection(key: key), closed: closed)
        return OpenedOTP(
            session: try await OTPSession.make(connection: connection), close: { await connection.close() })
    }

    var allClosed: Bool { opened.withLock { $0 } == closed.withLock { $0 } }
}

/// RFC 2202, test case 1: HMAC-SHA1 with twenty 0x0b bytes over "Hi There".
private let rfc2202Key = [UInt8](repeating: 0x0B, count: 20)
private let rfc2202Data = Array("Hi There".utf8)
private let rfc2202Digest = "b617318655057264e28bc0b6fb378c8ef146be00"

@Suite struct OTPOperationsTests {
    @Test func aChallengeResponseSlotAnswersRFC2202sVectorAndEveryOpeningIsClosed() async throws {
        let key = OTPKey()
        let otp = OTPOperations(key)
        let after = try await otp.programChallengeResponse(
            slot: 2, key: rfc2202Key, requireTouch: false,
            accessCode: nil, replacing: false)
        #expect(after.status.isConfigured(slot: 2) && !after.overHID)
        let response = try await otp.calculate(slot: 2, challenge: rfc2202Data) {}
        #expect(response.hex == rfc2202Digest)
        #expect(key.allClosed && key.opened.withLock { $0 } == 2)
    }

    @Test func aProgrammedSlotIsReplacedOnlyWhenTheFaceSaysSo() async throws {
        let key = OTPKey()
        let otp = OTPOperations(key)
        _ = try await otp.programChallengeResponse(
            slot: 1, key: rfc2202Key, requireTouch: false, accessCode: nil,
            replacing: false)
        let hotp = try OTPSlotConfiguration.oathHOTP(secret: Array("12345678901234567890".utf8), digits: 6)
        await #expect(throws: OTPOperationError.slotProgrammed(1)) {
            _ = try await otp.write(slot: 1, replacing: false, currentAccessCode: nil) { _ in hotp }
        }
        // Still the challenge-response key: the refused write changed nothing.
        #expect(try await otp.calculate(slot: 1, challenge: rfc2202Data) {}.hex == rfc2202Digest)
        _ = try await otp.write(slot: 1, replacing: true, currentAccessCode: nil) { _ in hotp }
        await #expect(throws: OTPError.self) { _ = try await otp.calculate(slot: 1, challenge: rfc2202Data) {} }
        #expect(key.allClosed)
    }

    @Test func theSerialIsReadForAConfigurationThatNeedsIt() async throws {
        let otp = OTPOperations(OTPKey())
        let written = try await otp.write(slot: 2, replacing: false, currentAccessCode: nil, readSerial: true) {
            serial in
            let serial = try #require(serial)
            return try OTPSlotConfiguration.yubicoOTP(
                publicID: YubicoOTP.publicID(serial: serial),
                privateID: [UInt8](repeating: 1, count: OTPSlotConfiguration.uidSize),
                key: [UInt8](repeating: 2, count: OTPSlotConfiguration.keySize))
        }
        #expect(written.serial != nil && written.status.isConfigured(slot: 2))
    }

    @Test func swapAndDeleteMoveAndEmptySlotsAndAnEmptySlotCannotBeDeleted() async throws {
        let otp = OTPOperations(OTPKey())
        await #expect(throws: OTPError.slotEmpty(1)) { _ = try await otp.delete(slot: 1, accessCode: nil) }
        _ = try await otp.programChallengeResponse(
            slot: 1, key: rfc2202Key, requireTouch: false, accessCode: nil,
            replacing: false)
        let swapped = try await otp.swap(accessCode: nil)
        #expect(!swapped.status.isConfigured(slot: 1) && swapped.status.isConfigured(slot: 2))
        #expect(try await otp.calculate(slot: 2, challenge: rfc2202Data) {}.hex == rfc2202Digest)
        let deleted = try await otp.delete(slot: 2, accessCode: nil)
        #expect(!deleted.status.isConfigured(slot: 1) && !deleted.status.isConfigured(slot: 2))
    }
}
