import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

/// The TUI's loop: one `poll` on the keyboard, the screen's signal pipe and the runner's message pipe, with
/// a timeout only while something on screen counts down (the next whole second). Each wake-up feeds
/// messages to `update`, hands the commands to the runner, and redraws.
public final class TerminalApp {
    private let screen: any InteractiveScreen
    private let view: AppView
    private var state: AppState
    private let inbox = LockedValue<[Msg]>([])
    private let wakeup: Wakeup
    private var runner: Runner?
    private let clipboard: Clipboard
    /// OSC 52 sequences, and the bell and notification of a touch the key waits for, to write after the next frame.
    private var pendingRaw = [[UInt8]]()
    private let text: Localize
    /// How a wait for a touch is signalled (`[notify] touch`), and the last wait signalled.
    private let touchSignals: Set<TouchSignal>
    private var touchAlertShown: Int?

    public init(
        screen: any InteractiveScreen, state: AppState, text: @escaping Localize, theme: Theme,
        clipboard: Clipboard, touchSignals: Set<TouchSignal> = [.bell, .osc]
    ) throws {
        self.screen = screen
        self.clipboard = clipboard
        self.text = text
        self.touchSignals = touchSignals
        self.state = state
        self.view = AppView(screen: screen, text: text, theme: theme)
        self.wakeup = try Wakeup()
    }

    /// Runs until the user quits or the terminal goes away. The screen is ended on the way out.
    public func run(backend: any KeyBackend, environment: RunnerEnvironment) {
        let inbox = self.inbox, wakeup = self.wakeup
        let runner = Runner(backend: backend, environment: environment) { msg in
            inbox.withLock { $0.append(msg) }
            wakeup.signal()
        }
        self.runner = runner
        defer {
            runner.stop()
            screen.end()
        }
        state.now = Date().timeIntervalSince1970
        initialCommands(state).forEach(runner.perform)
        var lastTick = floor(state.now)
        while !state.quitting {
            view.render(state)
            for bytes in pendingRaw { screen.writeRaw(bytes) }
            pendingRaw.removeAll()
            let timeout = Self.timeout(state, now: Date().timeIntervalSince1970)
            let result: PollResult
            do {
                result = try Poller.poll(fds: screen.pollDescriptors + [wakeup.fd], timeoutMilliseconds: timeout)
            } catch {
                break
            }
            var messages = [Msg]()
            // Keys read together arrived together: they share the time of the read (the OTP tab tells a
            // key's burst from a person's typing by the time between keys, not by how fast they are handled).
            var readAt: Double?
            if result.readable.contains(where: screen.pollDescriptors.contains) || result.interrupted {
                let events = screen.readAvailable()
                readAt = Date().timeIntervalSince1970
                for event in events {
                    switch event {
                    case .keyPress(let key): messages.append(.keyPress(key))
                    case .paste(let text): messages.append(.paste(text))
                    case .resize: break
                    }
                }
                if screen.inputClosed { break }
            }
            if result.readable.contains(wakeup.fd) {
                wakeup.drain()
                messages += inbox.withLock { queued in
                    defer { queued.removeAll() }
                    return queued
                }
            }
            let now = Date().timeIntervalSince1970
            for msg in messages { dispatch(msg, keyTime: readAt) }
            if floor(now) != lastTick || messages.isEmpty {
                lastTick = floor(now)
                dispatch(.tick(now: now))
            }
        }
    }

    private func dispatch(_ msg: Msg, keyTime: Double? = nil) {
        if case .keyPress = msg { state.now = keyTime ?? Date().timeIntervalSince1970 }
        for command in update(&state, msg) {
            if case .copy(let text, let status) = command {
                copy(text, status: status)
            } else {
                runner?.perform(command)
            }
        }
        signalTouch()
    }

    /// A new wait for a touch rings the terminal's bell and sends the desktop notification, once, after the frame
    /// that says it (also through SSH: they are output like any other).
    private func signalTouch() {
        guard let alert = state.touchAlert, alert.id != touchAlertShown else { return }
        touchAlertShown = alert.id
        let escapes = TouchAlert.escapes(
            title: text(UIText("touch.alert.title")), message: text(alert.text), signals: touchSignals)
        if !escapes.isEmpty { pendingRaw.append(Array(escapes.utf8)) }
    }

    /// OSC 52 goes to the terminal from this thread, after the frame; local tools run aside and report.
    private func copy(_ text: String, status: UIText) {
        let sequence = clipboard.terminalSequence(for: text)
        if let sequence { pendingRaw.append(sequence) }
        let clipboard = self.clipboard, inbox = self.inbox, wakeup = self.wakeup
        Task {
            let local = await clipboard.copyWithLocalTools(text)
            let how = (sequence != nil ? ["OSC 52"] : []) + local.succeeded
            let msg: Msg =
                how.isEmpty
                ? .copied(false, UIText("status.copyFailed"))
                : .copied(true, status.adding(how: how.joined(separator: ", ")))
            inbox.withLock { $0.append(msg) }
            wakeup.signal()
        }
    }

    /// Milliseconds until the next whole second while a countdown, a pending code or a timed message is on
    /// screen; nil (wait for input or a message only) when nothing changes by itself.
    static func timeout(_ state: AppState, now: Double) -> Int? {
        let counting = state.oath.counting
        let expiring = state.status?.expires != nil
        // The OTP tab holds a bound key until it is sure no burst follows: wake up then.
        let otpDue = state.tab == .otp ? state.otp.wakeAt.map { max(1, Int((($0 - now) * 1000).rounded(.up))) } : nil
        guard counting || expiring else { return otpDue }
        let next = floor(now) + 1
        let second = max(1, Int(((next - now) * 1000).rounded(.up)))
        return otpDue.map { min($0, second) } ?? second
    }
}
