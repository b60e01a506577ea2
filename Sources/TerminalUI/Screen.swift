import AuthenticatorModel

/// The colours a view may ask for; a monochrome terminal (or `NO_COLOR`) shows attributes only.
public enum TerminalColor: Int, Hashable, Sendable, CaseIterable {
    case black, red, green, yellow, blue, magenta, cyan, white
}

/// How a run of text is drawn.
public struct TextStyle: Hashable, Sendable {
    public var foreground: TerminalColor?
    public var background: TerminalColor?
    public var bold: Bool
    public var dim: Bool
    public var reverse: Bool
    public var underline: Bool

    public init(
        foreground: TerminalColor? = nil, background: TerminalColor? = nil, bold: Bool = false,
        dim: Bool = false, reverse: Bool = false, underline: Bool = false
    ) {
        self.foreground = foreground
        self.background = background
        self.bold = bold
        self.dim = dim
        self.reverse = reverse
        self.underline = underline
    }

    public static let plain = TextStyle()
}

/// Rows and columns of a screen.
public struct ScreenSize: Hashable, Sendable {
    public var rows: Int
    public var columns: Int
}

/// Where views draw: an ncurses terminal, or a grid in memory for tests. Coordinates are zero-based cells;
/// text is clipped at the right edge and never wraps; a wide character takes two cells.
public protocol Screen: AnyObject {
    var size: ScreenSize { get }
    /// Whether box-drawing and other non-ASCII symbols can be shown (a UTF-8 locale).
    var unicode: Bool { get }
    /// Blanks the whole screen (the next `present` sends only what changed).
    func erase()
    /// Draws `text` from (`row`, `column`), clipped to the screen and to `width` cells when given.
    func draw(_ text: String, row: Int, column: Int, style: TextStyle, width: Int?)
    /// Where the terminal's cursor stands after `present` (nil hides it).
    func setCursor(row: Int, column: Int)
    func hideCursor()
    /// Shows what was drawn since the last call.
    func present()
}

/// A screen the TUI's loop runs on: it draws (`Screen`), and it reads the keyboard through descriptors the
/// loop polls. `CursesScreen` is the terminal; tests give the loop a screen in memory fed with key presses.
public protocol InteractiveScreen: Screen {
    /// The descriptors the loop polls: when one is readable, `readAvailable` has input (or a resize) to give.
    var pollDescriptors: [Int32] { get }
    /// The input that has arrived, without waiting.
    func readAvailable() -> [InputEvent]
    /// The input went away for good (the terminal hung up): the loop ends.
    var inputClosed: Bool { get }
    /// Bytes written to the terminal as they are, after a frame (OSC 52 for the clipboard).
    func writeRaw(_ bytes: [UInt8])
    /// Restores what the screen changed (the terminal's modes); called once when the loop ends.
    func end()
}

extension Screen {
    public func draw(_ text: String, row: Int, column: Int, style: TextStyle = .plain) {
        draw(text, row: row, column: column, style: style, width: nil)
    }
}
