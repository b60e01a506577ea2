import FoundationEssentials
import Glibc

/// The HID interfaces present now, read from sysfs and checked against /dev.
public enum HIDScan {
    /// Every FIDO interface and YubiKey OTP interface whose node is ready, with its USB device; `settling`
    /// is true when a node is listed in sysfs but not (yet, or any more) usable in /dev — a key being
    /// plugged in or pulled out — so the caller looks again shortly.
    public static func scan() -> (found: [FoundHID], settling: Bool) {
        var found = [FoundHID]()
        var settling = false
        for (info, usb) in HIDSysfs.scan() {
            let h = FoundHID(info: info, usbDevice: usb)
            guard h.isFIDO || h.isYubiKeyOTP else { continue }
            guard nodeReady(info.path) else {
                settling = true
                continue
            }
            found.append(h)
        }
        return (found, settling)
    }

    /// A character device, or a file mounted over the node (a served HID device): not an empty file that
    /// waits for its mount, and not a node already gone.
    static func nodeReady(_ path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0 else { return false }
        if st.st_mode & S_IFMT == S_IFCHR { return true }
        var parent = stat()
        // The directory the node is in (by its last slash: joining the split path's components was the first
        // use of a generic `joined`, which costs a scan of the binary's conformance records).
        let dir = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
        guard stat(dir.isEmpty ? "/" : dir, &parent) == 0 else { return false }
        return st.st_mode & S_IFMT == S_IFREG && st.st_dev != parent.st_dev
    }
}

/// Watches /dev for hidraw nodes with inotify (no udev needed: it works on a plain tmpfs /dev, in
/// containers and in the USB test bed) and reports the HID interfaces present each time they change.
/// Nothing runs while nothing changes; only while a node settles does it look again, a few times within
/// two seconds.
public final class HIDMonitor: Sendable {
    let directory: String
    let scan: @Sendable () -> (found: [FoundHID], settling: Bool)

    /// `scan` lists the interfaces (sysfs by default); `directory` is where nodes appear.
    public init(
        directory: String = "/dev",
        scan: @escaping @Sendable () -> (found: [FoundHID], settling: Bool) = { HIDScan.scan() }
    ) {
        self.directory = directory
        self.scan = scan
    }

    /// The interfaces now, then again after every change. Ends when the consumer stops iterating.
    public func snapshots() -> AsyncStream<[FoundHID]> {
        let (stream, continuation) = AsyncStream<[FoundHID]>.makeStream(bufferingPolicy: .bufferingNewest(4))
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            continuation.yield(scan().found)
            continuation.finish()
            return stream
        }
        let wake = pipeFDs
        for fd in wake { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        continuation.onTermination = { _ in
            var one: UInt8 = 1
            _ = write(wake[1], &one, 1)
        }
        let directory = self.directory
        let scan = self.scan
        let started = SystemThread.start(name: "ykterm.hidmon") {
            HIDMonitor.run(directory: directory, wake: wake[0], scan: scan) { continuation.yield($0) }
            continuation.finish()
            close(wake[0])
            close(wake[1])
        }
        if !started {
            continuation.yield(scan().found)
            continuation.finish()
        }
        return stream
    }

    private static func run(
        directory: String, wake: Int32, scan: () -> (found: [FoundHID], settling: Bool),
        emit: ([FoundHID]) -> Void
    ) {
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        defer { if inotify >= 0 { close(inotify) } }
        if inotify >= 0 {
            let mask = UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)
            _ = inotify_add_watch(inotify, directory, mask)
        }
        var last: [FoundHID]?
        var settleDelays = [Int32]()
        while true {
            let (found, settling) = scan()
            if found != last {
                emit(found)
                last = found
            }
            if settling {
                if settleDelays.isEmpty && last == found { settleDelays = [20, 50, 100, 200, 400, 600, 800] }
            } else {
                settleDelays = []
            }
            let timeout: Int32 = settling && !settleDelays.isEmpty ? settleDelays.removeFirst() : -1
            // Wait for a change to a hidraw node (other files in the directory do not count), or the timeout.
            let deadline = ThreadCondition.monotonicNow() + Double(timeout) / 1000
            while true {
                let left: Int32 = timeout < 0 ? -1 : max(0, Int32((deadline - ThreadCondition.monotonicNow()) * 1000))
                var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                if inotify >= 0 { fds.append(pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)) }
                let n = poll(&fds, nfds_t(fds.count), left)
                if n < 0 && errno != EINTR { return }
                if fds[0].revents != 0 { return }
                if n == 0 { break }
                if fds.count > 1, fds[1].revents != 0, drain(inotify) {
                    // A node that appears is settled again from the start.
                    settleDelays = []
                    break
                }
            }
        }
    }

    /// Reads the pending inotify events; true when one names a hidraw node (or the queue overflowed).
    private static func drain(_ fd: Int32) -> Bool {
        var relevant = false
        InotifyEvents.readPending(fd) { name, mask in
            if name.hasPrefix("hidraw") || mask & UInt32(IN_Q_OVERFLOW) != 0 { relevant = true }
        }
        return relevant
    }
}

/// The events an inotify descriptor holds.
enum InotifyEvents {
    /// Reads every pending event of the (non-blocking) descriptor `fd`, handing each event's name (empty for
    /// an event on the watched directory itself) and mask to `each`.
    static func readPending(_ fd: Int32, _ each: (_ name: String, _ mask: UInt32) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= n {
                let (mask, length) = buffer.withUnsafeBytes { raw -> (UInt32, Int) in
                    let e = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (e.mask, Int(e.len))
                }
                let nameBytes = buffer[(offset + header)..<min(n, offset + header + length)]
                each(String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self), mask)
                offset += header + length
            }
        }
    }
}
