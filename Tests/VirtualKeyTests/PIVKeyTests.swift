import KeyKit
import Testing
import VirtualKey

#if canImport(Glibc)
import Glibc
#endif

/// PKCS #1 v1.5 padding of a SHA-256 digest to `length` bytes (RFC 8017 section 9.2), done host-side as PIV
/// clients do.
private func pkcs1(_ message: [UInt8], length: Int) -> [UInt8] {
    let digestInfo =
        pivHex("30 31 30 0D 06 09 60 86 48 01 65 03 04 02 01 05 00 04 20")
        + SignatureDigest.sha256.hash(message)
    return [0x00, 0x01] + [UInt8](repeating: 0xFF, count: length - 3 - digestInfo.count) + [0x00] + digestInfo
}

/// The public key a GENERATE ASYMMETRIC answer (7F49) or metadata (04) carries, as a KeyKit key.
private func publicKey(_ tlvs: [UInt8], _ type: AsymmetricKeyType) throws -> AsymmetricPublicKey {
    let parts = try TLV.parseAll(tlvs).dictionary
    switch type {
    case .rsa:
        return try AsymmetricPublicKey(rsaModulus: try #require(parts[0x81]), exponent: try #require(parts[0x82]))
    case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
        return try AsymmetricPublicKey(ecPoint: try #require(parts[0x86]), type: type)
    case .ed25519, .x25519: return try AsymmetricPublicKey(raw: try #require(parts[0x86]), type: type)
    }
}

private func generated(_ r: Response, _ type: AsymmetricKeyType) throws -> AsymmetricPublicKey {
    #expect(r.status == .ok)
    let outer = try TLV.parseAll(r.data)
    #expect(outer.count == 1 && outer[0].tag == 0x7F49)
    return try publicKey(outer[0].value, type)
}

@Suite struct PIVKeyTests {
    @Test func generateP256AndSign() async throws {
        let card = try await PIVCard()
        #expect(try await card.generate(.authentication, .eccP256).status == .securityConditionNotSatisfied)
        #expect(try await card.authenticate(.aes192) == .ok)
        let key = try generated(try await card.generate(.authentication, .eccP256), .p256)
        #expect(key.ecPoint?.count == 65)
        let metadata = try await card.metadata(0x9A)
        #expect(metadata[0x01] == [0x11] && metadata[0x02] == [0x02, 0x01] && metadata[0x03] == [0x01])
        #expect(try publicKey(try #require(metadata[0x04]), .p256) == key)

        let message = Array("sign me".utf8)
        let digest = SignatureDigest.sha256.hash(message)
        // PIN policy "once": refused before VERIFY, then as often as asked.
        #expect(try await card.use(.authentication, .eccP256, digest).status == .securityConditionNotSatisfied)
        #expect(try await card.verify().status == .ok)
        for _ in 0..<2 {
            let signature = try PIVCard.result(try await card.use(.authentication, .eccP256, digest))
            #expect(key.verify(signature: signature, message: message, digest: .sha256))
        }
        // The algorithm must be the key's; longer than the curve is refused.
        #expect(try await card.use(.authentication, .eccP384, digest).status == .incorrectParameters)
        #expect(try await card.use(.authentication, .eccP256, digest + digest).status == .incorrectParameters)
        #expect(try await card.use(.signature, .eccP256, digest).status == .incorrectParameters)
    }

    @Test func generateP384AndSignSHA384() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        let key = try generated(try await card.generate(.keyManagement, .eccP384), .p384)
        #expect(try await card.verify().status == .ok)
        let message = Array("P-384".utf8)
        let digest = SignatureDigest.sha384.hash(message)
        let signature = try PIVCard.result(try await card.use(.keyManagement, .eccP384, digest))
        #expect(key.verify(signature: signature, message: message, digest: .sha384))
    }

    @Test func rsa2048RawOperationSignsPKCS1() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        // 9E: PIN policy "never" by default.
        let key = try generated(try await card.generate(.cardAuthentication, .rsa2048), .rsa(bits: 2048))
        #expect(key.rsaModulus?.count == 256 && key.rsaExponent == [0x01, 0x00, 0x01])
        let message = Array("RSA".utf8)
        let block = pkcs1(message, length: 256)
        let signature = try PIVCard.result(try await card.use(.cardAuthentication, .rsa2048, block))
        #expect(signature.count == 256)
        #expect(key.verify(signature: signature, message: message, digest: .sha256, padding: .pkcs1))
        #expect(!key.verify(signature: signature, message: Array("RSB".utf8)))
        #expect(try await card.use(.cardAuthentication, .rsa2048, [0x00, 0x01]).status == .incorrectParameters)
        let metadata = try await card.metadata(0x9E)
        #expect(metadata[0x02] == [0x01, 0x01])
        #expect(try publicKey(try #require(metadata[0x04]), .rsa(bits: 2048)) == key)
    }

    @Test func ed25519ImportedSignsRFC8032Vector1() async throws {
        // RFC 8032 section 7.1, TEST 1: the empty message.
        let secret = pivHex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
        let expectedPublic = pivHex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let expectedSignature = pivHex(
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                + "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        let data = TLV(0x07, secret).encoded + TLV(0xAA, [0x01]).encoded
        #expect(try await card.send(PIV.Ins.importKey, p1: 0xE0, p2: 0x9C, data).status == .ok)
        let metadata = try await card.metadata(0x9C)
        #expect(metadata[0x01] == [0xE0] && metadata[0x02] == [0x01, 0x01] && metadata[0x03] == [0x02])
        #expect(metadata[0x04] == TLV(0x86, expectedPublic).encoded)
        #expect(try PIVCard.result(try await card.use(.signature, .ed25519, [])) == expectedSignature)
        // Ed25519 came with 5.7.
        let old = try await PIVCard(state: .yubiKey5NFC(version: Version(5, 4, 3)))
        #expect(try await old.authenticate(.tripleDES) == .ok)
        #expect(try await old.generate(.signature, .ed25519).status == .incorrectParameters)
    }

    @Test func x25519ImportedAgreesRFC7748() async throws {
        // RFC 7748 section 6.1: Alice's key in the slot, Bob's public key sent.
        let alice = pivHex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
        let bob = pivHex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let shared = pivHex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.send(PIV.Ins.importKey, p1: 0xE1, p2: 0x9D, TLV(0x08, alice).encoded).status == .ok)
        let alicePublic = pivHex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(try await card.metadata(0x9D)[0x04] == TLV(0x86, alicePublic).encoded)
        #expect(try await card.verify().status == .ok)
        #expect(try PIVCard.result(try await card.use(.keyManagement, .x25519, bob, exponentiation: true)) == shared)
        // X25519 does not sign.
        #expect(try await card.use(.keyManagement, .x25519, bob).status == .incorrectParameters)
    }

    @Test func ecdhWithP256() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        let scalar = SignatureDigest.sha256.hash(Array("slot key".utf8))
        #expect(try await card.send(PIV.Ins.importKey, p1: 0x11, p2: 0x82, TLV(0x06, scalar).encoded).status == .ok)
        let host = P256PrivateKey()
        #expect(try await card.verify().status == .ok)
        let answer = try await card.use(
            PIV.Slot(rawValue: 0x82), .eccP256, host.publicKey.uncompressed,
            exponentiation: true)
        let secret = try PIVCard.result(answer)
        let point = try AsymmetricPrivateKey.ec(.p256, scalar: scalar).publicKey.ecPoint
        let slotKey = try P256PublicKey(uncompressed: try #require(point))
        #expect(secret == (try host.sharedSecret(with: slotKey)))
    }

    @Test func pinPolicyAlwaysWantsAVerifyBeforeEachUse() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        _ = try generated(try await card.generate(.signature, .eccP256), .p256)
        #expect(try await card.metadata(0x9C)[0x02] == [0x03, 0x01])
        let digest = [UInt8](repeating: 0x11, count: 32)
        #expect(try await card.verify().status == .ok)
        #expect(try await card.use(.signature, .eccP256, digest).status == .ok)
        #expect(try await card.use(.signature, .eccP256, digest).status == .securityConditionNotSatisfied)
        #expect(try await card.verify().status == .ok)
        #expect(try await card.use(.signature, .eccP256, digest).status == .ok)
    }

    @Test func touchPolicies() async throws {
        let card = try await PIVCard(touchDelay: 0.2)
        #expect(try await card.authenticate(.aes192) == .ok)
        _ = try generated(try await card.generate(.cardAuthentication, .eccP256, touch: .always), .p256)
        let cached = try await card.generate(PIV.Slot(rawValue: 0x83), .eccP256, pin: .never, touch: .cached)
        _ = try generated(cached, .p256)
        #expect(try await card.metadata(0x83)[0x02] == [0x01, 0x03])
        let digest = [UInt8](repeating: 0x22, count: 32)
        func elapsed(_ slot: PIV.Slot) async throws -> Double {
            let start = ThreadCondition.monotonicNow()
            #expect(try await card.use(slot, .eccP256, digest).status == .ok)
            return ThreadCondition.monotonicNow() - start
        }
        #expect(try await elapsed(PIV.Slot(rawValue: 0x83)) >= 0.2)
        // A touch counts for 15 seconds with "cached", for none with "always".
        #expect(try await elapsed(PIV.Slot(rawValue: 0x83)) < 0.2)
        #expect(try await elapsed(.cardAuthentication) >= 0.2)
        #expect(try await elapsed(.cardAuthentication) >= 0.2)
    }

    @Test func badPoliciesAndAlgorithmsAreRefused() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.generate(.authentication, .aes128).status == .incorrectParameters)
        #expect(try await card.generate(.authentication, .eccP256, pin: .matchOnce).status == .incorrectParameters)
        #expect(try await card.generate(PIV.Slot(rawValue: 0x9B), .eccP256).status.rawValue == 0x6A86)
        // An EC scalar of the wrong length, and one out of range.
        #expect(
            try await card.send(PIV.Ins.importKey, p1: 0x11, p2: 0x9A, TLV(0x06, [1, 2, 3]).encoded).status
                == .incorrectParameters)
        let outOfRange = TLV(0x06, [UInt8](repeating: 0xFF, count: 32)).encoded
        #expect(try await card.send(PIV.Ins.importKey, p1: 0x11, p2: 0x9A, outOfRange).status == .incorrectParameters)
    }
}
