import Testing
@testable import KeyKit

private func h(_ hex: String) -> [UInt8] { try! Hex.decode(hex) }

/// The GENERAL AUTHENTICATE input (81 or 85) and the slot of a command, for a card that uses a key.
private func input(of apdu: APDU) -> (slot: UInt8, algorithm: UInt8, data: [UInt8], exponentiation: Bool)? {
    guard apdu.ins == PIV.Ins.authenticate, let template = try? TLV.parseAll(apdu.data).value(for: 0x7C),
        let fields = try? TLV.parseAll(template), fields.value(for: 0x82) == []
    else { return nil }
    if let challenge = fields.value(for: 0x81) { return (apdu.p2, apdu.p1, challenge, false) }
    if let point = fields.value(for: 0x85) { return (apdu.p2, apdu.p1, point, true) }
    return nil
}

/// A card whose slot 9A holds `key` and uses it as a YubiKey does (the raw RSA operation, ECDSA over the input,
/// Ed25519 over the message, ECDH).
private func card(holding key: AsymmetricPrivateKey) -> PIVRespondingCard {
    PIVRespondingCard { apdu in
        guard let (slot, _, data, exponentiation) = input(of: apdu) else { return [0x6D, 0x00] }
        guard slot == 0x9A else { return [0x6A, 0x88] }
        let result: [UInt8]
        do {
            switch key.type {
            case .rsa: result = try key.rsaPrivateOperation(data)
            case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
                result = exponentiation ? try key.sharedSecret(peer: data) : try key.ecdsaSign(digest: data)
            case .ed25519: result = try key.ed25519Sign(data)
            case .x25519: result = try key.sharedSecret(peer: data)
            }
        } catch {
            return [0x6A, 0x80]
        }
        let response = TLV(0x82, result).encoded
        return TLV(0x7C, response).encoded + [0x90, 0x00]
    }
}

@Suite struct PIVSessionKeyTests {
    @Test func ecdsaSendsTheDigest() async throws {
        let message = Array("abc".utf8)
        let digest = h("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")  // FIPS 180-2 SHA-256("abc")
        let key = try AsymmetricPrivateKey(pkcs8: PIVFixtures.attestedKey)
        let signature = try key.ecdsaSign(digest: digest)
        let body = TLV(0x7C, TLV(0x82, signature).encoded).encoded.hex
        let (session, card) = try await pivSession([
            ("00 87 11 9A 26 7C 24 82 00 81 20 \(digest.hex) 00", body + "90 00")
        ])
        let out = try await session.sign(message, in: .authentication, algorithm: .eccP256)
        #expect(out == signature)
        #expect(key.publicKey.verify(signature: out, message: message))
        #expect(card.remaining == 0)
    }

