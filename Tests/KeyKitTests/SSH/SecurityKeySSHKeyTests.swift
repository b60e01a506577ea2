import Foundation
import Testing
@testable import KeyKit

/// OpenSSH's security-key formats (PROTOCOL.u2f, PROTOCOL.key): the public blob, the authorized_keys line, the
/// fingerprint, and the openssh-key-v1 file, which `ykterm ssh` writes and reads back. ssh-keygen's reading of the
/// same files is checked in the integration tests (test_ssh.py).
@Suite struct SecurityKeySSHKeyTests {
    static let point: [UInt8] = [0x04] + Array(repeating: 0x11, count: 32) + Array(repeating: 0x22, count: 32)
    static let ecdsa = SecurityKeySSHKey(
        publicKey: .ecdsaP256(point), application: "ssh:work", flags: [.userPresenceRequired, .residentKey],
        keyHandle: Array(0..<48))

    /// SSH wire strings (RFC 4251): each with its 32-bit big-endian length.
    static func wire(_ fields: [UInt8]...) -> [UInt8] {
        var out = [UInt8]()
        for f in fields {
            let n = UInt32(f.count)
            out += [UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
            out += f
        }
        return out
    }

    @Test func thePublicBlobIsTheTypeTheCurveThePointAndTheApplication() {
        let k = Self.ecdsa
        #expect(
            k.publicBlob
                == Self.wire(
                    Array("sk-ecdsa-sha2-nistp256@openssh.com".utf8), Array("nistp256".utf8), Self.point,
                    Array("ssh:work".utf8)))
        let ed = SecurityKeySSHKey(
            publicKey: .ed25519(Array(repeating: 7, count: 32)), application: "ssh:", flags: [], keyHandle: [1])
        #expect(
            ed.publicBlob
                == Self.wire(
                    Array("sk-ssh-ed25519@openssh.com".utf8), Array(repeating: 7, count: 32), Array("ssh:".utf8)))
        #expect(ed.authorizedKeysLine() == "sk-ssh-ed25519@openssh.com " + Data(ed.publicBlob).base64EncodedString())
        #expect(k.authorizedKeysLine(comment: "ssh:work").hasSuffix(" ssh:work"))
        // SHA-256 of the blob, base64 without padding.
        let digest = Data(Crypto.digest(.sha256, k.publicBlob)).base64EncodedString()
        #expect(k.fingerprint == "SHA256:" + digest.replacingOccurrences(of: "=", with: ""))
        #expect(!k.fingerprint.contains("="))
    }

    @Test func thePrivateKeyFileReadsBackAndIsPaddedAndArmoured() throws {
        let text = Self.ecdsa.privateKeyFile(comment: "ssh:work", checkInt: 0x0102_0304)
        let lines = text.split(separator: "\n")
        #expect(
            lines.first == "-----BEGIN OPENSSH PRIVATE KEY-----" && lines.last == "-----END OPENSSH PRIVATE KEY-----")
        #expect(lines.dropFirst().dropLast().allSatisfy { $0.count <= 70 })
        let (key, comment) = try SecurityKeySSHKey.parse(privateKeyFile: text)
        #expect(key == Self.ecdsa && comment == "ssh:work")
        // The private section: two equal check numbers first, then a multiple of 8 bytes in all.
        let raw = [UInt8](Data(base64Encoded: lines.dropFirst().dropLast().joined())!)
        #expect(raw.starts(with: Array("openssh-key-v1".utf8) + [0]))
        let ed = SecurityKeySSHKey(
            publicKey: .ed25519(Array(repeating: 9, count: 32)), application: "ssh:x",
            flags: [.userPresenceRequired, .userVerificationRequired, .residentKey],
            keyHandle: Array(repeating: 3, count: 64))
        let back = try SecurityKeySSHKey.parse(privateKeyFile: ed.privateKeyFile(comment: "c"))
        #expect(back.key == ed && back.key.flags.rawValue == 0x25 && back.comment == "c")
    }

    @Test func otherFilesAreRefused() {
        #expect(throws: SSHKeyFileError.notAnOpenSSHKey) {
            _ = try SecurityKeySSHKey.parse(
                privateKeyFile: "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")
        }
        #expect(throws: SSHKeyFileError.self) {
            _ = try SecurityKeySSHKey.parse(
                privateKeyFile:
                    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----\n")
        }
    }

    @Test func aCredentialsCOSEKeyBecomesTheSSHKey() {
        let x = Array(repeating: UInt8(0x11), count: 32), y = Array(repeating: UInt8(0x22), count: 32)
        let ec2: CBOR = .map([
            CBOR(1): CBOR(2), CBOR(3): CBOR(-7), CBOR(-1): CBOR(1), CBOR(-2): .bytes(x), CBOR(-3): .bytes(y),
        ])
        #expect(
            SecurityKeySSHKey(
                cose: ec2, application: "ssh:work", flags: [.userPresenceRequired, .residentKey],
                keyHandle: Array(0..<48)) == Self.ecdsa)
        let okp: CBOR = .map([CBOR(1): CBOR(1), CBOR(3): CBOR(-8), CBOR(-1): CBOR(6), CBOR(-2): .bytes(x)])
        #expect(SecurityKeySSHKey(cose: okp, application: "ssh:", flags: [], keyHandle: [])?.publicKey == .ed25519(x))
        // P-384, X25519, a short coordinate: not SSH security keys.
        let p384: CBOR = .map([CBOR(1): CBOR(2), CBOR(-1): CBOR(2), CBOR(-2): .bytes(x), CBOR(-3): .bytes(y)])
        let x25519: CBOR = .map([CBOR(1): CBOR(1), CBOR(-1): CBOR(4), CBOR(-2): .bytes(x)])
        let short: CBOR = .map([CBOR(1): CBOR(2), CBOR(-1): CBOR(1), CBOR(-2): .bytes([1]), CBOR(-3): .bytes(y)])
        for cose in [p384, x25519, short] {
            #expect(SecurityKeySSHKey(cose: cose, application: "ssh:", flags: [], keyHandle: []) == nil)
        }
    }
}
