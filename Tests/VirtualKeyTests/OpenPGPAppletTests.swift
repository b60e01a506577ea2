import Foundation
import KeyKit
import Testing
import VirtualKey

/// KeyKit's OpenPGPSession against the virtual key's OpenPGP application, in process, and the applet's private
/// key operations driven with APDUs as GnuPG sends them.
@Suite struct OpenPGPAppletTests {
    static let pin = SecretBytes(utf8: "123456")
    static let adminPIN = SecretBytes(utf8: "12345678")

    static func key() -> VirtualKey { VirtualKey(state: .yubiKey5NFC(), touchDelay: 0) }

    static func session(_ key: VirtualKey) async throws -> OpenPGPSession {
        try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
    }

    @Test func factoryState() async throws {
        let session = try await Self.session(Self.key())
        #expect(session.version == Version(5, 7, 2))
        let data = try await session.applicationData()
        #expect(data.aid.serial == 28_123_456 && data.aid.manufacturer == 6 && data.aid.versionText == "3.4")
        #expect(data.passwordStatus.triesUser == 3 && data.passwordStatus.triesReset == 0)
        #expect(data.passwordStatus.triesAdmin == 3 && !data.passwordStatus.pinValidForSeveralSignatures)
        #expect(data.keys.count == 4)
        let userSlots = data.keys.filter { $0.slot != .attestation }
        #expect(userSlots.allSatisfy { !$0.hasKey && $0.touchPolicy == .off && $0.attributes == .rsa(bits: 2048) })
        // The attestation key and its certificate are there from the start, as a YubiKey leaves the factory.
        #expect(data.key(.attestation)?.status == .imported)
        let certificate = try X509Certificate(der: try await session.certificate(.attestation))
        #expect(certificate.subject.contains("OpenPGP Attestation"))
        #expect(try await session.signatureCounter() == 0)
        #expect(try await session.kdf().isEnabled == false)
        #expect(try await session.cardholder().name.isEmpty)
        #expect(try await session.url().isEmpty)
        await #expect(throws: OpenPGPError.noKey(.signature)) { _ = try await session.publicKey(.signature) }
    }

