import COpenSSL

/// NIST P-256 through OpenSSL's EC_GROUP/EC_POINT and EVP_PKEY interfaces.
enum P256 {
    static let nid = NID_X9_62_prime256v1

    /// Runs `body` with the P-256 group (freed afterwards).
    static func withGroup<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        guard let group = EC_GROUP_new_by_curve_name(nid) else { throw CryptoError.openssl("EC_GROUP_new_by_curve_name") }
        defer { EC_GROUP_free(group) }
        return try body(group)
    }

    /// Whether the 65-byte uncompressed encoding is a point on the curve.
    static func isValidPoint(_ encoded: [UInt8]) -> Bool {
        guard encoded.count == 65, encoded[0] == 0x04 else { return false }
        return (try? withGroup { group -> Bool in
            guard let point = EC_POINT_new(group) else { return false }
            defer { EC_POINT_free(point) }
            return EC_POINT_oct2point(group, point, encoded, encoded.count, nil) == 1
                && EC_POINT_is_on_curve(group, point, nil) == 1
        }) ?? false
    }

    /// d·G, uncompressed.
    static func publicPoint(private d: [UInt8]) throws -> [UInt8] {
        try withGroup { group in
            guard let bn = BN_bin2bn(d, Int32(d.count), nil) else { throw CryptoError.openssl("BN_bin2bn") }
            defer { BN_clear_free(bn) }
            guard let point = EC_POINT_new(group) else { throw CryptoError.openssl("EC_POINT_new") }
            defer { EC_POINT_free(point) }
            guard EC_POINT_mul(group, point, bn, nil, nil, nil) == 1 else { throw CryptoError.openssl("EC_POINT_mul") }
            var out = [UInt8](repeating: 0, count: 65)
            let n = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &out, 65, nil)
            guard n == 65 else { throw CryptoError.openssl("EC_POINT_point2oct") }
            return out
        }
    }

    /// Whether 0 < d < n.
    static func isValidScalar(_ d: [UInt8]) -> Bool {
        guard d.count == 32, d.contains(where: { $0 != 0 }) else { return false }
        return (try? withGroup { group -> Bool in
            guard let order = EC_GROUP_get0_order(group), let bn = BN_bin2bn(d, 32, nil) else { return false }
            defer { BN_clear_free(bn) }
            return BN_cmp(bn, order) < 0
        }) ?? false
    }

    /// An EVP_PKEY for the key pair or public key (caller frees).
    static func pkey(publicPoint: [UInt8], privateScalar: [UInt8]?) throws -> OpaquePointer {
        guard let bld = OSSL_PARAM_BLD_new() else { throw CryptoError.openssl("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(bld) }
        var priv: OpaquePointer?
        defer { if let priv { BN_clear_free(priv) } }
        guard OSSL_PARAM_BLD_push_utf8_string(bld, "group", "prime256v1", 0) == 1,
              OSSL_PARAM_BLD_push_octet_string(bld, "pub", publicPoint, publicPoint.count) == 1 else {
            throw CryptoError.openssl("OSSL_PARAM_BLD_push")
        }
        if let privateScalar {
            priv = BN_bin2bn(privateScalar, Int32(privateScalar.count), nil)
            guard let priv, OSSL_PARAM_BLD_push_BN(bld, "priv", priv) == 1 else {
                throw CryptoError.openssl("OSSL_PARAM_BLD_push_BN")
            }
        }
        guard let params = OSSL_PARAM_BLD_to_param(bld) else { throw CryptoError.openssl("OSSL_PARAM_BLD_to_param") }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError.openssl("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        // EVP_PKEY_PUBLIC_KEY (0x86) and EVP_PKEY_KEYPAIR (0x87) are macros Swift cannot import.
        let selection = privateScalar == nil ? 0x86 : 0x87
        guard EVP_PKEY_fromdata_init(ctx) == 1, EVP_PKEY_fromdata(ctx, &key, Int32(selection), params) == 1,
              let key else {
            throw CryptoError.openssl("EVP_PKEY_fromdata")
        }
        return key
    }

    /// The uncompressed point of an EC EVP_PKEY, when it is on P-256.
    static func point(of key: OpaquePointer) -> [UInt8]? {
        var group = [CChar](repeating: 0, count: 64)
        var glen = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &group, group.count, &glen) == 1,
              Crypto.string(fromC: group) == "prime256v1" else { return nil }
        var out = [UInt8](repeating: 0, count: 65)
        var len = 0
        guard EVP_PKEY_get_octet_string_param(key, "pub", &out, 65, &len) == 1, len == 65 else { return nil }
        return out
    }
}

public struct P256PublicKey: Sendable, Hashable {
    public let x: [UInt8]
    public let y: [UInt8]

    public init(x: [UInt8], y: [UInt8]) throws {
        guard x.count == 32, y.count == 32, P256.isValidPoint([0x04] + x + y) else {
            throw CryptoError.openssl("not a P-256 point")
        }
        self.x = x
        self.y = y
    }

    public init(uncompressed: [UInt8]) throws {
        guard uncompressed.count == 65, uncompressed[0] == 0x04 else {
            throw CryptoError.openssl("not an uncompressed P-256 point")
        }
        try self.init(x: Array(uncompressed[1..<33]), y: Array(uncompressed[33..<65]))
    }

    public init(spki der: [UInt8]) throws {
        var p: UnsafePointer<UInt8>? = nil
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            p = buf.baseAddress
            return d2i_PUBKEY(nil, &p, buf.count)
        }
        guard let key else { throw CryptoError.openssl("d2i_PUBKEY") }
        defer { EVP_PKEY_free(key) }
        guard let point = P256.point(of: key) else { throw CryptoError.openssl("not a P-256 key") }
        try self.init(uncompressed: point)
    }

    public var uncompressed: [UInt8] { [0x04] + x + y }

    public var spki: [UInt8] {
        guard let key = try? P256.pkey(publicPoint: uncompressed, privateScalar: nil) else { return [] }
        defer { EVP_PKEY_free(key) }
        let n = i2d_PUBKEY(key, nil)
        guard n > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: Int(n))
        out.withUnsafeMutableBufferPointer { buf in
            var p: UnsafeMutablePointer<UInt8>? = buf.baseAddress
            _ = i2d_PUBKEY(key, &p)
        }
        return out
    }

    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard !signature.isEmpty, let key = try? P256.pkey(publicPoint: uncompressed, privateScalar: nil) else {
            return false
        }
        defer { EVP_PKEY_free(key) }
        return Crypto.digestVerify(key: key, md: EVP_sha256(), signature: signature, message: message)
    }
}

