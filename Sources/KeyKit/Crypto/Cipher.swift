import COpenSSL

// AES (EVP_CIPHER_CTX, no padding) and HKDF (EVP_KDF "HKDF") over OpenSSL 3.

extension Crypto {
    /// AES-256-CBC without padding: the plaintext must be a whole number of 16-byte blocks.
    public static func aes256CBCEncrypt(key: [UInt8], iv: [UInt8], _ plaintext: [UInt8]) throws -> [UInt8] {
        try aes(EVP_aes_256_cbc(), "AES-256-CBC", keyLength: 32, key: key, iv: iv, plaintext, encrypt: true)
    }

    /// AES-256-CBC without padding: the ciphertext must be a whole number of 16-byte blocks.
    public static func aes256CBCDecrypt(key: [UInt8], iv: [UInt8], _ ciphertext: [UInt8]) throws -> [UInt8] {
        try aes(EVP_aes_256_cbc(), "AES-256-CBC", keyLength: 32, key: key, iv: iv, ciphertext, encrypt: false)
    }

    /// AES-128 on each 16-byte block independently (ECB), no padding.
    public static func aes128ECBEncrypt(key: [UInt8], _ block: [UInt8]) throws -> [UInt8] {
        try aes(EVP_aes_128_ecb(), "AES-128-ECB", keyLength: 16, key: key, iv: nil, block, encrypt: true)
    }

    /// AES-128 on each 16-byte block independently (ECB), no padding.
    public static func aes128ECBDecrypt(key: [UInt8], _ block: [UInt8]) throws -> [UInt8] {
        try aes(EVP_aes_128_ecb(), "AES-128-ECB", keyLength: 16, key: key, iv: nil, block, encrypt: false)
    }

    private static func aes(_ cipher: OpaquePointer?, _ name: String, keyLength: Int, key: [UInt8], iv: [UInt8]?,
                            _ input: [UInt8], encrypt: Bool) throws -> [UInt8] {
        let blockLength = 16
        guard key.count == keyLength else {
            throw CryptoError.length(expected: keyLength, actual: key.count)
        }
        if let iv, iv.count != blockLength {
            throw CryptoError.length(expected: blockLength, actual: iv.count)
        }
        guard input.count % blockLength == 0 else {
            throw CryptoError.length(expected: blockLength, actual: input.count)
        }
        guard input.count <= Int(Int32.max) - blockLength else { throw CryptoError.length(expected: Int(Int32.max) - blockLength, actual: input.count) }
        guard !input.isEmpty else { return [] }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw OSSL.failure("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }  // also wipes the key schedule
        let initialized = key.withUnsafeBufferPointer { k in
            if let iv {
                return iv.withUnsafeBufferPointer { EVP_CipherInit_ex(ctx, cipher, nil, k.baseAddress, $0.baseAddress, encrypt ? 1 : 0) }
            }
            return EVP_CipherInit_ex(ctx, cipher, nil, k.baseAddress, nil, encrypt ? 1 : 0)
        }
        guard initialized == 1, EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 else {
            throw OSSL.failure("EVP_CipherInit_ex")
        }
        var out = [UInt8](repeating: 0, count: input.count + blockLength)
        let total = try out.withUnsafeMutableBufferPointer { o -> Int in
            var updated: Int32 = 0
            guard input.withUnsafeBufferPointer({
                EVP_CipherUpdate(ctx, o.baseAddress, &updated, $0.baseAddress, Int32($0.count))
            }) == 1 else {
                throw OSSL.failure("EVP_CipherUpdate")
            }
            var finished: Int32 = 0
            guard EVP_CipherFinal_ex(ctx, o.baseAddress! + Int(updated), &finished) == 1 else {
                throw OSSL.failure("EVP_CipherFinal_ex")
            }
            return Int(updated) + Int(finished)
        }
        guard total == input.count else { throw CryptoError.length(expected: input.count, actual: total) }
        return Array(out.prefix(total))
    }

    /// HKDF with HMAC-SHA-256 (RFC 5869), extract then expand. An empty salt means HashLen zero bytes, as in the
    /// RFC; `length` is 1...8160 (255 blocks).
    public static func hkdfSHA256(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
        guard length > 0, length <= 255 * 32 else {
            throw CryptoError.length(expected: 8160, actual: length)
        }
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { throw OSSL.failure("EVP_KDF_fetch(HKDF)") }
        defer { EVP_KDF_free(kdf) }
        guard let ctx = EVP_KDF_CTX_new(kdf) else { throw OSSL.failure("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(ctx) }  // clears the key material it copied
        var out = [UInt8](repeating: 0, count: length)
        // OSSL_PARAM_construct_* only point at their names and buffers, which all outlive the derive call.
        let ok = OSSL.withBytes(ikm) { k, kn in
            OSSL.withBytes(salt) { s, sn in
                OSSL.withBytes(info) { i, iN in
                    var params = [
                        OSSL_PARAM_construct_utf8_string(OSSL.digest.cString, UnsafeMutablePointer(mutating: OSSL.sha256.cString), 0),
                        OSSL_PARAM_construct_octet_string(OSSL.key.cString, UnsafeMutableRawPointer(mutating: k), kn),
                    ]
                    // Leaving salt and info out gives RFC 5869's defaults (zero salt, empty info).
                    if sn > 0 {
                        params.append(OSSL_PARAM_construct_octet_string(OSSL.salt.cString, UnsafeMutableRawPointer(mutating: s), sn))
                    }
                    if iN > 0 {
                        params.append(OSSL_PARAM_construct_octet_string(OSSL.info.cString, UnsafeMutableRawPointer(mutating: i), iN))
                    }
                    params.append(OSSL_PARAM_construct_end())
                    return EVP_KDF_derive(ctx, &out, length, params)
                }
            }
        }
        guard ok == 1 else { throw OSSL.failure("EVP_KDF_derive") }
        return out
    }
}
