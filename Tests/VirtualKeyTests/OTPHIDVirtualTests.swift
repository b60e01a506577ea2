import KeyKit
import Synchronization
import Testing
import VirtualKey

/// The OTP application and device information over the virtual key's OTP HID interface, checked against
/// the same key over CCID.
@Suite struct OTPHIDVirtualTests {
    /// RFC 2202 test case 1 (HMAC-SHA1): key 0x0b × 20, data "Hi There".
    static let rfcKey = [UInt8](repeating: 0x0B, count: 20)
    static let rfcData = Array("Hi There".utf8)
    static let rfcDigest = try! Hex.decode("b617318655057264e28bc0b6fb378c8ef146be00")
    /// RFC 2202 test case 2: key "Jefe", data "what do ya want for nothing?".
    static let rfc2Digest = try! Hex.decode("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")

    static func hid(_ key: VirtualKey) async throws -> (OTPSession, OTPHIDConnection) {
        let connection = OTPHIDConnection(device: key.makeOTPHIDDevice(), name: "virtual otp")
        return (try await OTPSession.make(hid: connection), connection)
    }

    static func ccid(_ key: VirtualKey) async throws -> OTPSession {
        try await OTPSession.make(connection: VirtualKeyConnection(key: key))
    }

    @Test func statusAndSerialOverHID() async throws {
        let key = VirtualKey(touchDelay: 0)
        let (s, c) = try await Self.hid(key)
        #expect(await s.status.version == key.state.version)
        #expect(await s.status.programSequence == key.state.otpSequence)
        #expect(try await s.serial() == key.state.serial)
        await c.close()
    }

    @Test func theOTPInterfaceLeavesTheSmartCardSelectionAlone() async throws {
        let key = VirtualKey(state: VirtualKeyState.yubiKey5NFC().withDemoAccounts(), touchDelay: 0)
        // A CCID client selects OATH...
        let oath = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        // ...the OTP interface is used meanwhile (as ykman or ykterm do over OTP HID)...
        let (s, c) = try await Self.hid(key)
        try await s.programChallengeResponse(slot: 2, key: Self.rfcKey)
        _ = try await s.serial()
        await c.close()
        // ...and the CCID client's next OATH command still reaches OATH, as on a USB key.
        #expect(try await !oath.list().isEmpty)
    }

    @Test func secretProgrammedOverHIDAnswersOverCCID() async throws {
        let key = VirtualKey(touchDelay: 0)
        let (s, c) = try await Self.hid(key)
        let before = await s.status.programSequence
        try await s.programChallengeResponse(slot: 2, key: Self.rfcKey)
        #expect(await s.status.programSequence == before &+ 1)
        #expect(await s.status.slot2Configured)
        #expect(try await s.calculateHMAC(slot: 2, challenge: Self.rfcData) == Self.rfcDigest)
        // The project's own HMAC agrees with the published vector.
        #expect(Crypto.hmac(.sha1, key: Self.rfcKey, data: Self.rfcData) == Self.rfcDigest)

        let overCCID = try await Self.ccid(key)
        #expect(await overCCID.status.programSequence == before &+ 1)
        #expect(try await overCCID.calculateHMAC(slot: 2, challenge: Self.rfcData) == Self.rfcDigest)
        await c.close()
    }

    @Test func secretProgrammedOverCCIDAnswersOverHID() async throws {
        let key = VirtualKey(touchDelay: 0)
        let overCCID = try await Self.ccid(key)
        try await overCCID.programChallengeResponse(slot: 1, key: Array("Jefe".utf8))
        let (s, c) = try await Self.hid(key)
        #expect(await s.status.slot1Configured)
        #expect(
            try await s.calculateHMAC(slot: 1, challenge: Array("what do ya want for nothing?".utf8))
                == Self.rfc2Digest)
        // A 64-byte challenge goes unpadded; a slot that strips padding drops the run of bytes equal to the
        // last one, as a YubiKey does, and both interfaces agree.
        let long = (0..<64).map { UInt8($0) }
        let overHID = try await s.calculateHMAC(slot: 1, challenge: long)
        #expect(overHID == Crypto.hmac(.sha1, key: Array("Jefe".utf8), data: Array(long.prefix(63))))
        #expect(try await overCCID.calculateHMAC(slot: 1, challenge: long) == overHID)
        await c.close()
    }

    @Test func emptySlotAndAccessCodeAreRefused() async throws {
        let key = VirtualKey(touchDelay: 0)
        let (s, c) = try await Self.hid(key)
        await #expect(throws: OTPError.slotEmpty(1)) { try await s.calculateHMAC(slot: 1, challenge: [1]) }
        let code: [UInt8] = [1, 2, 3, 4, 5, 6]
        try await s.programChallengeResponse(slot: 1, key: Self.rfcKey, accessCode: nil)
        try await s.deleteSlot(slot: 1)
        #expect(await s.status.slot1Configured == false)
        try await s.programChallengeResponse(slot: 1, key: Self.rfcKey, accessCode: code)
        await #expect(throws: OTPError.configurationRefused) { try await s.deleteSlot(slot: 1) }
        try await s.deleteSlot(slot: 1, accessCode: code)
        #expect(try await Self.ccid(key).status.slot1Configured == false)
        await c.close()
    }

    @Test func touchSlotReportsTheWait() async throws {
        let key = VirtualKey(touchDelay: 0.4)
        let (s, c) = try await Self.hid(key)
        try await s.programChallengeResponse(slot: 2, key: Self.rfcKey, requireTouch: true)
        let noticed = Atomic<Int>(0)
        let answer = try await s.calculateHMAC(slot: 2, challenge: Self.rfcData, touchNoticeAfter: 30) {
            noticed.add(1, ordering: .relaxed)
        }
        #expect(answer == Self.rfcDigest)
        // The key's touch flag, not the fallback delay, brought the notice.
        #expect(noticed.load(ordering: .relaxed) == 1)
        await c.close()
    }

    @Test func deviceInfoOverBothHIDInterfacesEqualsCCID() async throws {
        let key = VirtualKey(touchDelay: 0)
        let overCCID = try await ManagementSession.make(connection: VirtualKeyConnection(key: key)).deviceInfo()

        let otp = OTPHIDConnection(device: key.makeOTPHIDDevice(), name: "virtual otp")
        #expect(try await ManagementHID.readDeviceInfo(otp: otp) == overCCID)
        await otp.close()

        let fido = try await CTAPHIDConnection(
            device: key.makeFIDOHIDDevice(options: key.fidoHIDOptionsWithReadConfig),
            name: "virtual fido", timeout: 5)
        #expect(try await ManagementHID.readDeviceInfo(fido: fido) == overCCID)
        await fido.close()
    }

    @Test func damagedFramesAreDropped() throws {
        let key = VirtualKey(touchDelay: 0)
        let device = key.makeOTPHIDDevice()
        var frame = try OTPHID.frame(slot: OTPSession.Command.deviceSerial, data: [])
        frame[65] ^= 0xFF
        for r in OTPHID.reports(frame: frame) { try device.setFeature(r) }
        #expect(device.statistics.badChecksums == 1)
        // Still the status, not an answer.
        #expect(try device.getFeature()[7] == 0)
        #expect(throws: OTPHIDError.self) { try device.setFeature([1, 2, 3]) }
        // Junk reports do not upset it.
        for n in 0..<256 { try device.setFeature([UInt8](repeating: UInt8(n), count: 8)) }
        _ = try device.getFeature()
    }
}
