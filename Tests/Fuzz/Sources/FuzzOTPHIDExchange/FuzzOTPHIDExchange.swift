import FuzzSessions
import FuzzSupport
import KeyKit
import VirtualKey

/// OTP HID frame exchanges against a keyboard interface that answers from the input (`FuzzOTPHIDDevice`), as
/// `ykterm otp info` and `otp calculate`/`chalresp` make them over HID: the status report, the device
/// information (READ CONFIG pages, or the status and serial before firmware 4.1), the serial number, an
/// HMAC-SHA1 challenge-response, and a challenge-response slot write. Each step runs whether or not the one
/// before it succeeded (its OTP error is noted), as long as the interface is there.
///
/// Bit 0 of the first byte chooses the challenge-response slot (the write goes to the other); the rest are the
/// interface's answers. Invariants: every step ends, with success or an OTP, OTP HID or smart-card (device
/// information) error; a response is 20 bytes.
private let challenge = Array("fuzzed challenge".utf8)
private let newSecret: [UInt8] = Array(0..<20)

/// Short time limits: the interface answers at once, and busy or touch reports must not make one input take
/// seconds.
private func exchanges(_ device: any HIDFeatureReportDevice, slot: Int) async throws -> String {
    let hid = OTPHIDConnection(device: device, name: "fuzz", timeout: 0.05, touchTimeout: 0.1)
    let result = await capturing { try await exchanges(hid, slot: slot) }
    await hid.close()
    return try result.get()
}

private func exchanges(_ hid: OTPHIDConnection, slot: Int) async throws -> String {
    let session = try await OTPSession.make(hid: hid)
    let status = await session.status
    var lines = ["version \(status.version), sequence \(status.programSequence), touch level \(status.touchLevel)"]
    func step(_ name: String, _ body: () async throws -> String) async throws {
        do {
            lines.append(name + " " + (try await body()))
        } catch let error where isOTPError(error) && !isKeyGone(error) {
            lines.append(name + " \(type(of: error)): \(error)")
        }
    }
    try await step("info") {
        let info = try await ManagementHID.readDeviceInfo(otp: hid)
        return "serial \(info.serial.map(String.init) ?? "none"), version \(info.version)"
    }
    try await step("serial") { try await session.serial().map(String.init) ?? "none" }
    try await step("hmac") {
        let response = try await session.calculateHMAC(slot: slot, challenge: challenge)
        fuzzCheck(response.count == 20, "a response of \(response.count) bytes")
        return response.hex
    }
    try await step("program") {
        try await session.programChallengeResponse(slot: 3 - slot, key: newSecret)
        return "sequence \(await session.status.programSequence)"
    }
    return lines.joined(separator: "; ")
}

private func isOTPError(_ error: any Error) -> Bool {
    error is OTPError || error is OTPHIDError || error is SmartCardError
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let slot = (input.first ?? 0) & 1 == 0 ? 2 : 1
    let device = FuzzOTPHIDDevice(answers: FuzzAnswers(input.dropFirst()))
    return runToCompletion { try await exchanges(device, slot: slot) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size)), isOTPError)
    return 0
}

/// Seeds: keys with a challenge-response slot (2, or 1 on firmware 5.4), with no slot programmed, asked for the
/// slot that is empty, and of firmware 4.0 (device information from the status and the serial).
private func recordSeeds() async throws -> [Seed] {
    let cases: [(name: String, version: Version, programmed: Int?, slot: Int)] = [
        ("chalresp-slot2", Version(5, 7, 2), 2, 2),
        ("chalresp-slot1", Version(5, 4, 3), 1, 1),
        ("empty-slots", Version(5, 7, 2), nil, 2),
        ("other-slot", Version(5, 7, 2), 2, 1),
        ("firmware-4.0", Version(4, 0, 5), 2, 2),
    ]
    var seeds = [Seed]()
    for c in cases {
        let key = VirtualKey(state: .yubiKey5NFC(version: c.version), touchDelay: 0)
        if let programmed = c.programmed {
            let session = try await OTPSession.make(connection: VirtualKeyConnection(key: key))
            try await session.programChallengeResponse(slot: programmed, key: Array(repeating: 0x5A, count: 20))
        }
        let device = RecordingOTPHIDDevice(device: key.makeOTPHIDDevice())
        let slot = c.slot
        let result = await capturing { try await exchanges(device, slot: slot) }
        seeds.append(
            Seed(
                name: c.name, input: [c.slot == 2 ? 0 : 1] + FuzzAnswers.encode(device.log.answers),
                outcome: describeOutcome(result)))
    }
    return seeds
}

@_cdecl("FuzzOTPHIDExchange_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
