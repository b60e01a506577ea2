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
                // Self attestation signs with the credential's own key, so with its algorithm.
                guard let cose = credential.authData.credentialPublicKey else {
                    throw FIDOSessionError.signatureInvalid(.selfAttestation)
                }
                let key = try CredentialPublicKey(cose: cose)
                guard key.algorithm == alg, key.verify(signature: sig, message: message) else {
                    throw FIDOSessionError.signatureInvalid(.selfAttestation)
                }
            }
        default:
            throw FIDOSessionError.notSupported(.attestationFormat(credential.format))
        }
    }

    /// Verifies a signature with a COSE public key: ES256 (-7) or EdDSA/Ed25519 (-8) (`CredentialPublicKey`).
    public static func verify(signature: [UInt8], message: [UInt8], coseKey: CBOR) throws -> Bool {
        try CredentialPublicKey(cose: coseKey).verify(signature: signature, message: message)
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
