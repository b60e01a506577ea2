import COpenSSL

// What PIV keys do: RSA's raw private operation, ECDSA over a digest, Ed25519 over a message, ECDH and X25519;
// and, for checking what a key made, signature verification with each kind of public key.

/// Digests for signatures (PIV signs SHA-256, SHA-384 and SHA-512 digests; SHA-1 for old certificates).
public enum SignatureDigest: String, Sendable, CaseIterable {
    case sha1 = "SHA1"
    case sha256 = "SHA256"
    case sha384 = "SHA384"
    case sha512 = "SHA512"

    var evp: OpaquePointer? {
        switch self {
        case .sha1: return EVP_sha1()
        case .sha256: return EVP_sha256()
        case .sha384: return EVP_sha384()
        case .sha512: return EVP_sha512()
        }
    }

    public var length: Int {
        switch self {
        case .sha1: return 20
        case .sha256: return 32
        case .sha384: return 48
        case .sha512: return 64
        }
    }

    /// The digest of `data`.
    public func hash(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = OSSL.withBytes(data) { EVP_Digest($0, $1, &out, &length, evp, nil) }
        precondition(ok == 1, "EVP_Digest failed")
        return Array(out.prefix(Int(length)))
    }
}

/// RSA signature padding.
public enum RSASignaturePadding: Sendable {
    /// PKCS #1 v1.5 (RSASSA-PKCS1-v1_5).
    case pkcs1
    /// RSASSA-PSS with MGF1 of the same digest; verification accepts any salt length.
    case pss
}

extension AsymmetricPrivateKey {
    /// RSA's private operation on one block (m^d mod n, no padding): `block` is exactly as long as the modulus
    /// and, read as a number, less than it. The answer is as long as the modulus.
    public func rsaPrivateOperation(_ block: [UInt8]) throws -> [UInt8] {
        guard case .rsa = type else { throw CryptoError.keyType }
        guard block.count == type.length else {
            throw CryptoError.length(expected: type.length, actual: block.count)
        }
        return try withEVP { key in
            try Self.keyOperation(key, block, start: { EVP_PKEY_decrypt_init($0) }, params: [("pad-mode", "none")]) {
                EVP_PKEY_decrypt($0, $1, $2, $3, $4)
            }
        }
    }

    /// ECDSA (P-256, P-384) over `digest` as given, whatever hash made it; the signature is DER. A digest longer
    /// than the curve's order is truncated to its bits, as ECDSA does.
    public func ecdsaSign(digest: [UInt8]) throws -> [UInt8] {
        guard type.curveName != nil else { throw CryptoError.keyType }
        return try withEVP { key in
            try Self.keyOperation(key, digest, start: { EVP_PKEY_sign_init($0) }, params: []) {
                EVP_PKEY_sign($0, $1, $2, $3, $4)
            }
        }
    }

    /// Ed25519 (pure, RFC 8032) over `message`: 64 bytes.
    public func ed25519Sign(_ message: [UInt8]) throws -> [UInt8] {
        guard type == .ed25519 else { throw CryptoError.keyType }
        return try withEVP { try Self.digestSign($0, digest: nil, pss: false, message) }
    }

    /// A signature over `message` as X.509 and PKCS #1 use them: RSA with `padding` (PSS with a salt as long
    /// as the digest) or ECDSA (DER) with `digest`, or Ed25519 (which ignores both).
    public func sign(
        _ message: [UInt8], digest: SignatureDigest = .sha256,
        padding: RSASignaturePadding = .pkcs1
    ) throws -> [UInt8] {
        switch type {
        case .ed25519: return try ed25519Sign(message)
        case .x25519: throw CryptoError.keyType
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            return try withEVP { try Self.digestSign($0, digest: digest.evp, pss: false, message) }
        case .rsa: return try withEVP { try Self.digestSign($0, digest: digest.evp, pss: padding == .pss, message) }
        }
    }

