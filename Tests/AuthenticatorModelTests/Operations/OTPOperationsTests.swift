import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The virtual key's OTP and Management applications over its smart-card interface, counting the openings and
/// closings (`enhancedPIN`: a key that enforces PIN complexity).
private final class OTPKey: OTPOpener, ManagementOpener, @unchecked Sendable {
    // @unchecked: the counters are LockedValues; `key` is set once.
    let key: VirtualKey
    let opened = LockedValue(0)
    let closed = LockedValue(0)
    let managementOpened = LockedValue(0)

    init(enhancedPIN: Bool = false) {
        var state = VirtualKeyState.yubiKey5NFC()
        state.pinComplexity = enhancedPIN
        key = VirtualKey(state: state)
    }

    func openOTP() async throws -> OpenedOTP {
        opened.withLock { $0 += 1 }
        let connection = CountedConnection(VirtualKeyConnection(key: key), closed: closed)
        return OpenedOTP(
            session: try await OTPSession.make(connection: connection), close: { await connection.close() })
    }

    func openManagement() async throws -> OpenedManagement {
        opened.withLock { $0 += 1 }
        managementOpened.withLock { $0 += 1 }
        return try await OpenedManagement.card(CountedConnection(VirtualKeyConnection(key: key), closed: closed))
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

    /// ykman's rule on a key that enforces PIN complexity (`otp settings --new-access-code`): a new access code
    /// of one byte repeated is refused before anything is written; one of two different bytes is taken. Only
    /// the trivial code makes the operation read the device information.
    @Test func anEnhancedPINKeyRefusesANewAccessCodeOfOneRepeatedByte() async throws {
        let key = OTPKey(enhancedPIN: true)
        let otp = OTPOperations(key)
        _ = try await otp.programChallengeResponse(
            slot: 1, key: rfc2202Key, requireTouch: false, accessCode: nil, replacing: false)
        let trivial = [UInt8](repeating: 0x11, count: OTPSlotConfiguration.accessCodeSize)
        let update = try OTPSlotConfiguration.update(OTPSlotConfiguration.Settings(), accessCode: trivial)
        await #expect(throws: OTPOperationError.accessCodeTooSimple) {
            _ = try await otp.update(slot: 1, update, currentAccessCode: nil)
        }
        let hotp = try OTPSlotConfiguration.oathHOTP(
            secret: Array("12345678901234567890".utf8), digits: 6, accessCode: trivial)
        await #expect(throws: OTPOperationError.accessCodeTooSimple) {
            _ = try await otp.write(slot: 2, replacing: false, currentAccessCode: nil) { _ in hotp }
        }
        #expect(key.managementOpened.withLock { $0 } == 2 && key.allClosed)
        // Nothing was written: slot 1 is still the challenge-response key, slot 2 is empty, and slot 1 takes a
        // new code without a current one (it has none).
        #expect(try await otp.calculate(slot: 1, challenge: rfc2202Data) {}.hex == rfc2202Digest)
        let slots = try await otp.slots()
        #expect(slots.status.isConfigured(slot: 1) && !slots.status.isConfigured(slot: 2))
        let good: [UInt8] = [0x11, 0x11, 0x11, 0x11, 0x11, 0x12]
        _ = try await otp.update(
            slot: 1, try OTPSlotConfiguration.update(OTPSlotConfiguration.Settings(), accessCode: good),
            currentAccessCode: nil)
        #expect(key.managementOpened.withLock { $0 } == 2)
        await #expect(throws: OTPError.self) { _ = try await otp.delete(slot: 1, accessCode: nil) }
        _ = try await otp.delete(slot: 1, accessCode: good)
        #expect(key.allClosed)
    }

    /// A key that does not enforce PIN complexity takes any access code, as the key itself does.
    @Test func anOrdinaryKeyTakesAnAccessCodeOfOneRepeatedByte() async throws {
        let key = OTPKey()
        let otp = OTPOperations(key)
        let trivial = [UInt8](repeating: 0x11, count: OTPSlotConfiguration.accessCodeSize)
        let hotp = try OTPSlotConfiguration.oathHOTP(
            secret: Array("12345678901234567890".utf8), digits: 6, accessCode: trivial)
        _ = try await otp.write(slot: 2, replacing: false, currentAccessCode: nil) { _ in hotp }
        await #expect(throws: OTPError.self) { _ = try await otp.delete(slot: 2, accessCode: nil) }
        _ = try await otp.delete(slot: 2, accessCode: trivial)
        #expect(key.managementOpened.withLock { $0 } == 1 && key.allClosed)
    }

    /// What the rule looks at: a new code (not none, not the slot's current one) of one byte repeated.
    @Test func onlyANewCodeOfOneRepeatedByteIsTrivial() throws {
        let ones = [UInt8](repeating: 1, count: 6)
        func setting(_ code: [UInt8]?) throws -> OTPSlotConfiguration {
            try OTPSlotConfiguration.update(OTPSlotConfiguration.Settings(), accessCode: code)
        }
        #expect(OTPOperations.setsTrivialAccessCode(try setting(ones), current: nil))
        #expect(OTPOperations.setsTrivialAccessCode(try setting([UInt8](repeating: 0xFF, count: 6)), current: nil))
        #expect(!OTPOperations.setsTrivialAccessCode(try setting(ones), current: ones))
        #expect(!OTPOperations.setsTrivialAccessCode(try setting(nil), current: ones))
        #expect(!OTPOperations.setsTrivialAccessCode(try setting([1, 1, 1, 1, 1, 2]), current: nil))
    }
}
