import Glibc
import KeyKit
import Synchronization

/// The control socket: a client sends one line (`plug` or `unplug`) and gets one back (`ok`, or
/// `error: WHY`) once the work is done.
public final class USBControlServer: Sendable {
    public let path: String
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)

    public init(path: String, key: VirtualUSBKey) throws {
        self.path = path
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw USBError.system("socket", errno) }
        guard USBControl.withAddress(path, { bind(fd, $0, $1) }) == 0, listen(fd, 4) == 0 else {
            let e = errno
            close(fd)
            throw USBError.system("listen on \(path)", e)
        }
        chmod(path, 0o600)
        SystemThread.start(name: "usb-control") { [self] in
            while !self.stopped.load(ordering: .sequentiallyConsistent) {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 200) > 0 else { continue }
                let client = accept(fd, nil, nil)
                if client < 0 { continue }
                self.answer(client, key: key)
            }
        }
    }

    private func answer(_ client: Int32, key: VirtualUSBKey) {
        defer { close(client) }
        var line = [UInt8]()
        var byte: UInt8 = 0
        while line.count < 64, recv(client, &byte, 1, 0) == 1, byte != 10 { line.append(byte) }
        let command = String(decoding: line, as: UTF8.self)
        var reply: String
        do {
            switch command {
            case "plug": try key.plug()
            case "unplug": try key.unplug()
            default: throw USBError.failed("unknown command \"\(command)\"")
            }
            reply = "ok\n"
        } catch {
            reply = "error: \(error)\n"
        }
        _ = Array(reply.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    public func stop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        unlink(path)
    }
}

public enum USBControl {
    /// Sends `command` to the server at `path`; returns nil when done, or why not.
    public static func send(_ command: String, path: String) throws -> String? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw USBError.system("socket", errno) }
        defer { close(fd) }
        guard withAddress(path, { connect(fd, $0, $1) }) == 0 else {
            throw USBError.system("connect to \(path)", errno)
        }
        let bytes = Array((command + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            reply += chunk[..<n]
        }
        let text = String(decoding: reply, as: UTF8.self).trimmingSuffix()
        if text == "ok" { return nil }
        if text.hasPrefix("error: ") { return String(text.dropFirst(7)) }
        return text.isEmpty ? "no answer from the virtual key" : text
    }

    static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { errno = ENAMETOOLONG; return -1 }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

private extension String {
    func trimmingSuffix() -> String {
        var s = self
        while s.last == "\n" || s.last == " " { s.removeLast() }
        return s
    }
}
