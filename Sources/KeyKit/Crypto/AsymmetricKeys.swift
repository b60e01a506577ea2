import COpenSSL

// RSA, NIST P-256 and P-384, Ed25519 and X25519 keys over OpenSSL 3's EVP_PKEY interface: generation, import
// from their components, and their public halves. Keys are kept as DER (PKCS#8 for private keys,
// SubjectPublicKeyInfo for public ones) so the types are plain Sendable values; each operation turns the bytes
// into an EVP_PKEY for its own duration. The operations themselves are in AsymmetricKeyOperations.swift.

/// The kinds of asymmetric key PIV slots hold.
public enum AsymmetricKeyType: Sendable, Hashable, CustomStringConvertible {
    /// RSA with a modulus of `bits` bits (1024, 2048, 3072 or 4096 for PIV).
    case rsa(bits: Int)
    case p256
    case p384
    /// P-521 and the brainpool curves, which only the OpenPGP application holds (a YubiKey 5.2 and later).
    case p521
    case brainpoolP256r1
    case brainpoolP384r1
    case brainpoolP512r1
    case ed25519
    case x25519

    /// OpenSSL's name for the curve of an EC key ("prime256v1", "secp384r1").
    var curveName: StaticString? {
        switch self {
        case .p256: return "prime256v1"
        case .p384: return "secp384r1"
        case .p521: return "secp521r1"
        case .brainpoolP256r1: return "brainpoolP256r1"
        case .brainpoolP384r1: return "brainpoolP384r1"
        case .brainpoolP512r1: return "brainpoolP512r1"
        default: return nil
        }
    }

    var curveNID: Int32? {
        switch self {
        case .p256: return NID_X9_62_prime256v1
        case .p384: return NID_secp384r1
        case .p521: return NID_secp521r1
        case .brainpoolP256r1: return NID_brainpoolP256r1
        case .brainpoolP384r1: return NID_brainpoolP384r1
        case .brainpoolP512r1: return NID_brainpoolP512r1
        default: return nil
        }
    }

    /// The length in bytes of an EC key's field (the private scalar and each coordinate), or of an Ed25519 or
    /// X25519 key; the modulus length of an RSA key.
    public var length: Int {
        switch self {
        case .rsa(let bits): return (bits + 7) / 8
        case .p256, .brainpoolP256r1, .ed25519, .x25519: return 32
        case .p384, .brainpoolP384r1: return 48
        case .brainpoolP512r1: return 64
        case .p521: return 66
        }
    }

    /// OpenSSL's key type name.
    var evpName: StaticString {
        switch self {
        case .rsa: return "RSA"
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1: return "EC"
        case .ed25519: return "ED25519"
        case .x25519: return "X25519"
        }
    }

    public var description: String {
        switch self {
        case .rsa(let bits): return "RSA\(bits)"
        case .p256: return "ECCP256"
        case .p384: return "ECCP384"
        case .p521: return "ECCP521"
        case .brainpoolP256r1: return "BrainpoolP256R1"
        case .brainpoolP384r1: return "BrainpoolP384R1"
        case .brainpoolP512r1: return "BrainpoolP512R1"
        case .ed25519: return "ED25519"
        case .x25519: return "X25519"
        }
    }

    /// The type of an EVP_PKEY, or nil for a kind PIV does not hold (another curve, DSA, ...).
    static func of(_ key: OpaquePointer) -> AsymmetricKeyType? {
        if EVP_PKEY_is_a(key, "RSA") == 1 { return .rsa(bits: Int(EVP_PKEY_get_bits(key))) }
        if EVP_PKEY_is_a(key, "ED25519") == 1 { return .ed25519 }
        if EVP_PKEY_is_a(key, "X25519") == 1 { return .x25519 }
        guard EVP_PKEY_is_a(key, "EC") == 1 else { return nil }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, OSSL.groupName.cString, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        switch String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) {
        case "prime256v1": return .p256
        case "secp384r1": return .p384
        case "secp521r1": return .p521
        case "brainpoolP256r1": return .brainpoolP256r1
        case "brainpoolP384r1": return .brainpoolP384r1
        case "brainpoolP512r1": return .brainpoolP512r1
        default: return nil
        }
    }
}

/// A public key of any `AsymmetricKeyType`, kept as a DER SubjectPublicKeyInfo.
public struct AsymmetricPublicKey: Sendable, Hashable {
    public let type: AsymmetricKeyType
    /// DER SubjectPublicKeyInfo, as OpenSSL writes it.
    public let spki: [UInt8]

