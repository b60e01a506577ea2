import Testing
@testable import TerminalUI
import AuthenticatorModel

@Suite struct TextFittingTests {
    @Test func truncationKeepsShortText() {
        #expect("abc".truncated(toCells: 3, unicode: true) == "abc")
        #expect("abc".truncated(toCells: 10, unicode: false) == "abc")
        #expect("abc".truncated(toCells: 0, unicode: true) == "")
    }

    @Test func truncationEndsWithAnEllipsis() {
        #expect("abcdefgh".truncated(toCells: 5, unicode: true) == "abcd…")
        #expect("abcdefgh".truncated(toCells: 5, unicode: false) == "ab...")
        #expect("abcdefgh".truncated(toCells: 2, unicode: false) == "ab")
        #expect("abcdefgh".truncated(toCells: 1, unicode: true) == "a")
    }

    @Test func truncationCountsCells() {
        // 日本語 takes 6 cells; in 5 cells: "日本" (4) + "…" (1).
        #expect("日本語".truncated(toCells: 5, unicode: true) == "日本…")
        // In 4: "日" (2) + "…" (1) = 3 cells; a second wide character would not fit.
        #expect("日本語".truncated(toCells: 4, unicode: true) == "日…")
        #expect("日本語".truncated(toCells: 4, unicode: true).cellWidth <= 4)
        #expect("e\u{301}e\u{301}e\u{301}".truncated(toCells: 3, unicode: true) == "e\u{301}e\u{301}e\u{301}")
        #expect("日本語".prefix(cells: 3) == "日")
    }

    @Test func paddingFillsExactlyTheWidth() {
        #expect("ab".padded(toCells: 5) == "ab   ")
        #expect(String.spaces(3) == "   " && String.spaces(0).isEmpty && String.spaces(-2).isEmpty)
        #expect(String.spaces(100).utf8.count == 100 && String.spaces(100).allSatisfy { $0 == " " })
        #expect("ab".padded(toCells: 5, alignment: .right) == "   ab")
        #expect("ab".padded(toCells: 5, alignment: .center) == " ab  ")
        #expect("日本".padded(toCells: 6).cellWidth == 6)
        #expect("日本".padded(toCells: 6) == "日本  ")
        #expect("abcdef".padded(toCells: 4, unicode: false) == "a...")
        #expect("日本語".padded(toCells: 5) == "日本…")
        #expect("日本語".padded(toCells: 4) == "日… ")
        #expect("x".padded(toCells: 0) == "")
    }

    @Test func centring() {
        #expect("ok".centered(inCells: 6) == "  ok  ")
        #expect("ok".centered(inCells: 5) == " ok  ")
        #expect("日本".centered(inCells: 8) == "  日本  ")
        #expect("日本".centeredColumn(in: 10, from: 3) == 6)
        #expect("toolong".centeredColumn(in: 3) == 0)
    }
}

@Suite struct BarTests {
    @Test func unicodeBarUsesEighths() {
        #expect(Widgets.bar(fraction: 1, width: 4, unicode: true) == "████")
        #expect(Widgets.bar(fraction: 0, width: 4, unicode: true) == "    ")
        #expect(Widgets.bar(fraction: 0.5, width: 4, unicode: true) == "██  ")
        // 4 cells × 8 = 32 eighths; 0.25 + 1/32 = 9 eighths: one full cell and one eighth.
        #expect(Widgets.bar(fraction: 9.0 / 32, width: 4, unicode: true) == "█▏  ")
        #expect(Widgets.bar(fraction: 15.0 / 32, width: 4, unicode: true) == "█▉  ")
        #expect(Widgets.bar(fraction: 4.0 / 32, width: 4, unicode: true) == "▌   ")
    }

    @Test func asciiBar() {
        #expect(Widgets.bar(fraction: 0.5, width: 10, unicode: false) == "#####-----")
        #expect(Widgets.bar(fraction: 1, width: 3, unicode: false) == "###")
        #expect(Widgets.bar(fraction: 0, width: 3, unicode: false) == "---")
    }

    @Test func barIsAlwaysExactlyTheWidth() {
        for width in [1, 2, 7, 30] {
            for step in 0...64 {
                let fraction = Double(step) / 64
                #expect(Widgets.bar(fraction: fraction, width: width, unicode: true).cellWidth == width)
                #expect(Widgets.bar(fraction: fraction, width: width, unicode: false).count == width)
            }
        }
    }

