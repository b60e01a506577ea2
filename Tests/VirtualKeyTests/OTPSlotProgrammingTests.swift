import Foundation
import KeyKit
import Testing
import VirtualKey

/// Slot programming on the virtual key as a YubiKey takes it (access codes, UPDATE, swap, NDEF slot), over
/// CCID and the OTP HID interface, and what its keyboard slots then type.
@Suite struct OTPSlotProgrammingTests {
    static let privateID: [UInt8] = [0xC0, 0xFF, 0xEE, 0x12, 0x34, 0x56]
    static let aesKey: [UInt8] = Array(0..<16)
    static let code: [UInt8] = [1, 2, 3, 4, 5, 0xA6]
    /// RFC 4226 appendix D: the codes of "12345678901234567890" for counters 0 to 9.
    static let rfc4226 = [
        "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871",
        "520489",
    ]

    static func yubicoOTP(accessCode: [UInt8]? = nil) throws -> OTPSlotConfiguration {
        try OTPSlotConfiguration.yubicoOTP(
            publicID: YubicoOTP.publicID(serial: 28_123_456), privateID: privateID,
            key: aesKey, accessCode: accessCode)
    }

    static func ccid(_ key: VirtualKey) async throws -> OTPSession {
        try await OTPSession.make(connection: VirtualKeyConnection(key: key))
    }