    /// Reads a DER SubjectPublicKeyInfo of a kind PIV holds.
    public init(spki der: [UInt8]) throws {
        guard let key = OSSL.parse(der, { d2i_PUBKEY(nil, $0, $1) }, free: { EVP_PKEY_free($0) }) else {
            throw CryptoError.notDER(.subjectPublicKeyInfo)
        }
        defer { EVP_PKEY_free(key) }
        try self.init(evp: key)
    }

    init(evp key: OpaquePointer) throws {
        guard let type = AsymmetricKeyType.of(key) else {
            throw CryptoError.keyType
        }
        guard let der = OSSL.der({ i2d_PUBKEY(key, $0) }) else { throw OSSL.failure("i2d_PUBKEY") }
        self.type = type
        self.spki = der
    }

    /// An RSA public key from its big-endian modulus and public exponent.
    public init(rsaModulus modulus: [UInt8], exponent: [UInt8]) throws {
        let key = try AsymmetricKeys.fromData("RSA", selection: OSSL.selectPublicKey) { builder, scratch in
            try scratch.push(builder, AsymmetricKeys.rsaN, modulus)
            try scratch.push(builder, AsymmetricKeys.rsaE, exponent)
        }
        defer { EVP_PKEY_free(key) }
        try self.init(evp: key)
    }

    /// An EC public key (P-256 or P-384) from its point, uncompressed (04 || x || y) or compressed.
    public init(ecPoint point: [UInt8], type: AsymmetricKeyType) throws {
        let key = try AsymmetricKeys.ecKey(type, point: point, scalar: nil)
        defer { EVP_PKEY_free(key) }
        try self.init(evp: key)
    }

    /// An Ed25519 or X25519 public key from its 32 raw bytes.
    public init(raw: [UInt8], type: AsymmetricKeyType) throws {
        guard type == .ed25519 || type == .x25519, raw.count == 32 else {
            throw CryptoError.length(expected: 32, actual: raw.count)
        }
        guard
            let key = raw.withUnsafeBufferPointer({
                EVP_PKEY_new_raw_public_key_ex(nil, type.evpName.cString, nil, $0.baseAddress, $0.count)
            })
        else {
            throw OSSL.failure("EVP_PKEY_new_raw_public_key_ex")
        }
        defer { EVP_PKEY_free(key) }
        try self.init(evp: key)
    }

    func withEVP<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        guard let key = OSSL.parse(spki, { d2i_PUBKEY(nil, $0, $1) }, free: { EVP_PKEY_free($0) }) else {
            throw CryptoError.notDER(.subjectPublicKeyInfo)
        }
        defer { EVP_PKEY_free(key) }
        return try body(key)
    }

    /// RSA: the modulus, big-endian, as long as the key (leading zeros kept).
    public var rsaModulus: [UInt8]? {
        guard case .rsa = type else { return nil }
        return try? withEVP { try AsymmetricKeys.bnParam($0, AsymmetricKeys.rsaN, count: type.length) }
    }

    /// RSA: the public exponent, big-endian, without leading zeros (65537 is 01 00 01).
    public var rsaExponent: [UInt8]? {
        guard case .rsa = type else { return nil }
        return try? withEVP { try AsymmetricKeys.bnParam($0, AsymmetricKeys.rsaE, count: nil) }
    }

    /// P-256 and P-384: the uncompressed point, 04 || x || y.
    public var ecPoint: [UInt8]? {
        guard type.curveName != nil else { return nil }
        return try? withEVP { key -> [UInt8] in
            var out = [UInt8](repeating: 0, count: 1 + 2 * type.length)
            var length = 0
            guard
                EVP_PKEY_get_octet_string_param(
                    key, AsymmetricKeys.encodedPublicKey.cString, &out, out.count,
                    &length) == 1, length == out.count
            else {
                throw OSSL.failure("EVP_PKEY_get_octet_string_param")
            }
            return out
        }
    }

    /// Ed25519 and X25519: the 32-byte key.
    public var raw: [UInt8]? {
        guard type == .ed25519 || type == .x25519 else { return nil }
        return try? withEVP { key -> [UInt8] in
            var out = [UInt8](repeating: 0, count: 32)
            var length = out.count
            guard EVP_PKEY_get_raw_public_key(key, &out, &length) == 1, length == 32 else {
                throw OSSL.failure("EVP_PKEY_get_raw_public_key")
            }
            return out
        }
    }
}

/// A private key of any `AsymmetricKeyType`, kept as DER PKCS#8. Its description and mirror show only the
/// type and the public key, so that printing or dumping one never puts the private key in a log.
public struct AsymmetricPrivateKey: Sendable, Equatable {
    /// DER PKCS#8 PrivateKeyInfo (unencrypted): the whole private key.
    public let pkcs8: [UInt8]
    public let type: AsymmetricKeyType
    public let publicKey: AsymmetricPublicKey

