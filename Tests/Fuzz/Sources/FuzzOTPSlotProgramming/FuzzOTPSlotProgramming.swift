import FuzzSessions
import FuzzSupport
import KeyKit
import VirtualKey

/// The slot writes of `ykterm otp yubiotp`, `static`, `hotp`, `settings`, `ndef`, `swap` and `delete` against a
/// key that answers from the input, over CCID APDUs (`OTPSession.make(connection:)`: the status in SELECT's
/// answer and in every write's) or the OTP HID interface (`OTPSession.make(hid:)`: the status report read
/// before and after each frame): the status and the serial (the public ID of the Yubico OTP comes from it),
/// then a Yubico OTP in slot 1, a static password in slot 2, slot 1's settings updated, slot 1 on the NDEF
/// tag, the slots swapped, an OATH-HOTP in slot 2, slot 1 deleted and the status read again. Each write runs
/// whether or not the one before it succeeded (its error is noted), as long as the key is there.
///
/// The first byte chooses the interface (bit 0: CCID or OTP HID) and whether the writes carry the slots'
/// access code (bit 1); the rest are the key's answers (`FuzzAnswers`; over OTP HID the first is the status
/// report, then one per frame). Invariants: every step ends, with success or an error of a layer it went
/// through (OTP, OTP HID, the smart card); over CCID, after each write the session took, its programming
/// sequence moved on from the session's by one, or back to 0 with no slot left configured. (Over OTP HID the
/// connection compares with the status report it reads just before the frame, which may differ from the
/// session's: a refused write leaves the session's status as it was.)
private let accessCode: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6]
private let privateID: [UInt8] = [0x0A, 0x1B, 0x2C, 0x3D, 0x4E, 0x5F]
private let aesKey = [UInt8](0x40..<0x50)
private let hotpSecret = Array("12345678901234567890".utf8)
private let staticScanCodes = (try? ScanCodeLayout.us.encode("fuzz static 1").get()) ?? []

private func program(_ session: OTPSession, locked: Bool, overCCID: Bool) async throws -> String {
    let status = await session.status
    var lines = ["version \(status.version), sequence \(status.programSequence), touch level \(status.touchLevel)"]
    let code = locked ? accessCode : nil
    func step(_ label: String, _ body: () async throws -> String) async throws {
        do {
            lines.append(label + " " + (try await body()))
        } catch let error where isOTPError(error) && !isKeyGone(error) {
            lines.append(label + " \(type(of: error)): \(error)")
        }
    }
    /// A slot write, and (over CCID) the sequence rule the session checks, checked again from outside.
    func write(_ label: String, _ body: () async throws -> Void) async throws {
        try await step(label) {
            let before = await session.status
            try await body()
            let after = await session.status
            fuzzCheck(
                !overCCID || after.programSequence == before.programSequence &+ 1
                    || (after.programSequence == 0 && after.touchLevel & 0x1F == 0),
                "a write taken with the sequence going from \(before.programSequence) to "
                    + "\(after.programSequence)")
            return "sequence \(after.programSequence), slots \(after.slot1Configured) \(after.slot2Configured)"
        }
    }
    var publicID: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05]
    try await step("serial") {
        guard let serial = try await session.serial() else { return "none" }
        publicID = YubicoOTP.publicID(serial: serial)
        return String(serial)
    }
    try await write("yubiotp") {
        try await session.put(
            slot: 1,
            try OTPSlotConfiguration.yubicoOTP(
                publicID: publicID, privateID: privateID, key: aesKey, accessCode: code), currentAccessCode: code)
    }
    try await write("static") {
        let configuration = try OTPSlotConfiguration.staticPassword(
            scanCodes: staticScanCodes, appendEnter: false,
            accessCode: code)
        try await session.put(slot: 2, configuration, currentAccessCode: code)
    }
    try await write("settings") {
        let settings = OTPSlotConfiguration.Settings(appendEnter: false, pacing: .ms20, useNumericKeypad: true)
        try await session.update(
            slot: 1, try OTPSlotConfiguration.update(settings, accessCode: code),
            currentAccessCode: code)
    }
    try await write("ndef") { try await session.setNDEF(slot: 1, try OTPNDEFConfiguration.uri(), accessCode: code) }
    try await write("swap") { try await session.swapSlots(accessCode: code) }
    try await write("hotp") {
        try await session.put(
            slot: 2,
            try OTPSlotConfiguration.oathHOTP(
                secret: hotpSecret, digits: 8,
                movingFactor: 32, accessCode: code),
            currentAccessCode: code)
    }
    try await write("delete") { try await session.deleteSlot(slot: 1, accessCode: code) }
    try await step("status") {
        let s = try await session.refreshStatus()
        return "sequence \(s.programSequence), touch level \(s.touchLevel)"
    }
    return lines.joined(separator: "; ")
}

