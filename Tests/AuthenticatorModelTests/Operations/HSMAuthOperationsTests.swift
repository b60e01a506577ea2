import Foundation
import KeyKit
import Testing
import VirtualKey

@testable import AuthenticatorModel

/// The virtual key as YubiHSM Auth operations' smart-card interface, counting the connections opened and closed.
private final class HSMAuthKey: SmartCardOpener, @unchecked Sendable {
    // @unchecked: the counters are LockedValues; `key` is set once.
    let key: VirtualKey
    let opened = LockedValue(0)
    let closed = LockedValue(0)

    init(version: Version = Version(5, 7, 2)) {
        key = VirtualKey(state: VirtualKeyState.yubiKey5NFC(version: version), touchDelay: 0)
    }

    func openSmartCard() async throws -> any SmartCardConnection {
        opened.withLock { $0 += 1 }
        return CountedConnection(VirtualKeyConnection(key: key), closed: closed)
    }

    var allClosed: Bool { opened.withLock { $0 } == closed.withLock { $0 } }
}

private let management = SecretBytes([UInt8](repeating: 0, count: 16))
private let password = HSMAuth.paddedPassword("cred")!

@Suite struct HSMAuthOperationsTests {
    @Test func addListCalculateDelete() async throws {
        let key = HSMAuthKey()
        let ops = HSMAuthOperations(key)
        #expect(
            try await ops.overview()
                == HSMAuthOverview(version: Version(5, 7, 2), managementKeyRetries: 8, credentials: []))
        let enc = Crypto.random(16)
        let mac = Crypto.random(16)
        _ = try await ops.add(
            label: "sym", .symmetric(enc: SecretBytes(enc), mac: SecretBytes(mac)), credentialPassword: password,
            managementKey: management, touchRequired: false)
        _ = try await ops.add(
            label: "derived", .derived(password: SecretBytes(utf8: "password")), credentialPassword: password,
            managementKey: management, touchRequired: true)
        _ = try await ops.add(
            label: "gen", .generated, credentialPassword: password, managementKey: management, touchRequired: false)
        let sk = P256PrivateKey()
        _ = try await ops.add(
            label: "imp", .asymmetric(privateKey: SecretBytes(sk.raw)), credentialPassword: password,
            managementKey: management, touchRequired: false)
        #expect(try await ops.credentials().map(\.label) == ["sym", "derived", "gen", "imp"])
        #expect(try await ops.publicKey(label: "imp") == sk.publicKey)
        let context = Crypto.random(16)
        #expect(
            try await ops.sessionKeys(label: "sym", context: context, credentialPassword: password)
                == (try HSMAuth.symmetricSessionKeys(enc: enc, mac: mac, context: context)))
        let (denc, dmac) = HSMAuth.derivedKeys(password: SecretBytes(utf8: "password"))
        #expect(
            try await ops.sessionKeys(label: "derived", context: context, credentialPassword: password)
                == (try HSMAuth.symmetricSessionKeys(enc: denc.copyBytes(), mac: dmac.copyBytes(), context: context)))
        try await ops.delete(label: "sym", managementKey: management)
        await #expect(throws: HSMAuthError.notFound) { try await ops.delete(label: "sym", managementKey: management) }
        try await ops.reset()
        #expect(try await ops.credentials().isEmpty)
        #expect(key.allClosed)
    }

    @Test func asymmetricSessionKeysInOneConnection() async throws {
        let key = HSMAuthKey()
        let ops = HSMAuthOperations(key)
        _ = try await ops.add(
            label: "gen", .generated, credentialPassword: password, managementKey: management, touchRequired: false)
        let pkOCE = try await ops.publicKey(label: "gen")
        let skSD = P256PrivateKey()
        let eskSD = P256PrivateKey()
        let derived = LockedValue([UInt8]())
        let keys = try await ops.asymmetricSessionKeys(label: "gen", credentialPassword: password) { epkOCE in
            // The YubiHSM 2's side.
            let shs = HSMAuth.x963SHA256(
                try eskSD.sharedSecret(with: P256PublicKey(uncompressed: epkOCE)) + skSD.sharedSecret(with: pkOCE),
                sharedInfo: HSMAuth.asymmetricSharedInfo, length: 64)
            derived.withLock { $0 = Array(shs[16...]) }
            let receipt = try HSMAuth.cmac(key: Array(shs[0..<16]), eskSD.publicKey.uncompressed + epkOCE)
            return HSMAuthDeviceAnswer(epkSD: eskSD.publicKey.uncompressed, pkSD: skSD.publicKey, receipt: receipt)
        }
        #expect(keys.encoded == derived.withLock { $0 })
        #expect(key.opened.withLock { $0 } == 3 && key.allClosed)
    }

    @Test func managementKeyAndPasswords() async throws {
        let key = HSMAuthKey(version: Version(5, 8, 0))
        let ops = HSMAuthOperations(key)
        let new = HSMAuth.paddedPassword("mgmt")!
        try await ops.changeManagementKey(current: management, new: new)
        await #expect(throws: HSMAuthError.wrongManagementKey(retriesLeft: 7)) {
            _ = try await ops.add(
                label: "g", .generated, credentialPassword: password, managementKey: management, touchRequired: false)
        }
        #expect(try await ops.overview().managementKeyRetries == 7)
        _ = try await ops.add(
            label: "g", .generated, credentialPassword: password, managementKey: new, touchRequired: false)
        let second = HSMAuth.paddedPassword("second")!
        try await ops.changeCredentialPassword(label: "g", authority: .credentialPassword(password), new: second)
        try await ops.changeCredentialPassword(label: "g", authority: .managementKey(new), new: password)
        #expect(try await ops.challenge(label: "g", credentialPassword: password).count == 65)
        await #expect(throws: HSMAuthError.wrongCredentialPassword(retriesLeft: 7)) {
            _ = try await ops.challenge(label: "g", credentialPassword: second)
        }
        #expect(key.allClosed)
    }
}