    /// Reads a DER PKCS#8 PrivateKeyInfo (unencrypted) of a kind PIV holds.
    public init(pkcs8 der: [UInt8]) throws {
        self = try Self.withEVP(pkcs8: der) { try AsymmetricPrivateKey(evp: $0) }
    }

    init(evp key: OpaquePointer) throws {
        let publicKey = try AsymmetricPublicKey(evp: key)
        guard let info = EVP_PKEY2PKCS8(key) else { throw OSSL.failure("EVP_PKEY2PKCS8") }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        guard let der = OSSL.der({ i2d_PKCS8_PRIV_KEY_INFO(info, $0) }) else {
            throw OSSL.failure("i2d_PKCS8_PRIV_KEY_INFO")
        }
        self.pkcs8 = der
        self.type = publicKey.type
        self.publicKey = publicKey
    }

    /// A fresh random key. RSA keys have the public exponent 65537.
    public static func generate(_ type: AsymmetricKeyType) throws -> AsymmetricPrivateKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, type.evpName.cString, nil) else {
            throw OSSL.failure("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1 else { throw OSSL.failure("EVP_PKEY_keygen_init") }
        guard let builder = OSSL_PARAM_BLD_new() else { throw OSSL.failure("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        switch type {
        case .rsa(let bits):
            guard (1024...8192).contains(bits),
                OSSL_PARAM_BLD_push_uint(builder, AsymmetricKeys.rsaBits.cString, UInt32(bits)) == 1
            else {
                throw CryptoError.rsaSize(bits)
            }
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            guard OSSL_PARAM_BLD_push_utf8_string(builder, OSSL.groupName.cString, type.curveName!.cString, 0) == 1
            else {
                throw OSSL.failure("OSSL_PARAM_BLD_push_utf8_string")
            }
        case .ed25519, .x25519:
            break
        }
        guard let params = OSSL_PARAM_BLD_to_param(builder) else { throw OSSL.failure("OSSL_PARAM_BLD_to_param") }
        defer { OSSL_PARAM_free(params) }
        var key: OpaquePointer?
        guard EVP_PKEY_CTX_set_params(ctx, params) == 1, EVP_PKEY_generate(ctx, &key) == 1, let key else {
            throw OSSL.failure("EVP_PKEY_generate")
        }
        defer { EVP_PKEY_free(key) }
        return try AsymmetricPrivateKey(evp: key)
    }

    /// An RSA key from its CRT components (big-endian, leading zeros allowed), as PIV's IMPORT KEY carries
    /// them: the primes p and q, d mod (p-1), d mod (q-1) and q⁻¹ mod p. Throws unless they belong together
    /// (the exponents and coefficient are checked against those p, q and `exponent` give).
    public static func rsa(
        p: [UInt8], q: [UInt8], dp: [UInt8], dq: [UInt8], qInverse: [UInt8],
        exponent: [UInt8] = [0x01, 0x00, 0x01]
    ) throws -> AsymmetricPrivateKey {
        let parts = try AsymmetricKeys.RSAParts(p: p, q: q, dp: dp, dq: dq, qInverse: qInverse, exponent: exponent)
        defer { parts.free() }
        return try rsa(parts)
    }

    private static func rsa(_ parts: AsymmetricKeys.RSAParts) throws -> AsymmetricPrivateKey {
        let key = try AsymmetricKeys.fromData("RSA", selection: OSSL.selectKeyPair) { builder, _ in
            let pairs: [(StaticString, OpaquePointer)] = [
                (AsymmetricKeys.rsaN, parts.n), (AsymmetricKeys.rsaE, parts.e), (AsymmetricKeys.rsaD, parts.d),
                ("rsa-factor1", parts.p), ("rsa-factor2", parts.q), ("rsa-exponent1", parts.dp),
                ("rsa-exponent2", parts.dq), ("rsa-coefficient1", parts.qInverse),
            ]
            for (name, bn) in pairs where OSSL_PARAM_BLD_push_BN(builder, name.cString, bn) != 1 {
                throw OSSL.failure("OSSL_PARAM_BLD_push_BN")
            }
        }
        defer { EVP_PKEY_free(key) }
        return try AsymmetricPrivateKey(evp: key)
    }

    /// An RSA key from its primes and public exponent alone (an OpenPGP card's standard import format); the
    /// private exponent and the CRT values are computed.
    public static func rsa(p: [UInt8], q: [UInt8], exponent: [UInt8]) throws -> AsymmetricPrivateKey {
        let parts = try AsymmetricKeys.RSAParts(p: p, q: q, dp: nil, dq: nil, qInverse: nil, exponent: exponent)
        defer { parts.free() }
        return try rsa(parts)
    }

    /// A P-256 or P-384 key from its big-endian private scalar d, 0 < d < n (exactly the field's length).
    public static func ec(_ type: AsymmetricKeyType, scalar: [UInt8]) throws -> AsymmetricPrivateKey {
        guard type.curveNID != nil, scalar.count == type.length else {
            throw CryptoError.length(expected: type.length, actual: scalar.count)
        }
        let point = try AsymmetricKeys.publicPoint(type, scalar: scalar)
        let key = try AsymmetricKeys.ecKey(type, point: point, scalar: scalar)
        defer { EVP_PKEY_free(key) }
        return try AsymmetricPrivateKey(evp: key)
    }

    /// An Ed25519 or X25519 key from its 32-byte private key (RFC 8032's seed, RFC 7748's scalar).
    public static func raw(_ bytes: [UInt8], type: AsymmetricKeyType) throws -> AsymmetricPrivateKey {
        guard type == .ed25519 || type == .x25519 else { throw CryptoError.keyType }
        guard bytes.count == 32 else { throw CryptoError.length(expected: 32, actual: bytes.count) }
        guard
            let key = bytes.withUnsafeBufferPointer({
                EVP_PKEY_new_raw_private_key_ex(nil, type.evpName.cString, nil, $0.baseAddress, $0.count)
            })
        else {
            throw OSSL.failure("EVP_PKEY_new_raw_private_key_ex")
        }
        defer { EVP_PKEY_free(key) }
        return try AsymmetricPrivateKey(evp: key)
    }

    /// Lends the key as an EVP_PKEY to `body`.
    func withEVP<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        try Self.withEVP(pkcs8: pkcs8, body)
    }

    /// Lends the key that the DER PKCS#8 PrivateKeyInfo `der` holds as an EVP_PKEY to `body`.
    private static func withEVP<R>(pkcs8 der: [UInt8], _ body: (OpaquePointer) throws -> R) throws -> R {
        guard
            let info = OSSL.parse(
                der, { d2i_PKCS8_PRIV_KEY_INFO(nil, $0, $1) },
                free: { PKCS8_PRIV_KEY_INFO_free($0) })
        else {
            throw CryptoError.notDER(.pkcs8)
        }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        guard let key = EVP_PKCS82PKEY(info) else { throw OSSL.failure("EVP_PKCS82PKEY") }
        defer { EVP_PKEY_free(key) }
        return try body(key)
    }

    public static func == (a: AsymmetricPrivateKey, b: AsymmetricPrivateKey) -> Bool {
        Crypto.constantTimeEqual(a.pkcs8, b.pkcs8)
    }
}

