import KeyKit
import Testing

private func bytes(_ hex: String) -> [UInt8] {
    try! Hex.decode(hex)
}

/// DER ECDSA-Sig-Value: SEQUENCE { INTEGER r, INTEGER s } for short (< 128 byte) contents.
private func derSignature(r: [UInt8], s: [UInt8]) -> [UInt8] {
    func integer(_ value: [UInt8]) -> [UInt8] {
        var v = Array(value.drop { $0 == 0 })
        if v.isEmpty || v[0] & 0x80 != 0 { v.insert(0, at: 0) }
        return [0x02, UInt8(v.count)] + v
    }
    let body = integer(r) + integer(s)
    return [0x30, UInt8(body.count)] + body
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}

@Suite struct CryptoRandomTests {
    /// Random bytes of any length, every byte written (lengths around the generator's 8-byte words), and two
    /// draws of 32 bytes never the same.
    @Test func randomBytes() {
        for count in [0, 1, 7, 8, 9, 16, 33] {
            #expect(Crypto.random(count).count == count)
        }
        // Each position is non-zero in some of 64 draws (a byte left unwritten would stay 0).
        var seen = [UInt8](repeating: 0, count: 13)
        for _ in 0..<64 { for (i, b) in Crypto.random(13).enumerated() { seen[i] |= b } }
        #expect(!seen.contains(0))
        #expect(Crypto.random(32) != Crypto.random(32))
    }
}

@Suite struct CryptoHKDFTests {
    // RFC 5869 appendix A, test cases 1 and 3.
    @Test(arguments: [
        (
            "000102030405060708090a0b0c", "f0f1f2f3f4f5f6f7f8f9",
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
        ),
        ("", "", "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
    ])
    func rfc5869(salt: String, info: String, okm: String) throws {
        let ikm = [UInt8](repeating: 0x0B, count: 22)
        #expect(try Crypto.hkdfSHA256(ikm: ikm, salt: bytes(salt), info: bytes(info), length: 42) == bytes(okm))
    }

    /// Extract-then-expand written out with HMAC, as a cross-check for other lengths and inputs.
    @Test(arguments: [0, 1, 31, 32, 33, 64, 100])
    func matchesHMACConstruction(length: Int) throws {
        let ikm = Array(0..<UInt8(length % 40))
        let salt = length % 2 == 0 ? [] : Array(repeating: UInt8(7), count: length)
        let info = Array("CTAP2 HMAC key".utf8)
        let outputLength = max(length, 1)
        let prk = Crypto.hmac(.sha256, key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, data: ikm)
        var okm = [UInt8]()
        var block = [UInt8]()
        var counter: UInt8 = 1
        while okm.count < outputLength {
            block = Crypto.hmac(.sha256, key: prk, data: block + info + [counter])
            okm += block
            counter += 1
        }
        let derived = try Crypto.hkdfSHA256(ikm: ikm, salt: salt, info: info, length: outputLength)
        #expect(derived == Array(okm.prefix(outputLength)))
    }

    @Test func outputLengthIsChecked() {
        #expect(throws: CryptoError.self) { try Crypto.hkdfSHA256(ikm: [1], salt: [], info: [], length: 0) }
        #expect(throws: CryptoError.self) { try Crypto.hkdfSHA256(ikm: [1], salt: [], info: [], length: 255 * 32 + 1) }
        #expect((try? Crypto.hkdfSHA256(ikm: [1], salt: [], info: [], length: 255 * 32))?.count == 255 * 32)
    }
}

@Suite struct CryptoAESTests {
    // NIST SP 800-38A appendix F: the four-block example message.
    static let message = bytes(
        """
        6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
        30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710
        """)