    /// Key agreement: ECDH with the peer's point (uncompressed, on the same curve), the shared point's x
    /// coordinate; or X25519 with the peer's 32-byte key.
    public func sharedSecret(peer: [UInt8]) throws -> [UInt8] {
        let peerKey: AsymmetricPublicKey
        switch type {
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            guard peer.count == 1 + 2 * type.length, peer.first == 0x04 else {
                throw CryptoError.notOnCurve
            }
            peerKey = try AsymmetricPublicKey(ecPoint: peer, type: type)
        case .x25519:
            peerKey = try AsymmetricPublicKey(raw: peer, type: .x25519)
        case .rsa, .ed25519:
            throw CryptoError.keyType
        }
        return try withEVP { mine in
            try peerKey.withEVP { theirs in
                guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, mine, nil) else {
                    throw OSSL.failure("EVP_PKEY_CTX_new_from_pkey")
                }
                defer { EVP_PKEY_CTX_free(ctx) }
                guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_derive_set_peer(ctx, theirs) == 1 else {
                    throw OSSL.failure("EVP_PKEY_derive_set_peer")
                }
                var length = 0
                guard EVP_PKEY_derive(ctx, nil, &length) == 1, length > 0 else { throw OSSL.failure("EVP_PKEY_derive") }
                var out = [UInt8](repeating: 0, count: length)
                guard EVP_PKEY_derive(ctx, &out, &length) == 1 else { throw OSSL.failure("EVP_PKEY_derive") }
                return Array(out.prefix(length))
            }
        }
    }

    private typealias Operation = (
        OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?,
        UnsafePointer<UInt8>?, Int
    ) -> Int32

    /// A one-shot EVP_PKEY operation (sign, decrypt) on `key`, with string parameters set after `init`.
    private static func keyOperation(
        _ key: OpaquePointer, _ input: [UInt8], start: (OpaquePointer) -> Int32,
        params: [(StaticString, StaticString)], _ operation: Operation
    ) throws -> [UInt8] {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            throw OSSL.failure("EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard start(ctx) == 1 else { throw OSSL.failure("EVP_PKEY_sign_init") }
        if !params.isEmpty {
            var list = params.map { name, value in
                OSSL_PARAM_construct_utf8_string(name.cString, UnsafeMutablePointer(mutating: value.cString), 0)
            }
            list.append(OSSL_PARAM_construct_end())
            guard EVP_PKEY_CTX_set_params(ctx, list) == 1 else { throw OSSL.failure("EVP_PKEY_CTX_set_params") }
        }
        return try OSSL.withBytes(input) { p, n in
            var length = 0
            guard operation(ctx, nil, &length, p, n) == 1, length > 0 else { throw OSSL.failure("EVP_PKEY_sign") }
            var out = [UInt8](repeating: 0, count: length)
            guard operation(ctx, &out, &length, p, n) == 1 else { throw OSSL.failure("EVP_PKEY_sign") }
            return Array(out.prefix(length))
        }
    }

    private static func digestSign(
        _ key: OpaquePointer, digest: OpaquePointer?, pss: Bool,
        _ message: [UInt8]
    ) throws -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw OSSL.failure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        var pctx: OpaquePointer?
        guard EVP_DigestSignInit(ctx, &pctx, digest, nil, key) == 1 else { throw OSSL.failure("EVP_DigestSignInit") }
        if pss {
            guard let pctx, EVP_PKEY_CTX_set_params(pctx, AsymmetricPublicKey.pssParameters(saltLength: .digest)) == 1
            else {
                throw OSSL.failure("EVP_PKEY_CTX_set_rsa_padding")
            }
        }
        return try OSSL.withBytes(message) { m, n in
            var length = 0
            guard EVP_DigestSign(ctx, nil, &length, m, n) == 1, length > 0 else { throw OSSL.failure("EVP_DigestSign") }
            var out = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(ctx, &out, &length, m, n) == 1 else { throw OSSL.failure("EVP_DigestSign") }
            return Array(out.prefix(length))
        }
    }
}

extension AsymmetricPublicKey {
    /// Whether `signature` over `message` verifies: RSA with `padding` and `digest`, ECDSA (DER) with `digest`,
    /// Ed25519 over the message itself (`digest` ignored). False for any malformed input and for X25519 keys.
    public func verify(
        signature: [UInt8], message: [UInt8], digest: SignatureDigest = .sha256,
        padding: RSASignaturePadding = .pkcs1
    ) -> Bool {
        guard type != .x25519 else { return false }
        return
            (try? withEVP { key -> Bool in
                defer { ERR_clear_error() }
                guard !signature.isEmpty, let ctx = EVP_MD_CTX_new() else { return false }
                defer { EVP_MD_CTX_free(ctx) }
                var pctx: OpaquePointer?
                guard EVP_DigestVerifyInit(ctx, &pctx, type == .ed25519 ? nil : digest.evp, nil, key) == 1 else {
                    return false
                }
                if case .rsa = type, padding == .pss, let pctx {
                    guard EVP_PKEY_CTX_set_params(pctx, Self.pssParameters(saltLength: .auto)) == 1 else {
                        return false
                    }
                }
                return OSSL.withBytes(signature) { s, sn in
                    OSSL.withBytes(message) { m, mn in EVP_DigestVerify(ctx, s, sn, m, mn) == 1 }
                }
            }) ?? false
    }

