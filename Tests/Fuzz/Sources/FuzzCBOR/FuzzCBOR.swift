import FuzzSupport
import KeyKit

/// CBOR decoding. Invariants: whatever decodes re-encodes canonically, and that encoding decodes to the
/// same value (compared by encoding, since NaN is not equal to itself), also under the strict
/// canonical-keys limits; a getInfo parse of any value throws or succeeds, never crashes.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzBytes(data, size)
    let strict = CBOR.Limits(requireCanonicalKeys: true)
    _ = try? CBOR.decode(input, limits: strict)
    if let (prefix, end) = try? CBOR.decodePrefix(input) {
        fuzzCheck(end >= 1 && end <= input.count, "decodePrefix ended at \(end) of \(input.count)")
        fuzzCheck((try? CBOR.decode(Array(input[..<end]))) != nil, "a decoded prefix does not decode alone")
        _ = prefix.int
    }
    guard let value = try? CBOR.decode(input) else { return 0 }
    let encoded = value.encoded
    let again: CBOR
    do {
        again = try CBOR.decode(encoded, limits: strict)
    } catch {
        fuzzCheck(false, "the canonical encoding \(encoded.hex) of a decoded value does not decode: \(error)")
        return 0
    }
    fuzzCheck(again.encoded == encoded, "decode(encode(v)) encodes differently: \(encoded.hex)")
    _ = try? AuthenticatorInfo(cbor: value)
    return 0
}

@_cdecl("FuzzCBOR_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
