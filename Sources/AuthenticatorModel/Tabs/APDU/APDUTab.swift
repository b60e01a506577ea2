import FoundationEssentials
import Glibc
import KeyKit

// The APDU console.
//
// The input line has the keyboard when the tab opens; Enter sends, Up/Down walk the history, Esc leaves the
// input so the global keys (q, ?, i, K, 1-4) work again, and Enter, `:` or the filter key (`/`) go back into
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

public struct APDUDialog: Sendable, Hashable {
    public var kind: APDUDialogKind
    public var form: Form

    public init(kind: APDUDialogKind, form: Form) {
        self.kind = kind
        self.form = form
    }
}

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

// MARK: - Parsing the input

/// The names `select` knows besides those of `AID.known`.
let apduAliases: [String: String] = ["fido2": "FIDO", "u2f": "FIDO", "mgmt": "Management", "pgp": "OpenPGP",
                                     "gpg": "OpenPGP", "yubiotp": "OTP"]

/// Understands a console line: hex (spaces, colons allowed) or `select <name>` / `sel <name>`.
public func parseAPDUInput(_ text: String) -> APDUInput {
    let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    guard let first = words.first else { return .empty }
    let names = AID.known.map(\.name).joined(separator: ", ")
    if ["select", "sel"].contains(first.lowercased()) {
        guard words.count == 2 else { return .problem(UIText("apdu.problem.selectUsage", ["names": names])) }
        let name = words[1]
        let known = AID.known.first { $0.name.lowercased() == (apduAliases[name.lowercased()] ?? name).lowercased() }
        let aid: [UInt8]
        let label: String
        if let known {
            aid = known.aid
            label = "SELECT \(known.name)"
        } else if let bytes = try? Hex.decode(name), (5...16).contains(bytes.count) {
            aid = bytes
            label = "SELECT \(Hex.encode(bytes, uppercase: true))"
        } else {
            return .problem(UIText("apdu.problem.unknownApp", ["name": name, "names": names]))
        }
        let bytes = (try? APDU.select(aid: aid).encoded()) ?? []
        return .command(bytes: bytes, label: label,
                        summary: UIText("apdu.input.select", ["hex": Hex.encode(bytes, uppercase: true)]))
    }
    let bytes: [UInt8]
    do {
        bytes = try Hex.decode(text)
    } catch {
        switch error {
        case .invalidCharacter(let c, let offset):
            return .problem(UIText("apdu.problem.notHex", ["char": String(c), "position": String(offset + 1)]))
        case .oddLength(let n):
            return .problem(UIText("apdu.problem.odd", ["count": String(n)]))
        }
    }
    let n = bytes.count
    guard n >= 4 else { return .problem(UIText("apdu.problem.short", ["count": String(n)])) }
    if n > 5, bytes[4] != 0 {
        let lc = Int(bytes[4]), follow = n - 5
        guard follow == lc || follow == lc + 1 else {
            return .problem(UIText("apdu.problem.lc", ["lc": String(lc), "follow": String(follow)]))
        }
    }
    let apdu: APDU
    do {
        apdu = try APDU(parsing: bytes)
    } catch {
        return .problem(UIText("apdu.problem.invalid", ["why": error.description]))
    }
    var summary = ["bytes": String(n), "case": String(apdu.apduCase.rawValue), "lc": String(apdu.data.count),
                   "le": apdu.le.map(String.init) ?? "-"]
    summary["ins"] = Hex.encode([apdu.ins], uppercase: true)
    // A SELECT typed in hex is labelled like the `select NAME` shortcut when the AID is a known one.
    let known = apduSelected(bytes).flatMap { name in AID.known.contains { $0.name == name } ? "SELECT \(name)" : nil }
    return .command(bytes: bytes, label: known, summary: UIText("apdu.input.ok", summary))
}

// MARK: - Formatting answers

/// Tag names of the OATH application's TLVs (YKOATH), shown next to them when OATH is selected.
let oathTagNames: [UInt32: String] = [
    0x71: "name", 0x72: "name list", 0x73: "key", 0x74: "challenge", 0x75: "response",
    0x76: "truncated response", 0x77: "no response", 0x78: "property", 0x79: "version", 0x7A: "IMF",
    0x7B: "algorithm", 0x7C: "touch",
]