    enum SaltLength {
        /// As long as the digest (signing).
        case digest
        /// Whatever the signature used (verifying).
        case auto
    }

    /// OSSL_PARAMs for RSASSA-PSS: pad mode "pss" and the salt length. Names and values are static strings,
    /// which the parameters point at.
    static func pssParameters(saltLength: SaltLength) -> [OSSL_PARAM] {
        let padMode: StaticString = "pad-mode"  // OSSL_SIGNATURE_PARAM_PAD_MODE
        let saltName: StaticString = "saltlen"  // OSSL_SIGNATURE_PARAM_PSS_SALTLEN
        let pss: StaticString = "pss"
        let salt: StaticString = saltLength == .digest ? "digest" : "auto"
        return [
            OSSL_PARAM_construct_utf8_string(padMode.cString, UnsafeMutablePointer(mutating: pss.cString), 0),
            OSSL_PARAM_construct_utf8_string(saltName.cString, UnsafeMutablePointer(mutating: salt.cString), 0),
            OSSL_PARAM_construct_end(),
        ]
    }
}

extension AsymmetricKeys {
    /// The BIGNUMs of an RSA private key from PIV's import components: n = pq and d = e⁻¹ mod (p-1)(q-1)
    /// computed, the given CRT exponents and coefficient checked against them. `free()` clears them all.
    struct RSAParts {
        let n, e, d, p, q, dp, dq, qInverse: OpaquePointer

        init(
            p pBytes: [UInt8], q qBytes: [UInt8], dp dpBytes: [UInt8]?, dq dqBytes: [UInt8]?,
            qInverse qiBytes: [UInt8]?, exponent: [UInt8]
        ) throws {
            var made = [OpaquePointer]()
            func number(_ bytes: [UInt8]) throws -> OpaquePointer {
                let bn = try bignum(bytes)
                made.append(bn)
                return bn
            }
            func fresh() throws -> OpaquePointer {
                guard let bn = BN_secure_new() else { throw OSSL.failure("BN_secure_new") }
                made.append(bn)
                return bn
            }
            do {
                p = try number(pBytes)
                q = try number(qBytes)
                // Without them (an OpenPGP card's standard import format) the CRT values are made from d below.
                dp = try dpBytes.map(number) ?? fresh()
                dq = try dqBytes.map(number) ?? fresh()
                qInverse = try qiBytes.map(number) ?? fresh()
                e = try number(exponent)
                n = try fresh()
                d = try fresh()
                let pMinus1 = try fresh(), qMinus1 = try fresh(), phi = try fresh(), check = try fresh()
                guard let ctx = BN_CTX_secure_new() else { throw OSSL.failure("BN_CTX_secure_new") }
                defer { BN_CTX_free(ctx) }
                guard BN_mul(n, p, q, ctx) == 1, BN_copy(pMinus1, p) != nil, BN_sub_word(pMinus1, 1) == 1,
                    BN_copy(qMinus1, q) != nil, BN_sub_word(qMinus1, 1) == 1, BN_mul(phi, pMinus1, qMinus1, ctx) == 1,
                    BN_mod_inverse(d, e, phi, ctx) != nil
                else {
                    throw CryptoError.invalidPrivateKey
                }
                if dpBytes == nil || dqBytes == nil || qiBytes == nil {
                    guard BN_div(nil, dp, d, pMinus1, ctx) == 1, BN_div(nil, dq, d, qMinus1, ctx) == 1,
                        BN_mod_inverse(qInverse, q, p, ctx) != nil
                    else {
                        ERR_clear_error()
                        throw CryptoError.invalidPrivateKey
                    }
                }
                func equal(_ a: OpaquePointer, _ b: OpaquePointer) -> Bool { BN_cmp(a, b) == 0 }
                guard BN_div(nil, check, d, pMinus1, ctx) == 1, equal(check, dp),
                    BN_div(nil, check, d, qMinus1, ctx) == 1, equal(check, dq),
                    BN_mod_mul(check, qInverse, q, p, ctx) == 1, BN_is_one(check) == 1
                else {
                    ERR_clear_error()
                    throw CryptoError.invalidPrivateKey
                }
                for bn in [pMinus1, qMinus1, phi, check] { BN_clear_free(bn) }
                made.removeAll { [pMinus1, qMinus1, phi, check].contains($0) }
            } catch {
                made.forEach { BN_clear_free($0) }
                throw error
            }
        }

        func free() {
            for bn in [n, e, d, p, q, dp, dq, qInverse] { BN_clear_free(bn) }
        }
    }
}
