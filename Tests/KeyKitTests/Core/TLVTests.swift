import KeyKit
import Testing

private func bytes(_ hex: String) -> [UInt8] {
    try! Hex.decode(hex)
}

@Suite struct TLVParsingTests {
    @Test func singleByteTag() throws {
        let (tlv, next) = try TLV.parse(bytes("5A 02 01 02 FF"))
        #expect(tlv.tag == 0x5A)
        #expect(tlv.value == [0x01, 0x02])
        #expect(next == 4)
        #expect(tlv.tagBytes == [0x5A])
        #expect(!tlv.isConstructed)
    }

    @Test func emptyValue() throws {
        let (tlv, next) = try TLV.parse(bytes("80 00"))
        #expect(tlv == TLV(0x80, []))
        #expect(next == 2)
    }

    @Test func twoByteTags() throws {
        let (key, next) = try TLV.parse(bytes("7F 49 03 86 01 04"))
        #expect(key.tag == 0x7F49)
        #expect(key.value == bytes("86 01 04"))
        #expect(next == 6)
        #expect(key.tagBytes == [0x7F, 0x49])
        #expect(key.isConstructed)

        let (lang, _) = try TLV.parse(bytes("5F 2D 02 65 6E"))
        #expect(lang.tag == 0x5F2D)
        #expect(lang.value == Array("en".utf8))
        #expect(!lang.isConstructed)
        #expect(lang.encoded == bytes("5F 2D 02 65 6E"))
    }

    @Test func threeAndFourByteTags() throws {
        let (three, n3) = try TLV.parse(bytes("5F 81 01 01 AA"))
        #expect(three.tag == 0x5F8101)
        #expect(three.value == [0xAA])
        #expect(n3 == 5)
        #expect(three.encoded == bytes("5F 81 01 01 AA"))

        let (four, n4) = try TLV.parse(bytes("1F 81 82 03 00"))
        #expect(four.tag == 0x1F81_8203)
        #expect(four.value.isEmpty)
        #expect(n4 == 5)
        #expect(four.tagBytes == bytes("1F 81 82 03"))
    }

    @Test func tagOfFiveBytesIsRejected() {
        #expect(throws: TLV.DecodeError.tagTooLong(offset: 0)) { try TLV.parse(bytes("1F 81 82 83 04 00")) }
        #expect(throws: TLV.DecodeError.tagTooLong(offset: 2)) {
            try TLV.parseAll(bytes("01 00 7F 81 82 83 04 00"))
        }
    }

    @Test(arguments: [
        (0, "00"), (1, "01"), (0x7F, "7F"),
        (0x80, "81 80"), (0xFF, "81 FF"),
        (0x100, "82 01 00"), (300, "82 01 2C"), (0xFFFF, "82 FF FF"),
        (0x10000, "83 01 00 00"), (70_000, "83 01 11 70"),
    ])
    func lengthEncodings(length: Int, hex: String) throws {
        #expect(TLV.lengthBytes(length) == bytes(hex))
        let value = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
        let tlv = TLV(0x53, value)
        let encoded = tlv.encoded
        #expect(encoded == [0x53] + bytes(hex) + value)
        let (parsed, next) = try TLV.parse(encoded)
        #expect(parsed == tlv)
        #expect(next == encoded.count)
    }

    @Test func fourByteLengthFormIsEncodedAndParsed() throws {
        #expect(TLV.lengthBytes(0x0100_0000) == bytes("84 01 00 00 00"))
        // A non-minimal long form still parses.
        let (tlv, _) = try TLV.parse(bytes("53 84 00 00 00 02 AB CD"))
        #expect(tlv.value == bytes("AB CD"))
        let (short, _) = try TLV.parse(bytes("53 81 01 EE"))
        #expect(short.value == [0xEE])
    }

    @Test func nestedConstructedValues() throws {
        let inner = TLV(0x7C, children: [TLV(0x81, [0x01, 0x02]), TLV(0x82, [])])
        let outer = TLV(0x7F49, children: [TLV(0x86, [0x04]), inner])
        #expect(inner.encoded == bytes("7C 06 81 02 01 02 82 00"))
        #expect(outer.encoded == bytes("7F 49 0B 86 01 04 7C 06 81 02 01 02 82 00"))

        let (parsed, next) = try TLV.parse(outer.encoded)
        #expect(next == outer.encoded.count)
        #expect(parsed == outer)
        let children = try parsed.children()
        #expect(children == [TLV(0x86, [0x04]), inner])
        let grandchildren = try children[1].children()
        #expect(grandchildren == [TLV(0x81, [0x01, 0x02]), TLV(0x82, [])])
        #expect(children[1].isConstructed)
        #expect(!grandchildren[0].isConstructed)
    }

    @Test func parseAllAndReEncodeIsExact() throws {
        let big = [UInt8](repeating: 0x33, count: 200)
        let encoding =
            bytes("4F 07 A0 00 00 05 27 21 01") + bytes("5F 2D 02 65 6E")
            + [0x53, 0x81, 0xC8] + big + bytes("7F 49 05 86 03 01 02 03") + bytes("80 00")
        let tlvs = try TLV.parseAll(encoding)
        #expect(tlvs.map(\.tag) == [0x4F, 0x5F2D, 0x53, 0x7F49, 0x80])
        #expect(tlvs[2].value == big)
        #expect(tlvs.flatMap(\.encoded) == encoding)
        #expect(try TLV.parseAll([]) == [])
    }

    @Test func parseAtAnOffset() throws {
        let encoding = bytes("01 01 AA 02 02 BB CC")
        let (second, next) = try TLV.parse(encoding, at: 3)
        #expect(second == TLV(0x02, [0xBB, 0xCC]))
        #expect(next == 7)
        #expect(throws: TLV.DecodeError.truncatedTag(offset: 7)) { try TLV.parse(encoding, at: 7) }
    }

    @Test func valueLookupAndDictionary() throws {
        let tlvs = try TLV.parseAll(bytes("01 01 AA 02 00 01 02 BB CC"))
        #expect(tlvs.value(for: 0x01) == [0xAA])
        #expect(tlvs.value(for: 0x02) == [])
        #expect(tlvs.value(for: 0x03) == nil)
        #expect(tlvs.dictionary == [0x01: [0xBB, 0xCC], 0x02: []])
    }
}

