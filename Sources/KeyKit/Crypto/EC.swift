import COpenSSL

// NIST P-256 (ECDSA, ECDH) and Ed25519 verification over OpenSSL 3's EVP_PKEY interface. Keys are kept as bytes
// (so the types are plain Sendable values) and turned into EVP_PKEYs only for the duration of one operation.

/// Helpers shared by the OpenSSL wrappers in this folder.
enum OSSL {
    /// Names for OSSL_PARAM arrays. OpenSSL keeps the *pointer* to a parameter's name (OSSL_PARAM_BLD and
    /// OSSL_PARAM_construct_* never copy it), so a Swift String bridged for one call would dangle; these
    /// literals live in static memory. They are the values of the OSSL_PKEY_PARAM_* / OSSL_KDF_PARAM_* macros.
    static let groupName: StaticString = "group"  // OSSL_PKEY_PARAM_GROUP_NAME
    static let publicKey: StaticString = "pub"  // OSSL_PKEY_PARAM_PUB_KEY
    static let privateKey: StaticString = "priv"  // OSSL_PKEY_PARAM_PRIV_KEY
    static let ecPublicX: StaticString = "qx"  // OSSL_PKEY_PARAM_EC_PUB_X
    static let ecPublicY: StaticString = "qy"  // OSSL_PKEY_PARAM_EC_PUB_Y
    static let digest: StaticString = "digest"  // OSSL_KDF_PARAM_DIGEST
    static let key: StaticString = "key"  // OSSL_KDF_PARAM_KEY
    static let salt: StaticString = "salt"  // OSSL_KDF_PARAM_SALT
    static let info: StaticString = "info"  // OSSL_KDF_PARAM_INFO
    /// OpenSSL's name for P-256 (SN_X9_62_prime256v1).
    static let p256: StaticString = "prime256v1"
    static let sha256: StaticString = "SHA256"

    /// EVP_PKEY_PUBLIC_KEY and EVP_PKEY_KEYPAIR: ORs of nested macros, which Swift does not import.
    static let selectPublicKey = Int32(
        OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS
            | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)
    static let selectKeyPair = selectPublicKey | Int32(OSSL_KEYMGMT_SELECT_PRIVATE_KEY)

    /// A CryptoError naming the step that failed and OpenSSL's reason, if it left one. Clears OpenSSL's
    /// per-thread error queue so that later calls do not report stale errors.
    static func failure(_ what: String) -> CryptoError {
        let code = ERR_peek_last_error()
        var message = what
        if code != 0, let reason = ERR_reason_error_string(code) {
            message += ": " + String(cString: reason)
        }
        ERR_clear_error()
        return .openssl(message)
    }

    /// `bytes` as a pointer that is never nil, even when empty (some OpenSSL calls reject NULL with length 0).
    static func withBytes<R>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>, Int) throws -> R) rethrows -> R {
        if bytes.isEmpty {
            var zero: UInt8 = 0
            return try withUnsafePointer(to: &zero) { try body($0, 0) }
        }
        return try bytes.withUnsafeBufferPointer { try body($0.baseAddress!, $0.count) }
    }

    /// A BIGNUM as exactly `count` big-endian bytes, or nil when it does not fit.
    static func bytes(of bn: OpaquePointer, count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        guard BN_bn2binpad(bn, &out, Int32(count)) == Int32(count) else { return nil }
        return out
    }

    /// DER from an i2d_* function called the usual two-pass way (length first, then the bytes).
    static func der(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
        let length = encode(nil)
        guard length > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var p = buffer.baseAddress
            return encode(&p)
        }
        guard written == length else { return nil }
        return out
    }

    /// Parses DER with a d2i_* function, requiring that it consumes every byte. Caller frees the result.
    static func parse(
        _ der: [UInt8],
        _ decode: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?,
        free: (OpaquePointer) -> Void
    ) -> OpaquePointer? {
        guard !der.isEmpty else { return nil }
        return der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let object = decode(&p, buffer.count) else {
                ERR_clear_error()
                return nil
            }
            guard p == buffer.baseAddress! + buffer.count else {
                free(object)
                return nil
            }
            return object
        }
    }

    /// One-shot EVP_DigestVerify: true only for a signature that verifies (never for an error).
    static func digestVerify(
        key: OpaquePointer, digest: OpaquePointer?, signature: [UInt8],
        message: [UInt8]
    ) -> Bool {
        defer { ERR_clear_error() }
        guard !signature.isEmpty, let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, digest, nil, key) == 1 else { return false }
        return withBytes(signature) { s, sn in
            withBytes(message) { m, mn in EVP_DigestVerify(ctx, s, sn, m, mn) == 1 }
        }
    }
}

