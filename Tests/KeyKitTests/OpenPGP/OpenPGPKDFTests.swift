import Testing

@testable import KeyKit

/// The KDF object and the iterated and salted S2K the PINs go through when it is on. The digests below were
/// computed with Python's hashlib from RFC 4880's definition (salt and PIN repeated to the count, hashed once);
/// the integration tests check the same derivation against GnuPG's and yubikit's.
@Suite struct OpenPGPKDFTests {
    static let salt: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    static func kdf(hash: UInt8 = OpenPGPKDF.sha256, iterations: UInt32 = OpenPGPKDF.defaultIterations) -> OpenPGPKDF {
        var kdf = OpenPGPKDF(algorithm: OpenPGPKDF.iteratedSaltedS2K)
        kdf.hashAlgorithm = hash
        kdf.iterations = iterations
        kdf.userSalt = salt
        return kdf
    }

    @Test func derivesTheIteratedAndSaltedS2K() throws {
        #expect(
            try Self.kdf().derive(SecretBytes(utf8: "123456"), for: .user).hex
                == "f18fd4bb30db33e4b2ba15818cf280013a873726199fd128ec8376b5b46244d3")
        var sha512 = Self.kdf(hash: OpenPGPKDF.sha512, iterations: 100_000)
        sha512.adminSalt = [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18]
        #expect(
            try sha512.derive(SecretBytes(utf8: "12345678"), for: .admin).hex
                == "2a5c4bf52f4001432ed1e3c5e34d84a12be42e6d15bdceffa3207c8ad9e21643"
                + "e83a1030a78d0b6740850497ee70764dfc633ff8535a9beb5ae8d4d47ffe28e4")
        // A count below the salt and PIN's length hashes them once, whole.
        #expect(
            try Self.kdf(iterations: 3).derive(SecretBytes(utf8: "123456"), for: .user).hex
                == "1ae0f1043e1492a1acffc2319de52fa4713cf4bfd7123563345550f0da8eee9a")
    }

    @Test func eachPasswordHasItsSaltOrTheUsers() throws {
        var kdf = Self.kdf(iterations: 1000)
        let pin = SecretBytes(utf8: "12345678")
        let user = try kdf.derive(pin, for: .user)
        #expect(try kdf.derive(pin, for: .reset) == user && kdf.derive(pin, for: .admin) == user)
        kdf.resetSalt = [9, 9, 9, 9, 9, 9, 9, 9]
        kdf.adminSalt = [8, 8, 8, 8, 8, 8, 8, 8]
        let reset = try kdf.derive(pin, for: .reset), admin = try kdf.derive(pin, for: .admin)
        #expect(Set([user, reset, admin]).count == 3)
    }

    @Test func withoutAKDFThePasswordGoesAsTyped() throws {
        #expect(
            try OpenPGPKDF(algorithm: OpenPGPKDF.none).derive(SecretBytes(utf8: "123456"), for: .user)
                == Array("123456".utf8))
    }

    @Test func aKDFNotKnownHereIsSaid() {
        #expect(throws: OpenPGPError.kdfUnsupported(algorithm: 0x03, hash: 0x02)) {
            try Self.kdf(hash: 0x02).derive(SecretBytes(utf8: "123456"), for: .user)
        }
        #expect(throws: OpenPGPError.kdfUnsupported(algorithm: 0x05, hash: nil)) {
            try OpenPGPKDF(algorithm: 0x05).derive(SecretBytes(utf8: "123456"), for: .user)
        }
    }

    /// The 110-byte object GnuPG's kdf-setup writes (three salts, both initial hashes), read back field by field,
    /// and a new object's initial hashes are its own derivations of the defaults.
    @Test func theObjectRoundTripsAsGnuPGLaysItOut() throws {
        let made = OpenPGPKDF.make()
        let bytes = made.encoded
        #expect(bytes.count == 110)
        #expect(Array(bytes.prefix(12)) == [0x81, 0x01, 0x03, 0x82, 0x01, 0x08, 0x83, 0x04, 0x00, 0x78, 0x00, 0x00])
        #expect(bytes[12] == 0x84 && bytes[22] == 0x85 && bytes[32] == 0x86 && bytes[42] == 0x87 && bytes[76] == 0x88)
        let parsed = try OpenPGPKDF(bytes)
        #expect(parsed == made && parsed.isEnabled)
        #expect(parsed.initialUserHash == parsed.derived(OpenPGP.defaultUserPIN, for: .user))
        #expect(parsed.initialAdminHash == parsed.derived(OpenPGP.defaultAdminPIN, for: .admin))
        #expect(try OpenPGPKDF([0x81, 0x01, 0x00]) == OpenPGPKDF(algorithm: OpenPGPKDF.none))
    }
}
