import KeyKit

/// The private key of a FIDO2 credential, of one of the algorithms the authenticator makes: ES256 (a P-256
/// scalar) or, from firmware 5.2, EdDSA (an Ed25519 private key, RFC 8032's seed). Either is 32 bytes, so a
/// discoverable credential stores it, and a key handle wraps it, the same way; the credential's COSE algorithm
/// number says which it is.
struct FIDOCredentialKey {
    private enum Kind {
        case es256(P256PrivateKey)
        case edDSA(AsymmetricPrivateKey, seed: [UInt8], publicKey: Ed25519PublicKey)
    }

    private let kind: Kind

    /// The first firmware that makes EdDSA credentials.
    static let edDSAFirmware = Version(5, 2, 0)

    /// The COSE algorithms a key with firmware `version` makes credentials with, in the order getInfo lists
    /// them.
    static func algorithms(for version: Version) -> [Int] {
        version >= edDSAFirmware ? [COSE.Algorithm.es256, COSE.Algorithm.edDSA] : [COSE.Algorithm.es256]
    }

    /// A fresh key for `algorithm` (one of `algorithms(for:)`); nil for another algorithm, or when OpenSSL fails.
    init?(generating algorithm: Int) {
        // P256PrivateKey() draws a scalar in range; any 32 bytes are an Ed25519 seed.
        let raw = algorithm == COSE.Algorithm.es256 ? P256PrivateKey().raw : Crypto.random(32)
        self.init(algorithm: algorithm, raw: raw)
    }

    /// The key of `algorithm` whose 32 bytes are `raw`; nil when they are not a key of it.
    init?(algorithm: Int, raw: [UInt8]) {
        switch algorithm {
        case COSE.Algorithm.es256:
            guard let key = try? P256PrivateKey(raw: raw) else { return nil }
            kind = .es256(key)
        case COSE.Algorithm.edDSA:
            guard let key = try? AsymmetricPrivateKey.raw(raw, type: .ed25519),
                let publicKey = try? key.publicKey.raw.map(Ed25519PublicKey.init(raw:))
            else { return nil }
            kind = .edDSA(key, seed: raw, publicKey: publicKey)
        default:
            return nil
        }
    }

    /// The 32 bytes that are kept: the P-256 scalar or the Ed25519 seed.
    var raw: [UInt8] {
        switch kind {
        case .es256(let key): return key.raw
        case .edDSA(_, let seed, _): return seed
        }
    }

    /// The public key as authenticator data and credential management carry it: an EC2 or an OKP COSE_Key.
    var publicKey: CBOR {
        switch kind {
        case .es256(let key): return CredentialPublicKey.es256(key.publicKey).cose
        case .edDSA(_, _, let publicKey): return CredentialPublicKey.edDSA(publicKey).cose
        }
    }

    /// The signature over `message`: ECDSA with SHA-256 (DER), or pure Ed25519 (64 bytes); nil if OpenSSL fails.
    func sign(_ message: [UInt8]) -> [UInt8]? {
        let signature: [UInt8]?
        switch kind {
        case .es256(let key): signature = key.sign(message)
        case .edDSA(let key, _, _): signature = try? key.ed25519Sign(message)
        }
        guard let signature, !signature.isEmpty else { return nil }
        return signature
    }
}