extension StaticString {
    /// The literal's NUL-terminated bytes, valid for the life of the program.
    var cString: UnsafePointer<CChar> {
        UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

/// P-256 arithmetic and EVP_PKEY construction.
enum P256 {
    static let coordinateLength = 32

    /// The curve, made once for the process: making it computes its Montgomery constants (55,000 instructions
    /// each time, and a PIN protocol handshake needs it four times). The functions here only read it, which
    /// OpenSSL allows from any number of threads at once.
    nonisolated(unsafe) private static let curve: OpaquePointer? = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)

    /// An EVP_PKEY for the uncompressed point `point` and, when given, the private scalar. OpenSSL decodes
    /// the point with EC_POINT_oct2point, which rejects coordinates ≥ p and points not on the curve.
    /// The caller frees the key.
    static func evpKey(point: [UInt8], scalar: [UInt8]? = nil) throws -> OpaquePointer {
        guard let builder = OSSL_PARAM_BLD_new() else { throw OSSL.failure("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        var secret: OpaquePointer?
        defer { if let secret { BN_clear_free(secret) } }
        guard OSSL_PARAM_BLD_push_utf8_string(builder, OSSL.groupName.cString, OSSL.p256.cString, 0) == 1 else {
            throw OSSL.failure("OSSL_PARAM_BLD_push_utf8_string")
        }
        if let scalar {
            // A secure BIGNUM makes OSSL_PARAM_BLD put the scalar in the secure heap and clear it on free.
            secret = BN_secure_new()
            guard let secret,
                scalar.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), secret) }) != nil,
                OSSL_PARAM_BLD_push_BN(builder, OSSL.privateKey.cString, secret) == 1
            else {
                throw OSSL.failure("OSSL_PARAM_BLD_push_BN")
            }
        }
        // OSSL_PARAM_BLD copies the point when it builds the array, so it must stay valid until then.
        return try OSSL.withBytes(point) { p, n in
            guard OSSL_PARAM_BLD_push_octet_string(builder, OSSL.publicKey.cString, p, n) == 1 else {
                throw OSSL.failure("OSSL_PARAM_BLD_push_octet_string")
            }
            guard let params = OSSL_PARAM_BLD_to_param(builder) else { throw OSSL.failure("OSSL_PARAM_BLD_to_param") }
            defer { OSSL_PARAM_free(params) }
            guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
                throw OSSL.failure("EVP_PKEY_CTX_new_from_name")
            }
            defer { EVP_PKEY_CTX_free(ctx) }
            var key: OpaquePointer?
            guard EVP_PKEY_fromdata_init(ctx) == 1,
                EVP_PKEY_fromdata(ctx, &key, scalar == nil ? OSSL.selectPublicKey : OSSL.selectKeyPair, params) == 1,
                let key
            else {
                throw OSSL.failure("EVP_PKEY_fromdata")
            }
            return key
        }
    }

    /// The affine coordinates of an EC EVP_PKEY on P-256 (whatever point encoding it was read from).
    static func coordinates(of key: OpaquePointer) throws -> (x: [UInt8], y: [UInt8]) {
        guard EVP_PKEY_is_a(key, "EC") == 1 else { throw CryptoError.keyType }
        var name = [CChar](repeating: 0, count: 64)
        var nameLength = 0
        guard EVP_PKEY_get_utf8_string_param(key, OSSL.groupName.cString, &name, name.count, &nameLength) == 1,
            String(decoding: name.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        else {
            ERR_clear_error()
            throw CryptoError.notOnCurve
        }
        func coordinate(_ param: StaticString) throws -> [UInt8] {
            var bn: OpaquePointer?
            guard EVP_PKEY_get_bn_param(key, param.cString, &bn) == 1, let bn else {
                throw OSSL.failure("EVP_PKEY_get_bn_param")
            }
            defer { BN_free(bn) }
            guard let bytes = OSSL.bytes(of: bn, count: coordinateLength) else {
                throw CryptoError.notOnCurve
            }
            return bytes
        }
        return (try coordinate(OSSL.ecPublicX), try coordinate(OSSL.ecPublicY))
    }

    /// Whether the uncompressed `point` is on the curve. EC_POINT_oct2point rejects coordinates ≥ p and
    /// points off the curve. Arithmetic on EC_POINTs, not an EVP_PKEY: building one looks up EC key
    /// management in the provider tables first, 5 million instructions in a process's first use (a third of
    /// `fido credentials list`), for a check the point decoding makes anyway.
    static func isOnCurve(point: [UInt8]) -> Bool {
        guard point.count == 1 + 2 * coordinateLength, point[0] == 0x04,
            let group = curve
        else { return false }
        guard let decoded = EC_POINT_new(group) else { return false }
        defer { EC_POINT_free(decoded) }
        let ok =
            point.withUnsafeBufferPointer { EC_POINT_oct2point(group, decoded, $0.baseAddress, $0.count, nil) } == 1
        if !ok { ERR_clear_error() }
        return ok
    }

    /// ECDH on EC_POINTs (see isOnCurve): the x coordinate of d·Q, for a scalar 0 < d < n and a point Q on
    /// the curve; the point at infinity is refused.
    static func sharedX(scalar: [UInt8], peer: [UInt8]) throws -> [UInt8] {
        guard let group = curve else { throw OSSL.failure("EC_GROUP_new_by_curve_name") }
        guard let bnContext = BN_CTX_secure_new() else { throw OSSL.failure("BN_CTX_secure_new") }
        defer { BN_CTX_free(bnContext) }
        guard let d = BN_secure_new(), let x = BN_secure_new() else { throw OSSL.failure("BN_secure_new") }
        defer { BN_clear_free(d); BN_clear_free(x) }
        guard scalar.count == coordinateLength,
            scalar.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), d) }) != nil,
            let order = EC_GROUP_get0_order(group), BN_is_zero(d) == 0, BN_cmp(d, order) < 0
        else {
            throw CryptoError.invalidPrivateKey
        }
        guard let q = EC_POINT_new(group), let shared = EC_POINT_new(group) else { throw OSSL.failure("EC_POINT_new") }
        defer { EC_POINT_free(q); EC_POINT_clear_free(shared) }
        guard peer.withUnsafeBufferPointer({ EC_POINT_oct2point(group, q, $0.baseAddress, $0.count, bnContext) }) == 1
        else {
            ERR_clear_error()
            throw CryptoError.notOnCurve
        }
        guard EC_POINT_mul(group, shared, nil, q, d, bnContext) == 1 else { throw OSSL.failure("EC_POINT_mul") }
        guard EC_POINT_is_at_infinity(group, shared) == 0 else { throw CryptoError.notOnCurve }
        guard EC_POINT_get_affine_coordinates(group, shared, x, nil, bnContext) == 1 else {
            throw OSSL.failure("EC_POINT_get_affine_coordinates")
        }
        var out = [UInt8](repeating: 0, count: coordinateLength)
        guard BN_bn2binpad(x, &out, Int32(coordinateLength)) == Int32(coordinateLength) else {
            throw OSSL.failure("BN_bn2binpad")
        }
        return out
    }

    /// d·G, uncompressed, after checking 0 < d < n.
    static func publicPoint(scalar: [UInt8]) throws -> [UInt8] {
        guard scalar.count == coordinateLength else {
            throw CryptoError.length(expected: 32, actual: scalar.count)
        }
        guard let group = curve else { throw OSSL.failure("EC_GROUP_new_by_curve_name") }
        guard let bnContext = BN_CTX_secure_new() else { throw OSSL.failure("BN_CTX_secure_new") }
        defer { BN_CTX_free(bnContext) }
        guard let d = BN_secure_new() else { throw OSSL.failure("BN_secure_new") }
        defer { BN_clear_free(d) }
        guard scalar.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), d) }) != nil,
            let order = EC_GROUP_get0_order(group)
        else {
            throw OSSL.failure("BN_bin2bn")
        }
        guard BN_is_zero(d) == 0, BN_cmp(d, order) < 0 else {
            throw CryptoError.invalidPrivateKey
        }
        guard let point = EC_POINT_new(group) else { throw OSSL.failure("EC_POINT_new") }
        defer { EC_POINT_clear_free(point) }
        guard EC_POINT_mul(group, point, d, nil, nil, bnContext) == 1 else { throw OSSL.failure("EC_POINT_mul") }
        var out = [UInt8](repeating: 0, count: 1 + 2 * coordinateLength)
        guard EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, bnContext) == out.count
        else {
            throw OSSL.failure("EC_POINT_point2oct")
        }
        return out
    }
}

