import Testing

@testable import KeyKit

/// TOTP from a challenge-response slot: the challenge is the RFC 6238 time step, the code RFC 4226's truncation of
/// the slot's HMAC-SHA1. Checked with RFC 6238's published SHA-1 codes, the slot's HMAC computed here.
@Suite struct ChallengeResponseTOTPTests {
    static let seed = Array("12345678901234567890".utf8)

    @Test(arguments: [
        (Int64(59), "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"),
        (1_234_567_890, "89005924"), (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
    ])
    func rfc6238Codes(time: Int64, code: String) {
        let challenge = ChallengeResponseTOTP.challenge(time: time)
        #expect(challenge == BigEndian.bytes(UInt64(time / 30), count: 8))
        let response = Crypto.hmac(.sha1, key: Self.seed, data: challenge)
        #expect(ChallengeResponseTOTP.code(response: response, digits: 8) == code)
        #expect(ChallengeResponseTOTP.code(response: response, digits: 6) == String(code.suffix(6)))
    }

    @Test func aTimeBefore1970IsStepZeroAndAShortResponseNoCode() {
        #expect(ChallengeResponseTOTP.challenge(time: -5) == [0, 0, 0, 0, 0, 0, 0, 0])
        #expect(ChallengeResponseTOTP.code(response: [1, 2, 3], digits: 6) == nil)
    }
}
