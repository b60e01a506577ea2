public enum YubicoOTPError: Error, Equatable, Sendable {
    /// An AES-128 key of this many bytes (16 are due).
    case keyLength(Int)
    /// A private ID of this many bytes (6 are due).
    case privateIDLength(Int)
    /// A public ID of this many bytes (at most 8).
    case publicIDLength(Int)
    /// A decrypted token of this many bytes (16 are due).
    case tokenLength(Int)
    /// An OTP of this many characters: fewer than 32, more than 48, or an odd number.
    case otpTooShort(Int)
    case otpTooLong(Int)
    case otpOddLength(Int)
    /// The token part is not modhex.
    case tokenNotModhex(Modhex.DecodeError)
    /// The public ID part is not modhex.
    case publicIDNotModhex(String)
    /// Decryption gave a token whose CRC does not check: the AES key is wrong or the OTP was altered.
    case crcMismatch

}

/// The 16 bytes a YubiKey encrypts for one Yubico OTP:
/// private ID (6) | usage counter (2, LE) | timestamp (3, LE) | session counter (1) | random (2, LE) | CRC (2, LE).
///
/// The usage counter is the non-volatile one (incremented at the first OTP after power-up, and when the
/// session counter wraps); the session counter counts OTPs since power-up; the timestamp is an 8 Hz timer
/// started at a random value at power-up. (PyPI `yubiotp` calls the usage counter `session` and the session
/// counter `counter`.)
public struct YubicoOTPToken: Equatable, Sendable {
    public var privateID: [UInt8]
    public var usageCounter: UInt16
    /// 24 bits.
    public var timestamp: UInt32
    public var sessionCounter: UInt8
    public var random: UInt16
    /// The CRC field as stored (meaningful after decryption).
    public var crc: UInt16
    /// Whether the CRC checked when this token was decrypted (true for a token built here).
    public var crcOK: Bool

    public init(privateID: [UInt8], usageCounter: UInt16, timestamp: UInt32, sessionCounter: UInt8, random: UInt16) {
        self.privateID = privateID
        self.usageCounter = usageCounter
        self.timestamp = timestamp & 0xFF_FFFF
        self.sessionCounter = sessionCounter
        self.random = random
        self.crc = 0
        self.crcOK = true
        self.crc = ~CRC16.checksum(bytes.prefix(14))
    }

    /// Parses 16 decrypted bytes; `crcOK` says whether they check.
    public init(plaintext b: [UInt8]) throws(YubicoOTPError) {
        guard b.count == 16 else { throw .tokenLength(b.count) }
        privateID = Array(b[0..<6])
        usageCounter = UInt16(b[6]) | UInt16(b[7]) << 8
        timestamp = UInt32(b[8]) | UInt32(b[9]) << 8 | UInt32(b[10]) << 16
        sessionCounter = b[11]
        random = UInt16(b[12]) | UInt16(b[13]) << 8
        crc = UInt16(b[14]) | UInt16(b[15]) << 8
        crcOK = CRC16.verify(b)
    }

    /// The 16 bytes, with the CRC computed afresh.
    public var bytes: [UInt8] {
        var b = privateID.count == 6 ? privateID : Array((privateID + [UInt8](repeating: 0, count: 6)).prefix(6))
        b += [
            UInt8(usageCounter & 0xFF), UInt8(usageCounter >> 8),
            UInt8(timestamp & 0xFF), UInt8((timestamp >> 8) & 0xFF), UInt8((timestamp >> 16) & 0xFF),
            sessionCounter, UInt8(random & 0xFF), UInt8(random >> 8),
        ]
        let c = ~CRC16.checksum(b)
        return b + [UInt8(c & 0xFF), UInt8(c >> 8)]
    }
}

/// A Yubico OTP split and decrypted.
public struct DecryptedOTP: Equatable, Sendable {
    /// Modhex, as typed.
    public var publicID: String
    public var token: YubicoOTPToken
    public var crcOK: Bool { token.crcOK }
}

public enum YubicoOTP {
    /// Modhex characters of the encrypted part.
    public static let tokenLength = 32
    /// Longest public ID accepted, in modhex characters (16 = 8 bytes, the most a YubiKey slot takes... and
    /// what validation servers accept).
    public static let maxPublicIDLength = 16

    static func checkKey(_ key: [UInt8]) throws(YubicoOTPError) {
        guard key.count == 16 else { throw .keyLength(key.count) }
    }

    /// Encrypts `token` and prefixes the modhex public ID.
    public static func encode(_ token: YubicoOTPToken, key: [UInt8], publicID: [UInt8]) throws(YubicoOTPError) -> String
    {
        try checkKey(key)
        guard token.privateID.count == 6 else { throw .privateIDLength(token.privateID.count) }
        guard publicID.count * 2 <= maxPublicIDLength else {
            throw .publicIDLength(publicID.count)
        }
        let encrypted: [UInt8]
        do { encrypted = try Crypto.aes128ECBEncrypt(key: key, token.bytes) } catch {
            throw .keyLength(key.count)
        }
        return Modhex.encode(publicID) + Modhex.encode(encrypted)
    }

    /// Splits an OTP into public ID (modhex) and the 16 encrypted bytes.
    public static func split(_ otp: String) throws(YubicoOTPError) -> (publicID: String, ciphertext: [UInt8]) {
        let otp = otp.lowercased()
        guard otp.count >= tokenLength else {
            throw .otpTooShort(otp.count)
        }
        guard otp.count <= tokenLength + maxPublicIDLength else {
            throw .otpTooLong(otp.count)
        }
        guard otp.count % 2 == 0 else { throw .otpOddLength(otp.count) }
        let chars = Array(otp)
        let publicID = String(chars[..<(chars.count - tokenLength)])
        let cipher: [UInt8]
        do { cipher = try Modhex.decode(String(chars[(chars.count - tokenLength)...])) } catch {
            throw .tokenNotModhex(error)
        }
        guard Modhex.isModhex(publicID) else { throw .publicIDNotModhex(publicID) }
        return (publicID, cipher)
    }

    /// Decrypts with `key`; the result says whether the CRC checked (a wrong key or an altered OTP does not).
    public static func decrypt(_ otp: String, key: [UInt8]) throws(YubicoOTPError) -> DecryptedOTP {
        try checkKey(key)
        let (publicID, cipher) = try split(otp)
        let plain: [UInt8]
        do { plain = try Crypto.aes128ECBDecrypt(key: key, cipher) } catch { throw .keyLength(key.count) }
        return DecryptedOTP(publicID: publicID, token: try YubicoOTPToken(plaintext: plain))
    }

    /// As `decrypt`, but a CRC mismatch is thrown as `crcMismatch`.
    public static func decryptVerified(_ otp: String, key: [UInt8]) throws(YubicoOTPError) -> DecryptedOTP {
        let d = try decrypt(otp, key: key)
        guard d.crcOK else { throw .crcMismatch }
        return d
    }

    /// The public ID ykman programs with `--serial-public-id`: modhex of FF 00 followed by the serial as
    /// 4 bytes big-endian, so it starts with "vvcc" and has 12 characters.
    public static func publicID(serial: UInt32) -> [UInt8] {
        [0xFF, 0x00] + BigEndian.bytes(UInt64(serial), count: 4)
    }

    /// The serial number a public ID encodes (see `publicID(serial:)`), or nil.
    public static func serial(fromPublicID modhex: String) -> UInt32? {
        guard let b = try? Modhex.decode(modhex), b.count == 6, b[0] == 0xFF, b[1] == 0x00 else { return nil }
        return UInt32(BigEndian.integer(b[2...]))
    }
}
