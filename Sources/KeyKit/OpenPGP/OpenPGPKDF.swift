import COpenSSL

/// The KDF object (DO F9, OpenPGP card 3.4): whether the card takes the passwords as typed or derived, and how.
///
/// With KDF_ITERSALTED_S2K a client sends, wherever a password goes (VERIFY, CHANGE REFERENCE DATA, RESET RETRY
/// COUNTER, the reset code's PUT DATA), the iterated and salted S2K of RFC 4880 (3.7.1.3) instead: the password's
/// salt followed by the password, repeated until `iterations` bytes were hashed, hashed once. The card compares
/// what it gets with what it stores, so a client that does not derive cannot verify any password. GnuPG's
/// `kdf-setup` and yubikit write the object with a salt for each password and the derived default PINs, which a
/// YubiKey then takes as its PIN and admin PIN.
public struct OpenPGPKDF: Sendable, Equatable {
    /// The algorithm byte (tag 81): the passwords go as typed.
    public static let none: UInt8 = 0x00
    /// The algorithm byte of the iterated and salted S2K.
    public static let iteratedSaltedS2K: UInt8 = 0x03
    /// OpenPGP's hash algorithm numbers (tag 82).
    public static let sha256: UInt8 = 0x08
    public static let sha512: UInt8 = 0x0A
    /// GnuPG's and yubikit's count: 7,864,320 bytes hashed.
    public static let defaultIterations: UInt32 = 0x78_0000

    public var algorithm: UInt8
    public var hashAlgorithm: UInt8?
    /// The number of bytes hashed (tag 83, the "iteration count").
    public var iterations: UInt32?
    /// The user PIN's salt (84), the reset code's (85) and the admin PIN's (86); a password without its own salt
    /// takes the user PIN's.
    public var userSalt: [UInt8]?
    public var resetSalt: [UInt8]?
    public var adminSalt: [UInt8]?
    /// The derived default PIN and admin PIN (87, 88), which the card takes when the object is written.
    public var initialUserHash: [UInt8]?
    public var initialAdminHash: [UInt8]?

    public init(algorithm: UInt8) {
        self.algorithm = algorithm
    }

    /// A new object for the iterated and salted S2K: fresh salts, and the defaults derived with them.
    public static func make(hashAlgorithm: UInt8 = sha256, iterations: UInt32 = defaultIterations) -> OpenPGPKDF {
        var kdf = OpenPGPKDF(algorithm: iteratedSaltedS2K)
        kdf.hashAlgorithm = hashAlgorithm
        kdf.iterations = iterations
        kdf.userSalt = Crypto.random(8)
        kdf.resetSalt = Crypto.random(8)
        kdf.adminSalt = Crypto.random(8)
        kdf.initialUserHash = kdf.derived(OpenPGP.defaultUserPIN, for: .user)
        kdf.initialAdminHash = kdf.derived(OpenPGP.defaultAdminPIN, for: .admin)
        return kdf
    }

    public init(_ answer: [UInt8]) throws(OpenPGPError) {
        // Some cards wrap the object in its own tag.
        var tlvs = try OpenPGPApplicationData.parse(answer, part: .kdf)
        if tlvs.count == 1, tlvs[0].tag == OpenPGP.DO.kdf {
            tlvs = try OpenPGPApplicationData.parse(tlvs[0].value, part: .kdf)
        }
        guard let algorithm = tlvs.value(for: 0x81), algorithm.count == 1 else {
            throw .malformed(Malformation(.kdf, .missing))
        }
        self.algorithm = algorithm[0]
        hashAlgorithm = tlvs.value(for: 0x82)?.first
        if let count = tlvs.value(for: 0x83), count.count == 4 {
            iterations = UInt32(BigEndian.integer(count))
        }
        userSalt = tlvs.value(for: 0x84)
        resetSalt = tlvs.value(for: 0x85)
        adminSalt = tlvs.value(for: 0x86)
        initialUserHash = tlvs.value(for: 0x87)
        initialAdminHash = tlvs.value(for: 0x88)
    }

    public var isEnabled: Bool { algorithm != Self.none }

    /// The object as PUT DATA writes it.
    public var encoded: [UInt8] {
        var out = TLV(0x81, [algorithm]).encoded
        if let hashAlgorithm { out += TLV(0x82, [hashAlgorithm]).encoded }
        if let iterations { out += TLV(0x83, BigEndian.bytes(UInt64(iterations), count: 4)).encoded }
        for (tag, value) in [
            (0x84, userSalt), (0x85, resetSalt), (0x86, adminSalt), (0x87, initialUserHash),
            (0x88, initialAdminHash),
        ] {
            if let value { out += TLV(UInt32(tag), value).encoded }
        }
        return out
    }

    /// The digest the object names, when it is one the S2K here computes.
    var digest: HashAlgorithm? {
        switch hashAlgorithm {
        case Self.sha256: return .sha256
        case Self.sha512: return .sha512
        default: return nil
        }
    }

    /// The bytes the card takes for `password`: them as typed without a KDF, else their S2K with the password's
    /// salt. A KDF other than the iterated and salted S2K over SHA-256 or SHA-512, or one without a count or a
    /// salt, is `kdfUnsupported`.
    public func derive(_ secret: SecretBytes, for password: OpenPGP.Password) throws(OpenPGPError) -> [UInt8] {
        guard isEnabled else { return secret.copyBytes() }
        var bytes = secret.copyBytes()
        defer { SecretBytes.wipe(&bytes) }
        guard let out = derived(bytes, for: password) else {
            throw .kdfUnsupported(algorithm: algorithm, hash: hashAlgorithm)
        }
        return out
    }

    /// The S2K of `bytes` for `password`, or nil when the object cannot give it.
    public func derived(_ bytes: [UInt8], for password: OpenPGP.Password) -> [UInt8]? {
        let salt: [UInt8]?
        switch password {
        case .user: salt = userSalt
        case .reset: salt = resetSalt ?? userSalt
        case .admin: salt = adminSalt ?? userSalt
        }
        guard algorithm == Self.iteratedSaltedS2K, let digest, let iterations, let salt, !salt.isEmpty else {
            return nil
        }
        var data = salt + bytes
        defer { SecretBytes.wipe(&data) }
        return Crypto.iteratedDigest(digest, of: data, count: max(Int(iterations), data.count))
    }
}
