import Synchronization
import Testing
@testable import KeyKit

/// A scripted OTP HID key: status reports until a whole frame is written, then `touchReads` reports with
/// the touch-wait flag, then `answer`'s reports (the last repeated).
private final class ScriptedOTPDevice: HIDFeatureReportDevice {
    struct State {
        var written: [[UInt8]] = []
        var frameDone = false
        var touchReads = 0
        var answer: [[UInt8]] = []
        var next = 0
        var resets = 0
    }
    let state: Mutex<State>
    static let status: [UInt8] = [0, 5, 4, 3, 7, 0x03, 0x00, 0]
    let status: [UInt8]

    init(answer: [[UInt8]], touchReads: Int = 0, status: [UInt8] = ScriptedOTPDevice.status) {
        state = Mutex(State(touchReads: touchReads, answer: answer))
        self.status = status
    }

    func setFeature(_ report: [UInt8]) throws {
        state.withLock { s in
            if report[7] == OTPHID.resetMarker {
                s.resets += 1
                s.frameDone = false
                return
            }
            s.written.append(report)
            if report[7] == 0x89 { s.frameDone = true }
        }
    }

    func getFeature() throws -> [UInt8] {
        state.withLock { s in
            guard s.frameDone else { return status }
            if s.touchReads > 0 {
                s.touchReads -= 1
                var r = status
                r[7] = OTPHID.touchWaitFlag
                return r
            }
            let r = s.answer[s.next]
            s.next = min(s.next + 1, s.answer.count - 1)
            return r
        }
    }

    func close() {}
}

/// Response reports as a key sends them.
private func responseReports(_ framed: [UInt8]) -> [[UInt8]] {
    var out = [[UInt8]]()
    var i = 0
    while i < framed.count {
        var part = Array(framed[i..<min(i + 7, framed.count)])
        part += [UInt8](repeating: 0, count: 7 - part.count)
        out.append(part + [0x40 | UInt8(out.count)])
        i += 7
    }
    return out + [[0, 0, 0, 0, 0, 0, 0, 0x40]]
}

private final class ProgressLog: Sendable {
    let events = Mutex<[FIDOProgress]>([])
}

