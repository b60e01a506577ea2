import FuzzSupport
import KeyKit
import VirtualKey

/// The YubiHSM Auth application's answers as KeyKit reads them, and the virtual key's YubiHSM Auth applet. The
/// first byte picks the input's form: 0 LIST's answer, 1 SELECT's, 2 CALCULATE's (the session keys), 3 GET
/// MANAGEMENT KEY RETRIES', 4 GET CHALLENGE's, 5 GET PUBLIC KEY's, 6 APDUs for the applet (each a length byte and
/// the command), after SELECT.
/// Invariants: parsers answer a value or `HSMAuthError.malformed`; a credential list that parses survives its own
/// encoding; session keys are 3 × 16 bytes and re-encode to the answer; every answer of the applet ends with a
/// status word.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzBytes(data, size)
    guard let form = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    switch form % 7 {
    case 0:
        expectMalformation { () throws(HSMAuthError) in
            let list = try HSMAuthCredential.list(rest)
            let encoded = list.flatMap { TLV(HSMAuth.Tag.labelList, $0.entry).encoded }
            fuzzCheck((try? HSMAuthCredential.list(encoded)) == list, "\(rest.hex) re-read differs")
        }
    case 1:
        expectMalformation { () throws(HSMAuthError) in _ = try HSMAuthSession.parseSelect(rest).description }
    case 2:
        expectMalformation { () throws(HSMAuthError) in
            let keys = try HSMAuthSessionKeys(answer: rest)
            fuzzCheck(keys.encoded == rest, "session keys re-encode differently")
            fuzzCheck([keys.enc, keys.mac, keys.rmac].allSatisfy { $0.count == 16 }, "a key not of 16 bytes")
        }
    case 3:
        expectMalformation { () throws(HSMAuthError) in
            fuzzCheck(try HSMAuthSession.parseRetries(rest) >= 0, "negative retries")
        }
    case 4:
        expectMalformation { () throws(HSMAuthError) in
            let challenge = try HSMAuthSession.parseChallenge(rest)
            fuzzCheck(challenge.count == 8 || challenge.count == 65, "a challenge of \(challenge.count) bytes")
        }
    case 5:
        expectMalformation { () throws(HSMAuthError) in
            let key = try HSMAuthSession.parsePublicKey(rest)
            fuzzCheck(key.uncompressed == rest, "a public key re-encodes differently")
        }
    default:
        let key = VirtualKey(touchDelay: 0, userPresenceDelay: 0)
        _ = key.process((try? APDU.select(aid: AID.hsmauth).encoded()) ?? [])
        var i = 0
        var count = 0
        while i < rest.count, count < 8 {
            let n = Int(rest[i])
            let command = Array(rest[(i + 1)..<min(rest.count, i + 1 + n)])
            i += 1 + n
            count += 1
            let answer = key.process(command)
            fuzzCheck(answer.count >= 2, "an answer without a status word to \(command.hex)")
        }
    }
    return 0
}

/// Runs `body`; any error but a malformation is a finding.
private func expectMalformation(_ body: () throws(HSMAuthError) -> Void) {
    do {
        try body()
    } catch .malformed {
    } catch {
        fuzzCheck(false, "not a malformation: \(error)")
    }
}

@_cdecl("FuzzHSMAuth_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
