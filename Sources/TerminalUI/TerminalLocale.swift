import Glibc

/// The character set the terminal is drawn in, decided on its own.
///
/// Only LC_CTYPE matters for drawing, so it is set alone, and LC_MESSAGES beside it for the C library's own
/// texts (`strerror`) in the user's language; the other eleven categories are left alone (`setlocale(LC_ALL,
/// "")` reads a file for each of them, about a third of a millisecond at every start with `C.UTF-8`). When the
/// locale LC_CTYPE names is missing but asks for UTF-8 (`de_DE.UTF-8`) — common over SSH, where the client's
/// `LANG` and `LC_*` are forwarded to a host without them — a UTF-8 locale every glibc has (`C.UTF-8`) stands
/// in. The language of ykterm's own text is chosen elsewhere, from LC_ALL / LC_MESSAGES / LANG, installed or
/// not.
public enum TerminalLocale {
    public struct Outcome: Sendable, Equatable {
        /// The character set in use (`UTF-8`, `ANSI_X3.4-1968`, ...).
        public var codeset: String
        /// The LC_CTYPE locale the environment names (LC_ALL, else LC_CTYPE, else LANG; empty for none).
        public var requested: String
        /// The locale used instead of `requested` because that one is not installed, if any.
        public var standIn: String?

        public var isUTF8: Bool { ["utf-8", "utf8"].contains(codeset.lowercased()) }
    }

    /// UTF-8 locales tried, in order, when the one asked for is missing.
    static let utf8StandIns = ["C.UTF-8", "C.utf8", "en_US.UTF-8"]

    /// The locale name that decides LC_CTYPE, as POSIX orders the variables.
    public static func requestedCType(_ environment: [String: String]) -> String {
        for name in ["LC_ALL", "LC_CTYPE", "LANG"] {
            if let value = environment[name], !value.isEmpty { return value }
        }
        return ""
    }

    /// Whether a locale name asks for UTF-8 (`de_DE.UTF-8`, `en_US.utf8`, `C.UTF-8@euro`).
    public static func asksForUTF8(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.contains(".utf-8") || lower.contains(".utf8")
    }

    /// Sets the process's locale for drawing (LC_CTYPE, with a UTF-8 stand-in where one is asked for and
    /// missing; LC_MESSAGES when installed) and says what came of it.
    @discardableResult
    public static func setUp(environment: [String: String]) -> Outcome {
        let requested = requestedCType(environment)
        var standIn: String?
        if setlocale(LC_CTYPE, "") == nil, asksForUTF8(requested) {
            standIn = utf8StandIns.first { setlocale(LC_CTYPE, $0) != nil }
        }
        _ = setlocale(LC_MESSAGES, "")
        let codeset = nl_langinfo(nl_item(CODESET)).map { String(cString: $0) } ?? ""
        return Outcome(codeset: codeset, requested: requested, standIn: standIn)
    }
}
