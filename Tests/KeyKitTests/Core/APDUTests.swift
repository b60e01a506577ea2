import KeyKit
import Testing

/// Hex to bytes for expectations written the way APDUs are usually printed.
private func bytes(_ hex: String) -> [UInt8] {
    try! Hex.decode(hex)
}

private func isInvalidAPDU(_ error: SmartCardError?) -> Bool {
    if case .invalidAPDU = error { return true }
    return false
}

@Suite struct APDUEncodingTests {
    @Test func case1ShortIsTheHeaderOnly() throws {
        let apdu = APDU(cla: 0x80, ins: 0xCA, p1: 0x9F, p2: 0x7F)
        #expect(apdu.apduCase == .one)
        #expect(try apdu.encoded() == bytes("80 CA 9F 7F"))
        #expect(try apdu.encoded(.short) == bytes("80 CA 9F 7F"))
    }

    @Test func case2ShortCarriesLe() throws {
        let apdu = APDU(ins: 0xB0, le: 16)
        #expect(apdu.apduCase == .two)
        #expect(try apdu.encoded() == bytes("00 B0 00 00 10"))
        #expect(try APDU(ins: 0xB0, le: 1).encoded() == bytes("00 B0 00 00 01"))
        #expect(try APDU(ins: 0xB0, le: 255).encoded() == bytes("00 B0 00 00 FF"))
    }

    @Test func le256IsEncodedAsZeroInShortForm() throws {
        let apdu = APDU(ins: 0xB0, le: 256)
        #expect(!apdu.needsExtended)
        #expect(try apdu.encoded() == bytes("00 B0 00 00 00"))
        #expect(try apdu.encoded(.short) == bytes("00 B0 00 00 00"))
    }

    @Test func case3ShortCarriesLcAndData() throws {
        let apdu = APDU(ins: 0xDA, p1: 0x01, p2: 0x02, data: [0xAA, 0xBB, 0xCC])
        #expect(apdu.apduCase == .three)
        #expect(try apdu.encoded() == bytes("00 DA 01 02 03 AA BB CC"))
    }