    // F.2.5 CBC-AES256.Encrypt and F.2.6 CBC-AES256.Decrypt.
    @Test func cbcAES256() throws {
        let key = bytes("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
        let iv = bytes("000102030405060708090a0b0c0d0e0f")
        let ciphertext = bytes(
            """
            f58c4c04d6e5f1ba779eabfb5f7bfbd6 9cfc4e967edb808d679f777bc6702c7d
            39f23369a9d9bacfa530e26304231461 b2eb05e2c39be9fcda6c19078c6a9d1b
            """)
        #expect(try Crypto.aes256CBCEncrypt(key: key, iv: iv, Self.message) == ciphertext)
        #expect(try Crypto.aes256CBCDecrypt(key: key, iv: iv, ciphertext) == Self.message)
        #expect(try Crypto.aes256CBCEncrypt(key: key, iv: iv, []) == [])
    }

    @Test func cbcRejectsBadLengths() {
        let key = [UInt8](repeating: 1, count: 32)
        let iv = [UInt8](repeating: 2, count: 16)
        let block = [UInt8](repeating: 3, count: 16)
        #expect(throws: CryptoError.self) { try Crypto.aes256CBCEncrypt(key: key, iv: iv, Array(block.prefix(15))) }
        #expect(throws: CryptoError.self) { try Crypto.aes256CBCDecrypt(key: key, iv: iv, block + [0]) }
        #expect(throws: CryptoError.self) { try Crypto.aes256CBCEncrypt(key: Array(key.prefix(16)), iv: iv, block) }
        #expect(throws: CryptoError.self) { try Crypto.aes256CBCDecrypt(key: key, iv: Array(iv.prefix(8)), block) }
        #expect(throws: CryptoError.self) { try Crypto.aes256CBCEncrypt(key: key, iv: [], block) }
    }

    // F.1.1 ECB-AES128.Encrypt and F.1.2 ECB-AES128.Decrypt.
    @Test func ecbAES128() throws {
        let key = bytes("2b7e151628aed2a6abf7158809cf4f3c")
        let ciphertext = bytes(
            """
            3ad77bb40d7a3660a89ecaf32466ef97 f5d3d58503b9699de785895a96fdbaaf
            43b1cd7f598ece23881b00e3ed030688 7b0c785e27e8ad3f8223207104725dd4
            """)
        #expect(try Crypto.aes128ECBEncrypt(key: key, Self.message) == ciphertext)
        #expect(try Crypto.aes128ECBDecrypt(key: key, ciphertext) == Self.message)
        #expect(try Crypto.aes128ECBEncrypt(key: key, Array(Self.message.prefix(16))) == Array(ciphertext.prefix(16)))
    }

    // FIPS-197 appendix C.1 (AES-128).
    @Test func fips197AES128() throws {
        let key = bytes("000102030405060708090a0b0c0d0e0f")
        let plaintext = bytes("00112233445566778899aabbccddeeff")
        let ciphertext = bytes("69c4e0d86a7b0430d8cdb78070b4c55a")
        #expect(try Crypto.aes128ECBEncrypt(key: key, plaintext) == ciphertext)
        #expect(try Crypto.aes128ECBDecrypt(key: key, ciphertext) == plaintext)
    }

    @Test func ecbRejectsBadLengths() {
        #expect(throws: CryptoError.self) {
            try Crypto.aes128ECBEncrypt(key: [UInt8](repeating: 0, count: 32), [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: CryptoError.self) {
            try Crypto.aes128ECBDecrypt(key: [UInt8](repeating: 0, count: 16), [1, 2, 3])
        }
    }
}

@Suite struct CryptoP256Tests {
    // RFC 5903 section 8.1 (256-bit random ECP group): initiator i, responder r, shared g^ir.
    @Test func ecdhRFC5903() throws {
        let i = try P256PrivateKey(
            raw: bytes("C88F01F5 10D9AC3F 70A292DA A2316DE5 44E9AAB8 AFE84049 C62A9C57 862D1433"))
        let r = try P256PrivateKey(
            raw: bytes("C6EF9C5D 78AE012A 011164AC B397CE20 88685D8F 06BF9BE0 B283AB46 476BEE53"))
        #expect(
            i.publicKey
                == (try P256PublicKey(
                    x: bytes("DAD0B653 94221CF9 B051E1FE CA5787D0 98DFE637 FC90B9EF 945D0C37 72581180"),
                    y: bytes("5271A046 1CDB8252 D61F1C45 6FA3E59A B1F45B33 ACCF5F58 389E0577 B8990BB3"))))
        #expect(
            r.publicKey
                == (try P256PublicKey(
                    x: bytes("D12DFB52 89C8D4F8 1208B702 70398C34 2296970A 0BCCB74C 736FC755 4494BF63"),
                    y: bytes("56FBF3CA 366CC23E 8157854C 13C58D6A AC23F046 ADA30F83 53E74F33 039872AB"))))
        let shared = bytes("D6840F6B 42F6EDAF D13116E0 E1256520 2FEF8E9E CE7DCE03 812464D0 4B9442DE")
        #expect(try i.sharedSecret(with: r.publicKey) == shared)
        #expect(try r.sharedSecret(with: i.publicKey) == shared)
    }

    @Test func ecdhAgreesBetweenFreshKeys() throws {
        let a = P256PrivateKey()
        let b = P256PrivateKey()
        let secret = try a.sharedSecret(with: b.publicKey)
        #expect(secret.count == 32)
        #expect(try b.sharedSecret(with: a.publicKey) == secret)
    }

