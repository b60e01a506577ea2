import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A HID interface reached through 8-byte feature reports (a YubiKey's OTP / keyboard interface).
public protocol HIDFeatureReportDevice: AnyObject, Sendable {
    /// Sends one 8-byte feature report (HIDIOCSFEATURE; the report ID is not included).
    func setFeature(_ report: [UInt8]) throws
    /// Reads one 8-byte feature report (HIDIOCGFEATURE; the report ID is not included).
    func getFeature() throws -> [UInt8]
    func close()
}

/// A hidraw node opened for feature reports: HIDIOCSFEATURE / HIDIOCGFEATURE with 9-byte buffers (report
/// ID 0, then the 8 bytes).
public final class HIDRawFeatureDevice: HIDFeatureReportDevice {
    public let path: String
    private let fd: Mutex<Int32>

    /// `_IOC(_IOC_WRITE | _IOC_READ, 'H', nr, size)` as Linux computes it.
    static func ioctlNumber(_ nr: UInt, size: Int) -> UInt {
        (3 << 30) | (UInt(size) << 16) | (UInt(UInt8(ascii: "H")) << 8) | nr
    }
    static let bufferSize = OTPHID.reportSize + 1
    public static let setFeatureRequest = ioctlNumber(0x06, size: bufferSize)
    public static let getFeatureRequest = ioctlNumber(0x07, size: bufferSize)

    /// Opens `path` for reading and writing (blocking, but quick).
    public init(path: String) throws {
        let opened = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard opened >= 0 else { throw HIDRawFeatureDevice.error(errno, path: path, what: "open") }
        self.path = path
        self.fd = Mutex(opened)
    }

    static func error(_ code: Int32, path: String, what: String) -> OTPHIDError {
        switch code {
        case EACCES, EPERM: return .permissionDenied(path)
        case ENOENT, ENODEV, ENXIO, EIO: return .deviceGone(path)
        default: return .ioFailed(call: what, path: path, errno: code)
        }
    }

    public func setFeature(_ report: [UInt8]) throws {
        guard report.count == OTPHID.reportSize else {
            throw OTPHIDError.malformedReport(
                Malformation(.featureReport, .lengthExpected(report.count, expected: OTPHID.reportSize)))
        }
        var buffer = [0] + report
        try fd.withLock { fd in
            guard fd >= 0 else { throw OTPHIDError.closed }
            let r = buffer.withUnsafeMutableBytes { ioctl(fd, HIDRawFeatureDevice.setFeatureRequest, $0.baseAddress!) }
            guard r >= 0 else { throw HIDRawFeatureDevice.error(errno, path: path, what: "HIDIOCSFEATURE") }
        }
    }

    public func getFeature() throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: HIDRawFeatureDevice.bufferSize)
        let n: Int32 = try fd.withLock { fd in
            guard fd >= 0 else { throw OTPHIDError.closed }
            let r = buffer.withUnsafeMutableBytes { ioctl(fd, HIDRawFeatureDevice.getFeatureRequest, $0.baseAddress!) }
            guard r >= 0 else { throw HIDRawFeatureDevice.error(errno, path: path, what: "HIDIOCGFEATURE") }
            return r
        }
        // The kernel returns the report ID first when it counts it; keep the 8 report bytes.
        guard n >= OTPHID.reportSize else {
            throw OTPHIDError.malformedReport(
                Malformation(.featureReport, .tooShort(Int(n), minimum: OTPHID.reportSize)))
        }
        return Array(buffer[1...OTPHID.reportSize])
    }

    public func close() {
        fd.withLock { fd in
            if fd >= 0 { _ = Glibc.close(fd) }
            fd = -1
        }
    }

    deinit { close() }
}

/// The YubiKey OTP (keyboard) interfaces on this machine.
public enum OTPHIDDevices {
    /// Yubico HID interfaces whose top-level usage is a keyboard (usage page 1, usage 6), by path.
    public static func enumerate() -> [HIDDeviceInfo] {
        HIDRawDevice.enumerateOTP()
    }
}
