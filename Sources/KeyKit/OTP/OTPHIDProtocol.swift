/// Errors of the OTP HID interface (a YubiKey's keyboard interface, reached through feature reports).
/// Each says what to do next.
public enum OTPHIDError: Error, Equatable, Sendable {
    /// The hidraw node exists but this user may not open it.
    case permissionDenied(String)
    /// The key was removed (or the node never existed).
    case deviceGone(String)
    /// Another system call failed.
    case ioFailed(call: String, path: String, errno: Int32)
    /// A report that is not 8 bytes, or that cannot be what the key sends.
    case malformedReport(Malformation)
    /// The answer's checksum is wrong.
    case badChecksum
    /// The key answered with its status and an unchanged programming sequence: it refused the command.
    case commandRejected
    /// The key waited for a touch that did not come.
    case touchTimeout
    /// The key did not answer in time.
    case timeout
    /// The connection is closed.
    case closed

}

/// The YubiKey OTP HID protocol: a command is a 70-byte frame (64 bytes of payload, the slot or command byte,
/// the payload's CRC-16, 3 filler bytes) written as 8-byte feature reports of 7 data bytes and a sequence
/// byte; the key answers with status reports, or with response reports flagged as pending.
public enum OTPHID {
    public static let reportSize = 8
    public static let reportDataSize = 7
    public static let payloadSize = 64
    public static let frameSize = 70
    /// Set by the host on each part of a frame; the key clears it once it took the part.
    public static let writeFlag: UInt8 = 0x80
    /// A response report (the low five bits count the parts).
    public static let responsePendingFlag: UInt8 = 0x40
    /// The key waits for a touch.
    public static let touchWaitFlag: UInt8 = 0x20
    public static let sequenceMask: UInt8 = 0x1F
    /// The last byte of the report that tells the key to drop what it was sending.
    public static let resetMarker: UInt8 = 0xFF
    /// The CRC-16 of data followed by its complemented CRC (little-endian).
    public static let crcResidual: UInt16 = CRC16.residue

    /// Slot commands that only exist over HID.
    public enum Command {
        /// Device information (READ CONFIG), one page per request; the page is the payload's first byte.
        public static let readConfig: UInt8 = 0x13
    }

    /// CRC-16 as ISO 13239 defines it (`CRC16`), as the key checks a frame.
    public static func crc16<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        CRC16.checksum(bytes)
    }

    /// True when `bytes` end with the complement of the CRC of what precedes them (little-endian).
    public static func checkCRC<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        crc16(bytes) == crcResidual
    }

    /// `data` followed by its complemented CRC, little-endian: how the key protects an answer.
    public static func appendingResponseCRC(_ data: [UInt8]) -> [UInt8] {
        let crc = ~crc16(data)
        return data + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }

    /// The 70-byte frame of `slot` with `data` (at most 64 bytes, zero-padded).
    public static func frame(slot: UInt8, data: [UInt8]) throws(OTPHIDError) -> [UInt8] {
        guard data.count <= payloadSize else {
            throw .malformedReport(Malformation(.otpPayload, .tooLong(data.count, maximum: payloadSize)))
        }
        let payload = data + [UInt8](repeating: 0, count: payloadSize - data.count)
        let crc = crc16(payload)
        return payload + [slot, UInt8(crc & 0xFF), UInt8(crc >> 8), 0, 0, 0]
    }

    /// The feature reports that carry `frame` (70 bytes): part n is 7 bytes and `0x80 | n`. All-zero parts
    /// are left out, except the first and the last, which the key needs to start and to end a frame.
    public static func reports(frame: [UInt8]) -> [[UInt8]] {
        var out = [[UInt8]]()
        let parts = (frame.count + reportDataSize - 1) / reportDataSize
        for n in 0..<parts {
            let start = n * reportDataSize
            var part = Array(frame[start..<min(start + reportDataSize, frame.count)])
            part += [UInt8](repeating: 0, count: reportDataSize - part.count)
            guard n == 0 || n == parts - 1 || part.contains(where: { $0 != 0 }) else { continue }
            out.append(part + [writeFlag | UInt8(n)])
        }
        return out
    }

    /// The status a key reports in a feature report whose last byte carries no flag.
    public static func status(report: [UInt8]) throws(OTPHIDError) -> OTPSession.Status {
        guard report.count == reportSize else {
            throw .malformedReport(Malformation(.featureReport, .lengthExpected(report.count, expected: reportSize)))
        }
        do {
            return try OTPSession.Status(bytes: Array(report[1..<7]))
        } catch {
            throw .malformedReport(Malformation(.otpStatus, .value(report.hex)))
        }
    }

    /// Checks an answer of `length` bytes followed by its CRC, and returns the `length` bytes.
    public static func checkedResponse(_ response: [UInt8], length: Int) throws(OTPHIDError) -> [UInt8] {
        guard length >= 0, response.count >= length + 2 else {
            throw .malformedReport(Malformation(.otpAnswer, .tooShort(response.count, minimum: length + 2)))
        }
        guard checkCRC(response.prefix(length + 2)) else { throw .badChecksum }
        return Array(response.prefix(length))
    }

    /// A READ CONFIG answer: a length byte, that many bytes, and a CRC over both; returns length byte and body.
    public static func checkedConfigResponse(_ response: [UInt8]) throws(OTPHIDError) -> [UInt8] {
        guard let first = response.first else { throw .malformedReport(Malformation(.deviceInfo, .empty)) }
        return try checkedResponse(response, length: Int(first) + 1)
    }

    /// What one feature report read during a command means.
    public enum ReportKind: Equatable, Sendable {
        /// A status report (no flags).
        case status(OTPSession.Status)
        /// Part `sequence` of a response, with its 7 bytes.
        case response(sequence: UInt8, data: [UInt8])
        /// The key is busy; `touch` when it waits for a touch.
        case busy(touch: Bool)
    }

    public static func classify(report: [UInt8]) throws(OTPHIDError) -> ReportKind {
        guard report.count == reportSize else {
            throw .malformedReport(Malformation(.featureReport, .lengthExpected(report.count, expected: reportSize)))
        }
        let flags = report[7]
        if flags & responsePendingFlag != 0 {
            return .response(sequence: flags & sequenceMask, data: Array(report[0..<7]))
        }
        if flags == 0 { return .status(try status(report: report)) }
        return .busy(touch: flags & touchWaitFlag != 0)
    }

    /// Gathers the parts of a response: they come numbered 0, 1, 2 …; a part numbered 0 after others ends it.
    public struct ResponseReader: Sendable {
        public private(set) var data: [UInt8] = []
        private var next: UInt8 = 0
        /// At most this many parts are taken (a frame's worth and a little more).
        static let maxParts = 12

        public init() {}

        /// Adds a response part; returns the whole response when this part ended it.
        public mutating func add(sequence: UInt8, part: [UInt8]) throws(OTPHIDError) -> [UInt8]? {
            if sequence == next {
                guard Int(next) < Self.maxParts else {
                    throw .malformedReport(Malformation(.otpAnswer, .neverEnds(parts: Int(next))))
                }
                data += part
                next += 1
                return nil
            }
            if sequence == 0 { return data }
            // A part seen again while the key moves on: keep reading.
            return nil
        }

        public var isEmpty: Bool { next == 0 }
    }
}
