import KeyKit
import Testing

/// YubiHSM Auth's parsers and the YubiHSM 2's key derivations, against published vectors (RFC 4493's AES-CMAC,
/// the YubiHSM 2's default authentication key derived from "password") and ones computed with python's
/// cryptography from the specifications (SCP03's KDF, X9.63's KDF).
@Suite struct HSMAuthTests {
    static let rfc4493Key = try! Hex.decode("2b7e151628aed2a6abf7158809cf4f3c")
    static let rfc4493Message = try! Hex.decode(
        "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52ef"
            + "f69f2445df4f9b17ad2b417be66c3710")

    @Test(arguments: [
        (0, "bb1d6929e95937287fa37d129b756746"), (16, "070a16b46b4d4144f79bdd9dd04a287c"),
        (40, "dfa66747de9ae63030ca32611497c827"), (64, "51f0bebf7e3b9d92fc49741779363cfe"),
    ])
    func cmacRFC4493(length: Int, mac: String) throws {
        #expect(Hex.encode(try HSMAuth.cmac(key: Self.rfc4493Key, Array(Self.rfc4493Message.prefix(length)))) == mac)
    }

    @Test func derivedKeysAreTheYubiHSMDefaultAuthenticationKey() {
        let (enc, mac) = HSMAuth.derivedKeys(password: SecretBytes(utf8: "password"))
        #expect(Hex.encode(enc.copyBytes()) == "090b47dbed595654901dee1cc655e420")
        #expect(Hex.encode(mac.copyBytes()) == "592fd483f759e29909a04c4505d2ce0a")
    }

