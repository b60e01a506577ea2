import FuzzSessions
import FuzzSupport
import KeyKit
import VirtualKey

/// The authenticatorConfig operations of `ykterm fido config toggle-always-uv`, `fido config
/// enable-ep-attestation`, `fido pin set-min-length` and `fido pin force-change` against a key that answers from
/// the input: getInfo (authenticatorConfig there, as the commands check), a PIN token with the acfg permission
/// when the key has a PIN (key agreement, getPinUvAuthTokenUsingPinWithPermissions or getPinToken), then
/// toggleAlwaysUv, enableEnterpriseAttestation, setMinPINLength with two relying parties and setMinPINLength
/// with forceChangePIN, each followed by getInfo. Each step after the token runs whether or not the one before
/// it succeeded (its error is noted), as long as the key is there.
///
/// The first byte chooses the transport (`FIDOTransport`, bits 0-1) and, above them, the new minimum PIN
/// length; the rest are the key's answers (`FuzzAnswers`). Invariants: every step ends, with success or an error
/// of a layer it went through (CTAP, the FIDO session, the FIDO transports, the smart card); a minimum below the
/// one getInfo gave is refused before anything is sent.
private let pin = "123456"
/// New minimum PIN lengths: 3 is below every key's (refused before sending), 63 above the longest PIN.
private let lengths = [6, 8, 3, 63]

private func configure(transport: FIDOTransport, length: Int, answers: FuzzAnswers) async throws -> String {
    try await transport.withFuzzedConnection(answers) { try await configure($0, length: length, answers: answers) }
}

private func configure(_ connection: any FIDOConnection, length: Int, answers: FuzzAnswers?) async throws -> String {
    let session = try await CTAP2Session.make(connection: connection)
    let info = await session.info
    guard info.supportsConfig else { throw FIDOSessionError.notSupported(.authenticatorConfig) }
    if info.pinSet == true {
        try await session.verifyPIN(pin, permissions: [.authenticatorConfig])
    }
    var lines = [String]()
    func step(_ label: String, _ body: () async throws -> String) async throws {
        do {
            lines.append(label + " " + (try await body()))
        } catch let error where isFIDOSessionError(error) && !isKeyGone(error) {
            lines.append(label + " \(type(of: error)): \(error)")
        }
    }
    func state() async -> String {
        let info = await session.info
        return "alwaysUv \(info.alwaysUV.map(String.init) ?? "-"), "
            + "ep \(info.enterpriseAttestation.map(String.init) ?? "-"), minimum \(info.minPINLength), "
            + "force change \(info.forcePINChange)"
    }
    try await step("always-uv") { "\(try await session.toggleAlwaysUV()): " + (await state()) }
    try await step("ep") {
        try await session.enableEnterpriseAttestation()
        return await state()
    }
    try await step("min-length") {
        let minimum = await session.info.minPINLength
        let before = answers?.taken
        do {
            try await session.setMinPINLength(length, rpIDs: ["example.com", "login.example.org"])
        } catch let error as FIDOSessionError {
            if case .minPINLengthDecrease = error {
                fuzzCheck(
                    length < minimum && answers?.taken == before,
                    "a minimum of \(length) refused as a decrease from \(minimum), or after sending")
            }
            throw error
        }
        fuzzCheck(length >= minimum, "a minimum of \(length) below \(minimum) went to the key")
        return await state()
    }
    try await step("force-change") {
        try await session.setMinPINLength(nil, forceChangePIN: true)
        return await state()
    }
    return lines.joined(separator: "; ")
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let input = FIDOFuzzInput(input)
    let length = input.variant(of: lengths)
    return runToCompletion { try await configure(transport: input.transport, length: length, answers: input.answers) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size)), isFIDOSessionError)
    return 0
}

/// Seeds: each transport, against a 5.7 key with the PIN (every step taken), one without a PIN (no token),
/// one whose minimum is 6 (3 is refused before sending), one whose minimum of 8 forces a PIN change (the token
/// refused), one with PIN protocol 1 only, one with another PIN (wrong PIN), and a 5.4 key (no
/// authenticatorConfig).
private func recordSeeds() async throws -> [Seed] {
    let cases:
        [(
            name: String, version: Version, pin: String?, minimum: Int?, length: UInt8,
            profile: VirtualKeyProfile
        )] = [
            ("with-pin", Version(5, 7, 2), pin, nil, 0, .yubikey),
            ("no-pin", Version(5, 7, 2), nil, nil, 1, .yubikey),
            ("minimum-6", Version(5, 7, 2), pin, 6, 2, .yubikey),
            ("forced-change", Version(5, 7, 2), pin, 8, 0, .yubikey),
            ("protocol-1", Version(5, 7, 2), pin, nil, 1, .pinProtocol1),
            ("wrong-pin", Version(5, 7, 2), "87654321", nil, 0, .yubikey),
            ("firmware-5.4", Version(5, 4, 3), pin, nil, 2, .yubikey),
        ]
    var seeds = [Seed]()
    for c in cases {
        for transport in FIDOTransport.allCases {
            let key = VirtualKey(state: .yubiKey5NFC(version: c.version), touchDelay: 0, profile: c.profile)
            if let keyPIN = c.pin {
                try await VirtualKeys.withCTAP2(key) { session in
                    try await session.setPIN(keyPIN)
                    if let minimum = c.minimum {
                        try await session.verifyPIN(keyPIN, permissions: [.authenticatorConfig])
                        try await session.setMinPINLength(minimum)
                    }
                }
            }
            let length = lengths[Int(c.length)]
            seeds.append(
                await transport.seed(c.name, variant: c.length, key: key) {
                    try await configure($0, length: length, answers: nil)
                })
        }
    }
    return seeds
}

@_cdecl("FuzzCTAP2Config_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