/// Hex in groups of 16 bytes, bytes separated by spaces.
func apduHexLines(_ bytes: [UInt8]) -> [String] {
    stride(from: 0, to: bytes.count, by: 16).map { start in
        bytes[start..<min(start + 16, bytes.count)].map { Hex.encode([$0], uppercase: true) }.joined(separator: " ")
    }
}

/// The TLV view of response data: BER first (constructed tags opened when their value parses), then the
/// one-byte tags of the YubiKey applications; nil when neither fills the data exactly.
public func apduTLVLines(_ data: [UInt8], tagNames: [UInt32: String] = [:]) -> (mode: TLV.TagMode, lines: [(depth: Int, text: String, name: String?)])? {
    guard !data.isEmpty else { return nil }
    for mode in [TLV.TagMode.ber, .simple] {
        guard let tlvs = try? TLV.parseAll(data, mode: mode) else { continue }
        var lines = [(depth: Int, text: String, name: String?)]()
        func add(_ tlvs: [TLV], depth: Int) {
            for t in tlvs {
                let tag = Hex.encode(t.tagBytes, uppercase: true)
                var name = depth == 0 ? tagNames[t.tag] : nil
                // OATH account names read as text: a name (71), or a LIST entry (72: kind and algorithm, then the name).
                if let n = name, tagNames[0x72] == "name list", t.tag == 0x71 || t.tag == 0x72 {
                    let text = t.tag == 0x71 ? t.value[...] : t.value.dropFirst()
                    if !text.isEmpty, let decoded = String(validating: text, as: UTF8.self),
                       !decoded.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                        name = n + " \"" + decoded + "\""
                    }
                }
                if t.isConstructed, depth < 8, !t.value.isEmpty, let children = try? t.children(mode: mode) {
                    lines.append((depth, "\(tag) (\(t.value.count))", name))
                    add(children, depth: depth + 1)
                } else {
                    let value = t.value.count > 48 ? Hex.encode(t.value.prefix(48), uppercase: true) + "…"
                                                   : Hex.encode(t.value, uppercase: true)
                    lines.append((depth, "\(tag) (\(t.value.count)) \(value)", name))
                }
            }
        }
        add(tlvs, depth: 0)
        return (mode, lines)
    }
    return nil
}

/// The data as text, when it is all printable ASCII ("U2F_V2").
func apduText(_ data: [UInt8]) -> String? {
    guard data.count >= 2, data.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
    return String(decoding: data, as: UTF8.self)
}

/// The log lines of one answer: the raw exchanges when the answer came in parts, the status word with its
/// meaning, the data in hex, its TLV view and its text.
func apduAnswerLines(exchanges: [APDUExchange], response: Response, application: String?) -> [APDULogLine] {
    var lines = [APDULogLine]()
    if exchanges.count > 1 {
        for e in exchanges {
            lines.append(APDULogLine(.wire, .literal("  → " + Hex.encode(e.command, uppercase: true))))
            if let r = try? Response(raw: e.response) {
                lines.append(APDULogLine(.wire, UIText("apdu.log.wireAnswer", [
                    "count": String(r.data.count), "sw": r.status.hexString, "meaning": r.status.meaning])))
            }
        }
    }
    let status = response.status
    lines.append(APDULogLine(status.isSuccess ? .ok : .failure, .literal("< " + status.description),
                             suffix: response.data.isEmpty ? nil : UIText("apdu.log.bytes", ["count": String(response.data.count)])))
    for hex in apduHexLines(response.data) { lines.append(APDULogLine(.data, .literal("  " + hex))) }
    let names = application == "OATH" ? oathTagNames : [:]
    if let tlv = apduTLVLines(response.data, tagNames: names) {
        lines.append(APDULogLine(.note, UIText(tlv.mode == .ber ? "apdu.log.tlv" : "apdu.log.tlvSimple")))
        for l in tlv.lines {
            lines.append(APDULogLine(.tlv, .literal(String(repeating: "  ", count: l.depth + 2) + l.text),
                                     suffix: l.name.map { .literal($0) }))
        }
    } else if let text = apduText(response.data) {
        lines.append(APDULogLine(.data, UIText("apdu.log.text", ["text": text])))
    }
    return lines
}