    @Test func case4ShortCarriesLcDataAndLe() throws {
        let apdu = APDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: [0x01, 0x02], le: 256)
        #expect(apdu.apduCase == .four)
        #expect(try apdu.encoded() == bytes("00 A4 04 00 02 01 02 00"))
        #expect(try APDU(ins: 0x20, data: [0x31], le: 8).encoded() == bytes("00 20 00 00 01 31 08"))
    }

    @Test func case3ShortWith255BytesStaysShort() throws {
        let data = [UInt8](repeating: 0x5A, count: 255)
        let apdu = APDU(ins: 0xDB, data: data)
        #expect(!apdu.needsExtended)
        #expect(try apdu.encoded() == bytes("00 DB 00 00 FF") + data)
    }

    @Test func case1ExtendedIsStillTheHeaderOnly() throws {
        #expect(try APDU(ins: 0xCA).encoded(.extended) == bytes("00 CA 00 00"))
    }

    @Test func case2ExtendedIsZeroThenTwoLeBytes() throws {
        #expect(try APDU(ins: 0xB0, le: 300).encoded() == bytes("00 B0 00 00 00 01 2C"))
        #expect(try APDU(ins: 0xB0, le: 257).encoded() == bytes("00 B0 00 00 00 01 01"))
        // Forced extended with a small Le.
        #expect(try APDU(ins: 0xB0, le: 256).encoded(.extended) == bytes("00 B0 00 00 00 01 00"))
        #expect(try APDU(ins: 0xB0, le: 5).encoded(.extended) == bytes("00 B0 00 00 00 00 05"))
    }

    @Test func le65536IsTwoZeroBytesInExtendedForm() throws {
        let apdu = APDU(ins: 0xB0, le: 65536)
        #expect(apdu.needsExtended)
        #expect(try apdu.encoded() == bytes("00 B0 00 00 00 00 00"))
        let withData = APDU(ins: 0xCB, data: [0x5C, 0x00], le: 65536)
        #expect(try withData.encoded() == bytes("00 CB 00 00 00 00 02 5C 00 00 00"))
    }

    @Test func case3ExtendedHasThreeByteLc() throws {
        let data = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let apdu = APDU(ins: 0xDB, p1: 0x3F, p2: 0xFF, data: data)
        #expect(apdu.needsExtended)
        #expect(try apdu.encoded() == bytes("00 DB 3F FF 00 01 2C") + data)
        #expect(try APDU(ins: 0xDA, data: [0x01]).encoded(.extended) == bytes("00 DA 00 00 00 00 01 01"))
    }

    @Test func case4ExtendedHasThreeByteLcAndTwoByteLe() throws {
        let data = [UInt8](repeating: 0x11, count: 300)
        let apdu = APDU(ins: 0x87, p1: 0x07, p2: 0x9A, data: data, le: 1000)
        #expect(apdu.apduCase == .four)
        #expect(try apdu.encoded() == bytes("00 87 07 9A 00 01 2C") + data + bytes("03 E8"))
        // Short data, long Le: still extended for both lengths.
        #expect(try APDU(ins: 0x87, data: [0xAB], le: 512).encoded() == bytes("00 87 00 00 00 00 01 AB 02 00"))
        // Forced extended with short-sized fields.
        #expect(
            try APDU(ins: 0x87, data: [0xAB, 0xCD], le: 256).encoded(.extended)
                == bytes("00 87 00 00 00 00 02 AB CD 01 00"))
    }

    @Test func maximumExtendedDataLength() throws {
        let data = [UInt8](repeating: 0x42, count: 65535)
        let encoded = try APDU(ins: 0xDB, data: data).encoded()
        #expect(encoded.count == 4 + 3 + 65535)
        #expect(Array(encoded[4..<7]) == bytes("00 FF FF"))
    }

    @Test(arguments: [0, -1, 65537, 100_000])
    func leOutOfRangeIsRejected(le: Int) {
        for encoding in [APDU.Encoding.automatic, .short, .extended] {
            let error = #expect(throws: SmartCardError.self) { try APDU(ins: 0xB0, le: le).encoded(encoding) }
            #expect(isInvalidAPDU(error))
        }
    }

    @Test func dataTooLongForShortIsRejected() {
        let error = #expect(throws: SmartCardError.self) {
            try APDU(ins: 0xDB, data: [UInt8](repeating: 0, count: 256)).encoded(.short)
        }
        #expect(isInvalidAPDU(error))
    }

    @Test func leTooLargeForShortIsRejected() {
        let error = #expect(throws: SmartCardError.self) { try APDU(ins: 0xB0, le: 257).encoded(.short) }
        #expect(isInvalidAPDU(error))
    }

    @Test func dataBeyond65535IsRejectedInEveryEncoding() {
        let apdu = APDU(ins: 0xDB, data: [UInt8](repeating: 0, count: 65536))
        for encoding in [APDU.Encoding.automatic, .extended] {
            let error = #expect(throws: SmartCardError.self) { try apdu.encoded(encoding) }
            #expect(isInvalidAPDU(error))
        }
    }

    @Test func selectByAID() throws {
        let apdu = APDU.select(aid: AID.management)
        #expect(try apdu.encoded() == bytes("00 A4 04 00 08 A0 00 00 05 27 47 11 17"))
        #expect(apdu.description == "00A4040008A000000527471117")
    }

    @Test func descriptionIsUppercaseHexOfTheEncoding() {
        #expect(APDU(ins: 0xb0, le: 256).description == "00B0000000")
        // Unencodable commands still describe themselves (header and data).
        #expect(APDU(ins: 0xB0, data: [0xAB], le: 0).description == "00B00000AB")
    }
}

