import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The PIV tab's commands performed by the real runner against the virtual key in process, with the PIV demo
/// (an EC P-256 key, PIN once, and its self-signed certificate in 9A).
@Suite("Runner: PIV tab against the virtual key")
struct PIVTabWorkTests {
    static func harness(touch: PIV.TouchPolicy = .never) -> (Harness, KeyDescriptor, String) {
        var state = VirtualKeyState.yubiKey5NFC()
        state.piv.installDemo()
        state.piv.keys[.authentication]?.touchPolicy = touch
        let dir = temporaryDirectory()
        return (Harness(InProcessBackend(state), directory: dir), InProcessBackend.descriptor, dir)
    }

    static func answer(_ msg: Msg) -> PIVTabMsg? {
        if case .piv(let m) = msg, !isTouch(m) { return m }
        return nil
    }

    static func isTouch(_ m: PIVTabMsg) -> Bool {
        if case .touch = m { return true }
        return false
    }

    @Test func loadShowsTheDemoSlotAndTheDefaults() async throws {
        let (h, d, _) = Self.harness()
        let msg = try await h.run(.piv(.load(d)), Self.answer)
        guard case .loaded(let id, let info) = msg else { Issue.record("\(msg)"); return }
        #expect(id == d.id)
        #expect(info.pinRetries == 3 && info.pinTotal == 3 && info.pukRetries == 3 && info.hasMetadata)
        #expect(info.pinDefault == true && info.pukDefault == true && info.managementKeyDefault == true)
        let slot = try #require(info.slots.first { $0.slot == .authentication })
        #expect(slot.key?.algorithm == .eccP256 && slot.key?.origin == .imported && slot.key?.pinPolicy == .once)
        #expect(slot.certificate?.subject == "CN=ykterm demo" && slot.certificateMatchesKey == true)
        #expect(slot.certificate?.fingerprint.count == 95)
    }

    @Test func verifyWithThePINSignsAndChecks() async throws {
        let (h, d, _) = Self.harness()
        let msg = try await h.run(.piv(.verify(d, slot: .authentication, pin: "123456")), Self.answer)
        guard case .verified(_, let slot, let outcome, let info) = msg else { Issue.record("\(msg)"); return }
        #expect(slot == .authentication && outcome == .verified(.eccP256) && info.pinRetries == 3)
        // Without the PIN the key refuses: the tab asks for it.
        let refused = try await h.run(.piv(.verify(d, slot: .authentication, pin: nil)), Self.answer)
        #expect(refused == .failed(keyID: d.id, PIVFailure(.verify, .pinRequired)))
        let wrong = try await h.run(.piv(.verify(d, slot: .authentication, pin: "000000")), Self.answer)
        #expect(wrong == .failed(keyID: d.id, PIVFailure(.verify, .wrongPIN(retriesLeft: 2))))
    }

    @Test func aSlotThatWantsATouchSaysSoBeforeSigning() async throws {
        let (h, d, _) = Self.harness(touch: .always)
        _ = try await h.run(.piv(.verify(d, slot: .authentication, pin: "123456")), Self.answer)
        let touches = h.messages.withLock { $0 }.compactMap { msg -> Bool? in
            if case .piv(.touch(_, let waiting)) = msg { return waiting }
            return nil
        }
        #expect(touches == [true, false])
    }

    @Test func pinChangesAreTheKeysAndTheUnblockTakesThePUK() async throws {
        let (h, d, _) = Self.harness()
        let changed = try await h.run(.piv(.changePIN(d, current: "123456", new: "24681357")), Self.answer)
        guard case .changed(_, .changePIN, let info) = changed else { Issue.record("\(changed)"); return }
        #expect(info.pinDefault == false)
        let old = try await h.run(.piv(.verify(d, slot: .authentication, pin: "123456")), Self.answer)
        #expect(old == .failed(keyID: d.id, PIVFailure(.verify, .wrongPIN(retriesLeft: 2))))
        let wrong = try await h.run(.piv(.changePIN(d, current: "000000", new: "11111111")), Self.answer)
        #expect(wrong == .failed(keyID: d.id, PIVFailure(.changePIN, .wrongPIN(retriesLeft: 1))))
        let blocked = try await h.run(.piv(.verify(d, slot: .authentication, pin: "000000")), Self.answer)
        #expect(blocked == .failed(keyID: d.id, PIVFailure(.verify, .pinBlocked)))
        let wrongPUK = try await h.run(.piv(.unblockPIN(d, puk: "00000000", new: "135792")), Self.answer)
        #expect(wrongPUK == .failed(keyID: d.id, PIVFailure(.unblockPIN, .wrongPUK(retriesLeft: 2))))
        let unblocked = try await h.run(.piv(.unblockPIN(d, puk: "12345678", new: "135792")), Self.answer)
        guard case .changed(_, .unblockPIN, let after) = unblocked else { Issue.record("\(unblocked)"); return }
        // A right PUK gives the PUK its tries back too.
        #expect(after.pinRetries == 3 && after.pukRetries == 3)
        let verified = try await h.run(.piv(.verify(d, slot: .authentication, pin: "135792")), Self.answer)
        guard case .verified(_, _, .verified(.eccP256), _) = verified else { Issue.record("\(verified)"); return }
        let puk = try await h.run(.piv(.changePUK(d, current: "12345678", new: "87654321")), Self.answer)
        guard case .changed(_, .changePUK, let last) = puk else { Issue.record("\(puk)"); return }
        #expect(last.pukDefault == false && last.pukRetries == 3)
    }

