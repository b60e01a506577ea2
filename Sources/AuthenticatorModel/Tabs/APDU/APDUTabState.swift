import FoundationEssentials
import Glibc
import KeyKit

// The APDU console.
//
// The input line has the keyboard when the tab opens; Enter sends, Up/Down walk the history, Esc leaves the
// input so the global keys (q, ?, i, K, 1-5) work again, and Enter, `:` or the filter key (`/`) go back into
// it. Input is hex with or without spaces, checked as typed; `select <name>` / `sel <name>` (or
// `select <AID in hex>`) expands to an ISO SELECT of a known application. The console keeps one connection
// to the key from the first command until the key leaves or another key is selected (or the app ends), so a
// SELECT holds for the commands after it — as long as no other tab used the key in between, which the log
// notes when it happens.

/// One line of the console's log. `text` is a string-table entry (or a literal: hex, status words); the
/// view appends `suffix` resolved, dimmed.
public struct APDULogLine: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// `> 00A40400…` as sent.
        case command
        /// A raw exchange of a chained answer (61xx → GET RESPONSE).
        case wire
        /// The status word: 9000, or anything else.
        case ok, failure
        /// Response data in hex, its TLV view, its text.
        case data, tlv
        case note, error
    }

    public var kind: Kind
    public var text: UIText
    public var suffix: UIText?

    public init(_ kind: Kind, _ text: UIText, suffix: UIText? = nil) {
        self.kind = kind
        self.text = text
        self.suffix = suffix
    }
}

/// What is typed in the console, understood.
public enum APDUInput: Sendable, Hashable {
    case empty
    /// A command ready to send; `label` names a SELECT shortcut ("SELECT OATH"); `summary` describes it.
    case command(bytes: [UInt8], label: String?, summary: UIText)
    /// What is wrong, as typed.
    case problem(UIText)
}

/// The file-saving dialogs of the console.
public enum APDUSaveKind: String, Sendable, Hashable { case transcript, history }

public enum APDUDialogKind: Sendable, Hashable {
    case save(APDUSaveKind)
    /// The file exists: overwrite it?
    case overwrite(APDUSaveKind, path: String)
}

public typealias APDUDialog = TabDialog<APDUDialogKind>

/// What a save writes: the log (resolved to text by the work, in the user's language) or the history.
public enum APDUSaveContent: Sendable, Hashable {
    case transcript([APDULogLine])
    case history([String])
}

/// The APDU tab's state.
public struct APDUTabState: Sendable, Hashable {
    public var input = TextField(maxLength: APDUTabState.maxInput)
    /// The input line has the keyboard (true when the tab opens).
    public var inputFocused = true
    /// What was sent, oldest first, as typed (kept for the session).
    public var history: [String] = []
    /// The history entry shown while walking with Up/Down; nil when editing a new line.
    public var historyIndex: Int?
    /// The line being typed before Up recalled history.
    public var draft = ""
    public var log: [APDULogLine] = []
    /// Lines scrolled back from the newest (0: following the output).
    public var scroll = 0
    /// The key the console's connection belongs to.
    public var keyID: String?
    /// The console's connection is open (from the first answer until the key leaves or changes).
    public var connected = false
    /// The number of the command on its way, if any.
    public var pending: Int?
    public var nextID = 1
    /// The application the console's last SELECT chose, by name (or AID hex).
    public var application: String?
    /// Other tabs' work used the key since the console's last command (named: "OATH", "OTP", ...).
    public var otherWork: [String] = []
    public var dialog: APDUDialog?

    public static let maxInput = 8192
    public static let maxHistory = 500
    public static let maxLog = 5000
    /// Lines PgUp/PgDn scroll.
    public static let page = 10

    public init() {}

    /// True while a text field of the tab has the keyboard.
    public var textFocused: Bool { inputFocused || dialog != nil }

    /// The current input, understood.
    public var parsed: APDUInput { parseAPDUInput(input.text) }
}

public enum APDUTabMsg: Sendable {
    /// The answer to command `id`: every raw exchange and the gathered response.
    case answered(keyID: String, id: Int, exchanges: [APDUExchange], response: Response)
    case failed(keyID: String, id: Int, message: UIText, keyGone: Bool)
    case saved(APDUSaveKind, path: String)
    case saveFailed(APDUSaveKind, path: String, message: UIText, exists: Bool)
}

public enum APDUTabCommand: Sendable, Equatable {
    /// Sends `bytes` on the console's connection (opened when there is none for this key), fetching the rest
    /// of a 61xx answer with `remaining` (GET RESPONSE, or SEND REMAINING for OATH).
    case send(KeyDescriptor, bytes: [UInt8], remaining: UInt8, id: Int)
    /// Closes the console's connection.
    case close
    /// Writes a file with mode 0600; an existing file only with `overwrite`.
    case save(path: String, APDUSaveContent, overwrite: Bool)
}
