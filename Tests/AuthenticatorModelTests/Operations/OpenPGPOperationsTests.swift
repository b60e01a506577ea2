import Foundation
import KeyKit
import Testing
import VirtualKey

@testable import AuthenticatorModel

/// The virtual key as OpenPGP operations' smart-card interface, counting the connections opened and closed.
private final class OpenPGPKey: SmartCardOpener, @unchecked Sendable {
    // @unchecked: the counters are LockedValues; `key` is set once.
    let key = VirtualKey(state: VirtualKeyState.yubiKey5NFC(), touchDelay: 0)
    let opened = LockedValue(0)
    let closed = LockedValue(0)

    func openSmartCard() async throws -> any SmartCardConnection {
        opened.withLock { $0 += 1 }
        return CountedConnection(VirtualKeyConnection(key: key), closed: closed)
    }

    var allClosed: Bool { opened.withLock { $0 } == closed.withLock { $0 } }
}

private let pin = SecretBytes(utf8: "123456")
private let adminPIN = SecretBytes(utf8: "12345678")

@Suite struct OpenPGPOperationsTests {
    @Test func overviewOfANewKey() async throws {
        let key = OpenPGPKey()
        let overview = try await OpenPGPOperations(key).overview()
        #expect(overview.version == Version(5, 7, 2) && overview.data.aid.serial == 28_123_456)
        #expect(overview.signatureCounter == 0 && !overview.kdfEnabled && overview.url.isEmpty)
        #expect(overview.data.passwordStatus.triesUser == 3 && overview.data.passwordStatus.triesReset == 0)
        #expect(key.allClosed)
    }

