/// A credential's public key as authenticator data and credential management carry it (a COSE_Key), of an
/// algorithm ykterm verifies: ES256 (EC2 on P-256) or EdDSA (OKP on Ed25519).
public enum CredentialPublicKey: Sendable, Hashable {
    case es256(P256PublicKey)
    case edDSA(Ed25519PublicKey)

    /// Reads a COSE_Key. Its alg decides what else it must hold: ES256 the coordinates x and y on P-256 (a key
    /// without them is incomplete), EdDSA key type OKP with curve Ed25519 and the 32-byte key as x. Any other
    /// algorithm is not supported; a point off the curve or a key of the wrong length is `CryptoError`'s.
    public init(cose: CBOR) throws {
        typealias Key = COSE.Key
        let algorithm = cose[Key.algorithm]?.int
        switch algorithm {
        case COSE.Algorithm.es256:
            guard let x = cose[Key.x]?.bytes, let y = cose[Key.y]?.bytes else {
                throw FIDOSessionError.malformed(Malformation(.credentialKey, .incomplete))
            }
            guard cose[Key.keyType]?.int ?? COSE.keyTypeEC2 == COSE.keyTypeEC2,
                cose[Key.curve]?.int ?? COSE.curveP256 == COSE.curveP256
            else {
                throw FIDOSessionError.malformed(Malformation(.credentialKey, .wrongKeyType))
            }
            self = .es256(try P256PublicKey(x: x, y: y))
        case COSE.Algorithm.edDSA:
            guard cose[Key.keyType]?.int == COSE.keyTypeOKP, cose[Key.curve]?.int == COSE.curveEd25519,
                let x = cose[Key.x]?.bytes
            else {
                throw FIDOSessionError.malformed(Malformation(.credentialKey, .wrongKeyType))
            }
            self = .edDSA(try Ed25519PublicKey(raw: x))
        default:
            throw FIDOSessionError.notSupported(.signatureAlgorithm(algorithm))
        }
    }

    /// The COSE algorithm number: -7 or -8.
    public var algorithm: Int {
        switch self {
        case .es256: return COSE.Algorithm.es256
        case .edDSA: return COSE.Algorithm.edDSA
        }
    }

    /// The key as a COSE_Key, as an authenticator sends it.
    public var cose: CBOR {
        switch self {
        case .es256(let key): return COSE.ec2Key(key, algorithm: COSE.Algorithm.es256)
        case .edDSA(let key): return COSE.okpKey(key)
        }
    }

    /// Whether `signature` over `message` verifies: ECDSA (DER) over SHA-256 of the message, or pure Ed25519 over
    /// the message itself.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        switch self {
        case .es256(let key): return key.verify(signature: signature, message: message)
        case .edDSA(let key): return key.verify(signature: signature, message: message)
        }
    }
}
