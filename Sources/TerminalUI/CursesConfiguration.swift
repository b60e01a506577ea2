import CNCursesW
import FoundationEssentials
import Glibc

/// How the ncurses screen is set up.
public struct CursesConfiguration: Sendable {
    public enum ColorMode: String, Sendable, CaseIterable {
        /// Colours when the terminal has them and `NO_COLOR` is unset or empty.
        case auto
        /// Colours whenever the terminal has them.
        case always
        /// Bold and reverse only.
        case never
    }

    public var colors: ColorMode
    /// Asks the terminal to mark pasted text (`ESC [?2004h`), so a paste arrives as one `.paste` event.
    public var bracketedPaste: Bool
    /// How long ncurses waits after ESC for the rest of an escape sequence, in milliseconds.
    public var escapeDelay: Int
    /// Whether Ctrl-C (SIGINT) reaches the app as the key `.ctrl("c")` so it can quit cleanly; a second Ctrl-C the
    /// app has not read yet ends the process (after restoring the terminal). When false, SIGINT restores the
    /// terminal and ends the process at once.
    public var interruptAsKey: Bool
    /// The environment consulted for `NO_COLOR` (the process environment by default).
    public var environment: [String: String]?

    public init(
        colors: ColorMode = .auto, bracketedPaste: Bool = true, escapeDelay: Int = 25,
        interruptAsKey: Bool = true, environment: [String: String]? = nil
    ) {
        self.colors = colors
        self.bracketedPaste = bracketedPaste
        self.escapeDelay = escapeDelay
        self.interruptAsKey = interruptAsKey
        self.environment = environment
    }
}

/// Why the terminal could not be opened.
public enum CursesScreenError: Error, Equatable, CustomStringConvertible {
    case notATerminal
    case unknownTerminal(String)
    case alreadyActive
    case background
    case system(SystemCallError)

    public var description: String {
        switch self {
        case .notATerminal: return "not a terminal: run ykterm in a terminal, or use a subcommand"
        case .unknownTerminal(let name):
            return "unknown terminal type \"\(name)\": set TERM (for example xterm-256color)"
        case .alreadyActive: return "the terminal is already in use by another screen"
        case .background: return "the terminal belongs to another job: bring ykterm to the foreground (fg)"
        case .system(let error): return error.description
        }
    }
}
