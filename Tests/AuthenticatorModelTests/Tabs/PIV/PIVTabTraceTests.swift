import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The trace of a PIV session, as the PIV tab's work and the command line make one: PINs, PUKs, management
/// keys, imported private keys, decrypted messages and shared secrets never reach it.
@Suite("Trace: PIV redaction")
struct PIVTraceRedactionTests {
    /// Every exchange of `body` on a fresh PIV session with the virtual key, as the trace shows it.
    static func traced(_ body: (PIVSession) async throws -> Void) async throws -> [RedactedExchange] {
        var state = VirtualKeyState.yubiKey5NFC()
        state.piv.installDemo()
        let key = VirtualKey(state: state)
        let exchanges = LockedValue<[APDUExchange]>([])
        let session = try await PIVSession.make(
            connection: VirtualKeyConnection(key: key),
            observer: { e in exchanges.withLock { $0.append(e) } })
        try await body(session)
        var redactor = APDURedactor()
        return exchanges.withLock { $0 }.map { redactor.redact(command: $0.command, response: $0.response) }
    }

    static func shown(_ trace: [RedactedExchange]) -> String {
        trace.map { "\($0.label ?? "-") \($0.command) -> \($0.response ?? "")" }.joined(separator: "\n")
    }

    static func hex(_ text: String) -> String { Array(text.utf8).hex.uppercased() }

    @Test func pinsAndPUKsAreRedactedAndTheCommandsNamed() async throws {
        let trace = try await Self.traced { s in
            try await s.verifyPIN(SecretBytes(utf8: "123456"))
            try await s.changePIN(old: SecretBytes(utf8: "123456"), new: SecretBytes(utf8: "97531864"))
            try await s.changePUK(old: SecretBytes(utf8: "12345678"), new: SecretBytes(utf8: "86420975"))
            try await s.unblockPIN(puk: SecretBytes(utf8: "86420975"), newPIN: SecretBytes(utf8: "24681357"))
            _ = try? await s.verifyPIN(SecretBytes(utf8: "999999"))
        }
        let text = Self.shown(trace)
        for secret in ["123456", "97531864", "12345678", "86420975", "24681357", "999999"] {
            #expect(!text.contains(Self.hex(secret)), "\(secret) in\n\(text)")
        }
        let labels = trace.compactMap(\.label)
        #expect(
            labels.contains("SELECT PIV") && labels.contains("PIV VERIFY") && labels.contains("PIV CHANGE REFERENCE")
                && labels.contains("PIV RESET RETRY COUNTER") && labels.contains("PIV GET VERSION"))
        let verify = try #require(trace.first { $0.label == "PIV VERIFY" })
        #expect(verify.command == "00200080 <8 bytes redacted>" && verify.response == "9000")
        // A wrong PIN's answer (63Cx) is shown: it says the tries left, nothing secret.
        #expect(trace.last?.response == "63C2")
    }

    @Test func managementKeysAndImportedKeysAreRedacted() async throws {
        let newKey = Array(repeating: UInt8(0x5A), count: 24)
        let privateKey = try AsymmetricPrivateKey.generate(.p256)
        let trace = try await Self.traced { s in
            try await s.authenticate(managementKey: SecretBytes(PIV.defaultManagementKey))
            try await s.setManagementKey(SecretBytes(newKey), algorithm: .aes192)
            try await s.authenticate(managementKey: SecretBytes(newKey), algorithm: .aes192)
            try await s.importKey(privateKey, in: .keyManagement)
        }
        let text = Self.shown(trace)
        #expect(!text.contains(newKey.hex.uppercased()) && !text.contains(PIV.defaultManagementKey.hex.uppercased()))
        #expect(!text.contains("5A5A5A5A5A5A5A5A"))
        let set = try #require(trace.first { $0.label == "PIV SET MANAGEMENT KEY" })
        #expect(set.command.hasPrefix("00FFFFFF <"))
        let imported = try #require(trace.first { $0.label == "PIV IMPORT KEY" })
        #expect(imported.command.contains("bytes redacted>") && !imported.command.contains("0620"))
        // The management key's challenges and answers (GENERAL AUTHENTICATE on 9B) too.
        let authentications = trace.filter { $0.label == "PIV GENERAL AUTHENTICATE" }
        #expect(authentications.count == 4)
        for a in authentications {
            #expect(a.command.contains("redacted"), "\(a.command)")
            #expect(a.response.map { $0.contains("redacted") || $0.count == 4 } ?? true, "\(a.response ?? "")")
        }
    }

    @Test func signaturesAndSharedSecretsAreRedactedCertificatesShown() async throws {
        let peer = try AsymmetricPrivateKey.generate(.p256)
        var secret = [UInt8]()
        let trace = try await Self.traced { s in
            _ = try await s.certificate(in: .authentication)
            try await s.verifyPIN(SecretBytes(utf8: "123456"))
            _ = try await s.sign(Array("message".utf8), in: .authentication)
            secret = try await s.sharedSecret(in: .authentication, peer: peer.publicKey)
        }
        let text = Self.shown(trace)
        #expect(secret.count == 32 && !text.contains(secret.hex.uppercased()))
        let getData = try #require(trace.first { $0.label == "PIV GET DATA" })
        // The certificate is public: shown.
        #expect(getData.response?.hasPrefix("53") == true && !(getData.response ?? "").contains("redacted"))
        for a in trace where a.label == "PIV GENERAL AUTHENTICATE" {
            #expect(a.response?.contains("bytes redacted> 9000") == true, "\(a.response ?? "")")
        }
    }

    @Test func thePrintedInformationObjectIsRedacted() {
        var r = APDURedactor()
        _ = r.redact(command: [0x00, 0xA4, 0x04, 0x00, 0x05] + AID.piv, response: [0x90, 0x00])
        #expect(r.application == .piv)
        let stored = Array(repeating: UInt8(0x77), count: 30)
        let put = r.redact(
            command: [0x00, 0xDB, 0x3F, 0xFF, 0x27, 0x5C, 0x03, 0x5F, 0xC1, 0x09, 0x53, 0x20, 0x88, 0x1E]
                + stored, response: [0x90, 0x00])
        #expect(put.label == "PIV PUT DATA" && put.command == "00DB3FFF <39 bytes redacted>")
        let get = r.redact(
            command: [0x00, 0xCB, 0x3F, 0xFF, 0x05, 0x5C, 0x03, 0x5F, 0xC1, 0x09, 0x00],
            response: [0x53, 0x20, 0x88, 0x1E] + stored + [0x90, 0x00])
        #expect(get.response == "<34 bytes redacted> 9000")
        // Another object's answer is shown.
        let chuid = r.redact(
            command: [0x00, 0xCB, 0x3F, 0xFF, 0x05, 0x5C, 0x03, 0x5F, 0xC1, 0x02, 0x00],
            response: [0x53, 0x01, 0x30, 0x90, 0x00])
        #expect(chuid.response == "530130 9000")
    }
}
