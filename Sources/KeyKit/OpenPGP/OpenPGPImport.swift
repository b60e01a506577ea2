import COpenSSL

// Key import as the OpenPGP card specification 3.4 (4.4.3.12) has it: the extended header list 4D, and the
// OpenPGP v4 fingerprint (RFC 4880, 12.2) that GnuPG computes over the key's public key packet.

extension OpenPGP.Curve {
    /// The curve of a KeyKit key type; nil for RSA.
    public init?(_ type: AsymmetricKeyType) {
        switch type {
        case .p256: self = .secp256r1
        case .p384: self = .secp384r1
        case .p521: self = .secp521r1
        case .brainpoolP256r1: self = .brainpoolP256r1
        case .brainpoolP384r1: self = .brainpoolP384r1
        case .brainpoolP512r1: self = .brainpoolP512r1
        case .ed25519: self = .ed25519
        case .x25519: self = .x25519
        case .rsa: return nil
        }
    }
}

/// A private key as the card imports it: the attributes it goes in with, and the extended header list.
public enum OpenPGPKeyImport {
    /// The attributes `key` has in `slot`: RSA 2048, 3072 or 4096 with the exponent 65537 (standard format),
    /// ECDSA or (the decryption slot) ECDH on P-256, P-384, P-521 and brainpoolP256r1, P384r1 and P512r1, Ed25519 for signing and authentication, X25519
    /// for decryption. Anything else is `unsupportedAlgorithm`.
    public static func attributes(_ key: AsymmetricPrivateKey, slot: OpenPGP.KeySlot) throws(OpenPGPError)
        -> OpenPGPAlgorithmAttributes
    {
        switch key.type {
        case .rsa(let bits):
            guard [2048, 3072, 4096].contains(bits), key.publicKey.rsaExponent == [0x01, 0x00, 0x01] else {
                throw .unsupportedAlgorithm
            }
            return .rsa(bits: bits)
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            return .ecc(OpenPGP.Curve(key.type) ?? .secp256r1, slot: slot)
        case .ed25519:
            guard slot != .decryption else { throw .unsupportedAlgorithm }
            return .ecc(.ed25519, slot: slot)
        case .x25519:
            guard slot == .decryption else { throw .unsupportedAlgorithm }
            return .ecc(.x25519, slot: slot)
        }
    }

    /// The private parts, as the card's standard import format lists them: RSA e (91), p (92), q (93); ECC the
    /// private key (92), X25519's in reversed byte order.
    static func parts(_ key: AsymmetricPrivateKey) throws -> [(UInt32, [UInt8])] {
        try key.withEVP { evp -> [(UInt32, [UInt8])] in
            switch key.type {
            case .rsa:
                let half = key.type.length / 2
                return [
                    (0x91, [0x01, 0x00, 0x01]),
                    (0x92, try AsymmetricPrivateKey.number(evp, "rsa-factor1", length: half)),
                    (0x93, try AsymmetricPrivateKey.number(evp, "rsa-factor2", length: half)),
                ]
            case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
                return [(0x92, try AsymmetricPrivateKey.number(evp, "priv", length: key.type.length))]
            case .ed25519, .x25519:
                var raw = [UInt8](repeating: 0, count: 32)
                var length = raw.count
                guard EVP_PKEY_get_raw_private_key(evp, &raw, &length) == 1, length == 32 else {
                    ERR_clear_error()
                    SecretBytes.wipe(&raw)
                    throw PIVError.privateKeyComponents
                }
                if key.type == .x25519 { raw.reverse() }
                return [(0x92, raw)]
            }
        }
    }

    /// The extended header list: 4D { the slot's control reference template, 7F48 the parts' tags and lengths,
    /// 5F48 the parts one after another }. The caller wipes it after use.
    public static func template(_ key: AsymmetricPrivateKey, slot: OpenPGP.KeySlot) throws -> [UInt8] {
        var parts = try parts(key)
        var headers = [UInt8]()
        var values = [UInt8]()
        defer {
            for i in parts.indices { SecretBytes.wipe(&parts[i].1) }
            SecretBytes.wipe(&values)
        }
        for (tag, value) in parts {
            headers += TLV(tag, []).tagBytes + TLV.lengthBytes(value.count)
            values += value
        }
        var list = TLV(0x7F48, headers).encoded
        var data = TLV(0x5F48, values).encoded
        defer {
            SecretBytes.wipe(&list)
            SecretBytes.wipe(&data)
        }
        var body = slot.controlReference + list + data
        defer { SecretBytes.wipe(&body) }
        return TLV(0x4D, body).encoded
    }
}

/// The OpenPGP v4 fingerprint of a public key: SHA-1 over 99, the packet's length and its body (RFC 4880, 12.2).
public enum OpenPGPFingerprint {
    /// The body of the v4 public key packet of `key` with `attributes`, created at `created` (seconds since 1970).
    /// ECDH keys carry GnuPG's KDF parameters for the curve (SHA-256 and AES-128 for P-256 and Curve25519,
    /// SHA-384 and AES-192 for P-384 and brainpoolP384r1, SHA-512 and AES-256 for P-521 and brainpoolP512r1:
    /// GnuPG's choice by the curve's size).
    public static func publicKeyPacket(
        _ key: AsymmetricPublicKey, attributes: OpenPGPAlgorithmAttributes, created: UInt32
    ) throws(OpenPGPError) -> [UInt8] {
        var body: [UInt8] = [0x04, UInt8(created >> 24), UInt8(created >> 16 & 0xFF), UInt8(created >> 8 & 0xFF)]
        body.append(UInt8(created & 0xFF))
        switch attributes {
        case .rsa:
            guard let n = key.rsaModulus, let e = key.rsaExponent else { throw .unsupportedAlgorithm }
            body += [OpenPGP.AlgorithmID.rsa] + mpi(n) + mpi(e)
        case .ecc(let id, let curve, _):
            let point: [UInt8]
            switch curve {
            case .ed25519, .x25519:
                guard let raw = key.raw else { throw .unsupportedAlgorithm }
                point = [0x40] + raw
            default:
                guard let p = key.ecPoint else { throw .unsupportedAlgorithm }
                point = p
            }
            body += [id, UInt8(curve.oid.count)] + curve.oid + mpi(point)
            if id == OpenPGP.AlgorithmID.ecdh {
                let (hash, cipher): (UInt8, UInt8)
                switch curve {
                case .secp384r1, .brainpoolP384r1: (hash, cipher) = (0x09, 0x08)
                case .secp521r1, .brainpoolP512r1: (hash, cipher) = (0x0A, 0x09)
                default: (hash, cipher) = (0x08, 0x07)
                }
                body += [0x03, 0x01, hash, cipher]
            }
        }
        return body
    }

    /// The 20-byte v4 fingerprint.
    public static func v4(_ key: AsymmetricPublicKey, attributes: OpenPGPAlgorithmAttributes, created: UInt32)
        throws(OpenPGPError) -> [UInt8]
    {
        let body = try publicKeyPacket(key, attributes: attributes, created: created)
        return Crypto.digest(.sha1, [0x99, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body)
    }

    /// An OpenPGP MPI: the bit count in two bytes, then the number without leading zero bytes.
    static func mpi(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array(bytes.drop { $0 == 0 })
        guard let first = digits.first else { return [0, 0] }
        let bits = (digits.count - 1) * 8 + (8 - first.leadingZeroBitCount)
        return [UInt8(bits >> 8), UInt8(bits & 0xFF)] + digits
    }
}
