import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The virtual key in process as a key source; `unplug()` makes every later connection fail as a pulled key.
final class InProcessBackend: KeyBackend, @unchecked Sendable {
    // @unchecked: `present` is only read and written under `lock`.
    static let descriptor = KeyDescriptor(transport: .virtual, name: "Virtual Key")
    let key: VirtualKey
    private let lock = NSLock()
    private var present = true
    let connections = LockedValue(0)

    init(_ state: VirtualKeyState = VirtualKeyState.yubiKey5NFC().withDemoAccounts()) {
        key = VirtualKey(state: state)
    }

    func unplug() { lock.withLock { present = false } }

    func events() -> AsyncStream<KeyEvent> {
        AsyncStream { $0.yield(.keyArrived(Self.descriptor)) }
    }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        guard lock.withLock({ present }) else { throw SmartCardError.noCard(descriptor.name) }
        connections.withLock { $0 += 1 }
        return VirtualKeyConnection(key: key)
    }
}

/// Runs the real runner against a backend, collecting what it posts.
final class Harness: @unchecked Sendable {
    // @unchecked: `messages` is a LockedValue; `runner` is set once in init.
    let messages = LockedValue<[Msg]>([])
    var runner: Runner!
    let exchanges = LockedValue(0)

    init(_ backend: any KeyBackend, directory: String) {
        let env = RunnerEnvironment(
            pins: PinStore(path: directory + "/pins.json"),
            rememberedKeys: RememberedKeys(path: directory + "/oath-keys.json"),
            observer: { [exchanges] _ in exchanges.withLock { $0 += 1 } })
        runner = Runner(backend: backend, environment: env) { [messages] msg in messages.withLock { $0.append(msg) } }
    }

    /// Performs `command` and waits for the first message `match` accepts.
    func run<T>(_ command: Command, timeout: Double = 60, _ match: @escaping (Msg) -> T?) async throws -> T {
        let start = messages.withLock { $0.count }
        runner.perform(command)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let found = messages.withLock { $0.dropFirst(start).lazy.compactMap(match).first }
            if let found { return found }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw CancellationError()
    }
}

/// A new directory for one test's files. A test may hand it to several harnesses (what one remembered, the
/// next reads), so the directories are removed when the test process exits, not when a harness goes.
func temporaryDirectory() -> String {
    let dir = NSTemporaryDirectory() + "ykterm-runner-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    temporaryDirectories.withLock { dirs in
        if dirs.isEmpty {
            atexit {
                for dir in temporaryDirectories.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: dir) }
            }
        }
        dirs.append(dir)
    }
    return dir
}

private let temporaryDirectories = LockedValue<[String]>([])

/// RFC 6238 TOTP computed here from the demo secret, independently of the key.
func expectedTOTP(_ secret: [UInt8], time: Int64, period: Int64 = 30, digits: Int = 6) -> String {
    let counter = BigEndian.bytes(UInt64(time / period), count: 8)
    let mac = Crypto.hmac(.sha1, key: secret, data: counter)
    let offset = Int(mac[19] & 0x0F)
    let value =
        (UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3]))
    let code = value % UInt32(pow(10, Double(digits)))
    return String(repeating: "0", count: digits - String(code).count) + String(code)
}

@Suite("Runner against the virtual key")
struct RunnerTests {
    let github: [UInt8] = [
        0x09, 0x30, 0x2A, 0xAA, 0xB8, 0xFD, 0xA8, 0xB6, 0x56, 0xC7,
        0xD0, 0x3E, 0xD3, 0x8E, 0x07, 0x7D, 0xB1, 0xAC, 0x60, 0xD6,
    ]

    @Test func openReadsAccountsAndCodesThatMatchRFC6238() async throws {
        let backend = InProcessBackend()
        let h = Harness(backend, directory: temporaryDirectory())
        let t = 1_700_000_000.0
        let snapshot = try await h.run(.oath(.open(InProcessBackend.descriptor, time: t))) { msg -> OATHSnapshot? in
            if case .oath(.opened(_, let s)) = msg { return s } else { return nil }
        }
        #expect(!snapshot.hasPassword)
        let gh = try #require(snapshot.entries.first { $0.credential.id.string == "GitHub:alice@example.com" })
        #expect(gh.code?.value == expectedTOTP(github, time: Int64(t)))
        #expect(snapshot.entries.first { $0.credential.issuer == "Google" }?.code == nil)
        #expect(snapshot.entries.count == 7)
    }

