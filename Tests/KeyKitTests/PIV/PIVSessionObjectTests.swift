import Testing
@testable import KeyKit

private func h(_ hex: String) -> [UInt8] { try! Hex.decode(hex) }

/// GET DATA and PUT DATA: certificates (61xx answers, command chains, gzip), CHUID and CCC.
@Suite struct PIVSessionObjectTests {
    /// The object content of a certificate, as ykman stores it.
    static func object(_ der: [UInt8], info: UInt8 = 0) -> [UInt8] {
        TLV(0x70, der).encoded + TLV(0x71, [info]).encoded + TLV(0xFE, []).encoded
    }

    /// `answer` in 256-byte parts: the first answer, then one GET RESPONSE per part.
    static func chained(command: String, answer: [UInt8]) -> [(String, String)] {
        var steps = [(String, String)]()
        var rest = answer
        var next = command
        while rest.count > 256 {
            let left = rest.count - 256
            steps.append((next, Array(rest.prefix(256)).hex + (left >= 256 ? "61 00" : "61 " + [UInt8(left)].hex)))
            rest.removeFirst(256)
            next = "00 C0 00 00 " + (left >= 256 ? "00" : [UInt8(left)].hex)
        }
        steps.append((next, rest.hex + "90 00"))
        return steps
    }

