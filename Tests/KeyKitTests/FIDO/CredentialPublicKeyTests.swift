import Testing

@testable import KeyKit

/// Credential public keys as COSE_Keys: ES256 (EC2, P-256) and EdDSA (OKP, Ed25519) read, written and used to
/// verify, and what is refused; authenticator data and packed self attestation with an EdDSA credential.
@Suite struct CredentialPublicKeyTests {
    /// RFC 8032 section 7.1, test 2: the key, its one-byte message and the signature.
    static let rfcKey = try! Hex.decode("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
    static let rfcMessage: [UInt8] = [0x72]
    static let rfcSignature = try! Hex.decode(
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
    )

    @Test func anOKPKeyIsReadWrittenAndVerifies() throws {
        let cose: CBOR = [1: 1, 3: -8, -1: 6, -2: .bytes(Self.rfcKey)]
        let key = try CredentialPublicKey(cose: cose)
        #expect(key == .edDSA(try Ed25519PublicKey(raw: Self.rfcKey)))
        #expect(key.algorithm == COSE.Algorithm.edDSA)
        #expect(key.cose == cose)
        #expect(COSE.okpKey(try Ed25519PublicKey(raw: Self.rfcKey)) == cose)
        #expect(key.verify(signature: Self.rfcSignature, message: Self.rfcMessage))
        #expect(!key.verify(signature: Self.rfcSignature, message: [0x73]))
        #expect(try FIDOVerifier.verify(signature: Self.rfcSignature, message: Self.rfcMessage, coseKey: cose))
    }

    @Test func anEC2KeyIsReadWrittenAndVerifies() throws {
        let p = P256PrivateKey()
        let cose = COSE.ec2Key(p.publicKey, algorithm: COSE.Algorithm.es256)
        let key = try CredentialPublicKey(cose: cose)
        #expect(key == .es256(p.publicKey) && key.algorithm == -7 && key.cose == cose)
        #expect(key.verify(signature: p.sign([1, 2]), message: [1, 2]))
        #expect(!key.verify(signature: p.sign([1, 2]), message: [1]))
    }

    @Test func keysOfTheWrongShapeAreRefused() {
        let x = CBOR.bytes(Self.rfcKey)
        func problem(_ cose: CBOR) -> (any Error)? {
            do {
                _ = try CredentialPublicKey(cose: cose)
                return nil
            } catch {
                return error
            }
        }
        let wrongType = FIDOSessionError.malformed(Malformation(.credentialKey, .wrongKeyType))
        #expect(problem([1: 2, 3: -8, -1: 6, -2: x]) as? FIDOSessionError == wrongType)  // EC2, not OKP
        #expect(problem([1: 1, 3: -8, -1: 4, -2: x]) as? FIDOSessionError == wrongType)  // X448's curve number
        #expect(problem([1: 1, 3: -8, -1: 6]) as? FIDOSessionError == wrongType)  // no x
        #expect(problem([1: 1, 3: -8, -1: 6, -2: .bytes(Array(Self.rfcKey.prefix(31)))]) is CryptoError)
        #expect(
            problem([1: 2, 3: -7, -1: 1, -2: x]) as? FIDOSessionError
                == .malformed(Malformation(.credentialKey, .incomplete)))
        let p = P256PrivateKey().publicKey
        #expect(problem([1: 1, 3: -7, -1: 1, -2: .bytes(p.x), -3: .bytes(p.y)]) as? FIDOSessionError == wrongType)
        #expect(problem([1: 3, 3: -257]) as? FIDOSessionError == .notSupported(.signatureAlgorithm(-257)))
        #expect(problem([1: 1]) as? FIDOSessionError == .notSupported(.signatureAlgorithm(nil)))
    }

    /// Authenticator data with an EdDSA credential, and its packed self attestation: signed with the credential's
    /// key under its algorithm, and refused under another algorithm number.
    @Test func authenticatorDataAndSelfAttestationWithAnEdDSACredential() throws {
        let seed = Crypto.random(32)
        let privateKey = try AsymmetricPrivateKey.raw(seed, type: .ed25519)
        let publicKey = try Ed25519PublicKey(raw: try #require(privateKey.publicKey.raw))
        let credentialID = Crypto.random(16)
        var raw = Crypto.digest(.sha256, Array("example.com".utf8)) + [0x41, 0, 0, 0, 9]
        raw += [UInt8](repeating: 0xAA, count: 16) + [0, UInt8(credentialID.count)] + credentialID
        raw += COSE.okpKey(publicKey).encoded
        let authData = try AuthenticatorData(raw)
        #expect(authData.publicKey == .edDSA(publicKey))
        #expect(authData.es256PublicKey == nil)

        let cdh = Crypto.random(32)
        let signature = try privateKey.ed25519Sign(raw + cdh)
        let made = AttestedCredential(
            format: "packed", authData: authData, attestationStatement: ["alg": -8, "sig": .bytes(signature)])
        try FIDOVerifier.verifyAttestation(made, clientDataHash: cdh)
        var claimingES256 = made
        claimingES256.attestationStatement = ["alg": -7, "sig": .bytes(signature)]
        #expect(throws: FIDOSessionError.signatureInvalid(.selfAttestation)) {
            try FIDOVerifier.verifyAttestation(claimingES256, clientDataHash: cdh)
        }
        #expect(throws: FIDOSessionError.signatureInvalid(.selfAttestation)) {
            try FIDOVerifier.verifyAttestation(made, clientDataHash: Crypto.random(32))
        }
    }

    @Test func credentialParametersListTheAlgorithm() {
        #expect(CTAP2.edDSAParameters == ["alg": -8, "type": "public-key"])
        #expect(CTAP2.es256Parameters == ["alg": -7, "type": "public-key"])
    }
}