/// The application a SELECT command names, by its known name or its AID in hex.
func apduSelected(_ bytes: [UInt8]) -> String? {
    guard let apdu = try? APDU(parsing: bytes), apdu.ins == 0xA4, apdu.p1 == 0x04, !apdu.data.isEmpty else { return nil }
    if let known = AID.known.first(where: { apdu.data.starts(with: $0.aid) }) { return known.name }
    return Hex.encode(apdu.data, uppercase: true)
}

// MARK: - Update

func appendLog(_ state: inout AppState, _ lines: [APDULogLine]) {
    appendLog(&state.apdu, lines)
}

func apduTabUpdate(_ state: inout AppState, _ msg: APDUTabMsg) -> [Command] {
    switch msg {
    case .answered(let keyID, let id, let exchanges, let response):
        guard keyID == state.apdu.keyID, id == state.apdu.pending else { return [] }
        state.apdu.pending = nil
        state.apdu.connected = true
        let command = exchanges.first?.command ?? []
        if let app = apduSelected(command) { state.apdu.application = response.status.isSuccess ? app : nil }
        appendLog(&state, apduAnswerLines(exchanges: exchanges, response: response, application: state.apdu.application))
        return []
    case .failed(let keyID, let id, let message, let keyGone):
        guard keyID == state.apdu.keyID, id == state.apdu.pending else { return [] }
        state.apdu.pending = nil
        // The work dropped its connection: the next command opens a new one, with nothing selected.
        state.apdu.connected = false
        state.apdu.application = nil
        appendLog(&state, [APDULogLine(.error, message)] + (keyGone ? [APDULogLine(.error, UIText("status.keyGoneMidOperation"))] : []))
        return []
    case .saved(let kind, let path):
        state.status = StatusMessage(UIText(kind == .transcript ? "apdu.save.saved.transcript" : "apdu.save.saved.history", ["path": path]), kind: .success,
                                     expires: state.now + statusSeconds)
        return []
    case .saveFailed(let kind, let path, let message, let exists):
        if exists {
            // The path goes in the note, which wraps: a long one would not fit the title.
            let form = Form.confirmation(title: UIText("apdu.save.overwriteTitle"),
                                         note: UIText("apdu.save.overwriteNote", ["path": path]), askedAt: state.now)
            state.apdu.dialog = APDUDialog(kind: .overwrite(kind, path: path), form: form)
            return []
        }
        state.status = StatusMessage(message, kind: .error, expires: state.now + 2 * statusSeconds)
        return []
    }
}

func apduTabOpened(_ state: inout AppState) -> [Command] {
    state.apdu.inputFocused = true
    return []
}

func apduTabTick(_ state: inout AppState) -> [Command] { [] }

/// The selected key changed or left: the console's connection belonged to the old one.
func apduTabKeyChanged(_ state: inout AppState) -> [Command] {
    guard let old = state.apdu.keyID, old != state.selectedKeyID else { return [] }
    let wasOpen = state.apdu.connected || state.apdu.pending != nil
    state.apdu.keyID = nil
    state.apdu.connected = false
    state.apdu.pending = nil
    state.apdu.application = nil
    state.apdu.otherWork = []
    guard wasOpen else { return [] }
    appendLog(&state, [APDULogLine(.note, UIText(state.keys.contains { $0.id == old } ? "apdu.note.closedChanged" : "apdu.note.closedLeft"))])
    return [.apdu(.close)]
}

/// Called with every batch of commands `update` returns: other tabs' work on the console's key may change
/// the application selected on it, which the log notes before the console's next command.
func apduNoteKeyWork(_ state: inout AppState, _ commands: [Command]) {
    guard state.apdu.connected, let keyID = state.apdu.keyID else { return }
    for command in commands {
        guard let (id, name) = command.keyApplication, (id ?? state.selectedKeyID) == keyID else { continue }
        // FIDO2 over HID leaves the smart-card interface's selection as it was.
        if name == "FIDO2", let key = state.keys.first(where: { $0.id == keyID }),
           key.descriptor.channels(for: .fido).first == .fidoHID { continue }
        if !state.apdu.otherWork.contains(name) { state.apdu.otherWork.append(name) }
    }
}

func apduTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    if state.apdu.dialog != nil { return apduDialogKey(&state, key) }
    switch key {
    case .pageUp:
        state.apdu.scroll = min(max(0, state.apdu.log.count - 1), state.apdu.scroll + APDUTabState.page)
        return []
    case .pageDown:
        state.apdu.scroll = max(0, state.apdu.scroll - APDUTabState.page)
        return []
    default: break
    }
    if state.apdu.inputFocused { return apduInputKey(&state, key) }
    func scroll(_ by: Int) { state.apdu.scroll = max(0, min(max(0, state.apdu.log.count - 1), state.apdu.scroll + by)) }
    switch key {
    case .enter, .char(":"):
        state.apdu.inputFocused = true
    case .up, .char("k"): scroll(1)
    case .down, .char("j"): scroll(-1)
    case .home, .char("g"): scroll(state.apdu.log.count)
    case .end, .char("G"): state.apdu.scroll = 0
    case .char("s"): state.apdu.dialog = saveDialog(.transcript, state)
    case .char("h"): state.apdu.dialog = saveDialog(.history, state)
    case .char("x"):
        state.apdu.log = []
        state.apdu.scroll = 0
    default:
        if state.bindings.action(for: key) == .filter { state.apdu.inputFocused = true }
    }
    return []
}

func apduInputKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    var apdu = state.apdu
    defer { state.apdu = apdu }
    switch key {
    case .escape:
        apdu.inputFocused = false
    case .enter:
        switch apdu.parsed {
        case .problem(let why):
            // Nothing is sent: the line stays as typed, to be corrected; the log and the status line say why.
            appendLog(&apdu, [APDULogLine(.error, UIText("apdu.log.notSent", ["input": apdu.input.text]), suffix: why)])
            state.status = StatusMessage(why, kind: .error, expires: state.now + statusSeconds)
            return []
        case .command where apdu.pending != nil:
            state.status = StatusMessage(UIText("apdu.status.pending"), kind: .warning, expires: state.now + statusSeconds)
            return []
        default:
            return apduSend(&apdu, state)
        }
    case .up:
        guard !apdu.history.isEmpty else { return [] }
        if let i = apdu.historyIndex {
            apdu.historyIndex = max(0, i - 1)
        } else {
            apdu.draft = apdu.input.text
            apdu.historyIndex = apdu.history.count - 1
        }
        apdu.input = TextField(apdu.history[apdu.historyIndex!], maxLength: APDUTabState.maxInput)
    case .down:
        guard let i = apdu.historyIndex else { return [] }
        if i + 1 < apdu.history.count {
            apdu.historyIndex = i + 1
            apdu.input = TextField(apdu.history[i + 1], maxLength: APDUTabState.maxInput)
        } else {
            apdu.historyIndex = nil
            apdu.input = TextField(apdu.draft, maxLength: APDUTabState.maxInput)
        }
    default:
        let before = apdu.input.text
        apdu.input.handle(key)
        if apdu.input.text != before { apdu.historyIndex = nil }
    }
    return []
}

/// Enter in the input: sends what is typed when it is a command (nothing while one is on its way).
func apduSend(_ apdu: inout APDUTabState, _ state: AppState) -> [Command] {
    guard case .command(let bytes, let label, _) = apdu.parsed else { return [] }
    guard let key = state.selectedKey else {
        appendLog(&apdu, [APDULogLine(.error, UIText("apdu.error.noKey"))])
        return []
    }
    guard apdu.pending == nil else { return [] }
    var lines = [APDULogLine]()
    if apdu.keyID != key.id || !apdu.connected {
        apdu.keyID = key.id
        apdu.otherWork = []
        lines.append(APDULogLine(.note, UIText("apdu.note.connecting", ["name": key.model ?? key.descriptor.name])))
    } else if !apdu.otherWork.isEmpty {
        lines.append(APDULogLine(.note, UIText("apdu.note.otherWork", ["what": apdu.otherWork.joined(separator: ", ")])))
        apdu.otherWork = []
    }
    lines.append(APDULogLine(.command, .literal("> " + Hex.encode(bytes, uppercase: true)), suffix: label.map { .literal($0) }))
    appendLog(&apdu, lines)
    let typed = apdu.input.text.trimmingSpaces
    if apdu.history.last != typed { apdu.history.append(typed) }
    if apdu.history.count > APDUTabState.maxHistory { apdu.history.removeFirst(apdu.history.count - APDUTabState.maxHistory) }
    apdu.historyIndex = nil
    apdu.draft = ""
    apdu.input = TextField(maxLength: APDUTabState.maxInput)
    let id = apdu.nextID
    apdu.nextID += 1
    apdu.pending = id
    // OATH fetches the rest of a long answer with SEND REMAINING; the other applications with GET RESPONSE.
    // A SELECT's own answer already comes from the application it selects.
    let target = apduSelected(bytes) ?? apdu.application
    let remaining: UInt8 = target == "OATH" ? YKOATH.Ins.sendRemaining : SmartCardProtocol.getResponse
    return [.apdu(.send(key.descriptor, bytes: bytes, remaining: remaining, id: id))]
}

