/// A zero-based cell position on a screen.
public struct CellPosition: Hashable, Sendable, CustomStringConvertible {
    public var row: Int
    public var column: Int

    /// The position, when it lies on a screen of `size`; nil (no cursor) otherwise.
    public static func on(_ size: ScreenSize, row: Int, column: Int) -> CellPosition? {
        row >= 0 && row < size.rows && column >= 0 && column < size.columns
            ? CellPosition(row: row, column: column) : nil
    }

    public var description: String { "(\(row), \(column))" }
}

/// A screen held in memory, for testing views without a terminal. It follows the same clipping rules as the
/// ncurses screen: no wrapping, wide characters take two cells and are never drawn half, combining characters
/// join the cell before them, and control characters show as `?`. With `unicode: false` it behaves like a
/// terminal in an ASCII locale: non-ASCII text shows as `?` in every cell it would take.
public final class MemoryScreen: Screen {
    /// One cell of the grid.
    public struct Cell: Hashable, Sendable {
        /// What the cell shows: a character (with any combining characters joined to it). The right half of a wide
        /// character holds an empty string.
        public var text: String
        public var style: TextStyle
        /// 1 for a normal character, 2 for the left half of a wide character, 0 for its right half.
        public var width: Int

        public static let blank = Cell(text: " ", style: .plain, width: 1)

        public init(text: String, style: TextStyle, width: Int) {
            self.text = text
            self.style = style
            self.width = width
        }

        /// Whether this is the right half of a wide character.
        public var isContinuation: Bool { width == 0 }
    }

    public private(set) var size: ScreenSize
    public let unicode: Bool
    /// The cells, row by row.
    public private(set) var cells: [[Cell]]
    /// Where the cursor was asked to stand; nil when hidden.
    public private(set) var cursor: CellPosition?
    /// How many times `present()` was called.
    public private(set) var presentCount = 0
    /// How many times `erase()` was called.
    public private(set) var eraseCount = 0
    /// The lines as they were at the last `present()` (trailing spaces kept); empty before the first.
    public private(set) var presentedLines: [String] = []
    /// Bytes written with `writeRaw` (escape sequences such as OSC 52), in order.
    public private(set) var rawWrites: [[UInt8]] = []

    public init(rows: Int = 24, columns: Int = 80, unicode: Bool = true) {
        let size = ScreenSize(rows: max(0, rows), columns: max(0, columns))
        self.size = size
        self.unicode = unicode
        self.cells = Array(repeating: Array(repeating: .blank, count: size.columns), count: size.rows)
    }

    /// Changes the size as a terminal resize would: what fits is kept, new cells are blank, and a wide character
    /// cut by the new right edge is blanked.
    public func resize(rows: Int, columns: Int) {
        let newSize = ScreenSize(rows: max(0, rows), columns: max(0, columns))
        var newCells = Array(repeating: Array(repeating: Cell.blank, count: newSize.columns), count: newSize.rows)
        for row in 0..<min(newSize.rows, size.rows) {
            for column in 0..<min(newSize.columns, size.columns) {
                newCells[row][column] = cells[row][column]
            }
            if newSize.columns > 0, newSize.columns < size.columns, newCells[row][newSize.columns - 1].width == 2 {
                newCells[row][newSize.columns - 1] = Cell(
                    text: " ", style: newCells[row][newSize.columns - 1].style,
                    width: 1)
            }
        }
        cells = newCells
        size = newSize
        if let position = cursor, position.row >= newSize.rows || position.column >= newSize.columns {
            cursor = nil
        }
    }

    public func resize(_ newSize: ScreenSize) {
        resize(rows: newSize.rows, columns: newSize.columns)
    }

    // MARK: Screen

    public func erase() {
        eraseCount += 1
        for row in cells.indices {
            for column in cells[row].indices { cells[row][column] = .blank }
        }
    }

    public func draw(_ text: String, row: Int, column: Int, style: TextStyle, width: Int?) {
        guard row >= 0, row < size.rows else { return }
        let ascii = !unicode
        let text = ascii ? ASCIIFallback.fold(text) : text
        let placements = CellLayout.place(
            text, column: column, width: width, screenColumns: size.columns,
            representable: { ascii ? $0.isASCII : true })
        for placement in placements {
            put(placement.cell, row: row, column: placement.column, style: style)
        }
    }

