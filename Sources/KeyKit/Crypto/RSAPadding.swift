import COpenSSL

/// RSA signature encodings made on the host (RFC 8017 9.1 EMSA-PSS and 9.2 EMSA-PKCS1-v1_5), for a key that
/// only performs the raw private operation on a block as long as its modulus, as a PIV key does.
///
/// The encodings come from OpenSSL: DigestInfo through its X509_SIG type, the padding through
/// RSA_padding_add_PKCS1_type_1 and RSA_padding_add_PKCS1_PSS_mgf1. OpenSSL 3 marks those two deprecated and
/// offers no replacement that works without the private key, so they are called from `LegacyRSAPadding` below.
public enum RSAPadding {
    public enum Error: Swift.Error, Equatable, Sendable {
        /// The digest is not as long as its algorithm's.
        case digestLength(expected: Int, actual: Int)
        /// The modulus is too short for the encoding (`bits`), or not a size this supports (512 to 16384 bits).
        case modulusTooShort(bits: Int)
        case unsupportedModulus(bits: Int)
        /// The PSS salt length asked for does not fit.
        case saltLength(Int)
        /// OpenSSL refused (its function's name).
        case openssl(String)
    }

    /// How long a PSS salt is.
    public enum SaltLength: Sendable, Hashable {
        /// As long as the digest (RFC 8017's usual choice, and what most verifiers expect).
        case digestLength
        /// As long as the modulus allows.
        case maximum
        case bytes(Int)
    }

    /// EMSA-PKCS1-v1_5 of `message`: 00 01 FF…FF 00 DigestInfo, as long as the modulus.
    public static func pkcs1v15(message: [UInt8], digest: SignatureDigest, modulusBits: Int) throws(Error) -> [UInt8] {
        try pkcs1v15(digest: digest.hash(message), algorithm: digest, modulusBits: modulusBits)
    }

    /// EMSA-PKCS1-v1_5 of a digest already made with `algorithm`.
    public static func pkcs1v15(digest: [UInt8], algorithm: SignatureDigest, modulusBits: Int) throws(Error) -> [UInt8]
    {
        guard digest.count == algorithm.length else {
            throw .digestLength(expected: algorithm.length, actual: digest.count)
        }
        let info = try digestInfo(digest, algorithm: algorithm)
        let length = try modulusLength(bits: modulusBits)
        guard length >= info.count + 11 else { throw .modulusTooShort(bits: modulusBits) }
        var out = [UInt8](repeating: 0, count: length)
        guard legacy.pkcs1Type1(&out, info) else { throw .openssl("RSA_padding_add_PKCS1_type_1") }
        return out
    }

    /// EMSA-PSS of `message` with MGF1 of the same digest and a random salt, as long as the modulus (with a
    /// leading zero byte when the modulus' bit length is one more than a multiple of eight).
    public static func pss(
        message: [UInt8], digest: SignatureDigest, modulusBits: Int,
        saltLength: SaltLength = .digestLength
    ) throws(Error) -> [UInt8] {
        try pss(digest: digest.hash(message), algorithm: digest, modulusBits: modulusBits, saltLength: saltLength)
    }

    /// EMSA-PSS of a digest already made with `algorithm`.
    public static func pss(
        digest: [UInt8], algorithm: SignatureDigest, modulusBits: Int,
        saltLength: SaltLength = .digestLength
    ) throws(Error) -> [UInt8] {
        guard digest.count == algorithm.length else {
            throw .digestLength(expected: algorithm.length, actual: digest.count)
        }
        let length = try modulusLength(bits: modulusBits)
        // emLen = ceil((modBits - 1) / 8); the encoding needs hLen + sLen + 2 bytes of it.
        let room = (modulusBits - 1 + 7) / 8 - algorithm.length - 2
        let salt: Int32
        switch saltLength {
        case .digestLength:
            guard room >= algorithm.length else { throw .modulusTooShort(bits: modulusBits) }
            salt = -1  // RSA_PSS_SALTLEN_DIGEST
        case .maximum:
            guard room >= 0 else { throw .modulusTooShort(bits: modulusBits) }
            salt = -2  // RSA_PSS_SALTLEN_MAX_SIGN
        case .bytes(let n):
            guard n >= 0, n <= room else { throw .saltLength(n) }
            salt = Int32(n)
        }
        var out = [UInt8](repeating: 0, count: length)
        guard legacy.pss(&out, digest: digest, md: algorithm.evp, modulusBits: modulusBits, saltLength: salt) else {
            throw .openssl("RSA_padding_add_PKCS1_PSS_mgf1")
        }
        return out
    }

