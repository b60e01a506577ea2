import CPCSCLite
import FoundationEssentials
import Glibc

/// Watches PC/SC readers and cards. It blocks in `SCardGetStatusChange` on the readers and the PnP
/// notification pseudo-reader, so nothing runs while nothing changes; cancelling the stream wakes it with
/// `SCardCancel`. While pcscd is unreachable it waits for pcscd's socket to be created (inotify on its
/// directory), and tries again then, or after `serviceRetryInterval` when that directory cannot be watched.
public final class KeyMonitor: Sendable {
    public let serviceRetryInterval: Double
    private let state = LockedState()

    public init(serviceRetryInterval: Double = 2.0) {
        self.serviceRetryInterval = serviceRetryInterval
    }

    /// A stream of events, starting with the keys present now. Ends when the consumer stops iterating.
    public func events() -> AsyncStream<KeyEvent> {
        let (stream, continuation) = AsyncStream<KeyEvent>.makeStream(bufferingPolicy: .unbounded)
        let token = state.newToken()
        continuation.onTermination = { [state] _ in state.cancel(token) }
        let started = SystemThread.start(name: "ykterm.keymon") { [state, serviceRetryInterval] in
            KeyMonitor.run(token: token, state: state, retry: serviceRetryInterval) { continuation.yield($0) }
            continuation.finish()
        }
        if !started {
            continuation.yield(.serviceUnavailable)
            continuation.finish()
        }
        return stream
    }

    private static func run(token: Int, state: LockedState, retry: Double, emit: (KeyEvent) -> Void) {
        var known = [String: (present: Bool, atr: [UInt8])]()
        var serviceUp: Bool?
        /// What the last failed attempt said: refused (polkit) or unreachable.
        var refused = false
        let watch = PCSCServiceWatch()
        // After pcscd created its socket it still has to listen on it: a few quick tries cover that moment.
        var quickRetries = [Double]()
        defer { state.closeWakeDescriptor(token) }
        while !state.isCancelled(token) {
            // pcscd is tried first. Only when it does not answer is the watch armed and pcscd tried again, so that
            // a socket created meanwhile still counts: arming while pcscd answers would cost every start the close
            // of an inotify descriptor, which waits for an RCU grace period (10 ms on these machines).
            func attempt() -> PCSCContext? {
                do {
                    return try PCSCContext()
                } catch {
                    refused = (error as? SmartCardError) == .accessDenied
                    return nil
                }
            }
            let wasRefused = refused
            var context = attempt()
            if context == nil && !refused {
                watch.arm()
                context = attempt()
            }
            guard let context else {
                if serviceUp != false || wasRefused != refused { emit(refused ? .serviceRefused : .serviceUnavailable) }
                serviceUp = false
                for (reader, s) in known {
                    if s.present {
                        emit(.keyLeft(id: KeyDescriptor(transport: .pcsc(reader: reader), name: reader).id))
                    }
                    emit(.readerRemoved(reader))
                }
                known.removeAll()
                if refused {
                    // pcscd's socket is there (no watch would fire): ask again now and then, for a polkit rule
                    // added meanwhile, not so often that pcscd's log fills with refusals.
                    state.sleep(token, seconds: retry * 5)
                } else if !quickRetries.isEmpty {
                    state.sleep(token, seconds: quickRetries.removeFirst())
                } else if watch.wait(seconds: retry, wake: state.wakeDescriptor(token)) {
                    quickRetries = [0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4]
                }
                continue
            }
            quickRetries = []
            watch.close()
            state.closeWakeDescriptor(token)
            if serviceUp != true { emit(.serviceAvailable) }
            serviceUp = true
            state.setContext(token, context)
            defer { state.setContext(token, nil) }
            do {
                while !state.isCancelled(token) {
                    let names = try context.readers()
                    // Readers that left.
                    for gone in known.keys.filter({ !names.contains($0) }).sorted() {
                        if known[gone]!.present {
                            emit(.keyLeft(id: KeyDescriptor(transport: .pcsc(reader: gone), name: gone).id))
                        }
                        emit(.readerRemoved(gone))
                        known[gone] = nil
                    }
                    for added in names where known[added] == nil {
                        emit(.readerAdded(added))
                        known[added] = (false, [])
                    }
                    // Current state of every reader, then wait for any change (or a reader appearing).
                    var states = ReaderStateArray(names: names)
                    _ = try context.waitForChange(&states, timeout: 0)
                    report(states.statuses(), known: &known, emit: emit)
                    var watch = ReaderStateArray(
                        names: names + [PCSC.pnpReader],
                        current: states.event.map { $0 & ~PCSCState.changed }
                            + [DWORD(names.count) << 16])
                    if state.isCancelled(token) { break }
                    _ = try context.waitForChange(&watch, timeout: PCSC.infinite)
                }
            } catch SmartCardError.cancelled {
                break
            } catch SmartCardError.serviceUnavailable {
                continue
            } catch {
                // A reader vanished between listing and waiting, or a transient error: list again.
                state.sleep(token, seconds: 0.05)
            }
        }
    }

