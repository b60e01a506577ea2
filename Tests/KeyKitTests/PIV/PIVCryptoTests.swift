import Testing
@testable import KeyKit

private func h(_ hex: String) -> [UInt8] { try! Hex.decode(hex) }

/// RSA encodings made on the host, public keys as PIV carries them, PEM, and published signature vectors.
@Suite struct PIVCryptoTests {
    /// RFC 8017 9.2, note 1: the DER of DigestInfo before the digest.
    @Test(arguments: [
        (SignatureDigest.sha1, "3021300906052b0e03021a05000414"),
        (.sha256, "3031300d060960864801650304020105000420"),
        (.sha384, "3041300d060960864801650304020205000430"),
        (.sha512, "3051300d060960864801650304020305000440"),
    ])
    func digestInfoPrefixes(digest: SignatureDigest, prefix: String) throws {
        let value = [UInt8](repeating: 0xAB, count: digest.length)
        #expect(try RSAPadding.digestInfo(value, algorithm: digest) == h(prefix) + value)
    }

    /// The encoding, put through the key's raw private operation, is the signature `openssl dgst -sign` made.
    @Test(arguments: [
        (SignatureDigest.sha256, PIVFixtures.rsaSignatureSHA256),
        (.sha384, PIVFixtures.rsaSignatureSHA384),
        (.sha512, PIVFixtures.rsaSignatureSHA512),
    ])
    func pkcs1MatchesOpenSSL(digest: SignatureDigest, expected: [UInt8]) throws {
        let key = try AsymmetricPrivateKey(pkcs8: PIVFixtures.rsaPrivateKey)
        let block = try RSAPadding.pkcs1v15(message: PIVFixtures.rsaSignedMessage, digest: digest, modulusBits: 2048)
        #expect(block.count == 256)
        #expect(Array(block.prefix(2)) == [0x00, 0x01])
        let info = try RSAPadding.digestInfo(digest.hash(PIVFixtures.rsaSignedMessage), algorithm: digest)
        #expect(Array(block.suffix(info.count + 1)) == [0x00] + info)
        #expect(block.dropFirst(2).dropLast(info.count + 1).allSatisfy { $0 == 0xFF })
        #expect(try key.rsaPrivateOperation(block) == expected)
    }

    @Test(arguments: [SignatureDigest.sha256, .sha384, .sha512])
    func pssVerifies(digest: SignatureDigest) throws {
        let key = try AsymmetricPrivateKey(pkcs8: PIVFixtures.rsaPrivateKey)
        let message = PIVFixtures.rsaSignedMessage
        for salt in [RSAPadding.SaltLength.digestLength, .maximum, .bytes(0), .bytes(20)] {
            let block = try RSAPadding.pss(message: message, digest: digest, modulusBits: 2048, saltLength: salt)
            #expect(block.count == 256)
            #expect(block.last == 0xBC)
            let signature = try key.rsaPrivateOperation(block)
            #expect(key.publicKey.verify(signature: signature, message: message, digest: digest, padding: .pss))
            #expect(!key.publicKey.verify(signature: signature, message: message + [0], digest: digest, padding: .pss))
            #expect(!key.publicKey.verify(signature: signature, message: message, digest: digest, padding: .pkcs1))
        }
        // Random salts: two encodings of one message differ.
        let a = try RSAPadding.pss(message: message, digest: digest, modulusBits: 2048)
        let b = try RSAPadding.pss(message: message, digest: digest, modulusBits: 2048)
        #expect(a != b)
    }

