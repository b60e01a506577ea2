/// A key press as the model sees it, decoded from the terminal by the screen layer.
public enum KeyPress: Hashable, Sendable {
    /// A printable character (text in a field, a binding outside one).
    case char(Character)
    case enter, escape, tab, backTab, backspace, delete
    case up, down, left, right, home, end, pageUp, pageDown
    /// Ctrl plus a letter, lowercase (`.ctrl("c")`).
    case ctrl(Character)
    /// A function key, F1 = 1.
    case function(Int)

    /// How the help overlay and the status line name the key.
    public var label: String {
        switch self {
        case .char(" "): return "Space"
        case .char(let c): return String(c)
        case .enter: return "Enter"
        case .escape: return "Esc"
        case .tab: return "Tab"
        case .backTab: return "Shift-Tab"
        case .backspace: return "Backspace"
        case .delete: return "Del"
        case .up: return "Up"
        case .down: return "Down"
        case .left: return "Left"
        case .right: return "Right"
        case .home: return "Home"
        case .end: return "End"
        case .pageUp: return "PgUp"
        case .pageDown: return "PgDn"
        case .ctrl(let c): return "Ctrl-\(String(c).uppercased())"
        case .function(let n): return "F\(n)"
        }
    }
}
