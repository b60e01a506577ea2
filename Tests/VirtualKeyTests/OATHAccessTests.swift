import FoundationEssentials
import Glibc
import KeyKit
import Testing
import VirtualKey

/// The OATH password flows both faces use (`OATHAccess`), against the virtual key: which known key unlocks,
/// what happens to one the key turns down, and how the remembered key follows the password.
@Suite struct OATHAccessTests {
    /// A virtual key and a remembered-keys file of its own; `open()` is a fresh session (a new connection, as
    /// each command of the CLI or the TUI makes).
    final class Fixture: Sendable {
        let key = VirtualKey(state: .yubiKey5NFC())
        let directory: String
        let store: RememberedKeys
        var access: OATHAccess { OATHAccess(store: store) }

        init() {
            var template = Array("\(FileManager.default.temporaryDirectory.path)/ykterm-access-XXXXXX".utf8CString)
            directory = String(cString: mkdtemp(&template)!)
            store = RememberedKeys(path: directory + "/oath-keys.json")
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func open() async throws -> OATHSession {
            try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        }

        func remembered(_ session: OATHSession) async throws -> Bool {
            try store.key(for: await session.deviceID) != nil
        }
    }

    @Test func aKeyWithoutPasswordNeedsNothing() async throws {
        let f = Fixture()
        let outcome = try await f.access.unlockWithKnownKey(try await f.open())
        #expect(!outcome.needsPassword && outcome.key == nil)
    }

    @Test func rememberingOnUnlockLetsTheNextSessionInWithoutAPassword() async throws {
        let f = Fixture()
        _ = try await f.access.setPassword(
            try await f.open(), current: nil, new: SecretBytes(utf8: "pw-1"), remember: false)
        let s1 = try await f.open()
        #expect(try await f.access.unlockWithKnownKey(s1).needsPassword)
        #expect(try await !f.remembered(s1))
        _ = try await f.access.unlock(s1, password: SecretBytes(utf8: "pw-1"), remember: true)
        let s2 = try await f.open()
        let outcome = try await f.access.unlockWithKnownKey(s2)
        #expect(!outcome.needsPassword && outcome.key != nil)
        #expect(try await s2.list().isEmpty)  // unlocked: LIST works
    }

    @Test func aWrongPasswordIsWrongAndRemembersNothing() async throws {
        let f = Fixture()
        _ = try await f.access.setPassword(
            try await f.open(), current: nil, new: SecretBytes(utf8: "pw-1"), remember: false)
        let s = try await f.open()
        await #expect(throws: OATHError.wrongPassword) {
            _ = try await f.access.unlock(s, password: SecretBytes(utf8: "nope"), remember: true)
        }
        #expect(try await !f.remembered(s))
    }

    @Test func theHeldKeyComesFirstAndOneTurnedDownIsDropped() async throws {
        let f = Fixture()
        let key1 = try await f.access.setPassword(
            try await f.open(), current: nil, new: SecretBytes(utf8: "pw-1"),
            remember: false)
        let held = try #require(key1)
        let outcome = try await f.access.unlockWithKnownKey(try await f.open(), held: held)
        #expect(!outcome.needsPassword && outcome.key === held)

        // The password changes elsewhere: the held key is turned down, and a remembered one is tried next.
        let s = try await f.open()
        _ = try await f.access.unlock(s, password: SecretBytes(utf8: "pw-1"), remember: false)
        let key2 = try await f.access.setPassword(
            s, current: SecretBytes(utf8: "pw-1"), new: SecretBytes(utf8: "pw-2"),
            remember: true)
        let after = try await f.access.unlockWithKnownKey(try await f.open(), held: held)
        #expect(after.heldRejected && !after.needsPassword)
        #expect(after.key?.constantTimeEquals(try #require(key2)) == true)
    }

    @Test func aRememberedKeyThatNoLongerWorksIsForgotten() async throws {
        let f = Fixture()
        _ = try await f.access.setPassword(
            try await f.open(), current: nil, new: SecretBytes(utf8: "pw-1"), remember: true)
        // Another computer (no remembered key here for it) changes the password.
        let other = OATHAccess(store: RememberedKeys(path: f.directory + "/other.json"))
        _ = try await other.setPassword(
            try await f.open(), current: SecretBytes(utf8: "pw-1"),
            new: SecretBytes(utf8: "pw-2"), remember: false)
        let s = try await f.open()
        let outcome = try await f.access.unlockWithKnownKey(s)
        #expect(outcome.needsPassword && outcome.rememberedForgotten)
        #expect(try await !f.remembered(s))
    }

    @Test func theRememberedKeyFollowsAChangeAndGoesWithAClear() async throws {
        let f = Fixture()
        _ = try await f.access.setPassword(
            try await f.open(), current: nil, new: SecretBytes(utf8: "pw-1"), remember: true)
        // Changed without asking to remember: the remembered key was there, so the new one replaces it.
        _ = try await f.access.setPassword(
            try await f.open(), current: SecretBytes(utf8: "pw-1"),
            new: SecretBytes(utf8: "pw-2"), remember: false)
        let s = try await f.open()
        #expect(try await !f.access.unlockWithKnownKey(s).needsPassword)
        // Cleared: nothing to remember any more.
        #expect(
            try await f.access.setPassword(
                try await f.open(), current: SecretBytes(utf8: "pw-2"), new: nil,
                remember: true) == nil)
        let cleared = try await f.open()
        #expect(await !cleared.isLocked)
        #expect(try await !f.remembered(cleared))
    }

    @Test func changingNeedsTheCurrentPasswordAndAWrongOneChangesNothing() async throws {
        let f = Fixture()
        _ = try await f.access.setPassword(
            try await f.open(), current: nil, new: SecretBytes(utf8: "pw-1"), remember: false)
        await #expect(throws: OATHError.passwordRequired) {
            _ = try await f.access.setPassword(
                try await f.open(), current: nil, new: SecretBytes(utf8: "pw-2"), remember: false)
        }
        await #expect(throws: OATHError.wrongPassword) {
            _ = try await f.access.setPassword(
                try await f.open(), current: SecretBytes(utf8: "wrong"),
                new: SecretBytes(utf8: "pw-2"), remember: false)
        }
        // Still the first password.
        _ = try await f.access.unlock(try await f.open(), password: SecretBytes(utf8: "pw-1"), remember: false)
    }

    @Test func resetForgetsTheRememberedKey() async throws {
        let f = Fixture()
        _ = try await f.access.setPassword(
            try await f.open(), current: nil, new: SecretBytes(utf8: "pw-1"), remember: true)
        let s = try await f.open()
        let before = await s.deviceID
        try await f.access.reset(s)
        #expect(try f.store.key(for: before) == nil)
        #expect(await !(try await f.open()).isLocked)
    }
}
