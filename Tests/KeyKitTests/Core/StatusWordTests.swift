import Foundation
import KeyKit
import Testing

@Suite struct StatusWordTests {
    @Test func success() {
        let sw = StatusWord(sw1: 0x90, sw2: 0x00)
        #expect(sw == .ok)
        #expect(sw.isSuccess)
        #expect(!StatusWord(rawValue: 0x9001).isSuccess)
        #expect(!StatusWord.securityConditionNotSatisfied.isSuccess)
    }

    @Test func bytesAndRawValueAgree() {
        let sw = StatusWord(sw1: 0x6A, sw2: 0x82)
        #expect(sw.rawValue == 0x6A82)
        #expect(sw.sw1 == 0x6A)
        #expect(sw.sw2 == 0x82)
        #expect(sw == .fileNotFound)
        #expect(sw.hexString == "6A82")
    }

    @Test func moreDataAvailable() {
        let some = StatusWord(rawValue: 0x6110)
        #expect(some.isMoreDataAvailable)
        #expect(some.meaning.key == "sw.61" && some.meaning.arguments == ["count": "16"])
        #expect(!some.isWrongLe)
        let lots = StatusWord(rawValue: 0x6100)
        #expect(lots.isMoreDataAvailable)
        #expect(lots.meaning.key == "sw.61-many")
        #expect(!StatusWord.ok.isMoreDataAvailable)
    }

    @Test func wrongLe() {
        let sw = StatusWord(rawValue: 0x6C20)
        #expect(sw.isWrongLe)
        #expect(!sw.isMoreDataAvailable)
        #expect(sw.meaning.key == "sw.6C" && sw.meaning.arguments == ["count": "32"])
        #expect(!StatusWord.wrongLength.isWrongLe)
    }

    @Test func retryCounters() {
        #expect(StatusWord(rawValue: 0x63C3).retriesLeft == 3)
        #expect(StatusWord(rawValue: 0x63C3).meaning.arguments == ["count": "3"])
        #expect(StatusWord(rawValue: 0x63CF).retriesLeft == 15)
        #expect(StatusWord.verifyFailNoRetry.retriesLeft == 0)
        #expect(StatusWord(rawValue: 0x6300).retriesLeft == nil)
        #expect(StatusWord(rawValue: 0x6983).retriesLeft == nil)
        #expect(StatusWord.ok.retriesLeft == nil)
        // 63xx that is not a counter is a warning, of its class.
        #expect(StatusWord(rawValue: 0x6381).meaning.key == "sw.63")
    }

    @Test func unknownWordsKeepTheirRawValueAndGetTheirClassMeaning() {
        let sw = StatusWord(rawValue: 0x1234)
        #expect(sw.rawValue == 0x1234)
        #expect(sw.meaning.key == "sw.unknown")
        #expect(sw.description == "SW=1234")
        #expect(StatusWord(rawValue: 0x6A99).meaning.key == "sw.6A")
        #expect(StatusWord(rawValue: 0x6A82).meaning.key == "sw.6A82")
        #expect("\(StatusWord(rawValue: 0x6D00))" == "SW=6D00")
    }
}

@Suite struct ResponseTests {
    @Test func splitsDataAndStatus() throws {
        let r = try Response(raw: [0x01, 0x02, 0x03, 0x90, 0x00])
        #expect(r.data == [0x01, 0x02, 0x03])
        #expect(r.status == .ok)
        #expect(r.bytes == [0x01, 0x02, 0x03, 0x90, 0x00])
        #expect(try r.checked() == [0x01, 0x02, 0x03])

        let bare = try Response(raw: [0x6A, 0x82])
        #expect(bare.data.isEmpty)
        #expect(bare.status == .fileNotFound)
    }

