import Foundation
import KeyKit
import Testing
import VirtualKey

/// The certificate inside a certificate object (53 { 70 cert, 71 info, FE }).
private func certificate(_ r: Response) throws -> X509Certificate {
    #expect(r.status == .ok)
    let object = try #require(try TLV.parseAll(r.data).value(for: 0x53))
    return try X509Certificate(der: try #require(try TLV.parseAll(object).value(for: 0x70)))
}

@Suite struct PIVAttestationTests {
    @Test func attestationOfAGeneratedKey() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.generate(.authentication, .eccP384, touch: .cached).status == .ok)
        let slotKey = try #require(try await card.metadata(0x9A)[0x04])
        let r = try await card.send(PIV.Ins.attest, p1: 0x9A)
        #expect(r.status == .ok)
        let attested = try X509Certificate(der: r.data)
        #expect(attested.subject == "CN=YubiKey PIV Attestation 9a")
        let point = try #require(try TLV.parseAll(slotKey).value(for: 0x86))
        #expect(attested.asymmetricPublicKey == (try AsymmetricPublicKey(ecPoint: point, type: .p384)))

        // Signed by the attestation key, whose certificate is in 5FFF01 and names the issuer.
        let issuer = try certificate(try await card.getData(PIV.ObjectID.attestationCertificate))
        let issuerKey = try #require(issuer.asymmetricPublicKey)
        #expect(attested.isSigned(by: issuerKey))
        #expect(issuer.isSigned(by: issuerKey))
        #expect(try await card.metadata(0xF9)[0x04] == TLV(0x86, try #require(issuerKey.ecPoint)).encoded)
        // The YubiKey's extensions: firmware (1.3.6.1.4.1.41482.3.3) 5.7.2, serial (.7) as an INTEGER,
        // policies (.8) PIN once + touch cached, form factor (.9).
        let der = attested.der
        let arc = pivHex("06 0A 2B 06 01 04 01 82 C4 0A 03")
        #expect(contains(der, arc + [0x03, 0x04, 0x03, 0x05, 0x07, 0x02]))
        #expect(
            contains(
                der,
                arc + [0x07, 0x04, 0x06, 0x02, 0x04]
                    + BigEndian.bytes(UInt64(28_123_456), count: 4)))
        #expect(contains(der, arc + [0x08, 0x04, 0x02, 0x02, 0x03]))
        #expect(contains(der, arc + [0x09, 0x04, 0x01, 0x01]))
    }

    @Test func onlyGeneratedKeysAreAttested() async throws {
        let card = try await PIVCard()
        #expect(try await card.send(PIV.Ins.attest, p1: 0x9C).status == .referencedDataNotFound)
        #expect(try await card.authenticate(.aes192) == .ok)
        let scalar = SignatureDigest.sha256.hash([1])
        #expect(try await card.send(PIV.Ins.importKey, p1: 0x11, p2: 0x9C, TLV(0x06, scalar).encoded).status == .ok)
        #expect(try await card.send(PIV.Ins.attest, p1: 0x9C).status == .incorrectParameters)
        #expect(try await card.send(PIV.Ins.attest, p1: 0xF9).status.rawValue == 0x6A86)
    }

    @Test func moveAndDeleteKeys() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.generate(.authentication, .eccP256).status == .ok)
        #expect(try await card.generate(.signature, .eccP256).status == .ok)
        let metadata = try await card.metadata(0x9A)
        #expect(try await card.send(PIV.Ins.moveKey, p1: 0x9C, p2: 0x9A).status == .incorrectParameters)
        #expect(try await card.send(PIV.Ins.moveKey, p1: 0x90, p2: 0x9A).status == .ok)
        #expect(try await card.metadata(0x90) == metadata)
        #expect(try await card.send(PIV.Ins.getMetadata, p2: 0x9A).status == .referencedDataNotFound)
        #expect(try await card.send(PIV.Ins.moveKey, p1: 0x9D, p2: 0x9A).status == .referencedDataNotFound)
        #expect(try await card.send(PIV.Ins.moveKey, p1: 0xFF, p2: 0x9C).status == .ok)
        #expect(try await card.send(PIV.Ins.moveKey, p1: 0xFF, p2: 0x9C).status == .referencedDataNotFound)
        // The attestation key stays where it is.
        #expect(try await card.send(PIV.Ins.moveKey, p1: 0xFF, p2: 0xF9).status.rawValue == 0x6A86)
        let old = try await PIVCard(state: .yubiKey5NFC(version: Version(5, 4, 3)))
        #expect(try await old.send(PIV.Ins.moveKey, p1: 0xFF, p2: 0x9A).status == .invalidInstruction)
    }
}

@Suite struct PIVStateTests {
    @Test func stateSurvivesTheFileAndOldFilesLoad() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.generate(.authentication, .rsa1024, pin: .always, touch: .never).status == .ok)
        #expect(try await card.putData(PIV.ObjectID.chuid, [1, 2, 3]).status == .ok)
        _ = try await card.send(PIV.Ins.changeReference, p2: 0x80, PIVCard.padded("123456") + PIVCard.padded("8888888"))
        let state = card.key.state
        let decoded = try JSONDecoder().decode(VirtualKeyState.self, from: try JSONEncoder().encode(state))
        #expect(decoded == state)
        #expect(decoded.piv.keys[.authentication]?.algorithm == .rsa1024)
        #expect(decoded.piv.keys[.authentication]?.pinPolicy == .always)

        // A state file written before PIV existed: a new key's PIV.
        let encoded = try JSONEncoder().encode(state)
        var object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        object["piv"] = nil
        let oldFile = try JSONSerialization.data(withJSONObject: object)
        let old = try JSONDecoder().decode(VirtualKeyState.self, from: oldFile)
        #expect(old.piv == PIVState())
    }

    @Test func demoPutsAKeyAndCertificateIn9A() async throws {
        let card = try await PIVCard(state: .yubiKey5NFC().withDemoAccounts())
        let cert = try certificate(try await card.getData(PIV.ObjectID.authenticationCertificate))
        #expect(cert.subject == "CN=ykterm demo")
        let key = try #require(cert.asymmetricPublicKey)
        #expect(cert.isSigned(by: key))
        let metadata = try await card.metadata(0x9A)
        #expect(metadata[0x01] == [0x11] && metadata[0x02] == [0x02, 0x01] && metadata[0x03] == [0x02])
        #expect(metadata[0x04] == TLV(0x86, try #require(key.ecPoint)).encoded)
        #expect(try await card.verify().status == .ok)
        let message = Array("demo".utf8)
        let digest = SignatureDigest.sha256.hash(message)
        let signature = try PIVCard.result(try await card.use(.authentication, .eccP256, digest))
        #expect(key.verify(signature: signature, message: message))
    }
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}
