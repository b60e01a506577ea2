import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The SSH tab's commands performed by the real runner against the virtual key in process: a FIDO2 PIN set, a
/// P-256 key generated in PIV slot 9A, and the files written into a directory of the test's own.
@Suite("Runner: SSH tab against the virtual key")
struct SSHTabWorkTests {
    static let pin = "ssh-tab-4711"
    static let d = FIDOTestBackend.descriptor

    /// The key (touched `touchAfter` seconds after it asks), the runner on it, 9A's public key, and a directory
    /// for the files.
    static func harness(touchAfter: Double = 0) async throws -> (Harness, FIDOTestBackend, AsymmetricPublicKey, String)
    {
        let backend = FIDOTestBackend(userPresenceDelay: touchAfter)
        let dir = temporaryDirectory()
        _ = try await FIDOOperations(BackendKey(backend, d)).setPIN(pin)
        let key = try await PIVOperations(BackendKey(backend, d)).generateKey(
            in: .authentication, algorithm: .eccP256, pinPolicy: .default, touchPolicy: .never, managementKey: nil)
        return (Harness(backend, directory: dir), backend, key, dir)
    }

    /// An SSH key made beside the tab, as `ykterm ssh new` makes it.
    static func newSSHKey(_ backend: FIDOTestBackend, _ application: String, user: String?) async throws -> SSHKeyOnKey
    {
        try await FIDOOperations(BackendKey(backend, d)).newSSHKey(
            application: application, user: user, type: .ecdsa, verifyRequired: false, touchRequired: true,
            replacing: false, pin: pin)
    }

    /// The tab's answer to `command`; touches are not answers.
    static func run(_ h: Harness, _ command: SSHTabCommand) async throws -> SSHTabMsg {
        try await h.run(.ssh(command)) { msg in
            if case .ssh(let m) = msg, !isTouch(m) { return m }
            return nil
        }
    }

    static func isTouch(_ m: SSHTabMsg) -> Bool {
        if case .touch = m { return true }
        return false
    }

    static func load(_ h: Harness) async throws -> SSHTabLoad {
        let msg = try await run(h, .load(d))
        guard case .loaded(let id, let load) = msg, id == d.id else { throw Unexpected(msg) }
        return load
    }

    struct Unexpected: Error, CustomStringConvertible {
        let msg: SSHTabMsg
        init(_ msg: SSHTabMsg) { self.msg = msg }
        var description: String { "unexpected answer: \(msg)" }
    }

    static func mode(_ path: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    }