    @Test(arguments: [[], [0x90]] as [[UInt8]])
    func answersWithoutStatusWordAreMalformed(raw: [UInt8]) {
        let error = #expect(throws: SmartCardError.self) { try Response(raw: raw) }
        guard case .malformedResponse = error else {
            Issue.record("expected malformedResponse, got \(String(describing: error))")
            return
        }
    }

    @Test func checkedThrowsTheStatus() {
        #expect(throws: SmartCardError.status(.securityConditionNotSatisfied)) {
            try Response(data: [0x01], status: .securityConditionNotSatisfied).checked()
        }
    }
}

@Suite struct HexTests {
    @Test func encode() {
        #expect(Hex.encode([0xDE, 0xAD, 0xBE, 0xEF]) == "deadbeef")
        #expect(Hex.encode([0x00, 0x0F, 0xA0], uppercase: true) == "000FA0")
        #expect(Hex.encode([UInt8]()) == "")
        #expect([UInt8]([0x01, 0xAB]).hex == "01ab")
        #expect([UInt8]([0x01, 0xAB, 0xCD])[1...].hex == "abcd")
    }

    @Test(arguments: [
        "deadbeef", "DEADBEEF", "de ad be ef", "DE:AD:BE:EF", "0xde 0xad 0xbe 0xef", "0xDEADBEEF",
        "0XDE:0XAD:0xBE:0xEF", "\tde ad\nbe\ref ", "d e a d b e e f",
    ])
    func decodeWithSeparators(text: String) throws {
        #expect(try Hex.decode(text) == [0xDE, 0xAD, 0xBE, 0xEF])
    }

    @Test func decodeEmpty() throws {
        #expect(try Hex.decode("") == [])
        #expect(try Hex.decode("  : ") == [])
    }

    @Test func decodeRoundTripsEveryByte() throws {
        let all = (0...255).map { UInt8($0) }
        #expect(try Hex.decode(Hex.encode(all)) == all)
        #expect(try Hex.decode(Hex.encode(all, uppercase: true)) == all)
    }

    @Test func oddLengthIsRejected() {
        #expect(throws: Hex.DecodeError.oddLength(3)) { try Hex.decode("abc") }
        #expect(throws: Hex.DecodeError.oddLength(5)) { try Hex.decode("0xab cd e") }
    }

    @Test func badCharactersAreRejectedWithTheirPosition() {
        #expect(throws: Hex.DecodeError.invalidCharacter("z", offset: 0)) { try Hex.decode("zz") }
        #expect(throws: Hex.DecodeError.invalidCharacter("g", offset: 3)) { try Hex.decode("ab g0") }
        // 0x is a prefix only at the start of a group.
        #expect(throws: Hex.DecodeError.invalidCharacter("x", offset: 3)) { try Hex.decode("ab0xcd") }
        #expect(throws: Hex.DecodeError.invalidCharacter("-", offset: 2)) { try Hex.decode("ab-cd") }
        // Fullwidth digits have a hex value in Unicode but are not accepted.
        #expect(throws: Hex.DecodeError.invalidCharacter("１", offset: 0)) { try Hex.decode("１２") }
    }

    @Test
    func windowsLineEndingsAreSeparators() throws {
        #expect(try Hex.decode("00 A4\r\n04 00\r\n") == [0x00, 0xA4, 0x04, 0x00])
    }

    @Test
    func zeroXPrefixAfterANewline() throws {
        #expect(try Hex.decode("0x00 0xA4\n0x04 0x00") == [0x00, 0xA4, 0x04, 0x00])
    }

    @Test func bigEndianHelpers() {
        #expect(BigEndian.bytes(0x0102_0304, count: 4) == [1, 2, 3, 4])
        #expect(BigEndian.bytes(0x0102_0304, count: 2) == [3, 4])
        #expect(BigEndian.bytes(0x01, count: 3) == [0, 0, 1])
        #expect(BigEndian.integer([0x01, 0xAD, 0x2B, 0x40]) == 0x01AD_2B40)
        #expect(BigEndian.integer([UInt8]()) == 0)
    }
}

