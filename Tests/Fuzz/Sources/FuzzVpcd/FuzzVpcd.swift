import FuzzSupport
import KeyKit
import VirtualKey

/// vpcd framing, as the bridge reads what pcscd's vpcd driver sends: the input is the byte stream.
/// Invariants: deframing consumes whole frames only, and framing the payloads again gives back exactly the
/// consumed bytes; what is left is less than one frame. Every payload is then interpreted and served by a
/// fresh virtual key, as the bridge does: every answer has a status word and fits a frame.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let stream = fuzzBytes(data, size)
    let (payloads, consumed) = VpcdProtocol.deframe(stream)
    fuzzCheck(consumed >= 0 && consumed <= stream.count, "consumed \(consumed) of \(stream.count)")
    var reframed = [UInt8]()
    for payload in payloads {
        do {
            reframed += try VpcdProtocol.frame(payload)
        } catch {
            fuzzCheck(false, "a deframed payload of \(payload.count) bytes does not frame: \(error)")
        }
    }
    fuzzCheck(reframed == Array(stream[..<consumed]), "framing the payloads again differs from the stream")
    let left = stream.count - consumed
    if left >= 2 {
        let declared = Int(stream[consumed]) << 8 | Int(stream[consumed + 1])
        fuzzCheck(declared > left - 2, "a whole frame of \(declared) bytes was left unread")
    }

    let key = VirtualKey(touchDelay: 0, userPresenceDelay: 0)
    for payload in payloads.prefix(8) {
        let message: VpcdProtocol.Message
        do {
            message = try VpcdProtocol.message(payload)
        } catch {
            fuzzCheck(payload.count <= 1, "a payload of \(payload.count) bytes refused: \(error)")
            continue
        }
        switch message {
        case .control(.getATR):
            fuzzCheck(payload == [VpcdProtocol.Control.getATR.rawValue], "getATR from \(payload.hex)")
        case .control:
            key.powerCycle()
        case .apdu(let command):
            fuzzCheck(command == payload && payload.count >= 2, "an APDU of \(payload.count) bytes")
            let answer = key.process(command)
            fuzzCheck(answer.count >= 2, "the key answered \(answer.count) bytes to \(command.hex)")
            fuzzCheck((try? VpcdProtocol.frame(answer)) != nil, "an answer of \(answer.count) bytes does not frame")
        }
    }
    return 0
}

@_cdecl("FuzzVpcd_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
