import Foundation
import KeyKit
import Testing
@testable import VirtualKey

/// An Enhanced PIN key (PIN complexity enforced): the device information says so, and PIV, OpenPGP and FIDO2
/// refuse new PINs too easy to guess — with the answers a real key gives (6985; CTAP2_ERR_PIN_POLICY_VIOLATION),
/// which KeyKit turns into `tooSimple` and the PIN policy error. The same values pass on a key without it.
@Suite struct PINComplexityTests {
    static func key(complexity: Bool = true) -> VirtualKey {
        var state = VirtualKeyState.yubiKey5NFC()
        state.pinComplexity = complexity
        return VirtualKey(state: state, touchDelay: 0)
    }

    @Test func deviceInformationSaysSoAndNamesTheKey() async throws {
        let management = try await ManagementSession.make(connection: VirtualKeyConnection(key: Self.key()))
        let info = try await management.deviceInfo()
        #expect(info.pinComplexity && info.productName == "YubiKey 5 NFC - Enhanced PIN")
        let plain = try await ManagementSession.make(connection: VirtualKeyConnection(key: Self.key(complexity: false)))
        #expect(try await plain.deviceInfo().pinComplexity == false)
    }

    @Test func theRule() {
        for refused in ["111111", "aaaaaaaa", "123456", "12345678", "password", "ääääää"] {
            #expect(!PINComplexity.allows(Array(refused.utf8)), "\(refused)")
        }
        for allowed in ["482916", "112211", "Password", "correct horse", "äöüäöü"] {
            #expect(PINComplexity.allows(Array(allowed.utf8)), "\(allowed)")
        }
    }

    @Test func pivRefusesSimplePINsAndPUKs() async throws {
        let key = Self.key()
        let piv = try await PIVSession.make(connection: VirtualKeyConnection(key: key))
        let pin = SecretBytes(utf8: "123456")
        let puk = SecretBytes(utf8: "12345678")
        await #expect(throws: PIVError.tooSimple(puk: false)) {
            try await piv.changePIN(old: pin, new: SecretBytes(utf8: "111111"))
        }
        await #expect(throws: PIVError.tooSimple(puk: true)) {
            try await piv.changePUK(old: puk, new: SecretBytes(utf8: "87654321"))
        }
        await #expect(throws: PIVError.tooSimple(puk: false)) {
            try await piv.unblockPIN(puk: puk, newPIN: SecretBytes(utf8: "000000"))
        }
        // Nothing changed and no try was spent: the current PIN and PUK still work, with every try left.
        #expect(key.state.piv.pin == PIVState.padded(PIV.defaultPIN) && key.state.piv.pinTriesLeft == 3)
        #expect(key.state.piv.pukTriesLeft == 3)
        try await piv.changePIN(old: pin, new: SecretBytes(utf8: "482916"))
        try await piv.changePUK(old: puk, new: SecretBytes(utf8: "93172648"))
        try await piv.verifyPIN(SecretBytes(utf8: "482916"))
    }

    @Test func openPGPRefusesSimplePasswords() async throws {
        let key = Self.key()
        let session = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        let pin = SecretBytes(utf8: "123456")
        let admin = SecretBytes(utf8: "12345678")
        await #expect(throws: OpenPGPError.tooSimple(.user)) {
            try await session.changePassword(.user, old: pin, new: SecretBytes(utf8: "999999"))
        }
        await #expect(throws: OpenPGPError.tooSimple(.admin)) {
            try await session.changePassword(.admin, old: admin, new: SecretBytes(utf8: "password"))
        }
        try await session.verifyAdminPIN(admin)
        await #expect(throws: OpenPGPError.tooSimple(.reset)) {
            try await session.setResetCode(SecretBytes(utf8: "22222222"))
        }
        await #expect(throws: OpenPGPError.tooSimple(.user)) {
            try await session.unblockPIN(newPIN: SecretBytes(utf8: "654321"))
        }
        try await session.setResetCode(SecretBytes(utf8: "r3set-c0de"))
        await #expect(throws: OpenPGPError.tooSimple(.user)) {
            try await session.unblockPIN(
                newPIN: SecretBytes(utf8: "777777"), resetCode: SecretBytes(utf8: "r3set-c0de"))
        }
        #expect(key.state.openpgp.userPIN == Array("123456".utf8))
        try await session.changePassword(.user, old: pin, new: SecretBytes(utf8: "482916"))
        try await session.verifyPIN(SecretBytes(utf8: "482916"))
    }

    @Test func fido2RefusesSimplePINs() async throws {
        let key = Self.key()
        let (s, c) = try await CTAP2OverHIDTests.session(key)
        await #expect(throws: CTAPError(CTAPError.pinPolicyViolation)) { try await s.setPIN("4444") }
        await #expect(throws: CTAPError(CTAPError.pinPolicyViolation)) { try await s.setPIN("123456") }
        #expect(!key.state.fido.isPINSet)
        try await s.setPIN("482916")
        await #expect(throws: CTAPError(CTAPError.pinPolicyViolation)) {
            try await s.changePIN(old: "482916", new: "abc123")
        }
        try await s.changePIN(old: "482916", new: "4829-16")
        await c.close()
    }

    @Test func aKeyWithoutItTakesTheSameValues() async throws {
        let key = Self.key(complexity: false)
        let piv = try await PIVSession.make(connection: VirtualKeyConnection(key: key))
        try await piv.changePIN(old: SecretBytes(utf8: "123456"), new: SecretBytes(utf8: "111111"))
        let (s, c) = try await CTAP2OverHIDTests.session(key)
        try await s.setPIN("4444")
        await c.close()
    }

    @Test func theStateFileKeepsItAndOlderFilesLoadWithout() throws {
        var state = VirtualKeyState.yubiKey5NFC()
        state.pinComplexity = true
        let data = try JSONEncoder().encode(state)
        #expect(try JSONDecoder().decode(VirtualKeyState.self, from: data).pinComplexity)
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        object.removeValue(forKey: "pinComplexity")
        let older = try JSONSerialization.data(withJSONObject: object)
        #expect(try JSONDecoder().decode(VirtualKeyState.self, from: older).pinComplexity == false)
    }
}
