import Foundation
import KeyKit
import Testing
import VirtualKey

/// The virtual key's authenticatorConfig and updateUserInformation, as KeyKit's session drives them over the
/// in-process CTAPHID device: what a YubiKey 5.7 does with a minimum PIN length, a forced PIN change,
/// alwaysUv and enterprise attestation, and that a 5.4 key has none of it.
@Suite struct FIDOConfigAuthenticatorTests {
    static func session(_ key: VirtualKey) async throws -> (CTAP2Session, CTAPHIDConnection) {
        try await CTAP2OverHIDTests.session(key)
    }

    static func makeResident(
        _ s: CTAP2Session, pin: String, rpID: String = "example.com",
        user: CTAP2Session.User
    ) async throws -> AttestedCredential {
        try await s.verifyPIN(pin, permissions: [.makeCredential], rpID: rpID)
        let made = try await s.makeCredential(
            clientDataHash: Crypto.random(32), rp: .init(id: rpID), user: user,
            residentKey: true)
        await s.dropToken()
        return made
    }

    @Test func getInfoOfA57KeyHasTheSettingsAndA54KeyHasNone() async throws {
        let key = VirtualKey()
        let (s, c) = try await Self.session(key)
        let info = await s.info
        #expect(info.supportsConfig && info.supportsSetMinPINLength && info.supportsUpdateUserInformation)
        #expect(
            info.alwaysUV == false && info.enterpriseAttestation == false && info.options["makeCredUvNotRqd"] == true)
        #expect(info.maxRPIDsForSetMinPINLength == FIDOAuthenticator.maxRPIDsForSetMinPINLength)
        #expect(info.extensions.contains("minPinLength") && !info.forcePINChange && info.minPINLength == 4)
        await c.close()

