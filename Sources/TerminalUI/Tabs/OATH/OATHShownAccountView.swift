import AuthenticatorModel
import KeyKit

/// An account whose secret the Add dialog made, over the whole screen, shown once: its QR code (black on white, half
/// blocks, or "##" without UTF-8) beside its URI, or above it on a narrow terminal; on a terminal too small for the
/// code, the URI and the size the code needs (it shows once the terminal is large enough).
struct OATHShownAccountView {
    let app: AppView

    var screen: Screen { app.screen }
    var theme: Theme { app.theme }

    func render(_ shown: OATHShownAccount) {
        let rows = screen.size.rows, columns = screen.size.columns
        for row in 0..<rows { screen.draw(String.spaces(columns), row: row, column: 0, style: .plain) }
        let title = app.text(UIText("oath.shown.title", ["account": shown.id]))
        let note = app.text(UIText("oath.shown.note"))
        let hint = app.text(UIText("oath.shown.hint"))
        let lines: [String]
        var problem: String?
        do {
            lines = try QRCode(shown.uri)?.lines(unicode: screen.unicode) ?? []
        } catch {
            lines = []
            problem = app.text(ErrorExplanation(error).text)
        }
        let codeWidth = lines.first?.cellWidth ?? 0
        let hintRow = rows - 1
        screen.draw(hint.centered(inCells: columns, unicode: screen.unicode), row: hintRow, column: 0, style: theme.dim)
        // Beside the code: the code's height, and at least 30 columns for the words.
        let sideWidth = columns - codeWidth - 4
        if !lines.isEmpty, lines.count <= rows - 1, sideWidth >= 30 {
            let top = max(0, (rows - 1 - lines.count) / 2)
            code(lines, row: top, column: 1)
            let text = words(title: title, note: note, uri: shown.uri, width: sideWidth)
            if text.count <= rows - 1 {
                draw(text, row: max(0, (rows - 1 - text.count) / 2), column: codeWidth + 3, width: sideWidth)
                return
            }
        }
        // Above the URI.
        let width = max(1, columns - 2)
        let uri = wrap(shown.uri, width: width)
        let titleLines = wrap(title, width: width)
        if !lines.isEmpty, codeWidth <= columns, titleLines.count + lines.count + uri.count + 1 <= rows - 1 {
            draw(titleLines.map { ($0, theme.heading) }, row: 0, column: 1, width: width)
            code(lines, row: titleLines.count, column: max(0, (columns - codeWidth) / 2))
            draw(uri.map { ($0, TextStyle.plain) }, row: titleLines.count + lines.count, column: 1, width: width)
            return
        }
        // No room for the code: what it needs, and the URI.
        if problem == nil, !lines.isEmpty {
            let uriUnder = wrap(shown.uri, width: max(1, codeWidth - 2)).count
            let need = ["columns": String(codeWidth), "rows": String(titleLines.count + lines.count + uriUnder + 2)]
            problem = app.text(UIText("oath.shown.tooSmall", need))
        }
        var text = titleLines.map { ($0, theme.heading) }
        text += wrap(problem ?? "", width: width).map { ($0, theme.warning) }
        text += uri.map { ($0, TextStyle.plain) }
        draw(Array(text.prefix(max(0, rows - 1))), row: 0, column: 1, width: width)
    }

    /// The lines beside the code: title, note and URI, a blank line between them.
    private func words(title: String, note: String, uri: String, width: Int) -> [(String, TextStyle)] {
        wrap(title, width: width).map { ($0, theme.heading) } + [("", .plain)]
            + wrap(note, width: width).map { ($0, theme.dim) } + [("", .plain)]
            + wrap(uri, width: width).map { ($0, TextStyle.plain) }
    }

    private func code(_ lines: [String], row: Int, column: Int) {
        for (i, line) in lines.enumerated() {
            screen.draw(line, row: row + i, column: column, style: theme.qrCode)
        }
    }

    private func draw(_ lines: [(String, TextStyle)], row: Int, column: Int, width: Int) {
        for (i, line) in lines.enumerated() {
            screen.draw(line.0, row: row + i, column: column, style: line.1, width: width)
        }
    }
}
