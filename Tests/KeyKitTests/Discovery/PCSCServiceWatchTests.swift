import Glibc
import Synchronization
import Testing
@testable import KeyKit

/// The key monitor's wait for pcscd to come back (found by the soak: the TUI saw a restarted pcscd's keys only
/// at its next retry, up to 2 s later): it ends when pcscd's socket is created.
@Suite("Waiting for pcscd's socket")
struct PCSCServiceWatchTests {
    static func directory() -> String {
        var template = Array((String(cString: getenv("TMPDIR") ?? strdup("/tmp")) + "/pcscd-watch-XXXXXX").utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    /// A Unix socket bound at `path`, as pcscd makes its socket; returns its descriptor, or -1 when it could not
    /// be bound.
    static func bindSocket(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            close(fd)
            return -1
        }
        return fd
    }

    /// What the other thread put in `box` (it may still be returning from bind when the wait ends).
    static func taken(_ box: borrowing Mutex<Int32?>) -> Int32 {
        for _ in 0..<200 {
            if let fd = box.withLock({ $0 }) { return fd }
            SystemThread.sleep(0.01)
        }
        return -1
    }

    /// Runs `body` on another thread after `delay` seconds.
    static func later(_ delay: Double, _ body: @escaping @Sendable () -> Void) {
        SystemThread.start(name: "test-later") {
            SystemThread.sleep(delay)
            body()
        }
    }

    @Test func theSocketBeingCreatedEndsTheWaitAtOnce() {
        let dir = Self.directory()
        let path = dir + "/pcscd.comm"
        defer { unlink(path); rmdir(dir) }
        let watch = PCSCServiceWatch(socketPath: path)
        #expect(watch.directory == dir && watch.name == "pcscd.comm")
        watch.arm()
        let box = Mutex<Int32?>(nil)
        Self.later(0.1) { box.withLock { $0 = Self.bindSocket(path) } }
        let started = ThreadCondition.monotonicNow()
        #expect(watch.wait(seconds: 10, wake: -1))
        let waited = ThreadCondition.monotonicNow() - started
        #expect(waited >= 0.05 && waited < 2, "waited \(waited) s")
        let fd = Self.taken(box)
        #expect(fd >= 0)
        close(fd)
        watch.close()
    }

    @Test func otherFilesDoNotEndTheWaitAndItEndsAtItsTimeout() {
        let dir = Self.directory()
        defer { unlink(dir + "/pcscd.pid"); rmdir(dir) }
        let watch = PCSCServiceWatch(socketPath: dir + "/pcscd.comm")
        watch.arm()
        Self.later(0.05) { close(open(dir + "/pcscd.pid", O_CREAT | O_WRONLY, 0o600)) }
        let started = ThreadCondition.monotonicNow()
        #expect(!watch.wait(seconds: 0.4, wake: -1))
        #expect(ThreadCondition.monotonicNow() - started >= 0.35)
    }

    @Test func aSocketCreatedBeforeArmingDoesNotCount() {
        let dir = Self.directory()
        let path = dir + "/pcscd.comm"
        defer { unlink(path); rmdir(dir) }
        let watch = PCSCServiceWatch(socketPath: path)
        watch.arm()
        let fd = Self.bindSocket(path)
        #expect(fd >= 0)
        defer { close(fd) }
        // The attempt after this arm() would have found that socket: only a new one ends the next wait.
        watch.arm()
        #expect(!watch.wait(seconds: 0.2, wake: -1))
    }

    @Test func theWakeDescriptorEndsTheWait() {
        let dir = Self.directory()
        defer { rmdir(dir) }
        let watch = PCSCServiceWatch(socketPath: dir + "/pcscd.comm")
        watch.arm()
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let writer = fds[1]
        Self.later(0.1) {
            var one: UInt8 = 1
            _ = write(writer, &one, 1)
        }
        let started = ThreadCondition.monotonicNow()
        #expect(!watch.wait(seconds: 10, wake: fds[0]))
        #expect(ThreadCondition.monotonicNow() - started < 2)
    }

    @Test func aDirectoryThatIsNotThereYetIsWatchedOnceItIs() {
        let dir = Self.directory()
        let run = dir + "/pcscd"
        let path = run + "/pcscd.comm"
        defer { unlink(path); rmdir(run); rmdir(dir) }
        let watch = PCSCServiceWatch(socketPath: path)
        // No directory: the wait is the fallback's timeout.
        watch.arm()
        let started = ThreadCondition.monotonicNow()
        #expect(!watch.wait(seconds: 0.2, wake: -1))
        #expect(ThreadCondition.monotonicNow() - started >= 0.15)
        // pcscd made its directory: the next arm() watches it.
        mkdir(run, 0o755)
        watch.arm()
        let box = Mutex<Int32?>(nil)
        Self.later(0.05) { box.withLock { $0 = Self.bindSocket(path) } }
        #expect(watch.wait(seconds: 10, wake: -1))
        let fd = Self.taken(box)
        #expect(fd >= 0)
        close(fd)
    }

    @Test func theMonitorsWakeDescriptorIsReadableOnceCancelled() {
        let state = LockedState()
        let token = state.newToken()
        let fd = state.wakeDescriptor(token)
        #expect(fd >= 0)
        #expect(state.wakeDescriptor(token) == fd)
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&p, 1, 0) == 0)
        state.cancel(token)
        #expect(poll(&p, 1, 1000) == 1)
        state.closeWakeDescriptor(token)
        // Asked for after the cancel, a new one is readable at once.
        let again = state.wakeDescriptor(token)
        var q = pollfd(fd: again, events: Int16(POLLIN), revents: 0)
        #expect(poll(&q, 1, 0) == 1)
        state.closeWakeDescriptor(token)
    }
}