@Suite struct TLVMalformedTests {
    @Test func emptyInputIsATruncatedTag() {
        #expect(throws: TLV.DecodeError.truncatedTag(offset: 0)) { try TLV.parse([]) }
    }

    @Test func truncatedMultiByteTag() {
        #expect(throws: TLV.DecodeError.truncatedTag(offset: 0)) { try TLV.parse([0x7F]) }
        #expect(throws: TLV.DecodeError.truncatedTag(offset: 0)) { try TLV.parse([0x5F, 0x81]) }
        #expect(throws: TLV.DecodeError.truncatedTag(offset: 3)) { try TLV.parseAll(bytes("01 01 00 7F")) }
    }

    @Test func truncatedLength() {
        #expect(throws: TLV.DecodeError.truncatedLength(offset: 1)) { try TLV.parse([0x5A]) }
        #expect(throws: TLV.DecodeError.truncatedLength(offset: 2)) { try TLV.parse([0x7F, 0x49]) }
        // Long form announcing more length bytes than there are: the offset is the 0x8n byte.
        #expect(throws: TLV.DecodeError.truncatedLength(offset: 1)) { try TLV.parse([0x5A, 0x81]) }
        #expect(throws: TLV.DecodeError.truncatedLength(offset: 1)) { try TLV.parse([0x5A, 0x82, 0x01]) }
        #expect(throws: TLV.DecodeError.truncatedLength(offset: 2)) { try TLV.parse([0x7F, 0x49, 0x83, 0, 0]) }
    }

    @Test func indefiniteLengthIsRejected() {
        #expect(throws: TLV.DecodeError.indefiniteLength(offset: 1)) { try TLV.parse(bytes("30 80 01 00 00 00")) }
        #expect(throws: TLV.DecodeError.indefiniteLength(offset: 2)) { try TLV.parse(bytes("7F 21 80 00 00")) }
    }

    @Test(arguments: [0x85, 0x86, 0x88, 0xFF] as [UInt8])
    func lengthOfFiveOrMoreBytesIsRejected(first: UInt8) {
        let input = [0x5A, first] + [UInt8](repeating: 0, count: 10)
        #expect(throws: TLV.DecodeError.lengthTooLong(offset: 1)) { try TLV.parse(input) }
    }

    @Test func truncatedValue() {
        #expect(throws: TLV.DecodeError.truncatedValue(offset: 2, needed: 3, available: 2)) {
            try TLV.parse(bytes("5A 03 01 02"))
        }
        #expect(throws: TLV.DecodeError.truncatedValue(offset: 4, needed: 0x100, available: 1)) {
            try TLV.parse(bytes("53 82 01 00 FF"))
        }
        #expect(throws: TLV.DecodeError.truncatedValue(offset: 6, needed: 0xFFFF_FFFF, available: 0)) {
            try TLV.parse(bytes("53 84 FF FF FF FF"))
        }
        // Inside a sequence, the offset is absolute.
        #expect(throws: TLV.DecodeError.truncatedValue(offset: 5, needed: 2, available: 1)) {
            try TLV.parseAll(bytes("01 01 AA 02 02 BB"))
        }
    }

    @Test func malformedChildren() throws {
        // The outer TLV is fine; its value is not a TLV sequence.
        let (outer, _) = try TLV.parse(bytes("7C 03 81 05 00"))
        #expect(throws: TLV.DecodeError.truncatedValue(offset: 2, needed: 5, available: 1)) {
            try outer.children()
        }
    }

    @Test func errorsCarryTheirFacts() {
        #expect(TLV.DecodeError.indefiniteLength(offset: 3).textKey == "tlv.indefinite-length")
        #expect(TLV.DecodeError.indefiniteLength(offset: 3).arguments == ["offset": "3"])
        #expect(
            TLV.DecodeError.truncatedValue(offset: 2, needed: 3, available: 1).arguments
                == ["offset": "2", "needed": "3", "available": "1"])
        #expect(
            TLV.DecodeError.unexpectedTag(expected: 0x7F49, found: 0x53).arguments
                == ["expected": "7F49", "found": "53"])
    }
}

