import FuzzSessions
import FuzzSupport
import KeyKit
import VirtualKey

/// The fingerprint operations of `ykterm fido fingerprints` against a key that answers from the input: getInfo
/// (a sensor and a PIN, as `authorize` checks), a PIN token with the be permission (key agreement,
/// getPinUvAuthTokenUsingPinWithPermissions or getPinToken), getFingerprintSensorInfo, enrollBegin and
/// enrollCaptureNextSample until a good sample leaves none remaining (cancelCurrentEnrollment when that fails),
/// setFriendlyName on the new template, enumerateEnrollments, a rename of the first listed, removeEnrollment of
/// the new one (or the first listed) and enumerateEnrollments again. Each step after the token runs whether or
/// not the one before it succeeded (its error is noted), as long as the key is there.
///
/// The first byte chooses the transport (`FIDOTransport`, bits 0-1) and, above them, the new fingerprint's
/// name; the rest are the key's answers (`FuzzAnswers`). Invariants: every step ends, with success or an error
/// of a layer it went through (CTAP, the FIDO session, the FIDO transports, the smart card); a name longer than
/// the sensor allows is refused before anything is sent; a listed fingerprint's name is nil or not empty.
private let pin = "123456"
/// Names of several lengths in UTF-8 bytes (the YubiKey Bio takes 15), the last longer than any key allows.
private let names = ["finger", "left index ☝", "right thumb 2", String(repeating: "x", count: 80)]

private func bioEnrollment(transport: FIDOTransport, name: String, answers: FuzzAnswers) async throws -> String {
    try await transport.withFuzzedConnection(answers) { try await fingerprints($0, name: name, answers: answers) }
}

private func fingerprints(_ connection: any FIDOConnection, name: String, answers: FuzzAnswers?) async throws
    -> String
{
    let session = try await CTAP2Session.make(connection: connection)
    let info = await session.info
    guard info.supportsBioEnrollment else { throw FIDOSessionError.notSupported(.bioEnrollment) }
    guard info.pinSet == true else { throw CTAPError(CTAPError.pinNotSet) }
    try await session.verifyPIN(pin, permissions: [.bioEnrollment])
    var lines = [String]()
    func step(_ label: String, _ body: () async throws -> String) async throws {
        do {
            lines.append(label + " " + (try await body()))
        } catch let error where isFIDOSessionError(error) && !isKeyGone(error) {
            lines.append(label + " \(type(of: error)): \(error)")
        }
    }
    var sensor: CTAP2Session.FingerprintSensorInfo?
    try await step("sensor") {
        let s = try await session.fingerprintSensorInfo()
        sensor = s
        return "kind \(s.kind.map(String.init) ?? "-"), samples \(s.samplesRequired.map(String.init) ?? "-"), "
            + "name \(s.maxNameLength.map(String.init) ?? "-")"
    }
    var enrolled: [UInt8]?
    try await step("enroll") {
        var statuses = [String]()
        var step: CTAP2Session.EnrollmentStep
        do {
            step = try await session.enrollBegin(timeoutMilliseconds: 30_000)
            let id = step.templateID
            statuses.append("\(step.status.rawValue)/\(step.remaining)")
            while step.status != .good || step.remaining > 0 {
                step = try await session.enrollCaptureNextSample(templateID: id, timeoutMilliseconds: 30_000)
                fuzzCheck(step.templateID == id, "a capture answered for another template")
                statuses.append("\(step.status.rawValue)/\(step.remaining)")
            }
        } catch {
            try? await session.cancelCurrentEnrollment()
            throw error
        }
        enrolled = step.templateID
        return step.templateID.hex + " after " + statuses.joined(separator: ",")
    }
    try await step("name") {
        guard let enrolled else { return "none" }
        let max = sensor?.maxNameLength
        let before = answers?.taken
        do {
            try await session.setFingerprintName(templateID: enrolled, name: name, maxNameLength: max)
        } catch let error as FIDOSessionError {
            if case .fingerprintNameTooLong = error {
                fuzzCheck(answers?.taken == before, "a name over the sensor's maximum went to the key")
            }
            throw error
        }
        return name
    }
    var listed = [CTAP2Session.Fingerprint]()
    try await step("list") {
        listed = try await session.fingerprints()
        for f in listed { fuzzCheck(f.name != "", "a fingerprint listed with an empty name") }
        return listed.map { "\($0.templateID.hex)=\($0.name ?? "-")" }.joined(separator: ",")
    }
    try await step("rename") {
        guard let first = listed.first else { return "none" }
        try await session.setFingerprintName(
            templateID: first.templateID, name: "renamed",
            maxNameLength: sensor?.maxNameLength)
        return first.templateID.hex
    }
    try await step("remove") {
        guard let id = enrolled ?? listed.first?.templateID else { return "none" }
        try await session.removeFingerprint(templateID: id)
        return id.hex
    }
    try await step("list") {
        try await session.fingerprints().map { $0.templateID.hex }.joined(separator: ",")
    }
    return lines.joined(separator: "; ")
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let input = FIDOFuzzInput(input)
    let name = input.variant(of: names)
    return runToCompletion { try await bioEnrollment(transport: input.transport, name: name, answers: input.answers) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size)), isFIDOSessionError)
    return 0
}

