import KeyKit
import Testing
import VirtualKey

/// KeyKit's OpenPGPSession and the virtual key with the KDF on: the card stores and compares only derived PINs,
/// the session derives what it sends, and every password command still works; off again (or after a reset) the
/// PINs go as typed.
@Suite struct OpenPGPKDFOnVirtualKeyTests {
    static let pin = SecretBytes(utf8: "123456")
    static let adminPIN = SecretBytes(utf8: "12345678")

    @Test func thePasswordsWorkDerivedAndTheCardNeverSeesThemAsTyped() async throws {
        let key = VirtualKey(state: .yubiKey5NFC(), touchDelay: 0)
        let session = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        // Setting it needs the admin PIN.
        await #expect(throws: OpenPGPError.securityConditionNotSatisfied) {
            try await session.setKDF(OpenPGPKDF.make())
        }
        try await session.verifyAdminPIN(Self.adminPIN)
        try await session.setResetCode(SecretBytes(utf8: "resetcode1"))
        let kdf = OpenPGPKDF.make()
        try await session.setKDF(kdf)
        #expect(try await session.kdf() == kdf)
        // The defaults again, stored derived; the reset code is gone.
        #expect(key.state.openpgp.userPIN == kdf.initialUserHash && key.state.openpgp.adminPIN == kdf.initialAdminHash)
        let triesReset = try await session.passwordStatus().triesReset
        #expect(key.state.openpgp.resetCode == nil && triesReset == 0)
        try await session.verifyPIN(Self.pin)
        try await session.verifyAdminPIN(Self.adminPIN)
        await #expect(throws: OpenPGPError.wrongPassword(.user, retriesLeft: 2)) {
            try await session.verifyPIN(SecretBytes(utf8: "654321"))
        }

        let newPIN = SecretBytes(utf8: "24681357")
        try await session.changePassword(.user, old: Self.pin, new: newPIN)
        #expect(key.state.openpgp.userPIN == kdf.derived(Array("24681357".utf8), for: .user))
        try await session.verifyPIN(newPIN)
        let newAdmin = SecretBytes(utf8: "a-new-admin-pin")
        try await session.changePassword(.admin, old: Self.adminPIN, new: newAdmin)
        try await session.verifyAdminPIN(newAdmin)
        let code = SecretBytes(utf8: "resetcode2")
        try await session.setResetCode(code)
        #expect(key.state.openpgp.resetCode == kdf.derived(Array("resetcode2".utf8), for: .reset))
        try await session.unblockPIN(newPIN: Self.pin, resetCode: code)
        try await session.verifyPIN(Self.pin)
        try await session.verifyAdminPIN(newAdmin)
        try await session.unblockPIN(newPIN: newPIN)
        try await session.verifyPIN(newPIN)
        // Nothing stored is a password as typed.
        for typed in ["123456", "24681357", "a-new-admin-pin", "resetcode2"] {
            let bytes = Array(typed.utf8)
            let s = key.state.openpgp
            #expect(s.userPIN != bytes && s.adminPIN != bytes && s.resetCode != bytes)
        }

        // Off: the defaults, as typed.
        try await session.verifyAdminPIN(newAdmin)
        try await session.setKDF(OpenPGPKDF(algorithm: OpenPGPKDF.none))
        #expect(try await session.kdf().isEnabled == false)
        #expect(key.state.openpgp.userPIN == OpenPGP.defaultUserPIN)
        try await session.verifyPIN(Self.pin)
    }

    @Test func aResetTurnsItOff() async throws {
        let key = VirtualKey(state: .yubiKey5NFC(), touchDelay: 0)
        let session = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        try await session.verifyAdminPIN(Self.adminPIN)
        try await session.setKDF(OpenPGPKDF.make())
        #expect(try await session.kdf().isEnabled)
        try await session.reset()
        let fresh = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        #expect(try await fresh.kdf().isEnabled == false)
        try await fresh.verifyPIN(Self.pin)
    }

    @Test func anObjectWithoutInitialHashesHasTheDefaultsDerivedByTheCard() async throws {
        let key = VirtualKey(state: .yubiKey5NFC(), touchDelay: 0)
        let session = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        try await session.verifyAdminPIN(Self.adminPIN)
        var kdf = OpenPGPKDF.make(iterations: 65_536)
        kdf.initialUserHash = nil
        kdf.initialAdminHash = nil
        try await session.setKDF(kdf)
        try await session.verifyPIN(Self.pin)
        try await session.verifyAdminPIN(Self.adminPIN)
    }

    /// A YubiKey 4 has no KDF object: its extended capabilities leave the bit out, GET DATA and PUT DATA of F9 find
    /// nothing, and KeyKit says which firmware it needs before the admin PIN is even asked for.
    @Test func aYubiKey4HasNone() async throws {
        let key = VirtualKey(state: .yubiKey4(), touchDelay: 0)
        let session = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: key))
        #expect(try await session.applicationData().extendedCapabilities.hasKDF == false)
        #expect(try await session.kdf().isEnabled == false)
        await #expect(throws: OpenPGPError.notSupported(minimum: Version(5, 2, 0), actual: Version(4, 3, 7))) {
            try await session.setKDF(OpenPGPKDF.make())
        }
        let card = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        #expect(try await card.send(.select(aid: AID.openpgp)).status == .ok)
        #expect(try await card.send(APDU(ins: OpenPGP.Ins.getData, p2: 0xF9)).status == .referencedDataNotFound)
        #expect(
            try await card.send(APDU(ins: OpenPGP.Ins.verify, p2: 0x83, data: Array("12345678".utf8))).status == .ok)
        let put = APDU(ins: OpenPGP.Ins.putData, p2: 0xF9, data: OpenPGPKDF.make().encoded)
        #expect(try await card.send(put).status == .referencedDataNotFound)
        let fiveTwo = VirtualKey(state: .yubiKey5NFC(version: Version(5, 2, 4)), touchDelay: 0)
        let newer = try await OpenPGPSession.make(connection: VirtualKeyConnection(key: fiveTwo))
        #expect(try await newer.applicationData().extendedCapabilities.hasKDF)
    }
}