        let old = VirtualKey(state: .yubiKey5NFC(version: Version(5, 4, 3)))
        let (o, oc) = try await Self.session(old)
        let oldInfo = await o.info
        #expect(!oldInfo.supportsConfig && oldInfo.alwaysUV == nil && oldInfo.enterpriseAttestation == nil)
        #expect(oldInfo.maxRPIDsForSetMinPINLength == nil && !oldInfo.extensions.contains("minPinLength"))
        // Sent anyway, the command is unknown to it, and a token with acfg is refused.
        let raw = try await oc.sendCBOR([CTAP2.Command.config.rawValue] + CBOR.map([1: 2]).encoded, progress: nil)
        #expect(raw == [CTAPError.invalidCommand])
        try await o.setPIN("123456")
        await #expect(throws: CTAPError(CTAPError.unauthorizedPermission)) {
            try await o.verifyPIN("123456", permissions: [.authenticatorConfig])
        }
        await oc.close()
    }

    @Test func aMinimumSetWithoutAPINHoldsForTheFirstPIN() async throws {
        let key = VirtualKey()
        let (stale, sc) = try await Self.session(key)
        let (s, c) = try await Self.session(key)
        try await s.setMinPINLength(6, rpIDs: ["example.com", "login.example.org"])
        let info = await s.info
        #expect(info.minPINLength == 6 && !info.forcePINChange)
        #expect(key.state.fido.minPINLengthRPIDs == ["example.com", "login.example.org"])
        // A session that still believes in 4 sends a 5-character PIN: the key refuses it.
        await #expect(throws: CTAPError(CTAPError.pinPolicyViolation)) { try await stale.setPIN("12345") }
        // ... and a lower minimum.
        await #expect(throws: CTAPError(CTAPError.pinPolicyViolation)) { try await stale.setMinPINLength(5) }
        // Forcing a change needs a PIN.
        await #expect(throws: CTAPError(CTAPError.pinNotSet)) { try await s.setMinPINLength(nil, forceChangePIN: true) }
        try await s.setPIN("123456")
        #expect(key.state.fido.pinLength == 6)
        await c.close()
        await sc.close()
    }

    @Test func aMinimumAboveThePINForcesAChangeAndOnlyChangePINLiftsIt() async throws {
        let key = VirtualKey()
        let (s, c) = try await Self.session(key)
        try await s.setPIN("123456")
        // With a PIN, a token with acfg is needed.
        await #expect(throws: CTAPError(CTAPError.pinRequired)) { try await s.setMinPINLength(8) }
        try await s.verifyPIN("123456", permissions: [.makeCredential])
        await #expect(throws: CTAPError(CTAPError.pinAuthInvalid)) { try await s.setMinPINLength(8) }
        try await s.verifyPIN("123456", permissions: [.authenticatorConfig])
        try await s.setMinPINLength(8)
        let info = await s.info
        #expect(info.forcePINChange && info.minPINLength == 8)
        // The right PIN, and still no token of any kind; the retries stay full.
        await #expect(throws: FIDOSessionError.pinChangeRequired) { try await s.verifyPIN("123456") }
        await #expect(throws: FIDOSessionError.pinChangeRequired) {
            try await s.verifyPIN("123456", permissions: [.credentialManagement])
        }
        #expect(try await s.pinRetries().retries == 8)
        // Too short for the new minimum: refused by the key as well as by KeyKit.
        await #expect(throws: FIDOSessionError.pinTooShort(minimum: 8, count: 7)) {
            try await s.changePIN(old: "123456", new: "1234567")
        }
        try await s.changePIN(old: "123456", new: "12345678")
        let changed = await s.info
        #expect(!changed.forcePINChange && key.state.fido.pinLength == 8)
        try await s.verifyPIN("12345678", permissions: [.credentialManagement])
        await c.close()
    }

    @Test func forceChangeIsKeptInTheStateAcrossPowerCycles() async throws {
        let key = VirtualKey()
        var (s, c) = try await Self.session(key)
        try await s.setPIN("123456")
        try await s.verifyPIN("123456", permissions: [.authenticatorConfig])
        try await s.setMinPINLength(nil, forceChangePIN: true)
        #expect(await s.info.minPINLength == 4)
        await c.close()
        // Written to and read from the state file's JSON.
        let reloaded = try JSONDecoder().decode(VirtualKeyState.self, from: try JSONEncoder().encode(key.state))
        #expect(reloaded.fido.forcePINChange && reloaded.fido == key.state.fido)
        key.powerCycle()
        (s, c) = try await Self.session(key)
        #expect(await s.info.forcePINChange)
        await #expect(throws: FIDOSessionError.pinChangeRequired) { try await s.verifyPIN("123456") }
        try await s.changePIN(old: "123456", new: "654321")
        try await s.verifyPIN("654321")
        await c.close()
    }

    @Test func alwaysUVWantsAPINForEveryCredentialAndTurnsU2FOff() async throws {
        let key = VirtualKey()
        let (s, c) = try await Self.session(key)
        #expect(try await s.toggleAlwaysUV())
        #expect(await s.info.options["makeCredUvNotRqd"] == false)
        let user = CTAP2Session.User(id: [1], name: "alice")
        await #expect(throws: CTAPError(CTAPError.pinRequired)) {
            _ = try await s.makeCredential(
                clientDataHash: Crypto.random(32), rp: .init(id: "example.com"), user: user,
                residentKey: false)
        }
        await #expect(throws: SmartCardError.self) {
            _ = try await U2FSession(connection: c).register(
                challenge: Crypto.random(32), application: Crypto.random(32))
        }
        // With a PIN, even switching it off needs a token with acfg.
        try await s.setPIN("123456")
        let made = try await Self.makeResident(s, pin: "123456", user: user)
        await #expect(throws: CTAPError(CTAPError.pinRequired)) {
            _ = try await s.getAssertions(rpID: "example.com", clientDataHash: Crypto.random(32))
        }
        await #expect(throws: CTAPError(CTAPError.pinRequired)) { try await s.toggleAlwaysUV() }
        try await s.verifyPIN("123456", permissions: [.authenticatorConfig])
        #expect(try await s.toggleAlwaysUV() == false)
        await s.dropToken()
        let assertions = try await s.getAssertions(
            rpID: "example.com", clientDataHash: Crypto.random(32),
            allowList: [made.credentialID])
        #expect(assertions.count == 1)
        _ = try await U2FSession(connection: c).register(challenge: Crypto.random(32), application: Crypto.random(32))
        await c.close()
    }

    @Test func enterpriseAttestationStaysOnUntilAReset() async throws {
        // The reset window after power-up is not what this tests (a loaded machine may pass it).
        let key = VirtualKey(resetWindow: .infinity)
        let (s, c) = try await Self.session(key)
        try await s.enableEnterpriseAttestation()
        try await s.enableEnterpriseAttestation()  // again: nothing changes
        let enabled = await s.info.enterpriseAttestation
        #expect(enabled == true && key.state.fido.enterpriseAttestation)
        try await s.setMinPINLength(6, rpIDs: ["example.com"])
        _ = try await s.toggleAlwaysUV()
        try await s.reset()
        let info = await s.info
        #expect(info.enterpriseAttestation == false && info.alwaysUV == false && info.minPINLength == 4)
        #expect(key.state.fido.minPINLengthRPIDs.isEmpty)
        await c.close()
    }

    @Test func tooManyRelyingPartiesAndAnUnknownSubcommandAreRefused() async throws {
        let key = VirtualKey()
        let (s, c) = try await Self.session(key)
        let many = (0...FIDOAuthenticator.maxRPIDsForSetMinPINLength).map { "rp\($0).example" }
        await #expect(throws: CTAPError(CTAPError.keyStoreFull)) { try await s.setMinPINLength(nil, rpIDs: many) }
        let raw = try await c.sendCBOR([CTAP2.Command.config.rawValue] + CBOR.map([1: 0x42]).encoded, progress: nil)
        #expect(raw == [CTAPError.invalidSubcommand])
        await c.close()
    }

    @Test func updateUserInformationReplacesTheNamesAndKeepsTheID() async throws {
        let key = VirtualKey()
        let (s, c) = try await Self.session(key)
        try await s.setPIN("123456")
        let made = try await Self.makeResident(
            s, pin: "123456",
            user: .init(id: [7, 7], name: "alice", displayName: "Alice"))
        try await s.verifyPIN("123456", permissions: [.credentialManagement])
        try await s.updateUser(made.credentialID, user: .init(id: [7, 7], name: "alice@example.com"))
        let rp = try #require(try await s.relyingParties().first)
        let creds = try await s.credentials(of: rp)
        #expect(creds.map(\.user) == [.init(id: [7, 7], name: "alice@example.com", displayName: nil)])
        #expect(creds.map(\.credProtect) == [1] && creds.map(\.hasLargeBlobKey) == [false])
        // Another user ID is not this credential's user.
        await #expect(throws: CTAPError(CTAPError.invalidParameter)) {
            try await s.updateUser(made.credentialID, user: .init(id: [8], name: "mallory"))
        }
        await c.close()
    }
}