/// A YubiKey Bio with the PIN (none when nil) whose sensor reports `samples` in turn (then good ones), with
/// `enrolled` fingerprints enrolled through KeyKit as a client would.
private func bioKey(pin: String?, samples: [CTAP2.BioEnrollment.SampleStatus], enrolled: Int) async throws
    -> VirtualKey
{
    let key = VirtualKey(touchDelay: 0, profile: .yubikeyBio, bioSampleStatuses: samples)
    guard let pin else { return key }
    try await VirtualKeys.withCTAP2(key) { session in
        try await session.setPIN(pin)
        for n in 0..<enrolled {
            try await session.verifyPIN(pin, permissions: [.bioEnrollment])
            var step = try await session.enrollBegin()
            while step.status != .good || step.remaining > 0 {
                step = try await session.enrollCaptureNextSample(templateID: step.templateID)
            }
            try await session.setFingerprintName(templateID: step.templateID, name: "finger \(n)")
        }
    }
    return key
}

/// Seeds: each transport, against a Bio key with the PIN and no fingerprint (every sample good), one whose
/// sensor first reports bad samples, one with two fingerprints (a long name refused before sending), one
/// with another PIN (wrong PIN), one without a PIN, and a key without a sensor.
private func recordSeeds() async throws -> [Seed] {
    typealias Status = CTAP2.BioEnrollment.SampleStatus
    let cases: [(name: String, pin: String?, samples: [Status], enrolled: Int, nameIndex: UInt8, bio: Bool)] = [
        ("enroll", pin, [], 0, 0, true),
        ("bad-samples", pin, [.tooHigh, .poorQuality, .good, .noUserActivity, .tooFast], 0, 1, true),
        ("two-enrolled", pin, [], 2, 3, true),
        ("wrong-pin", "87654321", [], 0, 0, true),
        ("no-pin", nil, [], 0, 0, true),
        ("no-sensor", pin, [], 0, 0, false),
    ]
    var seeds = [Seed]()
    for c in cases {
        for transport in FIDOTransport.allCases {
            let key =
                c.bio
                ? try await bioKey(pin: c.pin, samples: c.samples, enrolled: c.enrolled)
                : try await VirtualKeys.fido(pin: c.pin)
            let name = names[Int(c.nameIndex)]
            seeds.append(
                await transport.seed(c.name, variant: c.nameIndex, key: key) {
                    try await fingerprints($0, name: name, answers: nil)
                })
        }
    }
    return seeds
}

@_cdecl("FuzzBioEnrollment_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
