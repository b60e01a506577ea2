import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A FIDO HID device found by `HIDRawDevice.enumerateFIDO()`.
public struct HIDDeviceInfo: Sendable, Hashable {
    /// The hidraw node (e.g. /dev/hidraw3).
    public var path: String
    public var vendorID: UInt16
    public var productID: UInt16
    /// The USB product string, e.g. "YubiKey OTP+FIDO+CCID".
    public var productName: String?
    /// The USB serial number string; YubiKeys usually have none.
    public var serialNumber: String?
    /// The top-level usage page and usage of the interface's report descriptor (0xF1D0/1 for FIDO, 1/6 for a
    /// keyboard such as a YubiKey's OTP interface).
    public var usagePage: UInt16 = 0
    public var usage: UInt16 = 0

    public init(
        path: String, vendorID: UInt16, productID: UInt16, productName: String? = nil,
        serialNumber: String? = nil
    ) {
        self.path = path
        self.vendorID = vendorID
        self.productID = productID
        self.productName = productName
        self.serialNumber = serialNumber
    }

    /// Yubico's USB vendor ID.
    public static let yubicoVendorID: UInt16 = 0x1050
    public var isYubico: Bool { vendorID == HIDDeviceInfo.yubicoVendorID }
}

/// Errors from opening a HID device. Each says what to do next.
public enum HIDDeviceError: Error, Equatable, Sendable {
    /// The hidraw node exists but this user may not open it (no udev rule).
    case permissionDenied(String)
    /// The device is not there (any more).
    case notFound(String)
    /// The node could not be opened for another reason (the system's words for it, when there are any).
    case openFailed(path: String, reason: String?)
    /// hidapi could not start.
    case unavailable

}

/// A FIDO key's HID interface: its hidraw node, opened, written and read with the system calls hidapi's hidraw
/// backend makes. Not through hidapi itself: Debian 12's hidapi (0.13.1) frees the device in `hid_open_path` when
/// the node opens but its first ioctl fails (a key pulled out in between) and then writes its error message into
/// the freed memory (fixed in hidapi 0.14.0) — the heap corruption behind the TUI's aborts after a plug-in.
///
/// `@unchecked Sendable`: the only mutable state is the descriptor, which lives in a `Mutex`; every call on it
/// runs under that lock, so a read blocks writes and `close` for at most its timeout.
public final class HIDRawDevice: HIDReportDevice, @unchecked Sendable {
    public let path: String
    /// Bytes in one report (without the report ID).
    public let reportSize: Int
    private let fd: Mutex<Int32>

    /// The FIDO usage page in the HID report descriptor.
    public static let fidoUsagePage: UInt16 = 0xF1D0

    /// Opens the node at `path` for reading and writing (blocking, but quick).
    public init(path: String, reportSize: Int = CTAPHID.packetSize) throws {
        let opened = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard opened >= 0 else { throw HIDRawDevice.openError(errno, path: path) }
        self.path = path
        self.reportSize = reportSize
        self.fd = Mutex(opened)
    }

    /// Why the node could not be opened, in terms the user can act on.
    static func openError(_ code: Int32, path: String) -> HIDDeviceError {
        switch code {
        case EACCES, EPERM: return .permissionDenied(path)
        case ENOENT, ENODEV, ENXIO: return .notFound(path)
        default: return .openFailed(path: path, reason: String(cString: strerror(code)))
        }
    }

    /// The FIDO devices (usage page 0xF1D0) on USB, by path.
    public static func enumerateFIDO() -> [HIDDeviceInfo] {
        enumerateAll().filter { $0.usagePage == fidoUsagePage }
    }

    /// Every HID interface (one entry per hidraw node, with its first top-level usage, FIDO's if it has one),
    /// by path. Read from sysfs (`HIDSysfs`).
    public static func enumerateAll() -> [HIDDeviceInfo] {
        HIDSysfs.interfaces()
    }

    public func write(_ report: [UInt8]) throws {
        // hidraw wants the report ID first; FIDO keys have unnumbered reports, so it is 0.
        let buffer = [0] + report
        let written: Int = try fd.withLock { fd in
            guard fd >= 0 else { throw FIDOTransportError.closed }
            while true {
                let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                return n
            }
        }
        guard written >= 0 else { throw FIDOTransportError.deviceGone }
    }

    /// One input report, or nil when none came within the timeout. hidraw hands unnumbered reports without the
    /// report ID.
    public func read(timeoutMilliseconds: Int) throws -> [UInt8]? {
        let size = reportSize
        let timeout = Int32(clamping: max(0, timeoutMilliseconds))
        return try fd.withLock { fd -> [UInt8]? in
            guard fd >= 0 else { throw FIDOTransportError.closed }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            var ready = Glibc.poll(&entry, 1, timeout)
            while ready < 0 && errno == EINTR { ready = Glibc.poll(&entry, 1, timeout) }
            if ready == 0 { return nil }
            // The key unplugged: the node reports an error or hang-up.
            guard ready > 0, Int32(entry.revents) & Int32(POLLERR | POLLHUP | POLLNVAL) == 0 else {
                throw FIDOTransportError.deviceGone
            }
            var buffer = [UInt8](repeating: 0, count: size)
            var n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            while n < 0 && errno == EINTR {
                n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            }
            if n < 0 && (errno == EAGAIN || errno == EINPROGRESS) { return nil }
            // A hidraw node never reads as ended while its device is there: 0 bytes (or an error) is a node gone,
            // or not a hidraw node at all.
            guard n > 0 else { throw FIDOTransportError.deviceGone }
            return Array(buffer.prefix(n))
        }
    }

    public func close() {
        fd.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }

    deinit {
        close()
    }
}

extension CTAPHIDConnection {
    /// Opens the FIDO HID device at `path` and allocates a channel on it.
    /// With `inline`, the device is opened and used on the calling thread (see `CTAPHIDConnection`).
    public static func open(
        path: String, name: String? = nil, timeout: Double = 30,
        userPresenceTimeout: Double = 60, inline: Bool = false
    ) async throws -> CTAPHIDConnection {
        let device: HIDRawDevice
        if inline {
            device = try HIDRawDevice(path: path)
        } else {
            device = try await Blocking.value(label: "ykterm.hid.open") { try HIDRawDevice(path: path) }
        }
        do {
            return try await CTAPHIDConnection(
                device: device, name: name ?? path, timeout: timeout,
                userPresenceTimeout: userPresenceTimeout, inline: inline)
        } catch {
            device.close()
            throw error
        }
    }

    /// Opens a device `HIDRawDevice.enumerateFIDO()` found.
    public static func open(
        _ info: HIDDeviceInfo, timeout: Double = 30,
        userPresenceTimeout: Double = 60, inline: Bool = false
    ) async throws -> CTAPHIDConnection {
        try await open(
            path: info.path, name: info.productName.map { "\($0) (\(info.path))" } ?? info.path,
            timeout: timeout, userPresenceTimeout: userPresenceTimeout, inline: inline)
    }
}