    @Test func refreshAtABoundaryIsOneCalculateAllWhenOnly30SecondCodesExpired() async throws {
        let backend = InProcessBackend()
        let h = Harness(backend, directory: temporaryDirectory())
        let before = h.exchanges.withLock { $0 }
        let entries = try await h.run(
            .oath(.refresh(InProcessBackend.descriptor, time: 1_700_000_030, all: true, single: []))
        ) { msg -> [OATHSession.Entry]? in
            if case .oath(.codes(_, let e)) = msg { return e } else { return nil }
        }
        // SELECT and CALCULATE ALL: two exchanges, nothing more (the 60-second account is not recalculated).
        #expect(h.exchanges.withLock { $0 } - before == 2)
        #expect(entries.first { $0.credential.period == 60 }?.code == nil)
        #expect(
            entries.first { $0.credential.id.string == "GitHub:alice@example.com" }?.code?.value
                == expectedTOTP(github, time: 1_700_000_030))
    }

    @Test func passwordProtectedKeyIsLockedThenUnlockedAndRemembered() async throws {
        let backend = InProcessBackend()
        let dir = temporaryDirectory()
        let h = Harness(backend, directory: dir)
        let d = InProcessBackend.descriptor
        _ = try await h.run(.oath(.setPassword(d, current: nil, new: "correct horse", time: 1000))) { msg -> Bool? in
            if case .oath(.changed(_, let s, _)) = msg { return s.hasPassword } else { return nil }
        }
        // The runner keeps the derived key for this session: the next open is not locked.
        let again = try await h.run(.oath(.open(d, time: 1000))) { msg -> Bool? in
            if case .oath(.opened) = msg { return true } else { return nil }
        }
        #expect(again)
        // A fresh runner (a new start of the app) finds it locked.
        let fresh = Harness(backend, directory: dir)
        let locked = try await fresh.run(.oath(.open(d, time: 1000))) { msg -> Bool? in
            if case .oath(.locked) = msg {
                return true
            } else if case .oath(.opened) = msg {
                return false
            } else {
                return nil
            }
        }
        #expect(locked)
        let wrong = try await fresh.run(.oath(.unlock(d, password: "wrong", remember: false, time: 1000))) {
            msg -> OATHFailure? in
            if case .oath(.failed(_, let f)) = msg { return f } else { return nil }
        }
        #expect(wrong.wrongPassword)
        let remembered = try await fresh.run(.oath(.unlock(d, password: "correct horse", remember: true, time: 1000))) {
            msg -> Bool? in
            if case .oath(.unlocked(_, _, let r)) = msg { return r } else { return nil }
        }
        #expect(remembered)
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/oath-keys.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let file = try String(contentsOfFile: dir + "/oath-keys.json", encoding: .utf8)
        #expect(!file.contains("correct horse"))
        // Another start uses the remembered key without asking.
        let third = Harness(backend, directory: dir)
        let opened = try await third.run(.oath(.open(d, time: 1000))) { msg -> Bool? in
            if case .oath(.opened) = msg {
                return true
            } else if case .oath(.locked) = msg {
                return false
            } else {
                return nil
            }
        }
        #expect(opened)
    }

    @Test func anUnreadableFileOfRememberedPasswordsIsSetAsideAndReported() async throws {
        let backend = InProcessBackend()
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d = InProcessBackend.descriptor
        let h = Harness(backend, directory: dir)
        _ = try await h.run(.oath(.setPassword(d, current: nil, new: "correct horse", time: 1000))) { msg -> Bool? in
            if case .oath(.changed(_, let s, _)) = msg { return s.hasPassword } else { return nil }
        }
        // Cut short, as a crash of an older version could leave it.
        let path = dir + "/oath-keys.json"
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data("{\"abc\": \"12".utf8),
                attributes: [.posixPermissions: 0o600]))
        let fresh = Harness(backend, directory: dir)
        let locked = try await fresh.run(.oath(.open(d, time: 1000))) { msg -> Bool? in
            if case .oath(.locked) = msg {
                return true
            } else if case .oath(.opened) = msg {
                return false
            } else {
                return nil
            }
        }
        #expect(locked)
        let notice = fresh.messages.withLock {
            $0.lazy.compactMap { msg -> UIText? in
                if case .notice(let text, .warning) = msg { return text } else { return nil }
            }.first
        }
        #expect(notice == UIText("status.fileSetAside", ["path": path, "aside": path + ".corrupt"]))
        #expect(FileManager.default.contents(atPath: path + ".corrupt") == Data("{\"abc\": \"12".utf8))
    }

    @Test func addRenameDeleteChangeTheKey() async throws {
        let backend = InProcessBackend(VirtualKeyState.yubiKey5NFC())
        let h = Harness(backend, directory: temporaryDirectory())
        let d = InProcessBackend.descriptor
        let data = CredentialData(name: "carol", issuer: "Ex", secret: Array("12345678901234567890".utf8))
        let added = try await h.run(.oath(.add(d, [data], overwrite: false, time: 59))) { msg -> OATHSnapshot? in
            if case .oath(.changed(_, let s, _)) = msg { return s } else { return nil }
        }
        #expect(added.entries.map(\.credential.id.string) == ["Ex:carol"])
        // RFC 6238 appendix B, SHA-1, T = 59: 94287082 (8 digits); 6 digits: 287082.
        #expect(added.entries.first?.code?.value == "287082")
        let credential = added.entries[0].credential
        let renamed = try await h.run(
            .oath(.rename(d, credential, to: CredentialID(name: "dave", issuer: "Ex", type: .totp), time: 59))
        ) { msg -> OATHSnapshot? in
            if case .oath(.changed(_, let s, _)) = msg { return s } else { return nil }
        }
        #expect(renamed.entries.map(\.credential.id.string) == ["Ex:dave"])
        let deleted = try await h.run(.oath(.delete(d, renamed.entries[0].credential, time: 59))) {
            msg -> OATHSnapshot? in
            if case .oath(.changed(_, let s, _)) = msg { return s } else { return nil }
        }
        #expect(deleted.entries.isEmpty)
        // Adding the same account twice is refused, and the first stays.
        _ = try await h.run(.oath(.add(d, [data], overwrite: false, time: 59))) { msg -> Bool? in
            if case .oath(.changed) = msg { return true } else { return nil }
        }
        let duplicate = try await h.run(.oath(.add(d, [data], overwrite: false, time: 59))) { msg -> OATHFailure? in
            if case .oath(.failed(_, let f)) = msg { return f } else { return nil }
        }
        #expect(duplicate.message == UIText(ErrorKind.accountExists.textKey, ["account": "Ex:carol"]))
        // Confirmed, it replaces the account: the new secret's code (RFC 4226's secret, RFC 6238's SHA-256 row).
        let replacement = CredentialData(
            name: "carol", issuer: "Ex", algorithm: .sha256,
            secret: Array("12345678901234567890123456789012".utf8))
        let replaced = try await h.run(.oath(.add(d, [replacement], overwrite: true, time: 59))) {
            msg -> OATHSnapshot? in
            if case .oath(.changed(_, let s, _)) = msg { return s } else { return nil }
        }
        // RFC 6238 appendix B, SHA-256, T = 59: 46119246; 6 digits: 119246.
        #expect(replaced.entries.map(\.credential.id.string) == ["Ex:carol"])
        #expect(replaced.entries.first?.code?.value == "119246")
    }

    @Test func keyPulledOutIsReportedAsGone() async throws {
        let backend = InProcessBackend()
        let h = Harness(backend, directory: temporaryDirectory())
        backend.unplug()
        let failure = try await h.run(.oath(.open(InProcessBackend.descriptor, time: 1000))) { msg -> OATHFailure? in
            if case .oath(.failed(_, let f)) = msg { return f } else { return nil }
        }
        #expect(failure.keyGone)
    }

    @Test func pinsAreStoredPerDeviceWithMode0600() throws {
        let dir = temporaryDirectory()
        let store = PinStore(path: dir + "/sub/pins.json")
        store.save(["GitHub:alice"], for: "dev1")
        store.save(["Steam:alice", "Ex:bob"], for: "dev2")
        #expect(store.pins(for: "dev1") == ["GitHub:alice"])
        #expect(store.pins(for: "dev2") == ["Steam:alice", "Ex:bob"])
        #expect(store.pins(for: "other").isEmpty)
        store.save([], for: "dev1")
        #expect(store.pins(for: "dev1").isEmpty)
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/sub/pins.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func anUnreadablePinsFileIsSetAsideAndReportedWithItsPath() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/pins.json"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("{\"dev1\": [\"Git".utf8)))
        let h = Harness(InProcessBackend(), directory: dir)
        let notice = try await h.run(.loadPins(deviceID: "dev1")) { msg -> UIText? in
            if case .notice(let text, .warning) = msg { return text } else { return nil }
        }
        #expect(notice == UIText("status.fileSetAside", ["path": path, "aside": path + ".corrupt"]))
        #expect(FileManager.default.contents(atPath: path + ".corrupt") == Data("{\"dev1\": [\"Git".utf8))
        #expect(!FileManager.default.fileExists(atPath: path))
        // Pinning works again, in a new file.
        PinStore(path: path).save(["GitHub:alice"], for: "dev1")
        #expect(PinStore(path: path).pins(for: "dev1") == ["GitHub:alice"])
    }
}
