import COpenSSL

// Keys as PIV carries them: the public key template (7F49) of GENERATE ASYMMETRIC and GET METADATA, and
// the algorithm identifiers of the slots' keys.

extension AsymmetricKeyType {
    /// The key type of a slot key algorithm (nil for a management key algorithm).
    public init?(piv algorithm: PIV.Algorithm) {
        switch algorithm {
        case .rsa1024, .rsa2048, .rsa3072, .rsa4096: self = .rsa(bits: (algorithm.rsaModulusLength ?? 0) * 8)
        case .eccP256: self = .p256
        case .eccP384: self = .p384
        case .ed25519: self = .ed25519
        case .x25519: self = .x25519
        case .tripleDES, .aes128, .aes192, .aes256: return nil
        }
    }

    /// PIV's identifier for the key type (nil for an RSA size PIV does not hold).
    public var pivAlgorithm: PIV.Algorithm? {
        switch self {
        case .rsa(1024): return .rsa1024
        case .rsa(2048): return .rsa2048
        case .rsa(3072): return .rsa3072
        case .rsa(4096): return .rsa4096
        case .rsa: return nil
        case .p256: return .eccP256
        case .p384: return .eccP384
        case .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1: return nil
        case .ed25519: return .ed25519
        case .x25519: return .x25519
        }
    }
}

extension AsymmetricPublicKey {
    /// Reads the value of PIV's public key template (7F49): 81 modulus and 82 exponent for RSA, 86 the
    /// uncompressed point for P-256 and P-384, 86 the 32-byte key for Ed25519 and X25519.
    public init(pivEncoding value: [UInt8], algorithm: PIV.Algorithm) throws(PIVError) {
        guard let type = AsymmetricKeyType(piv: algorithm) else { throw .notASlotKeyAlgorithm(algorithm) }
        let fields: [TLV]
        do {
            fields = try TLV.parseAll(value)
        } catch {
            throw .malformed(.tlv(error))
        }
        func field(_ tag: UInt32) throws(PIVError) -> [UInt8] {
            guard let v = fields.value(for: tag) else { throw .malformed(.missingTag(tag)) }
            return v
        }
        do {
            switch type {
            case .rsa:
                let modulus = try field(PIV.Tag.rsaModulus)
                let exponent = try field(PIV.Tag.rsaExponent)
                try self.init(rsaModulus: modulus, exponent: exponent)
            case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
                let point = try field(PIV.Tag.ecPoint)
                guard point.count == 1 + 2 * type.length, point.first == 0x04 else {
                    throw PIVError.malformed(.fieldLength(tag: PIV.Tag.ecPoint, length: point.count))
                }
                try self.init(ecPoint: point, type: type)
            case .ed25519, .x25519:
                try self.init(raw: try field(PIV.Tag.ecPoint), type: type)
            }
        } catch let error as PIVError {
            throw error
        } catch {
            throw .malformed(.publicKey(algorithm))
        }
        // An RSA modulus of another size than the algorithm's is not this algorithm's key.
        guard self.type == type else { throw .malformed(.publicKey(algorithm)) }
    }

    /// The value of PIV's public key template (7F49) for this key.
    public var pivEncoding: [UInt8] {
        switch type {
        case .rsa:
            return TLV(PIV.Tag.rsaModulus, rsaModulus ?? []).encoded
                + TLV(PIV.Tag.rsaExponent, rsaExponent ?? []).encoded
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            return TLV(PIV.Tag.ecPoint, ecPoint ?? []).encoded
        case .ed25519, .x25519:
            return TLV(PIV.Tag.ecPoint, raw ?? []).encoded
        }
    }

    /// PIV's identifier for the key's algorithm.
    public var pivAlgorithm: PIV.Algorithm? { type.pivAlgorithm }

    /// The key as PEM ("-----BEGIN PUBLIC KEY-----"), as `openssl pkey -pubout` writes it.
    public var pem: String { PEM.encode(spki, label: PEM.publicKey) }
}

extension AsymmetricPrivateKey {
    /// IMPORT KEY's data for this key: RSA's p, q, d mod (p-1), d mod (q-1) and q⁻¹ mod p (01-05, each half the
    /// modulus long), an EC scalar (06), an Ed25519 (07) or X25519 (08) private key. Wipe it after use.
    func pivImportData() throws -> [UInt8] {
        try withEVP { key -> [UInt8] in
            switch type {
            case .rsa:
                guard publicKey.rsaExponent == [0x01, 0x00, 0x01] else { throw PIVError.unsupportedRSAExponent }
                let half = type.length / 2
                let parts: [(UInt32, StaticString)] = [
                    (PIV.Tag.rsaP, "rsa-factor1"), (PIV.Tag.rsaQ, "rsa-factor2"), (PIV.Tag.rsaDP, "rsa-exponent1"),
                    (PIV.Tag.rsaDQ, "rsa-exponent2"), (PIV.Tag.rsaQInv, "rsa-coefficient1"),
                ]
                var out = [UInt8]()
                for (tag, name) in parts {
                    var value = try Self.number(key, name, length: half)
                    out += TLV(tag, value).encoded
                    SecretBytes.wipe(&value)
                }
                return out
            case .p256, .p384:
                var scalar = try Self.number(key, "priv", length: type.length)
                defer { SecretBytes.wipe(&scalar) }
                return TLV(PIV.Tag.ecPrivate, scalar).encoded
            case .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
                throw CryptoError.keyType
            case .ed25519, .x25519:
                var raw = [UInt8](repeating: 0, count: 32)
                var length = raw.count
                guard EVP_PKEY_get_raw_private_key(key, &raw, &length) == 1, length == 32 else {
                    ERR_clear_error()
                    throw PIVError.privateKeyComponents
                }
                defer { SecretBytes.wipe(&raw) }
                return TLV(type == .ed25519 ? PIV.Tag.ed25519Private : PIV.Tag.x25519Private, raw).encoded
            }
        }
    }

    /// A BIGNUM parameter of `key` as exactly `length` big-endian bytes.
    static func number(_ key: OpaquePointer, _ name: StaticString, length: Int) throws -> [UInt8] {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name.cString, &bn) == 1, let bn else {
            ERR_clear_error()
            throw PIVError.privateKeyComponents
        }
        defer { BN_clear_free(bn) }
        var out = [UInt8](repeating: 0, count: length)
        guard BN_bn2binpad(bn, &out, Int32(length)) == Int32(length) else {
            ERR_clear_error()
            throw PIVError.privateKeyComponents
        }
        return out
    }
}