func appendLog(_ apdu: inout APDUTabState, _ lines: [APDULogLine]) {
    apdu.log += lines
    if apdu.log.count > APDUTabState.maxLog { apdu.log.removeFirst(apdu.log.count - APDUTabState.maxLog) }
    apdu.scroll = 0
}

func saveDialog(_ kind: APDUSaveKind, _ state: AppState) -> APDUDialog {
    let name = kind == .transcript ? "ykterm-apdu-transcript.txt" : "ykterm-apdu-history.txt"
    var form = Form(title: UIText(kind == .transcript ? "apdu.save.title.transcript" : "apdu.save.title.history"),
                    fields: [Form.Field(UIText("apdu.save.path"), TextField(name, maxLength: 4096))])
    form.note = UIText(kind == .transcript ? "apdu.save.note.transcript" : "apdu.save.note.history")
    let empty = kind == .transcript ? state.apdu.log.isEmpty : state.apdu.history.isEmpty
    if empty { form.problem = nothingToSave(kind) }
    return APDUDialog(kind: .save(kind), form: form)
}

func apduDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    guard var dialog = state.apdu.dialog else { return [] }
    let outcome = dialog.form.handle(key, now: state.now)
    switch outcome {
    case .cancel:
        state.apdu.dialog = nil
        return []
    case .editing:
        if case .save = dialog.kind {
            dialog.form.problem = dialog.form[0].trimmingSpaces.isEmpty ? UIText("apdu.save.pathEmpty") : nil
        }
        state.apdu.dialog = dialog
        return []
    case .submit:
        let kind: APDUSaveKind, path: String, overwrite: Bool
        switch dialog.kind {
        case .save(let k):
            kind = k
            path = dialog.form[0].trimmingSpaces
            overwrite = false
            guard !path.isEmpty else {
                dialog.form.problem = UIText("apdu.save.pathEmpty")
                state.apdu.dialog = dialog
                return []
            }
        case .overwrite(let k, let p):
            kind = k
            path = p
            overwrite = true
        }
        let content: APDUSaveContent = kind == .transcript ? .transcript(state.apdu.log) : .history(state.apdu.history)
        let empty = kind == .transcript ? state.apdu.log.isEmpty : state.apdu.history.isEmpty
        guard !empty else {
            dialog.form.problem = nothingToSave(kind)
            state.apdu.dialog = dialog
            return []
        }
        state.apdu.dialog = nil
        return [.apdu(.save(path: path, content, overwrite: overwrite))]
    }
}

func nothingToSave(_ kind: APDUSaveKind) -> UIText {
    UIText(kind == .transcript ? "apdu.save.nothing.transcript" : "apdu.save.nothing.history")
}

/// Pasted text on the APDU tab goes into the file-name dialog or the command line (where it is checked as
/// typed text is); it is never sent by itself.
func apduTabPaste(_ state: inout AppState, _ text: String) -> Bool {
    if var dialog = state.apdu.dialog {
        guard dialog.form.paste(text) else { return false }
        state.apdu.dialog = dialog
        return true
    }
    guard state.apdu.inputFocused else { return false }
    state.apdu.input.insert(text)
    return true
}

/// The tab's keys, for the help overlay.
func apduTabHelp(_ state: AppState) -> [HelpEntry] {
    [
        HelpEntry("Enter", UIText("apdu.help.enter")),
        HelpEntry("Up/Down", UIText("apdu.help.history")),
        HelpEntry("PgUp/PgDn", UIText("apdu.help.scroll")),
        HelpEntry("Esc", UIText("apdu.help.escape")),
        HelpEntry(": \(state.bindings.key(for: .filter))", UIText("apdu.help.focus")),
        HelpEntry("select NAME", UIText("apdu.help.select")),
        HelpEntry("s / h", UIText("apdu.help.save")),
        HelpEntry("x", UIText("apdu.help.clear")),
    ]
}
