/// Checks what a key returns.
public enum FIDOVerifier {
    /// Packed attestation: with x5c, the signature over authData || clientDataHash verifies with the
    /// certificate's key; without, with the credential's own key (self attestation). "none" has nothing to check.
    public static func verifyAttestation(_ credential: AttestedCredential, clientDataHash: [UInt8]) throws {
        let message = credential.authData.raw + clientDataHash
        switch credential.format {
        case "none":
            return
        case "packed":
            guard let sig = credential.attestationStatement["sig"]?.bytes,
                let alg = credential.attestationStatement["alg"]?.int,
                alg == COSE.Algorithm.es256 || alg == COSE.Algorithm.edDSA
            else {
                throw FIDOSessionError.signatureInvalid(.attestationAlgorithm)
            }
            if let chain = credential.attestationStatement["x5c"]?.array, let first = chain.first?.bytes {
                let cert = try X509Certificate(der: first)
                guard let key = cert.publicKey, key.verify(signature: sig, message: message) else {
                    throw FIDOSessionError.signatureInvalid(.attestation)
                }
            } else {
                guard let cose = credential.authData.credentialPublicKey,
                    try verify(signature: sig, message: message, coseKey: cose)
                else {
                    throw FIDOSessionError.signatureInvalid(.selfAttestation)
                }
            }
        default:
            throw FIDOSessionError.notSupported(.attestationFormat(credential.format))
        }
    }

    /// Verifies a signature with a COSE public key: ES256 (-7) or EdDSA/Ed25519 (-8).
    public static func verify(signature: [UInt8], message: [UInt8], coseKey: CBOR) throws -> Bool {
        switch coseKey[COSE.Key.algorithm]?.int {
        case COSE.Algorithm.es256:
            guard let x = coseKey[COSE.Key.x]?.bytes, let y = coseKey[COSE.Key.y]?.bytes else {
                throw FIDOSessionError.malformed(Malformation(.credentialKey, .incomplete))
            }
            return try P256PublicKey(x: x, y: y).verify(signature: signature, message: message)
        case COSE.Algorithm.edDSA:
            guard coseKey[COSE.Key.keyType]?.int == COSE.keyTypeOKP, coseKey[COSE.Key.curve]?.int == COSE.curveEd25519,
                let x = coseKey[COSE.Key.x]?.bytes
            else {
                throw FIDOSessionError.malformed(Malformation(.credentialKey, .wrongKeyType))
            }
            return try Ed25519PublicKey(raw: x).verify(signature: signature, message: message)
        default:
            throw FIDOSessionError.notSupported(.signatureAlgorithm(coseKey[COSE.Key.algorithm]?.int))
        }
    }

    /// Checks an assertion against the credential's COSE public key (ES256 or EdDSA).
    public static func verifyAssertion(
        _ assertion: Assertion, coseKey: CBOR, clientDataHash: [UInt8],
        rpID: String
    ) throws {
        try verifyAssertion(assertion, clientDataHash: clientDataHash, rpID: rpID) { signature, message in
            try verify(signature: signature, message: message, coseKey: coseKey)
        }
    }

    public static func verifyAssertion(
        _ assertion: Assertion, publicKey: P256PublicKey, clientDataHash: [UInt8],
        rpID: String
    ) throws {
        try verifyAssertion(assertion, clientDataHash: clientDataHash, rpID: rpID) { signature, message in
            publicKey.verify(signature: signature, message: message)
        }
    }

    /// Checks that an assertion is for `rpID`, and with `verifies` that its signature over authData ||
    /// clientDataHash holds.
    private static func verifyAssertion(
        _ assertion: Assertion, clientDataHash: [UInt8], rpID: String,
        verifies: (_ signature: [UInt8], _ message: [UInt8]) throws -> Bool
    ) throws {
        guard assertion.authData.rpIDHash == Crypto.digest(.sha256, Array(rpID.utf8)) else {
            throw FIDOSessionError.signatureInvalid(.assertionRelyingParty)
        }
        guard try verifies(assertion.signature, assertion.authData.raw + clientDataHash) else {
            throw FIDOSessionError.signatureInvalid(.assertion)
        }
    }
}
