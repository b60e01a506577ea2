import KeyKit
import Testing

/// OpenPGP v4 fingerprints against keys GnuPG 2.2 made (created 2024-01-01, `--faked-system-time`), and the
/// extended header list of a key import.
@Suite struct OpenPGPFingerprintTests {
    static let created: UInt32 = 1_704_067_200

    @Test func ed25519AndCv25519AsGnuPGComputesThem() throws {
        let ed = try AsymmetricPublicKey(
            raw: h("63815B72DEA840EB07E4BFBB2BEA80A93331D25F639FD772BB7E76A8FAE1062A"), type: .ed25519)
        let edFingerprint = try OpenPGPFingerprint.v4(
            ed, attributes: .ecc(.ed25519, slot: .signature), created: Self.created)
        #expect(edFingerprint == h("4FDC63DBCB2887AC612699C8BD2A20B7722FCE4C"))
        let cv = try AsymmetricPublicKey(
            raw: h("E5BEC42BD3046EEBD32EFFB953EAC8A1EB2338C53AC0282413E51838B6AED377"), type: .x25519)
        let cvFingerprint = try OpenPGPFingerprint.v4(
            cv, attributes: .ecc(.x25519, slot: .decryption), created: Self.created)
        #expect(cvFingerprint == h("7263926D74E280E261C2A249A3453892ED084052"))
    }

    @Test func nistCurvesAsGnuPGComputesThem() throws {
        let p256 = try AsymmetricPublicKey(
            ecPoint: h(
                "046586598B8CFB892BAC6C9252134C75D57013ECFAEFBFE1B574743DAD7F0FB69D01A8C8087CE11D4C8E800AF5918D75F97"
                    + "1792F31570F03577E835ECC56E0CA5B"), type: .p256)
        let ecdsa = try OpenPGPFingerprint.v4(
            p256, attributes: .ecc(.secp256r1, slot: .signature), created: Self.created)
        #expect(ecdsa == h("0BCFD783A9345BD4FB45DCD8F0DCB315421C8419"))
        let p384 = try AsymmetricPublicKey(
            ecPoint: h(
                "043E9AE25F65FDEA7071CA462EA3D1F0B2E0ACDA845B019F034837DF8E73FA7F5AB3BC1B13413106C067EEC316081F3AF6"
                    + "374F6DFD53A9EC263DA2C1C014BDF5967F8FE6353471237AD627258BA56573B185ADB5272F446709D8B1B3B1A9588A94"
            ),
            type: .p384)
        let ecdh = try OpenPGPFingerprint.v4(
            p384, attributes: .ecc(.secp384r1, slot: .decryption), created: Self.created)
        #expect(ecdh == h("A7C59880D1221C37FAB9DF3ED6ED35D6A82A0B11"))
    }

    @Test func rsaPacketCarriesBothNumbersAsMPIs() throws {
        let key = try AsymmetricPrivateKey.generate(.rsa(bits: 2048))
        let body = try OpenPGPFingerprint.publicKeyPacket(
            key.publicKey, attributes: .rsa(bits: 2048), created: Self.created)
        #expect(Array(body.prefix(6)) == [0x04, 0x65, 0x92, 0x00, 0x80, 0x01])
        #expect(Array(body[6..<8]) == [0x08, 0x00] && body.count == 6 + 2 + 256 + 2 + 3)
        #expect(Array(body.suffix(5)) == [0x00, 0x11, 0x01, 0x00, 0x01])
    }

    @Test func importTemplateListsThePartsTheirLengthsAndTheSlot() throws {
        let key = try AsymmetricPrivateKey.generate(.x25519)
        let template = try OpenPGPKeyImport.template(key, slot: .decryption)
        let outer = try TLV.parseAll(template)
        #expect(outer.count == 1 && outer[0].tag == 0x4D)
        let parts = try outer[0].children()
        #expect(parts.map(\.tag) == [0xB8, 0x7F48, 0x5F48])
        #expect(parts[1].value == [0x92, 0x20] && parts[2].value.count == 32)
        // X25519 goes in with its bytes reversed, as the card (and ykman) want it.
        #expect(try AsymmetricPrivateKey.raw(parts[2].value.reversed(), type: .x25519) == key)

        let rsa = try AsymmetricPrivateKey.generate(.rsa(bits: 2048))
        let rsaParts = try TLV.parseAll(try OpenPGPKeyImport.template(rsa, slot: .attestation))[0].children()
        #expect(rsaParts[0].encoded == OpenPGP.KeySlot.attestation.controlReference)
        #expect(rsaParts[1].value == [0x91, 0x03, 0x92, 0x81, 0x80, 0x93, 0x81, 0x80])
        #expect(Array(rsaParts[2].value.prefix(3)) == [0x01, 0x00, 0x01] && rsaParts[2].value.count == 259)
    }

    @Test func ecdhPacketsCarryGnuPGsKDFParametersForTheCurvesSize() throws {
        let expected: [(AsymmetricKeyType, OpenPGP.Curve, [UInt8])] = [
            (.p521, .secp521r1, [0x03, 0x01, 0x0A, 0x09]),
            (.brainpoolP256r1, .brainpoolP256r1, [0x03, 0x01, 0x08, 0x07]),
            (.brainpoolP384r1, .brainpoolP384r1, [0x03, 0x01, 0x09, 0x08]),
            (.brainpoolP512r1, .brainpoolP512r1, [0x03, 0x01, 0x0A, 0x09]),
        ]
        for (type, curve, kdf) in expected {
            let key = try AsymmetricPrivateKey.generate(type)
            let attributes = try OpenPGPKeyImport.attributes(key, slot: .decryption)
            #expect(attributes == .ecc(algorithm: OpenPGP.AlgorithmID.ecdh, curve: curve, withPublicKey: false))
            let body = try OpenPGPFingerprint.publicKeyPacket(key.publicKey, attributes: attributes, created: 1)
            #expect(Array(body.suffix(4)) == kdf, "\(type)")
            #expect(Array(body[6..<(7 + curve.oid.count)]) == [UInt8(curve.oid.count)] + curve.oid)
            let scalar = try TLV.parseAll(try OpenPGPKeyImport.template(key, slot: .decryption))[0].children()[2]
            #expect(scalar.value.count == type.length, "\(type)")
        }
    }

    @Test func slotsTakeTheKindsTheSpecificationAllows() throws {
        let ed = try AsymmetricPrivateKey.generate(.ed25519)
        let x = try AsymmetricPrivateKey.generate(.x25519)
        let p256 = try AsymmetricPrivateKey.generate(.p256)
        #expect(try OpenPGPKeyImport.attributes(ed, slot: .authentication) == .ecc(.ed25519, slot: .authentication))
        #expect(throws: OpenPGPError.unsupportedAlgorithm) { try OpenPGPKeyImport.attributes(ed, slot: .decryption) }
        #expect(throws: OpenPGPError.unsupportedAlgorithm) { try OpenPGPKeyImport.attributes(x, slot: .signature) }
        #expect(try OpenPGPKeyImport.attributes(p256, slot: .decryption).encoded.first == OpenPGP.AlgorithmID.ecdh)
        #expect(try OpenPGPKeyImport.attributes(p256, slot: .signature).encoded.first == OpenPGP.AlgorithmID.ecdsa)
    }
}

private func h(_ hex: String) -> [UInt8] { try! Hex.decode(hex) }
