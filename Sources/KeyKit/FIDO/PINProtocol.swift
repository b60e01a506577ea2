/// PIN/UV auth protocols 1 and 2 (CTAP 2.1 section 6.5): key agreement, encryption and authentication.
public struct PINUVAuthProtocol: Sendable, Hashable {
    public let version: Int

    public static let one = PINUVAuthProtocol(version: 1)
    public static let two = PINUVAuthProtocol(version: 2)

    /// The COSE_Key for an ECDH-ES+HKDF-256 P-256 public key, as clientPIN sends and receives it.
    public static func coseKey(_ key: P256PublicKey) -> CBOR {
        COSE.ec2Key(key, algorithm: COSE.Algorithm.ecdhESHKDF256)
    }

    /// The key's key agreement key. Coordinates that are not a point on P-256 are the key's malformed answer
    /// (`FIDOSessionError.malformed`), as a COSE key of another shape is.
    public static func publicKey(fromCOSE cose: CBOR) throws(FIDOSessionError) -> P256PublicKey {
        guard cose[COSE.Key.keyType]?.int == COSE.keyTypeEC2, cose[COSE.Key.curve]?.int == COSE.curveP256,
            let x = cose[COSE.Key.x]?.bytes, let y = cose[COSE.Key.y]?.bytes, x.count == 32, y.count == 32
        else {
            throw .malformed(Malformation(.keyAgreement, .wrongKeyType))
        }
        do {
            return try P256PublicKey(x: x, y: y)
        } catch {
            throw .malformed(Malformation(.keyAgreement, .notOnCurve))
        }
    }

    /// Derives the shared secret from the ECDH result's x coordinate: SHA-256 of it (protocol 1), or an HMAC
    /// key and an AES key from HKDF-SHA-256 (protocol 2, 64 bytes).
    public func kdf(_ z: [UInt8]) throws -> [UInt8] {
        if version == 1 { return Crypto.digest(.sha256, z) }
        let salt = [UInt8](repeating: 0, count: 32)
        return try Crypto.hkdfSHA256(ikm: z, salt: salt, info: Array("CTAP2 HMAC key".utf8), length: 32)
            + Crypto.hkdfSHA256(ikm: z, salt: salt, info: Array("CTAP2 AES key".utf8), length: 32)
    }

    /// A fresh platform key pair against the authenticator's key: (platform COSE key, shared secret).
    public func encapsulate(_ peer: P256PublicKey) throws -> (CBOR, [UInt8]) {
        let ours = P256PrivateKey()
        let z = try ours.sharedSecret(with: peer)
        return (PINUVAuthProtocol.coseKey(ours.publicKey), try kdf(z))
    }

    private func aesKey(_ key: [UInt8]) -> [UInt8] { version == 1 ? Array(key.prefix(32)) : Array(key.suffix(32)) }
    private func hmacKey(_ key: [UInt8]) -> [UInt8] { Array(key.prefix(32)) }

    public func encrypt(key: [UInt8], _ plaintext: [UInt8], iv: [UInt8]? = nil) throws -> [UInt8] {
        if version == 1 {
            return try Crypto.aes256CBCEncrypt(key: aesKey(key), iv: [UInt8](repeating: 0, count: 16), plaintext)
        }
        let iv = iv ?? Crypto.random(16)
        return iv + (try Crypto.aes256CBCEncrypt(key: aesKey(key), iv: iv, plaintext))
    }

    public func decrypt(key: [UInt8], _ ciphertext: [UInt8]) throws -> [UInt8] {
        if version == 1 {
            guard ciphertext.count % 16 == 0 else {
                throw FIDOSessionError.malformed(Malformation(.ciphertext, .length(ciphertext.count)))
            }
            return try Crypto.aes256CBCDecrypt(key: aesKey(key), iv: [UInt8](repeating: 0, count: 16), ciphertext)
        }
        guard ciphertext.count >= 16, ciphertext.count % 16 == 0 else {
            throw FIDOSessionError.malformed(Malformation(.ciphertext, .length(ciphertext.count)))
        }
        return try Crypto.aes256CBCDecrypt(
            key: aesKey(key), iv: Array(ciphertext.prefix(16)),
            Array(ciphertext.dropFirst(16)))
    }

    /// HMAC-SHA-256, truncated to 16 bytes for protocol 1.
    public func authenticate(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        let mac = Crypto.hmac(.sha256, key: hmacKey(key), data: message)
        return version == 1 ? Array(mac.prefix(16)) : mac
    }

    /// HMAC-SHA-256 with a PIN/UV auth token (or shared secret) kept in its own buffer.
    public func authenticate(key: SecretBytes, _ message: [UInt8]) -> [UInt8] {
        let mac = Crypto.hmac(.sha256, key: key.prefix(32), data: message)
        return version == 1 ? Array(mac.prefix(16)) : mac
    }

    /// Whether `signature` authenticates `message` (constant time).
    public func verify(key: [UInt8], _ message: [UInt8], signature: [UInt8]) -> Bool {
        Crypto.constantTimeEqual(authenticate(key: key, message), signature)
    }

    /// The PIN as setPIN/changePIN send it: UTF-8, zero-padded to 64 bytes.
    public static func paddedPIN(_ pin: String) -> [UInt8] {
        let b = Array(pin.utf8)
        return b + [UInt8](repeating: 0, count: max(64 - b.count, 0))
    }

    /// LEFT(SHA-256(PIN), 16).
    public static func pinHash(_ pin: String) -> [UInt8] {
        Array(Crypto.digest(.sha256, Array(pin.utf8)).prefix(16))
    }
}