    @Test func readsALargeCertificateThrough61xx() async throws {
        let content = TLV(0x53, Self.object(PIVFixtures.rsaCertificate)).encoded
        #expect(content.count == 787)
        let script = Self.chained(command: "00 CB 3F FF 05 5C 03 5F C1 05 00", answer: content)
        #expect(
            script.map(\.0) == [
                "00 CB 3F FF 05 5C 03 5F C1 05 00", "00 C0 00 00 00", "00 C0 00 00 00", "00 C0 00 00 13",
            ])
        let (session, card) = try await pivSession(script)
        let certificate = try #require(try await session.certificate(in: .authentication))
        #expect(certificate.der == PIVFixtures.rsaCertificate)
        #expect(certificate.sha256FingerprintText == PIVFixtures.rsaCertificateFingerprint)
        #expect(card.remaining == 0)
    }

    @Test func inflatesCompressedCertificates() async throws {
        let content = TLV(0x53, Self.object(PIVFixtures.ecCertificateGzip, info: 1)).encoded
        let (session, _) = try await pivSession(
            Self.chained(command: "00 CB 3F FF 05 5C 03 5F C1 0D 00", answer: content))
        let certificate = try #require(try await session.certificate(in: PIV.Slot(rawValue: 0x82)))
        #expect(certificate.sha256FingerprintText == PIVFixtures.ecCertificateFingerprint)
    }

    @Test func missingEmptyAndBadCertificateObjects() async throws {
        let (session, card) = try await pivSession([
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "6A 82"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "53 00 90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "53 07 70 00 71 01 00 FE 00 90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "53 08 70 01 30 71 01 00 FE 00 90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "53 08 70 01 30 71 01 02 FE 00 90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "53 08 70 01 30 71 01 01 FE 00 90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "53 05 71 01 00 FE 00 90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "54 00 90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "53 05 70 09 90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 0A 00", "69 82"),
        ])
        let slot = PIV.Slot.signature
        #expect(try await session.certificate(in: slot) == nil)
        #expect(try await session.certificate(in: slot) == nil)
        #expect(try await session.certificate(in: slot) == nil)
        await #expect(throws: PIVError.malformed(.certificate)) { _ = try await session.certificate(in: slot) }
        await #expect(throws: PIVError.unsupportedCertificateInfo(2)) { _ = try await session.certificate(in: slot) }
        await #expect(throws: PIVError.malformed(.gzip(.notGzip))) { _ = try await session.certificate(in: slot) }
        await #expect(throws: PIVError.malformed(.missingTag(0x70))) { _ = try await session.certificate(in: slot) }
        await #expect(throws: PIVError.malformed(.missingTag(0x53))) { _ = try await session.certificate(in: slot) }
        await #expect(throws: PIVError.malformed(.tlv(.truncatedValue(offset: 2, needed: 5, available: 2)))) {
            _ = try await session.certificate(in: slot)
        }
        // The PIN-protected objects answer 6982 until the PIN is given.
        await #expect(throws: PIVError.securityConditionNotSatisfied) { _ = try await session.certificate(in: slot) }
        #expect(card.remaining == 0)
    }

    @Test func objectNotFound() async throws {
        let (session, _) = try await pivSession([("00 CB 3F FF 05 5C 03 5F C1 09 00", "6A 82")])
        await #expect(throws: PIVError.objectNotFound(PIV.ObjectID.printedInformation)) {
            _ = try await session.object(PIV.ObjectID.printedInformation)
        }
    }

    @Test func discoveryObjectAnswers7E() async throws {
        let (session, _) = try await pivSession([
            ("00 CB 3F FF 03 5C 01 7E 00", "7E 12 4F 0B A0 00 00 03 08 00 00 10 00 01 00 5F 2F 02 40 00 90 00")
        ])
        #expect(
            try await session.object(PIV.ObjectID.discovery)
                == h("4F 0B A0 00 00 03 08 00 00 10 00 01 00 5F 2F 02 40 00"))
    }

    /// PUT DATA of a certificate too long for one command goes as a chain (CLA 10 on all parts but the last).
    @Test func writesCertificatesInAChain() async throws {
        let certificate = try X509Certificate(der: PIVFixtures.rsaCertificate)
        let data = h("5C 03 5F C1 05") + TLV(0x53, Self.object(PIVFixtures.rsaCertificate)).encoded
        #expect(data.count == 792)
        var script = [(String, String)]()
        for start in stride(from: 0, to: data.count, by: 255) {
            let part = Array(data[start..<min(start + 255, data.count)])
            let last = start + 255 >= data.count
            script.append(((last ? "00" : "10") + " DB 3F FF " + [UInt8(part.count)].hex + part.hex, "90 00"))
        }
        #expect(script.count == 4)
        script.append(("00 DB 3F FF 09 5C 03 5F C1 05 53 02 FE 00", "6A 84"))
        script.append(("00 DB 3F FF 07 5C 03 5F C1 0B 53 00", "90 00"))
        let (session, card) = try await pivSession(script)
        try await session.putCertificate(certificate, in: .authentication)
        await #expect(throws: PIVError.noSpace) {
            try await session.putObject(PIV.ObjectID.authenticationCertificate, [0xFE, 0x00])
        }
        try await session.deleteCertificate(in: .keyManagement)
        #expect(card.remaining == 0)
    }

    @Test func compressedObjectsRoundTrip() throws {
        let certificate = try X509Certificate(der: PIVFixtures.rsaCertificate)
        let content = try PIVSession.certificateObject(certificate, compress: true)
        let tlvs = try TLV.parseAll(content)
        #expect(tlvs.map(\.tag) == [0x70, 0x71, 0xFE])
        #expect(tlvs[1].value == [0x01])
        #expect(Array(tlvs[0].value.prefix(2)) == Gzip.magic)
        #expect(try PIVSession.parseCertificateObject(content)?.der == certificate.der)
    }

    @Test func objectsAreNamedAsYkmanNamesThem() {
        #expect(PIV.ObjectID.named("chuid") == PIV.ObjectID.chuid)
        #expect(PIV.ObjectID.named("CCC") == PIV.ObjectID.cardCapabilityContainer)
        #expect(PIV.ObjectID.named("capability") == PIV.ObjectID.cardCapabilityContainer)
        #expect(PIV.ObjectID.named("key-management") == h("5F C1 0B"))
        #expect(PIV.ObjectID.named("CARD_AUTH") == h("5F C1 01"))
        #expect(PIV.ObjectID.named("retired1") == h("5F C1 0D"))
        #expect(PIV.ObjectID.named("RETIRED20") == h("5F C1 20"))
        #expect(PIV.ObjectID.named("attestation") == h("5F FF 01"))
        #expect(PIV.ObjectID.named("discovery") == [0x7E])
        // Hex: as many bytes as the value needs.
        #expect(PIV.ObjectID.named("5fc105") == h("5F C1 05"))
        #expect(PIV.ObjectID.named("0x5FFF10") == h("5F FF 10"))
        #expect(PIV.ObjectID.named("7e") == [0x7E])
        for bad in ["", "0", "retired21", "5fc1051", "xyz", "0x"] { #expect(PIV.ObjectID.named(bad) == nil, "\(bad)") }
        #expect(PIV.ObjectID.name(of: h("5F C1 09")) == "PRINTED")
        #expect(PIV.ObjectID.names.count == 34)
    }

    @Test func aCHUIDsGUIDIsAVersion4UUID() {
        let guid = PIVSession.guid(inCHUID: PIVSession.newCHUID()) ?? []
        #expect(guid.count == 16 && guid[6] >> 4 == 4 && guid[8] >> 6 == 2)
    }

    @Test func chuidAndCCC() async throws {
        let guid = h("00112233445566778899AABBCCDDEEFF")
        let chuid = PIVSession.newCHUID(guid: guid)
        #expect(chuid.count == 59)
        #expect(PIVSession.guid(inCHUID: chuid) == guid)
        #expect(try TLV.parseAll(chuid).map(\.tag) == [0x30, 0x34, 0x35, 0x3E, 0xFE])
        let ccc = PIVSession.newCardCapabilityContainer(cardID: [UInt8](repeating: 0, count: 14))
        #expect(
            try TLV.parseAll(ccc).map(\.tag) == [
                0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE,
            ])
        #expect(Array(ccc.prefix(9)) == h("F0 15 A0 00 00 01 16 FF 02"))
        let (session, card) = try await pivSession([
            ("00 CB 3F FF 05 5C 03 5F C1 02 00", "6A 82"),
            ("00 DB 3F FF 42 5C 03 5F C1 02 53 3B " + chuid.hex, "90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 02 00", "53 3B " + chuid.hex + "90 00"),
            ("00 CB 3F FF 05 5C 03 5F C1 07 00", "53 00 90 00"),
            (
                "00 DB 3F FF " + [UInt8(ccc.count + 7)].hex + "5C 03 5F C1 07 53 " + [UInt8(ccc.count)].hex + ccc.hex,
                "90 00"
            ),
        ])
        #expect(try await session.chuid() == nil)
        try await session.putCHUID(chuid)
        #expect(try await session.chuid() == chuid)
        #expect(try await session.cardCapabilityContainer() == nil)
        try await session.putCardCapabilityContainer(ccc)
        #expect(card.remaining == 0)
    }

    @Test func keyAlgorithmFromTheCertificateWithoutMetadata() async throws {
        let content = TLV(0x53, Self.object(PIVFixtures.ecCertificate)).encoded
        let (session, _) = try await pivSession(
            version: "05 02 07",
            Self.chained(command: "00 CB 3F FF 05 5C 03 5F C1 05 00", answer: content)
                + [("00 CB 3F FF 05 5C 03 5F C1 0A 00", "6A 82")])
        #expect(try await session.keyAlgorithm(in: .authentication) == .eccP256)
        await #expect(
            throws: PIVError.notSupported(feature: .metadata, minimum: Version(5, 3, 0), actual: Version(5, 2, 7))
        ) {
            _ = try await session.keyAlgorithm(in: .signature)
        }
    }
}