@Suite struct APDUChainingTests {
    @Test func sixHundredBytesSplitInto255And255And90() throws {
        let data = (0..<600).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let apdu = APDU(cla: 0x00, ins: 0xDB, p1: 0x3F, p2: 0xFF, data: data, le: 256)
        let parts = apdu.chained()
        try #require(parts.count == 3)
        #expect(parts.map(\.data.count) == [255, 255, 90])
        #expect(parts.map(\.cla) == [0x10, 0x10, 0x00])
        #expect(parts.map(\.le) == [nil, nil, 256])
        #expect(parts.allSatisfy { $0.ins == 0xDB && $0.p1 == 0x3F && $0.p2 == 0xFF })
        #expect(parts.flatMap(\.data) == data)
        // Every part fits a short APDU.
        #expect(try parts[0].encoded(.short) == bytes("10 DB 3F FF FF") + Array(data[0..<255]))
        #expect(try parts[1].encoded(.short) == bytes("10 DB 3F FF FF") + Array(data[255..<510]))
        #expect(try parts[2].encoded(.short) == bytes("00 DB 3F FF 5A") + Array(data[510...]) + [0x00])
    }

    @Test func chainingBitIsOredIntoAProprietaryClass() {
        let parts = APDU(cla: 0x80, ins: 0x01, data: [UInt8](repeating: 1, count: 300)).chained()
        #expect(parts.map(\.cla) == [0x90, 0x80])
        #expect(parts.map(\.le) == [nil, nil])
    }

    @Test func exactMultipleOfTheChunkSize() {
        let parts = APDU(ins: 0xDB, data: [UInt8](repeating: 2, count: 510), le: 10).chained()
        #expect(parts.map(\.data.count) == [255, 255])
        #expect(parts.map(\.cla) == [0x10, 0x00])
        #expect(parts.map(\.le) == [nil, 10])
    }

    @Test func shortDataIsNotChained() {
        let apdu = APDU(ins: 0xDB, data: [UInt8](repeating: 3, count: 255), le: 4)
        #expect(apdu.chained() == [apdu])
        #expect(APDU(ins: 0xCA, le: 1000).chained() == [APDU(ins: 0xCA, le: 1000)])
    }

    @Test func customChunkSize() {
        let parts = APDU(ins: 0xDB, data: Array(1...10)).chained(maxChunk: 4)
        #expect(parts.map(\.data) == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]])
        #expect(parts.map(\.cla) == [0x10, 0x10, 0x00])
    }
}

@Suite struct APDUParsingTests {
    static let samples: [(APDU, APDU.Encoding)] = [
        (APDU(cla: 0x80, ins: 0xCA, p1: 0x9F, p2: 0x7F), .short),
        (APDU(ins: 0xB0, le: 1), .short),
        (APDU(ins: 0xB0, le: 255), .short),
        (APDU(ins: 0xB0, le: 256), .short),
        (APDU(ins: 0xDA, data: [0x01]), .short),
        (APDU(ins: 0xDA, data: [UInt8](repeating: 9, count: 255)), .short),
        (APDU(ins: 0xA4, p1: 4, data: AID.oath, le: 256), .short),
        (APDU(ins: 0x20, data: [0x31, 0x32], le: 1), .short),
        (APDU(ins: 0xB0, le: 256), .extended),
        (APDU(ins: 0xB0, le: 1), .extended),
        (APDU(ins: 0xB0, le: 300), .extended),
        (APDU(ins: 0xB0, le: 65535), .extended),
        (APDU(ins: 0xB0, le: 65536), .extended),
        (APDU(ins: 0xDA, data: [0x01]), .extended),
        (APDU(ins: 0xDA, data: [UInt8](repeating: 7, count: 300)), .extended),
        (APDU(ins: 0xDA, data: [UInt8](repeating: 7, count: 65535)), .extended),
        (APDU(ins: 0x87, data: [0xAB], le: 256), .extended),
        (APDU(ins: 0x87, data: [UInt8](repeating: 5, count: 1000), le: 65536), .extended),
        (APDU(ins: 0x87, data: [UInt8](repeating: 5, count: 256), le: 2), .extended),
    ]

