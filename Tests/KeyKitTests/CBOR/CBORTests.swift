import Testing
@testable import KeyKit

@Suite struct CBORTests {
    // RFC 8949 appendix A.
    @Test(
        arguments: [
            (CBOR(0), "00"), (CBOR(1), "01"), (CBOR(10), "0a"), (CBOR(23), "17"), (CBOR(24), "1818"),
            (CBOR(25), "1819"), (CBOR(100), "1864"), (CBOR(1000), "1903e8"), (CBOR(1_000_000), "1a000f4240"),
            (CBOR(1_000_000_000_000), "1b000000e8d4a51000"), (.unsigned(UInt64.max), "1bffffffffffffffff"),
            (.negative(UInt64.max), "3bffffffffffffffff"), (CBOR(-1), "20"), (CBOR(-10), "29"), (CBOR(-100), "3863"),
            (CBOR(-1000), "3903e7"), (.bool(false), "f4"), (.bool(true), "f5"), (.null, "f6"), (.undefined, "f7"),
            (.bytes([]), "40"), (.bytes([1, 2, 3, 4]), "4401020304"), (.text(""), "60"), (.text("a"), "6161"),
            (.text("IETF"), "6449455446"), (.text("\"\\"), "62225c"), (.text("\u{00fc}"), "62c3bc"),
            (.text("\u{6c34}"), "63e6b0b4"), (.array([]), "80"), (.array([1, 2, 3]), "83010203"),
            (.array([1, [2, 3], [4, 5]]), "8301820203820405"), (.map([:]), "a0"), (.map([1: 2, 3: 4]), "a201020304"),
            (.map(["a": 1, "b": [2, 3]]), "a26161016162820203"), (.array(["a", ["b": "c"]]), "826161a161626163"),
            (.tagged(1, CBOR(1_363_896_240)), "c11a514b67b0"), (.float(1.1), "fb3ff199999999999a"),
        ] as [(CBOR, String)])
    func rfc8949Examples(value: CBOR, hex: String) throws {
        #expect(value.encoded.hex == hex)
        #expect(try CBOR.decode(try Hex.decode(hex)) == value)
    }