    @Test func signThenVerify() {
        let key = P256PrivateKey()
        let message = Array("clientDataHash and authData".utf8)
        let signature = key.sign(message)
        #expect(signature.first == 0x30 && signature.count >= 8 && signature.count <= 72)
        #expect(key.publicKey.verify(signature: signature, message: message))
        #expect(!key.publicKey.verify(signature: signature, message: message + [0]))
        #expect(!key.publicKey.verify(signature: signature, message: Array(message.dropLast())))
        var changed = signature
        changed[changed.count - 1] ^= 0x01
        #expect(!key.publicKey.verify(signature: changed, message: message))
        #expect(!P256PrivateKey().publicKey.verify(signature: signature, message: message))
        // ECDSA is randomized, yet both signatures verify.
        #expect(key.publicKey.verify(signature: key.sign(message), message: message))
        #expect(key.publicKey.verify(signature: key.sign([]), message: []))
    }

    @Test func malformedSignaturesAreFalse() {
        let key = P256PrivateKey()
        let message: [UInt8] = [1, 2, 3]
        let signature = key.sign(message)
        for bad in [
            [], [0x30], [0x30, 0x00], [UInt8](repeating: 0xFF, count: 64), signature + [0x00],
            Array(signature.dropLast()), derSignature(r: [0], s: [1]), derSignature(r: [1], s: [0]),
        ] {
            #expect(!key.publicKey.verify(signature: bad, message: message))
        }
    }

    // RFC 6979 appendix A.2.5: P-256, SHA-256, message "sample".
    @Test func rfc6979Signature() throws {
        let key = try P256PrivateKey(raw: bytes("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721"))
        let expected = try P256PublicKey(
            x: bytes("60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6"),
            y: bytes("7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299"))
        #expect(key.publicKey == expected)
        let signature = derSignature(
            r: bytes("EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716"),
            s: bytes("F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"))
        #expect(signature.count == 72)
        #expect(expected.verify(signature: signature, message: Array("sample".utf8)))
        #expect(!expected.verify(signature: signature, message: Array("test".utf8)))
    }

    @Test func publicKeyValidation() throws {
        let valid = P256PrivateKey().publicKey
        // (x, y+1) is not on the curve.
        var y = valid.y
        y[31] &+= 1
        #expect(throws: CryptoError.self) { try P256PublicKey(x: valid.x, y: y) }
        #expect(throws: CryptoError.self) {
            try P256PublicKey(x: [UInt8](repeating: 0, count: 32), y: [UInt8](repeating: 0, count: 32))
        }
        #expect(throws: CryptoError.self) { try P256PublicKey(x: Array(valid.x.prefix(31)), y: valid.y) }
        #expect(throws: CryptoError.self) { try P256PublicKey(x: valid.x, y: valid.y + [0]) }
        #expect(throws: CryptoError.self) { try P256PublicKey(uncompressed: Array(valid.uncompressed.prefix(64))) }
        #expect(throws: CryptoError.self) { try P256PublicKey(uncompressed: [0x02] + valid.uncompressed.dropFirst()) }
        #expect(throws: CryptoError.self) { try P256PublicKey(uncompressed: []) }
        #expect(try P256PublicKey(uncompressed: valid.uncompressed) == valid)
        #expect(try P256PublicKey(x: valid.x, y: valid.y) == valid)
        #expect(valid.uncompressed.count == 65 && valid.uncompressed[0] == 0x04)
    }

    @Test func spkiRoundTrip() throws {
        let key = P256PrivateKey().publicKey
        let spki = key.spki
        #expect(spki.count == 91)
        #expect(try P256PublicKey(spki: spki) == key)
        #expect(throws: CryptoError.self) { try P256PublicKey(spki: []) }
        #expect(throws: CryptoError.self) { try P256PublicKey(spki: Array(spki.dropLast())) }
        #expect(throws: CryptoError.self) { try P256PublicKey(spki: spki + [0]) }
        #expect(throws: CryptoError.self) { try P256PublicKey(spki: [0x30, 0x03, 0x02, 0x01, 0x00]) }
        // An Ed25519 SubjectPublicKeyInfo is well formed but not a P-256 key.
        let ed25519 = bytes("302a300506032b6570032100") + [UInt8](repeating: 0x11, count: 32)
        #expect(throws: CryptoError.self) { try P256PublicKey(spki: ed25519) }
    }

    @Test func privateKeyValidation() throws {
        let key = P256PrivateKey()
        #expect(key.raw.count == 32)
        let copy = try P256PrivateKey(raw: key.raw)
        #expect(copy.raw == key.raw && copy.publicKey == key.publicKey)
        #expect(P256PrivateKey().raw != key.raw)
        let n = bytes("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551")
        var nMinus1 = n
        nMinus1[31] -= 1
        #expect((try? P256PrivateKey(raw: nMinus1)) != nil)
        #expect(throws: CryptoError.self) { try P256PrivateKey(raw: n) }
        #expect(throws: CryptoError.self) { try P256PrivateKey(raw: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: CryptoError.self) { try P256PrivateKey(raw: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: CryptoError.self) { try P256PrivateKey(raw: [UInt8](repeating: 1, count: 33)) }
        #expect(throws: CryptoError.self) { try P256PrivateKey(raw: []) }
    }