extension AsymmetricPrivateKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "AsymmetricPrivateKey(\(type), public: \(publicKey.spki.hex))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["type": type, "publicKey": publicKey]) }
}

/// Helpers for building and reading keys.
enum AsymmetricKeys {
    // OSSL_PKEY_PARAM_* names (kept in static memory: OpenSSL keeps the pointers).
    static let rsaN: StaticString = "n"
    static let rsaE: StaticString = "e"
    static let rsaD: StaticString = "d"
    static let rsaBits: StaticString = "bits"
    static let encodedPublicKey: StaticString = "encoded-pub-key"

    /// What an OSSL_PARAM_BLD points at until it builds its parameters: BIGNUMs and byte buffers, freed (and
    /// cleared) together afterwards.
    final class Scratch {
        private var bignums = [OpaquePointer]()
        private var buffers = [UnsafeMutableRawBufferPointer]()

        /// Pushes a big-endian integer as a BIGNUM parameter.
        func push(_ builder: OpaquePointer, _ name: StaticString, _ bytes: [UInt8]) throws {
            let bn = try bignum(bytes)
            bignums.append(bn)
            guard OSSL_PARAM_BLD_push_BN(builder, name.cString, bn) == 1 else {
                throw OSSL.failure("OSSL_PARAM_BLD_push_BN")
            }
        }

        /// Pushes bytes as an octet string parameter, from a copy that lives as long as this scratch.
        func pushOctets(_ builder: OpaquePointer, _ name: StaticString, _ bytes: [UInt8]) throws {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
            buffers.append(buffer)
            buffer.copyBytes(from: bytes)
            guard OSSL_PARAM_BLD_push_octet_string(builder, name.cString, buffer.baseAddress, bytes.count) == 1 else {
                throw OSSL.failure("OSSL_PARAM_BLD_push_octet_string")
            }
        }

