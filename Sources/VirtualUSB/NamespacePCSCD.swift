import Dispatch
import Glibc
import KeyKit
import Synchronization

/// The namespace's own pcscd, with the one vpcd reader the key's CCID interface is a card in. pcscd names a
/// USB key's reader after its product ("Yubico YubiKey OTP+FIDO+CCID 00 00"), and a YubiKey that restarts with
/// other interfaces is a new reader of another name to it (or none, without CCID); clients such as ykman read
/// the product ID from that name. A reader's name is fixed while pcscd runs (a rescan of its configuration
/// adds no renamed reader), so `show` starts pcscd again with the reader the key now has.
public final class NamespacePCSCD: Sendable {
    /// vpcd's port (the card connects to it).
    public let port: UInt16
    private let directory: String
    private let driver: String
    private let environment: [String]
    private let moreVpcdPorts: [UInt16]

    private struct State: Sendable {
        var pid: pid_t?
        var reader: String?
    }
    private let state = Mutex(State())
    private let starter = ProcessStarter(name: "pcscd-starter")

    /// `directory` is pcscd's reader configuration directory (made here); `driver` the reader driver's path;
    /// `moreVpcdPorts`: vpcd's own two readers at each port and the next, for other keys served beside this one
    /// (they stay whatever this key's reader is).
    public init(port: UInt16, directory: String, driver: String, environment: [String], moreVpcdPorts: [UInt16] = []) {
        self.port = port
        self.directory = directory
        self.driver = driver
        self.environment = environment
        self.moreVpcdPorts = moreVpcdPorts
    }

    /// The reader pcscd has now (nil: none, or pcscd not started).
    public var reader: String? { state.withLock { $0.reader } }

    /// Makes pcscd run with the reader named `reader` (nil: no reader): started the first time, started
    /// again when the name changes; returns once pcscd takes clients.
    public func show(reader: String?) throws {
        let started = try state.withLock { s -> Bool in
            if s.pid != nil && s.reader == reader { return false }
            if let pid = s.pid { USBNamespace.stop(pid) }
            s.pid = nil
            try SysFS.directory(directory)
            unlink(directory + "/vpcd")
            if let reader {
                try USBNamespace.writeReaderConfiguration(
                    directory: directory, name: reader, port: port, driver: driver)
            }
            for more in moreVpcdPorts {
                try USBNamespace.writeReaderConfiguration(
                    directory: directory, name: "Virtual PCD", port: more, driver: try vpcdCopy(for: more),
                    file: "vpcd-\(more)")
            }
            // setpriv --pdeathsig: pcscd ends with this process even when it is killed outright. The kernel sends
            // that signal when the thread that started pcscd ends, not the process: a key restarted by SET MODE or
            // WRITE CONFIG plugs in again on a pool thread that soon exits, which took its pcscd with it (the
            // reader gone a few seconds after the key came back). So pcscd is always started from one thread
            // that lives as long as the process.
            let argv = ["setpriv", "--pdeathsig", "TERM", "pcscd", "--foreground", "-c", directory]
            let environment = environment
            s.pid = try starter.run { try USBNamespace.spawn(argv, environment: environment, quiet: true) }
            s.reader = reader
            return true
        }
        guard started else { return }
        for _ in 0..<200 {
            if (try? PCSCContext()) != nil { return }
            SystemThread.sleep(0.05)
        }
        throw USBError.failed("pcscd did not start within 10 s")
    }

    /// vpcd keeps its readers' connections in globals indexed by slot alone, so one loaded copy serves one reader
    /// configuration: each further reader pair gets a copy of the driver of its own (another file is another
    /// library to the dynamic loader), next to the configuration directory, not in it (pcscd reads every file
    /// there as a configuration).
    private func vpcdCopy(for port: UInt16) throws -> String {
        let copies = directory + "-drivers"
        try SysFS.directory(copies)
        let path = copies + "/libifdvpcd-\(port).so"
        if access(path, R_OK) == 0 { return path }
        let fd = open(USBNamespace.vpcdDriver, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw USBError.system("open \(USBNamespace.vpcdDriver)", errno) }
        defer { close(fd) }
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw USBError.system("read \(USBNamespace.vpcdDriver)", errno) }
            if n == 0 { break }
            data += chunk[..<n]
        }
        try SysFS.bytes(path, data)
        return path
    }

    /// Stops pcscd.
    public func stop() {
        state.withLock { s in
            if let pid = s.pid { USBNamespace.stop(pid) }
            s.pid = nil
            s.reader = nil
        }
    }
}

/// One thread, living as long as the process, that starts processes for every caller (and waits for nothing
/// else): a child that asks for a parent-death signal (`PR_SET_PDEATHSIG`) gets it when the thread that
/// started it ends, so children meant to end with the process must not be started from threads that come and go.
final class ProcessStarter: Sendable {
    private struct Job: Sendable {
        let start: @Sendable () throws -> pid_t
        let done: @Sendable (Result<pid_t, any Error>) -> Void
    }
    /// The jobs waiting, shared with the thread (which holds this, never the starter).
    private final class Queue: Sendable {
        let jobs = Mutex<[Job]>([])
        let waiting = DispatchSemaphore(value: 0)
    }
    private let queue = Queue()

    init(name: String) {
        let queue = self.queue
        // Waits for jobs until the process ends.
        SystemThread.start(name: name) {
            while true {
                queue.waiting.wait()
                guard let job = queue.jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                job.done(Result { try job.start() })
            }
        }
    }

    /// Runs `start` on the starter's thread and returns its result.
    func run(_ start: @escaping @Sendable () throws -> pid_t) throws -> pid_t {
        let result = Mutex<Result<pid_t, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        queue.jobs.withLock {
            $0.append(
                Job(start: start) { r in
                    result.withLock { $0 = r }
                    finished.signal()
                })
        }
        queue.waiting.signal()
        finished.wait()
        return try result.withLock { $0! }.get()
    }
}
