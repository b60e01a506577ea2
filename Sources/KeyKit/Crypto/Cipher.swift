import COpenSSL

// AES (OpenSSL's block functions, no padding) and HKDF (RFC 5869, over Crypto.hmac).

extension Crypto {
    /// AES-256-CBC without padding: the plaintext must be a whole number of 16-byte blocks.
    public static func aes256CBCEncrypt(key: [UInt8], iv: [UInt8], _ plaintext: [UInt8]) throws -> [UInt8] {
        try aes(keyLength: 32, key: key, iv: iv, plaintext, encrypt: true)
    }

    /// AES-256-CBC without padding: the ciphertext must be a whole number of 16-byte blocks.
    public static func aes256CBCDecrypt(key: [UInt8], iv: [UInt8], _ ciphertext: [UInt8]) throws -> [UInt8] {
        try aes(keyLength: 32, key: key, iv: iv, ciphertext, encrypt: false)
    }

    /// AES-CBC with a 16-, 24- or 32-byte key (AES-128, -192, -256), no padding.
    public static func aesCBCEncrypt(key: [UInt8], iv: [UInt8], _ plaintext: [UInt8]) throws -> [UInt8] {
        try aes(
            keyLength: [16, 24, 32].contains(key.count) ? key.count : 16, key: key, iv: iv, plaintext, encrypt: true)
    }

    /// AES-CBC with a 16-, 24- or 32-byte key (AES-128, -192, -256), no padding.
    public static func aesCBCDecrypt(key: [UInt8], iv: [UInt8], _ ciphertext: [UInt8]) throws -> [UInt8] {
        try aes(
            keyLength: [16, 24, 32].contains(key.count) ? key.count : 16, key: key, iv: iv, ciphertext, encrypt: false)
    }

    /// AES-128 on each 16-byte block independently (ECB), no padding.
    public static func aes128ECBEncrypt(key: [UInt8], _ block: [UInt8]) throws -> [UInt8] {
        try aes(keyLength: 16, key: key, iv: nil, block, encrypt: true)
    }

    /// AES-128 on each 16-byte block independently (ECB), no padding.
    public static func aes128ECBDecrypt(key: [UInt8], _ block: [UInt8]) throws -> [UInt8] {
        try aes(keyLength: 16, key: key, iv: nil, block, encrypt: false)
    }

    /// CBC with `iv`, else ECB; through OpenSSL's AES block functions (see `ykterm_aes_cbc` in the shim).
    private static func aes(keyLength: Int, key: [UInt8], iv: [UInt8]?, _ input: [UInt8], encrypt: Bool) throws
        -> [UInt8]
    {
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
        guard !input.isEmpty else { return [] }
        var out = [UInt8](repeating: 0, count: input.count)
        let bits = Int32(keyLength * 8)
        let ok = key.withUnsafeBufferPointer { k in
            input.withUnsafeBufferPointer { i in
                out.withUnsafeMutableBufferPointer { o in
                    if let iv {
                        return iv.withUnsafeBufferPointer {
                            ykterm_aes_cbc(
                                k.baseAddress, bits, $0.baseAddress, i.baseAddress, o.baseAddress, i.count,
                                encrypt ? 1 : 0)
                        }
                    }
                    return ykterm_aes_ecb(k.baseAddress, bits, i.baseAddress, o.baseAddress, i.count, encrypt ? 1 : 0)
                }
            }
        }
        guard ok == 1 else { throw OSSL.failure("AES_set_key") }
        return out
    }

    /// HKDF with HMAC-SHA-256 (RFC 5869), extract then expand. An empty salt means HashLen zero bytes, as in the
    /// RFC; `length` is 1...8160 (255 blocks).
    public static func hkdfSHA256(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
        guard length > 0, length <= 255 * 32 else {
            throw CryptoError.length(expected: 8160, actual: length)
        }
        // Extract, then expand, with Crypto.hmac: no EVP_KDF, whose first fetch cost 5 million instructions (a
        // third of `fido credentials list` with PIN protocol 2).
        var prk = hmac(.sha256, key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, data: ikm)
        var out = [UInt8]()
        out.reserveCapacity(length + 32)
        var block = [UInt8]()
        var counter: UInt8 = 1
        while out.count < length {
            block = hmac(.sha256, key: prk, data: block + info + [counter])
            out += block
            counter &+= 1
        }
        SecretBytes.wipe(&prk)
        SecretBytes.wipe(&block)
        let derived = Array(out.prefix(length))
        SecretBytes.wipe(&out)
        return derived
    }
}