    @Test func symmetricSessionKeysAndCardCryptogram() throws {
        let enc = try Hex.decode("090b47dbed595654901dee1cc655e420")
        let mac = try Hex.decode("592fd483f759e29909a04c4505d2ce0a")
        let context = (0..<16).map { UInt8($0) }
        let keys = try HSMAuth.symmetricSessionKeys(enc: enc, mac: mac, context: context)
        #expect(Hex.encode(keys.enc) == "6a7481280688c6e0acf6226085a33167")
        #expect(Hex.encode(keys.mac) == "4387b8a1aef81f16782246452c6485c1")
        #expect(Hex.encode(keys.rmac) == "3a5b6bcce25badb45333b40160557a67")
        #expect(Hex.encode(try HSMAuth.cardCryptogram(sessionMAC: keys.mac, context: context)) == "0d89ea51bf1bf533")
        #expect(try HSMAuthSessionKeys(answer: keys.encoded) == keys)
        #expect(throws: HSMAuthError.malformed(Malformation(.sessionKeys, .lengthExpected(47, expected: 48)))) {
            _ = try HSMAuthSessionKeys(answer: Array(keys.encoded.dropLast()))
        }
        #expect("\(keys)".contains("redacted"))
    }

    @Test func x963() {
        let z = (0..<64).map { UInt8($0) }
        #expect(
            Hex.encode(HSMAuth.x963SHA256(z, sharedInfo: HSMAuth.asymmetricSharedInfo, length: 64))
                == "78e6afba798e338b0b6104dfc18e5b9efaabdf39c991de6879d9c7a0c21ff022"
                + "40998ce38b6d3dd3fd3fa9c7d956b67323d069af6457586600431b7ec83d38c7")
    }

    /// Both sides of the asymmetric handshake: the YubiHSM 2's (ECDH with its keys, the receipt) and the OCE's.
    @Test func asymmetricSessionKeysCheckTheReceipt() throws {
        let skOCE = P256PrivateKey()
        let eskOCE = P256PrivateKey()
        let skSD = P256PrivateKey()
        let eskSD = P256PrivateKey()
        let sdShared =
            try eskSD.sharedSecret(with: eskOCE.publicKey) + skSD.sharedSecret(with: skOCE.publicKey)
        let shs = HSMAuth.x963SHA256(sdShared, sharedInfo: HSMAuth.asymmetricSharedInfo, length: 64)
        let receipt = try HSMAuth.cmac(
            key: Array(shs[0..<16]), eskSD.publicKey.uncompressed + eskOCE.publicKey.uncompressed)
        let keys = try HSMAuth.asymmetricSessionKeys(
            ephemeralShared: try eskOCE.sharedSecret(with: eskSD.publicKey),
            staticShared: try skOCE.sharedSecret(with: skSD.publicKey), epkOCE: eskOCE.publicKey.uncompressed,
            epkSD: eskSD.publicKey.uncompressed, receipt: receipt)
        #expect(keys == HSMAuthSessionKeys(enc: Array(shs[16..<32]), mac: Array(shs[32..<48]), rmac: Array(shs[48...])))
        var wrong = receipt
        wrong[0] ^= 1
        #expect(
            try HSMAuth.asymmetricSessionKeys(
                ephemeralShared: try eskOCE.sharedSecret(with: eskSD.publicKey),
                staticShared: try skOCE.sharedSecret(with: skSD.publicKey), epkOCE: eskOCE.publicKey.uncompressed,
                epkSD: eskSD.publicKey.uncompressed, receipt: wrong) == nil)
    }

    @Test func paddedPasswords() throws {
        #expect(HSMAuth.paddedPassword("")?.copyBytes() == [UInt8](repeating: 0, count: 16))
        #expect(HSMAuth.paddedPassword("abc")?.copyBytes() == Array("abc".utf8) + [UInt8](repeating: 0, count: 13))
        #expect(HSMAuth.paddedPassword(String(repeating: "x", count: 16))?.count == 16)
        #expect(HSMAuth.paddedPassword(String(repeating: "x", count: 17)) == nil)
        #expect(
            HSMAuth.paddedPassword("00" + String(repeating: "ff", count: 15))?.copyBytes() == [0]
                + [UInt8](repeating: 0xFF, count: 15))
        #expect(HSMAuth.paddedPassword(String(repeating: "z", count: 32)) == nil)
    }

    @Test func credentialList() throws {
        let a = HSMAuthCredential(label: "sym", algorithm: .aes128, touchRequired: true, retries: 8)
        let b = HSMAuthCredential(label: "ünïcode", algorithm: .ecP256, touchRequired: false, retries: 3)
        let answer = TLV(0x72, a.entry).encoded + TLV(0x72, b.entry).encoded
        #expect(try HSMAuthCredential.list(answer) == [a, b])
        #expect(try HSMAuthCredential.list([]) == [])
        #expect(throws: HSMAuthError.malformed(Malformation(.hsmauthCredential, .value("40")))) {
            _ = try HSMAuthCredential(entry: [40, 0, 0x61, 8])
        }
        #expect(throws: HSMAuthError.malformed(Malformation(.hsmauthCredential, .tooShort(3, minimum: 4)))) {
            _ = try HSMAuthCredential(entry: [38, 0, 8])
        }
        #expect(throws: HSMAuthError.malformed(Malformation(.hsmauthCredential, .notUTF8))) {
            _ = try HSMAuthCredential(entry: [38, 0, 0xFF, 8])
        }
        #expect(throws: HSMAuthError.malformed(Malformation(.hsmauthCredential, .unexpectedTag(0x71)))) {
            _ = try HSMAuthCredential.list(TLV(0x71, a.entry).encoded)
        }
    }

    @Test func selectRetriesAndChallenges() throws {
        #expect(try HSMAuthSession.parseSelect([0x79, 3, 5, 7, 2]) == Version(5, 7, 2))
        #expect(throws: HSMAuthError.malformed(Malformation(.hsmauthSelect, .missing))) {
            _ = try HSMAuthSession.parseSelect([0x78, 3, 5, 7, 2])
        }
        #expect(throws: HSMAuthError.malformed(Malformation(.hsmauthSelect, .lengthExpected(2, expected: 3)))) {
            _ = try HSMAuthSession.parseSelect([0x79, 2, 5, 7])
        }
        #expect(try HSMAuthSession.parseRetries([8]) == 8)
        #expect(throws: HSMAuthError.malformed(Malformation(.hsmauthRetries, .length(0)))) {
            _ = try HSMAuthSession.parseRetries([])
        }
        #expect(try HSMAuthSession.parseChallenge(Array(repeating: 7, count: 8)).count == 8)
        let point = P256PrivateKey().publicKey.uncompressed
        #expect(try HSMAuthSession.parseChallenge(point) == point)
        #expect(throws: HSMAuthError.malformed(Malformation(.hsmauthChallenge, .length(9)))) {
            _ = try HSMAuthSession.parseChallenge(Array(repeating: 7, count: 9))
        }
    }
}
