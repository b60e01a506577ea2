import KeyKit
import Testing
import VirtualKey

/// The same CTAP2 session code over the in-process CTAPHID device: framing, PIN, credentials, U2F.
@Suite struct CTAP2OverHIDTests {
    static func session(_ key: VirtualKey = VirtualKey()) async throws -> (CTAP2Session, CTAPHIDConnection) {
        let connection = try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "virtual", timeout: 10)
        return (try await CTAP2Session.make(connection: connection), connection)
    }

    @Test func pinLifecycleAndRetries() async throws {
        let key = VirtualKey()
        let (s, c) = try await CTAP2OverHIDTests.session(key)
        #expect(await s.info.pinSet == false)
        try await s.setPIN("123456")
        #expect(await s.info.pinSet == true)
        #expect(try await s.pinRetries().retries == 8)
        await #expect(throws: CTAPError(CTAPError.pinInvalid, retriesLeft: 7)) { try await s.verifyPIN("000000") }
        try await s.verifyPIN("123456")
        #expect(try await s.pinRetries().retries == 8)
        try await s.changePIN(old: "123456", new: "654321")
        await #expect(throws: CTAPError.self) { try await s.verifyPIN("123456") }
        try await s.verifyPIN("654321")
        await #expect(throws: FIDOSessionError.pinTooShort(minimum: 4, count: 2)) {
            try await s.changePIN(old: "654321", new: "12")
        }
        await c.close()
    }

    @Test func threeWrongPINsNeedAPowerCycle() async throws {
        let key = VirtualKey()
        var (s, c) = try await CTAP2OverHIDTests.session(key)
        try await s.setPIN("correct")
        for _ in 0..<2 { await #expect(throws: CTAPError.self) { try await s.verifyPIN("wrong!") } }
        do {
            try await s.verifyPIN("wrong!")
            Issue.record("third wrong PIN accepted")
        } catch let e as CTAPError {
            #expect(e.code == CTAPError.pinAuthBlocked)
        }
        do {
            try await s.verifyPIN("correct")
            Issue.record("PIN accepted while auth-blocked")
        } catch let e as CTAPError {
            #expect(e.code == CTAPError.pinAuthBlocked)
        }
        await c.close()
        key.powerCycle()
        (s, c) = try await CTAP2OverHIDTests.session(key)
        try await s.verifyPIN("correct")
        await c.close()
    }

    @Test func residentCredentialSignaturesAndManagement() async throws {
        let (s, c) = try await CTAP2OverHIDTests.session()
        try await s.setPIN("cred-pin")
        try await s.verifyPIN("cred-pin", permissions: [.makeCredential], rpID: "example.com")
        let cdh = Crypto.random(32)
        let made = try await s.makeCredential(
            clientDataHash: cdh, rp: .init(id: "example.com", name: "Example"),
            user: .init(id: [1, 2, 3], name: "alice", displayName: "Alice"),
            residentKey: true)
        #expect(made.format == "packed")
        #expect(made.authData.flags & CTAP2.AuthDataFlag.userVerified != 0)
        try FIDOVerifier.verifyAttestation(made, clientDataHash: cdh)
        var tampered = made
        tampered.authData = try AuthenticatorData(
            made.authData.raw.enumerated().map { $0.offset == 40 ? $0.element ^ 1 : $0.element })
        #expect(throws: FIDOSessionError.self) { try FIDOVerifier.verifyAttestation(tampered, clientDataHash: cdh) }
        let pub = try #require(made.authData.es256PublicKey)
        await s.dropToken()
        let chal = Crypto.random(32)
        let assertions = try await s.getAssertions(rpID: "example.com", clientDataHash: chal)
        #expect(assertions.count == 1 && assertions[0].credentialID == made.credentialID)
        try FIDOVerifier.verifyAssertion(assertions[0], publicKey: pub, clientDataHash: chal, rpID: "example.com")
        #expect(throws: FIDOSessionError.self) {
            try FIDOVerifier.verifyAssertion(
                assertions[0], publicKey: pub, clientDataHash: Crypto.random(32),
                rpID: "example.com")
        }
        try await s.verifyPIN("cred-pin", permissions: [.credentialManagement])
        #expect(try await s.credentialsMetadata().existing == 1)
        let rps = try await s.relyingParties()
        #expect(rps.map(\.id) == ["example.com"])
        let creds = try await s.credentials(of: rps[0])
        #expect(creds.map(\.user.name) == ["alice"])
        try await s.deleteCredential(made.credentialID)
        #expect(try await s.relyingParties().isEmpty)
        await c.close()
    }

    @Test func pinRequiredIsReportedClearly() async throws {
        let (s, c) = try await CTAP2OverHIDTests.session()
        try await s.setPIN("needs-pin")
        do {
            _ = try await s.makeCredential(
                clientDataHash: Crypto.random(32), rp: .init(id: "x.example"),
                user: .init(id: [9]), residentKey: true)
            Issue.record("resident credential made without the PIN")
        } catch let e as CTAPError {
            #expect(e.code == CTAPError.pinRequired)
        }
        await c.close()
    }

    @Test func u2fOverCTAPHIDMessages() async throws {
        let (_, c) = try await CTAP2OverHIDTests.session()
        let u2f = U2FSession(connection: c)
        #expect(try await u2f.version() == "U2F_V2")
        let app = Crypto.digest(.sha256, Array("https://example.com".utf8))
        let reg = try await u2f.register(challenge: Crypto.random(32), application: app)
        let a1 = try await u2f.authenticate(
            challenge: Crypto.random(32), application: app, keyHandle: reg.keyHandle,
            publicKey: reg.publicKey)
        let a2 = try await u2f.authenticate(
            challenge: Crypto.random(32), application: app, keyHandle: reg.keyHandle,
            publicKey: reg.publicKey)
        #expect(a2.counter > a1.counter)
        #expect(try await u2f.isRegistered(keyHandle: reg.keyHandle, application: app))
        #expect(try await !u2f.isRegistered(keyHandle: reg.keyHandle, application: Crypto.random(32)))
        await c.close()
    }
}
