import CHIDAPI
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A FIDO HID device found by `HIDAPIDevice.enumerateFIDO()`.
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

    public init(path: String, vendorID: UInt16, productID: UInt16, productName: String? = nil,
                serialNumber: String? = nil) {
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
    /// hidapi could not open the device for another reason (hidapi's own words, when it gave any).
    case openFailed(path: String, reason: String?)
    /// hidapi could not start.
    case unavailable

}

/// A FIDO key's HID interface through hidapi (the hidraw backend on Linux).
///
/// `@unchecked Sendable`: the only mutable state is the device handle, which lives in a `Mutex`; every
/// hidapi call on it runs under that lock, so a read blocks writes and `close` for at most its timeout.
public final class HIDAPIDevice: HIDReportDevice, @unchecked Sendable {
    public let path: String
    /// Bytes in one report (without the report ID).
    public let reportSize: Int
    private let handle: Mutex<OpaquePointer?>

    /// The FIDO usage page in the HID report descriptor.
    public static let fidoUsagePage: UInt16 = 0xF1D0

    /// hidapi's global state (the last error's string) is not thread-safe: open under this lock.
    static let libraryLock = Mutex(())
    /// `hid_init` runs once, the first time it is needed (Swift initialises static lets exactly once).
    private static let initialized: Bool = hid_init() == 0

    /// Opens the device at `path` (blocking, but quick).
    public init(path: String, reportSize: Int = CTAPHID.packetSize) throws {
        guard HIDAPIDevice.initialized else { throw HIDDeviceError.unavailable }
        let opened: OpaquePointer? = HIDAPIDevice.libraryLock.withLock { _ in hid_open_path(path) }
        guard let opened else { throw HIDAPIDevice.openError(path: path) }
        self.path = path
        self.reportSize = reportSize
        self.handle = Mutex(opened)
    }

    /// Why `hid_open_path` failed, in terms the user can act on.
    private static func openError(path: String) -> HIDDeviceError {
        if access(path, F_OK) != 0 { return .notFound(path) }
        if access(path, R_OK | W_OK) != 0, errno == EACCES { return .permissionDenied(path) }
        let reason = libraryLock.withLock { _ in wideString(hid_error(nil)) }
        if reason?.lowercased().contains("permission denied") == true { return .permissionDenied(path) }
        return .openFailed(path: path, reason: reason)
    }

    /// The FIDO devices (usage page 0xF1D0) on USB, by path.
    public static func enumerateFIDO() -> [HIDDeviceInfo] {
        enumerateAll().filter { $0.usagePage == fidoUsagePage }
    }

    /// Every HID interface (one entry per hidraw node, with its first top-level usage, FIDO's if it has one),
    /// by path. Read from sysfs (`HIDSysfs`), not through hidapi's libudev enumeration: the same facts, a
    /// millisecond sooner.
    public static func enumerateAll() -> [HIDDeviceInfo] {
        HIDSysfs.interfaces()
    }

    public func write(_ report: [UInt8]) throws {
        // hidapi wants the report ID first; FIDO keys have unnumbered reports, so it is 0.
        let buffer = [0] + report
        let written: Int32 = try handle.withLock { h in
            guard let h else { throw FIDOTransportError.closed }
            return hid_write(h, buffer, buffer.count)
        }
        guard written >= 0 else { throw FIDOTransportError.deviceGone }
    }

    public func read(timeoutMilliseconds: Int) throws -> [UInt8]? {
        let size = reportSize
        let timeout = Int32(clamping: max(0, timeoutMilliseconds))
        return try handle.withLock { h -> [UInt8]? in
            guard let h else { throw FIDOTransportError.closed }
            var buffer = [UInt8](repeating: 0, count: size)
            let n = hid_read_timeout(h, &buffer, size, timeout)
            // hidraw reports -1 once the key is unplugged.
            guard n >= 0 else { throw FIDOTransportError.deviceGone }
            return n == 0 ? nil : Array(buffer.prefix(Int(n)))
        }
    }

    public func close() {
        handle.withLock { h in
            if let device = h { hid_close(device) }
            h = nil
        }
    }

    deinit {
        close()
    }
}

/// A NUL-terminated wchar_t string from hidapi (UTF-32 on Linux and macOS); nil when absent or empty.
private func wideString(_ pointer: UnsafePointer<wchar_t>?) -> String? {
    guard let pointer else { return nil }
    var scalars = String.UnicodeScalarView()
    var i = 0
    while pointer[i] != 0, i < 4096 {
        if let s = Unicode.Scalar(UInt32(bitPattern: Int32(pointer[i]))) { scalars.append(s) }
        i += 1
    }
    return scalars.isEmpty ? nil : String(scalars)
}

extension CTAPHIDConnection {
    /// Opens the FIDO HID device at `path` and allocates a channel on it.
    /// With `inline`, the device is opened and used on the calling thread (see `CTAPHIDConnection`).
    public static func open(path: String, name: String? = nil, timeout: Double = 30,
                            userPresenceTimeout: Double = 60, inline: Bool = false) async throws -> CTAPHIDConnection {
        let device: HIDAPIDevice
        if inline {
            device = try HIDAPIDevice(path: path)
        } else {
            device = try await withCheckedThrowingContinuation { cont in
                DispatchQueue.global().async { cont.resume(with: Result { try HIDAPIDevice(path: path) }) }
            }
        }
        do {
            return try await CTAPHIDConnection(device: device, name: name ?? path, timeout: timeout,
                                               userPresenceTimeout: userPresenceTimeout, inline: inline)
        } catch {
            device.close()
            throw error
        }
    }

    /// Opens a device `HIDAPIDevice.enumerateFIDO()` found.
    public static func open(_ info: HIDDeviceInfo, timeout: Double = 30,
                            userPresenceTimeout: Double = 60, inline: Bool = false) async throws -> CTAPHIDConnection {
        try await open(path: info.path, name: info.productName.map { "\($0) (\(info.path))" } ?? info.path,
                       timeout: timeout, userPresenceTimeout: userPresenceTimeout, inline: inline)
    }
}