    @Test(arguments: [SignatureDigest.sha256, .sha384, .sha512])
    func ecdsaP384FitsTheDigest(digest: SignatureDigest) async throws {
        let key = try AsymmetricPrivateKey.generate(.p384)
        let card = card(holding: key)
        let session = try await PIVSession.make(connection: card)
        let message = Array("message".utf8)
        let signature = try await session.sign(
            message, in: .authentication, algorithm: .eccP384,
            scheme: PIVSignatureScheme(digest: digest))
        #expect(key.publicKey.verify(signature: signature, message: message, digest: digest))
        let sent = try #require(card.received.last.flatMap(input))
        #expect(sent.algorithm == 0x14)
        #expect(sent.data.count == 48)
        let full = digest.hash(message)
        #expect(
            sent.data
                == (full.count >= 48 ? Array(full.prefix(48)) : [UInt8](repeating: 0, count: 48 - full.count) + full))
    }

    /// PKCS #1 v1.5 through the session and the key's raw operation equals `openssl dgst -sign`, in a chained
    /// command (266 bytes) and a chained answer (264 bytes).
    @Test func rsaPKCS1MatchesOpenSSL() async throws {
        let key = try AsymmetricPrivateKey(pkcs8: PIVFixtures.rsaPrivateKey)
        let card = card(holding: key)
        let session = try await PIVSession.make(connection: card)
        let signature = try await session.sign(PIVFixtures.rsaSignedMessage, in: .authentication, algorithm: .rsa2048)
        #expect(signature == PIVFixtures.rsaSignatureSHA256)
        let sent = try #require(card.received.last)
        #expect(sent.p1 == 0x07 && sent.p2 == 0x9A && sent.data.count == 266 && sent.le == 256)
        #expect(card.exchanges == 2 + 2 + 1)  // SELECT, VERSION; two command parts; a GET RESPONSE for the rest
        let pss = try await session.sign(
            PIVFixtures.rsaSignedMessage, in: .authentication, algorithm: .rsa2048,
            scheme: PIVSignatureScheme(digest: .sha384, padding: .pss))
        #expect(
            key.publicKey.verify(signature: pss, message: PIVFixtures.rsaSignedMessage, digest: .sha384, padding: .pss))
    }

    @Test func shortRSASignaturesArePaddedAndLongOnesRefused() async throws {
        let short = PIVRespondingCard { _ in TLV(0x7C, TLV(0x82, [1, 2, 3]).encoded).encoded + [0x90, 0x00] }
        let s = try await PIVSession.make(connection: short)
        let out = try await s.sign([], in: .authentication, algorithm: .rsa1024)
        #expect(out == [UInt8](repeating: 0, count: 125) + [1, 2, 3])
        let long = PIVRespondingCard { _ in
            TLV(0x7C, TLV(0x82, [UInt8](repeating: 1, count: 129)).encoded).encoded + [0x90, 0x00]
        }
        let l = try await PIVSession.make(connection: long)
        await #expect(throws: PIVError.malformed(.resultLength(expected: 128, actual: 129))) {
            _ = try await l.sign([], in: .authentication, algorithm: .rsa1024)
        }
    }

    /// RFC 8032 test 1: the key signs the message itself, and the session gives the vector's signature.
    @Test func ed25519() async throws {
        let key = try AsymmetricPrivateKey.raw(
            h("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"),
            type: .ed25519)
        let session = try await PIVSession.make(connection: card(holding: key))
        let signature = try await session.sign([], in: .authentication, algorithm: .ed25519)
        #expect(
            signature
                == h(
                    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9"
                        + "b46bd25bf5f0595bbe24655141438e7a100b"))
        await #expect(throws: PIVError.notASlotKeyAlgorithm(.x25519)) {
            _ = try await session.sign([], in: .authentication, algorithm: .x25519)
        }
    }

    @Test(arguments: [AsymmetricKeyType.p256, .p384, .x25519])
    func sharedSecret(type: AsymmetricKeyType) async throws {
        let mine = try AsymmetricPrivateKey.generate(type), peer = try AsymmetricPrivateKey.generate(type)
        let card = card(holding: mine)
        let session = try await PIVSession.make(connection: card)
        let secret = try await session.sharedSecret(in: .authentication, peer: peer.publicKey)
        #expect(
            secret == (try peer.sharedSecret(peer: type == .x25519 ? mine.publicKey.raw! : mine.publicKey.ecPoint!)))
        let sent = try #require(card.received.last.flatMap(input))
        #expect(sent.exponentiation && sent.algorithm == type.pivAlgorithm?.rawValue)
        await #expect(throws: PIVError.notASlotKeyAlgorithm(.ed25519)) {
            _ = try await session.sharedSecret(
                in: .authentication, peer: try AsymmetricPrivateKey.generate(.ed25519).publicKey)
        }
    }

    @Test func statusWordsOfKeyUse() async throws {
        let (session, card) = try await pivSession([
            ("00 87 11 9C 26 7C 24 82 00 81 20 \(String(repeating: "00 ", count: 32)) 00", "69 82"),
            ("00 87 11 9C 26 7C 24 82 00 81 20 \(String(repeating: "00 ", count: 32)) 00", "6A 88"),
            ("00 87 11 9C 26 7C 24 82 00 81 20 \(String(repeating: "00 ", count: 32)) 00", "6A 80"),
            ("00 87 11 9C 26 7C 24 82 00 81 20 \(String(repeating: "00 ", count: 32)) 00", "6D 00"),
            ("00 87 11 9C 26 7C 24 82 00 81 20 \(String(repeating: "00 ", count: 32)) 00", "7C 02 81 00 90 00"),
        ])
        let digest = [UInt8](repeating: 0, count: 32)
        func sign() async throws {
            _ = try await session.useKey(in: .signature, algorithm: .eccP256, digest, exponentiation: false)
        }
        await #expect(throws: PIVError.securityConditionNotSatisfied) { try await sign() }
        await #expect(throws: PIVError.noKeyInSlot(.signature)) { try await sign() }
        await #expect(throws: PIVError.incorrectParameters(.incorrectParameters)) { try await sign() }
        await #expect(throws: PIVError.status(.invalidInstruction)) { try await sign() }
        await #expect(throws: PIVError.malformed(.missingTag(0x82))) { try await sign() }
        #expect(card.remaining == 0)
    }

    // MARK: Generate, import, move, delete

    @Test func generate() async throws {
        let key = try AsymmetricPrivateKey(pkcs8: PIVFixtures.attestedKey).publicKey
        let answer = TLV(0x7F49, key.pivEncoding).encoded.hex + "90 00"
        let (session, card) = try await pivSession([
            ("00 47 00 9A 05 AC 03 80 01 11 00", answer),
            ("00 47 00 9C 0B AC 09 80 01 11 AA 01 03 AB 01 03 00", answer),
            ("00 47 00 9D 05 AC 03 80 01 11 00", "6A 80"),
        ])
        #expect(try await session.generateKey(in: .authentication, algorithm: .eccP256) == key)
        #expect(
            try await session.generateKey(
                in: .signature, algorithm: .eccP256, pinPolicy: .always,
                touchPolicy: .cached) == key)
        await #expect(throws: PIVError.incorrectParameters(.incorrectParameters)) {
            _ = try await session.generateKey(in: .keyManagement, algorithm: .eccP256)
        }
        await #expect(throws: PIVError.notASlotKeyAlgorithm(.aes128)) {
            _ = try await session.generateKey(in: .keyManagement, algorithm: .aes128)
        }
        #expect(card.remaining == 0)
        let (old, _) = try await pivSession(version: "04 02 04", [])
        await #expect(
            throws: PIVError.notSupported(feature: .ed25519, minimum: PIV.version57, actual: Version(4, 2, 4))
        ) {
            _ = try await old.generateKey(in: .authentication, algorithm: .ed25519)
        }
        await #expect(
            throws: PIVError.notSupported(feature: .cachedTouch, minimum: Version(4, 3, 0), actual: Version(4, 2, 4))
        ) {
            _ = try await old.generateKey(in: .authentication, algorithm: .eccP256, touchPolicy: .cached)
        }
    }

    @Test func importedKeysGoAsTheirParts() async throws {
        let ec = try AsymmetricPrivateKey(pkcs8: PIVFixtures.attestedKey)
        let rsa = try AsymmetricPrivateKey(pkcs8: PIVFixtures.rsaPrivateKey)
        let ed = try AsymmetricPrivateKey.generate(.ed25519), x = try AsymmetricPrivateKey.generate(.x25519)
        let card = PIVRespondingCard { _ in [0x90, 0x00] }
        let session = try await PIVSession.make(connection: card)
        #expect(try await session.importKey(ec, in: .authentication, pinPolicy: .never) == .eccP256)
        #expect(try await session.importKey(rsa, in: .signature, touchPolicy: .always) == .rsa2048)
        #expect(try await session.importKey(ed, in: .keyManagement) == .ed25519)
        #expect(try await session.importKey(x, in: .cardAuthentication) == .x25519)
        let sent = card.received.filter { $0.ins == PIV.Ins.importKey }
        #expect(sent.map { [$0.p1, $0.p2] } == [[0x11, 0x9A], [0x07, 0x9C], [0xE0, 0x9D], [0xE1, 0x9E]])
        let ecParts = try TLV.parseAll(sent[0].data)
        #expect(ecParts.map(\.tag) == [0x06, 0xAA])
        #expect(try AsymmetricPrivateKey.ec(.p256, scalar: ecParts[0].value) == ec)
        let rsaParts = try TLV.parseAll(sent[1].data)
        #expect(
            rsaParts.map(\.tag) == [1, 2, 3, 4, 5, 0xAB] && rsaParts.dropLast().allSatisfy { $0.value.count == 128 })
        let rebuilt = try AsymmetricPrivateKey.rsa(
            p: rsaParts[0].value, q: rsaParts[1].value, dp: rsaParts[2].value,
            dq: rsaParts[3].value, qInverse: rsaParts[4].value)
        #expect(rebuilt.publicKey == rsa.publicKey)
        #expect(try AsymmetricPrivateKey.raw(try TLV.parseAll(sent[2].data).value(for: 0x07)!, type: .ed25519) == ed)
        #expect(try AsymmetricPrivateKey.raw(try TLV.parseAll(sent[3].data).value(for: 0x08)!, type: .x25519) == x)
    }

    @Test func moveAndDelete() async throws {
        let (session, card) = try await pivSession([
            ("00 F6 9C 9A", "90 00"), ("00 F6 FF 9C", "90 00"), ("00 F6 FF 9D", "6A 88"),
        ])
        try await session.moveKey(from: .authentication, to: .signature)
        try await session.deleteKey(in: .signature)
        await #expect(throws: PIVError.noKeyInSlot(.keyManagement)) { try await session.deleteKey(in: .keyManagement) }
        #expect(card.remaining == 0)
        let (old, _) = try await pivSession(version: "05 04 03", [])
        await #expect(
            throws: PIVError.notSupported(feature: .moveKey, minimum: PIV.version57, actual: Version(5, 4, 3))
        ) {
            try await old.deleteKey(in: .signature)
        }
    }

    // MARK: Attestation

    /// A card answering ATTEST of 9A with `attestation` and GET DATA of F9's object with `device`.
    private func attestingCard(attestation: [UInt8], device: [UInt8]) -> PIVRespondingCard {
        PIVRespondingCard { apdu in
            switch apdu.ins {
            case PIV.Ins.attest: return apdu.p1 == 0x9A ? attestation + [0x90, 0x00] : [0x6A, 0x88]
            case PIV.Ins.getData:
                guard apdu.data == TLV(0x5C, PIV.ObjectID.attestationCertificate).encoded else { return [0x6A, 0x82] }
                let object = TLV(0x70, device).encoded + TLV(0x71, [0]).encoded + TLV(0xFE, []).encoded
                return TLV(0x53, object).encoded + [0x90, 0x00]
            default: return [0x6D, 0x00]
            }
        }
    }

    @Test func attestationChainIsChecked() async throws {
        let attested = try AsymmetricPrivateKey(pkcs8: PIVFixtures.attestedKey).publicKey
        let card = attestingCard(attestation: PIVFixtures.attestedCertificate, device: PIVFixtures.attestationCA)
        let session = try await PIVSession.make(connection: card)
        let attestation = try await session.attest(.authentication, expected: attested)
        #expect(attestation.publicKey == attested)
        #expect(attestation.certificate.der == PIVFixtures.attestedCertificate)
        #expect(attestation.attestationCertificate.der == PIVFixtures.attestationCA)
        #expect(card.received.map(\.ins) == [0xA4, 0xFD, 0xF9, 0xCB])
        #expect(card.received[2].p1 == 0x9A && card.received[2].le == 256)
        await #expect(throws: PIVError.attestedKeyMismatch(.authentication)) {
            _ = try await session.attest(.authentication, expected: try AsymmetricPrivateKey.generate(.p256).publicKey)
        }
        await #expect(throws: PIVError.noKeyInSlot(.signature)) { _ = try await session.attest(.signature) }
    }

    @Test func attestationByAnotherKeyIsRefused() async throws {
        let other = try await PIVSession.make(
            connection: attestingCard(
                attestation: PIVFixtures.attestedCertificate,
                device: PIVFixtures.otherCA))
        await #expect(throws: PIVError.attestationNotSignedByDevice(.authentication)) {
            _ = try await other.attest(.authentication)
        }
        let garbage = try await PIVSession.make(
            connection: attestingCard(
                attestation: [0x30, 0x03, 0x02, 0x01, 0x01],
                device: PIVFixtures.attestationCA))
        await #expect(throws: PIVError.malformed(.certificate)) { _ = try await garbage.attest(.authentication) }
    }
}