@Suite struct OTPHIDTests {
    @Test func crcMatchesTheCatalogueCheckValue() {
        // ISO 13239 without the final complement (CRC-16/MCRF4XX): check value of "123456789" is 0x6F91.
        #expect(OTPHID.crc16(Array("123456789".utf8)) == 0x6F91)
        // The complemented CRC appended little-endian leaves the residual 0xF0B8 (X.25's good-FCS value).
        let data: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05]
        #expect(OTPHID.checkCRC(OTPHID.appendingResponseCRC(data)))
        #expect(OTPHID.crc16(OTPHID.appendingResponseCRC(data)) == 0xF0B8)
        #expect(!OTPHID.checkCRC(data + [0, 0]))
    }

    @Test func frameLayoutByteByByte() throws {
        let frame = try OTPHID.frame(slot: 0x30, data: [1, 2, 3])
        #expect(frame.count == 70)
        #expect(Array(frame[0..<3]) == [1, 2, 3])
        #expect(frame[3..<64].allSatisfy { $0 == 0 })
        #expect(frame[64] == 0x30)
        let crc = OTPHID.crc16([1, 2, 3] + [UInt8](repeating: 0, count: 61))
        #expect(frame[65] == UInt8(crc & 0xFF) && frame[66] == UInt8(crc >> 8))
        #expect(Array(frame[67..<70]) == [0, 0, 0])
        let reports = OTPHID.reports(frame: frame)
        // All-zero parts 1 to 8 are left out; the first and the last go.
        #expect(reports == [[1, 2, 3, 0, 0, 0, 0, 0x80], [0, 0x30, frame[65], frame[66], 0, 0, 0, 0x89]])
        let full = try OTPHID.frame(slot: 0x01, data: [UInt8](repeating: 0xAA, count: 64))
        let all = OTPHID.reports(frame: full)
        #expect(all.count == 10)
        #expect(all.map { $0[7] } == (0..<10).map { 0x80 | UInt8($0) })
        #expect(all.flatMap { $0.prefix(7) } == full)
        #expect(throws: OTPHIDError.self) { try OTPHID.frame(slot: 1, data: [UInt8](repeating: 0, count: 65)) }
    }

    @Test func hidrawIoctlNumbers() {
        // _IOC(_IOC_WRITE|_IOC_READ, 'H', 0x06 / 0x07, 9) as <linux/hidraw.h> defines them.
        #expect(HIDRawFeatureDevice.setFeatureRequest == 0xC009_4806)
        #expect(HIDRawFeatureDevice.getFeatureRequest == 0xC009_4807)
    }

    @Test func serialAnswerIsCheckedAndRead() async throws {
        let device = ScriptedOTPDevice(answer: responseReports(OTPHID.appendingResponseCRC([0x00, 0x98, 0x96, 0x7F])))
        let c = OTPHIDConnection(device: device, name: "scripted")
        #expect(try await ManagementHID.serial(otp: c) == 9_999_999)
        #expect(device.state.withLock { $0.resets } == 1)
        // The serial command has an empty payload: only the first and last parts are written.
        #expect(device.state.withLock { $0.written.map { $0[7] } } == [0x80, 0x89])
        await c.close()
    }

    @Test func badChecksumIsRefused() async throws {
        var framed = OTPHID.appendingResponseCRC([0x00, 0x98, 0x96, 0x7F])
        framed[5] ^= 0x01
        let c = OTPHIDConnection(device: ScriptedOTPDevice(answer: responseReports(framed)), name: "scripted")
        await #expect(throws: OTPHIDError.badChecksum) { try await ManagementHID.serial(otp: c) }
    }

    @Test func unchangedSequenceMeansRefused() async throws {
        let c = OTPHIDConnection(device: ScriptedOTPDevice(answer: [ScriptedOTPDevice.status]), name: "scripted")
        await #expect(throws: OTPHIDError.commandRejected) {
            try await c.send(slot: OTPSession.Command.config1, data: [1])
        }
        var moved = ScriptedOTPDevice.status
        moved[4] += 1
        let ok = OTPHIDConnection(device: ScriptedOTPDevice(answer: [moved]), name: "scripted")
        let answer = try await ok.send(slot: OTPSession.Command.config1, data: [1])
        #expect(answer == .status(try OTPHID.status(report: moved)))
    }

    @Test func touchWaitIsReportedAndTimesOut() async throws {
        let log = ProgressLog()
        let digest = [UInt8](repeating: 0x5A, count: 20)
        let device = ScriptedOTPDevice(answer: responseReports(OTPHID.appendingResponseCRC(digest)), touchReads: 3)
        let c = OTPHIDConnection(device: device, name: "scripted")
        let answer = try await c.send(slot: OTPSession.Command.challengeHMAC1, data: [1, 2]) { p in
            log.events.withLock { $0.append(p) }
        }
        guard case .data(let data) = answer else { Issue.record("no data"); return }
        #expect(try OTPHID.checkedResponse(data, length: 20) == digest)
        #expect(log.events.withLock { $0 } == [.waitingForUserPresence])

        let never = OTPHIDConnection(
            device: ScriptedOTPDevice(answer: [ScriptedOTPDevice.status], touchReads: .max),
            name: "scripted", timeout: 0.1, touchTimeout: 0.4)
        await #expect(throws: OTPHIDError.touchTimeout) {
            try await never.send(slot: OTPSession.Command.challengeHMAC1, data: [1])
        }
    }

    @Test func cancelStopsATouchWait() async throws {
        let device = ScriptedOTPDevice(answer: [ScriptedOTPDevice.status], touchReads: .max)
        let c = OTPHIDConnection(device: device, name: "scripted")
        let task = Task { try await c.send(slot: OTPSession.Command.challengeHMAC1, data: [1]) }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(device.state.withLock { $0.resets } == 1)
        await c.close()
        await #expect(throws: OTPHIDError.closed) { try await c.readStatus() }
    }

    @Test func garbageAndTruncatedReportsAreRefused() throws {
        #expect(throws: OTPHIDError.self) { try OTPHID.status(report: [1, 2, 3]) }
        #expect(throws: OTPHIDError.self) { try OTPHID.classify(report: []) }
        #expect(throws: OTPHIDError.self) { try OTPHID.classify(report: [UInt8](repeating: 0xFF, count: 9)) }
        #expect(throws: OTPHIDError.self) { try OTPHID.checkedResponse([1, 2, 3], length: 4) }
        #expect(throws: OTPHIDError.self) { try OTPHID.checkedConfigResponse([]) }
        #expect(throws: OTPHIDError.self) { try OTPHID.checkedConfigResponse([0xFF, 1, 2]) }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let report = (0..<Int.random(in: 0...10, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try? OTPHID.classify(report: report)
            _ = try? OTPHID.checkedConfigResponse(report)
        }
        // A response that keeps counting is cut off.
        var reader = OTPHID.ResponseReader()
        #expect(throws: OTPHIDError.self) {
            for n in 0..<64 { _ = try reader.add(sequence: UInt8(n & 0x1F), part: [0]) }
        }
    }

    @Test func oldFirmwareDeviceInfoComesFromStatusAndSerial() async throws {
        let device = ScriptedOTPDevice(
            answer: responseReports(OTPHID.appendingResponseCRC([0, 0x12, 0xD6, 0x87])),
            status: [0, 3, 4, 0, 1, 0x01, 0, 0])
        let c = OTPHIDConnection(device: device, name: "scripted")
        let info = try await ManagementHID.readDeviceInfo(otp: c)
        #expect(info.version == Version(3, 4, 0))
        #expect(info.serial == 1_234_567)
        // Only the serial command went to the key: READ CONFIG came with firmware 4.1.
        #expect(device.state.withLock { $0.written.map { $0[1] } }.contains(OTPSession.Command.deviceSerial))
        await c.close()
    }

    @Test func hidrawErrorsSayWhatToDo() throws {
        #expect(throws: OTPHIDError.deviceGone("/dev/hidraw-none")) {
            try HIDRawFeatureDevice(path: "/dev/hidraw-none")
        }
        // A file that is no hidraw node refuses the feature ioctls with a typed error.
        let device = try HIDRawFeatureDevice(path: "/dev/null")
        #expect(throws: OTPHIDError.self) { try device.getFeature() }
        #expect(throws: OTPHIDError.self) { try device.setFeature([0, 0, 0, 0, 0, 0, 0, 0]) }
        device.close()
        #expect(throws: OTPHIDError.closed) { try device.getFeature() }
    }

    @Test func statusReportParses() throws {
        let s = try OTPHID.status(report: [0, 5, 7, 2, 9, 0x07, 0x00, 0])
        #expect(s.version == Version(5, 7, 2))
        #expect(s.programSequence == 9)
        #expect(s.slot1Configured && s.slot2Configured && s.slot1Touch && !s.slot2Touch)
    }
}
