import Glibc
import KeyKit
import Synchronization

/// What one open file of a served hidraw node talks to: input and output reports, feature reports.
public protocol HIDNodeHandle: AnyObject, Sendable {
    /// An output report, without the report ID byte.
    func write(_ report: [UInt8]) throws
    /// The next input report; nil when none came within the time; throws once closed.
    func read(timeoutMilliseconds: Int) throws -> [UInt8]?
    /// Whether `read` can ever give anything (a keyboard interface that never types has no pump).
    var hasInput: Bool { get }
    func setFeature(_ report: [UInt8]) throws
    func getFeature() throws -> [UInt8]
    func close()
}

/// What a hidraw node tells about itself through its ioctls.
public struct HIDNodeIdentity: Sendable, Equatable {
    public var vendor: UInt16
    public var product: UInt16
    public var name: String
    public var phys: String
    public var reportDescriptor: [UInt8]

    public init(vendor: UInt16, product: UInt16, name: String, phys: String, reportDescriptor: [UInt8]) {
        self.vendor = vendor
        self.product = product
        self.name = name
        self.phys = phys
        self.reportDescriptor = reportDescriptor
    }
}

/// The hidraw ioctls, answered as the kernel's hidraw driver answers them. A FUSE file's ioctl buffer is
/// as large as the command number says, but the answer is only as long as its data.
public enum HIDRawIoctl {
    public static let type = UInt8(ascii: "H")
    public static let getDescriptorSize = IoctlNumber.make(IoctlNumber.read, type, 0x01, 4)
    public static let getDescriptor = IoctlNumber.make(IoctlNumber.read, type, 0x02, 4 + 4096)
    public static let getRawInfo = IoctlNumber.make(IoctlNumber.read, type, 0x03, 8)
    public static func getRawName(_ n: Int) -> UInt32 { IoctlNumber.make(IoctlNumber.read, type, 0x04, n) }
    public static func getRawPhys(_ n: Int) -> UInt32 { IoctlNumber.make(IoctlNumber.read, type, 0x05, n) }
    public static func setFeature(_ n: Int) -> UInt32 {
        IoctlNumber.make(IoctlNumber.read | IoctlNumber.write, type, 0x06, n)
    }
    public static func getFeature(_ n: Int) -> UInt32 {
        IoctlNumber.make(IoctlNumber.read | IoctlNumber.write, type, 0x07, n)
    }
    public static func getRawUniq(_ n: Int) -> UInt32 { IoctlNumber.make(IoctlNumber.read, type, 0x08, n) }

    public enum Answer: Equatable, Sendable {
        case data(result: Int32, [UInt8])
        case error(Int32)
    }

    /// The answer to the ioctls that need no device; nil for feature reports (they go to the device).
    public static func answer(_ cmd: UInt32, identity: HIDNodeIdentity) -> Answer? {
        guard IoctlNumber.type(cmd) == type else { return .error(ENOTTY) }
        let size = IoctlNumber.size(cmd)
        func string(_ s: String) -> Answer {
            let bytes = Array((Array(s.utf8) + [0]).prefix(size))
            return .data(result: Int32(bytes.count), bytes)
        }
        switch IoctlNumber.number(cmd) {
        case 0x01 where cmd == getDescriptorSize:
            var out = [UInt8]()
            LE.put32(&out, UInt32(identity.reportDescriptor.count))
            return .data(result: 0, out)
        case 0x02 where cmd == getDescriptor:
            var out = [UInt8]()
            LE.put32(&out, UInt32(identity.reportDescriptor.count))
            return .data(result: 0, out + identity.reportDescriptor)
        case 0x03 where cmd == getRawInfo:
            var out = [UInt8]()
            LE.put32(&out, 3)  // BUS_USB
            LE.put16(&out, identity.vendor)
            LE.put16(&out, identity.product)
            return .data(result: 0, out)
        case 0x04: return string(identity.name)
        case 0x05: return string(identity.phys)
        case 0x08: return string("")
        case 0x06, 0x07:
            guard IoctlNumber.direction(cmd) == IoctlNumber.read | IoctlNumber.write, size > 0 else {
                return .error(EINVAL)
            }
            return nil
        default:
            return .error(EINVAL)
        }
    }
}

