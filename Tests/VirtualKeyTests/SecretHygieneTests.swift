import KeyKit
import Testing
import VirtualKey

/// PIN tokens and OATH access keys in their own zeroed buffers still work end to end with the virtual key, and
/// wiping one copy of a token never wipes another.
@Suite struct SecretHygieneTests {
    static func session(_ key: VirtualKey) async throws -> (CTAP2Session, CTAPHIDConnection) {
        let connection = try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "virtual", timeout: 10)
        return (try await CTAP2Session.make(connection: connection), connection)
    }

    @Test func aWipedHeldTokenLeavesTheSessionsTokenAlone() async throws {
        let key = VirtualKey()
        let (s, c) = try await SecretHygieneTests.session(key)
        try await s.setPIN("123456")
        try await s.verifyPIN("123456", permissions: [.credentialManagement])
        var held = try #require(await s.heldToken())
        held.wipe()
        // The session's own token still authenticates a command that needs it.
        #expect(try await s.credentialsMetadata().existing == 0)
        // A wiped token is ignored when adopted; a fresh copy works in a later session.
        let (later, c2) = try await SecretHygieneTests.session(key)
        await later.adoptToken(held)
        #expect(await later.hasToken == false)
        var fresh = try #require(await s.heldToken())
        await later.adoptToken(fresh)
        fresh.wipe()
        #expect(await later.hasToken)
        #expect(try await later.credentialsMetadata().existing == 0)
        await s.dropToken()
        #expect(await s.hasToken == false)
        #expect(try await later.credentialsMetadata().existing == 0)
        await c.close()
        await c2.close()
    }
}
