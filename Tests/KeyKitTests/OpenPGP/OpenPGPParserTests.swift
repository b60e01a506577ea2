import KeyKit
import Testing

/// The OpenPGP parsers with card answers: a YubiKey 5's application related data, cardholder data, public keys,
/// and garbage, which must come back as malformation errors and never crash.
@Suite struct OpenPGPParserTests {
    /// A YubiKey 5.7's application related data (serial 12345678): an Ed25519 signature key, generated, with
    /// its fingerprint and time written, touch "on" for it and "fixed" for the authentication key.
    static let applicationData: [UInt8] = {
        let aid: [UInt8] = h("D2760001240103040006123456780000")
        let fingerprint = [UInt8](1...20)
        var d = TLV(0xC0, h("7D000BFE080000FF0000")).encoded
        d += TLV(0xC1, [0x16] + OpenPGP.Curve.ed25519.oid).encoded
        d += TLV(0xC2, h("010800001100")).encoded
        d += TLV(0xC3, h("010800001100")).encoded
        d += TLV(0xDA, h("010800001100")).encoded
        d += TLV(0xC4, h("007F7F7F030003")).encoded
        d += TLV(0xC5, fingerprint + [UInt8](repeating: 0, count: 60)).encoded
        d += TLV(0xC6, [UInt8](repeating: 0, count: 80)).encoded
        d += TLV(0xCD, [0x65, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 12)).encoded
        d += TLV(0xDE, h("0101020003008100")).encoded
        d += TLV(0xD6, [0x01, 0x20]).encoded + TLV(0xD7, [0x00, 0x20]).encoded
        d += TLV(0xD8, [0x02, 0x20]).encoded + TLV(0xD9, [0x00, 0x20]).encoded
        let body =
            TLV(0x4F, aid).encoded + TLV(0x5F52, h("0073000080059000")).encoded
            + TLV(0x73, d).encoded
        return TLV(0x6E, body).encoded
    }()