@Suite struct TLVSimpleModeTests {
    @Test func simpleModeReadsOneByteTags() throws {
        let input = bytes("1F 02 01 00")
        // BER: 1F 02 is a two-byte tag, then length 1.
        let (ber, _) = try TLV.parse(input)
        #expect(ber == TLV(0x1F02, [0x00]))
        // Simple: 1F is the whole tag, then length 2.
        let (simple, next) = try TLV.parse(input, mode: .simple)
        #expect(simple == TLV(0x1F, [0x01, 0x00]))
        #expect(next == 4)
    }

    @Test func simpleModeSequenceWithHighTags() throws {
        let input = bytes("7F 01 AA 1F 00 5F 02 BB CC")
        let tlvs = try TLV.parseAll(input, mode: .simple)
        #expect(tlvs == [TLV(0x7F, [0xAA]), TLV(0x1F, []), TLV(0x5F, [0xBB, 0xCC])])
        #expect(tlvs.flatMap(\.encoded) == input)
        // The same bytes are not a valid BER sequence (7F 01 is a tag, AA a bad length form).
        #expect(throws: TLV.DecodeError.lengthTooLong(offset: 2)) { try TLV.parseAll(input) }
    }

    @Test func simpleModeStillRejectsBadLengths() {
        #expect(throws: TLV.DecodeError.truncatedLength(offset: 1)) { try TLV.parse([0x1F], mode: .simple) }
        #expect(throws: TLV.DecodeError.indefiniteLength(offset: 1)) {
            try TLV.parse([0x1F, 0x80], mode: .simple)
        }
    }
}

@Suite struct TLVFuzzTests {
    static let sample: [UInt8] = {
        let nested = TLV(
            0x7F49,
            children: [
                TLV(0x86, [UInt8](repeating: 0x04, count: 65)),
                TLV(0x5F2D, Array("en".utf8)),
                TLV(0x7C, children: [TLV(0x81, []), TLV(0x82, [UInt8](repeating: 0xA5, count: 300))]),
            ])
        return nested.encoded + TLV(0x53, [0x01, 0x02]).encoded + TLV(0x1F8101, [0xFF]).encoded
    }()

    /// Every prefix of a valid encoding either parses or throws; none crashes. A prefix parses exactly when
    /// it ends on a TLV boundary, and then re-encodes to itself.
    @Test func everyPrefixParsesOrThrows() throws {
        let full = try TLV.parseAll(Self.sample)
        #expect(full.count == 3)
        let boundaries: Set<Int> = {
            var b: Set<Int> = [0]
            var end = 0
            for t in full { end += t.encoded.count; b.insert(end) }
            return b
        }()
        for n in 0...Self.sample.count {
            let prefix = Array(Self.sample.prefix(n))
            do {
                let tlvs = try TLV.parseAll(prefix)
                #expect(boundaries.contains(n), "prefix of \(n) bytes parsed")
                #expect(tlvs.flatMap(\.encoded) == prefix)
                for t in tlvs where t.isConstructed { _ = try? t.children() }
            } catch {
                #expect(!boundaries.contains(n), "prefix of \(n) bytes failed: \(error)")
            }
            // The simple mode must not crash either.
            _ = try? TLV.parseAll(prefix, mode: .simple)
        }
    }

    /// Every strict prefix of a single TLV is an error when parsed as one TLV.
    @Test func everyStrictPrefixOfOneTLVIsAnError() {
        let one = TLV(0x7F49, children: [TLV(0x86, [UInt8](repeating: 1, count: 130)), TLV(0x87, [1, 0, 1])])
        let encoded = one.encoded
        for n in 0..<encoded.count {
            #expect(throws: TLV.DecodeError.self) { try TLV.parse(Array(encoded.prefix(n))) }
        }
        #expect((try? TLV.parse(encoded))?.0 == one)
    }

    /// Random mutations of a valid encoding never crash; whatever parses accounts for every input byte.
    @Test func randomMutationsNeverCrash() {
        var rng = SplitMix64(seed: 0x71_7E57)
        var parsedCount = 0
        var failedCount = 0
        for _ in 0..<5000 {
            var input = Self.sample
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                input[Int.random(in: 0..<input.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            input = Array(input.prefix(Int.random(in: 0...input.count, using: &rng)))
            for mode in [TLV.TagMode.ber, .simple] {
                do {
                    let tlvs = try TLV.parseAll(input, mode: mode)
                    parsedCount += 1
                    // Lengths may have been non-minimal; values can never exceed the input.
                    #expect(tlvs.reduce(0) { $0 + $1.value.count } <= input.count)
                } catch {
                    failedCount += 1
                }
            }
        }
        #expect(parsedCount > 0)
        #expect(failedCount > 0)
    }
}
