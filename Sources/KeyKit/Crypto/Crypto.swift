import COpenSSL

/// Hash algorithms, as OATH and FIDO use them.
public enum HashAlgorithm: String, Sendable, Codable, CaseIterable {
    case sha1 = "SHA1"
    case sha256 = "SHA256"
    case sha512 = "SHA512"

    var evp: OpaquePointer? {
        switch self {
        case .sha1: return EVP_sha1()
        case .sha256: return EVP_sha256()
        case .sha512: return EVP_sha512()
        }
    }

    /// The shim's name for the algorithm (`ykterm_hmac`).
    var bits: Int32 {
        switch self {
        case .sha1: return 1
        case .sha256: return 256
        case .sha512: return 512
        }
    }

    public var digestLength: Int {
        switch self {
        case .sha1: return 20
        case .sha256: return 32
        case .sha512: return 64
        }
    }

    /// HMAC block size: keys longer than this are hashed first.
    public var blockSize: Int {
        switch self {
        case .sha1, .sha256: return 64
        case .sha512: return 128
        }
    }
}

/// What went wrong in a cryptographic operation, as facts (`ErrorExplanation` words them).
public enum CryptoError: Error, Equatable {
    /// An OpenSSL function failed: its name, and OpenSSL's own reason string when it left one.
    case openssl(String)
    /// An input of `actual` bytes where `expected` are due (a key, an IV, a point, a block; for padless
    /// block modes `expected` is the block size the length must be a multiple of).
    case length(expected: Int, actual: Int)
    /// Bytes that are not the DER structure due.
    case notDER(DERStructure)
    /// A key of another kind than the operation takes (RSA for ECDSA, X25519 for a signature, ...).
    case keyType
    /// A public key or point that is not on its curve.
    case notOnCurve
    /// A private key that cannot be: a scalar outside 1...n-1, RSA parts that do not make a key.
    case invalidPrivateKey
    /// An RSA key size that is not made here (PIV's are 1024 to 4096 bits).
    case rsaSize(Int)

    /// The DER structures read here.
    public enum DERStructure: String, Sendable {
        case certificate
        case subjectPublicKeyInfo = "subject-public-key-info"
        case pkcs8
    }
}

/// Thin wrappers over OpenSSL's libcrypto.
public enum Crypto {
    /// The digest of `data`, computed without EVP's algorithm lookup (see `ykterm_sha256` in the COpenSSL shim).
    public static func digest(_ algorithm: HashAlgorithm, _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: algorithm.digestLength)
        let ok = data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { o -> Int32 in
                switch algorithm {
                case .sha1: ykterm_sha1(d.baseAddress, d.count, o.baseAddress)
                case .sha256: ykterm_sha256(d.baseAddress, d.count, o.baseAddress)
                case .sha512: ykterm_sha512(d.baseAddress, d.count, o.baseAddress)
                }
            }
        }
        precondition(ok == 1, "SHA digest failed")
        return out
    }

    /// The digest of `data` repeated until `count` bytes (the last repetition cut short), fed to one hash without
    /// building the repeated string: the iterated part of RFC 4880's iterated and salted S2K.
    public static func iteratedDigest(_ algorithm: HashAlgorithm, of data: [UInt8], count: Int) -> [UInt8] {
        precondition(!data.isEmpty, "nothing to hash")
        guard let ctx = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        var ok = EVP_DigestInit_ex(ctx, algorithm.evp, nil) == 1
        // Whole repetitions in blocks of about 64 KiB: a few hundred calls for GnuPG's 7.8 MB.
        var block = Array([[UInt8]](repeating: data, count: max(1, 65_536 / data.count)).joined())
        defer { SecretBytes.wipe(&block) }
        var left = count
        block.withUnsafeBufferPointer { b in
            while ok, left > 0 {
                let n = left >= b.count ? b.count : left
                ok = EVP_DigestUpdate(ctx, b.baseAddress, n) == 1
                left -= n
            }
        }
        var out = [UInt8](repeating: 0, count: algorithm.digestLength)
        var length: UInt32 = 0
        ok = ok && out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(ctx, $0.baseAddress, &length) } == 1
        precondition(ok && Int(length) == out.count, "digest failed")
        return out
    }

    /// HMAC over the SHA functions (`ykterm_hmac` in the COpenSSL shim), without OpenSSL 3's algorithm lookup.
    public static func hmac(_ algorithm: HashAlgorithm, key: [UInt8], data: [UInt8]) -> [UInt8] {
        key.withUnsafeBufferPointer { k in hmac(algorithm, key: UnsafeRawBufferPointer(k), data: data) }
    }

    private static func hmac(_ algorithm: HashAlgorithm, key: UnsafeRawBufferPointer, data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: algorithm.digestLength)
        let ok = data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { o in
                ykterm_hmac(
                    algorithm.bits, key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count,
                    d.baseAddress, d.count, o.baseAddress)
            }
        }
        precondition(ok == 1, "HMAC failed")
        return out
    }

    public static func pbkdf2(
        _ algorithm: HashAlgorithm, password: [UInt8], salt: [UInt8], iterations: Int,
        length: Int
    ) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        let ok = password.withUnsafeBufferPointer { p in
            salt.withUnsafeBufferPointer { s in
                p.withMemoryRebound(to: CChar.self) { pc in
                    PKCS5_PBKDF2_HMAC(
                        pc.baseAddress, Int32(pc.count), s.baseAddress, Int32(s.count),
                        Int32(iterations), algorithm.evp, Int32(length), &out)
                }
            }
        }
        precondition(ok == 1, "PKCS5_PBKDF2_HMAC failed")
        return out
    }

    /// HMAC with a secret key that stays in its own buffer.
    public static func hmac(_ algorithm: HashAlgorithm, key: SecretBytes, data: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { hmac(algorithm, key: $0, data: data) }
    }

    /// PBKDF2 from a secret password to a secret key; neither leaves its own buffer.
    public static func pbkdf2(
        _ algorithm: HashAlgorithm, password: SecretBytes, salt: [UInt8], iterations: Int,
        length: Int
    ) -> SecretBytes {
        var out = [UInt8](repeating: 0, count: length)
        let ok = password.withUnsafeBytes { p in
            salt.withUnsafeBufferPointer { s in
                PKCS5_PBKDF2_HMAC(
                    p.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(p.count),
                    s.baseAddress, Int32(s.count), Int32(iterations), algorithm.evp, Int32(length),
                    &out) == 1
            }
        }
        precondition(ok, "PKCS5_PBKDF2_HMAC failed")
        return SecretBytes(wiping: &out)
    }

    /// Cryptographically secure random bytes, from the kernel's generator (the standard library's
    /// SystemRandomNumberGenerator reads getrandom(2) on Linux), as OpenSSL's own generator seeds itself.
    /// Asking the kernel directly spares a command that needs a few random bytes OpenSSL's generator set-up
    /// (8 M instructions: half the start of `ykterm --virtual` went there).
    public static func random(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var generator = SystemRandomNumberGenerator()
        out.withUnsafeMutableBytes { buffer in
            var at = 0
            while at < count {
                var word = generator.next()
                let n = min(8, count - at)
                withUnsafeBytes(of: &word) {
                    buffer.baseAddress!.advanced(by: at).copyMemory(from: $0.baseAddress!, byteCount: n)
                }
                word = 0
                at += n
            }
        }
        return out
    }

    /// Compares without leaking where the first difference is.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