        func free() {
            bignums.forEach { BN_clear_free($0) }
            buffers.forEach {
                $0.initializeMemory(as: UInt8.self, repeating: 0)
                $0.deallocate()
            }
            bignums = []
            buffers = []
        }
    }

    /// A key made with EVP_PKEY_fromdata from the parameters `fill` pushes. The caller frees the key.
    static func fromData(
        _ name: StaticString, selection: Int32,
        _ fill: (OpaquePointer, Scratch) throws -> Void
    ) throws -> OpaquePointer {
        guard let builder = OSSL_PARAM_BLD_new() else { throw OSSL.failure("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        let scratch = Scratch()
        defer { scratch.free() }
        try fill(builder, scratch)
        guard let params = OSSL_PARAM_BLD_to_param(builder) else { throw OSSL.failure("OSSL_PARAM_BLD_to_param") }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, name.cString, nil) else {
            throw OSSL.failure("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1, EVP_PKEY_fromdata(ctx, &key, selection, params) == 1, let key else {
            throw OSSL.failure("EVP_PKEY_fromdata")
        }
        return key
    }

    /// A secure BIGNUM from big-endian bytes; the caller frees it with BN_clear_free.
    static func bignum(_ bytes: [UInt8]) throws -> OpaquePointer {
        guard let bn = BN_secure_new() else { throw OSSL.failure("BN_secure_new") }
        guard OSSL.withBytes(bytes, { BN_bin2bn($0, Int32($1), bn) }) != nil else {
            BN_clear_free(bn)
            throw OSSL.failure("BN_bin2bn")
        }
        return bn
    }

    /// A BIGNUM parameter of a key as big-endian bytes: exactly `count` long, or as short as it goes.
    static func bnParam(_ key: OpaquePointer, _ name: StaticString, count: Int?) throws -> [UInt8] {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name.cString, &bn) == 1, let bn else {
            throw OSSL.failure("EVP_PKEY_get_bn_param")
        }
        defer { BN_free(bn) }
        let n = count ?? max(1, (Int(BN_num_bits(bn)) + 7) / 8)
        guard let bytes = OSSL.bytes(of: bn, count: n) else {
            throw CryptoError.length(expected: n, actual: (Int(BN_num_bits(bn)) + 7) / 8)
        }
        return bytes
    }

    /// An EC key on `type`'s curve from a point and, when given, the private scalar. The caller frees it.
    static func ecKey(_ type: AsymmetricKeyType, point: [UInt8], scalar: [UInt8]?) throws -> OpaquePointer {
        guard let curve = type.curveName else { throw CryptoError.keyType }
        return try fromData("EC", selection: scalar == nil ? OSSL.selectPublicKey : OSSL.selectKeyPair) { b, scratch in
            guard OSSL_PARAM_BLD_push_utf8_string(b, OSSL.groupName.cString, curve.cString, 0) == 1 else {
                throw OSSL.failure("OSSL_PARAM_BLD_push_utf8_string")
            }
            if let scalar { try scratch.push(b, OSSL.privateKey, scalar) }
            try scratch.pushOctets(b, OSSL.publicKey, point)
        }
    }

    /// d·G on `type`'s curve, uncompressed, after checking 0 < d < n.
    static func publicPoint(_ type: AsymmetricKeyType, scalar: [UInt8]) throws -> [UInt8] {
        guard let nid = type.curveNID, let group = EC_GROUP_new_by_curve_name(nid) else {
            throw OSSL.failure("EC_GROUP_new_by_curve_name")
        }
        defer { EC_GROUP_free(group) }
        guard let bnContext = BN_CTX_secure_new() else { throw OSSL.failure("BN_CTX_secure_new") }
        defer { BN_CTX_free(bnContext) }
        let d = try bignum(scalar)
        defer { BN_clear_free(d) }
        guard let order = EC_GROUP_get0_order(group), BN_is_zero(d) == 0, BN_cmp(d, order) < 0 else {
            throw CryptoError.invalidPrivateKey
        }
        guard let point = EC_POINT_new(group) else { throw OSSL.failure("EC_POINT_new") }
        defer { EC_POINT_clear_free(point) }
        guard EC_POINT_mul(group, point, d, nil, nil, bnContext) == 1 else { throw OSSL.failure("EC_POINT_mul") }
        var out = [UInt8](repeating: 0, count: 1 + 2 * type.length)
        guard EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, bnContext) == out.count
        else {
            throw OSSL.failure("EC_POINT_point2oct")
        }
        return out
    }
}