public struct P256PrivateKey: Sendable {
    public let raw: [UInt8]
    private let point: [UInt8]

    public init() {
        var d = Crypto.random(32)
        while !P256.isValidScalar(d) { d = Crypto.random(32) }
        // A valid scalar always has a public point.
        try! self.init(raw: d)
    }

    public init(raw: [UInt8]) throws {
        guard P256.isValidScalar(raw) else { throw CryptoError.openssl("not a P-256 private key") }
        self.raw = raw
        self.point = try P256.publicPoint(private: raw)
    }

    public var publicKey: P256PublicKey {
        // The point came from d·G, so it is valid.
        try! P256PublicKey(uncompressed: point)
    }

    public func sign(_ message: [UInt8]) -> [UInt8] {
        guard let key = try? P256.pkey(publicPoint: point, privateScalar: raw),
              let ctx = EVP_MD_CTX_new() else { return [] }
        defer {
            EVP_MD_CTX_free(ctx)
            EVP_PKEY_free(key)
        }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { return [] }
        var length = 0
        guard EVP_DigestSign(ctx, nil, &length, message, message.count) == 1 else { return [] }
        var sig = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &sig, &length, message, message.count) == 1 else { return [] }
        return Array(sig.prefix(length))
    }

    public func sharedSecret(with peer: P256PublicKey) throws -> [UInt8] {
        let mine = try P256.pkey(publicPoint: point, privateScalar: raw)
        defer { EVP_PKEY_free(mine) }
        let theirs = try P256.pkey(publicPoint: peer.uncompressed, privateScalar: nil)
        defer { EVP_PKEY_free(theirs) }
        guard let ctx = EVP_PKEY_CTX_new(mine, nil) else { throw CryptoError.openssl("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var length = 32
        var out = [UInt8](repeating: 0, count: 32)
        guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_derive_set_peer(ctx, theirs) == 1,
              EVP_PKEY_derive(ctx, &out, &length) == 1, length == 32 else {
            throw CryptoError.openssl("ECDH")
        }
        return out
    }
}

public struct Ed25519PublicKey: Sendable, Hashable {
    public let raw: [UInt8]

    public init(raw: [UInt8]) throws {
        guard raw.count == 32 else { throw CryptoError.openssl("Ed25519 keys are 32 bytes") }
        self.raw = raw
    }

    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard signature.count == 64,
              let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count) else { return false }
        defer { EVP_PKEY_free(key) }
        return Crypto.digestVerify(key: key, md: nil, signature: signature, message: message)
    }
}

extension Crypto {
    /// A NUL-terminated C buffer as a String.
    static func string(fromC buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func digestVerify(key: OpaquePointer, md: OpaquePointer?, signature: [UInt8], message: [UInt8]) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, md, nil, key) == 1 else { return false }
        let ok = EVP_DigestVerify(ctx, signature, signature.count, message, message.count) == 1
        ERR_clear_error()
        return ok
    }
}
