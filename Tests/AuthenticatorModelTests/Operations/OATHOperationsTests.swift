import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The virtual key as an operation's smart-card interface, counting the connections opened and closed.
private final class CountingOpener: SmartCardOpener, @unchecked Sendable {
    // @unchecked: the counters are LockedValues; `key` is set once.
    let key: VirtualKey
    let opened = LockedValue(0)
    let closed = LockedValue(0)

    init(_ state: VirtualKeyState = VirtualKeyState.yubiKey5NFC()) {
        key = VirtualKey(state: state)
    }

    func openSmartCard() async throws -> any SmartCardConnection {
        opened.withLock { $0 += 1 }
        return CountedConnection(VirtualKeyConnection(key: key), closed: closed)
    }
}

/// RFC 6238's SHA-1 secret (appendix B: the ASCII of "12345678901234567890").
private let rfc6238Secret = Array("12345678901234567890".utf8)

private func operations(_ opener: CountingOpener, directory: String = temporaryDirectory()) -> OATHOperations {
    OATHOperations(opener, store: RememberedKeys(path: directory + "/oath-keys.json"))
}

private func value<T>(_ outcome: OATHOperations.Outcome<T>, sourceLocation: SourceLocation = #_sourceLocation) -> T? {
    guard case .done(let v, _) = outcome else {
        Issue.record("the operation found the key locked", sourceLocation: sourceLocation)
        return nil
    }
    return v
}

@Suite struct OATHOperationsTests {
    @Test func addThenCodesGiveRFC6238sCodeAndEveryConnectionIsClosed() async throws {
        let opener = CountingOpener()
        let ops = operations(opener)
        let account = CredentialData(name: "rfc6238", issuer: "Test", digits: 8, secret: rfc6238Secret)
        let added = try #require(value(try await ops.add([account], replacing: false, refreshAt: 59)))
        guard case .added(let ids, let entries) = added else { Issue.record("not added: \(added)"); return }
        #expect(ids == ["Test:rfc6238"])
        // RFC 6238, appendix B: T = 59 s, SHA-1, 8 digits.
        #expect(entries?.first { $0.credential.id.string == "Test:rfc6238" }?.code?.value == "94287082")
        let later = try #require(value(try await ops.codes(at: 1_111_111_109)))
        #expect(later.first?.code?.value == "07081804")
        #expect(opener.opened.withLock { $0 } == 2 && opener.closed.withLock { $0 } == 2)
    }

    @Test func aTakenIDIsReturnedAsAQuestionAndNothingIsAddedUntilReplacingIsAllowed() async throws {
        let opener = CountingOpener()
        let ops = operations(opener)
        let first = CredentialData(name: "alice", issuer: "Example", secret: rfc6238Secret)
        _ = try await ops.add([first], replacing: false)
        let other = CredentialData(name: "bob", issuer: "Example", secret: Array("another secret".utf8))
        let replacement = CredentialData(name: "alice", issuer: "Example", digits: 8, secret: Array("new".utf8))
        // Two accounts, one of them taken: nothing at all is added, and the taken one is named.
        let refused = try #require(value(try await ops.add([other, replacement], replacing: false)))
        guard case .taken(let taken) = refused else { Issue.record("added: \(refused)"); return }
        #expect(taken == ["Example:alice"])
        let before = try #require(value(try await ops.list())).map(\.id.string)
        #expect(before == ["Example:alice"])
        // The answer given: both are written, alice replaced (8 digits now).
        let done = try #require(value(try await ops.add([other, replacement], replacing: true, refreshAt: 59)))
        guard case .added(let ids, let entries) = done else { Issue.record("refused: \(done)"); return }
        #expect(ids == ["Example:bob", "Example:alice"])
        #expect(entries?.first { $0.credential.id.string == "Example:alice" }?.digits == 8)
    }

