import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// A virtual key with a profile (a key of another make), reached in process over its smart-card side, as a
/// key on an NFC reader is.
private final class ProfileBackend: KeyBackend, @unchecked Sendable {
    // @unchecked: `key` is immutable and thread-safe.
    static let descriptor = KeyDescriptor(transport: .virtual, name: "Virtual Key")
    let key: VirtualKey

    init(_ profile: VirtualKeyProfile) {
        key = VirtualKey(state: .yubiKey5NFC(), touchDelay: 0, resetWindow: .infinity, profile: profile)
    }

    func events() -> AsyncStream<KeyEvent> {
        AsyncStream { $0.yield(.keyArrived(Self.descriptor)) }
    }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        VirtualKeyConnection(key: key)
    }
}

/// The FIDO2 tab with keys of other makes: the work against the virtual key's profiles, and what the tab
/// makes of the answers.
@Suite("FIDO2 tab with keys of other makes")
struct FIDOProfileTabTests {
    static let d = ProfileBackend.descriptor

    func run(_ harness: Harness, _ command: FIDOTabCommand, timeout: Double = 60) async throws -> FIDOTabMsg {
        try await harness.run(.fido(command), timeout: timeout) { msg -> FIDOTabMsg? in
            if case .fido(let m) = msg, case .touch = m { return nil }
            if case .fido(let m) = msg { return m }
            return nil
        }
    }

    /// The tab opened on the key, with `answer` as the answer to its load.
    func tab(after answer: FIDOTabMsg) -> AppState {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(Self.d)))
        _ = update(&state, .keyPress(.char("3")))
        _ = update(&state, .fido(answer))
        return state
    }

    @Test func aU2FOnlyKeyIsSaidToHaveNoFIDO2() async throws {
        let harness = Harness(ProfileBackend(.u2fOnly), directory: temporaryDirectory())
        let answer = try await run(harness, .load(Self.d))
        #expect(answer == .failed(keyID: Self.d.id, FIDOFailure(.load, .u2fOnly)))
        var state = tab(after: answer)
        #expect(state.fido.phase == .unavailable(UIText("fido.u2fOnly")))
        #expect(state.status == nil)
        // No PIN dialog opens on such a key.
        #expect(update(&state, .keyPress(.char("s"))).isEmpty && state.fido.dialog == nil)
        // The words say what the key is, and what still works.
        let text = StringTables.load(language: "en").text(UIText("fido.u2fOnly"))
        #expect(text.contains("U2F only") && text.contains("no FIDO2"))
    }

    @Test func pinRetriesRefusedBeforeAPINIsNoPINAndSetPINIsOffered() async throws {
        let harness = Harness(ProfileBackend(.pinRetriesRefused), directory: temporaryDirectory())
        let answer = try await run(harness, .load(Self.d))
        guard case .loaded(_, let info) = answer else { Issue.record("load: \(answer)"); return }
        #expect(info.pinSet == false && info.retries == nil)
        var state = tab(after: answer)
        #expect(state.fido.phase == .ready && state.fido.alert == nil)
        _ = update(&state, .keyPress(.char("s")))
        #expect(state.fido.dialog?.kind == .setPIN)
        // Once a PIN is set the key counts.
        guard case .pinSet(_, let after, changed: false) = try await run(harness, .setPIN(Self.d, new: "fresh-pin"))
        else {
            Issue.record("set PIN failed"); return
        }
        #expect(after.pinSet == true && after.retries == 8)
    }

    @Test(arguments: [VirtualKeyProfile.pinProtocol1, .pinProtocol2])
    func onePINProtocolOnlyForEveryPINOperation(profile: VirtualKeyProfile) async throws {
        let backend = ProfileBackend(profile)
        let harness = Harness(backend, directory: temporaryDirectory())
        guard case .pinSet = try await run(harness, .setPIN(Self.d, new: "one-proto")) else {
            Issue.record("set PIN failed"); return
        }
        guard case .pinSet = try await run(harness, .changePIN(Self.d, current: "one-proto", new: "two-proto")) else {
            Issue.record("change PIN failed"); return
        }
        guard
            case .verified(_, let info, let credentials) = try await run(
                harness,
                .verifyPIN(
                    Self.d, pin: "two-proto",
                    thenList: true))
        else {
            Issue.record("verify PIN failed"); return
        }
        #expect(info.retries == 8 && credentials == [])
        #expect(try await run(harness, .listCredentials(Self.d)) == .credentials(keyID: Self.d.id, []))
        #expect(backend.key.state.fido.isPINSet)
    }

    @Test func aSlowKeyIsWaitedForAndCanBeCancelled() async throws {
        let harness = Harness(ProfileBackend(.slowKeepalive), directory: temporaryDirectory())
        guard case .pinSet = try await run(harness, .setPIN(Self.d, new: "slow-pin")) else {
            Issue.record("set PIN failed"); return
        }
        // Esc while the key still reports "processing": the reset stops at once and nothing is reset.
        harness.runner.perform(.fido(.reset(Self.d)))
        let deadline = Date().addingTimeInterval(5)
        func working(_ msg: Msg) -> Bool {
            if case .fido(.touch(_, waiting: false)) = msg { return true }
            return false
        }
        while Date() < deadline, !harness.messages.withLock({ $0.contains(where: working) }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(harness.messages.withLock { $0.contains(where: working) })
        let start = Date()
        let cancelled = try await harness.run(.fido(.cancel), timeout: 5) { msg -> FIDOFailure? in
            if case .fido(.failed(_, let f)) = msg, f.operation == .reset { return f }
            return nil
        }
        #expect(cancelled == FIDOFailure(.reset, .cancelled))
        #expect(Date().timeIntervalSince(start) < 2)
        guard case .loaded(_, let info) = try await run(harness, .load(Self.d)) else { Issue.record("load"); return }
        #expect(info.pinSet == true)
    }
}
