import AuthenticatorModel
import CNCursesW

/// What the terminal reports to the app loop.
public enum InputEvent: Hashable, Sendable {
    case keyPress(KeyPress)
    /// The terminal changed size; the screen has already taken the new size. Redraw everything.
    case resize(ScreenSize)
    /// Text pasted while bracketed paste is on (newlines as `\n`); a text field inserts it, elsewhere it may be
    /// ignored or offered as an `otpauth://` URI.
    case paste(String)
}

/// One result of ncurses' `wget_wch`: a character (`OK`) or a key code (`KEY_CODE_YES`).
public enum RawInput: Hashable, Sendable {
    case character(UInt32)
    case keyCode(Int32)

    /// The raw input for a `wget_wch` return value and the value it stored; nil for `ERR`.
    public init?(status: Int32, value: UInt32) {
        switch status {
        case OK: self = .character(value)
        case KEY_CODE_YES: self = .keyCode(Int32(bitPattern: value))
        default: return nil
        }
    }
}

/// The fixed mapping from ncurses input to key presses: a pure function, tested without a terminal.
public enum KeyDecoder {
    /// The key for one raw input; nil for input the app has no use for (mouse, unknown keys, NUL).
    /// `KEY_RESIZE` is not a key: `InputDecoder` turns it into `.resize`.
    public static func decode(_ raw: RawInput) -> KeyPress? {
        switch raw {
        case .character(let value): return decodeCharacter(value)
        case .keyCode(let code): return decodeKeyCode(code)
        }
    }

    static func decodeCharacter(_ value: UInt32) -> KeyPress? {
        switch value {
        case 0x0D, 0x0A: return .enter
        case 0x7F, 0x08: return .backspace
        case 0x1B: return .escape
        case 0x09: return .tab
        case 1...26:
            // Ctrl-A … Ctrl-Z, except those above (Ctrl-H, -I, -J, -M arrive as Backspace, Tab and Enter).
            return .ctrl(Character(Unicode.Scalar(UInt8(0x60 + value))))
        case 0, 0x1C...0x1F, 0x80...0x9F:
            return nil
        default:
            guard let scalar = Unicode.Scalar(value) else { return nil }
            return .char(Character(scalar))
        }
    }

    static func decodeKeyCode(_ code: Int32) -> KeyPress? {
        switch code {
        case KEY_UP, KEY_SR: return .up
        case KEY_DOWN, KEY_SF: return .down
        case KEY_LEFT, KEY_SLEFT: return .left
        case KEY_RIGHT, KEY_SRIGHT: return .right
        case KEY_HOME, KEY_A1, KEY_SHOME, KEY_BEG: return .home
        case KEY_END, KEY_C1, KEY_SEND, KEY_LL: return .end
        case KEY_PPAGE, KEY_A3, KEY_SPREVIOUS: return .pageUp
        case KEY_NPAGE, KEY_C3, KEY_SNEXT: return .pageDown
        case KEY_BTAB: return .backTab
        case KEY_ENTER: return .enter
        case KEY_BACKSPACE: return .backspace
        case KEY_DC, KEY_SDC: return .delete
        case (KEY_F0 + 1)...(KEY_F0 + 63): return .function(Int(code - KEY_F0))
        default: return nil
        }
    }
}

/// Turns batches of raw input into events. Besides the key table it handles what ncurses leaves undecoded:
/// bracketed paste (`ESC [200~ … ESC [201~`), cursor and editing keys the terminfo entry does not describe
/// (`ESC [A`, `ESC OP`, `ESC [3~`, …, decoded when they arrive whole), and unknown escape sequences (dropped,
/// so they never turn into text). A lone ESC is the Escape key (ncurses has already waited ESCDELAY for more).
public struct InputDecoder: Sendable {
    /// The most text a single paste may carry; the rest is dropped.
    public static let maximumPaste = 64 * 1024

    private var pasting = false
    private var paste: [Unicode.Scalar] = []

    public init() {}

    /// Whether a bracketed paste has started and not yet ended.
    public var isPasting: Bool { pasting }

    /// The events in `batch` (everything read in one go). `size` is the screen size to report for a resize.
    public mutating func decode(_ batch: [RawInput], size: ScreenSize) -> [InputEvent] {
        var events: [InputEvent] = []
        var index = 0
        while index < batch.count {
            let raw = batch[index]
            index += 1
            if pasting {
                consumePasted(raw, into: &events)
                continue
            }
            switch raw {
            case .keyCode(let code) where code == KEY_RESIZE:
                if events.last != .resize(size) { events.append(.resize(size)) }
            case .character(0x1B):
                index = decodeEscape(batch, from: index, into: &events)
            default:
                if let key = KeyDecoder.decode(raw) { events.append(.keyPress(key)) }
            }
        }
        return events
    }