    @Test func exportWritesPEMAndAsksBeforeReplacing() async throws {
        let (h, d, dir) = Self.harness()
        let path = dir + "/9a.pem"
        let done = try await h.run(.piv(.export(d, slot: .authentication, path: path, overwrite: false)), Self.answer)
        #expect(done == .exported(keyID: d.id, slot: .authentication, path: path))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasPrefix("-----BEGIN CERTIFICATE-----\n") && text.hasSuffix("-----END CERTIFICATE-----\n"))
        let der = try #require(PEM.decode(text, label: PEM.certificate)?.first)
        #expect(try X509Certificate(der: der).subject == "CN=ykterm demo")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o644)
        try "old".write(toFile: path, atomically: true, encoding: .utf8)
        let exists = try await h.run(.piv(.export(d, slot: .authentication, path: path, overwrite: false)), Self.answer)
        #expect(exists == .exportExists(keyID: d.id, path: path))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        _ = try await h.run(.piv(.export(d, slot: .authentication, path: path, overwrite: true)), Self.answer)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
        // A slot without a certificate, and a directory that does not exist, are explained.
        let none = try await h.run(
            .piv(.export(d, slot: .signature, path: dir + "/9c.pem", overwrite: false)), Self.answer)
        #expect(none == .failed(keyID: d.id, PIVFailure(.export, .other(UIText("piv.noCertificate", ["slot": "9C"])))))
        let nowhere = try await h.run(
            .piv(.export(d, slot: .authentication, path: dir + "/no/such/x.pem", overwrite: false)),
            Self.answer)
        guard case .failed(_, let failure) = nowhere, case .other(let why) = failure.reason else {
            Issue.record("\(nowhere)"); return
        }
        #expect(why.key == ErrorKind.fileUnwritable.textKey)
    }

    /// The harness with its backend, for operations the test runs itself (what another program did to the key).
    static func harnessAndKey(touch: PIV.TouchPolicy = .never) -> (Harness, KeyDescriptor, PIVOperations) {
        var state = VirtualKeyState.yubiKey5NFC()
        state.piv.installDemo()
        state.piv.keys[.authentication]?.touchPolicy = touch
        let backend = InProcessBackend(state)
        let d = InProcessBackend.descriptor
        return (Harness(backend, directory: temporaryDirectory()), d, PIVOperations(BackendKey(backend, d)))
    }

    @Test func aCertificateMadeOnTheKeyIsStoredInTheSlotAndSignedByItsKey() async throws {
        let (h, d, piv) = Self.harnessAndKey()
        let command = PIVTabCommand.generateCertificate(
            d, slot: .authentication, subject: "CN=alice, O=Example", days: 30, pin: "123456", managementKey: nil)
        let msg = try await h.run(.piv(command), Self.answer)
        guard case .certificateGenerated(let id, let slot, let subject, let info?) = msg else {
            Issue.record("\(msg)"); return
        }
        #expect(id == d.id && slot == .authentication && subject == "CN=alice, O=Example")
        // The tab gets the key read again: 9A's new certificate, whose key is the slot's.
        let row = try #require(info.slots.first { $0.slot == .authentication })
        #expect(row.certificate?.subject == subject && row.certificateMatchesKey == true)
        let certificate = try #require(try await piv.certificate(in: .authentication))
        #expect(certificate.subject == subject && certificate.issuer == subject)
        #expect(certificate.isSigned(by: try await piv.publicKey(in: .authentication)))
        let start = try #require(certificate.notBefore), end = try #require(certificate.notAfter)
        #expect(abs(end.timeIntervalSince(start) - 30 * 86_400) < 2)
    }

