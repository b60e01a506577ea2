import COpenSSL

/// One block of 3DES (EDE, three keys) or AES-128/192/256 in ECB mode, through OpenSSL: what PIV's management
/// key authentication encrypts and decrypts (witnesses and challenges are a single block).
public enum BlockCipher {
    /// The block ciphers of PIV management keys.
    public enum Algorithm: Sendable, Hashable, CaseIterable {
        case tripleDES, aes128, aes192, aes256

        /// The management key algorithm a PIV algorithm identifier names (nil for a slot key's algorithm).
        public init?(_ piv: PIV.Algorithm) {
            switch piv {
            case .tripleDES: self = .tripleDES
            case .aes128: self = .aes128
            case .aes192: self = .aes192
            case .aes256: self = .aes256
            default: return nil
            }
        }

        /// PIV's identifier for the algorithm.
        public var piv: PIV.Algorithm {
            switch self {
            case .tripleDES: return .tripleDES
            case .aes128: return .aes128
            case .aes192: return .aes192
            case .aes256: return .aes256
            }
        }

        public var blockSize: Int { self == .tripleDES ? 8 : 16 }

        public var keyLength: Int {
            switch self {
            case .tripleDES, .aes192: return 24
            case .aes128: return 16
            case .aes256: return 32
            }
        }

        var evp: OpaquePointer? {
            switch self {
            case .tripleDES: return EVP_des_ede3_ecb()
            case .aes128: return EVP_aes_128_ecb()
            case .aes192: return EVP_aes_192_ecb()
            case .aes256: return EVP_aes_256_ecb()
            }
        }
    }

    /// What went wrong, as facts.
    public enum Error: Swift.Error, Equatable, Sendable {
        /// The key is not as long as the algorithm needs.
        case keyLength(expected: Int, actual: Int)
        /// The input is not exactly one block.
        case blockLength(expected: Int, actual: Int)
        /// PIV's identifier names no block cipher.
        case notABlockCipher(PIV.Algorithm)
        /// OpenSSL refused (its function's name).
        case openssl(String)
    }

    public static func encrypt(_ algorithm: Algorithm, key: SecretBytes, block: [UInt8]) throws(Error) -> [UInt8] {
        try run(algorithm, key: key, block: block, encrypt: true)
    }

    public static func decrypt(_ algorithm: Algorithm, key: SecretBytes, block: [UInt8]) throws(Error) -> [UInt8] {
        try run(algorithm, key: key, block: block, encrypt: false)
    }

    public static func encrypt(_ algorithm: Algorithm, key: [UInt8], block: [UInt8]) throws(Error) -> [UInt8] {
        try run(algorithm, key: SecretBytes(key), block: block, encrypt: true)
    }

    public static func decrypt(_ algorithm: Algorithm, key: [UInt8], block: [UInt8]) throws(Error) -> [UInt8] {
        try run(algorithm, key: SecretBytes(key), block: block, encrypt: false)
    }

    /// The same, named by PIV's algorithm identifier (3DES 03, AES 08/0A/0C).
    public static func encrypt(_ algorithm: PIV.Algorithm, key: SecretBytes, block: [UInt8]) throws(Error) -> [UInt8] {
        guard let cipher = Algorithm(algorithm) else { throw .notABlockCipher(algorithm) }
        return try run(cipher, key: key, block: block, encrypt: true)
    }

    public static func decrypt(_ algorithm: PIV.Algorithm, key: SecretBytes, block: [UInt8]) throws(Error) -> [UInt8] {
        guard let cipher = Algorithm(algorithm) else { throw .notABlockCipher(algorithm) }
        return try run(cipher, key: key, block: block, encrypt: false)
    }

    private static func run(
        _ algorithm: Algorithm, key: SecretBytes, block: [UInt8],
        encrypt: Bool
    ) throws(Error) -> [UInt8] {
        guard key.count == algorithm.keyLength else {
            throw .keyLength(expected: algorithm.keyLength, actual: key.count)
        }
        guard block.count == algorithm.blockSize else {
            throw .blockLength(expected: algorithm.blockSize, actual: block.count)
        }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .openssl("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }  // wipes the key schedule too
        // 3DES keys with weak or repeated parts are allowed: PIV keys are whatever the user set.
        let initialized = key.withUnsafeBytes { k in
            EVP_CipherInit_ex(
                ctx, algorithm.evp, nil, k.baseAddress?.assumingMemoryBound(to: UInt8.self), nil,
                encrypt ? 1 : 0)
        }
        guard initialized == 1, EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 else {
            ERR_clear_error()
            throw .openssl("EVP_CipherInit_ex")
        }
        var out = [UInt8](repeating: 0, count: block.count * 2)
        var written: Int32 = 0
        let updated = block.withUnsafeBufferPointer {
            EVP_CipherUpdate(ctx, &out, &written, $0.baseAddress, Int32($0.count))
        }
        guard updated == 1, Int(written) == block.count else {
            ERR_clear_error()
            throw .openssl("EVP_CipherUpdate")
        }
        return Array(out.prefix(block.count))
    }
}