    @Test func aPasswordIsAskedForByLockedAndTheAccessKeyItGivesOpensTheNextOperation() async throws {
        let opener = CountingOpener()
        let directory = temporaryDirectory()
        let ops = operations(opener, directory: directory)
        _ = try await ops.add([CredentialData(name: "a", secret: rfc6238Secret)], replacing: false)
        let set = try await ops.setPassword(.set(new: SecretBytes(utf8: "hunter2")), remember: false)
        #expect(set.done == .set && set.opened.hasPassword && set.opened.accessKey != nil)
        // Nothing held or remembered: the operation does nothing and says the key is locked.
        guard case .locked(let opened) = try await ops.list() else { Issue.record("not locked"); return }
        #expect(opened.hasPassword && opened.accessKey == nil)
        // A wrong password is the key's refusal, not a lock.
        await #expect(throws: OATHError.wrongPassword) {
            _ = try await ops.list(OATHOperations.Unlock(password: SecretBytes(utf8: "wrong")))
        }
        // The right one, remembered: it opens, and so does the remembered key afterwards without any.
        guard
            case .done(let listed, let unlocked) = try await ops.list(
                OATHOperations.Unlock(password: SecretBytes(utf8: "hunter2"), remember: true))
        else {
            Issue.record("still locked"); return
        }
        #expect(listed.map(\.id.string) == ["a"])
        let held = try #require(unlocked.accessKey)
        #expect(value(try await ops.list()) != nil)
        // A held access key opens it too, without the remembered one.
        let forgetting = operations(opener, directory: temporaryDirectory())
        #expect(value(try await forgetting.list(OATHOperations.Unlock(held: held))) != nil)
        #expect(opener.opened.withLock { $0 } == opener.closed.withLock { $0 })
    }

    @Test func passwordChangesCheckWhatTheKeyHas() async throws {
        let ops = operations(CountingOpener())
        await #expect(throws: OATHOperationError.noPassword) {
            _ = try await ops.setPassword(.clear(current: SecretBytes(utf8: "x")), remember: false)
        }
        _ = try await ops.setPassword(.set(new: SecretBytes(utf8: "one")), remember: false)
        await #expect(throws: OATHOperationError.hasPassword) {
            _ = try await ops.setPassword(.set(new: SecretBytes(utf8: "two")), remember: false)
        }
        // A wrong current password changes nothing.
        await #expect(throws: OATHError.wrongPassword) {
            _ = try await ops.setPassword(
                .change(current: SecretBytes(utf8: "bad"), new: SecretBytes(utf8: "two")),
                remember: false)
        }
        let changed = try await ops.setPassword(
            .change(
                current: SecretBytes(utf8: "one"),
                new: SecretBytes(utf8: "two")), remember: false)
        #expect(changed.done == .changed)
        let cleared = try await ops.setPassword(.clear(current: SecretBytes(utf8: "two")), remember: false)
        #expect(cleared.done == .cleared && cleared.opened.accessKey == nil && !cleared.opened.hasPassword)
        #expect(try await ops.inspect().hasPassword == false)
    }

    @Test func statusAndRememberSayWhatTheKeyHasAndKeepTheAccessKeyOnlyForTheRightPassword() async throws {
        let opener = CountingOpener()
        let ops = operations(opener)
        let fresh = try await ops.status()
        #expect(fresh == OATHOperations.Status(version: fresh.version, hasPassword: false, remembered: false))
        #expect(fresh.version == Version(5, 7, 2))
        // Nothing to remember on a key without a password.
        await #expect(throws: OATHOperationError.noPassword) {
            _ = try await ops.remember(password: SecretBytes(utf8: "pw"))
        }
        _ = try await ops.setPassword(.set(new: SecretBytes(utf8: "pw")), remember: false)
        #expect(
            try await ops.status()
                == OATHOperations.Status(version: fresh.version, hasPassword: true, remembered: false))
        guard case .locked = try await ops.list() else { Issue.record("not locked"); return }
        // A wrong password remembers nothing.
        await #expect(throws: OATHError.wrongPassword) {
            _ = try await ops.remember(password: SecretBytes(utf8: "wrong"))
        }
        #expect(try await ops.status().remembered == false)
        let opened = try await ops.remember(password: SecretBytes(utf8: "pw"))
        #expect(opened.hasPassword && opened.accessKey != nil)
        #expect(try await ops.status().remembered)
        // The remembered access key opens the key without a password now.
        #expect(value(try await ops.list()) != nil)
        #expect(try await ops.forgetRemembered())
        #expect(try await ops.status().remembered == false)
        #expect(opener.opened.withLock { $0 } == opener.closed.withLock { $0 })
    }

    @Test func renameAndDeleteFindTheAccountAndRefuseWhatWouldLoseOne() async throws {
        let opener = CountingOpener()
        let ops = operations(opener)
        _ = try await ops.add(
            [
                CredentialData(name: "alice@example.com", issuer: "Example", secret: rfc6238Secret),
                CredentialData(name: "alice@example.org", issuer: "Example", secret: rfc6238Secret),
                CredentialData(name: "bob", issuer: "Other", secret: rfc6238Secret),
            ], replacing: false)
        // A part that fits two accounts names both; one that fits none is the key's "no such account".
        await #expect(
            throws: OATHOperationError.ambiguous(
                "alice",
                [
                    "Example:alice@example.com",
                    "Example:alice@example.org",
                ])
        ) {
            _ = try await ops.delete(.matching("alice"))
        }
        await #expect(throws: OATHError.noSuchCredential("carol")) { _ = try await ops.delete(.matching("carol")) }
        // Renaming onto another account's ID would overwrite it: refused, nothing renamed.
        await #expect(throws: OATHOperationError.renameTargetTaken("Other:bob")) {
            _ = try await ops.rename(.matching("example.org"), to: "Other:bob")
        }
        let renamed = try #require(value(try await ops.rename(.matching("EXAMPLE.ORG"), to: "New:carol")))
        #expect(renamed.detail == OATHOperations.Renamed(old: "Example:alice@example.org", new: "New:carol"))
        let deleted = try #require(value(try await ops.delete(.matching("bob"), refreshAt: 59)))
        #expect(deleted.detail == "Other:bob")
        #expect(deleted.entries?.map(\.credential.id.string).sorted() == ["Example:alice@example.com", "New:carol"])
        // Every connection, those of the refusals included, was closed.
        #expect(opener.opened.withLock { $0 } == opener.closed.withLock { $0 })
    }

    @Test func resetRemovesTheAccountsThePasswordAndTheRememberedKey() async throws {
        let directory = temporaryDirectory()
        let ops = operations(CountingOpener(), directory: directory)
        _ = try await ops.add([CredentialData(name: "a", secret: rfc6238Secret)], replacing: false)
        _ = try await ops.setPassword(.set(new: SecretBytes(utf8: "pw")), remember: true)
        #expect(value(try await ops.list()) != nil)  // opened by the remembered key
        try await ops.reset()
        #expect(try await ops.inspect().hasPassword == false)
        #expect(value(try await ops.list())?.isEmpty == true)
        #expect(try await ops.forgetRemembered() == false)
    }
}