    @Test func paddingRefusesWhatCannotFit() {
        #expect(throws: RSAPadding.Error.digestLength(expected: 32, actual: 3)) {
            try RSAPadding.pkcs1v15(digest: [1, 2, 3], algorithm: .sha256, modulusBits: 2048)
        }
        #expect(throws: RSAPadding.Error.unsupportedModulus(bits: 256)) {
            try RSAPadding.pss(message: [], digest: .sha256, modulusBits: 256)
        }
        // 512 bits: 64 bytes, too few for SHA-512's digest, its salt and two more bytes.
        #expect(throws: RSAPadding.Error.modulusTooShort(bits: 512)) {
            try RSAPadding.pss(message: [], digest: .sha512, modulusBits: 512)
        }
        #expect(throws: RSAPadding.Error.modulusTooShort(bits: 512)) {
            try RSAPadding.pkcs1v15(message: [], digest: .sha512, modulusBits: 512)
        }
        #expect(throws: RSAPadding.Error.saltLength(300)) {
            try RSAPadding.pss(message: [], digest: .sha256, modulusBits: 2048, saltLength: .bytes(300))
        }
    }

    /// RFC 8032 7.1, tests 1 to 3: Ed25519 signatures that verify with their public keys, and fail when changed.
    @Test(arguments: [
        (
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        ),
        (
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
        ),
        (
            "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"
        ),
    ])
    func rfc8032(publicKey: String, message: String, signature: String) throws {
        let key = try AsymmetricPublicKey(pivEncoding: TLV(PIV.Tag.ecPoint, h(publicKey)).encoded, algorithm: .ed25519)
        #expect(key.type == .ed25519)
        #expect(key.verify(signature: h(signature), message: h(message)))
        var wrong = h(signature)
        wrong[0] ^= 1
        #expect(!key.verify(signature: wrong, message: h(message)))
        #expect(!key.verify(signature: h(signature), message: h(message) + [0]))
    }

    // MARK: Public keys as PIV carries them

    @Test func pivEncodingRoundTrips() throws {
        for type in [AsymmetricKeyType.rsa(bits: 1024), .p256, .p384, .ed25519, .x25519] {
            let key = try AsymmetricPrivateKey.generate(type).publicKey
            let algorithm = try #require(key.pivAlgorithm)
            #expect(AsymmetricKeyType(piv: algorithm) == type)
            let again = try AsymmetricPublicKey(pivEncoding: key.pivEncoding, algorithm: algorithm)
            #expect(again == key)
        }
    }

    @Test func pivEncodingOfTheFixedCertificatesKey() throws {
        let certificate = try X509Certificate(der: PIVFixtures.ecCertificate)
        let key = try AsymmetricPublicKey(spki: try #require(certificate.subjectPublicKeyInfo))
        // 86 41 04 x y: the point as the certificate has it.
        #expect(
            key.pivEncoding == [0x86, 0x41]
                + h(
                    "0441b01b0b0dc9e50276bd93fe830a344272c9e2a7b4c925ae1022d737af0fd45b"
                        + "e8c4339b0e0140dfd382812599025" + "1a9a413a4f59ec260a630d45dc8418bd0d8"))
        #expect(key.pivAlgorithm == .eccP256)
    }

    @Test func malformedPIVEncodings() throws {
        let p256 = try AsymmetricPrivateKey.generate(.p256).publicKey
        #expect(throws: PIVError.malformed(.missingTag(0x86))) {
            try AsymmetricPublicKey(pivEncoding: [], algorithm: .eccP256)
        }
        #expect(throws: PIVError.malformed(.tlv(.truncatedValue(offset: 2, needed: 65, available: 1)))) {
            try AsymmetricPublicKey(pivEncoding: [0x86, 0x41, 0x04], algorithm: .eccP256)
        }
        // A P-256 point given as P-384, a point off the curve, an RSA key of another size.
        #expect(throws: PIVError.malformed(.fieldLength(tag: 0x86, length: 65))) {
            try AsymmetricPublicKey(pivEncoding: p256.pivEncoding, algorithm: .eccP384)
        }
        var off = try #require(p256.ecPoint)
        off[64] ^= 1
        #expect(throws: PIVError.malformed(.publicKey(.eccP256))) {
            try AsymmetricPublicKey(pivEncoding: TLV(0x86, off).encoded, algorithm: .eccP256)
        }
        let rsa = try AsymmetricPrivateKey(pkcs8: PIVFixtures.rsaPrivateKey).publicKey
        #expect(throws: PIVError.malformed(.publicKey(.rsa1024))) {
            try AsymmetricPublicKey(pivEncoding: rsa.pivEncoding, algorithm: .rsa1024)
        }
        #expect(throws: PIVError.notASlotKeyAlgorithm(.aes192)) {
            try AsymmetricPublicKey(pivEncoding: [], algorithm: .aes192)
        }
    }

    @Test func pem() throws {
        let certificate = try X509Certificate(der: PIVFixtures.rsaCertificate)
        let key = try AsymmetricPublicKey(spki: try #require(certificate.subjectPublicKeyInfo))
        let text = key.pem
        #expect(text.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        #expect(text.hasSuffix("\n-----END PUBLIC KEY-----\n"))
        #expect(text.split(separator: "\n").dropFirst().dropLast().allSatisfy { $0.count <= 64 })
        #expect(PEM.decode(text, label: PEM.publicKey) == [key.spki])
        // A certificate PEM with text around it, as openssl x509 -text writes it.
        let dump = "Certificate:\n    Data: ...\n" + certificate.pem + "trailing\n"
        #expect(try X509Certificate(derOrPEM: Array(dump.utf8)).der == certificate.der)
        #expect(try X509Certificate(derOrPEM: certificate.der).der == certificate.der)
        #expect(PEM.decode("-----BEGIN CERTIFICATE-----\nAAAA\n", label: PEM.certificate) == nil)
        #expect(PEM.decode("-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----", label: PEM.certificate) == nil)
    }
}
