import Glibc

/// How many terminal cells text takes, and how text becomes cells.
///
/// Widths follow the C library's `wcwidth` as a UTF-8 locale sees it (glibc's tables, the same ones ncursesw uses to
/// place characters), evaluated in a per-thread `C.UTF-8` locale so results do not depend on the process locale.
/// When no UTF-8 locale can be loaded, a built-in table of combining marks and East Asian wide ranges is used.
public enum CellWidth {
    /// Cells taken by one scalar: 0 for combining marks and other zero-width scalars, 1 or 2 otherwise; -1 for
    /// control characters and scalars the C library calls unprintable.
    public static func of(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value >= 0x20 && value < 0x7F { return 1 }
        if value < 0x20 || (value >= 0x7F && value < 0xA0) { return -1 }
        if let width = CWidth.utf8Width(value) { return width }
        return fallbackWidth(scalar)
    }

    /// Cells taken by `text` when drawn (control characters count as the one cell their `?` takes).
    public static func of(_ text: String) -> Int {
        if isPrintableASCII(text) { return text.utf8.count }
        var total = 0
        for character in text { total += TextCell(character).width }
        return total
    }

    /// Whether every byte of `text` is a printable ASCII character (space to `~`): one cell each, drawn as is.
    /// Most of what a frame draws is such text, and it needs no grapheme or width work.
    @inline(__always)
    static func isPrintableASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// Cells taken by one character (grapheme cluster) when drawn: 1 or 2.
    public static func of(_ character: Character) -> Int {
        TextCell(character).width
    }

    /// The built-in table used when no UTF-8 locale is available.
    static func fallbackWidth(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (value >= 0x7F && value < 0xA0) { return -1 }
        if value == 0x200B || value == 0x200C || value == 0x200D || value == 0x2060 || value == 0xFEFF { return 0 }
        if (0xFE00...0xFE0F).contains(value) || (0xE0100...0xE01EF).contains(value) { return 0 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark: return 0
        case .format: return 0
        case .unassigned, .surrogate: return -1
        default: break
        }
        if (0x1160...0x11FF).contains(value) { return 0 }  // Hangul medial vowels and final consonants
        if scalar.properties.isEmojiPresentation { return 2 }
        let wideRanges: [ClosedRange<UInt32>] = [
            0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF,
            0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3,
            0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
            0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
        ]
        for range in wideRanges where range.contains(value) { return 2 }
        return 1
    }
}

/// One drawable cell's worth of text: a grapheme cluster reduced to what a terminal cell can hold (a spacing
/// character plus up to four zero-width ones), with its width (1 or 2). Control characters become `?`.
public struct TextCell: Hashable, Sendable {
    /// The spacing character drawn in the cell.
    public let base: Unicode.Scalar
    /// Zero-width characters joined to the base (combining marks, variation selectors); usually none, which
    /// keeps a cell free of heap storage.
    public let combining: [Unicode.Scalar]
    /// 1, or 2 for a wide character (CJK, emoji).
    public let width: Int

    /// The scalars to draw in this cell: the base character and the combining characters joined to it.
    public var scalars: [Unicode.Scalar] { [base] + combining }

    /// The most zero-width scalars an ncurses cell holds after its base character (CCHARW_MAX - 1).
    static let maximumCombining = 4

    public init(_ character: Character) {
        var base: Unicode.Scalar?
        var baseWidth = 1
        var combining: [Unicode.Scalar] = []
        for scalar in character.unicodeScalars {
            let width = CellWidth.of(scalar)
            if base == nil {
                if width < 0 {
                    // A control character or an unprintable scalar is never written raw.
                    base = "?"
                    baseWidth = 1
                } else if width == 0 {
                    // A combining mark with nothing before it in the text joins a space.
                    base = " "
                    baseWidth = 1
                    combining.append(scalar)
                } else {
                    base = scalar
                    baseWidth = width
                }
            } else if width == 0 && scalar.value != 0x200D {
                // Combining marks and variation selectors join the cell; a zero-width joiner would join a second
                // spacing character, which a single cell cannot hold, so that sequence shows its first character.
                if combining.count < TextCell.maximumCombining { combining.append(scalar) }
            }
            // Further spacing scalars in the same cluster (ZWJ sequences, flag pairs) are dropped.
        }
        self.base = base ?? "?"
        self.combining = combining
        self.width = baseWidth
    }

    init(scalars: [Unicode.Scalar], width: Int) {
        self.base = scalars.first ?? "?"
        self.combining = Array(scalars.dropFirst())
        self.width = width
    }

    /// The cell of a printable ASCII character (space to `~`).
    init(ascii byte: UInt8) {
        self.base = Unicode.Scalar(byte)
        self.combining = []
        self.width = 1
    }

    /// A one-cell placeholder of `?` characters standing for text the terminal cannot show.
    static let replacement = TextCell(scalars: ["?"], width: 1)

    /// The cell's text.
    public var text: String {
        var string = String.UnicodeScalarView()
        string.append(base)
        string.append(contentsOf: combining)
        return String(string)
    }

    /// Whether every scalar is ASCII.
    public var isASCII: Bool { base.isASCII && combining.allSatisfy { $0.isASCII } }

    /// The cells of `text`, in order.
    public static func cells(of text: String) -> [TextCell] {
        text.map { TextCell($0) }
    }
}

/// `wcwidth` evaluated in a UTF-8 locale, or in the process locale.
enum CWidth {
    private typealias WCWidth = @convention(c) (wchar_t) -> Int32

    /// glibc's `wcwidth`. Swift's Glibc module does not declare it (it sits behind `_XOPEN_SOURCE`), so it is
    /// looked up by name once.
    private static let wcwidthFunction: WCWidth? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "wcwidth") else { return nil }
        return unsafeBitCast(symbol, to: WCWidth.self)
    }()

    /// A `C.UTF-8` locale object (thread-safe to use with `uselocale`), created once; 0 when none can be loaded.
    /// Stored as an address because `locale_t` is not Sendable; the object is never freed or changed.
    private static let utf8Locale: UInt = {
        for name in ["C.UTF-8", "C.utf8", "en_US.UTF-8"] {
            if let locale = newlocale(LC_CTYPE_MASK, name, nil) { return UInt(bitPattern: locale) }
        }
        return 0
    }()

    /// Width of `value` under a UTF-8 locale, or nil when none is available.
    static func utf8Width(_ value: UInt32) -> Int? {
        guard let function = wcwidthFunction, utf8Locale != 0,
            let locale = locale_t(bitPattern: utf8Locale)
        else { return nil }
        let previous = uselocale(locale)
        let width = function(wchar_t(bitPattern: value))
        uselocale(previous)
        return Int(width)
    }

    /// Width of `value` under the process's current locale (what ncurses will use), or nil when unknown.
    static func processLocaleWidth(_ value: UInt32) -> Int? {
        guard let function = wcwidthFunction else { return nil }
        return Int(function(wchar_t(bitPattern: value)))
    }
}
