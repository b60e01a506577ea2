import FuzzSupport
import KeyKit

/// Response APDUs and status words from raw card bytes. Invariants: anything of two bytes or more splits
/// into data and SW1 SW2 that join back to the input; the status word's bytes, text and retry counter agree
/// with its raw value; `checked()` passes exactly the 9000 answers.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzBytes(data, size)
    let response: Response
    do {
        response = try Response(raw: input)
    } catch {
        fuzzCheck(input.count < 2, "\(input.count) bytes rejected: \(error)")
        return 0
    }
    fuzzCheck(response.bytes == input, "the response does not join back to its bytes")
    fuzzCheck(response.data.count == input.count - 2, "data of \(response.data.count) bytes")
    let sw = response.status
    fuzzCheck(
        StatusWord(sw1: sw.sw1, sw2: sw.sw2) == sw && StatusWord(rawValue: sw.rawValue) == sw,
        "status word bytes and raw value disagree")
    fuzzCheck(sw.hexString.count == 4 && sw.description == "SW=" + sw.hexString, sw.description)
    fuzzCheck(sw.meaning.key.hasPrefix("sw."), "no meaning for \(sw.hexString)")
    if let retries = sw.retriesLeft { fuzzCheck((0...15).contains(retries), "\(retries) retries") }
    do {
        let data = try response.checked()
        fuzzCheck(sw.isSuccess && data == response.data, "checked() passed \(sw)")
    } catch {
        fuzzCheck(!sw.isSuccess && error == .status(sw), "checked() threw \(error) for \(sw)")
    }
    _ = Version(bytes: response.data)
    return 0
}

@_cdecl("FuzzResponse_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