    @Test func outOfRangeFractionsAreClamped() {
        #expect(Widgets.bar(fraction: 1.7, width: 3, unicode: true) == "███")
        #expect(Widgets.bar(fraction: -2, width: 3, unicode: false) == "---")
        #expect(Widgets.bar(fraction: .nan, width: 3, unicode: false) == "---")
        #expect(Widgets.bar(fraction: 0.5, width: 0, unicode: true) == "")
    }
}

@Suite struct BoxTests {
    @Test func unicodeBoxWithTitle() {
        let screen = MemoryScreen(rows: 5, columns: 12)
        Box(row: 0, column: 1, height: 4, width: 10).draw(on: screen, title: "Help")
        #expect(
            screen.trimmedLines == [
                " ┌ Help ──┐",
                " │        │",
                " │        │",
                " └────────┘",
                "",
            ])
    }

    @Test func asciiBox() {
        let screen = MemoryScreen(rows: 3, columns: 6, unicode: false)
        Box(row: 0, column: 0, height: 3, width: 6).draw(on: screen)
        #expect(screen.lines == ["+----+", "|    |", "+----+"])
    }

    @Test func longTitleIsTruncatedAndFillBlanksTheInside() {
        let screen = MemoryScreen(rows: 4, columns: 10)
        screen.draw("xxxxxxxxxx", row: 1, column: 0)
        let box = Box(row: 0, column: 0, height: 3, width: 10)
        box.draw(on: screen, title: "A very long title")
        #expect(screen.text(row: 0) == "┌ A ver… ┐")
        #expect(screen.text(row: 1) == "│        │")
        #expect(box.innerRow == 1 && box.innerColumn == 1 && box.innerWidth == 8 && box.innerHeight == 1)
    }

    @Test func centredBoxFitsTheScreen() {
        #expect(
            Box.centered(height: 10, width: 40, in: ScreenSize(rows: 24, columns: 80))
                == Box(row: 7, column: 20, height: 10, width: 40))
        #expect(
            Box.centered(height: 30, width: 100, in: ScreenSize(rows: 24, columns: 80))
                == Box(row: 0, column: 0, height: 24, width: 80))
    }

    @Test func boxStyleAppliesToTheOutline() {
        let screen = MemoryScreen(rows: 3, columns: 4)
        let style = TextStyle(foreground: .cyan)
        Box(row: 0, column: 0, height: 3, width: 4).draw(on: screen, style: style)
        #expect(screen.style(row: 0, column: 0) == style)
        #expect(screen.style(row: 1, column: 3) == style)
        #expect(screen.style(row: 1, column: 1) == .plain)
    }
}

@Suite("Character set: ASCII stand-ins and the locale for drawing")
struct CharacterSetTests {
    @Test func everySymbolInTheStringTablesHasAnASCIIStandIn() {
        for language in ["en", "de"] {
            for (key, value) in StringTables.load(language: language).primary {
                let folded = ASCIIFallback.fold(value)
                #expect(folded.utf8.allSatisfy { $0 < 0x80 }, "\(language) \(key)")
                #expect(!folded.contains("?") || value.contains("?"), "\(language) \(key): \(folded)")
            }
        }
        #expect(ASCIIFallback.fold("Berührung · Schlüssel…") == "Beruehrung | Schluessel...")
        #expect(ASCIIFallback.fold("plain") == "plain")
        #expect(ASCIIFallback.fold("鍵") == "?")
    }

    @Test func theCTypeLocaleIsTheOnePOSIXNames() {
        #expect(TerminalLocale.requestedCType(["LANG": "de_DE.UTF-8"]) == "de_DE.UTF-8")
        #expect(
            TerminalLocale.requestedCType(["LANG": "C", "LC_CTYPE": "C.UTF-8", "LC_MESSAGES": "de_DE.UTF-8"])
                == "C.UTF-8")
        #expect(TerminalLocale.requestedCType(["LANG": "C", "LC_ALL": "fr_FR.utf8"]) == "fr_FR.utf8")
        #expect(TerminalLocale.requestedCType([:]) == "")
        #expect(TerminalLocale.asksForUTF8("de_DE.UTF-8") && TerminalLocale.asksForUTF8("en_US.utf8"))
        #expect(!TerminalLocale.asksForUTF8("C") && !TerminalLocale.asksForUTF8("de_DE@euro"))
    }
}
