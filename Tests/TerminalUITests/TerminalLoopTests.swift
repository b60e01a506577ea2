import AuthenticatorModel
import Foundation
import KeyKit
import Synchronization
import Testing
import VirtualKey
@testable import TerminalUI

/// A screen in memory that the TUI's whole loop runs on: keys are fed through a pipe the loop polls, as the
/// terminal's would be, and each presented frame is kept (as text) for the test to read from its own thread.
final class ScriptedScreen: InteractiveScreen, @unchecked Sendable {
    // @unchecked: `memory` is used only by the loop's thread; what the test reads is behind `shared`.
    private let memory: MemoryScreen
    private let pipeFDs: [Int32]
    private struct Shared {
        var pending: [InputEvent] = []
        var frames: [[String]] = []
        var raw: [[UInt8]] = []
        var closed = false
        var ended = 0
    }
    private let shared = Mutex(Shared())

    init(rows: Int, columns: Int) {
        memory = MemoryScreen(rows: rows, columns: columns)
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        pipeFDs = fds
    }

    deinit { pipeFDs.forEach { close($0) } }

    // MARK: The test's side

    /// Keys as if typed now.
    func feed(_ events: [InputEvent]) {
        shared.withLock { $0.pending += events }
        var byte: UInt8 = 1
        _ = write(pipeFDs[1], &byte, 1)
    }

    func type(_ text: String) { feed(text.map { .keyPress(.char($0)) }) }

    /// The terminal hangs up.
    func hangUp() {
        shared.withLock { $0.closed = true }
        feed([])
    }

    var lastFrame: [String] { shared.withLock { $0.frames.last ?? [] } }
    var frameCount: Int { shared.withLock { $0.frames.count } }
    var rawWrites: [[UInt8]] { shared.withLock { $0.raw } }
    var endCount: Int { shared.withLock { $0.ended } }

    /// Waits until the last frame holds `text` (or, with `absent`, no longer does); the frame, or nil after
    /// `timeout` seconds.
    func waitFor(_ text: String, absent: Bool = false, timeout: Double = 60) async -> [String]? {
        await waitUntil(timeout: timeout) { frame in frame.contains(where: { $0.contains(text) }) != absent }
    }

    /// Waits until the last frame satisfies `ready`; the frame, or nil after `timeout` seconds.
    func waitUntil(timeout: Double = 60, _ ready: ([String]) -> Bool) async -> [String]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let frame = lastFrame
            if !frame.isEmpty && ready(frame) { return frame }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    // MARK: The loop's side

    var size: ScreenSize { memory.size }
    var unicode: Bool { memory.unicode }
    func erase() { memory.erase() }
    func draw(_ text: String, row: Int, column: Int, style: TextStyle, width: Int?) {
        memory.draw(text, row: row, column: column, style: style, width: width)
    }
    func setCursor(row: Int, column: Int) { memory.setCursor(row: row, column: column) }
    func hideCursor() { memory.hideCursor() }
    func present() {
        memory.present()
        let frame = (0..<memory.size.rows).map { memory.text(row: $0, trimmed: true) }
        shared.withLock { $0.frames.append(frame) }
    }

    var pollDescriptors: [Int32] { [pipeFDs[0]] }
    func readAvailable() -> [InputEvent] {
        var buffer = [UInt8](repeating: 0, count: 64)
        let flags = fcntl(pipeFDs[0], F_GETFL)
        _ = fcntl(pipeFDs[0], F_SETFL, flags | O_NONBLOCK)
        while read(pipeFDs[0], &buffer, buffer.count) > 0 {}
        return shared.withLock { s in
            defer { s.pending.removeAll() }
            return s.pending
        }
    }
    var inputClosed: Bool { shared.withLock { $0.closed } }
    func writeRaw(_ bytes: [UInt8]) { shared.withLock { $0.raw.append(bytes) } }
    func end() { shared.withLock { $0.ended += 1 } }
}

/// The virtual key in process, always present.
struct LoopBackend: KeyBackend {
    static let descriptor = KeyDescriptor(transport: .virtual, name: "Virtual Key")
    let key: VirtualKey

    func events() -> AsyncStream<KeyEvent> { AsyncStream { $0.yield(.keyArrived(Self.descriptor)) } }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        VirtualKeyConnection(key: key)
    }
}