    private static func report(
        _ statuses: [ReaderStatus], known: inout [String: (present: Bool, atr: [UInt8])],
        emit: (KeyEvent) -> Void
    ) {
        for s in statuses {
            let before = known[s.name] ?? (false, [])
            let present = s.cardPresent && !s.mute
            if present && (!before.present || before.atr != s.atr) {
                if before.present {
                    emit(.keyLeft(id: KeyDescriptor(transport: .pcsc(reader: s.name), name: s.name).id))
                }
                emit(.keyArrived(KeyDescriptor(transport: .pcsc(reader: s.name), name: s.name, atr: s.atr)))
            } else if !present && before.present {
                emit(.keyLeft(id: KeyDescriptor(transport: .pcsc(reader: s.name), name: s.name).id))
            }
            known[s.name] = (present, present ? s.atr : [])
        }
    }
}

/// Cancellation state shared between monitor threads and stream terminations.
final class LockedState: Sendable {
    private struct Entry {
        var cancelled = false
        var context: PCSCContext?
        /// A pipe `cancel` writes to, for waits on descriptors (read end, write end); -1 while there is none.
        var wake: (read: Int32, write: Int32) = (-1, -1)
    }

    private let lock = ThreadCondition()
    // nonisolated(unsafe): both are read and written only while `lock` is held. A condition rather than a
    // Mutex because `sleep` waits on it and is woken by `cancel` (Mutex has no condition to wait on).
    private nonisolated(unsafe) var entries = [Int: Entry]()
    private nonisolated(unsafe) var next = 0

    func newToken() -> Int {
        lock.lock(); defer { lock.unlock() }
        next += 1
        entries[next] = Entry()
        return next
    }

    func isCancelled(_ token: Int) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return entries[token]?.cancelled ?? true
    }

    func setContext(_ token: Int, _ context: PCSCContext?) {
        lock.lock(); defer { lock.unlock() }
        entries[token]?.context = context
        if let context, entries[token]?.cancelled == true { context.cancel() }
    }

    func cancel(_ token: Int) {
        lock.lock()
        entries[token]?.cancelled = true
        let ctx = entries[token]?.context
        if let w = entries[token]?.wake.write, w >= 0 {
            var one: UInt8 = 1
            _ = write(w, &one, 1)
        }
        lock.broadcast()
        lock.unlock()
        ctx?.cancel()
    }

    /// A descriptor that becomes readable when `token` is cancelled (made on first use; -1 when no pipe
    /// could be made, and the wait then ends only at its timeout).
    func wakeDescriptor(_ token: Int) -> Int32 {
        lock.lock(); defer { lock.unlock() }
        guard var entry = entries[token] else { return -1 }
        if entry.wake.read < 0 {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { return -1 }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            entry.wake = (fds[0], fds[1])
            if entry.cancelled {
                var one: UInt8 = 1
                _ = write(fds[1], &one, 1)
            }
            entries[token] = entry
        }
        return entry.wake.read
    }

    /// Closes the pipe of `wakeDescriptor`, if there is one.
    func closeWakeDescriptor(_ token: Int) {
        lock.lock(); defer { lock.unlock() }
        guard let w = entries[token]?.wake, w.read >= 0 else { return }
        close(w.read)
        close(w.write)
        entries[token]?.wake = (-1, -1)
    }

    /// Sleeps up to `seconds`, waking early when cancelled.
    func sleep(_ token: Int, seconds: Double) {
        lock.lock(); defer { lock.unlock() }
        let until = ThreadCondition.monotonicNow() + seconds
        while entries[token]?.cancelled == false {
            if !lock.wait(untilMonotonic: until) { break }
        }
    }
}