/// One hidraw node served through FUSE: a regular file mounted over an empty file at `path`, with
/// hidraw's semantics (see DESIGN.md, "Facts checked on these machines").
public final class HIDNode: Sendable {
    public let path: String
    public let identity: HIDNodeIdentity
    private let openHandle: @Sendable () -> (any HIDNodeHandle)?
    private let log: @Sendable (String) -> Void
    /// The node's permission bits (owner root): 0666 as with ykterm's udev rule for everyone, 0600 as a hidraw
    /// node without any rule. The kernel checks them (`default_permissions`) before an open reaches the server.
    public let mode: UInt32

    private struct HeldRead: Sendable {
        var unique: UInt64
        var size: Int
    }

    private final class OpenFile: Sendable {
        let handle: any HIDNodeHandle
        struct State: Sendable {
            var reports: [[UInt8]] = []
            var held: [HeldRead] = []
            var pollHandle: UInt64?
        }
        let state = Mutex(State())
        init(handle: any HIDNodeHandle) { self.handle = handle }
    }

    private struct State: Sendable {
        var files = [UInt64: OpenFile]()
        var nextHandle: UInt64 = 1
        var gone = false
        var minor: UInt32 = FUSE.kernelMinor
    }

    private let state = Mutex(State())
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    /// Mounts the node at `path` (an empty file is created there when missing) and starts serving it.
    public init(
        path: String, identity: HIDNodeIdentity, mode: UInt32 = 0o666, log: @escaping @Sendable (String) -> Void,
        openHandle: @escaping @Sendable () -> (any HIDNodeHandle)?
    ) throws {
        self.path = path
        self.mode = mode & 0o777
        self.identity = identity
        self.openHandle = openHandle
        self.log = log
        let fileFD = Glibc.open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fileFD >= 0 else { throw USBError.system("create \(path)", errno) }
        Glibc.close(fileFD)
        fd = Glibc.open("/dev/fuse", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            unlink(path)
            throw USBError.system("open /dev/fuse", e)
        }
        let options = "fd=\(fd),rootmode=100000,user_id=0,group_id=0,allow_other,default_permissions"
        guard mount("ykterm-hid", path, "fuse", UInt(MS_NOSUID) | UInt(MS_NODEV), options) == 0 else {
            let e = errno
            Glibc.close(fd)
            unlink(path)
            throw USBError.system("mount FUSE on \(path)", e)
        }
        SystemThread.start(name: "hid-fuse") { [self] in self.serve() }
    }

    /// The key is pulled out: held reads fail with ENODEV, every handle closes, the mount goes and then
    /// the file (so a watcher of /dev sees it deleted).
    public func remove() {
        disconnect()
        if umount2(path, Int32(MNT_DETACH)) != 0 { log("unmount \(path): \(String(cString: strerror(errno)))") }
        unlink(path)
        // The connection lives on while programs still hold the node open (each call then fails with
        // ENODEV, and close succeeds, as on a hidraw node whose device is gone); when the last one closes,
        // the kernel ends it and the serving thread closes its file descriptor.
    }

    /// Whether the FUSE connection has ended.
    public var isFinished: Bool { finished.load(ordering: .sequentiallyConsistent) }

    /// The device is gone: held reads fail with ENODEV, polls wake, every handle closes; the node stays
    /// until `remove()`.
    public func disconnect() {
        let files = state.withLock { s -> [OpenFile] in
            s.gone = true
            return Array(s.files.values)
        }
        for file in files {
            let (held, kh) = file.state.withLock { f -> ([HeldRead], UInt64?) in
                let h = f.held
                f.held = []
                return (h, f.pollHandle)
            }
            for r in held { send(FUSE.reply(unique: r.unique, error: -ENODEV)) }
            if let kh { send(FUSE.pollWakeup(handle: kh)) }
            file.handle.close()
        }
    }

    // MARK: Serving

