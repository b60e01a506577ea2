/// The parts of the Linux FUSE kernel protocol (linux/fuse.h, version 7) that serving one regular file
/// needs: requests are a 40-byte header and an opcode's argument structure, replies a 16-byte header and
/// the answer. All fields are little-endian (the kernel's byte order on the machines ykterm runs on).
public enum FUSE {
    public static let kernelMajor: UInt32 = 7
    public static let kernelMinor: UInt32 = 38

    public enum Opcode: UInt32, Sendable {
        case lookup = 1, forget = 2, getattr = 3, setattr = 4, open = 14, read = 15, write = 16
        case statfs = 17, release = 18, fsync = 20, flush = 25, initialize = 26, access = 34
        case interrupt = 36, destroy = 38, ioctl = 39, poll = 40, batchForget = 42, lseek = 46
    }

    /// FOPEN_* flags of an open reply.
    public static let openDirectIO: UInt32 = 1 << 0
    public static let openNonSeekable: UInt32 = 1 << 2
    public static let openStream: UInt32 = 1 << 4
    /// FUSE_POLL_SCHEDULE_NOTIFY in a poll request.
    public static let pollScheduleNotify: UInt32 = 1 << 0
    /// FUSE_NOTIFY_POLL, the code (in the error field) of a poll wake-up notification.
    public static let notifyPoll: Int32 = 1

    public static let inHeaderSize = 40
    public static let outHeaderSize = 16

    /// A request's header and the bytes after it.
    public struct Request: Equatable, Sendable {
        public var opcode: UInt32
        public var unique: UInt64
        public var nodeID: UInt64
        public var uid: UInt32
        public var gid: UInt32
        public var pid: UInt32
        public var body: [UInt8]

        public init(
            opcode: UInt32, unique: UInt64, nodeID: UInt64 = 1, uid: UInt32 = 0, gid: UInt32 = 0,
            pid: UInt32 = 0, body: [UInt8] = []
        ) {
            self.opcode = opcode
            self.unique = unique
            self.nodeID = nodeID
            self.uid = uid
            self.gid = gid
            self.pid = pid
            self.body = body
        }

        /// Parses one request as read from /dev/fuse (one read is always one whole request).
        public init?(parsing bytes: [UInt8]) {
            guard bytes.count >= FUSE.inHeaderSize else { return nil }
            let length = Int(LE.u32(bytes, 0))
            guard length >= FUSE.inHeaderSize, length <= bytes.count else { return nil }
            opcode = LE.u32(bytes, 4)
            unique = LE.u64(bytes, 8)
            nodeID = LE.u64(bytes, 16)
            uid = LE.u32(bytes, 24)
            gid = LE.u32(bytes, 28)
            pid = LE.u32(bytes, 32)
            body = Array(bytes[FUSE.inHeaderSize..<length])
        }

        /// The request as the kernel sends it (for tests).
        public var bytes: [UInt8] {
            var out = [UInt8]()
            LE.put32(&out, UInt32(FUSE.inHeaderSize + body.count))
            LE.put32(&out, opcode)
            LE.put64(&out, unique)
            LE.put64(&out, nodeID)
            LE.put32(&out, uid)
            LE.put32(&out, gid)
            LE.put32(&out, pid)
            LE.put32(&out, 0)
            return out + body
        }
    }

    /// A reply: `error` is 0 or a negated errno; the payload only goes with 0.
    public static func reply(unique: UInt64, error: Int32 = 0, payload: [UInt8] = []) -> [UInt8] {
        let body = error == 0 ? payload : []
        var out = [UInt8]()
        LE.put32(&out, UInt32(outHeaderSize + body.count))
        LE.put32(&out, UInt32(bitPattern: error))
        LE.put64(&out, unique)
        return out + body
    }