    @Test func passwords() async throws {
        let session = try await Self.session(Self.key())
        await #expect(throws: OpenPGPError.wrongPassword(.user, retriesLeft: 2)) {
            try await session.verifyPIN(SecretBytes(utf8: "654321"))
        }
        try await session.verifyPIN(Self.pin)
        #expect(try await session.passwordStatus().triesUser == 3)
        await #expect(throws: OpenPGPError.passwordLength(.user, count: 5, minimum: 6, maximum: 127)) {
            try await session.verifyPIN(SecretBytes(utf8: "12345"))
        }
        let newPIN = SecretBytes(utf8: "24681357")
        try await session.changePassword(.user, old: Self.pin, new: newPIN)
        try await session.verifyPIN(newPIN, extended: true)
        let newAdmin = SecretBytes(utf8: "a-new-admin-pin")
        try await session.changePassword(.admin, old: Self.adminPIN, new: newAdmin)
        await #expect(throws: OpenPGPError.wrongPassword(.admin, retriesLeft: 2)) {
            try await session.verifyAdminPIN(Self.adminPIN)
        }
        try await session.verifyAdminPIN(newAdmin)
        // No reset code yet: it is blocked.
        await #expect(throws: OpenPGPError.passwordBlocked(.reset)) {
            try await session.unblockPIN(newPIN: Self.pin, resetCode: SecretBytes(utf8: "87654321"))
        }
        let code = SecretBytes(utf8: "87654321")
        try await session.setResetCode(code)
        #expect(try await session.passwordStatus().triesReset == 3)
        for left in [2, 1, 0] {
            await #expect(
                throws: left == 0 ? OpenPGPError.passwordBlocked(.user) : .wrongPassword(.user, retriesLeft: left)
            ) {
                try await session.verifyPIN(Self.pin)
            }
        }
        await #expect(throws: OpenPGPError.passwordBlocked(.user)) { try await session.verifyPIN(newPIN) }
        try await session.unblockPIN(newPIN: Self.pin, resetCode: code)
        try await session.verifyPIN(Self.pin)
        // With the admin PIN instead of the reset code.
        try await session.verifyAdminPIN(newAdmin)
        try await session.unblockPIN(newPIN: newPIN)
        try await session.verifyPIN(newPIN)
    }

    @Test func retriesAndTouch() async throws {
        let session = try await Self.session(Self.key())
        await #expect(throws: OpenPGPError.securityConditionNotSatisfied) {
            try await session.setPINRetries(user: 5, reset: 6, admin: 7)
        }
        try await session.verifyAdminPIN(Self.adminPIN)
        try await session.setPINRetries(user: 5, reset: 6, admin: 7)
        let status = try await session.passwordStatus()
        #expect(status.triesUser == 5 && status.triesReset == 0 && status.triesAdmin == 7)
        try await session.setTouchPolicy(.authentication, .cached)
        #expect(try await session.touchPolicy(.authentication) == .cached)
        try await session.setTouchPolicy(.signature, .fixed)
        await #expect(throws: OpenPGPError.touchPolicyFixed(.signature)) {
            try await session.setTouchPolicy(.signature, .off)
        }
        let data = try await session.applicationData()
        #expect(data.key(.signature)?.touchPolicy == .fixed && data.key(.authentication)?.touchPolicy == .cached)
        try await session.setSignaturePINPolicy(severalSignatures: true)
        #expect(try await session.passwordStatus().pinValidForSeveralSignatures)
    }

    @Test func resetBringsTheFactoryStateBack() async throws {
        let key = Self.key()
        let session = try await Self.session(key)
        try await session.verifyAdminPIN(Self.adminPIN)
        try await session.changePassword(.user, old: Self.pin, new: SecretBytes(utf8: "99999999"))
        _ = try await session.generate(.signature, .ecc(.ed25519, slot: .signature))
        try await session.putData(OpenPGP.DO.name, Array("Doe<<Jane".utf8))
        let before = key.state.openpgp
        try await session.reset()
        let again = try await Self.session(key)
        let data = try await again.applicationData()
        #expect(data.passwordStatus.triesUser == 3 && data.passwordStatus.triesAdmin == 3)
        #expect(!data.keys.contains { $0.hasKey && $0.slot != .attestation })
        try await again.verifyPIN(Self.pin)
        #expect(try await again.cardholder().name.isEmpty)
        // Back to the factory state: the attestation key and certificate are the ones it had.
        let attestationCertificate = try await again.certificate(.attestation)
        var factory = OpenPGPState()
        factory.slots[.attestation] = before.slots[.attestation]
        factory.objects = before.objects.filter { $0.value == attestationCertificate }
        #expect(!attestationCertificate.isEmpty && factory.objects.count == 1)
        #expect(key.state.openpgp == factory)
    }

    /// A terminated application answers SELECT 6285; the session ACTIVATEs it.
    @Test func terminatedApplicationIsActivated() async throws {
        let key = Self.key()
        let session = try await Self.session(key)
        try await session.blockPasswords()
        let proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        _ = try await proto.select(AID.openpgp, name: "OpenPGP")
        #expect(try await proto.send(APDU(ins: OpenPGP.Ins.terminate)).status == .ok)
        #expect(try await proto.send(.select(aid: AID.openpgp)).status == .noInputData)
        let again = try await Self.session(key)
        #expect(try await again.passwordStatus().triesAdmin == 3)
    }

    @Test(arguments: [
        OpenPGPAlgorithmAttributes.rsa(bits: 2048), .ecc(.secp256r1, slot: .signature),
        .ecc(.ed25519, slot: .signature),
    ])
    func generateAndSign(attributes: OpenPGPAlgorithmAttributes) async throws {
        let key = Self.key()
        let session = try await Self.session(key)
        await #expect(throws: OpenPGPError.securityConditionNotSatisfied) {
            _ = try await session.generate(.signature, attributes)
        }
        try await session.verifyAdminPIN(Self.adminPIN)
        let made = try await session.generate(.signature, attributes)
        #expect(try await session.publicKey(.signature) == made)
        let publicKey = try #require(try made.asymmetricKey())
        let data = try await session.applicationData()
        #expect(data.key(.signature)?.status == .generated && data.key(.signature)?.attributes == attributes)
        // The host writes the fingerprint and the time.
        try await session.putData(OpenPGP.KeySlot.signature.fingerprintTag, [UInt8](repeating: 0xAB, count: 20))
        try await session.putData(OpenPGP.KeySlot.signature.generationTimeTag, [0x65, 0, 0, 0])
        let written = try #require(try await session.applicationData().key(.signature))
        #expect(written.fingerprint == [UInt8](repeating: 0xAB, count: 20) && written.generationTime == 0x6500_0000)

        // A signature as GnuPG asks for it: PW1 (81), then PSO:CDS with a DigestInfo, a digest or the message.
        let proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        _ = try await proto.select(AID.openpgp, name: "OpenPGP")
        let message = Array("signed by the card".utf8)
        let input: [UInt8]
        switch attributes {
        case .rsa: input = try RSAPadding.digestInfo(SignatureDigest.sha256.hash(message), algorithm: .sha256)
        case .ecc(_, .ed25519, _): input = message
        default: input = SignatureDigest.sha256.hash(message)
        }
        let cds = APDU(ins: OpenPGP.Ins.performSecurityOperation, p1: 0x9E, p2: 0x9A, data: input, le: 256)
        #expect(try await proto.send(cds).status == .securityConditionNotSatisfied)
        _ = try await proto.sendChecked(APDU(ins: OpenPGP.Ins.verify, p2: 0x81, data: OpenPGP.defaultUserPIN))
        let signature = try await proto.sendChecked(cds)
        switch attributes {
        case .ecc(_, .secp256r1, _):
            // r and s, 32 bytes each; verified as DER.
            #expect(signature.count == 64)
            let der = TLV(
                0x30,
                TLV(0x02, Self.integer(Array(signature.prefix(32)))).encoded
                    + TLV(0x02, Self.integer(Array(signature.suffix(32)))).encoded
            ).encoded
            #expect(publicKey.verify(signature: der, message: message, digest: .sha256))
        default:
            #expect(publicKey.verify(signature: signature, message: message, digest: .sha256))
        }
        // The PIN counts for one signature only.
        #expect(try await proto.send(cds).status == .securityConditionNotSatisfied)
        #expect(try await session.signatureCounter() == 1)
    }

    static func integer(_ bytes: [UInt8]) -> [UInt8] {
        let trimmed = Array(bytes.drop { $0 == 0 })
        return trimmed.first.map { $0 & 0x80 != 0 } == true ? [0] + trimmed : trimmed
    }

    @Test func decipherWithECDH() async throws {
        let key = Self.key()
        let session = try await Self.session(key)
        try await session.verifyAdminPIN(Self.adminPIN)
        let proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        for curve in [OpenPGP.Curve.x25519, .secp256r1] {
            // The other connection's SELECT below forgets the verification.
            try await session.verifyAdminPIN(Self.adminPIN)
            let made = try await session.generate(.decryption, .ecc(curve, slot: .decryption))
            let cardKey = try #require(try made.asymmetricKey())
            let mine = try AsymmetricPrivateKey.generate(try #require(curve.keyType))
            let myPoint = try #require(mine.publicKey.ecPoint ?? mine.publicKey.raw)
            let template = TLV(0xA6, TLV(0x7F49, TLV(0x86, myPoint).encoded).encoded).encoded
            _ = try await proto.select(AID.openpgp, name: "OpenPGP")
            _ = try await proto.sendChecked(APDU(ins: OpenPGP.Ins.verify, p2: 0x82, data: OpenPGP.defaultUserPIN))
            let shared = try await proto.sendChecked(
                APDU(ins: OpenPGP.Ins.performSecurityOperation, p1: 0x80, p2: 0x86, data: template, le: 256))
            let cardPoint = try #require(cardKey.ecPoint ?? cardKey.raw)
            #expect(shared == (try mine.sharedSecret(peer: cardPoint)))
        }
    }

    @Test func internalAuthenticateWithP384() async throws {
        let key = Self.key()
        let session = try await Self.session(key)
        try await session.verifyAdminPIN(Self.adminPIN)
        let made = try await session.generate(.authentication, .ecc(.secp384r1, slot: .authentication))
        let proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        _ = try await proto.select(AID.openpgp, name: "OpenPGP")
        _ = try await proto.sendChecked(APDU(ins: OpenPGP.Ins.verify, p2: 0x82, data: OpenPGP.defaultUserPIN))
        let digest = SignatureDigest.sha384.hash(Array("ssh".utf8))
        let signature = try await proto.sendChecked(
            APDU(ins: OpenPGP.Ins.internalAuthenticate, data: digest, le: 256))
        #expect(signature.count == 96)
        _ = made
    }

    /// The state survives its file: passwords, keys, objects.
    @Test func stateRoundTrip() async throws {
        let key = Self.key()
        let session = try await Self.session(key)
        try await session.verifyAdminPIN(Self.adminPIN)
        _ = try await session.generate(.authentication, .ecc(.ed25519, slot: .authentication))
        try await session.putData(OpenPGP.DO.url, Array("https://example.org/key.asc".utf8))
        try await session.setTouchPolicy(.decryption, .on)
        let encoded = try JSONEncoder().encode(key.state)
        let decoded = try JSONDecoder().decode(VirtualKeyState.self, from: encoded)
        #expect(decoded.openpgp == key.state.openpgp)
    }
}

