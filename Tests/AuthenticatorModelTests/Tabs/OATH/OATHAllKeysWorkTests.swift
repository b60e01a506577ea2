import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// Two virtual keys in process, each behind its own descriptor; `hold` keeps a key's connections waiting until
/// `release`, and `unplug` makes a key's connections fail as a pulled key's.
final class TwoKeyBackend: KeyBackend, @unchecked Sendable {
    // @unchecked: `held` and `gone` are only read and written under `lock`.
    static let daily = KeyDescriptor(transport: .pcsc(reader: "Virtual PCD 00 00"), name: "Virtual PCD 00 00")
    static let backup = KeyDescriptor(transport: .pcsc(reader: "Virtual PCD 00 01"), name: "Virtual PCD 00 01")
    let keys: [String: VirtualKey]
    private let lock = NSLock()
    private var held = Set<String>()
    private var gone = Set<String>()

    init(daily: VirtualKeyState, backup: VirtualKeyState) {
        keys = [Self.daily.id: VirtualKey(state: daily), Self.backup.id: VirtualKey(state: backup)]
    }

    func hold(_ d: KeyDescriptor) { lock.withLock { _ = held.insert(d.id) } }
    func release(_ d: KeyDescriptor) { lock.withLock { _ = held.remove(d.id) } }
    func unplug(_ d: KeyDescriptor) { lock.withLock { _ = gone.insert(d.id) } }

    func events() -> AsyncStream<KeyEvent> { AsyncStream { $0.finish() } }

    func connect(_ d: KeyDescriptor) async throws -> any SmartCardConnection {
        while lock.withLock({ held.contains(d.id) }) { try await Task.sleep(for: .milliseconds(5)) }
        guard lock.withLock({ !gone.contains(d.id) }), let key = keys[d.id] else { throw SmartCardError.noCard(d.name) }
        return VirtualKeyConnection(key: key)
    }
}

@Suite("OATH tab work over several keys, against two virtual keys")
struct OATHAllKeysWorkTests {
    static let secret = Array("12345678901234567890".utf8)

    static func state(serial: UInt32, accounts: [String]) -> VirtualKeyState {
        var state = VirtualKeyState.yubiKey5NFC(serial: serial)
        state.oath.credentials = accounts.map { name in
            OATHState.StoredCredential(id: Array(name.utf8), type: .totp, algorithm: .sha1, digits: 6, secret: secret)
        }
        return state
    }

    /// Each key answers on its own: a key that is slow to answer holds up no other key's answer.
    @Test func eachKeyAnswersAsSoonAsItCanAndASlowKeyHoldsUpNoOther() async throws {
        let backend = TwoKeyBackend(
            daily: Self.state(serial: 1, accounts: ["GitHub:alice"]),
            backup: Self.state(serial: 2, accounts: ["GitHub:alice", "Spare:carol"]))
        let h = Harness(backend, directory: temporaryDirectory())
        backend.hold(TwoKeyBackend.daily)
        let t = 1_700_000_000.0
        let first = try await h.run(
            .oath(.each([.open(TwoKeyBackend.daily, time: t), .open(TwoKeyBackend.backup, time: t)]))
        ) { msg -> (String, OATHSnapshot)? in
            if case .oath(.opened(let id, let s)) = msg { return (id, s) } else { return nil }
        }
        // Daily is held: backup's answer came first, and on its own.
        #expect(first.0 == TwoKeyBackend.backup.id)
        #expect(first.1.entries.map(\.credential.id.string).sorted() == ["GitHub:alice", "Spare:carol"])
        #expect(first.1.entries.first?.code?.value == expectedTOTP(Self.secret, time: Int64(t)))
        backend.release(TwoKeyBackend.daily)
        let daily = try await h.posted { msg -> OATHSnapshot? in
            if case .oath(.opened(TwoKeyBackend.daily.id, let s)) = msg { return s } else { return nil }
        }
        #expect(daily.entries.map(\.credential.id.string) == ["GitHub:alice"])
    }

    /// A key pulled out fails alone: the other's codes come.
    @Test func aKeyPulledOutFailsAloneAndTheOtherRefreshes() async throws {
        let backend = TwoKeyBackend(
            daily: Self.state(serial: 1, accounts: ["GitHub:alice"]),
            backup: Self.state(serial: 2, accounts: ["GitHub:alice"]))
        let h = Harness(backend, directory: temporaryDirectory())
        backend.unplug(TwoKeyBackend.backup)
        let t = 1_700_000_030.0
        let command = Command.oath(
            .each([
                .refresh(TwoKeyBackend.daily, time: t, all: true, single: []),
                .refresh(TwoKeyBackend.backup, time: t, all: true, single: []),
            ]))
        let failure = try await h.run(command) { msg -> OATHFailure? in
            if case .oath(.failed(TwoKeyBackend.backup.id, let f)) = msg { return f } else { return nil }
        }
        #expect(failure.keyGone)
        let codes = try await h.posted { msg -> [OATHSession.Entry]? in
            if case .oath(.codes(TwoKeyBackend.daily.id, let e)) = msg { return e } else { return nil }
        }
        #expect(codes.first?.code?.value == expectedTOTP(Self.secret, time: Int64(t)))
    }

    /// An account added to both keys at once is on both; a key that holds it already says so and keeps its own.
    @Test func anAddToBothKeysPutsTheAccountOnEachAndATakenOneIsReported() async throws {
        let backend = TwoKeyBackend(
            daily: Self.state(serial: 1, accounts: []), backup: Self.state(serial: 2, accounts: ["Ex:dave"]))
        let h = Harness(backend, directory: temporaryDirectory())
        let data = try OTPAuthURI.accounts(in: "otpauth://totp/Ex:dave?secret=JBSWY3DPEHPK3PXP&issuer=Ex")
        let t = 1_700_000_000.0
        let command = Command.oath(
            .each([
                .add(TwoKeyBackend.daily, data, overwrite: false, time: t),
                .add(TwoKeyBackend.backup, data, overwrite: false, time: t),
            ]))
        let taken = try await h.run(command) { msg -> OATHFailure? in
            if case .oath(.failed(TwoKeyBackend.backup.id, let f)) = msg { return f } else { return nil }
        }
        #expect(taken.taken == ["Ex:dave"] && taken.operation == .add)
        let added = try await h.posted { msg -> OATHSnapshot? in
            if case .oath(.changed(TwoKeyBackend.daily.id, let s, _)) = msg { return s } else { return nil }
        }
        #expect(added.entries.map(\.credential.id.string) == ["Ex:dave"])
        // Replaced when asked to.
        let replaced = try await h.run(.oath(.add(TwoKeyBackend.backup, data, overwrite: true, time: t))) {
            msg -> OATHSnapshot? in
            if case .oath(.changed(TwoKeyBackend.backup.id, let s, _)) = msg { return s } else { return nil }
        }
        #expect(
            replaced.entries.first?.code?.value
                == expectedTOTP(Array("Hello!".utf8) + [0xDE, 0xAD, 0xBE, 0xEF], time: Int64(t)))
    }
}

extension Harness {
    /// The first message `match` accepts among all posted so far or within `timeout` seconds.
    func posted<T>(timeout: Double = 60, _ match: @escaping (Msg) -> T?) async throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = messages.withLock({ $0.lazy.compactMap(match).first }) { return found }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw CancellationError()
    }
}
