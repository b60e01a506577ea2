import KeyKit
import Synchronization
import VirtualKey

/// A YubiKey OTP HID interface (8-byte feature reports) answering from the fuzzer's input.
///
/// The first answer is the status the interface reports while idle (version, programming sequence, touch
/// level: its first 6 bytes). Then each frame written (its last part) takes the next answer, by kind modulo 3:
/// 0, raw feature reports of 8 bytes (the last zero padded) read one by one; 1, answer data, sent as a key
/// sends it (the CRC appended, parts of 7 bytes flagged 0x40 and numbered, a part numbered 0 ending it);
/// 2, a new idle status (a slot write taken or refused). A read with no report waiting gives the idle status;
/// the reset report (flags FF) drops what was waiting. When the answers are used up the interface is gone
/// (`OTPHIDError.deviceGone`).
public final class FuzzOTPHIDDevice: HIDFeatureReportDevice {
    private struct State {
        var isOpen = true
        var isGone = false
        var status: [UInt8]?
        var queue: [[UInt8]] = []
    }

    public let answers: FuzzAnswers
    private let state = Mutex(State())
    static let path = "fuzz OTP HID"

    public init(answers: FuzzAnswers) {
        self.answers = answers
    }

    public func setFeature(_ report: [UInt8]) throws {
        guard report.count == OTPHID.reportSize else {
            throw OTPHIDError.malformedReport(
                Malformation(.featureReport, .lengthExpected(report.count, expected: OTPHID.reportSize)))
        }
        try state.withLock { s in
            try check(s)
            let flags = report[7]
            if flags == OTPHID.resetMarker {
                s.queue = []
                return
            }
            let part = Int(flags & OTPHID.sequenceMask)
            guard flags & OTPHID.writeFlag != 0, (part + 1) * OTPHID.reportDataSize >= OTPHID.frameSize else { return }
            guard let answer = answers.next() else {
                s.isGone = true
                return
            }
            switch answer.kind % 3 {
            case 0:
                s.queue = stride(from: 0, to: answer.bytes.count, by: OTPHID.reportSize).map {
                    FuzzOTPHIDDevice.padded(
                        Array(answer.bytes[$0..<min($0 + OTPHID.reportSize, answer.bytes.count)]),
                        to: OTPHID.reportSize)
                }
            case 1:
                s.queue = FuzzOTPHIDDevice.responseReports(answer.bytes)
            default:
                s.status = FuzzOTPHIDDevice.padded(Array(answer.bytes.prefix(6)), to: 6)
                s.queue = []
            }
        }
    }

    public func getFeature() throws -> [UInt8] {
        try state.withLock { s in
            try check(s)
            if s.status == nil {
                guard let first = answers.next() else {
                    s.isGone = true
                    throw OTPHIDError.deviceGone(FuzzOTPHIDDevice.path)
                }
                s.status = FuzzOTPHIDDevice.padded(Array(first.bytes.prefix(6)), to: 6)
            }
            if !s.queue.isEmpty { return s.queue.removeFirst() }
            return [0] + (s.status ?? []) + [0]
        }
    }

    public func close() {
        state.withLock { $0.isOpen = false }
    }

    private func check(_ s: State) throws {
        guard s.isOpen else { throw OTPHIDError.closed }
        guard !s.isGone else { throw OTPHIDError.deviceGone(FuzzOTPHIDDevice.path) }
    }

    static func padded(_ bytes: [UInt8], to count: Int) -> [UInt8] {
        bytes + [UInt8](repeating: 0, count: max(0, count - bytes.count))
    }

    /// `data` as a key sends an answer: with its CRC, in parts of 7 bytes flagged 0x40 | n, then an empty part
    /// numbered 0.
    static func responseReports(_ data: [UInt8]) -> [[UInt8]] {
        let framed = OTPHID.appendingResponseCRC(data)
        var reports = [[UInt8]]()
        for start in stride(from: 0, to: framed.count, by: OTPHID.reportDataSize) {
            let part = Array(framed[start..<min(start + OTPHID.reportDataSize, framed.count)])
            reports.append(
                padded(part, to: OTPHID.reportDataSize)
                    + [OTPHID.responsePendingFlag | UInt8(truncatingIfNeeded: reports.count)])
        }
        reports.append([0, 0, 0, 0, 0, 0, 0, OTPHID.responsePendingFlag])
        return reports
    }
}

/// Passes feature reports to a real OTP HID interface (the virtual key's) and logs its answers in the layout
/// `FuzzOTPHIDDevice` reads: the first status read, then for each frame either its answer data (the parts
/// put together, without the CRC) or the status that follows it. Answers that are neither are logged raw.
public final class RecordingOTPHIDDevice: HIDFeatureReportDevice {
    private struct State {
        var sawStatus = false
        /// Reports read since the last part of a frame was written; nil between frames.
        var answer: [[UInt8]]?
    }

    public let device: any HIDFeatureReportDevice
    public let log = AnswerLog()
    private let state = Mutex(State())

    public init(device: any HIDFeatureReportDevice) {
        self.device = device
    }

    public func setFeature(_ report: [UInt8]) throws {
        finishAnswer()
        try device.setFeature(report)
        let flags = report.count == OTPHID.reportSize ? report[7] : 0
        let part = Int(flags & OTPHID.sequenceMask)
        if flags != OTPHID.resetMarker, flags & OTPHID.writeFlag != 0,
            (part + 1) * OTPHID.reportDataSize >= OTPHID.frameSize
        {
            state.withLock { $0.answer = [] }
        }
    }

    public func getFeature() throws -> [UInt8] {
        let report = try device.getFeature()
        let finished: Bool = state.withLock { s in
            if !s.sawStatus {
                s.sawStatus = true
                log.append(FuzzAnswer(kind: 2, Array(report[1..<7])))
                return false
            }
            guard var answer = s.answer else { return false }
            if answer.isEmpty && report[7] == 0 {
                // No data: the command's answer is the status that follows it.
                log.append(FuzzAnswer(kind: 2, Array(report[1..<7])))
                s.answer = nil
                return false
            }
            answer.append(report)
            s.answer = answer
            // A part numbered 0 after others ends the answer.
            return answer.count > 1 && report[7] == OTPHID.responsePendingFlag
        }
        if finished { finishAnswer() }
        return report
    }

    public func close() {
        finishAnswer()
        device.close()
    }

    /// Logs the answer being read, if any: as data when its parts are numbered in order and a CRC closes some
    /// prefix of them, raw otherwise.
    private func finishAnswer() {
        state.withLock { s in
            guard let reports = s.answer, !reports.isEmpty else { return }
            s.answer = nil
            let parts = reports.dropLast()
            let inOrder =
                reports.last?[7] == OTPHID.responsePendingFlag
                && parts.enumerated().allSatisfy { $0.element[7] == OTPHID.responsePendingFlag | UInt8($0.offset) }
            let bytes = parts.flatMap { $0.prefix(OTPHID.reportDataSize) }
            if inOrder,
                let length = (0...max(0, bytes.count - 2)).first(where: {
                    bytes.count >= $0 + 2
                        && OTPHID.checkCRC(bytes.prefix($0 + 2))
                })
            {
                log.append(FuzzAnswer(kind: 1, Array(bytes.prefix(length))))
            } else {
                log.append(FuzzAnswer(kind: 0, reports.flatMap { $0 }))
            }
        }
    }
}