/// A NIST P-256 public key (an affine point on the curve).
public struct P256PublicKey: Sendable, Hashable {
    public let x: [UInt8]
    public let y: [UInt8]

    /// The DER prefix of a SubjectPublicKeyInfo for an uncompressed P-256 point: SEQUENCE { SEQUENCE {
    /// id-ecPublicKey, prime256v1 }, BIT STRING (no unused bits) }, followed by the 65-byte point.
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
        0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Checks that (x, y) is on the curve.
    public init(x: [UInt8], y: [UInt8]) throws {
        guard x.count == P256.coordinateLength, y.count == P256.coordinateLength else {
            throw CryptoError.length(expected: 32, actual: x.count == 32 ? y.count : x.count)
        }
        guard P256.isOnCurve(point: [0x04] + x + y) else { throw CryptoError.notOnCurve }
        self.x = x
        self.y = y
    }

    /// 65 bytes: 04 || x || y.
    public init(uncompressed: [UInt8]) throws {
        guard uncompressed.count == 1 + 2 * P256.coordinateLength, uncompressed[0] == 0x04 else {
            throw CryptoError.length(expected: 65, actual: uncompressed.count)
        }
        try self.init(x: Array(uncompressed[1...32]), y: Array(uncompressed[33...64]))
    }

    /// A DER SubjectPublicKeyInfo holding an EC key on P-256 (compressed or uncompressed point).
    public init(spki der: [UInt8]) throws {
        guard let key = OSSL.parse(der, { d2i_PUBKEY(nil, $0, $1) }, free: { EVP_PKEY_free($0) }) else {
            throw CryptoError.notDER(.subjectPublicKeyInfo)
        }
        defer { EVP_PKEY_free(key) }
        let (x, y) = try P256.coordinates(of: key)
        try self.init(x: x, y: y)
    }