    static func text(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    @Test func loadWantsThePINForTheFIDOKeysAndShowsThePIVSlot() async throws {
        let (h, _, key, _) = try await Self.harness()
        let load = try await Self.load(h)
        #expect(load.fido == .pinNeeded && load.fidoKeys.isEmpty && load.edDSA && load.minPINLength >= 4)
        #expect(load.pivProblem == nil)
        let piv = try #require(load.pivKeys)
        #expect(piv.map(\.slot) == [.authentication] && piv[0].publicKey == key)
        #expect(piv[0].typeName == "ecdsa-sha2-nistp256" && piv[0].fingerprint == SSHPublicKey.fingerprint(key))
    }

    @Test func thePINListsTheKeysAndIsHeldUntilForgotten() async throws {
        let (h, backend, _, _) = try await Self.harness()
        let made = try await Self.newSSHKey(backend, "ssh:work", user: "alice")
        #expect(
            try await Self.run(h, .verifyPIN(Self.d, pin: "not-the-pin"))
                == .failed(keyID: Self.d.id, SSHFailure(.verifyPIN, .wrongPIN(retriesLeft: 7))))
        #expect(try await Self.run(h, .verifyPIN(Self.d, pin: Self.pin)) == .listed(keyID: Self.d.id, [made]))
        // Held: the next read lists them without asking.
        let again = try await Self.load(h)
        #expect(again.fido == .listed && again.fidoKeys == [made])
        // Forgotten (the visit ended): the PIN is wanted again, and a deletion has none to use.
        h.runner.perform(.ssh(.forgetPIN(keyID: Self.d.id)))
        #expect(try await Self.load(h).fido == .pinNeeded)
        #expect(
            try await Self.run(h, .delete(Self.d, credentialID: made.credentialID))
                == .failed(keyID: Self.d.id, SSHFailure(.delete, .tokenInvalid)))
    }

    @Test func newWritesTheFilesAndAsksBeforeReplacingThemOrTheKey() async throws {
        let (h, _, _, dir) = try await Self.harness(touchAfter: 0.2)
        _ = try await Self.run(h, .verifyPIN(Self.d, pin: Self.pin))
        let request = SSHNewKeyRequest(
            application: "ssh:work", user: "alice", type: .ed25519, verifyRequired: false, touchRequired: true,
            directory: dir + "/keys")
        let path = dir + "/keys/id_ed25519_sk_rk_work_alice"
        let msg = try await Self.run(h, .new(Self.d, request))
        guard case .made(_, let made, path, let keys?) = msg else { Issue.record("\(msg)"); return }
        #expect(made.key.typeName == "sk-ssh-ed25519@openssh.com" && made.user == "alice" && keys == [made])
        #expect(made.key.flags == [.userPresenceRequired, .residentKey] && made.credProtect == 2)
        // The key waited for a touch and said so.
        let touches = h.messages.withLock { $0 }.filter {
            if case .ssh(.touch(Self.d.id, waiting: true)) = $0 { return true }
            return false
        }
        #expect(!touches.isEmpty)
        // The handle file (0600) reads back as the key; the .pub (0644) is its line.
        #expect(try Self.mode(path) == 0o600)
        #expect(try Self.mode(path + ".pub") == 0o644)
        let (handle, comment) = try SecurityKeySSHKey.parse(privateKeyFile: try Self.text(path))
        #expect(handle == made.key && comment == "ssh:work")
        #expect(try Self.text(path + ".pub") == made.authorizedKeysLine + "\n")
        // Again: the files are there, and nothing is made or written until the user says yes.
        let before = try Self.text(path)
        #expect(
            try await Self.run(h, .new(Self.d, request)) == .filesExist(keyID: Self.d.id, [path, path + ".pub"]))
        #expect(try Self.text(path) == before)
        // Files yes: the key holds one for ssh:work and alice, and asks.
        var files = request
        files.replacingFiles = true
        #expect(
            try await Self.run(h, .new(Self.d, files))
                == .keyExists(keyID: Self.d.id, application: "ssh:work", user: "alice"))
        #expect(try Self.text(path) == before)
        // Both yes: one key for the pair, a new one, in the files.
        var both = files
        both.replacingKey = true
        let second = try await Self.run(h, .new(Self.d, both))
        guard case .made(_, let replacement, path, let after?) = second else { Issue.record("\(second)"); return }
        #expect(replacement.credentialID != made.credentialID && after == [replacement])
        #expect(try SecurityKeySSHKey.parse(privateKeyFile: try Self.text(path)).key == replacement.key)
    }

    @Test func exportWritesWhatSSHKeygenKWritesAndAsksBeforeReplacing() async throws {
        let (h, backend, _, dir) = try await Self.harness()
        let work = try await Self.newSSHKey(backend, "ssh:work", user: nil)
        let home = try await Self.newSSHKey(backend, "ssh:home", user: "bob")
        let exported = try await Self.run(h, .export(Self.d, [work, home], directory: dir, overwrite: false))
        let paths = [dir + "/id_ecdsa_sk_rk_work", dir + "/id_ecdsa_sk_rk_home_bob"]
        #expect(exported == .exported(keyID: Self.d.id, paths: paths))
        for (key, path) in zip([work, home], paths) {
            #expect(try SecurityKeySSHKey.parse(privateKeyFile: try Self.text(path)).key == key.key)
            #expect(try Self.text(path + ".pub") == key.authorizedKeysLine + "\n")
            #expect(try Self.mode(path) == 0o600)
            #expect(try Self.mode(path + ".pub") == 0o644)
        }
        try "old".write(toFile: paths[1] + ".pub", atomically: true, encoding: .utf8)
        #expect(
            try await Self.run(h, .export(Self.d, [home], directory: dir, overwrite: false))
                == .filesExist(keyID: Self.d.id, [paths[1], paths[1] + ".pub"]))
        #expect(try Self.text(paths[1] + ".pub") == "old")
        #expect(
            try await Self.run(h, .export(Self.d, [home], directory: dir, overwrite: true))
                == .exported(keyID: Self.d.id, paths: [paths[1]]))
        #expect(try Self.text(paths[1] + ".pub") == home.authorizedKeysLine + "\n")
    }

    @Test func deleteRemovesTheKeyAndListsTheRest() async throws {
        let (h, backend, _, _) = try await Self.harness()
        let work = try await Self.newSSHKey(backend, "ssh:work", user: nil)
        let home = try await Self.newSSHKey(backend, "ssh:home", user: nil)
        _ = try await Self.run(h, .verifyPIN(Self.d, pin: Self.pin))
        #expect(
            try await Self.run(h, .delete(Self.d, credentialID: work.credentialID))
                == .deleted(keyID: Self.d.id, work, remaining: [home]))
        #expect(try await Self.load(h).fidoKeys == [home])
        // Gone already: the key says so.
        let again = try await Self.run(h, .delete(Self.d, credentialID: work.credentialID))
        guard case .failed(_, let failure) = again else { Issue.record("\(again)"); return }
        #expect(failure.operation == .delete)
        #expect(try await Self.load(h).fidoKeys == [home])
    }
}