    @Test func passwordsRetriesAndUnblocking() async throws {
        let key = OpenPGPKey()
        let ops = OpenPGPOperations(key)
        try await ops.setRetries(user: 4, reset: 5, admin: 6, adminPIN: adminPIN)
        let newPIN = SecretBytes(utf8: "7654321")
        try await ops.changePIN(current: pin, new: newPIN)
        await #expect(throws: OpenPGPError.wrongPassword(.user, retriesLeft: 3)) {
            try await ops.changePIN(current: pin, new: newPIN)
        }
        let newAdmin = SecretBytes(utf8: "87654321")
        try await ops.changeAdminPIN(current: adminPIN, new: newAdmin)
        let code = SecretBytes(utf8: "a reset code")
        try await ops.setResetCode(code, adminPIN: newAdmin)
        var status = try await ops.overview().data.passwordStatus
        #expect(status.triesUser == 3 && status.triesReset == 5 && status.triesAdmin == 6)
        try await ops.unblockPIN(newPIN: pin, resetCode: code, adminPIN: nil)
        try await ops.unblockPIN(newPIN: newPIN, resetCode: nil, adminPIN: newAdmin)
        status = try await ops.overview().data.passwordStatus
        #expect(status.triesUser == 4)
        #expect(key.key.state.openpgp.userPIN == Array("7654321".utf8))
        #expect(key.allClosed)
    }

    @Test func fixedTouchPolicyNeedsConfirmation() async throws {
        let key = OpenPGPKey()
        let ops = OpenPGPOperations(key)
        await #expect(throws: OpenPGPOperationError.touchPolicyNeedsConfirmation(.signature, .cachedFixed)) {
            try await ops.setTouchPolicy(.signature, .cachedFixed, adminPIN: adminPIN, confirmed: false)
        }
        #expect(key.opened.withLock { $0 } == 0)
        try await ops.setTouchPolicy(.decryption, .on, adminPIN: adminPIN, confirmed: false)
        try await ops.setTouchPolicy(.signature, .cachedFixed, adminPIN: adminPIN, confirmed: true)
        let keys = try await ops.overview().data.keys
        #expect(keys.map { $0.touchPolicy } == [.cachedFixed, .on, .off, .off])
        await #expect(throws: OpenPGPError.touchPolicyFixed(.signature)) {
            try await ops.setTouchPolicy(.signature, .off, adminPIN: adminPIN, confirmed: true)
        }
        await #expect(throws: OpenPGPError.noKey(.signature)) { _ = try await ops.keyInfo(.signature) }
        #expect(key.allClosed)
    }

    @Test func signaturePolicyOnceAndAlways() async throws {
        let key = OpenPGPKey()
        let ops = OpenPGPOperations(key)
        #expect(OpenPGPSignaturePolicy(try await ops.overview().data.passwordStatus) == .always)
        try await ops.setSignaturePolicy(.once, adminPIN: adminPIN)
        #expect(key.key.state.openpgp.pinValidForSeveralSignatures)
        #expect(OpenPGPSignaturePolicy(try await ops.overview().data.passwordStatus) == .once)
        await #expect(throws: OpenPGPError.wrongPassword(.admin, retriesLeft: 2)) {
            try await ops.setSignaturePolicy(.always, adminPIN: SecretBytes(utf8: "87654321"))
        }
        #expect(key.key.state.openpgp.pinValidForSeveralSignatures)
        try await ops.setSignaturePolicy(.always, adminPIN: adminPIN)
        #expect(!key.key.state.openpgp.pinValidForSeveralSignatures)
        #expect(key.allClosed)
    }

    @Test func importAsksBeforeReplacingAKey() async throws {
        let key = OpenPGPKey()
        let ops = OpenPGPOperations(key)
        let first = try AsymmetricPrivateKey.generate(.ed25519)
        let info = try await ops.importKey(first, into: .signature, adminPIN: adminPIN, replacing: false, created: 1)
        #expect(info.status == .imported && info.generationTime == 1)
        #expect(
            info.fingerprint == (try OpenPGPFingerprint.v4(first.publicKey, attributes: info.attributes!, created: 1)))
        let second = try AsymmetricPrivateKey.generate(.rsa(bits: 2048))
        await #expect(throws: OpenPGPOperationError.slotHoldsKey(.signature)) {
            try await ops.importKey(second, into: .signature, adminPIN: adminPIN, replacing: false, created: 2)
        }
        #expect(try await ops.keyInfo(.signature).attributes == .ecc(.ed25519, slot: .signature))
        // A kind the slot does not take is refused before the admin PIN is tried.
        let x25519 = try AsymmetricPrivateKey.generate(.x25519)
        await #expect(throws: OpenPGPError.unsupportedAlgorithm) {
            try await ops.importKey(x25519, into: .authentication, adminPIN: pin, replacing: true, created: 2)
        }
        #expect(try await ops.overview().data.passwordStatus.triesAdmin == 3)
        let replaced = try await ops.importKey(
            second, into: .signature, adminPIN: adminPIN, replacing: true, created: 2)
        #expect(replaced.attributes == .rsa(bits: 2048) && replaced.generationTime == 2)
        #expect(key.allClosed)
    }

    @Test func attestWithThePIN() async throws {
        let key = OpenPGPKey()
        let ops = OpenPGPOperations(key)
        let p384 = try AsymmetricPrivateKey.generate(.p384)
        _ = try await ops.importKey(p384, into: .decryption, adminPIN: adminPIN, replacing: false, created: 5)
        let attestation = try await ops.attest(.decryption, pin: pin)
        #expect(attestation.publicKey == p384.publicKey)
        #expect(
            attestation.certificate.isSigned(
                byKey: try #require(attestation.attestationCertificate.subjectPublicKeyInfo)))
        #expect(key.allClosed)
    }

    @Test func certificatesPerSlot() async throws {
        let key = OpenPGPKey()
        let ops = OpenPGPOperations(key)
        var certificates = [OpenPGP.KeySlot: X509Certificate]()
        // Only the attestation key has a certificate at first (the one it left the factory with).
        #expect(try await ops.certificate(.attestation) != nil)
        for slot in OpenPGP.KeySlot.allCases {
            #expect(try await ops.certificate(slot) == nil || slot == .attestation)
            let signer = try AsymmetricPrivateKey.generate(.p256)
            let certificate = try CertificateIssuer.issue(
                subject: [.init("CN", slot.name)], publicKey: signer.publicKey, serial: [1], validity: .days(1),
                signingKey: signer)
            try await ops.importCertificate(certificate, slot, adminPIN: adminPIN)
            certificates[slot] = certificate
        }
        for slot in OpenPGP.KeySlot.allCases {
            #expect(try await ops.certificate(slot)?.der == certificates[slot]?.der)
        }
        try await ops.deleteCertificate(.decryption, adminPIN: adminPIN)
        #expect(try await ops.certificate(.decryption) == nil)
        #expect(try await ops.certificate(.signature)?.der == certificates[.signature]?.der)
        await #expect(throws: OpenPGPError.wrongPassword(.admin, retriesLeft: 2)) {
            try await ops.deleteCertificate(.signature, adminPIN: SecretBytes(utf8: "87654321"))
        }
        #expect(key.allClosed)
    }

    @Test func resetRestoresTheDefaults() async throws {
        let key = OpenPGPKey()
        let ops = OpenPGPOperations(key)
        try await ops.changePIN(current: pin, new: SecretBytes(utf8: "11223344"))
        try await ops.setTouchPolicy(.signature, .fixed, adminPIN: adminPIN, confirmed: true)
        let attestation = key.key.state.openpgp.slots[.attestation]
        try await ops.reset()
        // The defaults, but for the attestation key the key left the factory with (and its certificate).
        var state = key.key.state.openpgp
        #expect(state.slots[.attestation] == attestation && state.objects.count == 1)
        state.slots[.attestation] = OpenPGPState().slots[.attestation]
        state.objects = [:]
        #expect(state == OpenPGPState())
        try await ops.changePIN(current: pin, new: pin)
        #expect(key.allClosed)
    }
}
