import FuzzSupport
import KeyKit

/// NDEF messages and record content. Invariants: a message that parses encodes to one that parses to the
/// same records; a URI or text record's content survives being rebuilt with `NDEFRecord.uri` / `.text`;
/// finding the OTP and reading a capability container throw or succeed, never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzBytes(data, size)
    _ = try? NDEFSession.CapabilityContainer(parsing: input)
    guard let records = try? NDEFMessage.parse(input) else { return 0 }
    fuzzCheck(!records.isEmpty, "a message without records")
    let encoded = NDEFMessage.encode(records)
    do {
        let again = try NDEFMessage.parse(encoded)
        fuzzCheck(again == records, "parse(encode(records)) differs for \(input.hex)")
    } catch {
        fuzzCheck(false, "re-encoded records \(encoded.hex) do not parse: \(error)")
    }
    for record in records {
        guard let content = try? record.content() else { continue }
        switch content {
        case .uri(let uri):
            fuzzCheck((try? NDEFRecord.uri(uri).content()) == .uri(uri), "URI \(uri) does not round-trip")
        case .text(let text, let language, let utf16):
            if !utf16 && language.utf8.count <= 63 {
                fuzzCheck(
                    (try? NDEFRecord.text(text, language: language).content()) == content,
                    "text record does not round-trip")
            }
        case .other:
            fuzzCheck(
                record.tnf != NDEFRecord.tnfWellKnown || (record.type != [0x55] && record.type != [0x54]),
                "a URI or text record read as other")
        }
    }
    if let otp = try? NDEFOTP.extract(from: records) {
        fuzzCheck(!otp.isEmpty, "an empty OTP")
        _ = OTPClassifier.classify(otp)
    }
    return 0
}

@_cdecl("FuzzNDEF_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
