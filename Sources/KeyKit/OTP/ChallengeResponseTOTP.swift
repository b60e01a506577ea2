/// TOTP from an HMAC-SHA1 challenge-response slot, as ykman's `otp calculate --totp` and Yubico's older
/// authenticators compute it: the slot holds the TOTP secret as its HMAC key, the challenge is RFC 6238's time
/// step (Unix time / 30 as eight bytes, big-endian), and the code is RFC 4226's dynamic truncation of the response.
public enum ChallengeResponseTOTP {
    /// The time step: 30 seconds, as every such slot uses.
    public static let period: Int64 = 30

    /// The challenge for `time` (seconds since 1970; a time before 1970 is step 0).
    public static func challenge(time: Int64) -> [UInt8] {
        OATHSession.timeChallenge(time, period: period)
    }

    /// The `digits`-digit code in the slot's response, or nil when the response is not an HMAC-SHA1 (20 bytes).
    public static func code(response: [UInt8], digits: Int) -> String? {
        guard response.count == 20 else { return nil }
        return OATHSession.format(value: OATHSession.truncated(response), digits: digits, steam: false)
    }
}