private func isOTPError(_ error: any Error) -> Bool {
    error is OTPError || error is OTPHIDError || error is SmartCardError
}

/// Over OTP HID with short time limits: the interface answers at once, and busy or touch reports must not
/// make one input take seconds.
private func overHID(_ device: any HIDFeatureReportDevice, locked: Bool, fuzzed: Bool) async throws -> String {
    let hid =
        fuzzed
        ? OTPHIDConnection(device: device, name: "fuzz", timeout: 0.05, touchTimeout: 0.1)
        : OTPHIDConnection(device: device, name: "virtual")
    let result = await capturing {
        try await program(try await OTPSession.make(hid: hid), locked: locked, overCCID: false)
    }
    await hid.close()
    return try result.get()
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let options = input.first ?? 0
    let answers = FuzzAnswers(input.dropFirst())
    let locked = options & 2 != 0
    if options & 1 == 0 {
        let card = FuzzSmartCard(answers: answers)
        return runToCompletion {
            try await program(try await OTPSession.make(connection: card), locked: locked, overCCID: true)
        }
    }
    let device = FuzzOTPHIDDevice(answers: answers)
    return runToCompletion { try await overHID(device, locked: locked, fuzzed: true) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size)), isOTPError)
    return 0
}

/// Seeds: over CCID and over OTP HID, a 5.7 key with empty slots, one with both slots programmed
/// (challenge-response and HOTP), one whose slots have the access code the writes give, the same key written
/// without it (every write refused), and a 5.4 key.
private func recordSeeds() async throws -> [Seed] {
    let cases: [(name: String, version: Version, programmed: Bool, protected: Bool, locked: Bool)] = [
        ("empty", Version(5, 7, 2), false, false, false),
        ("programmed", Version(5, 7, 2), true, false, false),
        ("access-code", Version(5, 7, 2), true, true, true),
        ("no-access-code", Version(5, 7, 2), true, true, false),
        ("firmware-5.4", Version(5, 4, 3), false, false, false),
    ]
    var seeds = [Seed]()
    for c in cases {
        for hid in [false, true] {
            let key = VirtualKey(state: .yubiKey5NFC(version: c.version), touchDelay: 0)
            if c.programmed {
                let session = try await OTPSession.make(connection: VirtualKeyConnection(key: key))
                let code = c.protected ? accessCode : nil
                try await session.programChallengeResponse(
                    slot: 1, key: Array(repeating: 0x5A, count: 20),
                    accessCode: code)
                try await session.put(slot: 2, try OTPSlotConfiguration.oathHOTP(secret: hotpSecret, accessCode: code))
            }
            let options = (hid ? 1 : 0) | (c.locked ? 2 : 0) as UInt8
            let result: Result<String, any Error>
            let answers: [FuzzAnswer]
            if hid {
                let device = RecordingOTPHIDDevice(device: key.makeOTPHIDDevice())
                result = await capturing { try await overHID(device, locked: c.locked, fuzzed: false) }
                answers = device.log.answers
            } else {
                let card = RecordingSmartCard(card: VirtualKeyConnection(key: key))
                let locked = c.locked
                result = await capturing {
                    try await program(try await OTPSession.make(connection: card), locked: locked, overCCID: true)
                }
                answers = card.log.answers
            }
            seeds.append(
                Seed(
                    name: "\(c.name)-\(hid ? "hid" : "ccid")", input: [options] + FuzzAnswers.encode(answers),
                    outcome: describeOutcome(result)))
        }
    }
    return seeds
}

@_cdecl("FuzzOTPSlotProgramming_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
