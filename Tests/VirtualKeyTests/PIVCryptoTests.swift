import KeyKit
import Testing

/// KeyKit's keys and certificate issuer that the virtual key's PIV application stands on.
@Suite struct PIVCryptoTests {
    @Test func rsaSignaturesWithBothPaddings() throws {
        let key = try AsymmetricPrivateKey.generate(.rsa(bits: 1024))
        #expect(key.type == .rsa(bits: 1024) && key.publicKey.rsaModulus?.count == 128)
        let message = Array("padding".utf8)
        let pkcs1 = try key.sign(message, digest: .sha256)
        let pss = try key.sign(message, digest: .sha384, padding: .pss)
        #expect(key.publicKey.verify(signature: pkcs1, message: message, digest: .sha256, padding: .pkcs1))
        #expect(key.publicKey.verify(signature: pss, message: message, digest: .sha384, padding: .pss))
        #expect(!key.publicKey.verify(signature: pss, message: message, digest: .sha384, padding: .pkcs1))
        #expect(!key.publicKey.verify(signature: pkcs1, message: message, digest: .sha512, padding: .pkcs1))
        // The raw private operation on the PKCS #1 v1.5 block is the same signature (it is deterministic).
        let digestInfo =
            [
                0x30, 0x31, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01,
                0x05, 0x00, 0x04, 0x20,
            ] + SignatureDigest.sha256.hash(message)
        let block = [0x00, 0x01] + [UInt8](repeating: 0xFF, count: 128 - 3 - digestInfo.count) + [0x00] + digestInfo
        #expect(try key.rsaPrivateOperation(block) == pkcs1)
        #expect(throws: CryptoError.self) { try key.rsaPrivateOperation([0x01]) }
        // The key survives its PKCS#8 form, and the public key its SubjectPublicKeyInfo.
        #expect(try AsymmetricPrivateKey(pkcs8: key.pkcs8) == key)
        #expect(try AsymmetricPublicKey(spki: key.publicKey.spki) == key.publicKey)
        let rebuilt = try AsymmetricPublicKey(
            rsaModulus: try #require(key.publicKey.rsaModulus),
            exponent: try #require(key.publicKey.rsaExponent))
        #expect(rebuilt == key.publicKey)
    }

    @Test func ecAndEdwardsSignatures() throws {
        for type in [AsymmetricKeyType.p256, .p384, .ed25519] {
            let key = try AsymmetricPrivateKey.generate(type)
            let message = Array("\(type)".utf8)
            let signature = try key.sign(message, digest: .sha512)
            #expect(key.publicKey.verify(signature: signature, message: message, digest: .sha512))
            #expect(!key.publicKey.verify(signature: signature, message: message + [0], digest: .sha512))
        }
        let point = try #require(try AsymmetricPrivateKey.generate(.p384).publicKey.ecPoint)
        #expect(point.count == 97 && point[0] == 0x04)
        #expect(throws: CryptoError.self) { try AsymmetricPrivateKey.generate(.x25519).sign([1]) }
        let zero = [UInt8](repeating: 0, count: 32)
        #expect(throws: CryptoError.self) { try AsymmetricPrivateKey.ec(.p256, scalar: zero) }
    }

    @Test func certificatesForAnyKeyByAnySigner() throws {
        let root = try AsymmetricPrivateKey.generate(.ed25519)
        let rootCertificate = try CertificateIssuer.issue(
            subject: [.init("O", "ykterm"), .init("CN", "Test Root")], publicKey: root.publicKey, serial: [0x01],
            validity: .interval(notBefore: 1_700_000_000, notAfter: 1_900_000_000), signingKey: root,
            extensions: [.basicConstraints(ca: true)])
        #expect(rootCertificate.subject == "O=ykterm, CN=Test Root")
        #expect(rootCertificate.isSigned(by: root.publicKey))
        // An X25519 key cannot sign, but can be certified; the issuer's name and validity carry over.
        let leaf = try AsymmetricPrivateKey.generate(.x25519)
        let leafCertificate = try CertificateIssuer.issue(
            subject: [.init("CN", "Leaf")], publicKey: leaf.publicKey, serial: [0x80, 0x01], validity: .sameAsIssuer,
            signingKey: root, issuer: rootCertificate,
            extensions: [.init(oid: "1.3.6.1.4.1.41482.3.3", value: [5, 7, 2])])
        #expect(leafCertificate.issuer == "O=ykterm, CN=Test Root")
        #expect(leafCertificate.asymmetricPublicKey == leaf.publicKey)
        #expect(leafCertificate.isSigned(by: root.publicKey))
        #expect(!leafCertificate.isSigned(by: leaf.publicKey))
        #expect(throws: CertificateIssuer.IssueError.keyCannotSign(.x25519)) {
            try CertificateIssuer.issue(
                subject: [.init("CN", "x")], publicKey: leaf.publicKey, serial: [1],
                validity: .days(1), signingKey: leaf)
        }
        #expect(throws: CertificateIssuer.IssueError.noIssuer) {
            try CertificateIssuer.issue(
                subject: [.init("CN", "x")], publicKey: leaf.publicKey, serial: [1],
                validity: .sameAsIssuer, signingKey: root)
        }
    }

    @Test func privateKeysDoNotPrintThemselves() throws {
        let key = try AsymmetricPrivateKey.generate(.p256)
        let printed = "\(key)" + String(reflecting: key) + "\(Mirror(reflecting: key).children.map(\.value))"
        #expect(!printed.contains(key.pkcs8.hex))
        #expect(printed.contains("ECCP256"))
    }
}