    private func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) }
    }

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 65536 + 8192)
        while !stopped.load(ordering: .sequentiallyConsistent) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, 100)
            if ready <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN || errno == ENOENT { continue }
                break  // ENODEV: unmounted
            }
            guard let request = FUSE.Request(parsing: Array(buffer[..<n])) else { continue }
            handle(request)
        }
        Glibc.close(fd)
        finished.store(true, ordering: .sequentiallyConsistent)
    }

    private func handle(_ r: FUSE.Request) {
        let gone = state.withLock { $0.gone }
        guard let op = FUSE.Opcode(rawValue: r.opcode) else {
            send(FUSE.reply(unique: r.unique, error: -ENOSYS))
            return
        }
        switch op {
        case .initialize:
            guard let i = FUSE.InitIn(r.body) else { return send(FUSE.reply(unique: r.unique, error: -EINVAL)) }
            let minor = min(i.minor, FUSE.kernelMinor)
            state.withLock { $0.minor = minor }
            send(FUSE.reply(unique: r.unique, payload: FUSE.initOut(minor: minor, maxReadahead: i.maxReadahead)))
        case .getattr, .setattr:
            // SETATTR: ykman opens with "wb" (O_TRUNC); the size stays 0.
            send(FUSE.reply(unique: r.unique, payload: FUSE.attrOut(mode: mode)))
        case .access, .flush, .fsync:
            send(FUSE.reply(unique: r.unique))
        case .open:
            guard !gone, let handle = openHandle() else { return send(FUSE.reply(unique: r.unique, error: -ENODEV)) }
            let file = OpenFile(handle: handle)
            let id = state.withLock { s -> UInt64 in
                let id = s.nextHandle
                s.nextHandle += 1
                s.files[id] = file
                return id
            }
            if handle.hasInput {
                SystemThread.start(name: "hid-pump") { [self] in self.pump(file) }
            }
            send(
                FUSE.reply(
                    unique: r.unique,
                    payload: FUSE.openOut(
                        handle: id, flags: FUSE.openDirectIO | FUSE.openStream | FUSE.openNonSeekable)))
        case .release:
            if let id = FUSE.handle(of: r.body), let file = state.withLock({ $0.files.removeValue(forKey: id) }) {
                let held = file.state.withLock { f -> [HeldRead] in
                    let h = f.held
                    f.held = []
                    return h
                }
                for h in held { send(FUSE.reply(unique: h.unique, error: -EBADF)) }
                file.handle.close()
            }
            send(FUSE.reply(unique: r.unique))
        case .read:
            guard let rd = FUSE.ReadIn(r.body), let file = file(rd.handle) else {
                return send(FUSE.reply(unique: r.unique, error: -EBADF))
            }
            if gone { return send(FUSE.reply(unique: r.unique, error: -ENODEV)) }
            let report = file.state.withLock { f -> [UInt8]? in
                if !f.reports.isEmpty { return f.reports.removeFirst() }
                if rd.flags & UInt32(O_NONBLOCK) == 0 { f.held.append(HeldRead(unique: r.unique, size: Int(rd.size))) }
                return nil
            }
            if let report {
                send(FUSE.reply(unique: r.unique, payload: Array(report.prefix(Int(rd.size)))))
            } else if rd.flags & UInt32(O_NONBLOCK) != 0 {
                send(FUSE.reply(unique: r.unique, error: -EAGAIN))
            }
        case .write:
            guard let w = FUSE.WriteIn(r.body), let file = file(w.handle) else {
                return send(FUSE.reply(unique: r.unique, error: -EBADF))
            }
            if gone { return send(FUSE.reply(unique: r.unique, error: -ENODEV)) }
            guard !w.data.isEmpty else { return send(FUSE.reply(unique: r.unique, error: -EINVAL)) }
            // The first byte is the report ID (0: the device numbers no reports).
            do {
                try file.handle.write(Array(w.data.dropFirst()))
                send(FUSE.reply(unique: r.unique, payload: FUSE.writeOut(size: UInt32(w.data.count))))
            } catch {
                send(FUSE.reply(unique: r.unique, error: -EIO))
            }
        case .ioctl:
            guard let io = FUSE.IoctlIn(r.body), let file = file(io.handle) else {
                return send(FUSE.reply(unique: r.unique, error: -EBADF))
            }
            if gone { return send(FUSE.reply(unique: r.unique, error: -ENODEV)) }
            ioctl(io, file: file, unique: r.unique)
        case .poll:
            guard let pi = FUSE.PollIn(r.body), let file = file(pi.handle) else {
                return send(FUSE.reply(unique: r.unique, error: -EBADF))
            }
            let hasData = file.state.withLock { f -> Bool in
                if pi.flags & FUSE.pollScheduleNotify != 0 { f.pollHandle = pi.kh }
                return !f.reports.isEmpty
            }
            var revents = UInt32(POLLOUT | POLLWRNORM)
            if hasData { revents |= UInt32(POLLIN | POLLRDNORM) }
            if gone { revents = UInt32(POLLERR | POLLHUP) }
            send(FUSE.reply(unique: r.unique, payload: FUSE.pollOut(revents: revents)))
        case .interrupt:
            guard let target = FUSE.interruptedUnique(r.body) else { return }
            let files = state.withLock { Array($0.files.values) }
            for file in files {
                let found = file.state.withLock { f -> Bool in
                    guard let i = f.held.firstIndex(where: { $0.unique == target }) else { return false }
                    f.held.remove(at: i)
                    return true
                }
                if found {
                    send(FUSE.reply(unique: target, error: -EINTR))
                    break
                }
            }
        case .destroy:
            send(FUSE.reply(unique: r.unique))
            stopped.store(true, ordering: .sequentiallyConsistent)
        case .forget, .batchForget:
            break  // no reply
        case .lookup:
            send(FUSE.reply(unique: r.unique, error: -ENOENT))
        case .lseek:
            send(FUSE.reply(unique: r.unique, error: -ESPIPE))
        case .statfs:
            send(FUSE.reply(unique: r.unique, error: -ENOSYS))
        }
    }

    private func file(_ id: UInt64) -> OpenFile? {
        state.withLock { $0.files[id] }
    }

    private func ioctl(_ io: FUSE.IoctlIn, file: OpenFile, unique: UInt64) {
        if let answer = HIDRawIoctl.answer(io.command, identity: identity) {
            switch answer {
            case .data(let result, let data):
                send(FUSE.reply(unique: unique, payload: FUSE.ioctlOut(result: result, data: data)))
            case .error(let e):
                send(FUSE.reply(unique: unique, error: -e))
            }
            return
        }
        // Feature reports may wait for the device: answer from another thread.
        let size = IoctlNumber.size(io.command)
        let isSet = IoctlNumber.number(io.command) == 0x06
        let data = io.data
        SystemThread.start(name: "hid-feature") { [self] in
            do {
                if isSet {
                    guard data.count >= 2 else { throw USBError.failed("short feature report") }
                    try file.handle.setFeature(Array(data.dropFirst()))
                    send(FUSE.reply(unique: unique, payload: FUSE.ioctlOut(result: Int32(data.count), data: [])))
                } else {
                    let report = try file.handle.getFeature()
                    let out = Array(([data.first ?? 0] + report).prefix(size))
                    send(FUSE.reply(unique: unique, payload: FUSE.ioctlOut(result: Int32(out.count), data: out)))
                }
            } catch {
                send(FUSE.reply(unique: unique, error: -EPIPE))
            }
        }
    }

    /// Moves one open file's input reports from its device handle to its queue (or a held read).
    private func pump(_ file: OpenFile) {
        while true {
            let report: [UInt8]?
            do {
                report = try file.handle.read(timeoutMilliseconds: 500)
            } catch {
                return
            }
            guard let report else { continue }
            let (held, kh) = file.state.withLock { f -> (HeldRead?, UInt64?) in
                if !f.held.isEmpty { return (f.held.removeFirst(), nil) }
                f.reports.append(report)
                if f.reports.count > 256 { f.reports.removeFirst() }
                let kh = f.pollHandle
                f.pollHandle = nil
                return (nil, kh)
            }
            if let held {
                send(FUSE.reply(unique: held.unique, payload: Array(report.prefix(held.size))))
            } else if let kh {
                send(FUSE.pollWakeup(handle: kh))
            }
        }
    }
}

public enum USBError: Error, CustomStringConvertible {
    case system(String, Int32)
    case failed(String)

    public var description: String {
        switch self {
        case .system(let what, let e): return "\(what): \(String(cString: strerror(e)))"
        case .failed(let s): return s
        }
    }
}
