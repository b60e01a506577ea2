import Testing
@testable import KeyKit

/// Known-answer vectors for PIN/UV auth protocols 1 and 2 (CTAP 2.1 section 6.5), computed independently with
/// the Python `cryptography` package from the shared point x = 00 01 .. 1f and the plaintext 00 01 .. 3f.
@Suite struct PINProtocolTests {
    let z = Array(UInt8(0)..<32)
    let plaintext = Array(UInt8(0)..<64)

    @Test func protocolOne() throws {
        let p = PINUVAuthProtocol.one
        let key = try p.kdf(z)
        #expect(key.hex == "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd")
        let enc = try p.encrypt(key: key, plaintext)
        #expect(
            enc.hex == "5b1b8c62089fae8afdcde68081977f19e6a0b8d59b6818113cd771f0867e8903"
                + "b5f0ea5aa5b9eec0ddac8072204ab3a493dbd3357e1e4c5603258c49fb305ce5")
        #expect(try p.decrypt(key: key, enc) == plaintext)
        #expect(p.authenticate(key: key, plaintext).hex == "70a75f6e14fce8b35baf14213da68486")
        #expect(p.verify(key: key, plaintext, signature: p.authenticate(key: key, plaintext)))
        #expect(!p.verify(key: key, plaintext + [0], signature: p.authenticate(key: key, plaintext)))
    }

    @Test func protocolTwo() throws {
        let p = PINUVAuthProtocol.two
        let key = try p.kdf(z)
        #expect(
            key.hex == "a689b3b92a6ebab91192408da9c4f05c674a2bc5f938d613077716c719a8df39"
                + "0f6ff2ef211829c11638ef2893ea02edf195658c0572393e7680d93bc2b58d44")
        let enc = try p.encrypt(key: key, plaintext, iv: [UInt8](repeating: 0xA5, count: 16))
        #expect(
            enc.hex == "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"
                + "63d9a4c08efb1fbb877067ed8586a337b01faed7eb5bc8366bc33ec12b5f5797"
                + "3eb678a842cab0c4216bb7771f8624072082c932c7042f387d48020eba4c078f")
        #expect(try p.decrypt(key: key, enc) == plaintext)
        #expect(
            p.authenticate(key: key, plaintext).hex
                == "14cd3d5a4c3c14e1f749eec3b4ac2b415667d17f5cd713f5f80436ab432a05b3")
        // A random IV each time.
        #expect(try p.encrypt(key: key, plaintext) != (try p.encrypt(key: key, plaintext)))
        #expect(throws: (any Error).self) { _ = try p.decrypt(key: key, [1, 2, 3]) }
    }

    @Test func pinEncodings() {
        #expect(PINUVAuthProtocol.paddedPIN("1234").count == 64)
        #expect(PINUVAuthProtocol.paddedPIN("1234").prefix(5) == [0x31, 0x32, 0x33, 0x34, 0])
        #expect(PINUVAuthProtocol.pinHash("1234").hex == "03ac674216f3e15c761ee1a5e255f067")
    }

    /// The one test set of the PIN rules the command line, the TUI and the session all check.
    @Test func pinRules() throws {
        try PINRules.check("1234")
        try PINRules.check("ääää")  // 4 code points, 8 bytes
        #expect(PINRules.problem("äöüß") == nil)
        #expect(PINRules.problem(String(repeating: "x", count: 63)) == nil)
        #expect(throws: FIDOSessionError.pinTooShort(minimum: 4, count: 3)) { try PINRules.check("123") }
        // A key's lower minimum does not go under CTAP's 4; a higher one counts.
        #expect(PINRules.problem("123", minimum: 2) == .pinTooShort(minimum: 4, count: 3))
        #expect(throws: FIDOSessionError.pinTooShort(minimum: 6, count: 5)) { try PINRules.check("12345", minimum: 6) }
        #expect(throws: FIDOSessionError.pinTooLong(bytes: 64)) {
            try PINRules.check(String(repeating: "a", count: 64))
        }
        #expect(throws: FIDOSessionError.pinTooLong(bytes: 64)) {
            try PINRules.check(String(repeating: "ä", count: 32))
        }
        #expect(throws: FIDOSessionError.pinHasNUL) { try PINRules.check("12\u{0}34") }
        // NUL first, then length in bytes, then in code points.
        #expect(PINRules.problem("1\u{0}") == .pinHasNUL)
    }
}

@Suite struct COSEVerifyTests {
    @Test func ed25519COSEKeyRFC8032() throws {
        let x = try Hex.decode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let sig = try Hex.decode(
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        )
        let cose: CBOR = [1: 1, 3: -8, -1: 6, -2: .bytes(x)]
        #expect(try FIDOVerifier.verify(signature: sig, message: [], coseKey: cose))
        #expect(try !FIDOVerifier.verify(signature: sig, message: [1], coseKey: cose))
        #expect(throws: FIDOSessionError.self) {
            _ = try FIDOVerifier.verify(signature: sig, message: [], coseKey: [3: -257])
        }
    }

    @Test func es256COSEKey() throws {
        let k = P256PrivateKey()
        let cose: CBOR = [1: 2, 3: -7, -1: 1, -2: .bytes(k.publicKey.x), -3: .bytes(k.publicKey.y)]
        #expect(try FIDOVerifier.verify(signature: k.sign([7]), message: [7], coseKey: cose))
    }
}