    @Test func yubicoOTPSlotTypesOTPsThatDecrypt() async throws {
        let key = VirtualKey(touchDelay: 0)
        try await Self.ccid(key).put(slot: 2, try Self.yubicoOTP())
        #expect(key.touch(slot: 1) == nil)
        for expected in [(UInt16(1), UInt8(0)), (1, 1), (1, 2)] {
            let typed = try #require(key.touch(slot: 2))
            #expect(typed.hasSuffix("\n"))
            let d = try YubicoOTP.decryptVerified(String(typed.dropLast()), key: Self.aesKey)
            #expect(d.publicID == "vvcccbltdbfc" && d.token.privateID == Self.privateID)
            #expect((d.token.usageCounter, d.token.sessionCounter) == expected)
        }
        key.powerCycle()
        let after = try YubicoOTP.decryptVerified(String(try #require(key.touch(slot: 2)).dropLast()), key: Self.aesKey)
        #expect(after.token.usageCounter == 2 && after.token.sessionCounter == 0)
    }

    @Test func hotpAndStaticSlotsType() async throws {
        let key = VirtualKey(touchDelay: 0)
        let session = try await Self.ccid(key)
        try await session.put(
            slot: 1,
            try OTPSlotConfiguration.oathHOTP(
                secret: Array("12345678901234567890".utf8),
                appendEnter: false))
        #expect((0..<10).map { _ in key.touch(slot: 1) } == Self.rfc4226)
        try await session.put(
            slot: 1,
            try OTPSlotConfiguration.oathHOTP(
                secret: Array("12345678901234567890".utf8),
                movingFactor: 16))
        // A new configuration starts at its own moving factor.
        let sixteen = key.touch(slot: 1)
        #expect(sixteen?.count == 7 && sixteen?.last == "\n")
        let codes = try ScanCodeLayout.us.encode("Pa55 word!").get()
        try await session.put(slot: 2, try OTPSlotConfiguration.staticPassword(scanCodes: codes))
        #expect(key.touch(slot: 2) == "Pa55 word!\n")
        // The short touch types slot 1 (without Enter).
        #expect(key.typeOTP().count == 6)
    }

    @Test func accessCodeGuardsEveryWrite() async throws {
        let key = VirtualKey(touchDelay: 0)
        let session = try await Self.ccid(key)
        try await session.put(slot: 1, try Self.yubicoOTP(accessCode: Self.code))
        let stored = key.state.otpSlots.slot1
        let wrong: [UInt8] = [9, 9, 9, 9, 9, 9]
        await #expect(throws: OTPError.configurationRefused) { try await session.deleteSlot(slot: 1) }
        await #expect(throws: OTPError.configurationRefused) {
            try await session.deleteSlot(slot: 1, accessCode: wrong)
        }
        await #expect(throws: OTPError.configurationRefused) { try await session.put(slot: 1, try Self.yubicoOTP()) }
        await #expect(throws: OTPError.configurationRefused) {
            try await session.update(slot: 1, try OTPSlotConfiguration.update(.init()))
        }
        await #expect(throws: OTPError.configurationRefused) {
            try await session.setNDEF(slot: 1, try OTPNDEFConfiguration.uri("https://example.org/"))
        }
        await #expect(throws: OTPError.configurationRefused) { try await session.swapSlots() }
        #expect(key.state.otpSlots.slot1 == stored)
        // With the code: an update keeps the secret and sets a new code.
        try await session.update(
            slot: 1, try OTPSlotConfiguration.update(.init(appendEnter: false), accessCode: wrong),
            currentAccessCode: Self.code)
        let updated = try #require(key.state.otpSlots.configuration(1))
        #expect(updated.key == Self.aesKey && updated.uid == Self.privateID && !updated.appendsEnter)
        #expect(updated.accessCode == wrong)
        try await session.swapSlots(accessCode: wrong)
        #expect(key.state.otpSlots.slot1 == nil && key.state.otpSlots.configuration(2)?.key == Self.aesKey)
        try await session.deleteSlot(slot: 2, accessCode: wrong)
        #expect(key.state.otpSlots.slot2 == nil)
    }

    @Test func updateNeedsAProgrammedSlotThatAllowsIt() async throws {
        let key = VirtualKey(touchDelay: 0)
        let session = try await Self.ccid(key)
        let update = try OTPSlotConfiguration.update(.init(pacing: .ms40))
        await #expect(throws: OTPError.configurationRefused) { try await session.update(slot: 1, update) }
        var locked = try Self.yubicoOTP()
        locked.extFlags &= ~OTPSlotConfiguration.ExtFlag.allowUpdate
        try await session.put(slot: 1, locked)
        await #expect(throws: OTPError.configurationRefused) { try await session.update(slot: 1, update) }
        // An update may not change the kind of slot.
        try await session.put(slot: 1, try Self.yubicoOTP())
        var kindChange = update
        kindChange.ticketFlags |= OTPSlotConfiguration.TicketFlag.oathHOTP
        await #expect(throws: OTPError.configurationRefused) { try await session.update(slot: 1, kindChange) }
        try await session.update(slot: 1, update)
        #expect(key.state.otpSlots.configuration(1).map { OTPSlotConfiguration.Pacing(flags: $0.configFlags) } == .ms40)
    }

    @Test func swapMovesCountersAndNDEFServesItsSlot() async throws {
        let key = VirtualKey(touchDelay: 0)
        let session = try await Self.ccid(key)
        try await session.put(slot: 1, try OTPSlotConfiguration.oathHOTP(secret: Array("12345678901234567890".utf8)))
        #expect(key.touch(slot: 1) == Self.rfc4226[0] + "\n")
        try await session.swapSlots()
        #expect(key.touch(slot: 2) == Self.rfc4226[1] + "\n")
        try await session.put(
            slot: 1, try OTPSlotConfiguration.staticPassword(scanCodes: try ScanCodeLayout.us.encode("one").get()))
        // The NDEF tag serves slot 1 after the standard URI, then slot 2 after the prefix chosen.
        var records = try await NDEFSession(connection: VirtualKeyConnection(key: key)).read()
        #expect(try records[0].content() == .uri("https://my.yubico.com/yk/#one"))
        try await Self.ccid(key).setNDEF(slot: 2, try OTPNDEFConfiguration.uri("https://example.org/c="))
        records = try await NDEFSession(connection: VirtualKeyConnection(key: key)).read()
        #expect(try records[0].content() == .uri("https://example.org/c=" + Self.rfc4226[2]))
        // A text record: the prefix, then the output.
        try await Self.ccid(key).setNDEF(slot: 2, try OTPNDEFConfiguration.text("code "))
        records = try await NDEFSession(connection: VirtualKeyConnection(key: key)).read()
        #expect(try records[0].content() == .text("code " + Self.rfc4226[3], language: "en", utf16: false))
    }

    @Test func overHIDTheSameRulesHold() async throws {
        let key = VirtualKey(touchDelay: 0)
        let connection = OTPHIDConnection(device: key.makeOTPHIDDevice(), name: "virtual otp")
        let session = try await OTPSession.make(hid: connection)
        try await session.put(slot: 1, try Self.yubicoOTP(accessCode: Self.code))
        try await session.put(
            slot: 2, try OTPSlotConfiguration.staticPassword(scanCodes: [0x04], accessCode: Self.code))
        await #expect(throws: OTPError.configurationRefused) { try await session.swapSlots() }
        try await session.swapSlots(accessCode: Self.code)
        #expect(key.state.otpSlots.configuration(2)?.kind == .yubicoOTP)
        try await session.setNDEF(slot: 2, try OTPNDEFConfiguration.uri("https://example.org/"), accessCode: Self.code)
        #expect(key.state.otpSlots.ndefSlot == 2)
        try await session.update(slot: 1, try OTPSlotConfiguration.update(.init()), currentAccessCode: Self.code)
        #expect(key.state.otpSlots.configuration(1)?.hasAccessCode == false)
        await connection.close()
    }

    @Test func stateFileKeepsSlotsCountersAndNDEF() throws {
        var state = VirtualKeyState.yubiKey5NFC()
        state.otpSlots.slot1 = try Self.yubicoOTP().bytes
        state.otpSlots.setCounters(1, OTPSlotCounters(usage: 7, session: 3, hotp: nil))
        state.otpSlots.ndefSlot = 1
        state.otpSlots.ndef = try OTPNDEFConfiguration.uri("https://example.org/").bytes
        let data = try JSONEncoder().encode(state)
        #expect(try JSONDecoder().decode(VirtualKeyState.self, from: data) == state)
    }
}
