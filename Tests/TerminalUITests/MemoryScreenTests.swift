import Testing
import KeyKit
@testable import TerminalUI

@Suite struct MemoryScreenTests {
    @Test func startsBlankAtTheGivenSize() {
        let screen = MemoryScreen(rows: 3, columns: 5)
        #expect(screen.size == ScreenSize(rows: 3, columns: 5))
        #expect(screen.lines == ["     ", "     ", "     "])
        #expect(screen.trimmedLines == ["", "", ""])
        #expect(screen.cursor == nil)
        #expect(screen.presentCount == 0)
    }

    @Test func drawsAndClipsAtTheRightEdge() {
        let screen = MemoryScreen(rows: 2, columns: 6)
        screen.draw("hello world", row: 0, column: 2)
        #expect(screen.text(row: 0) == "  hell")
        screen.draw("xyz", row: 1, column: 5)
        #expect(screen.text(row: 1) == "     x")
    }

    @Test func clipsToTheGivenWidth() {
        let screen = MemoryScreen(rows: 1, columns: 10)
        screen.draw("abcdef", row: 0, column: 1, style: .plain, width: 3)
        #expect(screen.text(row: 0) == " abc      ")
        screen.draw("zzz", row: 0, column: 6, style: .plain, width: 0)
        #expect(screen.text(row: 0) == " abc      ")
    }

    @Test func ignoresRowsOutsideAndCellsLeftOfTheScreen() {
        let screen = MemoryScreen(rows: 2, columns: 5)
        screen.draw("abc", row: -1, column: 0)
        screen.draw("abc", row: 2, column: 0)
        #expect(screen.trimmedLines == ["", ""])
        screen.draw("abcdef", row: 0, column: -2)
        #expect(screen.text(row: 0) == "cdef ")
        // A wide character straddling column 0 is not drawn half: its visible half is blank.
        screen.draw("日x", row: 1, column: -1)
        #expect(screen.text(row: 1) == " x   ")
    }

    @Test func wideCharactersTakeTwoCells() {
        let screen = MemoryScreen(rows: 1, columns: 8)
        screen.draw("日本a", row: 0, column: 1)
        #expect(screen.cell(row: 0, column: 1).width == 2)
        #expect(screen.cell(row: 0, column: 2).isContinuation)
        #expect(screen.cell(row: 0, column: 3).text == "本")
        #expect(screen.cell(row: 0, column: 5).text == "a")
        #expect(screen.text(row: 0, trimmed: true) == " 日本a")
        #expect(screen.find("a") == CellPosition(row: 0, column: 5))

        let emoji = MemoryScreen(rows: 1, columns: 4)
        emoji.draw("🔑k", row: 0, column: 0)
        #expect(emoji.cell(row: 0, column: 0).width == 2)
        #expect(emoji.cell(row: 0, column: 2).text == "k")
    }

    @Test func wideCharacterThatDoesNotFitIsNotDrawnHalf() {
        let screen = MemoryScreen(rows: 2, columns: 5)
        screen.draw("xxxxx", row: 0, column: 0)
        screen.draw("ab日", row: 0, column: 2)
        // "日" would need columns 4 and 5; only 4 exists, so it becomes a blank.
        #expect(screen.text(row: 0) == "xxab ")
        #expect(screen.cells[0].allSatisfy { $0.width == 1 })

        screen.draw("yyyyy", row: 1, column: 0)
        screen.draw("日本", row: 1, column: 0, style: .plain, width: 3)
        #expect(screen.text(row: 1) == "日 yy")
    }

    @Test func overwritingHalfOfAWideCharacterBlanksTheOtherHalf() {
        let screen = MemoryScreen(rows: 2, columns: 6)
        screen.draw("日本", row: 0, column: 0)
        screen.draw("x", row: 0, column: 1)
        #expect(screen.text(row: 0) == " x本  ")
        screen.draw("y", row: 0, column: 2)
        #expect(screen.text(row: 0) == " xy   ")

        screen.draw("日本", row: 1, column: 0)
        screen.draw("語", row: 1, column: 1)
        #expect(screen.text(row: 1) == " 語   ")
        #expect(screen.cells[1][1].width == 2 && screen.cells[1][2].isContinuation)
        #expect(screen.cells[1][3].width == 1)
    }

    @Test func combiningCharactersJoinThePreviousCell() {
        let screen = MemoryScreen(rows: 1, columns: 6)
        screen.draw("e\u{301}a\u{308}x", row: 0, column: 0)
        #expect(screen.cell(row: 0, column: 0).text == "e\u{301}")
        #expect(screen.cell(row: 0, column: 1).text == "a\u{308}")
        #expect(screen.cell(row: 0, column: 2).text == "x")
        #expect(screen.text(row: 0, trimmed: true).unicodeScalars.count == 5)

        // A combining mark at the start of a text joins a space rather than disappearing or taking no cell.
        screen.draw("\u{301}z", row: 0, column: 3)
        #expect(screen.cell(row: 0, column: 3).text == " \u{301}")
        #expect(screen.cell(row: 0, column: 4).text == "z")
    }

    @Test func controlCharactersAreNeverWrittenRawButShownAsEscapes() {
        let screen = MemoryScreen(rows: 1, columns: 40)
        screen.draw("a\u{1B}[31mb\u{7}\tc\u{7F}\u{9B}", row: 0, column: 0)
        #expect(screen.text(row: 0, trimmed: true) == "a\\x1B[31mb\\x07\\x09c\\x7F\\x9B")
        for row in screen.lines {
            #expect(!row.unicodeScalars.contains { VisibleText.isUnsafe($0) })
        }
        // "\r\n" (one grapheme cluster) and a right-to-left override, which would make the rest read backwards.
        screen.draw("x\r\ny\u{202E}moc.elgoog", row: 0, column: 0)
        #expect(screen.text(row: 0).hasPrefix("x\\x0D\\x0Ay\\u{202E}moc.elgoog"))
        // An OSC 52 clipboard write in an account name is text on the screen.
        screen.draw("Evil\u{1B}]52;c;aGk=\u{7}", row: 0, column: 0)
        #expect(screen.text(row: 0).hasPrefix("Evil\\x1B]52;c;aGk=\\x07"))
    }

