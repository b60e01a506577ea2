import FuzzSessions
import FuzzSupport
import KeyKit
import VirtualKey

/// A whole CTAP2 PIN change against a key that answers from the input: getInfo, then changePIN with the PIN
/// protocol getInfo offers (getKeyAgreement, the change, getPINRetries after a wrong PIN, getInfo again).
///
/// The first byte chooses the transport (`FIDOTransport`, bits 0-1: whole messages, CTAPHID packets or NFCCTAP
/// APDUs) and, above them, the new PIN; the rest are the key's answers (`FuzzAnswers`).
/// Invariants: the operation ends, with success or an error of a layer it went through (CTAP, the FIDO
/// session, the FIDO transports, the smart card); a new PIN the key's rules refuse is refused before anything
/// is sent.
private let currentPIN = "123456"
/// New PINs of several lengths (in code points and UTF-8 bytes), for keys that ask for longer ones.
private let newPINs = ["654321", "4321", "passwörd-9", "1234567890123456"]

private func changePIN(transport: FIDOTransport, newPIN: String, answers: FuzzAnswers) async throws -> String {
    try await transport.withFuzzedConnection(answers) { connection in
        try await change(connection, newPIN: newPIN, answers: answers)
    }
}

private func change(_ connection: any FIDOConnection, newPIN: String, answers: FuzzAnswers?) async throws -> String {
    let session = try await CTAP2Session.make(connection: connection)
    let before = answers?.taken
    do {
        try await session.changePIN(old: currentPIN, new: newPIN)
    } catch let error as FIDOSessionError {
        switch error {
        case .pinTooShort, .pinTooLong, .pinHasNUL:
            fuzzCheck(answers?.taken == before, "a PIN the rules refuse went to the key: \(error)")
        default: break
        }
        throw error
    }
    let version = await session.pinProtocol.map { String($0.version) } ?? "none"
    let pinSet = await session.info.pinSet.map { String($0) } ?? "absent"
    return "PIN changed with protocol \(version); clientPin \(pinSet)"
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let input = FIDOFuzzInput(input)
    let newPIN = input.variant(of: newPINs)
    return runToCompletion { try await changePIN(transport: input.transport, newPIN: newPIN, answers: input.answers) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size)), isFIDOSessionError)
    return 0
}

/// Seeds: each transport, against keys with the current PIN (the change taken), another PIN (refused: wrong
/// PIN, retries read), no PIN, PIN protocol 1 only, and getInfo fields no client knows.
private func recordSeeds() async throws -> [Seed] {
    let cases: [(name: String, pin: String?, profile: VirtualKeyProfile, newPIN: Int)] = [
        ("changed", currentPIN, .yubikey, 0),
        ("wrong-pin", "99999999", .yubikey, 0),
        ("no-pin", nil, .yubikey, 0),
        ("protocol-1", currentPIN, .pinProtocol1, 2),
        ("unknown-fields", currentPIN, .ctapUnknownFields, 3),
    ]
    var seeds = [Seed]()
    for c in cases {
        for transport in FIDOTransport.allCases {
            let key = try await VirtualKeys.fido(pin: c.pin, profile: c.profile)
            let newPIN = newPINs[c.newPIN]
            seeds.append(
                await transport.seed(c.name, variant: UInt8(c.newPIN), key: key) { connection in
                    try await change(connection, newPIN: newPIN, answers: nil)
                })
        }
    }
    return seeds
}

@_cdecl("FuzzCTAP2PINChange_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
