import Foundation
import KeyKit
import Testing
import VirtualKey

/// KeyKit's HSMAuthSession against the virtual key's YubiHSM Auth application, in process: credentials, the
/// management key's and passwords' tries, session keys checked against the YubiHSM 2's derivations done here.
@Suite struct HSMAuthAppletTests {
    static let management = SecretBytes([UInt8](repeating: 0, count: 16))
    static let password = HSMAuth.paddedPassword("cred-pass")!

    static func session(_ key: VirtualKey) async throws -> HSMAuthSession {
        try await HSMAuthSession.make(connection: VirtualKeyConnection(key: key))
    }

    static func key(_ version: Version = Version(5, 7, 2)) -> VirtualKey {
        VirtualKey(state: .yubiKey5NFC(version: version), touchDelay: 0)
    }

    @Test func factoryStateAndReset() async throws {
        let key = Self.key()
        let s = try await Self.session(key)
        #expect(s.version == Version(5, 7, 2))
        #expect(try await s.managementKeyRetries() == 8)
        #expect(try await s.listCredentials().isEmpty)
        _ = try await s.generateAsymmetric(
            managementKey: Self.management, label: "a", credentialPassword: Self.password, touchRequired: true)
        let new = SecretBytes(Array(repeating: 7, count: 16))
        try await s.putManagementKey(current: Self.management, new: new)
        try await s.reset()
        #expect(try await s.listCredentials().isEmpty)
        // The default management key works again.
        _ = try await s.putDerived(
            managementKey: Self.management, label: "d", derivationPassword: SecretBytes(utf8: "password"),
            credentialPassword: Self.password, touchRequired: false)
        #expect(key.state.hsmauth.credentials.map(\.label) == ["d"])
    }

    @Test func symmetricSessionKeysAreTheYubiHSMs() async throws {
        let s = try await Self.session(Self.key())
        let enc = Crypto.random(16)
        let mac = Crypto.random(16)
        let added = try await s.putSymmetric(
            managementKey: Self.management, label: "sym", enc: SecretBytes(enc), mac: SecretBytes(mac),
            credentialPassword: Self.password, touchRequired: false)
        #expect(added == HSMAuthCredential(label: "sym", algorithm: .aes128, touchRequired: false, retries: 8))
        let context = Crypto.random(16)
        let keys = try await s.calculateSymmetric(label: "sym", context: context, credentialPassword: Self.password)
        #expect(keys == (try HSMAuth.symmetricSessionKeys(enc: enc, mac: mac, context: context)))
        // A symmetric credential's challenge is 8 random bytes; it has no public key.
        #expect(try await s.challenge(label: "sym", credentialPassword: nil).count == 8)
        await #expect(throws: HSMAuthError.notAsymmetric) { _ = try await s.publicKey(label: "sym") }
    }