    @Test func privateKeyBytesStayOutOfDescriptions() {
        let key = P256PrivateKey()
        let secret = key.raw.hex
        for text in ["\(key)", String(describing: key), String(reflecting: key), "\([key])"] {
            #expect(!text.lowercased().contains(secret))
        }
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.lowercased().contains(secret))
    }
}

@Suite struct CryptoEd25519Tests {
    // RFC 8032 section 7.1, tests 1 (empty message) and 2 (one byte, 0x72).
    static let vectors: [(key: String, message: String, signature: String)] = [
        (
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        ),
        (
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
        ),
    ]

    @Test(arguments: 0..<2)
    func rfc8032(index: Int) throws {
        let vector = Self.vectors[index]
        let key = try Ed25519PublicKey(raw: bytes(vector.key))
        let message = bytes(vector.message)
        let signature = bytes(vector.signature)
        #expect(key.verify(signature: signature, message: message))
        #expect(!key.verify(signature: signature, message: message + [0x00]))
        var changed = signature
        changed[10] ^= 0x40
        #expect(!key.verify(signature: changed, message: message))
        #expect(!key.verify(signature: Array(signature.dropLast()), message: message))
        #expect(!key.verify(signature: [], message: message))
        let other = try Ed25519PublicKey(raw: bytes(Self.vectors[1 - index].key))
        #expect(!other.verify(signature: signature, message: message))
    }

    @Test func keyLength() {
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(raw: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(raw: [UInt8](repeating: 1, count: 33)) }
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(raw: []) }
    }
}

@Suite struct CryptoX509Tests {
    @Test func selfSignedCertificate() throws {
        let key = P256PrivateKey()
        let certificate = try X509Certificate.selfSigned(
            key: key, commonName: "ykterm virtual key", serial: 0x1234_5678_9ABC)
        let parsed = try X509Certificate(der: certificate.der)
        #expect(parsed.der == certificate.der)
        #expect(parsed.publicKey == key.publicKey)
        #expect(parsed.subject == "CN=ykterm virtual key")
        #expect(parsed.isSigned(by: key.publicKey))
        #expect(!parsed.isSigned(by: P256PrivateKey().publicKey))
        // The certificate carries OpenSSL's own SubjectPublicKeyInfo encoding, which `spki` matches byte for byte.
        #expect(contains(certificate.der, key.publicKey.spki))
        // The serial appears as a DER INTEGER.
        #expect(contains(certificate.der, [0x02, 0x06, 0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC]))
    }

    @Test func subjectKeepsUTF8AndEscapesSeparators() throws {
        let certificate = try X509Certificate.selfSigned(key: P256PrivateKey(), commonName: "Åsa, key+1", serial: 1)
        #expect(certificate.subject == "CN=Åsa\\, key\\+1")
    }

    @Test func largeSerial() throws {
        let key = P256PrivateKey()
        let certificate = try X509Certificate.selfSigned(key: key, commonName: "serial", serial: UInt64.max)
        #expect(certificate.isSigned(by: key.publicKey))
        #expect(contains(certificate.der, [0x02, 0x09, 0x00] + [UInt8](repeating: 0xFF, count: 8)))
    }

    @Test func tamperedCertificateDoesNotVerify() throws {
        let key = P256PrivateKey()
        let der = try X509Certificate.selfSigned(key: key, commonName: "tamper", serial: 7).der
        // Change one byte of the subject's common name (the last of the two copies; the issuer's comes first).
        let name = Array("tamper".utf8)
        let at = try #require((0...(der.count - name.count)).last { Array(der[$0..<($0 + name.count)]) == name })
        var changed = der
        changed[at] = UInt8(ascii: "d")
        let certificate = try X509Certificate(der: changed)
        #expect(certificate.subject == "CN=damper")
        #expect(!certificate.isSigned(by: key.publicKey))
    }

    @Test func garbageIsRejected() throws {
        let der = try X509Certificate.selfSigned(key: P256PrivateKey(), commonName: "x", serial: 1).der
        for bad in [
            [], [0x30, 0x03, 0x01, 0x02], [UInt8](repeating: 0x30, count: 100), Array(der.dropLast()),
            der + [0x00], Array(der.prefix(der.count / 2)), P256PrivateKey().publicKey.spki,
        ] {
            #expect(throws: CryptoError.self) { try X509Certificate(der: bad) }
        }
    }
}
