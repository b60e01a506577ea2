import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// The Add dialog's QR code states, reached through `update` as a user reaches them (for the golden frames too).
enum AddQRFixture {
    static let secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
    static let uri = "otpauth://totp/Made:erin?secret=\(secret)&issuer=Made&algorithm=SHA1&digits=6&period=30"

    static func adding() -> AppState {
        var s = ViewFixture.state()
        _ = update(&s, .keyPress(.char("a")))
        return s
    }

    static func type(_ text: String, _ s: inout AppState) {
        for c in text { _ = update(&s, .keyPress(.char(c))) }
    }

    /// Ctrl-G's secret in the dialog, the issuer typed.
    static func newSecret() -> AppState {
        var s = adding()
        _ = update(&s, .keyPress(.ctrl("g")))
        _ = update(&s, .oath(.secretMade(secret)))
        type("Made", &s)
        s.status = nil
        return s
    }

    /// A path typed in the URI field.
    static func image() -> AppState {
        var s = adding()
        type("~/Pictures/enrol.png", &s)
        return s
    }

    /// The path read, and no QR code in the image.
    static func imageRefused() -> AppState {
        var s = image()
        _ = update(&s, .keyPress(.enter))
        _ = update(&s, .oath(.imageRead(path: "~/Pictures/enrol.png", .failure(.noCode(path: "~/Pictures/enrol.png")))))
        return s
    }

    /// The account with the secret made added: shown once.
    static func shown() -> AppState {
        var s = newSecret()
        _ = update(&s, .keyPress(.enter))
        type("erin", &s)
        let last = (s.oath.dialog?.form.fields.count ?? 1) - 1
        s.oath.dialog?.form.focus = last
        _ = update(&s, .keyPress(.enter))
        let entries =
            ViewFixture.demo + [
                OATHSession.Entry(
                    credential: Credential(rawID: Array("Made:erin".utf8), type: .totp), code: nil, digits: 6)
            ]
        _ = update(
            &s,
            .oath(
                .changed(
                    keyID: ViewFixture.key.id,
                    OATHSnapshot(deviceID: "d", version: Version(5, 7, 2), hasPassword: false, entries: entries),
                    UIText("oath.added", ["account": "Made:erin"]))))
        s.status = nil
        return s
    }
}

@Suite("Views: the Add dialog's QR codes")
struct OATHAddQRViewTests {
    /// The modules of the code drawn from `top`, `left` (half blocks: two rows of modules a line).
    static func modules(_ screen: MemoryScreen, top: Int, left: Int, side: Int) -> [Bool] {
        var modules = [Bool](repeating: false, count: side * side)
        for line in 0..<(side + 1) / 2 {
            let text = Array(screen.text(row: top + line, column: left, width: side))
            for (column, c) in text.enumerated() {
                modules[2 * line * side + column] = c == "█" || c == "▀"
                if 2 * line + 1 < side { modules[(2 * line + 1) * side + column] = c == "█" || c == "▄" }
            }
        }
        return modules
    }

    @Test func theCodeBesideTheURIReadsBackAsTheURIBlackOnWhite() throws {
        let state = AddQRFixture.shown()
        #expect(state.oath.shown?.uri == AddQRFixture.uri)
        let screen = ViewFixture.render(state, rows: 30, columns: 100)
        let code = try #require(try QRCode(AddQRFixture.uri))
        let side = code.size + 2 * QRCode.quietZone
        // The code's first line: the quiet zone's blank line, drawn black on white from column 1.
        let top = try #require((0..<30).first { screen.style(row: $0, column: 1) == Theme().qrCode })
        let grid = Self.modules(screen, top: top, left: 1, side: side)
        #expect(try QRImage.codes(in: QRCode(size: side, modules: grid).image(scale: 3)) == [AddQRFixture.uri])
        // Beside it the URI whole (wrapped), what it is for, and how it closes.
        let right = (0..<30).map { screen.text(row: $0, column: side + 3, width: 100 - side - 3) }
        let words = right.map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(words.joined().contains(AddQRFixture.uri))
        #expect(words.contains("Added Made:erin"))
        #expect(screen.dump.contains("Enter or Esc closes: the secret is not shown again"))
        // The tab bar and the list are covered.
        #expect(!screen.dump.contains("GitHub"))
    }

    @Test func withoutUTF8TheCodeIsDrawnInHashesAndATooSmallTerminalSaysSo() {
        let state = AddQRFixture.shown()
        // "##" a module: 98 columns wide, 49 rows.
        let large = ViewFixture.render(state, rows: 60, columns: 170, unicode: false)
        #expect(large.dump.contains("########"))
        #expect(!large.dump.contains("too small"))
        let small = ViewFixture.render(state, rows: 30, columns: 100, unicode: false)
        #expect(!small.dump.contains("##"))
        #expect(small.dump.contains("The terminal is too small for the QR code: it needs 98 columns and"))
        #expect(
            small.dump.replacingOccurrences(of: "\n", with: "").replacingOccurrences(of: " ", with: "").contains(
                AddQRFixture.uri))
    }

    @Test func theAddDialogsHintsNameCtrlG() {
        let screen = ViewFixture.render(AddQRFixture.adding(), rows: 30, columns: 100)
        #expect(screen.dump.contains("Ctrl-G new secret"))
        #expect(screen.dump.contains("URI or image file"))
        // Other dialogs keep the keys every form has.
        var s = ViewFixture.state()
        _ = update(&s, .keyPress(.char("P")))
        #expect(!ViewFixture.render(s, rows: 30, columns: 100).dump.contains("Ctrl-G"))
    }
}
