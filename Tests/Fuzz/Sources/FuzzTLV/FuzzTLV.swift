import FuzzSupport
import KeyKit

/// BER-TLV and simple-TLV parsing. Invariants: a sequence that parses re-encodes to TLVs that parse to the
/// same sequence; a single TLV parsed at an offset ends inside the input; nested values parse the same way
/// (a few levels down); the management application's device information accepts or rejects any TLVs.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzBytes(data, size)
    for mode in [TLV.TagMode.ber, .simple] {
        if let (tlv, next) = try? TLV.parse(input, mode: mode) {
            fuzzCheck(next > 0 && next <= input.count, "parse ended at \(next) of \(input.count)")
            fuzzCheck(tlv.value.count <= next, "a value longer than what was read")
        }
        check(input, mode: mode, depth: 0)
    }
    if let tlvs = try? TLV.parseAll(input, mode: .simple) {
        _ = try? DeviceInfo(tlvs: tlvs.dictionary, defaultVersion: Version(5, 0, 0))
    }
    return 0
}

private func check(_ bytes: [UInt8], mode: TLV.TagMode, depth: Int) {
    guard depth < 4, let tlvs = try? TLV.parseAll(bytes, mode: mode) else { return }
    let encoded = tlvs.flatMap(\.encoded)
    do {
        let again = try TLV.parseAll(encoded, mode: mode)
        fuzzCheck(again == tlvs, "parse(encode(tlvs)) differs for \(bytes.hex)")
    } catch {
        fuzzCheck(false, "re-encoded TLVs \(encoded.hex) do not parse: \(error)")
    }
    for tlv in tlvs where tlv.isConstructed || mode == .simple {
        _ = tlv.tagBytes
        check(tlv.value, mode: mode, depth: depth + 1)
    }
}

@_cdecl("FuzzTLV_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