    @Test func applicationRelatedData() throws {
        let data = try OpenPGPApplicationData(Self.applicationData)
        #expect(data.aid.versionText == "3.4")
        #expect(data.aid.manufacturer == 6)
        #expect(data.aid.serial == 12_345_678)
        #expect(data.extendedCapabilities.hasKDF)
        #expect(data.extendedCapabilities.canChangeAlgorithmAttributes)
        #expect(data.extendedCapabilities.challengeMaxLength == 0x0BFE)
        #expect(
            data.passwordStatus
                == OpenPGPPasswordStatus(
                    pinValidForSeveralSignatures: false, maxLengthUser: 127, maxLengthReset: 127, maxLengthAdmin: 127,
                    triesUser: 3, triesReset: 0, triesAdmin: 3))
        #expect(data.keys.map(\.slot) == [.signature, .decryption, .authentication, .attestation])
        let sig = try #require(data.key(.signature))
        #expect(sig.attributes == .ecc(algorithm: 0x16, curve: .ed25519, withPublicKey: false))
        #expect(sig.attributes?.description == "Ed25519")
        #expect(sig.fingerprint == [UInt8](1...20))
        #expect(sig.generationTime == 0x6500_0000)
        #expect(sig.status == .generated && sig.hasKey)
        #expect(sig.touchPolicy == .on)
        #expect(data.key(.decryption)?.attributes?.description == "RSA2048")
        #expect(data.key(.decryption)?.hasKey == false)
        #expect(data.key(.authentication)?.touchPolicy == .fixed)
    }

    /// Older cards put the discretionary objects straight into 6E.
    @Test func discretionaryObjectsWithoutTheirTemplate() throws {
        let outer = try TLV.parseAll(Self.applicationData)[0].children()
        let flat = outer.filter { $0.tag != 0x73 }.flatMap(\.encoded) + (try outer[2].children()).flatMap(\.encoded)
        let data = try OpenPGPApplicationData(TLV(0x6E, flat).encoded)
        #expect(data.key(.signature)?.touchPolicy == .on)
    }

    @Test func algorithmAttributes() throws {
        #expect(try OpenPGPAlgorithmAttributes(h("010C00001100")) == .rsa(bits: 3072))
        let p256 = try OpenPGPAlgorithmAttributes([0x13] + OpenPGP.Curve.secp256r1.oid + [0xFF])
        #expect(p256 == .ecc(algorithm: 0x13, curve: .secp256r1, withPublicKey: true))
        #expect(p256.encoded == [0x13] + OpenPGP.Curve.secp256r1.oid + [0xFF])
        #expect(OpenPGPAlgorithmAttributes.ecc(.x25519, slot: .decryption).description == "X25519")
        #expect(OpenPGPAlgorithmAttributes.ecc(.secp384r1, slot: .signature).encoded.first == 0x13)
    }

    @Test func cardholderAndName() throws {
        let answer = TLV(
            0x65,
            TLV(0x5B, Array("Doe<<Jane<Ann".utf8)).encoded + TLV(0x5F2D, Array("en".utf8)).encoded
                + TLV(0x5F35, [0x32]).encoded
        ).encoded
        let holder = try OpenPGPCardholder(answer)
        #expect(holder.displayName == "Jane Ann Doe")
        #expect(holder.language == Array("en".utf8))
        #expect(holder.sex == 0x32)
    }

    @Test func publicKeys() throws {
        let key = try AsymmetricPrivateKey.generate(.p256)
        let point = try #require(key.publicKey.ecPoint)
        let answer = TLV(0x7F49, TLV(0x86, point).encoded).encoded
        let parsed = try OpenPGPPublicKey(answer, attributes: .ecc(.secp256r1, slot: .signature))
        #expect(try parsed.asymmetricKey() == key.publicKey)
        #expect(parsed.encoded == answer)
        let offCurve = TLV(0x7F49, TLV(0x86, [0x04] + [UInt8](repeating: 1, count: 64)).encoded).encoded
        #expect(throws: OpenPGPError.malformed(Malformation(.publicKey, .notOnCurve))) {
            try OpenPGPPublicKey(offCurve, attributes: .ecc(.secp256r1, slot: .signature)).asymmetricKey()
        }
        #expect(throws: OpenPGPError.malformed(Malformation(.publicKey, .incomplete))) {
            try OpenPGPPublicKey(TLV(0x7F49, TLV(0x81, [1]).encoded).encoded, attributes: .rsa(bits: 2048))
        }
    }

    @Test func kdf() throws {
        #expect(try OpenPGPKDF(TLV(0x81, [0x00]).encoded).isEnabled == false)
        let s2k = TLV(0x81, [0x03]).encoded + TLV(0x82, [0x08]).encoded + TLV(0x83, [0x00, 0x78, 0x00, 0x00]).encoded
        let on = try OpenPGPKDF(TLV(0xF9, s2k).encoded)
        #expect(on.isEnabled && on.hashAlgorithm == 0x08 && on.iterations == 0x78_0000)
    }

    @Test(
        arguments: [
            ([], Malformation.Part.openpgpAnswer),
            ([0x6E, 0x05, 0x4F], .openpgpAnswer),
            ([0x6E, 0x00], .openpgpAID),
            ([0x6E, 0x03, 0x4F, 0x01, 0xD2], .openpgpAID),
            ([0x65, 0x01, 0x00], .openpgpAnswer),
        ] as [([UInt8], Malformation.Part)])
    func garbageApplicationData(bytes: [UInt8], part: Malformation.Part) {
        do {
            _ = try OpenPGPApplicationData(bytes)
            Issue.record("parsed garbage")
        } catch .malformed(let m) {
            #expect(m.part == part)
        } catch {
            Issue.record("\(error)")
        }
    }

    /// Every prefix and every one-byte change of a good answer parses or throws a malformation; none crashes.
    @Test func mutatedAnswersNeverCrash() {
        let good = Self.applicationData
        var inputs = (0..<good.count).map { Array(good.prefix($0)) }
        for i in stride(from: 0, to: good.count, by: 3) {
            var changed = good
            changed[i] ^= 0xA5
            inputs.append(changed)
        }
        for input in inputs {
            do {
                _ = try OpenPGPApplicationData(input)
            } catch .malformed {
            } catch {
                Issue.record("\(error) for \(input.hex)")
            }
            _ = try? OpenPGPCardholder(input)
            _ = try? OpenPGPKDF(input)
            _ = try? OpenPGPPublicKey(input, attributes: .rsa(bits: 2048))
            _ = try? OpenPGPAlgorithmAttributes(Array(input.prefix(12)))
            _ = try? OpenPGPPasswordStatus(Array(input.prefix(7)))
        }
    }
}

/// Bytes from hex written in the test.
private func h(_ text: String) -> [UInt8] {
    (try? Hex.decode(text)) ?? []
}
