import Dispatch

/// Where ykterm makes the calls that may block (pcsc-lite's, opening a hidraw node) and keeps its deadlines:
/// never on `DispatchQueue.global()`.
///
/// On Linux, Swift's tasks and `DispatchQueue.global()` share one pool of as many threads as there are cores.
/// A pcsc-lite call stuck on a reader that never answers holds one of them; on a two-core machine two such calls
/// hold them all, and then nothing on the pool runs — not the timer that gives up on the reader, not the task
/// waiting for it — until libdispatch's monitor, which looks once a second, adds a thread. Among four stuck
/// readers `oath code` took 4.0 s for its 3 s probe that way, 6 s on a loaded machine. Work on a serial queue
/// runs on an overcommitting thread instead, which libdispatch starts at once when its others are busy.
public enum Blocking {
    /// Runs `work`, which may block, on a thread outside the task pool, after `delay` seconds.
    public static func run(
        after delay: Double = 0, label: String = "ykterm.blocking",
        _ work: @escaping @Sendable () -> Void
    ) {
        let queue = DispatchQueue(label: label)
        if delay > 0 {
            queue.asyncAfter(deadline: .now() + delay, execute: work)
        } else {
            queue.async(execute: work)
        }
    }

    /// Runs `work`, which may block, outside the task pool, and hands its result to the awaiting task.
    public static func value<T: Sendable>(
        label: String = "ykterm.blocking",
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { cont in
            run(label: label) { cont.resume(with: Result { try work() }) }
        }
    }

    /// Calls `action` after `seconds` on the one queue of deadlines, which no blocked call can hold up.
    /// Actions must be short and must not block: they share that queue.
    public static func after(_ seconds: Double, _ action: @escaping @Sendable () -> Void) {
        deadlines.asyncAfter(deadline: .now() + max(seconds, 0), execute: action)
    }

    /// The queue deadlines fire on (for a Dispatch timer source that must fire whatever the pool is doing).
    public static let deadlines = DispatchQueue(label: "ykterm.deadlines")
}
