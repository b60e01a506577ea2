@testable import KeyKit
import Testing
import VirtualKey

/// KeyKit's PIVSession against the virtual key's PIV application, in process: the two were written from the
/// specification separately, so each checks the other.
@Suite struct PIVSessionOnVirtualKeyTests {
    static let pin = SecretBytes(utf8: "123456")
    static let puk = SecretBytes(utf8: "12345678")
    static let managementKey = SecretBytes(PIV.defaultManagementKey)

    static func session(version: Version = Version(5, 7, 2), demo: Bool = false) async throws -> PIVSession {
        var state = VirtualKeyState.yubiKey5NFC(version: version)
        if demo { state.piv.installDemo() }
        return try await PIVSession.make(connection: VirtualKeyConnection(key: VirtualKey(state: state, touchDelay: 0)))
    }

    /// A certificate for `key` (on the device) issued by a CA made here.
    static func certificate(for key: AsymmetricPublicKey, name: String) throws -> X509Certificate {
        let ca = try AsymmetricPrivateKey.generate(.p256)
        return try CertificateIssuer.issue(
            subject: [.init("CN", name)], publicKey: key, serial: [0x2A],
            validity: .days(30), signingKey: ca)
    }

    /// The default management key is 3DES before 5.7 and AES-192 from 5.7; metadata says which, and
    /// authentication with it works.
    @Test(arguments: [(Version(5, 4, 3), PIV.Algorithm.tripleDES), (Version(5, 7, 2), .aes192)])
    func defaultManagementKey(version: Version, algorithm: PIV.Algorithm) async throws {
        let session = try await Self.session(version: version)
        #expect(session.defaultManagementKeyAlgorithm == algorithm)
        let metadata = try await session.managementKeyMetadata()
        #expect(metadata.algorithm == algorithm && metadata.isDefault)
        try await session.authenticate(managementKey: Self.managementKey)
        await #expect(throws: PIVError.managementKeyAuthenticationFailed) {
            try await session.authenticate(managementKey: SecretBytes(Crypto.random(24)))
        }
        #expect(try await session.serial() == 28_123_456)
    }

    @Test func pinPukAndReset() async throws {
        let session = try await Self.session()
        try await session.verifyPIN(Self.pin)
        #expect(try await session.pinRetries() == 3)
        await #expect(throws: PIVError.wrongPIN(retriesLeft: 2)) {
            try await session.verifyPIN(SecretBytes(utf8: "000000"))
        }
        let newPIN = SecretBytes(utf8: "24681357")
        try await session.changePIN(old: Self.pin, new: newPIN)
        #expect(try await session.pinMetadata() == PIVPINMetadata(isDefault: false, totalRetries: 3, retriesLeft: 3))
        for left in [2, 1, 0] {
            await #expect(throws: PIVError.wrongPIN(retriesLeft: left)) { try await session.verifyPIN(Self.pin) }
        }
        await #expect(throws: PIVError.pinBlocked) { try await session.verifyPIN(newPIN) }
        try await session.unblockPIN(puk: Self.puk, newPIN: Self.pin)
        try await session.verifyPIN(Self.pin)
        let newPUK = SecretBytes(utf8: "87654321")
        try await session.changePUK(old: Self.puk, new: newPUK)
        await #expect(throws: PIVError.wrongPUK(retriesLeft: 2)) {
            try await session.changePUK(old: Self.puk, new: newPUK)
        }
        await #expect(throws: PIVError.resetConditionsNotMet) { try await session.reset() }
        try await session.blockPINAndPUK()
        try await session.reset()
        #expect(try await session.pinMetadata().isDefault)
        #expect(try await session.pukMetadata().isDefault)
        try await session.verifyPIN(Self.pin)
    }

    @Test func setPINRetries() async throws {
        let session = try await Self.session()
        await #expect(throws: PIVError.securityConditionNotSatisfied) {
            try await session.setPINRetries(pin: 5, puk: 6)
        }
        try await session.authenticate(managementKey: Self.managementKey)
        try await session.verifyPIN(Self.pin)
        try await session.setPINRetries(pin: 5, puk: 6)
        #expect(try await session.pinMetadata().totalRetries == 5)
        #expect(try await session.pukMetadata().totalRetries == 6)
    }

    @Test(arguments: [PIV.Algorithm.aes128, .aes256, .tripleDES])
    func changeManagementKey(algorithm: PIV.Algorithm) async throws {
        let session = try await Self.session()
        try await session.authenticate(managementKey: Self.managementKey)
        let key = SecretBytes(Crypto.random(algorithm.keyLength!))
        try await session.setManagementKey(key, algorithm: algorithm)
        #expect(try await session.managementKeyMetadata().algorithm == algorithm)
        try await session.authenticate(managementKey: key)
        await #expect(throws: (any Error).self) { try await session.authenticate(managementKey: Self.managementKey) }
    }

    /// Generate, certificate in and out, sign and verify with the key's public key, attest: P-256, P-384 and
    /// RSA 2048 with both paddings, Ed25519 (5.7).
    @Test(arguments: [PIV.Algorithm.eccP256, .eccP384, .rsa2048, .ed25519])
    func generateCertifySignAttest(algorithm: PIV.Algorithm) async throws {
        let session = try await Self.session()
        await #expect(throws: PIVError.securityConditionNotSatisfied) {
            _ = try await session.generateKey(in: .authentication, algorithm: algorithm)
        }
        try await session.authenticate(managementKey: Self.managementKey)
        let key = try await session.generateKey(in: .authentication, algorithm: algorithm)
        #expect(key.pivAlgorithm == algorithm)
        let metadata = try await session.slotMetadata(.authentication)
        #expect(metadata.publicKey == key && metadata.origin == .generated && metadata.algorithm == algorithm)

        let certificate = try Self.certificate(for: key, name: "ykterm \(algorithm)")
        try await session.putCertificate(certificate, in: .authentication)
        let read = try #require(try await session.certificate(in: .authentication))
        #expect(read.sha256FingerprintText == certificate.sha256FingerprintText)
        #expect(try AsymmetricPublicKey(spki: try #require(read.subjectPublicKeyInfo)) == key)

        let message = Array("the PC/SC demo: sign, then verify".utf8)
        await #expect(throws: PIVError.securityConditionNotSatisfied) {
            _ = try await session.sign(message, in: .authentication)
        }
        try await session.verifyPIN(Self.pin)
        var schemes = [PIVSignatureScheme(digest: .sha256), PIVSignatureScheme(digest: .sha384)]
        if algorithm.rsaModulusLength != nil {
            schemes += [
                PIVSignatureScheme(digest: .sha256, padding: .pss), PIVSignatureScheme(digest: .sha512, padding: .pss),
            ]
        }
        for scheme in schemes {
            let signature = try await session.sign(message, in: .authentication, scheme: scheme)
            #expect(key.verify(signature: signature, message: message, digest: scheme.digest, padding: scheme.padding))
            #expect(
                !key.verify(
                    signature: signature, message: message + [1], digest: scheme.digest, padding: scheme.padding))
        }

        let attestation = try await session.attest(.authentication, expected: key)
        #expect(attestation.publicKey == key)
        #expect(attestation.certificate.isIssued(by: attestation.attestationCertificate))
    }

    @Test func compressedCertificateAndDeletion() async throws {
        let session = try await Self.session()
        try await session.authenticate(managementKey: Self.managementKey)
        let key = try await session.generateKey(in: .signature, algorithm: .eccP256)
        let certificate = try Self.certificate(for: key, name: "compressed")
        try await session.putCertificate(certificate, in: .signature, compress: true)
        #expect(try await session.certificate(in: .signature)?.der == certificate.der)
        try await session.deleteCertificate(in: .signature)
        #expect(try await session.certificate(in: .signature) == nil)
    }

    @Test func importedKeysSign() async throws {
        let session = try await Self.session()
        try await session.authenticate(managementKey: Self.managementKey)
        try await session.verifyPIN(Self.pin)
        for (type, slot) in [
            (AsymmetricKeyType.rsa(bits: 2048), PIV.Slot.keyManagement), (.p384, .cardAuthentication),
            (.ed25519, PIV.Slot(rawValue: 0x82)),
        ] {
            let key = try AsymmetricPrivateKey.generate(type)
            #expect(try await session.importKey(key, in: slot, pinPolicy: .once) == type.pivAlgorithm)
            let metadata = try await session.slotMetadata(slot)
            #expect(metadata.origin == .imported && metadata.publicKey == key.publicKey && metadata.pinPolicy == .once)
            let signature = try await session.sign([1, 2, 3], in: slot)
            #expect(key.publicKey.verify(signature: signature, message: [1, 2, 3]))
            // Imported keys are not attested.
            await #expect(throws: PIVError.self) { _ = try await session.attest(slot) }
        }
    }

    @Test(arguments: [AsymmetricKeyType.p256, .p384, .x25519])
    func keyAgreement(type: AsymmetricKeyType) async throws {
        let session = try await Self.session()
        try await session.authenticate(managementKey: Self.managementKey)
        let mine = try await session.generateKey(in: .keyManagement, algorithm: type.pivAlgorithm!)
        try await session.verifyPIN(Self.pin)
        let peer = try AsymmetricPrivateKey.generate(type)
        let secret = try await session.sharedSecret(in: .keyManagement, peer: peer.publicKey)
        #expect(secret == (try peer.sharedSecret(peer: type == .x25519 ? mine.raw! : mine.ecPoint!)))
    }

    @Test func demoSlotAndMoveAndDelete() async throws {
        let session = try await Self.session(demo: true)
        let certificate = try #require(try await session.certificate(in: .authentication))
        #expect(certificate.subject == "CN=ykterm demo")
        #expect(try await session.keyAlgorithm(in: .authentication) == .eccP256)
        try await session.verifyPIN(Self.pin)
        let signature = try await session.sign([7], in: .authentication)
        let key = try AsymmetricPublicKey(spki: try #require(certificate.subjectPublicKeyInfo))
        #expect(key.verify(signature: signature, message: [7]))
        try await session.authenticate(managementKey: Self.managementKey)
        try await session.moveKey(from: .authentication, to: PIV.Slot(rawValue: 0x95))
        await #expect(throws: PIVError.noKeyInSlot(.authentication)) {
            _ = try await session.slotMetadata(.authentication)
        }
        #expect(try await session.slotMetadata(PIV.Slot(rawValue: 0x95)).publicKey == key)
        try await session.deleteKey(in: PIV.Slot(rawValue: 0x95))
        await #expect(throws: PIVError.noKeyInSlot(PIV.Slot(rawValue: 0x95))) {
            _ = try await session.slotMetadata(PIV.Slot(rawValue: 0x95))
        }
    }

    @Test func chuidAndCCC() async throws {
        let session = try await Self.session()
        try await session.authenticate(managementKey: Self.managementKey)
        let chuid = PIVSession.newCHUID()
        try await session.putCHUID(chuid)
        #expect(try await session.chuid() == chuid)
        let ccc = PIVSession.newCardCapabilityContainer()
        try await session.putCardCapabilityContainer(ccc)
        #expect(try await session.cardCapabilityContainer() == ccc)
    }
}