/// The TUI's whole loop (`TerminalApp.run`: poll, update, runner, render) on a screen in memory, against the
/// virtual key: what the user sees, frame by frame, from key presses to quitting.
@Suite(.serialized) struct TerminalLoopTests {
    final class Run: @unchecked Sendable {
        // @unchecked: `app` is used only by the thread that runs it; `finished` is atomic.
        let screen = ScriptedScreen(rows: 30, columns: 100)
        let finished = Atomic<Bool>(false)
        let directory: String
        private let app: TerminalApp

        init(key: VirtualKey) throws {
            directory = NSTemporaryDirectory() + "ykterm-loop-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let tables = StringTables.load(language: "en")
            app = try TerminalApp(
                screen: screen, state: AppState(now: Date().timeIntervalSince1970),
                text: { t in tables.text(t) }, theme: Theme(),
                clipboard: Clipboard(method: .osc52, environment: [:]))
            let env = RunnerEnvironment(
                pins: PinStore(path: directory + "/pins.json"),
                rememberedKeys: RememberedKeys(path: directory + "/oath-keys.json"))
            let backend = LoopBackend(key: key)
            let thread = Thread { [self] in
                app.run(backend: backend, environment: env)
                finished.store(true, ordering: .sequentiallyConsistent)
            }
            thread.start()
        }

        func waitUntilFinished(timeout: Double = 60) async -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if finished.load(ordering: .sequentiallyConsistent) { return true }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return false
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// RFC 6238's SHA-1 secret, as an account the loop shows.
    static func keyWithAnAccount() async throws -> VirtualKey {
        let key = VirtualKey(state: .yubiKey5NFC())
        let session = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        _ = try await session.put(
            CredentialData(
                name: "alice@example.com", issuer: "RFC6238",
                secret: Array("12345678901234567890".utf8)))
        return key
    }

    @Test func theLoopShowsTheKeysCodesFollowsKeysAndQuits() async throws {
        let key = try await Self.keyWithAnAccount()
        let run = try Run(key: key)
        // The account, then its code (six digits in two groups), once the key has computed it.
        let shown = await run.screen.waitUntil { frame in
            frame.contains { $0.contains("alice@example.com") && $0.contains(/\d{3} \d{3}/) }
        }
        let frame = try #require(
            shown, "\(run.screen.frameCount) frames, the last:\n\(run.screen.lastFrame.joined(separator: "\n"))")
        // The code on screen is the account's code now (as the key computes it for this period).
        let session = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        let now = Int64(Date().timeIntervalSince1970)
        var codes = [String?]()
        for t in [now - 1, now, now + 1] { codes.append(try await session.calculateAll(at: t)[0].code?.value) }
        // The code is shown in groups of three digits.
        let line = try #require(frame.first { $0.contains("RFC6238") && $0.contains("alice@example.com") })
        let digits = line.filter { $0 != " " }
        #expect(codes.contains { $0.map { digits.contains($0) } == true }, "\(line) \(codes)")

        // A key press goes through update to the view: the help overlay opens and closes.
        #expect(!run.screen.lastFrame.contains { $0.contains("move the selection") })
        run.screen.type("?")
        #expect(await run.screen.waitFor("move the selection") != nil)
        run.screen.feed([.keyPress(.escape)])
        #expect(await run.screen.waitFor("move the selection", absent: true) != nil)
        // Quitting ends the loop and restores the screen once.
        run.screen.type("q")
        #expect(await run.waitUntilFinished())
        #expect(run.screen.endCount == 1)
    }

    @Test func copyingWritesOSC52AfterTheFrameAndSaysSo() async throws {
        let run = try Run(key: try await Self.keyWithAnAccount())
        #expect(
            await run.screen.waitUntil {
                $0.contains { $0.contains("alice@example.com") && $0.contains(/\d{3} \d{3}/) }
            } != nil)
        run.screen.type("c")
        #expect(await run.screen.waitFor("Copied") != nil)
        let osc52 = run.screen.rawWrites.first { $0.starts(with: [0x1B, 0x5D, 0x35, 0x32]) }
        #expect(osc52 != nil)
        run.screen.type("q")
        #expect(await run.waitUntilFinished())
    }

    @Test func aHungUpTerminalEndsTheLoop() async throws {
        let run = try Run(key: try await Self.keyWithAnAccount())
        #expect(await run.screen.waitFor("alice@example.com") != nil)
        run.screen.hangUp()
        #expect(await run.waitUntilFinished())
        #expect(run.screen.endCount == 1)
    }
}
