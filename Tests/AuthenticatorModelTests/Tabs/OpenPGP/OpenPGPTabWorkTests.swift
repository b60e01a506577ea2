import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The OpenPGP tab's commands performed by the real runner against the virtual key in process, checked against
/// what the card then holds (read through `OpenPGPOperations`, as the command line reads it).
@Suite("Runner: OpenPGP tab against the virtual key")
struct OpenPGPTabWorkTests {
    /// The in-process key as a smart-card interface of its own, for the checks beside the runner.
    struct Opener: SmartCardOpener {
        let key: VirtualKey
        func openSmartCard() async throws -> any SmartCardConnection { VirtualKeyConnection(key: key) }
    }

    static func harness() -> (Harness, KeyDescriptor, OpenPGPOperations, String) {
        let backend = InProcessBackend(VirtualKeyState.yubiKey5NFC())
        let dir = temporaryDirectory()
        return (
            Harness(backend, directory: dir), InProcessBackend.descriptor, OpenPGPOperations(Opener(key: backend.key)),
            dir
        )
    }

    static func answer(_ msg: Msg) -> OpenPGPTabMsg? {
        if case .openpgp(let m) = msg { return m }
        return nil
    }

    static let adminPIN = SecretBytes(utf8: "12345678")

    @Test func loadShowsTheCardAsItIs() async throws {
        let (h, d, ops, _) = Self.harness()
        let key = try AsymmetricPrivateKey.generate(.ed25519)
        let imported = try await ops.importKey(
            key, into: .signature, adminPIN: Self.adminPIN, replacing: false, created: 1_767_225_600)
        let msg = try await h.run(.openpgp(.load(d)), Self.answer)
        guard case .loaded(let id, let info) = msg else { Issue.record("\(msg)"); return }
        #expect(id == d.id && info.version == "5.7.2" && info.specification == "3.4" && info.serial == 28_123_456)
        #expect(info.pinTries == 3 && info.resetCodeTries == 0 && info.adminPINTries == 3)
        #expect(info.signatureCounter == 0 && !info.pinForSeveralSignatures && info.canAttest)
        #expect(info.keys.map(\.slot) == [.signature, .decryption, .authentication])
        let sig = info.keys[0]
        #expect(sig.hasKey && sig.algorithm == "Ed25519" && sig.fingerprint == imported.fingerprint)
        #expect(sig.created == 1_767_225_600 && sig.origin == .imported && sig.touchPolicy == .off)
        #expect(sig.fingerprintText?.count == 49)
        #expect(!info.keys[1].hasKey && info.keys[1].fingerprintText == nil)
    }

    @Test func aKeyWithOpenPGPTurnedOffIsNotAvailable() async throws {
        var state = VirtualKeyState.yubiKey5NFC()
        state.usbEnabled &= ~Capabilities.openpgp.rawValue
        state.nfcEnabled &= ~Capabilities.openpgp.rawValue
        let h = Harness(InProcessBackend(state), directory: temporaryDirectory())
        let msg = try await h.run(.openpgp(.load(InProcessBackend.descriptor)), Self.answer)
        guard case .failed(_, let failure) = msg, failure.operation == .load, case .notAvailable = failure.reason else {
            Issue.record("\(msg)")
            return
        }
    }