    /// An unsolicited poll wake-up for the poll handle `kh`.
    public static func pollWakeup(handle kh: UInt64) -> [UInt8] {
        var out = [UInt8]()
        LE.put32(&out, UInt32(outHeaderSize + 8))
        LE.put32(&out, UInt32(bitPattern: notifyPoll))
        LE.put64(&out, 0)
        LE.put64(&out, kh)
        return out
    }

    // MARK: Arguments

    public struct InitIn: Equatable, Sendable {
        public var major: UInt32, minor: UInt32, maxReadahead: UInt32, flags: UInt32
        public init?(_ b: [UInt8]) {
            guard b.count >= 16 else { return nil }
            major = LE.u32(b, 0); minor = LE.u32(b, 4); maxReadahead = LE.u32(b, 8); flags = LE.u32(b, 12)
        }
    }

    /// fuse_init_out (64 bytes): no optional features asked for.
    public static func initOut(minor: UInt32, maxReadahead: UInt32, maxWrite: UInt32 = 65536) -> [UInt8] {
        var out = [UInt8]()
        LE.put32(&out, kernelMajor)
        LE.put32(&out, minor)
        LE.put32(&out, maxReadahead)
        LE.put32(&out, 0)  // flags
        LE.put16(&out, 16)  // max_background
        LE.put16(&out, 12)  // congestion_threshold
        LE.put32(&out, maxWrite)
        LE.put32(&out, 1)  // time_gran
        LE.put16(&out, 0)  // max_pages
        LE.put16(&out, 0)  // map_alignment
        LE.put32(&out, 0)  // flags2
        out += [UInt8](repeating: 0, count: 28)
        return out
    }

    /// fuse_attr_out for the served file: a regular file of size 0 (it must stay regular: a device
    /// node would send open() to a kernel driver).
    public static func attrOut(mode: UInt32, uid: UInt32 = 0, gid: UInt32 = 0, time: UInt64 = 0) -> [UInt8] {
        var out = [UInt8]()
        LE.put64(&out, 0)  // attr_valid (s): ask again every time
        LE.put32(&out, 0)  // attr_valid_nsec
        LE.put32(&out, 0)  // dummy
        LE.put64(&out, 1)  // ino
        LE.put64(&out, 0)  // size
        LE.put64(&out, 0)  // blocks
        LE.put64(&out, time); LE.put64(&out, time); LE.put64(&out, time)  // atime mtime ctime
        LE.put32(&out, 0); LE.put32(&out, 0); LE.put32(&out, 0)  // their nanoseconds
        LE.put32(&out, 0o100000 | (mode & 0o7777))
        LE.put32(&out, 1)  // nlink
        LE.put32(&out, uid)
        LE.put32(&out, gid)
        LE.put32(&out, 0)  // rdev
        LE.put32(&out, 4096)  // blksize
        LE.put32(&out, 0)  // flags
        return out
    }

    public static func openOut(handle: UInt64, flags: UInt32) -> [UInt8] {
        var out = [UInt8]()
        LE.put64(&out, handle)
        LE.put32(&out, flags)
        LE.put32(&out, 0)
        return out
    }

    public struct OpenIn: Equatable, Sendable {
        public var flags: UInt32
        public init?(_ b: [UInt8]) {
            guard b.count >= 4 else { return nil }
            flags = LE.u32(b, 0)
        }
    }

    /// fuse_read_in: the file handle, the size asked for, and the file's flags (O_NONBLOCK).
    public struct ReadIn: Equatable, Sendable {
        public var handle: UInt64, size: UInt32, flags: UInt32
        public init?(_ b: [UInt8]) {
            guard b.count >= 40 else { return nil }
            handle = LE.u64(b, 0); size = LE.u32(b, 16); flags = LE.u32(b, 32)
        }
    }

    /// fuse_write_in and the data after it.
    public struct WriteIn: Equatable, Sendable {
        public var handle: UInt64, data: [UInt8]
        public init?(_ b: [UInt8]) {
            guard b.count >= 40 else { return nil }
            handle = LE.u64(b, 0)
            let size = Int(LE.u32(b, 16))
            guard b.count >= 40 + size else { return nil }
            data = Array(b[40..<(40 + size)])
        }
    }

