import Testing
@testable import KeyKit

/// Single-block ECB of PIV management keys against published vectors.
@Suite struct PIVBlockCipherTests {
    private func h(_ s: String) -> [UInt8] { try! Hex.decode(s) }

    /// FIPS 197 appendix C: the same plaintext under AES-128, AES-192 and AES-256 with keys 00 01 02 ...
    @Test(arguments: [
        (BlockCipher.Algorithm.aes128, "000102030405060708090a0b0c0d0e0f", "69c4e0d86a7b0430d8cdb78070b4c55a"),
        (.aes192, "000102030405060708090a0b0c0d0e0f1011121314151617", "dda97ca4864cdfe06eaf70a0ec0d7191"),
        (
            .aes256, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "8ea2b7ca516745bfeafc49904b496089"
        ),
    ])
    func fips197(algorithm: BlockCipher.Algorithm, key: String, ciphertext: String) throws {
        let plaintext = h("00112233445566778899aabbccddeeff")
        #expect(try BlockCipher.encrypt(algorithm, key: h(key), block: plaintext) == h(ciphertext))
        #expect(try BlockCipher.decrypt(algorithm, key: h(key), block: h(ciphertext)) == plaintext)
    }

    /// 3DES with three equal keys is single DES: the classic worked example (key 133457799BBCDFF1,
    /// 0123456789ABCDEF -> 85E813540F0AB405).
    @Test func tripleDESWithEqualKeysIsDES() throws {
        let key = h("133457799BBCDFF1133457799BBCDFF1133457799BBCDFF1")
        #expect(try BlockCipher.encrypt(.tripleDES, key: key, block: h("0123456789ABCDEF")) == h("85E813540F0AB405"))
        #expect(try BlockCipher.decrypt(.tripleDES, key: key, block: h("85E813540F0AB405")) == h("0123456789ABCDEF"))
    }

    /// NIST SP 800-67 rev. 2 appendix B example, first block (keys 0123456789ABCDEF, 23456789ABCDEF01,
    /// 456789ABCDEF0123; "The qufc" -> A826FD8CE53B855F).
    @Test func tripleDESSP80067() throws {
        let key = SecretBytes(h("0123456789ABCDEF23456789ABCDEF01456789ABCDEF0123"))
        let block = Array("The qufc".utf8)
        #expect(try BlockCipher.encrypt(PIV.Algorithm.tripleDES, key: key, block: block) == h("A826FD8CE53B855F"))
    }

    @Test func wrongLengthsAndAlgorithms() {
        #expect(throws: BlockCipher.Error.keyLength(expected: 24, actual: 16)) {
            try BlockCipher.encrypt(
                .aes192, key: [UInt8](repeating: 0, count: 16), block: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: BlockCipher.Error.blockLength(expected: 8, actual: 16)) {
            try BlockCipher.encrypt(.tripleDES, key: PIV.defaultManagementKey, block: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: BlockCipher.Error.notABlockCipher(.eccP256)) {
            try BlockCipher.encrypt(PIV.Algorithm.eccP256, key: SecretBytes(PIV.defaultManagementKey), block: [])
        }
        #expect(BlockCipher.Algorithm(PIV.Algorithm.aes256)?.piv == .aes256)
        #expect(
            BlockCipher.Algorithm.allCases.allSatisfy {
                $0.blockSize == $0.piv.blockSize && $0.keyLength == $0.piv.keyLength
            })
    }
}