/// Key import with the extended header list, as ykman and GnuPG send it.
@Suite struct OpenPGPImportTests {
    static func header(_ parts: [(UInt32, [UInt8])], crt: [UInt8]) -> [UInt8] {
        let list = parts.flatMap { [UInt8($0.0)] + TLV.lengthBytes($0.1.count) }
        let values = parts.flatMap(\.1)
        return TLV(0x4D, crt + TLV(0x7F48, list).encoded + TLV(0x5F48, values).encoded).encoded
    }

    @Test func ecFromItsScalar() async throws {
        let key = VirtualKey(state: .yubiKey5NFC(), touchDelay: 0)
        let session = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        try await session.verifyAdminPIN(OpenPGPAppletTests.adminPIN)
        let proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        let ec = try AsymmetricPrivateKey.generate(.p256)
        try await session.setAlgorithmAttributes(.authentication, .ecc(.secp256r1, slot: .authentication))
        let scalar = try #require(try? ecScalar(ec))
        let body = Self.header([(0x92, scalar)], crt: OpenPGP.KeySlot.authentication.controlReference)
        // SELECT forgets the admin PIN: the import needs it again.
        _ = try await proto.select(AID.openpgp, name: "OpenPGP")
        #expect(
            try await proto.send(APDU(ins: 0xDB, p1: 0x3F, p2: 0xFF, data: body)).status
                == .securityConditionNotSatisfied)
        try await session.verifyAdminPIN(OpenPGPAppletTests.adminPIN)
        _ = try await proto.sendChecked(APDU(ins: 0xDB, p1: 0x3F, p2: 0xFF, data: body))
        #expect(try await session.publicKey(.authentication).asymmetricKey() == ec.publicKey)
        #expect(try await session.applicationData().key(.authentication)?.status == .imported)
        // Lengths that do not add up are refused.
        let short = Array(body.dropLast())
        var broken = short
        broken[1] = UInt8(short.count - 2)
        #expect(try await proto.send(APDU(ins: 0xDB, p1: 0x3F, p2: 0xFF, data: broken)).status == .incorrectParameters)
    }

    /// The private scalar of a P-256 key, from its PKCS #8 (RFC 5915's ECPrivateKey inside).
    func ecScalar(_ key: AsymmetricPrivateKey) throws -> [UInt8] {
        let info = try TLV.parseAll(key.pkcs8)[0].children()
        let ecPrivateKey = try TLV.parseAll(info[2].value)[0].children()
        return ecPrivateKey[1].value
    }

    @Test func sessionImportsEachKindWithAttributesFingerprintAndTime() async throws {
        let key = VirtualKey(state: .yubiKey5NFC(), touchDelay: 0)
        let session = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        try await session.verifyAdminPIN(OpenPGPAppletTests.adminPIN)
        let cases: [(OpenPGP.KeySlot, AsymmetricKeyType)] = [
            (.signature, .ed25519), (.decryption, .x25519), (.authentication, .p384), (.attestation, .p256),
            (.signature, .rsa(bits: 3072)), (.decryption, .p256), (.signature, .p521), (.decryption, .p521),
            (.signature, .brainpoolP256r1), (.decryption, .brainpoolP384r1), (.authentication, .brainpoolP512r1),
        ]
        for (slot, type) in cases {
            let privateKey = try AsymmetricPrivateKey.generate(type)
            let fingerprint = try await session.importKey(privateKey, into: slot, created: 1_700_000_000)
            let attributes = try OpenPGPKeyImport.attributes(privateKey, slot: slot)
            #expect(
                fingerprint
                    == (try OpenPGPFingerprint.v4(privateKey.publicKey, attributes: attributes, created: 1_700_000_000))
            )
            let info = try #require(try await session.applicationData().key(slot))
            #expect(info.attributes == attributes && info.status == .imported, "\(slot) \(type)")
            #expect(info.fingerprint == fingerprint && info.generationTime == 1_700_000_000)
            #expect(try await session.publicKey(slot).asymmetricKey() == privateKey.publicKey, "\(slot) \(type)")
        }
    }

    @Test func attestationChainsToTheAttestationCertificate() async throws {
        let key = VirtualKey(state: .yubiKey5NFC(), touchDelay: 0)
        let session = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        try await session.verifyAdminPIN(OpenPGPAppletTests.adminPIN)
        let ed = try AsymmetricPrivateKey.generate(.ed25519)
        try await session.importKey(ed, into: .authentication, created: 1_700_000_000)
        await #expect(throws: OpenPGPError.securityConditionNotSatisfied) {
            _ = try await session.attest(.authentication)
        }
        try await session.verifyPIN(OpenPGPAppletTests.pin)
        await #expect(throws: OpenPGPError.noKey(.decryption)) { _ = try await session.attest(.decryption) }
        let attestation = try await session.attest(.authentication)
        #expect(attestation.publicKey == ed.publicKey)
        #expect(attestation.certificate.subject.contains("YubiKey OpenPGP Attestation AUT"))
        // The certificate stays as the slot's; the attestation key is the att slot's.
        #expect(try await session.certificate(.authentication) == attestation.certificate.der)
        #expect(try await session.applicationData().key(.attestation)?.hasKey == true)
        // An attestation certificate of another key: the chain no longer holds.
        let other = try AsymmetricPrivateKey.generate(.p256)
        let stranger = try CertificateIssuer.issue(
            subject: [.init("CN", "stranger")], publicKey: other.publicKey, serial: [1], validity: .days(1),
            signingKey: other, extensions: [])
        try await session.verifyAdminPIN(OpenPGPAppletTests.adminPIN)
        try await session.putData(OpenPGP.DO.attestationCertificate, stranger.der)
        await #expect(throws: OpenPGPError.attestationNotSigned(.authentication)) {
            _ = try await session.attest(.authentication)
        }
    }

    @Test func rsaKeyFromPrimesMatchesTheOriginal() throws {
        let key = try AsymmetricPrivateKey.generate(.rsa(bits: 2048))
        // PKCS #8 → RSAPrivateKey: version, n, e, d, p, q, ...
        let info = try TLV.parseAll(key.pkcs8)[0].children()
        let rsa = try TLV.parseAll(info[2].value)[0].children()
        let rebuilt = try AsymmetricPrivateKey.rsa(p: rsa[4].value, q: rsa[5].value, exponent: rsa[2].value)
        #expect(rebuilt.publicKey == key.publicKey)
        let block = [UInt8](repeating: 0x01, count: 256)
        #expect(try rebuilt.rsaPrivateOperation(block) == key.rsaPrivateOperation(block))
    }
}