    @Test func ctap2CanonicalKeyOrder() {
        // CTAP2 canonical rules: major type, then encoded length, then bytes: 10, 100, -1, "z", "aa", [-1], [100], false.
        let m: CBOR = .map([.bool(false): 8, .array([-1]): 7, .array([100]): 6, "aa": 5, "z": 4, -1: 3, 100: 2, 10: 1])
        #expect(
            m.encoded.hex == "a8" + "0a01" + "186402" + "2003" + "617a04" + "62616105" + "812007" + "81186406"
                + "f408")
    }

    @Test func ctap2GetInfoExample() throws {
        // The getInfo answer from the CTAP 2.0 specification's example (versions, extensions, aaguid, options,
        // maxMsgSize, pinProtocols).
        let hex =
            "a60182665532465f5632684649444f5f325f3002816b686d61632d7365637265740350f8a011f38c0a4d15800617"
            + "111f9edc7d04a462726bf5627570f564706c6174f469636c69656e7450696ef4051904b0068101"
        let info = try AuthenticatorInfo(
            cbor: try CBOR.decode(try Hex.decode(hex), limits: .init(requireCanonicalKeys: true)))
        #expect(info.versions == ["U2F_V2", "FIDO_2_0"])
        #expect(info.extensions == ["hmac-secret"])
        #expect(info.aaguidString == "f8a011f3-8c0a-4d15-8006-17111f9edc7d")
        #expect(info.options == ["rk": true, "up": true, "plat": false, "clientPin": false])
        #expect(info.maxMessageSize == 1200)
        #expect(info.pinUVAuthProtocols == [1])
        #expect(info.pinSet == false)
        #expect(info.minPINLength == 4)
    }

    @Test(arguments: [
        ("", "truncated"), ("18", "truncated"), ("1a0000", "truncated"), ("42ff", "truncated"),
        ("83 01 02", "truncated"), ("a1 01", "truncated"), ("1c", "reserved-length"), ("5f", "indefinite-length"),
        ("9f", "indefinite-length"), ("62c328", "invalid-utf8"), ("a2 01 01 01 02", "duplicate-key"),
        ("0101", "trailing-bytes"), ("f8 20", "unsupported-simple"), ("9b ffffffffffffffff", "too-long"),
        ("bb 00000000ffffffff", "too-long"),
    ])
    func malformedInputIsAnError(hex: String, expected: String) throws {
        let bytes = try Hex.decode(hex)
        do {
            _ = try CBOR.decode(bytes)
            Issue.record("decoded \(hex)")
        } catch {
            #expect(error.textKey == "cbor." + expected, "\(hex): \(error)")
        }
    }

    /// A repeated key is found wherever it is: among a map's first 16 keys (compared one by one) and after them
    /// (kept in a set), with the offset of the second occurrence; NaN keys repeat by their canonical encoding.
    @Test(arguments: [2, 16, 17, 40])
    func repeatedKeysAreFoundInMapsOfAnySize(keys: Int) throws {
        func map(_ keys: [UInt8]) -> [UInt8] {
            [0xB8, UInt8(keys.count)] + keys.flatMap { [0x18, $0, 0xF6] }
        }
        let distinct = (0..<UInt8(keys)).map { $0 + 24 }
        let decoded = try CBOR.decode(map(distinct))
        #expect(decoded.map?.count == keys)
        for repeated in [1, keys / 2, keys - 1] {
            var withRepeat = distinct
            withRepeat.insert(distinct[repeated - 1], at: repeated)
            let offset = 2 + 3 * repeated
            #expect(throws: CBORError.duplicateKey(offset: offset), "\(keys) keys, repeat at \(repeated)") {
                try CBOR.decode(map(withRepeat))
            }
        }
        // Two NaNs after the keys, written two ways: unequal as Swift values, the same key once re-encoded.
        var nans = map(distinct)
        nans[1] += 2
        nans += try Hex.decode("f97e00 01 fa7fc00000 02")
        #expect(throws: CBORError.duplicateKey(offset: 2 + 3 * keys + 4)) { try CBOR.decode(nans) }
    }

    @Test func depthIsLimited() {
        let deep = [UInt8](repeating: 0x81, count: 40) + [0x00]
        #expect(throws: CBORError.tooDeep) { _ = try CBOR.decode(deep) }
        #expect(throws: Never.self) { _ = try CBOR.decode(deep, limits: .init(maxDepth: 64)) }
    }

    @Test func canonicalOrderCanBeRequired() throws {
        let unordered = try Hex.decode("a2 02 00 01 00")
        #expect(throws: CBORError.nonCanonical(offset: 3)) {
            _ = try CBOR.decode(unordered, limits: .init(requireCanonicalKeys: true))
        }
        #expect(try CBOR.decode(unordered)[1] == CBOR(0))
    }

    @Test func everyPrefixAndMutationFailsCleanly() throws {
        let value: CBOR = [
            1: "alpha", 2: .bytes([UInt8](repeating: 7, count: 40)), 3: [1, -2, ["k": .null]],
            4: .tagged(24, .bytes([0xA0])), -5: .float(0.5),
        ]
        let bytes = value.encoded
        #expect(try CBOR.decode(bytes) == value)
        for n in 0..<bytes.count {
            #expect(throws: CBORError.self) { _ = try CBOR.decode(Array(bytes.prefix(n))) }
        }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var m = bytes
            m[Int.random(in: 0..<m.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            _ = try? CBOR.decode(m)
        }
    }

    @Test func accessors() {
        let v: CBOR = [1: "x", "k": true, -3: .bytes([9])]
        #expect(v[1]?.string == "x")
        #expect(v["k"]?.bool == true)
        #expect(v[-3]?.bytes == [9])
        #expect(CBOR(-5).int == -5)
        #expect(CBOR.unsigned(UInt64.max).int == nil)
    }
}
