import AuthenticatorModel
import CNCursesW
import Testing
@testable import TerminalUI

@Suite struct KeyDecoderTests {
    @Test(arguments: [
        (RawInput.keyCode(KEY_UP), KeyPress.up),
        (.keyCode(KEY_DOWN), .down),
        (.keyCode(KEY_LEFT), .left),
        (.keyCode(KEY_RIGHT), .right),
        (.keyCode(KEY_HOME), .home),
        (.keyCode(KEY_END), .end),
        (.keyCode(KEY_PPAGE), .pageUp),
        (.keyCode(KEY_NPAGE), .pageDown),
        (.keyCode(KEY_BTAB), .backTab),
        (.keyCode(KEY_ENTER), .enter),
        (.keyCode(KEY_BACKSPACE), .backspace),
        (.keyCode(KEY_DC), .delete),
        (.keyCode(KEY_F0 + 1), .function(1)),
        (.keyCode(KEY_F0 + 12), .function(12)),
        (.keyCode(KEY_A1), .home),
        (.keyCode(KEY_C3), .pageDown),
        (.character(0x0D), .enter),
        (.character(0x0A), .enter),
        (.character(0x7F), .backspace),
        (.character(0x08), .backspace),
        (.character(0x1B), .escape),
        (.character(0x09), .tab),
        (.character(0x01), .ctrl("a")),
        (.character(0x03), .ctrl("c")),
        (.character(0x1A), .ctrl("z")),
        (.character(0x20), .char(" ")),
        (.character(0x71), .char("q")),
        (.character(0x2F), .char("/")),
        (.character(0xE9), .char("é")),
        (.character(0x6F22), .char("漢")),
        (.character(0x1F511), .char("🔑")),
    ])
    func decodes(raw: RawInput, key: KeyPress) {
        #expect(KeyDecoder.decode(raw) == key)
    }

    @Test(arguments: [
        RawInput.character(0), .character(0x1C), .character(0x1F), .character(0x85), .character(0xD800),
        .keyCode(KEY_MOUSE), .keyCode(KEY_RESIZE), .keyCode(KEY_F0),
    ])
    func ignores(raw: RawInput) {
        #expect(KeyDecoder.decode(raw) == nil)
    }

    @Test func rawInputFromWgetWchResults() {
        #expect(RawInput(status: OK, value: 0x61) == .character(0x61))
        #expect(RawInput(status: KEY_CODE_YES, value: UInt32(KEY_UP)) == .keyCode(KEY_UP))
        #expect(RawInput(status: ERR, value: 0) == nil)
    }

    @Test func labelsOfDecodedKeysReadWell() {
        #expect(KeyDecoder.decode(.character(0x03))?.label == "Ctrl-C")
        #expect(KeyDecoder.decode(.keyCode(KEY_BTAB))?.label == "Shift-Tab")
    }
}

@Suite struct InputDecoderTests {
    let size = ScreenSize(rows: 24, columns: 80)

    func characters(_ text: String) -> [RawInput] {
        text.unicodeScalars.map { .character($0.value) }
    }

    @Test func decodesABatchOfKeys() {
        var decoder = InputDecoder()
        let events = decoder.decode(characters("ab\r") + [.keyCode(KEY_UP), .character(0x03)], size: size)
        #expect(
            events == [
                .keyPress(.char("a")), .keyPress(.char("b")), .keyPress(.enter), .keyPress(.up), .keyPress(.ctrl("c")),
            ])
    }

    @Test func loneEscapeIsTheEscapeKey() {
        var decoder = InputDecoder()
        #expect(decoder.decode([.character(0x1B)], size: size) == [.keyPress(.escape)])
        // ESC then an ordinary key in the same batch (Alt+x): Escape, then the key.
        #expect(decoder.decode(characters("\u{1B}x"), size: size) == [.keyPress(.escape), .keyPress(.char("x"))])
    }

    @Test func resizeBecomesOneEvent() {
        var decoder = InputDecoder()
        let events = decoder.decode([.keyCode(KEY_RESIZE), .keyCode(KEY_RESIZE), .character(0x71)], size: size)
        #expect(events == [.resize(size), .keyPress(.char("q"))])
    }

    @Test func escapeSequencesNcursesDidNotKnowAreDecodedOrDropped() {
        var decoder = InputDecoder()
        #expect(
            decoder.decode(characters("\u{1B}[A\u{1B}OB\u{1B}[3~\u{1B}[Z\u{1B}OP\u{1B}[15~"), size: size)
                == [
                    .keyPress(.up), .keyPress(.down), .keyPress(.delete), .keyPress(.backTab), .keyPress(.function(1)),
                    .keyPress(.function(5)),
                ])
        #expect(decoder.decode(characters("\u{1B}[1;5C"), size: size) == [.keyPress(.right)])
        // Unknown sequences never turn into text.
        #expect(decoder.decode(characters("\u{1B}[?1;2cz"), size: size) == [.keyPress(.char("z"))])
        #expect(decoder.decode(characters("\u{1B}[99~"), size: size) == [])
        // An incomplete sequence at the end of a batch is dropped.
        #expect(decoder.decode(characters("\u{1B}[1;"), size: size) == [])
    }

    @Test func bracketedPasteArrivesAsOneEvent() {
        var decoder = InputDecoder()
        let text = "\u{1B}[200~otpauth://totp/A:b?secret=JBSWY3DPEHPK3PXP\r\nq\u{1B}[201~x"
        let events = decoder.decode(characters(text), size: size)
        #expect(events == [.paste("otpauth://totp/A:b?secret=JBSWY3DPEHPK3PXP\nq"), .keyPress(.char("x"))])
        #expect(!decoder.isPasting)
    }

    @Test func bracketedPasteSpansBatches() {
        var decoder = InputDecoder()
        #expect(decoder.decode(characters("\u{1B}[200~ab"), size: size) == [])
        #expect(decoder.isPasting)
        #expect(decoder.decode(characters("c\u{1B}[20"), size: size) == [])
        #expect(decoder.decode(characters("1~d"), size: size) == [.paste("abc"), .keyPress(.char("d"))])
    }

    @Test func pastedControlCharactersAreRemoved() {
        #expect(InputDecoder.pastedText(Array("a\u{7}b\tc\rd\r\ne\nf\u{9B}".unicodeScalars)) == "ab\tc\nd\ne\nf")
    }

    @Test func overlongPasteIsCut() {
        var decoder = InputDecoder()
        let body = String(repeating: "x", count: InputDecoder.maximumPaste + 100)
        let events = decoder.decode(characters("\u{1B}[200~" + body + "\u{1B}[201~"), size: size)
        #expect(events.count == 1)
        if case .paste(let text) = events.first {
            #expect(text.count == InputDecoder.maximumPaste)
        } else {
            Issue.record("expected a paste, got \(events)")
        }
    }
}