    @Test func asymmetricHandshakeWithAYubiHSMPlayedHere() async throws {
        let s = try await Self.session(Self.key())
        _ = try await s.generateAsymmetric(
            managementKey: Self.management, label: "asym", credentialPassword: Self.password, touchRequired: false)
        let pkOCE = try await s.publicKey(label: "asym")
        let skSD = P256PrivateKey()
        let eskSD = P256PrivateKey()
        let epkOCE = try await s.challenge(label: "asym", credentialPassword: Self.password)
        let shs = HSMAuth.x963SHA256(
            try eskSD.sharedSecret(with: P256PublicKey(uncompressed: epkOCE)) + skSD.sharedSecret(with: pkOCE),
            sharedInfo: HSMAuth.asymmetricSharedInfo, length: 64)
        let receipt = try HSMAuth.cmac(key: Array(shs[0..<16]), eskSD.publicKey.uncompressed + epkOCE)
        let keys = try await s.calculateAsymmetric(
            label: "asym", context: epkOCE + eskSD.publicKey.uncompressed, publicKey: skSD.publicKey,
            receipt: receipt, credentialPassword: Self.password)
        #expect(keys.encoded == Array(shs[16...]))
        // The ephemeral key is used once.
        await #expect(throws: HSMAuthError.status(.incorrectParameters)) {
            _ = try await s.calculateAsymmetric(
                label: "asym", context: epkOCE + eskSD.publicKey.uncompressed, publicKey: skSD.publicKey,
                receipt: receipt, credentialPassword: Self.password)
        }
        // A receipt that does not check is refused.
        let again = try await s.challenge(label: "asym", credentialPassword: Self.password)
        await #expect(throws: HSMAuthError.status(.dataInvalid)) {
            _ = try await s.calculateAsymmetric(
                label: "asym", context: again + eskSD.publicKey.uncompressed, publicKey: skSD.publicKey,
                receipt: receipt, credentialPassword: Self.password)
        }
    }

    @Test func importedKeyAnswersItsPublicKey() async throws {
        let key = Self.key()
        let s = try await Self.session(key)
        let sk = P256PrivateKey()
        _ = try await s.putAsymmetric(
            managementKey: Self.management, label: "imported", privateKey: SecretBytes(sk.raw),
            credentialPassword: Self.password, touchRequired: true)
        #expect(try await s.publicKey(label: "imported") == sk.publicKey)
        #expect(
            try await s.listCredentials() == [
                HSMAuthCredential(label: "imported", algorithm: .ecP256, touchRequired: true, retries: 8)
            ])
        await #expect(throws: HSMAuthError.labelExists) {
            _ = try await s.putAsymmetric(
                managementKey: Self.management, label: "imported", privateKey: SecretBytes(sk.raw),
                credentialPassword: Self.password, touchRequired: false)
        }
        await #expect(throws: HSMAuthError.notFound) { _ = try await s.publicKey(label: "other") }
        await #expect(throws: HSMAuthError.labelLength(65)) {
            _ = try await s.publicKey(label: String(repeating: "x", count: 65))
        }
        // The state survives a state file's round trip.
        let data = try JSONEncoder().encode(key.state)
        #expect(try JSONDecoder().decode(VirtualKeyState.self, from: data) == key.state)
    }

    @Test func triesOfTheManagementKeyAndOfACredentialPassword() async throws {
        let key = Self.key()
        let s = try await Self.session(key)
        let wrong = SecretBytes(Array(repeating: 1, count: 16))
        await #expect(throws: HSMAuthError.wrongManagementKey(retriesLeft: 7)) {
            try await s.delete(managementKey: wrong, label: "x")
        }
        _ = try await s.putDerived(
            managementKey: Self.management, label: "d", derivationPassword: SecretBytes(utf8: "pw"),
            credentialPassword: Self.password, touchRequired: false)
        #expect(try await s.managementKeyRetries() == 8)
        let context = Crypto.random(16)
        for left in (1...7).reversed() {
            await #expect(throws: HSMAuthError.wrongCredentialPassword(retriesLeft: left)) {
                _ = try await s.calculateSymmetric(label: "d", context: context, credentialPassword: wrong)
            }
        }
        #expect(try await s.listCredentials().first?.retries == 1)
        _ = try await s.calculateSymmetric(label: "d", context: context, credentialPassword: Self.password)
        #expect(try await s.listCredentials().first?.retries == 8)
        for left in (0...7).reversed() {
            await #expect(throws: HSMAuthError.wrongCredentialPassword(retriesLeft: left)) {
                _ = try await s.calculateSymmetric(label: "d", context: context, credentialPassword: wrong)
            }
        }
        // The last wrong try deleted the credential.
        #expect(try await s.listCredentials().isEmpty)
        // Eight wrong management keys block it.
        for left in (0...7).reversed() {
            await #expect(throws: HSMAuthError.wrongManagementKey(retriesLeft: left)) {
                try await s.delete(managementKey: wrong, label: "d")
            }
        }
        await #expect(throws: HSMAuthError.wrongManagementKey(retriesLeft: 0)) {
            try await s.delete(managementKey: Self.management, label: "d")
        }
        #expect(key.state.hsmauth.managementKeyRetries == 0)
    }

    @Test func changingACredentialPasswordNeeds58() async throws {
        let old = try await Self.session(Self.key())
        await #expect(throws: HSMAuthError.notSupported(minimum: Version(5, 8, 0), actual: Version(5, 7, 2))) {
            try await old.changeCredentialPassword(
                label: "d", authority: .credentialPassword(Self.password), new: Self.password)
        }
        let s = try await Self.session(Self.key(Version(5, 8, 0)))
        _ = try await s.putDerived(
            managementKey: Self.management, label: "d", derivationPassword: SecretBytes(utf8: "pw"),
            credentialPassword: Self.password, touchRequired: false)
        let second = HSMAuth.paddedPassword("second")!
        try await s.changeCredentialPassword(label: "d", authority: .credentialPassword(Self.password), new: second)
        let third = HSMAuth.paddedPassword("third")!
        await #expect(throws: HSMAuthError.wrongCredentialPassword(retriesLeft: 7)) {
            try await s.changeCredentialPassword(label: "d", authority: .credentialPassword(Self.password), new: third)
        }
        try await s.changeCredentialPassword(label: "d", authority: .managementKey(Self.management), new: third)
        let context = Crypto.random(16)
        _ = try await s.calculateSymmetric(label: "d", context: context, credentialPassword: third)
        await #expect(throws: HSMAuthError.wrongCredentialPassword(retriesLeft: 7)) {
            _ = try await s.calculateSymmetric(label: "d", context: context, credentialPassword: second)
        }
    }

    @Test func firmwareBefore56HasNoAsymmetricCredentials() async throws {
        let s = try await Self.session(Self.key(Version(5, 4, 3)))
        await #expect(throws: HSMAuthError.notSupported(minimum: Version(5, 6, 0), actual: Version(5, 4, 3))) {
            _ = try await s.generateAsymmetric(
                managementKey: Self.management, label: "a", credentialPassword: Self.password, touchRequired: false)
        }
        let key = Self.key(Version(5, 4, 3))
        let answer = key.process([0x00, 0xA4, 0x04, 0x00, 0x07] + AID.hsmauth)
        #expect(answer == [0x79, 0x03, 5, 4, 3, 0x90, 0x00])
        #expect(key.process([0x00, 0x04, 0x00, 0x00, 0x03, 0x71, 0x01, 0x61]) == [0x6D, 0x00])
    }
}