    public var uncompressed: [UInt8] { [0x04] + x + y }

    /// DER SubjectPublicKeyInfo (id-ecPublicKey, prime256v1, uncompressed point), as OpenSSL writes it.
    public var spki: [UInt8] { Self.spkiPrefix + uncompressed }

    /// ECDSA P-256 with SHA-256 over `message`; `signature` is DER (as FIDO uses). False for any malformed input.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let key = try? P256.evpKey(point: uncompressed) else { return false }
        defer { EVP_PKEY_free(key) }
        return OSSL.digestVerify(key: key, digest: EVP_sha256(), signature: signature, message: message)
    }
}

/// A NIST P-256 private key. Its description and mirror show only the public key, so that printing or dumping
/// one never puts the scalar in a log.
public struct P256PrivateKey: Sendable {
    private let scalar: [UInt8]
    public let publicKey: P256PublicKey

    /// A fresh random key: a uniformly random scalar in [1, n-1] (random 32-byte strings are retried until one is
    /// in range, which takes more than one try with probability about 2⁻³²).
    public init() {
        for _ in 0..<64 {
            if let key = try? P256PrivateKey(raw: Crypto.random(P256.coordinateLength)) {
                self = key
                return
            }
        }
        preconditionFailure("could not make a P-256 key (OpenSSL's elliptic-curve arithmetic keeps failing)")
    }

