import KeyKit

/// Where the cells of a drawn text land: the clipping rules every `Screen` shares.
///
/// Text never wraps; it is clipped at the screen's right edge and at `column + width`. A wide character that does
/// not fit whole is not drawn: the cells it would have half-covered become spaces. Cells left of column 0 are
/// skipped the same way.
struct CellPlacement: Equatable {
    let column: Int
    let cell: TextCell
}

enum CellLayout {
    static let space = TextCell(scalars: [" "], width: 1)

    /// The cells of `text` drawn from `column`, clipped to `[0, screenColumns)` and to `width` cells when given.
    /// `representable` says whether the terminal can show a cell; one it cannot is drawn as `?` in each of its cells.
    static func place(
        _ text: String, column: Int, width: Int?, screenColumns: Int,
        representable: (TextCell) -> Bool = { _ in true }
    ) -> [CellPlacement] {
        var limit = screenColumns
        if let width { limit = min(limit, column + max(0, width)) }
        guard column < limit else { return [] }
        var placements: [CellPlacement] = []
        if CellWidth.isPrintableASCII(text) {
            // One cell per byte, always representable: only the clipping is left to do.
            placements.reserveCapacity(max(0, min(limit, column + text.utf8.count) - max(column, 0)))
            var position = column
            for byte in text.utf8 {
                guard position < limit else { break }
                if position >= 0 { placements.append(CellPlacement(column: position, cell: TextCell(ascii: byte))) }
                position += 1
            }
            return placements
        }
        // Controls and bidirectional formatting characters from outside (an account name, NDEF text) are shown
        // as escapes (\x1B, \u{202E}): they never reach the terminal.
        let text = VisibleText.escaped(text)
        var position = column
        for character in text {
            guard position < limit else { break }
            var cell = TextCell(character)
            let end = position + cell.width
            if end > limit {
                // A wide character that would be cut at the right edge: blank what it would have covered.
                for blank in max(position, 0)..<limit { placements.append(CellPlacement(column: blank, cell: space)) }
                break
            }
            if position < 0 {
                for blank in 0..<max(end, 0) { placements.append(CellPlacement(column: blank, cell: space)) }
            } else if representable(cell) {
                placements.append(CellPlacement(column: position, cell: cell))
            } else {
                cell = TextCell.replacement
                for offset in 0..<(end - position) {
                    placements.append(CellPlacement(column: position + offset, cell: cell))
                }
            }
            position = end
        }
        return placements
    }
}
