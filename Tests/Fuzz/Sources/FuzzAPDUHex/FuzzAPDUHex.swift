import FuzzSupport
import KeyKit

/// The APDU console's input: hex text (with spaces, colons and 0x prefixes) to bytes, and bytes to a command
/// APDU. Invariants: decoded hex encodes back to the same bytes; a parsed APDU encodes (short or extended,
/// as it needs) to bytes that parse to the same APDU. Both the text and the raw input are tried as bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzBytes(data, size)
    let text = String(decoding: input, as: UTF8.self)
    if let bytes = try? Hex.decode(text) {
        let hex = Hex.encode(bytes, uppercase: input.first.map { $0 & 1 == 1 } ?? false)
        fuzzCheck(hex.count == bytes.count * 2, "hex of \(bytes.count) bytes has \(hex.count) digits")
        fuzzCheck((try? Hex.decode(hex)) == bytes, "hex round trip of \(text)")
        checkAPDU(bytes)
    }
    checkAPDU(input)
    return 0
}

private func checkAPDU(_ bytes: [UInt8]) {
    guard let apdu = try? APDU(parsing: bytes) else { return }
    fuzzCheck(apdu.data.count <= 65535, "\(apdu.data.count) data bytes")
    if let le = apdu.le { fuzzCheck((1...65536).contains(le), "Le \(le)") }
    let encoded: [UInt8]
    do {
        encoded = try apdu.encoded()
    } catch {
        fuzzCheck(false, "a parsed APDU \(bytes.hex) does not encode: \(error)")
        return
    }
    fuzzCheck((try? APDU(parsing: encoded)) == apdu, "APDU \(bytes.hex) encodes to \(encoded.hex), another APDU")
    if !apdu.needsExtended {
        fuzzCheck(encoded == (try? apdu.encoded(.short)), "automatic and short encodings differ")
    }
    fuzzCheck((try? APDU(parsing: apdu.encoded(.extended))) == apdu, "the extended encoding of \(bytes.hex)")
    _ = apdu.description
    for part in apdu.chained() { fuzzCheck(part.data.count <= max(255, apdu.data.count), "a chained part") }
}

@_cdecl("FuzzAPDUHex_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
