@testable import KeyKit
import Glibc
import Testing

/// Secrets in a buffer of their own: zeroed on wipe, never shown, and the crypto that takes them agrees with the
/// array versions on published vectors.
@Suite struct SecretBytesTests {
    @Test func holdsACopyAndLendsIt() {
        let secret = SecretBytes([1, 2, 3, 4])
        #expect(secret.count == 4)
        #expect(!secret.isEmpty)
        #expect(secret.withUnsafeBytes { Array($0) } == [1, 2, 3, 4])
        #expect(secret.copyBytes() == [1, 2, 3, 4])
        #expect(secret.prefix(2).copyBytes() == [1, 2])
        #expect(secret.prefix(10).copyBytes() == [1, 2, 3, 4])
        #expect(SecretBytes().isEmpty)
    }

    @Test func movingInWipesTheCallersArray() {
        var bytes: [UInt8] = [9, 8, 7]
        let secret = SecretBytes(wiping: &bytes)
        #expect(bytes.isEmpty)
        #expect(secret.copyBytes() == [9, 8, 7])
        #expect(SecretBytes(utf8: "pässword").copyBytes() == Array("pässword".utf8))
    }

    @Test func wipeEmptiesTheValue() {
        let secret = SecretBytes(utf8: "123456")
        secret.wipe()
        #expect(secret.count == 0)
        #expect(secret.withUnsafeBytes { $0.count } == 0)
        secret.wipe()  // twice is harmless
        #expect(secret.isEmpty)
    }

    @Test func zeroOverwritesEveryByte() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { buffer.deallocate() }
        for i in 0..<64 { buffer[i] = UInt8(i | 1) }
        SecretBytes.zero(buffer)
        #expect(buffer.allSatisfy { $0 == 0 })
        SecretBytes.zero(UnsafeMutableRawBufferPointer(start: nil, count: 0))  // an empty buffer is fine
    }

    @Test func wipingAnArrayZeroesItsBufferAndEmptiesIt() {
        var bytes = [UInt8](repeating: 0xAB, count: 32)
        var seen = [UInt8]()
        bytes.withUnsafeMutableBytes { raw in
            SecretBytes.zero(raw)
            seen = Array(raw)
        }
        #expect(seen == [UInt8](repeating: 0, count: 32))
        SecretBytes.wipe(&bytes)
        #expect(bytes.isEmpty)
    }

    @Test func neverPrintsItsBytes() {
        let secret = SecretBytes(utf8: "hunter2")
        for text in ["\(secret)", String(describing: secret), String(reflecting: secret)] {
            #expect(!text.contains("hunter2"))
            #expect(!text.contains(Hex.encode(Array("hunter2".utf8))))
            #expect(text.contains("7 bytes"))
        }
    }

    @Test func comparesByContent() {
        #expect(SecretBytes([1, 2, 3]).constantTimeEquals(SecretBytes([1, 2, 3])))
        #expect(!SecretBytes([1, 2, 3]).constantTimeEquals(SecretBytes([1, 2, 4])))
        #expect(!SecretBytes([1, 2, 3]).constantTimeEquals(SecretBytes([1, 2])))
    }

    /// RFC 2202 test case 2 (HMAC-SHA1) and RFC 4231 test case 2 (HMAC-SHA256): key "Jefe".
    @Test func hmacWithASecretKeyMatchesThePublishedVectors() throws {
        let data = Array("what do ya want for nothing?".utf8)
        let key = SecretBytes(utf8: "Jefe")
        #expect(
            Crypto.hmac(.sha1, key: key, data: data) == (try Hex.decode("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")))
        #expect(
            Crypto.hmac(.sha256, key: key, data: data)
                == (try Hex.decode(
                    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")))
        #expect(Crypto.hmac(.sha1, key: SecretBytes(), data: []) == Crypto.hmac(.sha1, key: [], data: []))
    }

    /// RFC 6070 test cases 1 and 2 (PBKDF2-HMAC-SHA1).
    @Test func pbkdf2WithASecretPasswordMatchesThePublishedVectors() throws {
        let password = SecretBytes(utf8: "password")
        let salt = Array("salt".utf8)
        #expect(
            Crypto.pbkdf2(.sha1, password: password, salt: salt, iterations: 1, length: 20).copyBytes()
                == (try Hex.decode("0c60c80f961f0e71f3a9b524af6012062fe037a6")))
        #expect(
            Crypto.pbkdf2(.sha1, password: password, salt: salt, iterations: 2, length: 20).copyBytes()
                == (try Hex.decode("ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957")))
    }

    /// The OATH access key from a password is the same in its own buffer as in an array (YKOATH: PBKDF2-SHA1,
    /// 1000 iterations, 16 bytes).
    @Test func oathKeyDerivationAgrees() {
        let salt: [UInt8] = [0x5B, 0x2E, 0x8C, 0x1F, 0x77, 0x01, 0x90, 0xAA]
        let secret = OATHSession.deriveSecretKey(password: SecretBytes(utf8: "password"), salt: salt)
        #expect(secret.count == 16)
        #expect(secret.copyBytes() == OATHSession.deriveKey(password: "password", salt: salt))
        #expect(
            secret.copyBytes()
                == Crypto.pbkdf2(
                    .sha1, password: Array("password".utf8), salt: salt,
                    iterations: 1000, length: 16))
    }

    /// pinUvAuthParam from a token in its own buffer equals the array computation, for both protocols.
    @Test func pinProtocolAuthenticatesWithASecretToken() {
        let token = (0..<32).map { UInt8($0 * 7 & 0xFF) }
        let message = Array("clientDataHash".utf8)
        for p in [PINUVAuthProtocol.one, .two] {
            #expect(p.authenticate(key: SecretBytes(token), message) == p.authenticate(key: token, message))
        }
        let short = Array(token.prefix(16))
        #expect(
            PINUVAuthProtocol.one.authenticate(key: SecretBytes(short), message)
                == PINUVAuthProtocol.one.authenticate(key: short, message))
    }
}

@Suite struct SecretMemoryTests {
    @Test func aProtectedProcessIsNotDumpableAndWritesNoCore() {
        SecretMemory.protectProcess()
        #expect(!SecretMemory.isDumpable)
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        #expect(limit.rlim_cur == 0 && limit.rlim_max == 0)
    }
}