    public func setCursor(row: Int, column: Int) {
        cursor = CellPosition.on(size, row: row, column: column)
    }

    public func hideCursor() {
        cursor = nil
    }

    public func present() {
        presentCount += 1
        presentedLines = lines
    }

    // MARK: Reading the grid

    /// Each row as text, trailing spaces kept (every line is `size.columns` cells wide).
    public var lines: [String] {
        (0..<size.rows).map { text(row: $0) }
    }

    /// Each row as text with trailing spaces removed.
    public var trimmedLines: [String] {
        (0..<size.rows).map { text(row: $0, trimmed: true) }
    }

    /// The whole screen as one string, rows trimmed and joined by newlines (handy in test failure messages).
    public var dump: String {
        trimmedLines.joined(separator: "\n")
    }

    /// The text of `row` (empty for a row outside the screen).
    public func text(row: Int, trimmed: Bool = false) -> String {
        guard row >= 0, row < size.rows else { return "" }
        var line = cells[row].map(\.text).joined()
        if trimmed {
            while line.last == " " { line.removeLast() }
        }
        return line
    }

    /// The text in `row` from `column`, `width` cells long (a wide character's halves count as its two cells).
    public func text(row: Int, column: Int, width: Int) -> String {
        guard row >= 0, row < size.rows else { return "" }
        let start = max(0, column)
        let end = min(size.columns, column + width)
        guard start < end else { return "" }
        return cells[row][start..<end].map(\.text).joined()
    }

    /// The cell at (`row`, `column`); a blank cell outside the screen.
    public func cell(row: Int, column: Int) -> Cell {
        guard row >= 0, row < size.rows, column >= 0, column < size.columns else { return .blank }
        return cells[row][column]
    }

    /// The style of the cell at (`row`, `column`).
    public func style(row: Int, column: Int) -> TextStyle {
        cell(row: row, column: column).style
    }

    /// Whether `text` appears within one row.
    public func contains(_ text: String) -> Bool {
        find(text) != nil
    }

    /// Where `text` first appears within one row, as a cell position, searching rows top to bottom.
    public func find(_ text: String) -> CellPosition? {
        guard !text.isEmpty else { return nil }
        for row in 0..<size.rows {
            // Search cell by cell so the column counts cells, not characters.
            let rowCells = cells[row]
            for start in rowCells.indices where !rowCells[start].isContinuation {
                var line = ""
                for cell in rowCells[start...] {
                    line += cell.text
                    if line.count >= text.count { break }
                }
                if line.hasPrefix(text) { return CellPosition(row: row, column: start) }
            }
        }
        return nil
    }

    /// Records bytes an application writes straight to the terminal (see `RawTerminalOutput`).
    public func writeRaw(_ bytes: [UInt8]) {
        rawWrites.append(bytes)
    }

    // MARK: Cells

    private func put(_ textCell: TextCell, row: Int, column: Int, style: TextStyle) {
        // Overwriting either half of a wide character blanks its other half.
        let existing = cells[row][column]
        if existing.isContinuation, column > 0 {
            cells[row][column - 1] = Cell(text: " ", style: cells[row][column - 1].style, width: 1)
        }
        let last = column + textCell.width - 1
        if cells[row][last].width == 2, last + 1 < size.columns {
            cells[row][last + 1] = Cell(text: " ", style: cells[row][last + 1].style, width: 1)
        }
        if textCell.width == 2 {
            cells[row][column] = Cell(text: textCell.text, style: style, width: 2)
            cells[row][column + 1] = Cell(text: "", style: style, width: 0)
        } else {
            cells[row][column] = Cell(text: textCell.text, style: style, width: 1)
        }
    }
}

/// A screen that can take bytes written straight to the terminal, bypassing the cell grid (OSC 52 clipboard
/// sequences). Write them after `present()`, so they do not land in the middle of a screen update.
public protocol RawTerminalOutput: AnyObject {
    func writeRaw(_ bytes: [UInt8])
}

extension MemoryScreen: RawTerminalOutput {}
