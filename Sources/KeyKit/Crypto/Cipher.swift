import COpenSSL

extension Crypto {
    private static func cipher(_ type: OpaquePointer?, encrypt: Bool, key: [UInt8], iv: [UInt8]?,
                               _ input: [UInt8]) throws -> [UInt8] {
        guard input.count % 16 == 0 else { throw CryptoError.openssl("AES input must be whole 16-byte blocks") }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.openssl("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_CipherInit_ex(ctx, type, nil, key, iv, encrypt ? 1 : 0) == 1,
              EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 else {
            throw CryptoError.openssl("EVP_CipherInit_ex")
        }
        var out = [UInt8](repeating: 0, count: input.count + 16)
        var n: Int32 = 0
        var total = 0
        guard EVP_CipherUpdate(ctx, &out, &n, input, Int32(input.count)) == 1 else {
            throw CryptoError.openssl("EVP_CipherUpdate")
        }
        total = Int(n)
        let ok = out.withUnsafeMutableBufferPointer { EVP_CipherFinal_ex(ctx, $0.baseAddress! + total, &n) }
        guard ok == 1 else { throw CryptoError.openssl("EVP_CipherFinal_ex") }
        total += Int(n)
        return Array(out.prefix(total))
    }

    public static func aes256CBCEncrypt(key: [UInt8], iv: [UInt8], _ plaintext: [UInt8]) throws -> [UInt8] {
        guard key.count == 32, iv.count == 16 else { throw CryptoError.openssl("AES-256-CBC key or IV length") }
        return try cipher(EVP_aes_256_cbc(), encrypt: true, key: key, iv: iv, plaintext)
    }

    public static func aes256CBCDecrypt(key: [UInt8], iv: [UInt8], _ ciphertext: [UInt8]) throws -> [UInt8] {
        guard key.count == 32, iv.count == 16 else { throw CryptoError.openssl("AES-256-CBC key or IV length") }
        return try cipher(EVP_aes_256_cbc(), encrypt: false, key: key, iv: iv, ciphertext)
    }

    public static func aes128ECBEncrypt(key: [UInt8], _ block: [UInt8]) throws -> [UInt8] {
        guard key.count == 16 else { throw CryptoError.openssl("AES-128 key length") }
        return try cipher(EVP_aes_128_ecb(), encrypt: true, key: key, iv: nil, block)
    }

    public static func aes128ECBDecrypt(key: [UInt8], _ block: [UInt8]) throws -> [UInt8] {
        guard key.count == 16 else { throw CryptoError.openssl("AES-128 key length") }
        return try cipher(EVP_aes_128_ecb(), encrypt: false, key: key, iv: nil, block)
    }

    /// HKDF-SHA-256 (RFC 5869): extract, then expand, on OpenSSL's HMAC.
    public static func hkdfSHA256(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
        guard length > 0, length <= 255 * 32 else { throw CryptoError.openssl("HKDF length") }
        let prk = hmac(.sha256, key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, data: ikm)
        var out = [UInt8]()
        var t = [UInt8]()
        var counter: UInt8 = 1
        while out.count < length {
            t = hmac(.sha256, key: prk, data: t + info + [counter])
            out += t
            counter &+= 1
        }
        return Array(out.prefix(length))
    }
}