    @Test func everyCaseRoundTrips() throws {
        for (apdu, encoding) in Self.samples {
            let encoded = try apdu.encoded(encoding)
            let parsed = try APDU(parsing: encoded)
            #expect(parsed == apdu, "\(encoding) \(apdu)")
            #expect(parsed.apduCase == apdu.apduCase)
            #expect(try parsed.encoded(encoding) == encoded)
        }
    }

    @Test func parsesFieldsOfAKnownCommand() throws {
        let apdu = try APDU(parsing: bytes("84 A4 04 0C 03 01 02 03 7F"))
        #expect(apdu.cla == 0x84)
        #expect(apdu.ins == 0xA4)
        #expect(apdu.p1 == 0x04)
        #expect(apdu.p2 == 0x0C)
        #expect(apdu.data == [1, 2, 3])
        #expect(apdu.le == 0x7F)
    }

    @Test(arguments: [
        "",  // nothing
        "00 A4 04",  // short header
        "00 A4 04 00 05 01 02",  // Lc 5, two bytes follow
        "00 A4 04 00 02 01 02 03 04",  // Lc 2, four bytes follow
        "00 A4 04 00 00 01",  // extended marker with one length byte
        "00 A4 04 00 00 00 00 AA",  // extended Lc 0 with data
        "00 A4 04 00 00 00 05 01 02",  // extended Lc 5, two bytes follow
        "00 A4 04 00 00 00 02 01 02 03",  // extended Lc 2, then a one-byte Le
        "00 A4 04 00 00 00 02 01 02 03 04 05",  // extended Lc 2, then three bytes
    ])
    func malformedLengthsAreRejected(hex: String) {
        let error = #expect(throws: SmartCardError.self) { try APDU(parsing: bytes(hex)) }
        #expect(isInvalidAPDU(error))
    }

    @Test func truncationsOfACommandAreRejectedUnlessTheyFormAnotherValidCase() throws {
        let original = APDU(ins: 0x87, data: [UInt8](repeating: 0xEE, count: 20), le: 300)
        let full = try original.encoded()
        #expect(full.count == 4 + 3 + 20 + 2)
        var parsed = [Int: APDU]()
        for n in 0..<full.count {
            if let apdu = try? APDU(parsing: Array(full.prefix(n))) { parsed[n] = apdu }
        }
        // ISO 7816 framing makes exactly these prefixes valid commands of another case.
        #expect(parsed.keys.sorted() == [4, 5, 7, 27])
        #expect(parsed[4] == APDU(ins: 0x87))
        #expect(parsed[5] == APDU(ins: 0x87, le: 256))
        #expect(parsed[7] == APDU(ins: 0x87, le: 20))
        #expect(parsed[27] == APDU(ins: 0x87, data: [UInt8](repeating: 0xEE, count: 20)))
        #expect(try APDU(parsing: full) == original)
    }

    /// Random commands never crash the parser, and whatever parses encodes back to the same bytes.
    @Test func randomCommandsParseAndReEncodeExactly() throws {
        var rng = SplitMix64(seed: 0x5EED_A9D0)
        var parsed = 0
        for _ in 0..<20_000 {
            var bytes = (0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let tail = Int.random(in: 0...12, using: &rng)
            if tail > 0 {
                // Bias the first length byte towards values that can match the length.
                bytes.append(
                    Bool.random(using: &rng)
                        ? UInt8.random(in: 0...8, using: &rng)
                        : UInt8.random(in: 0...255, using: &rng))
                for _ in 1..<max(tail, 1) {
                    bytes.append(Bool.random(using: &rng) ? 0 : UInt8.random(in: 0...8, using: &rng))
                }
            }
            guard let apdu = try? APDU(parsing: bytes) else { continue }
            parsed += 1
            let extended = bytes.count > 5 && bytes[4] == 0
            #expect(try apdu.encoded(extended ? .extended : .short) == bytes, "\(bytes.hex)")
        }
        // The generator must exercise the successful paths too.
        #expect(parsed > 1000)
    }
}

/// A small deterministic generator, so fuzz loops are reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
