import FuzzSessions
import FuzzSupport
import KeyKit
import VirtualKey

/// A whole credential enumeration against a key that answers from the input, as `ykterm fido credentials list`
/// and the FIDO2 tab make it: getInfo, a PIN token with the credential management permission (key agreement,
/// getPinUvAuthTokenUsingPinWithPermissions or getPinToken), the credentials metadata, the relying parties and
/// the credentials of each.
///
/// The first byte chooses the transport (`FIDOTransport`, bits 0-1); the rest are the key's answers
/// (`FuzzAnswers`). Invariants: the operation ends, with success or an error of a layer it went through (CTAP,
/// the FIDO session, the FIDO transports, the smart card); every credential listed belongs to the relying
/// party it was asked for.
private let pin = "123456"

private func enumerate(transport: FIDOTransport, answers: FuzzAnswers) async throws -> String {
    try await transport.withFuzzedConnection(answers) { try await listCredentials($0) }
}

private func listCredentials(_ connection: any FIDOConnection) async throws -> String {
    let session = try await CTAP2Session.make(connection: connection)
    try await session.verifyPIN(pin, permissions: [.credentialManagement])
    let metadata = try await session.credentialsMetadata()
    var lines = ["\(metadata.existing) stored, \(metadata.remaining) free"]
    for rp in try await session.relyingParties() {
        let credentials = try await session.credentials(of: rp)
        for c in credentials {
            fuzzCheck(c.rpID == rp.id, "a credential of \(c.rpID) listed under \(rp.id)")
        }
        lines.append(
            "\(rp.id): "
                + credentials.map { "\($0.user.name ?? "-") \($0.credentialID.hex)" }
                .joined(separator: ", "))
    }
    return lines.joined(separator: "; ")
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let input = FIDOFuzzInput(input)
    return runToCompletion { try await enumerate(transport: input.transport, answers: input.answers) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size)), isFIDOSessionError)
    return 0
}

/// A key with the PIN and discoverable credentials: `users` of them for each relying party in `rps`.
private func keyWithCredentials(rps: [String], users: Int, profile: VirtualKeyProfile = .yubikey) async throws
    -> VirtualKey
{
    let key = try await VirtualKeys.fido(pin: pin, profile: profile)
    guard !rps.isEmpty else { return key }
    try await VirtualKeys.withCTAP2(key) { session in
        for (r, rp) in rps.enumerated() {
            for u in 0..<users {
                // A token serves one makeCredential (CTAP 2.1 takes its permissions back after it).
                try await session.verifyPIN(pin, permissions: [.makeCredential])
                let user = CTAP2Session.User(
                    id: [UInt8(r), UInt8(u)] + Array("user".utf8), name: "user\(u)@\(rp)",
                    displayName: "User \(u)")
                _ = try await session.makeCredential(
                    clientDataHash: Crypto.digest(.sha256, Array(rp.utf8)),
                    rp: CTAP2Session.RelyingParty(id: rp, name: rp.uppercased()),
                    user: user, residentKey: true)
            }
        }
    }
    return key
}

/// Seeds: each transport, against keys with credentials of three relying parties (two users each), of one,
/// with none, with another PIN (wrong PIN), and with PIN protocol 1 only.
private func recordSeeds() async throws -> [Seed] {
    let cases: [(name: String, rps: [String], users: Int, pin: String?, profile: VirtualKeyProfile)] = [
        ("three-rps", ["example.com", "login.example.org", "webauthn.io"], 2, nil, .yubikey),
        ("one-rp", ["example.com"], 1, nil, .yubikey),
        ("empty", [], 0, nil, .yubikey),
        ("wrong-pin", [], 0, "87654321", .yubikey),
        ("protocol-1", ["example.com", "webauthn.io"], 1, nil, .pinProtocol1),
    ]
    var seeds = [Seed]()
    for c in cases {
        for transport in FIDOTransport.allCases {
            let key: VirtualKey
            if let other = c.pin {
                key = try await VirtualKeys.fido(pin: other, profile: c.profile)
            } else {
                key = try await keyWithCredentials(rps: c.rps, users: c.users, profile: c.profile)
            }
            seeds.append(await transport.seed(c.name, key: key) { try await listCredentials($0) })
        }
    }
    return seeds
}

@_cdecl("FuzzCTAP2Credentials_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
