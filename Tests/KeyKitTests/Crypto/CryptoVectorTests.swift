import Testing
@testable import KeyKit

@Suite struct CryptoVectorTests {
    func h(_ s: String) -> [UInt8] { try! Hex.decode(s) }

    /// FIPS 180-2 appendix examples (one block, two blocks) and the empty message, for each digest.
    @Test func shaFIPS180() {
        let abc = Array("abc".utf8)
        let two = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(Crypto.digest(.sha1, abc).hex == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Crypto.digest(.sha1, two).hex == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(Crypto.digest(.sha1, []).hex == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Crypto.digest(.sha256, abc).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Crypto.digest(.sha256, two).hex == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(Crypto.digest(.sha256, []).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Crypto.digest(.sha512, abc).hex == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(
            Crypto.digest(.sha512, []).hex == "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
                + "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e")
        // A million "a": many blocks through one call.
        #expect(
            Crypto.digest(.sha256, [UInt8](repeating: 0x61, count: 1_000_000)).hex
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// RFC 4231 test cases 1 and 6 (a key longer than the block, hashed first) and RFC 2202's case 6 for SHA-1,
    /// with the key as bytes and as SecretBytes.
    @Test func hmacRFC4231AndRFC2202() {
        let long = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        let cases: [(HashAlgorithm, [UInt8], [UInt8], String)] = [
            (
                .sha256, [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
            ),
            (
                .sha512, [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
                "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde"
                    + "daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"
            ),
            (
                .sha256, [UInt8](repeating: 0xaa, count: 131), long,
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
            (
                .sha512, [UInt8](repeating: 0xaa, count: 131), long,
                "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352"
                    + "6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"
            ),
            (.sha1, [UInt8](repeating: 0xaa, count: 80), long, "aa4ae5e15272d00e95705637ce8a3b55ed402112"),
        ]
        for (algorithm, key, data, mac) in cases {
            #expect(Crypto.hmac(algorithm, key: key, data: data).hex == mac, "\(algorithm)")
            #expect(Crypto.hmac(algorithm, key: SecretBytes(key), data: data).hex == mac, "\(algorithm)")
        }
    }

    @Test func hkdfRFC5869Case1() throws {
        let okm = try Crypto.hkdfSHA256(
            ikm: [UInt8](repeating: 0x0b, count: 22), salt: h("000102030405060708090a0b0c"),
            info: h("f0f1f2f3f4f5f6f7f8f9"), length: 42)
        #expect(okm.hex == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    @Test func aes256CBCSP80038A() throws {
        let key = h("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
        let iv = h("000102030405060708090a0b0c0d0e0f")
        let pt = h("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51")
        let ct = try Crypto.aes256CBCEncrypt(key: key, iv: iv, pt)
        #expect(ct.hex == "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d")
        #expect(try Crypto.aes256CBCDecrypt(key: key, iv: iv, ct) == pt)
        #expect(throws: CryptoError.self) { _ = try Crypto.aes256CBCEncrypt(key: key, iv: iv, [1, 2, 3]) }
    }

    @Test func aes128ECBSP80038A() throws {
        let key = h("2b7e151628aed2a6abf7158809cf4f3c")
        let ct = try Crypto.aes128ECBEncrypt(key: key, h("6bc1bee22e409f96e93d7e117393172a"))
        #expect(ct.hex == "3ad77bb40d7a3660a89ecaf32466ef97")
        #expect(try Crypto.aes128ECBDecrypt(key: key, ct).hex == "6bc1bee22e409f96e93d7e117393172a")
    }

    @Test func ecdhRFC5903P256() throws {
        let i = try P256PrivateKey(raw: h("C88F01F510D9AC3F70A292DAA2316DE544E9AAB8AFE84049C62A9C57862D1433"))
        let r = try P256PrivateKey(raw: h("C6EF9C5D78AE012A011164ACB397CE2088685D8F06BF9BE0B283AB46476BEE53"))
        #expect(i.publicKey.x.hex == "dad0b65394221cf9b051e1feca5787d098dfe637fc90b9ef945d0c3772581180")
        let z = try i.sharedSecret(with: r.publicKey)
        #expect(z.hex == "d6840f6b42f6edafd13116e0e12565202fef8e9ece7dce03812464d04b9442de")
        #expect(try r.sharedSecret(with: i.publicKey) == z)
    }

    @Test func ecdsaSignVerify() throws {
        let k = P256PrivateKey()
        let msg = Array("message".utf8)
        let sig = k.sign(msg)
        #expect(k.publicKey.verify(signature: sig, message: msg))
        #expect(!k.publicKey.verify(signature: sig, message: msg + [0]))
        var bad = sig
        bad[bad.count - 1] ^= 1
        #expect(!k.publicKey.verify(signature: bad, message: msg))
        #expect(!P256PrivateKey().publicKey.verify(signature: sig, message: msg))
        #expect(!k.publicKey.verify(signature: [0x30, 0x00], message: msg))
        #expect(try P256PublicKey(spki: k.publicKey.spki) == k.publicKey)
    }

    @Test func invalidPointsAndScalarsAreRejected() {
        #expect(throws: CryptoError.self) {
            _ = try P256PublicKey(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32))
        }
        #expect(throws: CryptoError.self) { _ = try P256PublicKey(uncompressed: [4, 1, 2]) }
        #expect(throws: CryptoError.self) { _ = try P256PrivateKey(raw: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: CryptoError.self) { _ = try P256PrivateKey(raw: [UInt8](repeating: 0xFF, count: 32)) }
    }

    @Test func ed25519RFC8032Test1() throws {
        let pk = try Ed25519PublicKey(raw: h("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        let sig = h(
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        )
        #expect(pk.verify(signature: sig, message: []))
        #expect(!pk.verify(signature: sig, message: [0]))
    }

    @Test func selfSignedCertificate() throws {
        let k = P256PrivateKey()
        let cert = try X509Certificate.selfSigned(key: k, commonName: "ykterm test", serial: 42)
        let parsed = try X509Certificate(der: cert.der)
        #expect(parsed.publicKey == k.publicKey)
        #expect(parsed.subject.contains("CN=ykterm test"))
        #expect(parsed.isSigned(by: k.publicKey))
        #expect(!parsed.isSigned(by: P256PrivateKey().publicKey))
        #expect(throws: CryptoError.self) { _ = try X509Certificate(der: [0x30, 0x03, 0x01, 0x02]) }
    }
}