    @Test func theCertificatesPINAndManagementKeyAreTheKeys() async throws {
        let (h, d, piv) = Self.harnessAndKey()
        func generate(pin: String?, managementKey: String?) async throws -> PIVTabMsg {
            try await h.run(
                .piv(
                    .generateCertificate(
                        d, slot: .authentication, subject: "CN=bob", days: 365, pin: pin,
                        managementKey: managementKey)), Self.answer)
        }
        func failure(_ reason: PIVFailureReason) -> PIVTabMsg {
            .failed(keyID: d.id, PIVFailure(.generateCertificate, reason))
        }
        #expect(try await generate(pin: nil, managementKey: nil) == failure(.pinRequired))
        #expect(try await generate(pin: "000000", managementKey: nil) == failure(.wrongPIN(retriesLeft: 2)))
        // A management key that is not the default: asked for, a wrong one refused, nothing stored meanwhile.
        let set = try await piv.changeManagementKey(
            algorithm: nil, to: .generate, requireTouch: false, managementKey: nil)
        let hex = Hex.encode(set.copyBytes())
        #expect(try await generate(pin: "123456", managementKey: nil) == failure(.managementKeyRequired))
        let wrong = String(repeating: "07", count: 24)
        #expect(try await generate(pin: "123456", managementKey: wrong) == failure(.wrongManagementKey))
        #expect(try await piv.certificate(in: .authentication)?.subject == "CN=ykterm demo")
        // Typed with separators, as the dialog takes it.
        let spaced = stride(from: 0, to: hex.count, by: 8).map { start -> String in
            let from = hex.index(hex.startIndex, offsetBy: start)
            return String(hex[from..<hex.index(from, offsetBy: 8)])
        }.joined(separator: " ")
        let done = try await generate(pin: "123456", managementKey: spaced)
        guard case .certificateGenerated(_, _, "CN=bob", _) = done else { Issue.record("\(done)"); return }
        #expect(try await piv.certificate(in: .authentication)?.subject == "CN=bob")
    }

    @Test func aSlotThatWantsATouchSaysSoBeforeSigningTheCertificate() async throws {
        let (h, d, _) = Self.harnessAndKey(touch: .always)
        let msg = try await h.run(
            .piv(
                .generateCertificate(
                    d, slot: .authentication, subject: "CN=touched", days: 1, pin: "123456", managementKey: nil)),
            Self.answer)
        guard case .certificateGenerated = msg else { Issue.record("\(msg)"); return }
        let touches = h.messages.withLock { $0 }.compactMap { msg -> Bool? in
            if case .piv(.touch(_, let waiting)) = msg { return waiting }
            return nil
        }
        #expect(touches == [true, false])
    }

    @Test func theSSHLineIsTheCommandLinesAndKeysWithoutOneAreExplained() async throws {
        let (h, d, piv) = Self.harnessAndKey()
        let msg = try await h.run(.piv(.sshKey(d, slot: .authentication)), Self.answer)
        let key = try await piv.publicKey(in: .authentication)
        let expected = try #require(SSHPublicKey.authorizedKeysLine(key, comment: "PIV slot 9A"))
        #expect(msg == .sshKeyRead(keyID: d.id, slot: .authentication, line: expected))
        #expect(expected.hasPrefix("ecdsa-sha2-nistp256 ") && expected.hasSuffix(" PIV slot 9A"))
        // An empty slot has no public key.
        let empty = try await h.run(.piv(.sshKey(d, slot: .signature)), Self.answer)
        #expect(
            empty
                == .failed(
                    keyID: d.id,
                    PIVFailure(.sshKey, .other(ErrorExplanation(PIVError.noKeyInSlot(.signature)).text))))
        // An X25519 key has no SSH form.
        _ = try await piv.generateKey(
            in: .keyManagement, algorithm: .x25519, pinPolicy: .default, touchPolicy: .never, managementKey: nil)
        let x25519 = try await h.run(.piv(.sshKey(d, slot: .keyManagement)), Self.answer)
        #expect(
            x25519
                == .failed(
                    keyID: d.id,
                    PIVFailure(
                        .sshKey, .other(UIText("piv.sshKey.unsupported", ["slot": "9D", "algorithm": "X25519"])))))
    }
}