    /// A 32-byte big-endian scalar d with 0 < d < n.
    public init(raw: [UInt8]) throws {
        let point = try P256.publicPoint(scalar: raw)
        self.publicKey = try P256PublicKey(uncompressed: point)
        self.scalar = raw
    }

    /// The 32-byte big-endian scalar.
    public var raw: [UInt8] { scalar }

    private func evpKey() throws -> OpaquePointer {
        try P256.evpKey(point: publicKey.uncompressed, scalar: scalar)
    }

    /// ECDSA-SHA256 over `message`; the signature is DER.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        do {
            return try signature(message)
        } catch {
            // Only reachable when OpenSSL itself fails (e.g. out of memory): the key was validated when made.
            preconditionFailure("ECDSA signing failed: \(error)")
        }
    }

    private func signature(_ message: [UInt8]) throws -> [UInt8] {
        let key = try evpKey()
        defer { EVP_PKEY_free(key) }
        guard let ctx = EVP_MD_CTX_new() else { throw OSSL.failure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1 else {
            throw OSSL.failure("EVP_DigestSignInit")
        }
        return try OSSL.withBytes(message) { m, n in
            var length = 0
            guard EVP_DigestSign(ctx, nil, &length, m, n) == 1, length > 0 else {
                throw OSSL.failure("EVP_DigestSign")
            }
            var out = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(ctx, &out, &length, m, n) == 1 else { throw OSSL.failure("EVP_DigestSign") }
            return Array(out.prefix(length))
        }
    }

    /// ECDH: the shared point's x coordinate (32 bytes), as CTAP's PIN protocols use it.
    public func sharedSecret(with peer: P256PublicKey) throws -> [UInt8] {
        try P256.sharedX(scalar: scalar, peer: peer.uncompressed)
    }
}

extension P256PrivateKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "P256PrivateKey(public: \(publicKey.uncompressed.hex))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["publicKey": publicKey]) }
}

/// An Ed25519 public key (RFC 8032), for verifying signatures.
public struct Ed25519PublicKey: Sendable, Hashable {
    /// The 32-byte encoded point.
    public let raw: [UInt8]

    public init(raw: [UInt8]) throws {
        guard raw.count == 32 else { throw CryptoError.length(expected: 32, actual: raw.count) }
        let key = try Self.evpKey(raw)
        EVP_PKEY_free(key)
        self.raw = raw
    }

    private static func evpKey(_ raw: [UInt8]) throws -> OpaquePointer {
        guard
            let key = raw.withUnsafeBufferPointer({
                EVP_PKEY_new_raw_public_key_ex(nil, "ED25519", nil, $0.baseAddress, $0.count)
            })
        else {
            throw OSSL.failure("EVP_PKEY_new_raw_public_key_ex")
        }
        return key
    }

    /// Ed25519 (pure, no pre-hash) over `message`; false for any malformed input.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard signature.count == 64, let key = try? Self.evpKey(raw) else { return false }
        defer { EVP_PKEY_free(key) }
        return OSSL.digestVerify(key: key, digest: nil, signature: signature, message: message)
    }
}