    /// Decodes what follows an ESC at `batch[start - 1]`; returns the index after what it consumed.
    private mutating func decodeEscape(_ batch: [RawInput], from start: Int, into events: inout [InputEvent]) -> Int {
        guard start < batch.count, case .character(let introducer) = batch[start],
            introducer == 0x5B || introducer == 0x4F
        else {
            // ESC alone, or ESC before a key (Alt+key): the Escape key, then the key itself.
            events.append(.keyPress(.escape))
            return start
        }
        // CSI (ESC [) or SS3 (ESC O): parameters 0x30–0x3F, intermediates 0x20–0x2F, a final byte 0x40–0x7E.
        var index = start + 1
        var parameters = ""
        while index < batch.count, case .character(let value) = batch[index] {
            index += 1
            if (0x30...0x3F).contains(value) || (0x20...0x2F).contains(value) {
                parameters.unicodeScalars.append(Unicode.Scalar(UInt8(value)))
                continue
            }
            if (0x40...0x7E).contains(value) {
                let final = Character(Unicode.Scalar(UInt8(value)))
                if introducer == 0x5B && final == "~" && parameters == "200" {
                    pasting = true
                    paste.removeAll()
                    // The rest of the batch is pasted text, up to the end marker.
                    while index < batch.count && pasting {
                        consumePasted(batch[index], into: &events)
                        index += 1
                    }
                } else if let key = Self.escapeSequenceKey(
                    ss3: introducer == 0x4F, parameters: parameters,
                    final: final)
                {
                    events.append(.keyPress(key))
                }
                return index
            }
            break
        }
        // An incomplete or malformed sequence: dropped, so it does not become text.
        return index
    }

    /// The key for a complete escape sequence ncurses did not know, or nil.
    static func escapeSequenceKey(ss3: Bool, parameters: String, final: Character) -> KeyPress? {
        // Modifier parameters (`1;5A` for Ctrl-Up) are ignored: the key is what matters.
        let first = parameters.split(separator: ";", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        switch final {
        case "A": return .up
        case "B": return .down
        case "C": return .right
        case "D": return .left
        case "H": return .home
        case "F": return .end
        case "Z": return .backTab
        case "M" where ss3: return .enter
        case "P" where ss3 || first == "1": return .function(1)
        case "Q" where ss3 || first == "1": return .function(2)
        case "R" where ss3 || first == "1": return .function(3)
        case "S" where ss3 || first == "1": return .function(4)
        case "~":
            switch first {
            case "1", "7": return .home
            case "4", "8": return .end
            case "3": return .delete
            case "5": return .pageUp
            case "6": return .pageDown
            case "11": return .function(1)
            case "12": return .function(2)
            case "13": return .function(3)
            case "14": return .function(4)
            case "15": return .function(5)
            case "17": return .function(6)
            case "18": return .function(7)
            case "19": return .function(8)
            case "20": return .function(9)
            case "21": return .function(10)
            case "23": return .function(11)
            case "24": return .function(12)
            default: return nil
            }
        default: return nil
        }
    }

    private static let pasteEnd: [Unicode.Scalar] = ["\u{1B}", "[", "2", "0", "1", "~"]

    private mutating func consumePasted(_ raw: RawInput, into events: inout [InputEvent]) {
        let scalar: Unicode.Scalar?
        switch raw {
        case .character(let value): scalar = Unicode.Scalar(value)
        case .keyCode(let code):
            // Keys ncurses matched inside pasted text: keep line breaks and tabs, drop the rest.
            switch code {
            case KEY_ENTER: scalar = "\n"
            default: scalar = nil
            }
        }
        guard let scalar else { return }
        if paste.count < Self.maximumPaste + Self.pasteEnd.count {
            paste.append(scalar)
        } else {
            // Over the limit: keep only a window long enough to see the end marker.
            paste.removeSubrange(Self.maximumPaste..<(Self.maximumPaste + 1))
            paste.append(scalar)
        }
        if paste.count >= Self.pasteEnd.count, Array(paste.suffix(Self.pasteEnd.count)) == Self.pasteEnd {
            paste.removeLast(Self.pasteEnd.count)
            events.append(.paste(Self.pastedText(paste)))
            paste.removeAll()
            pasting = false
        }
    }

    /// Pasted text with line breaks as `\n` (terminals send `\r`), and no control characters other than `\n`, `\t`.
    static func pastedText(_ scalars: [Unicode.Scalar]) -> String {
        var result = String.UnicodeScalarView()
        var previousWasCR = false
        for scalar in scalars.prefix(maximumPaste) {
            defer { previousWasCR = scalar == "\r" }
            switch scalar.value {
            case 0x0D: result.append("\n")
            case 0x0A: if !previousWasCR { result.append("\n") }
            case 0x09: result.append(scalar)
            case 0..<0x20, 0x7F...0x9F: continue
            default: result.append(scalar)
            }
        }
        return String(result)
    }
}