    public static func writeOut(size: UInt32) -> [UInt8] {
        var out = [UInt8]()
        LE.put32(&out, size)
        LE.put32(&out, 0)
        return out
    }

    /// The file handle that release, flush and the others carry first.
    public static func handle(of body: [UInt8]) -> UInt64? {
        body.count >= 8 ? LE.u64(body, 0) : nil
    }

    public struct IoctlIn: Equatable, Sendable {
        public var handle: UInt64, flags: UInt32, command: UInt32, arg: UInt64, inSize: UInt32, outSize: UInt32
        public var data: [UInt8]
        public init?(_ b: [UInt8]) {
            guard b.count >= 32 else { return nil }
            handle = LE.u64(b, 0); flags = LE.u32(b, 8); command = LE.u32(b, 12); arg = LE.u64(b, 16)
            inSize = LE.u32(b, 24); outSize = LE.u32(b, 28)
            data = Array(b[32...].prefix(Int(inSize)))
        }
    }

    /// fuse_ioctl_out and the output data: exactly as long as `data` (the kernel copies what it gets).
    public static func ioctlOut(result: Int32, data: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        LE.put32(&out, UInt32(bitPattern: result))
        LE.put32(&out, 0); LE.put32(&out, 0); LE.put32(&out, 0)
        return out + data
    }

    public struct PollIn: Equatable, Sendable {
        public var handle: UInt64, kh: UInt64, flags: UInt32, events: UInt32
        public init?(_ b: [UInt8]) {
            guard b.count >= 24 else { return nil }
            handle = LE.u64(b, 0); kh = LE.u64(b, 8); flags = LE.u32(b, 16); events = LE.u32(b, 20)
        }
    }

    public static func pollOut(revents: UInt32) -> [UInt8] {
        var out = [UInt8]()
        LE.put32(&out, revents)
        LE.put32(&out, 0)
        return out
    }

    /// The unique ID of the request a FUSE_INTERRUPT is about.
    public static func interruptedUnique(_ body: [UInt8]) -> UInt64? {
        body.count >= 8 ? LE.u64(body, 0) : nil
    }
}

/// Linux ioctl command numbers: direction (2 bits), size (14), type (8), number (8).
public enum IoctlNumber {
    public static let none: UInt32 = 0, write: UInt32 = 1, read: UInt32 = 2

    public static func make(_ dir: UInt32, _ type: UInt8, _ nr: UInt8, _ size: Int) -> UInt32 {
        dir << 30 | UInt32(size & 0x3FFF) << 16 | UInt32(type) << 8 | UInt32(nr)
    }

    public static func direction(_ cmd: UInt32) -> UInt32 { cmd >> 30 }
    public static func size(_ cmd: UInt32) -> Int { Int(cmd >> 16 & 0x3FFF) }
    public static func type(_ cmd: UInt32) -> UInt8 { UInt8(cmd >> 8 & 0xFF) }
    public static func number(_ cmd: UInt32) -> UInt8 { UInt8(cmd & 0xFF) }
}

/// Little-endian field access.
enum LE {
    static func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func u32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
    static func u64(_ b: [UInt8], _ i: Int) -> UInt64 { UInt64(u32(b, i)) | UInt64(u32(b, i + 4)) << 32 }
    static func put16(_ b: inout [UInt8], _ v: UInt16) { b += [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func put32(_ b: inout [UInt8], _ v: UInt32) {
        for s in stride(from: 0, to: 32, by: 8) { b.append(UInt8(v >> UInt32(s) & 0xFF)) }
    }
    static func put64(_ b: inout [UInt8], _ v: UInt64) {
        for s in stride(from: 0, to: 64, by: 8) { b.append(UInt8(v >> UInt64(s) & 0xFF)) }
    }
}
