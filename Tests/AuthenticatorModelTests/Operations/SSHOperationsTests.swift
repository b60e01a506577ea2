import Foundation
import KeyKit
import Testing
import VirtualKey
@testable import AuthenticatorModel

/// The virtual key's FIDO HID interface, for the SSH key operations.
private struct SSHKey: FIDOOpener {
    let key = VirtualKey(state: VirtualKeyState.yubiKey5NFC(), touchDelay: 0)

    func openFIDO() async throws -> any FIDOConnection {
        try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "Virtual Key (FIDO HID)")
    }
}

@Suite struct SSHOperationsTests {
    static let pin = "ssh-pin-4711"

    @Test func aKeyMadeIsListedAsOpenSSHFindsItAndASecondForTheSameUserIsRefused() async throws {
        let operations = FIDOOperations(SSHKey())
        _ = try await operations.setPIN(Self.pin)
        let made = try await operations.newSSHKey(
            application: "ssh:work", user: "alice", type: .ecdsa, verifyRequired: false, touchRequired: true,
            replacing: false, pin: Self.pin)
        #expect(made.key.flags == [.userPresenceRequired, .residentKey])
        #expect(made.userID == Array("alice".utf8) + [UInt8](repeating: 0, count: 27))
        #expect(made.user == "alice" && made.exportName == "id_ecdsa_sk_rk_work_alice")
        let listed = try await operations.sshKeys(.pin(Self.pin))
        #expect(listed.count == 1)
        #expect(listed.first?.key == made.key && listed.first?.credProtect == 2 && listed.first?.userName == "openssh")
        await #expect(throws: SSHOperationError.exists(application: "ssh:work", user: "alice")) {
            _ = try await operations.newSSHKey(
                application: "ssh:work", user: "alice", type: .ecdsa, verifyRequired: true, touchRequired: true,
                replacing: false, pin: Self.pin)
        }
        // Replacing: the key keeps one SSH key for the pair, now needing the PIN (credProtect 3).
        let replaced = try await operations.newSSHKey(
            application: "ssh:work", user: "alice", type: .ecdsa, verifyRequired: true, touchRequired: true,
            replacing: true, pin: Self.pin)
        let after = try await operations.sshKeys(.pin(Self.pin))
        #expect(after.map(\.credentialID) == [replaced.credentialID] && after[0].credProtect == 3)
        #expect(after[0].key.flags.contains(.userVerificationRequired))
    }

    @Test func aKeyWithAPINWantsItAndBadInputIsRefusedBeforeTheKeyIsAsked() async throws {
        let operations = FIDOOperations(SSHKey())
        _ = try await operations.setPIN(Self.pin)
        do {
            _ = try await operations.newSSHKey(
                application: "ssh:", user: nil, type: .ecdsa, verifyRequired: false, touchRequired: true,
                replacing: false, pin: nil)
            Issue.record("made without the PIN")
        } catch FIDOOperationError.pinNeeded {
        }
        await #expect(throws: SSHOperationError.notAnSSHApplication("web")) {
            _ = try await operations.newSSHKey(
                application: "web", user: nil, type: .ecdsa, verifyRequired: false, touchRequired: true,
                replacing: false, pin: Self.pin)
        }
        let long = String(repeating: "u", count: 32)
        await #expect(throws: SSHOperationError.userTooLong(long)) {
            _ = try await operations.newSSHKey(
                application: "ssh:", user: long, type: .ecdsa, verifyRequired: false, touchRequired: true,
                replacing: false, pin: Self.pin)
        }
    }

    @Test func theFileNameIsSSHKeygensAndAUserWithAPathCharacterIsWrittenInHex() {
        func key(_ application: String, _ user: [UInt8]) -> SSHKeyOnKey {
            SSHKeyOnKey(
                key: SecurityKeySSHKey(
                    publicKey: .ed25519(Array(repeating: 1, count: 32)), application: application, flags: [],
                    keyHandle: [1]),
                userID: user + [UInt8](repeating: 0, count: 32 - user.count), userName: "openssh", credProtect: 2)
        }
        #expect(key("ssh:", []).exportName == "id_ed25519_sk_rk" && key("ssh:", []).user == nil)
        #expect(key("ssh:work", []).exportName == "id_ed25519_sk_rk_work")
        #expect(key("ssh://host", Array("bob".utf8)).exportName == "id_ed25519_sk_rk_host_bob")
        #expect(key("ssh:", Array("a/b".utf8)).exportName == "id_ed25519_sk_rk__612f62")
        #expect(key("ssh:x", Array("..".utf8)).exportName == "id_ed25519_sk_rk_x_2e2e")
    }
}
