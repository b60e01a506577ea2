import Glibc

/// Errors from the small system-call wrappers of the app loop.
public struct SystemCallError: Error, Equatable, CustomStringConvertible {
    public let call: String
    public let errno: Int32

    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// A self-pipe that wakes the app loop's `poll`: any thread (a task posting a message, a signal handler) calls
/// `signal()`, the loop polls `fd` and calls `drain()` when it is readable. Both ends are non-blocking and
/// close-on-exec; signals that arrive while the pipe is full are merged, which is all a wakeup needs.
public final class Wakeup: Sendable {
    /// The end to poll for reading.
    public let fd: Int32
    /// The end `signal()` writes to.
    let writeFD: Int32

    public init() throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemCallError(call: "pipe", errno: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, fcntl(end, F_GETFD) | FD_CLOEXEC)
        }
        fd = ends[0]
        writeFD = ends[1]
    }

    deinit {
        close(fd)
        close(writeFD)
    }

    /// Makes `fd` readable. Async-signal-safe (one `write`); never blocks.
    public func signal() {
        Wakeup.signal(writeFD: writeFD)
    }

    /// The body of `signal()`, for signal handlers that hold only the descriptor.
    static func signal(writeFD: Int32) {
        var byte: UInt8 = 1
        while write(writeFD, &byte, 1) < 0 && errno == EINTR {}
    }

    /// Empties the pipe; returns whether anything was in it.
    @discardableResult
    public func drain() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64)
        var any = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                any = true
                continue
            }
            if count < 0 && errno == EINTR { continue }
            return any
        }
    }
}

/// What `Poller.poll` found.
public struct PollResult: Hashable, Sendable {
    /// Descriptors that can be read without blocking (including those at end of file or in error: a read returns
    /// at once, so the caller sees the condition).
    public var readable: Set<Int32>
    /// Descriptors whose other end hung up or that are in error (a closed terminal).
    public var hungUp: Set<Int32>
    /// Whether a signal interrupted the wait (EINTR): SIGWINCH does this, so check for a resize
    /// (`CursesScreen.readAvailable()` does).
    public var interrupted: Bool

    public init(readable: Set<Int32> = [], hungUp: Set<Int32> = [], interrupted: Bool = false) {
        self.readable = readable
        self.hungUp = hungUp
        self.interrupted = interrupted
    }

    /// Neither ready descriptors nor an interruption: the timeout passed.
    public var timedOut: Bool { readable.isEmpty && !interrupted }
}

/// One `poll(2)` for the app loop.
public enum Poller {
    /// Waits until one of `fds` is readable, `timeoutMilliseconds` pass (nil waits without limit, 0 does not
    /// wait), or a signal arrives. An interrupted wait returns what a zero-timeout poll then finds, with
    /// `interrupted` set, rather than waiting again: the signal may have been a resize the loop must draw.
    public static func poll(fds: [Int32], timeoutMilliseconds: Int?) throws -> PollResult {
        var entries = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let timeout = timeoutMilliseconds.map { Int32(clamping: max(0, $0)) } ?? -1
        var interrupted = false
        var count = Glibc.poll(&entries, nfds_t(entries.count), timeout)
        if count < 0 && errno == EINTR {
            interrupted = true
            repeat {
                count = Glibc.poll(&entries, nfds_t(entries.count), 0)
            } while count < 0 && errno == EINTR
        }
        if count < 0 { throw SystemCallError(call: "poll", errno: errno) }
        var result = PollResult(interrupted: interrupted)
        for entry in entries {
            let events = Int32(entry.revents)
            if events & Int32(POLLIN | POLLHUP | POLLERR | POLLNVAL) != 0 { result.readable.insert(entry.fd) }
            if events & Int32(POLLHUP | POLLERR | POLLNVAL) != 0 { result.hungUp.insert(entry.fd) }
        }
        return result
    }
}
