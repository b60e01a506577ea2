import KeyKit

/// Fitting text into a number of terminal cells. Every function counts cells, not characters: a wide character
/// takes two, a combining character none.
public enum TextAlignment: Sendable {
    case left, right, center
}

extension String {
    /// The cells this text takes on a screen.
    public var cellWidth: Int { CellWidth.of(self) }

    /// The text cut to at most `width` cells; when cut, it ends with an ellipsis (`…`, or `...` without Unicode)
    /// within those cells. A wide character that would straddle the limit is left out.
    public func truncated(toCells width: Int, unicode: Bool) -> String {
        guard width > 0 else { return "" }
        if cellWidth <= width { return self }
        let ellipsis = unicode ? "…" : "..."
        let ellipsisWidth = ellipsis.count
        if width <= ellipsisWidth { return prefix(cells: width) }
        return prefix(cells: width - ellipsisWidth) + ellipsis
    }

    /// The longest start of the text that fits in `width` cells (no ellipsis).
    public func prefix(cells width: Int) -> String {
        var result = ""
        var used = 0
        for character in self {
            let cellWidth = CellWidth.of(character)
            if used + cellWidth > width { break }
            result.append(character)
            used += cellWidth
        }
        return result
    }

    /// The text fitted to exactly `width` cells: truncated with an ellipsis when longer, padded with spaces when
    /// shorter, aligned as asked.
    public func padded(toCells width: Int, alignment: TextAlignment = .left, unicode: Bool = true) -> String {
        guard width > 0 else { return "" }
        let fitted = truncated(toCells: width, unicode: unicode)
        let missing = width - fitted.cellWidth
        guard missing > 0 else { return fitted }
        switch alignment {
        case .left:
            return fitted + String.spaces(missing)
        case .right:
            return String.spaces(missing) + fitted
        case .center:
            let left = missing / 2
            return String.spaces(left) + fitted + String.spaces(missing - left)
        }
    }

    /// The text centred in `width` cells (extra space goes to the right), truncated when longer.
    public func centered(inCells width: Int, unicode: Bool = true) -> String {
        padded(toCells: width, alignment: .center, unicode: unicode)
    }

    /// The column at which text of this width starts when centred in `width` cells starting at `column`.
    public func centeredColumn(in width: Int, from column: Int = 0) -> Int {
        column + max(0, (width - cellWidth) / 2)
    }
}

/// Small drawing helpers the views share.
public enum Widgets {
    /// A horizontal bar `width` cells wide, filled from the left to `fraction` (clamped to 0…1).
    /// With Unicode the last filled cell shows eighths (`▏▎▍▌▋▊▉`, full cells `█`, the rest spaces);
    /// without, filled cells are `#` and the rest `-`.
    public static func bar(fraction: Double, width: Int, unicode: Bool) -> String {
        guard width > 0 else { return "" }
        let clamped = fraction.isNaN ? 0 : min(1, max(0, fraction))
        if unicode {
            let eighths = Int((clamped * Double(width) * 8).rounded())
            let full = eighths / 8
            let remainder = eighths % 8
            let partials: [Character] = ["▏", "▎", "▍", "▌", "▋", "▊", "▉"]
            var result = String(repeating: "█", count: full)
            if remainder > 0 { result.append(partials[remainder - 1]) }
            result += String.spaces(width - full - (remainder > 0 ? 1 : 0))
            return result
        } else {
            let filled = Int((clamped * Double(width)).rounded())
            return String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        }
    }
}

/// The characters of a box outline.
public struct BoxCharacters: Hashable, Sendable {
    public var horizontal: Character
    public var vertical: Character
    public var topLeft: Character
    public var topRight: Character
    public var bottomLeft: Character
    public var bottomRight: Character

    public init(
        horizontal: Character, vertical: Character, topLeft: Character, topRight: Character,
        bottomLeft: Character, bottomRight: Character
    ) {
        self.horizontal = horizontal
        self.vertical = vertical
        self.topLeft = topLeft
        self.topRight = topRight
        self.bottomLeft = bottomLeft
        self.bottomRight = bottomRight
    }

    /// `─│┌┐└┘`
    public static let unicode = BoxCharacters(
        horizontal: "─", vertical: "│", topLeft: "┌", topRight: "┐",
        bottomLeft: "└", bottomRight: "┘")
    /// `-|+`
    public static let ascii = BoxCharacters(
        horizontal: "-", vertical: "|", topLeft: "+", topRight: "+",
        bottomLeft: "+", bottomRight: "+")

    public static func forScreen(unicode: Bool) -> BoxCharacters { unicode ? .unicode : .ascii }
}

/// A rectangle outlined on a screen, with an optional title in its top edge.
public struct Box: Hashable, Sendable {
    public var row: Int
    public var column: Int
    public var height: Int
    public var width: Int

    public init(row: Int, column: Int, height: Int, width: Int) {
        self.row = row
        self.column = column
        self.height = height
        self.width = width
    }

    /// A box of `height` × `width` centred on a screen of `size` (shrunk to fit).
    public static func centered(height: Int, width: Int, in size: ScreenSize) -> Box {
        let h = min(height, size.rows)
        let w = min(width, size.columns)
        return Box(row: max(0, (size.rows - h) / 2), column: max(0, (size.columns - w) / 2), height: h, width: w)
    }

    /// The first row inside the outline.
    public var innerRow: Int { row + 1 }
    /// The first column inside the outline.
    public var innerColumn: Int { column + 1 }
    /// Rows inside the outline.
    public var innerHeight: Int { max(0, height - 2) }
    /// Columns inside the outline.
    public var innerWidth: Int { max(0, width - 2) }

    /// Draws the outline (and blanks the inside when `fill`); the title, when given, sits in the top edge as
    /// `┌ Title ───┐`, truncated to fit.
    public func draw(
        on screen: Screen, title: String? = nil, style: TextStyle = .plain,
        titleStyle: TextStyle? = nil, fill: Bool = true
    ) {
        guard height >= 2, width >= 2 else { return }
        let chars = BoxCharacters.forScreen(unicode: screen.unicode)
        let horizontal = String(repeating: chars.horizontal, count: width - 2)
        screen.draw(
            String(chars.topLeft) + horizontal + String(chars.topRight), row: row, column: column,
            style: style, width: width)
        let blank = String.spaces(width - 2)
        for line in 1..<(height - 1) {
            screen.draw(String(chars.vertical), row: row + line, column: column, style: style, width: 1)
            if fill { screen.draw(blank, row: row + line, column: column + 1, style: .plain, width: width - 2) }
            screen.draw(String(chars.vertical), row: row + line, column: column + width - 1, style: style, width: 1)
        }
        screen.draw(
            String(chars.bottomLeft) + horizontal + String(chars.bottomRight), row: row + height - 1,
            column: column, style: style, width: width)
        if let title, !title.isEmpty, width >= 6 {
            let text = " " + title.truncated(toCells: width - 4, unicode: screen.unicode) + " "
            screen.draw(text, row: row, column: column + 1, style: titleStyle ?? style, width: width - 2)
        }
    }
}