    @Test func asciiScreenShowsQuestionMarksForNonASCII() {
        let screen = MemoryScreen(rows: 1, columns: 10, unicode: false)
        #expect(!screen.unicode)
        // Letters with a stand-in keep it (é → e); the rest is one "?" each, wide or not.
        screen.draw("a日é─b", row: 0, column: 0)
        #expect(screen.text(row: 0, trimmed: true) == "a?e?b")
    }

    @Test func stylesArePerCell() {
        let screen = MemoryScreen(rows: 1, columns: 6)
        let bold = TextStyle(foreground: .red, bold: true)
        screen.draw("ab", row: 0, column: 1, style: bold)
        #expect(screen.style(row: 0, column: 0) == .plain)
        #expect(screen.style(row: 0, column: 1) == bold)
        #expect(screen.style(row: 0, column: 2) == bold)
        #expect(screen.style(row: 0, column: 3) == .plain)
        screen.erase()
        #expect(screen.style(row: 0, column: 1) == .plain)
        #expect(screen.eraseCount == 1)
    }

    @Test func cursorAndPresentAreRecorded() {
        let screen = MemoryScreen(rows: 4, columns: 10)
        screen.setCursor(row: 2, column: 3)
        #expect(screen.cursor == CellPosition(row: 2, column: 3))
        screen.setCursor(row: 9, column: 3)
        #expect(screen.cursor == nil)
        screen.setCursor(row: 1, column: 1)
        screen.hideCursor()
        #expect(screen.cursor == nil)

        screen.draw("first", row: 0, column: 0)
        screen.present()
        screen.draw("second", row: 0, column: 0)
        screen.present()
        #expect(screen.presentCount == 2)
        #expect(screen.presentedLines.first == "second    ")
    }

    @Test func containsAndFindSearchWithinRows() {
        let screen = MemoryScreen(rows: 3, columns: 20)
        screen.draw("123 456", row: 1, column: 4)
        screen.draw("日本 code", row: 2, column: 0)
        #expect(screen.contains("123 456"))
        #expect(!screen.contains("123456"))
        #expect(screen.find("456") == CellPosition(row: 1, column: 8))
        #expect(screen.find("code") == CellPosition(row: 2, column: 5))
        #expect(screen.find("") == nil)
        #expect(screen.text(row: 1, column: 4, width: 3) == "123")
    }

    @Test func resizeKeepsWhatFitsAndBlanksCutWideCharacters() {
        let screen = MemoryScreen(rows: 3, columns: 6)
        screen.draw("abcd日", row: 0, column: 0)
        screen.draw("row1", row: 1, column: 0)
        screen.setCursor(row: 2, column: 5)
        screen.resize(rows: 2, columns: 5)
        #expect(screen.size == ScreenSize(rows: 2, columns: 5))
        #expect(screen.lines == ["abcd ", "row1 "])
        #expect(screen.cursor == nil)
        screen.resize(ScreenSize(rows: 3, columns: 8))
        #expect(screen.lines == ["abcd    ", "row1    ", "        "])
    }

    @Test func recordsRawWrites() {
        let screen = MemoryScreen()
        screen.writeRaw([0x1B, 0x5D])
        #expect(screen.rawWrites == [[0x1B, 0x5D]])
    }
}

@Suite struct CellWidthTests {
    @Test(arguments: [
        ("a", 1), ("日", 2), ("😀", 2), ("é", 1), ("e\u{301}", 1), ("한", 2), ("─", 1), ("…", 1), ("Ａ", 2),
    ])
    func widthOfCharacters(text: String, width: Int) {
        #expect(CellWidth.of(text) == width)
    }

    @Test func widthOfStrings() {
        #expect("".cellWidth == 0)
        #expect("abc".cellWidth == 3)
        #expect("日本語abc".cellWidth == 9)
        #expect("a\u{7}b".cellWidth == 3)
    }

    @Test func scalarWidths() {
        #expect(CellWidth.of(Unicode.Scalar(0x301)!) == 0)
        #expect(CellWidth.of(Unicode.Scalar(0x1B)!) == -1)
        #expect(CellWidth.of(Unicode.Scalar(0x9B)!) == -1)
        #expect(CellWidth.of(Unicode.Scalar(0x4E00)!) == 2)
    }

    @Test func fallbackTableAgreesOnCommonCharacters() {
        for (value, width) in [
            (0x41, 1), (0x301, 0), (0x4E00, 2), (0xAC00, 2), (0x1F600, 2), (0xE9, 1),
            (0xFF21, 2), (0x200D, 0), (0x1B, -1),
        ] as [(UInt32, Int)] {
            let scalar = Unicode.Scalar(value)!
            #expect(CellWidth.fallbackWidth(scalar) == width, "U+\(String(value, radix: 16))")
        }
    }

    @Test func clustersThatCannotShareOneCellKeepTheirFirstCharacter() {
        // A ZWJ family is three wide emoji; a terminal cell holds one of them.
        let family = TextCell("👨\u{200D}👩\u{200D}👧")
        #expect(family.width == 2)
        #expect(family.scalars == ["👨"])
        let heart = TextCell("❤\u{FE0F}")
        #expect(heart.scalars.count == 2)
    }
}