    @Test func aPINChangedInTheTabIsTheOneTheCardThenWants() async throws {
        let (h, d, ops, _) = Self.harness()
        let changed = try await h.run(.openpgp(.changePIN(d, current: "123456", new: "24681357")), Self.answer)
        guard case .changed(_, .changePIN, let info) = changed else { Issue.record("\(changed)"); return }
        #expect(info.pinTries == 3)
        await #expect(throws: OpenPGPError.wrongPassword(.user, retriesLeft: 2)) {
            try await ops.changePIN(current: SecretBytes(utf8: "123456"), new: SecretBytes(utf8: "654321"))
        }
        try await ops.changePIN(current: SecretBytes(utf8: "24681357"), new: SecretBytes(utf8: "123456"))
        // A wrong current PIN: the tries the card tells.
        let wrong = try await h.run(.openpgp(.changePIN(d, current: "000000", new: "24681357")), Self.answer)
        #expect(wrong == .failed(keyID: d.id, OpenPGPFailure(.changePIN, .wrongPassword(.user, retriesLeft: 2))))
    }

    @Test func theResetCodeUnblocksAndTheAdminPINChanges() async throws {
        let (h, d, _, _) = Self.harness()
        let set = try await h.run(.openpgp(.setResetCode(d, adminPIN: "12345678", new: "resetcode1")), Self.answer)
        guard case .changed(_, .setResetCode, let info) = set else { Issue.record("\(set)"); return }
        #expect(info.resetCodeTries == 3)
        for _ in 0..<3 { _ = try await h.run(.openpgp(.changePIN(d, current: "000000", new: "24681357")), Self.answer) }
        let blocked = try await h.run(.openpgp(.changePIN(d, current: "123456", new: "24681357")), Self.answer)
        #expect(blocked == .failed(keyID: d.id, OpenPGPFailure(.changePIN, .passwordBlocked(.user))))
        let unblocked = try await h.run(
            .openpgp(.unblockPIN(d, resetCode: "resetcode1", adminPIN: nil, new: "135792")), Self.answer)
        guard case .changed(_, .unblockPIN, let after) = unblocked else { Issue.record("\(unblocked)"); return }
        #expect(after.pinTries == 3)
        let admin = try await h.run(.openpgp(.changeAdminPIN(d, current: "12345678", new: "87654321")), Self.answer)
        guard case .changed(_, .changeAdminPIN, _) = admin else { Issue.record("\(admin)"); return }
        let withAdmin = try await h.run(
            .openpgp(.unblockPIN(d, resetCode: nil, adminPIN: "12345678", new: "135792")), Self.answer)
        #expect(withAdmin == .failed(keyID: d.id, OpenPGPFailure(.unblockPIN, .wrongPassword(.admin, retriesLeft: 2))))
    }

    @Test func theKDFTurnedOnInTheTabDerivesThePINsThatFollow() async throws {
        let (h, d, ops, _) = Self.harness()
        let wrong = try await h.run(.openpgp(.setKDF(d, on: true, adminPIN: "00000000")), Self.answer)
        #expect(wrong == .failed(keyID: d.id, OpenPGPFailure(.kdf, .wrongPassword(.admin, retriesLeft: 2))))
        let on = try await h.run(.openpgp(.setKDF(d, on: true, adminPIN: "12345678")), Self.answer)
        guard case .changed(_, .kdf, let info) = on else { Issue.record("\(on)"); return }
        #expect(info.kdfEnabled && info.adminPINTries == 3)
        // The tab's next PIN change goes derived, and so does the command line's.
        let changed = try await h.run(.openpgp(.changePIN(d, current: "123456", new: "24681357")), Self.answer)
        guard case .changed(_, .changePIN, _) = changed else { Issue.record("\(changed)"); return }
        try await ops.changePIN(current: SecretBytes(utf8: "24681357"), new: SecretBytes(utf8: "123456"))
        let off = try await h.run(.openpgp(.setKDF(d, on: false, adminPIN: "12345678")), Self.answer)
        guard case .changed(_, .kdf, let after) = off else { Issue.record("\(off)"); return }
        #expect(!after.kdfEnabled)
    }

    @Test func touchPoliciesAreTheCardsAndAFixedOneNeedsTheYes() async throws {
        let (h, d, ops, _) = Self.harness()
        let unconfirmed = try await h.run(
            .openpgp(.setTouchPolicy(d, slot: .signature, policy: .fixed, adminPIN: "12345678", confirmed: false)),
            Self.answer)
        guard case .failed(_, let failure) = unconfirmed, case .other = failure.reason else {
            Issue.record("\(unconfirmed)")
            return
        }
        #expect(try await ops.overview().data.key(.signature)?.touchPolicy == .off)
        let set = try await h.run(
            .openpgp(.setTouchPolicy(d, slot: .signature, policy: .fixed, adminPIN: "12345678", confirmed: true)),
            Self.answer)
        guard case .touchPolicySet(_, .signature, let info) = set else { Issue.record("\(set)"); return }
        #expect(info.keys[0].touchPolicy == .fixed)
        #expect(try await ops.overview().data.key(.signature)?.touchPolicy == .fixed)
        let cached = try await h.run(
            .openpgp(
                .setTouchPolicy(d, slot: .authentication, policy: .cached, adminPIN: "12345678", confirmed: false)),
            Self.answer)
        guard case .touchPolicySet(_, .authentication, _) = cached else { Issue.record("\(cached)"); return }
        #expect(try await ops.overview().data.key(.authentication)?.touchPolicy == .cached)
    }

    @Test func attestationBecomesTheCertificateTheExportWrites() async throws {
        let (h, d, ops, dir) = Self.harness()
        let key = try AsymmetricPrivateKey.generate(.p256)
        _ = try await ops.importKey(key, into: .authentication, adminPIN: Self.adminPIN, replacing: false, created: 7)
        let path = dir + "/aut.pem"
        let none = try await h.run(
            .openpgp(.export(d, slot: .authentication, path: path, overwrite: false)), Self.answer)
        #expect(
            none
                == .failed(
                    keyID: d.id, OpenPGPFailure(.export, .other(UIText("openpgp.noCertificate", ["slot": "AUT"])))))
        let attested = try await h.run(.openpgp(.attest(d, slot: .authentication, pin: "123456")), Self.answer)
        guard case .attested(_, .authentication, let issuer, _) = attested else { Issue.record("\(attested)"); return }
        #expect(!issuer.isEmpty)
        let exported = try await h.run(
            .openpgp(.export(d, slot: .authentication, path: path, overwrite: false)), Self.answer)
        #expect(exported == .exported(keyID: d.id, slot: .authentication, path: path))
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        let certificate = try #require(try await ops.certificate(.authentication))
        #expect(pem == certificate.pem)
        #expect(try AsymmetricPublicKey(spki: #require(certificate.subjectPublicKeyInfo)) == key.publicKey)
        let again = try await h.run(
            .openpgp(.export(d, slot: .authentication, path: path, overwrite: false)), Self.answer)
        #expect(again == .exportExists(keyID: d.id, path: path))
    }

    @Test func theResetBringsTheDefaultsBack() async throws {
        let (h, d, ops, _) = Self.harness()
        _ = try await ops.importKey(
            try AsymmetricPrivateKey.generate(.ed25519), into: .signature, adminPIN: Self.adminPIN, replacing: false,
            created: 1)
        try await ops.changePIN(current: SecretBytes(utf8: "123456"), new: SecretBytes(utf8: "24681357"))
        let reset = try await h.run(.openpgp(.reset(d)), Self.answer)
        guard case .changed(_, .reset, let info) = reset else { Issue.record("\(reset)"); return }
        #expect(!info.keys.contains { $0.hasKey } && info.pinTries == 3)
        try await ops.changePIN(current: SecretBytes(utf8: "123456"), new: SecretBytes(utf8: "24681357"))
    }
}
