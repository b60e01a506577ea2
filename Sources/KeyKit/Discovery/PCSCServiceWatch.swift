import Glibc

/// Waits for pcscd to come back while it is unreachable: with inotify on the directory of its socket, so a
/// pcscd that starts again is tried the moment it creates its socket, not at the next of the monitor's
/// retries (which stay, as the fallback, for a directory that is not there or cannot be watched).
///
/// `arm()` comes before each attempt to reach pcscd, so that a socket created during the attempt is still
/// seen by the `wait` after it; what happened before `arm()` does not count. The inotify descriptor is
/// opened at the first `arm()` and closed by `close()` (or when the watch goes), so that none stays open
/// while pcscd runs.
final class PCSCServiceWatch {
    /// The socket libpcsclite connects to: `PCSCLITE_CSOCK_NAME`, else pcsc-lite's default.
    static var socketPath: String {
        if let p = getenv("PCSCLITE_CSOCK_NAME"), p.pointee != 0 { return String(cString: p) }
        return "/run/pcscd/pcscd.comm"
    }

    let directory: String
    let name: String
    private var inotify: Int32 = -1
    private var watching = false

    init(socketPath: String = PCSCServiceWatch.socketPath) {
        let slash = socketPath.lastIndex(of: "/")
        directory = slash.map { $0 == socketPath.startIndex ? "/" : String(socketPath[..<$0]) } ?? "."
        name = slash.map { String(socketPath[socketPath.index(after: $0)...]) } ?? socketPath
    }

    deinit { close() }

    /// Forgets what happened so far and watches the directory (again, when it was not there before).
    func arm() {
        if inotify < 0 {
            inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            watching = false
        }
        guard inotify >= 0 else { return }
        _ = drain()
        if !watching {
            let mask = UInt32(IN_CREATE | IN_MOVED_TO)
            watching = inotify_add_watch(inotify, directory, mask) >= 0
        }
    }

    /// Waits up to `seconds` for the socket to be created; true when it was. `wake` (a descriptor that becomes
    /// readable) ends the wait early, returning false.
    func wait(seconds: Double, wake: Int32) -> Bool {
        let deadline = ThreadCondition.monotonicNow() + seconds
        while true {
            let left = max(0, Int32((deadline - ThreadCondition.monotonicNow()) * 1000))
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            if watching { fds.append(pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)) }
            let n = poll(&fds, nfds_t(fds.count), left)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 || fds[0].revents != 0 { return false }
            if fds.count > 1 && fds[1].revents != 0 && drain() { return true }
        }
    }

    /// Closes the inotify descriptor (the next `arm()` opens one again).
    func close() {
        if inotify >= 0 { Glibc.close(inotify) }
        inotify = -1
        watching = false
    }

    /// Reads the pending events; true when one says the socket was created. When the directory itself went,
    /// the watch went with it, and the next `arm()` adds it again.
    private func drain() -> Bool {
        var created = false
        InotifyEvents.readPending(inotify) { eventName, mask in
            if eventName == name { created = true }
            if mask & UInt32(IN_IGNORED) != 0 { watching = false }
            if mask & UInt32(IN_Q_OVERFLOW) != 0 { created = true }
        }
        return created
    }
}
