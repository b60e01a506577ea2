import CPCSCLite
import Glibc
import Synchronization

/// The version of the message protocol between pcsc-lite's client library and pcscd (not pcsc-lite's own
/// version): the client sends its version first (CMD_VERSION) and pcscd answers with its own, refusing a client it
/// cannot serve. A pcscd socket forwarded from another machine (`ykterm remote`) works only when the two agree.
public struct PCSCProtocolVersion: Sendable, Hashable, CustomStringConvertible {
    public var major: Int32
    public var minor: Int32

    public init(major: Int32, minor: Int32) {
        self.major = major
        self.minor = minor
    }

    public var description: String { "\(major).\(minor)" }

    /// The socket this process's pcsc-lite client connects to: `PCSCLITE_CSOCK_NAME`, else pcsc-lite's default.
    public static var defaultSocket: String { PCSCServiceWatch.socketPath }

    /// pcsc-lite's command number for the version exchange, and the size of its body (major, minor, status:
    /// three 32-bit numbers in the machine's byte order, after a header of the body's size and the command).
    static let command: UInt32 = 0x11
    static let bodySize = 12

    /// What pcscd at `socket` says to a client of `client`'s version: its own version, and whether it serves
    /// that client. A pcscd built with backward compatibility serves older clients of its major version; a
    /// newer pcsc-lite client also copes with an older pcscd of the same major version (from minor 4 on, which
    /// is as far back as that goes), so that counts as served too.
    public static func ask(socket path: String, as client: PCSCProtocolVersion) throws(PCSCProtocolError) -> (
        server: PCSCProtocolVersion, serves: Bool
    ) {
        let fd = try connectUnix(path)
        defer { Glibc.close(fd) }
        var request = [UInt8]()
        for n in [UInt32(bodySize), command, UInt32(bitPattern: client.major), UInt32(bitPattern: client.minor), 0] {
            withUnsafeBytes(of: n) { request.append(contentsOf: $0) }
        }
        try writeAll(fd, request)
        let answer = try readExactly(fd, bodySize)
        let server = PCSCProtocolVersion(major: int32(answer, 0), minor: int32(answer, 4))
        let status = UInt32(bitPattern: int32(answer, 8))
        if status == PCSCStatus.success { return (server, true) }
        let newerClient = server.major == client.major && server.minor >= 4 && client.minor > server.minor
        return (server, newerClient)
    }

    /// The version this process's pcsc-lite client library speaks: it is asked to connect to a stand-in socket
    /// (through `PCSCLITE_CSOCK_NAME`, which the library reads once, so this must come before any other PC/SC call
    /// of the process), which reads the version it sends and refuses it.
    public static func ofClientLibrary(directory: String) throws(PCSCProtocolError) -> PCSCProtocolVersion {
        let path = directory + "/pcscd.comm"
        let listener = try listenUnix(path)
        defer {
            Glibc.close(listener)
            unlink(path)
        }
        setenv("PCSCLITE_CSOCK_NAME", path, 1)
        let seen = Mutex<PCSCProtocolVersion?>(nil)
        // The stand-in's thread writes a byte here when it is done.
        var finished: [Int32] = [-1, -1]
        guard pipe(&finished) == 0 else { throw .system("pipe", errno) }
        let (doneRead, doneWrite) = (finished[0], finished[1])
        _ = fcntl(doneRead, F_SETFD, FD_CLOEXEC)
        _ = fcntl(doneWrite, F_SETFD, FD_CLOEXEC)
        defer { Glibc.close(doneRead) }
        let started = SystemThread.start(name: "ykterm.pcscprobe") {
            defer {
                var byte: UInt8 = 1
                _ = write(doneWrite, &byte, 1)
                Glibc.close(doneWrite)
            }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            defer { Glibc.close(client) }
            guard let header = try? readExactly(client, 8), UInt32(bitPattern: int32(header, 4)) == command,
                let body = try? readExactly(client, bodySize)
            else { return }
            seen.withLock { $0 = PCSCProtocolVersion(major: int32(body, 0), minor: int32(body, 4)) }
            // A pcscd that speaks no version: refuses every client.
            var refusal = [UInt8]()
            for n in [UInt32(0), 0, PCSCStatus.serviceStopped] {
                withUnsafeBytes(of: n) { refusal.append(contentsOf: $0) }
            }
            try? writeAll(client, refusal)
        }
        guard started else {
            Glibc.close(doneWrite)
            throw .system("pthread_create", EAGAIN)
        }
        var context = SCARDCONTEXT()
        if SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &context) == SCARD_S_SUCCESS {
            SCardReleaseContext(context)
        }
        // The stand-in has answered, or the library never came: stop waiting for it, and for its thread.
        shutdown(listener, Int32(SHUT_RDWR))
        var byte: UInt8 = 0
        while read(doneRead, &byte, 1) < 0 && errno == EINTR {}
        guard let version = seen.withLock({ $0 }) else { throw .noVersionSent }
        return version
    }

    private static func int32(_ bytes: [UInt8], _ offset: Int) -> Int32 {
        bytes[offset..<offset + 4].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
    }

    private static func unixAddress(_ path: String) throws(PCSCProtocolError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw .pathTooLong(path) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    private static func connectUnix(_ path: String) throws(PCSCProtocolError) -> Int32 {
        var address = try unixAddress(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard r == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .unreachable(path, code)
        }
        // A pcscd that never answers must not hold the command: five seconds for the exchange.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    private static func listenUnix(_ path: String) throws(PCSCProtocolError) -> Int32 {
        var address = try unixAddress(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .system("bind", code)
        }
        return fd
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(PCSCProtocolError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .system("send", errno)
            }
            sent += n
        }
    }

    private static func readExactly(_ fd: Int32, _ count: Int) throws(PCSCProtocolError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw .system("recv", errno) }
            if n == 0 { throw .closed }
            got += n
        }
        return bytes
    }
}

/// Why the protocol version could not be learnt.
public enum PCSCProtocolError: Error, Equatable, Sendable {
    /// Nothing listens at the socket (errno).
    case unreachable(String, Int32)
    /// pcscd closed the connection before it answered (polkit refusing the session, for one).
    case closed
    /// The client library did not send its version to the stand-in socket.
    case noVersionSent
    case pathTooLong(String)
    case system(String, Int32)
}