    /// The DER DigestInfo { AlgorithmIdentifier { digest OID, NULL }, OCTET STRING digest } of RFC 8017 9.2.
    public static func digestInfo(_ digest: [UInt8], algorithm: SignatureDigest) throws(Error) -> [UInt8] {
        guard let signature = X509_SIG_new() else { throw .openssl("X509_SIG_new") }
        defer { X509_SIG_free(signature) }
        var algorithmIdentifier: UnsafeMutablePointer<X509_ALGOR>?
        var octets: UnsafeMutablePointer<ASN1_OCTET_STRING>?
        X509_SIG_getm(signature, &algorithmIdentifier, &octets)
        guard let algorithmIdentifier, let octets,
            X509_ALGOR_set0(algorithmIdentifier, OBJ_nid2obj(EVP_MD_get_type(algorithm.evp)), V_ASN1_NULL, nil) == 1,
            ASN1_OCTET_STRING_set(octets, digest, Int32(digest.count)) == 1,
            let der = OSSL.der({ i2d_X509_SIG(signature, $0) })
        else {
            ERR_clear_error()
            throw .openssl("i2d_X509_SIG")
        }
        return der
    }

    private static func modulusLength(bits: Int) throws(Error) -> Int {
        guard bits >= 512, bits <= 16384 else { throw .unsupportedModulus(bits: bits) }
        return (bits + 7) / 8
    }

    private static var legacy: any LegacyRSAPaddingProtocol.Type { LegacyRSAPadding.self }
}

/// The deprecated calls, reached through a protocol so that the deprecation stays on these two functions.
private protocol LegacyRSAPaddingProtocol {
    static func pkcs1Type1(_ out: inout [UInt8], _ digestInfo: [UInt8]) -> Bool
    static func pss(
        _ out: inout [UInt8], digest: [UInt8], md: OpaquePointer?, modulusBits: Int,
        saltLength: Int32
    ) -> Bool
}

private enum LegacyRSAPadding: LegacyRSAPaddingProtocol {
    @available(*, deprecated, message: "OpenSSL 3 deprecates its RSA padding functions")
    static func pkcs1Type1(_ out: inout [UInt8], _ digestInfo: [UInt8]) -> Bool {
        let count = Int32(out.count)
        defer { ERR_clear_error() }
        return RSA_padding_add_PKCS1_type_1(&out, count, digestInfo, Int32(digestInfo.count)) == 1
    }

    /// PSS needs an RSA object only for the modulus' size: a stand-in modulus of the same bit length
    /// (2^(bits-1) + 1) gives the same encoding as the key's own.
    @available(*, deprecated, message: "OpenSSL 3 deprecates its RSA padding functions")
    static func pss(
        _ out: inout [UInt8], digest: [UInt8], md: OpaquePointer?, modulusBits: Int,
        saltLength: Int32
    ) -> Bool {
        defer { ERR_clear_error() }
        guard let rsa = RSA_new() else { return false }
        defer { RSA_free(rsa) }
        guard let n = BN_new(), let e = BN_new() else { return false }
        guard BN_set_bit(n, Int32(modulusBits - 1)) == 1, BN_set_bit(n, 0) == 1, BN_set_word(e, 65537) == 1,
            RSA_set0_key(rsa, n, e, nil) == 1
        else {
            BN_free(n)
            BN_free(e)
            return false
        }
        guard Int(RSA_size(rsa)) == out.count else { return false }
        return RSA_padding_add_PKCS1_PSS_mgf1(rsa, &out, digest, md, md, saltLength) == 1
    }
}
