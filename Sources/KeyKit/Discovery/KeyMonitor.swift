import CPCSCLite
import FoundationEssentials
import Glibc

/// Watches PC/SC readers and cards. It blocks in `SCardGetStatusChange` on the readers and the PnP
/// notification pseudo-reader, so nothing runs while nothing changes; cancelling the stream wakes it with
/// `SCardCancel`. Only while pcscd is unreachable does it retry, once every `serviceRetryInterval`.
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
        while !state.isCancelled(token) {
            guard let context = try? PCSCContext() else {
                if serviceUp != false { emit(.serviceUnavailable) }
                serviceUp = false
                for (reader, s) in known {
                    if s.present { emit(.keyLeft(id: KeyDescriptor(transport: .pcsc(reader: reader), name: reader).id)) }
                    emit(.readerRemoved(reader))
                }
                known.removeAll()
                state.sleep(token, seconds: retry)
                continue
            }
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
                    var watch = ReaderStateArray(names: names + [PCSC.pnpReader],
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

    private static func report(_ statuses: [ReaderStatus], known: inout [String: (present: Bool, atr: [UInt8])],
                               emit: (KeyEvent) -> Void) {
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
        lock.broadcast()
        lock.unlock()
        ctx?.cancel()
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
