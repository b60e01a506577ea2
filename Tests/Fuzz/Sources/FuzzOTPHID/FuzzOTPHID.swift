import FuzzSupport
import KeyKit
import VirtualKey

/// The OTP HID parsers and the virtual key's OTP HID side.
///
/// The first byte chooses the mode. Reports mode: the rest, cut into reports of 8 bytes (the last may be
/// shorter), goes through the report classifier, the status parser and the response reader, and the
/// gathered response through the CRC checks; nothing may crash, a report of 8 bytes always classifies, and
/// what the checks accept has the right residual. Frame mode: the rest (at most 64 bytes) is a payload; its
/// frame's reports put back together give the frame, and the CRC an answer carries checks. Device mode: the
/// rest, as reports, is written to a fresh virtual key's OTP HID interface, which always answers 8 bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var reader = FuzzReader(fuzzBytes(data, size))
    switch reader.byte() % 3 {
    case 0: checkReports(reader.rest())
    case 1: checkFrame(reader.rest())
    default: checkDevice(reader.rest())
    }
    return 0
}

private func chunks(_ bytes: [UInt8]) -> [[UInt8]] {
    stride(from: 0, to: bytes.count, by: 8).map { Array(bytes[$0..<min($0 + 8, bytes.count)]) }
}

private func checkReports(_ bytes: [UInt8]) {
    var response = OTPHID.ResponseReader()
    var whole: [UInt8]?
    for report in chunks(bytes) {
        do {
            switch try OTPHID.classify(report: report) {
            case .response(let sequence, let part):
                fuzzCheck(part.count == 7 && sequence <= OTPHID.sequenceMask, "a response part \(part)")
                if whole == nil { whole = try? response.add(sequence: sequence, part: part) }
            case .status(let status):
                fuzzCheck(status.version == Version(Int(report[1]), Int(report[2]), Int(report[3])), "status \(report)")
            case .busy:
                fuzzCheck(report[7] != 0 && report[7] & OTPHID.responsePendingFlag == 0, "busy \(report)")
            }
            fuzzCheck(report.count == 8, "a report of \(report.count) bytes classified")
        } catch {
            fuzzCheck(report.count != 8, "an 8-byte report refused: \(error)")
        }
    }
    fuzzCheck(response.data.count <= 12 * 7, "a response of \(response.data.count) bytes")
    let answer = whole ?? bytes
    for length in [4, 20, Int(answer.first ?? 0) + 1] {
        if let checked = try? OTPHID.checkedResponse(answer, length: length) {
            fuzzCheck(checked.count == length && OTPHID.checkCRC(answer.prefix(length + 2)), "accepted \(answer)")
        }
    }
    if let config = try? OTPHID.checkedConfigResponse(answer) {
        fuzzCheck(config.count == Int(config[0]) + 1, "device information of \(config.count) bytes")
    }
}

private func checkFrame(_ bytes: [UInt8]) {
    let payload = Array(bytes.prefix(OTPHID.payloadSize))
    let slot = bytes.count > OTPHID.payloadSize ? bytes[OTPHID.payloadSize] : 0x30
    guard let frame = try? OTPHID.frame(slot: slot, data: payload) else {
        fuzzCheck(false, "a payload of \(payload.count) bytes refused")
        return
    }
    var rebuilt = [UInt8](repeating: 0, count: OTPHID.frameSize)
    let reports = OTPHID.reports(frame: frame)
    fuzzCheck(reports.first?[7] == 0x80 && reports.last?[7] == 0x89, "first and last parts must go")
    for r in reports {
        fuzzCheck(r.count == 8 && r[7] & OTPHID.writeFlag != 0, "a written part \(r)")
        let n = Int(r[7] & OTPHID.sequenceMask)
        for i in 0..<7 where n * 7 + i < OTPHID.frameSize { rebuilt[n * 7 + i] = r[i] }
    }
    fuzzCheck(rebuilt == frame, "the parts do not give the frame back")
    let crc = OTPHID.crc16(frame[0..<64])
    fuzzCheck(frame[64] == slot && frame[65] == UInt8(crc & 0xFF) && frame[66] == UInt8(crc >> 8), "frame trailer")
    let answered = OTPHID.appendingResponseCRC(payload)
    fuzzCheck((try? OTPHID.checkedResponse(answered, length: payload.count)) == payload, "an answer's CRC")
}

private func checkDevice(_ bytes: [UInt8]) {
    let device = VirtualKey(touchDelay: 0).makeOTPHIDDevice()
    for report in chunks(bytes) {
        _ = try? device.setFeature(report)
        if let answer = try? device.getFeature() {
            fuzzCheck(answer.count == 8, "the virtual key answered \(answer.count) bytes")
        }
    }
    device.close()
}

@_cdecl("FuzzOTPHID_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
