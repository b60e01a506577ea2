import FuzzSessions
import FuzzSupport
import KeyKit
import Synchronization
import VirtualKey

/// A whole OATH "codes" operation against a key that answers from the input, as `ykterm oath code` makes it:
/// SELECT (version, salt, challenge), VALIDATE with the password's key when the key asks for one (the key's
/// proof checked), CALCULATE ALL, and CALCULATE for each TOTP account of another period; SEND REMAINING
/// gathers long answers.
///
/// Bit 0 of the first byte says whether accounts of other periods are calculated (`otherPeriods`); the rest
/// are the key's answers, one per APDU (`FuzzAnswers`; see `FuzzSmartCard` for the VALIDATE proof).
/// Invariants: the operation ends, with success or an OATH or smart-card error; a TOTP code is valid at the
/// time asked for, and every code is 1 to 10 digits (5 of Steam's letters for Steam accounts).
private let password = "correct horse"
/// 2025-06-15 16:26:40 UTC.
private let time: Int64 = 1_750_004_800

private func codes(
    _ card: any SmartCardConnection, otherPeriods: Bool,
    learnSalt: @Sendable ([UInt8]) -> Void
) async throws -> String {
    let session = try await OATHSession.make(connection: card)
    if await session.isLocked {
        learnSalt(await session.salt)
        try await session.unlock(password: password)
    }
    let entries = try await session.calculateAll(at: time, otherPeriods: otherPeriods)
    var lines = [String]()
    for entry in entries {
        if let code = entry.code {
            check(code, of: entry.credential)
        }
        lines.append("\(entry.credential.id.string)=\(entry.code?.value ?? "-")")
    }
    return lines.joined(separator: " ")
}

private func check(_ code: Code, of credential: Credential) {
    if credential.type == .totp {
        fuzzCheck(
            code.validFrom <= time && time < code.validTo,
            "\(credential.id) valid \(code.validFrom)..<\(code.validTo), not at \(time)")
    }
    let steam = Set("23456789BCDFGHJKMNPQRTVWXY")
    fuzzCheck(
        code.value.allSatisfy { credential.isSteam ? steam.contains($0) : ("0"..."9").contains($0) }
            && (credential.isSteam ? code.value.count == 5 : (1...10).contains(code.value.count)),
        "\(credential.id) has the code \(code.value)")
}

/// The password's access key by salt, for the card's VALIDATE proof: most inputs keep a seed's salt, and
/// PBKDF2 is most of an input's time (the session derives the key again itself).
private let accessKeys = Mutex<[[UInt8]: [UInt8]]>([:])

private func accessKey(salt: [UInt8]) -> [UInt8] {
    if let key = accessKeys.withLock({ $0[salt] }) { return key }
    let key = OATHSession.deriveKey(password: password, salt: salt)
    accessKeys.withLock { keys in
        if keys.count >= 64 { keys.removeAll() }
        keys[salt] = key
    }
    return key
}

private func isOATHError(_ error: any Error) -> Bool {
    error is OATHError || error is SmartCardError
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let otherPeriods = (input.first ?? 0) & 1 == 0
    let card = FuzzSmartCard(answers: FuzzAnswers(input.dropFirst()))
    return runToCompletion {
        try await codes(card, otherPeriods: otherPeriods) { salt in
            card.setOATHKey(accessKey(salt: salt))
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size)), isOATHError)
    return 0
}

/// Seeds: the demo accounts (TOTP of 30 and 60 s, HOTP, touch, SHA-256, 8 digits, Steam) with the password,
/// without one, with another password (refused), with 40 more accounts (an answer in several parts), as a key
/// that wants Le (61xx for commands without it), and without calculating other periods.
private func recordSeeds() async throws -> [Seed] {
    let demo = VirtualKeyState.yubiKey5NFC().withDemoAccounts()
    let cases:
        [(
            name: String, state: VirtualKeyState, password: String?, profile: VirtualKeyProfile,
            otherPeriods: Bool
        )] = [
            ("password", demo, password, .yubikey, true),
            ("no-password", demo, nil, .yubikey, true),
            ("wrong-password", demo, "another one", .yubikey, true),
            ("many-accounts", demo.withGeneratedAccounts(40), password, .yubikey, true),
            ("strict-le", demo, password, .strictLe, true),
            ("no-other-periods", demo, password, .yubikey, false),
        ]
    var seeds = [Seed]()
    for c in cases {
        let key = VirtualKey(state: c.state, touchDelay: 0, profile: c.profile)
        if let keyPassword = c.password {
            let session = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
            try await session.setKey(await session.deriveKey(password: keyPassword))
        }
        let card = RecordingSmartCard(card: VirtualKeyConnection(key: key))
        let otherPeriods = c.otherPeriods
        let result = await capturing { try await codes(card, otherPeriods: otherPeriods) { _ in } }
        seeds.append(
            Seed(
                name: c.name, input: [c.otherPeriods ? 0 : 1] + FuzzAnswers.encode(card.log.answers),
                outcome: describeOutcome(result)))
    }
    return seeds
}

@_cdecl("FuzzOATHCalculateAll_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