@Suite struct VersionTests {
    @Test func parsesAPlainVersion() throws {
        let v = try #require(Version(parsing: "5.7.2"))
        #expect(v == Version(5, 7, 2))
        #expect(v.major == 5)
        #expect(v.minor == 7)
        #expect(v.patch == 2)
        #expect(v.description == "5.7.2")
        #expect(v.bytes == [5, 7, 2])
    }

    @Test func findsTheVersionInText() {
        #expect(Version(parsing: "Virtual mgr - FW version 5.4.3") == Version(5, 4, 3))
        #expect(Version(parsing: "firmware 4.3.7, build 2") == Version(4, 3, 7))
        #expect(Version(parsing: "v1.2 then 3.4.5") == Version(3, 4, 5))
        #expect(Version(parsing: "5.7.2.1") == Version(5, 7, 2))
        #expect(Version(parsing: "10.20.30") == Version(10, 20, 30))
    }

    @Test(arguments: ["", "garbage", "1.2", "5..7", "a.b.c", "300.1.1", "1.2.256", "5-7-2", "version ..."])
    func garbageIsNil(text: String) {
        #expect(Version(parsing: text) == nil)
    }

    @Test func fromBytes() {
        #expect(Version(bytes: [5, 4, 3]) == Version(5, 4, 3))
        #expect(Version(bytes: [5, 4, 3, 9]) == Version(5, 4, 3))
        #expect(Version(bytes: [5, 4]) == nil)
        #expect(Version(bytes: [UInt8]()) == nil)
    }

    @Test func ordering() {
        #expect(Version(5, 4, 3) < Version(5, 7, 2))
        #expect(Version(4, 9, 9) < Version(5, 0, 0))
        #expect(Version(5, 7, 1) < Version(5, 7, 2))
        #expect(Version(5, 9, 0) < Version(5, 10, 0))
        #expect(!(Version(5, 7, 2) < Version(5, 7, 2)))
        #expect(Version(5, 7, 2) >= Version(4, 1, 0))
        let sorted = [Version(5, 10, 0), Version(3, 0, 0), Version(5, 2, 7), Version(5, 2, 10)].sorted()
        #expect(sorted == [Version(3, 0, 0), Version(5, 2, 7), Version(5, 2, 10), Version(5, 10, 0)])
    }

    @Test func codableAsAString() throws {
        let data = try JSONEncoder().encode([Version(5, 7, 2)])
        #expect(String(decoding: data, as: UTF8.self) == "[\"5.7.2\"]")
        #expect(try JSONDecoder().decode([Version].self, from: Data("[\"4.3.1\"]".utf8)) == [Version(4, 3, 1)])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Version].self, from: Data("[\"four\"]".utf8))
        }
    }
}

@Suite("Visible text: strings from outside cannot drive the terminal")
struct VisibleTextTests {
    @Test func controlsAndBidiBecomeEscapesAndOtherTextIsKept() {
        #expect(VisibleText.escaped("GitHub:alice") == "GitHub:alice")
        #expect(VisibleText.escaped("Grüße, 鍵 ✔") == "Grüße, 鍵 ✔")
        #expect(VisibleText.escaped("\u{1B}[2J") == "\\x1B[2J")
        #expect(VisibleText.escaped("\u{1B}]52;c;aGk=\u{7}") == "\\x1B]52;c;aGk=\\x07")
        #expect(VisibleText.escaped("a\u{202E}b\u{2066}c\u{200F}") == "a\\u{202E}b\\u{2066}c\\u{200F}")
        #expect(VisibleText.escaped("\u{0}\u{7F}\u{85}\u{9F}") == "\\x00\\x7F\\x85\\x9F")
        #expect(VisibleText.escaped("line\n\tnext") == "line\\x0A\\x09next")
        #expect(VisibleText.escaped("line\n\tnext\r", keepingLineBreaks: true) == "line\n\tnext\\x0D")
    }
}
