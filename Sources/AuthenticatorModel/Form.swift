/// A modal form: labelled fields, one with the focus, a live validation message, and what it is for.
/// Enter moves to the next field and submits on the last; Up/Down and Tab/Shift-Tab move between fields;
/// Esc cancels.
///
/// A form without fields is a confirmation, and a form with fields may ask one before it submits
/// (`confirming`). Both default to No and take only a deliberate answer: `y` (or `Y`) typed after the
/// question was on screen. A key that arrived in the same input burst as the key that asked (within
/// `burstSeconds`: a paste, or typeahead) answers nothing, and a bare Enter means No.
/// Names the fields of one kind of form: each form has an enum of its own (`AddField`, `PasswordField`, ...),
/// so fields are addressed by name, never by position.
public protocol FormFieldID: RawRepresentable, Sendable where RawValue == String {}

public struct Form: Sendable, Hashable {
    public struct Field: Sendable, Hashable {
        /// Which field this is: the raw value of its form's field enum (`FormFieldID`).
        public var id: String
        public var label: UIText
        public var input: TextField
        /// A yes/no field toggled with Space (the input's text is "yes" or "no").
        public var toggle: Bool
        /// Fixed choices cycled with Space or Left/Right (the input's text is one of them).
        public var choices: [String]

        public init(
            _ id: some FormFieldID, _ label: UIText, _ input: TextField = TextField(), toggle: Bool = false,
            choices: [String] = []
        ) {
            self.id = id.rawValue
            self.label = label
            self.input = input
            self.toggle = toggle
            self.choices = choices
        }

        public var isOn: Bool { input.text == "yes" }
        /// Free text (not a toggle or a choice): takes typed and pasted characters.
        public var isText: Bool { !toggle && choices.isEmpty }
    }

    /// A question asked before a form with fields submits (overwrite an account, remove a password).
    public struct Confirmation: Sendable, Hashable {
        public var question: UIText
        /// When the key that led to the question arrived (seconds since 1970).
        public var askedAt: Double

        public init(_ question: UIText, askedAt: Double) {
            self.question = question
            self.askedAt = askedAt
        }
    }

    /// Keys closer than this to the key that asked a question belong to its burst and do not answer it.
    public static let burstSeconds = 0.05

    public var title: UIText
    public var fields: [Field]
    public var focus = 0
    /// The first problem with what is typed, re-checked after every key.
    public var problem: UIText?
    /// A line under the fields (what the form does, what will be lost).
    public var note: UIText?
    /// A confirmation has no fields: only `y` confirms; n, Esc and Enter cancel.
    public var isConfirmation: Bool { fields.isEmpty }
    /// When a confirmation was opened (the time of the key that opened it).
    public var askedAt: Double?
    /// The question a form with fields asks before it submits; nil while editing.
    public var confirming: Confirmation?
    /// The question was answered yes: the next submit goes through (any edit takes it back).
    public var confirmed = false
    /// Set while the key works on the submitted form.
    public var busy = false

    public init(title: UIText, fields: [Field], note: UIText? = nil) {
        self.title = title
        self.fields = fields
        self.note = note
    }

    /// A yes/no question (delete, reset, overwrite), opened by a key that arrived at `askedAt`.
    public static func confirmation(title: UIText, note: UIText? = nil, askedAt: Double) -> Form {
        var form = Form(title: title, fields: [], note: note)
        form.askedAt = askedAt
        return form
    }

    /// Asks `question` before the form submits; the answer comes through `handle`.
    public mutating func ask(_ question: UIText, at now: Double) {
        confirming = Confirmation(question, askedAt: now)
        confirmed = false
    }

    /// The answer to a question asked at `askedAt`, for a key at `now`: true yes, false no, nil not an answer.
    static func answer(_ key: KeyPress, askedAt: Double?, now: Double) -> Bool? {
        switch key {
        case .char("y"), .char("Y"):
            // Part of the burst that asked (typeahead or a paste) is no reply to what is on screen.
            if let askedAt, now - askedAt < burstSeconds { return nil }
            return true
        case .char("n"), .char("N"), .enter, .escape:
            return false
        default:
            return nil
        }
    }

    /// The text of field `id` ("" when the form has no such field).
    public subscript<F: FormFieldID>(_ id: F) -> String {
        get { index(of: id).map { fields[$0].input.text } ?? "" }
        set {
            guard let i = index(of: id) else { return }
            fields[i].input = TextField(newValue, secret: fields[i].input.secret, maxLength: fields[i].input.maxLength)
        }
    }

    /// Overwrites and empties field `id`.
    public mutating func clear<F: FormFieldID>(_ id: F) {
        if let i = index(of: id) { fields[i].input.clear() }
    }

    /// Whether the form has field `id` (some forms have a field only sometimes: the current password).
    public func has<F: FormFieldID>(_ id: F) -> Bool { index(of: id) != nil }

    /// Whether the toggle `id` is on.
    public func isOn<F: FormFieldID>(_ id: F) -> Bool { index(of: id).map { fields[$0].isOn } ?? false }

    /// Moves the focus to field `id`.
    public mutating func focus<F: FormFieldID>(on id: F) {
        if let i = index(of: id) { focus = i }
    }

    /// Whether the focus is past field `id` (it has been filled in, or skipped).
    public func focusIsPast<F: FormFieldID>(_ id: F) -> Bool { index(of: id).map { focus > $0 } ?? false }

    private func index<F: FormFieldID>(of id: F) -> Int? { fields.firstIndex { $0.id == id.rawValue } }

    public enum Outcome: Sendable, Equatable { case editing, submit, cancel }

    /// Applies a key that arrived at `now` (the time decides whether it answers a question).
    public mutating func handle(_ key: KeyPress, now: Double) -> Outcome {
        if busy { return key == .escape ? .cancel : .editing }
        if isConfirmation {
            switch Self.answer(key, askedAt: askedAt, now: now) {
            case true?: return .submit
            case false?: return .cancel
            case nil: return .editing
            }
        }
        if let question = confirming {
            switch Self.answer(key, askedAt: question.askedAt, now: now) {
            case true?:
                confirming = nil
                confirmed = true
                return .submit
            case false?:
                // No: back to the fields, nothing lost.
                confirming = nil
                return .editing
            case nil:
                return .editing
            }
        }
        confirmed = false
        switch key {
        case .escape: return .cancel
        case .enter:
            if focus < fields.count - 1 { focus += 1; return .editing }
            return .submit
        case .up, .backTab: focus = max(0, focus - 1)
        case .down, .tab: focus = min(fields.count - 1, focus + 1)
        default:
            var field = fields[focus]
            if field.toggle {
                if key == .char(" ") || key == .left || key == .right {
                    field.input = TextField(field.isOn ? "no" : "yes")
                }
            } else if !field.choices.isEmpty {
                let i = field.choices.firstIndex(of: field.input.text) ?? 0
                if key == .char(" ") || key == .right {
                    field.input = TextField(field.choices[(i + 1) % field.choices.count])
                } else if key == .left {
                    field.input = TextField(field.choices[(i + field.choices.count - 1) % field.choices.count])
                }
            } else {
                field.input.handle(key)
            }
            fields[focus] = field
        }
        return .editing
    }

    /// Pasted text into the focused text field; false when nothing could take it (a confirmation, a
    /// toggle or a choice, or the form is busy).
    @discardableResult
    public mutating func paste(_ text: String) -> Bool {
        guard !busy, confirming == nil, fields.indices.contains(focus), fields[focus].isText else { return false }
        confirmed = false
        fields[focus].input.insert(text)
        return true
    }

    /// The form's command went to the key: it is busy until the answer comes, and the secrets typed left the
    /// state with the command.
    public mutating func sent() {
        wipeSecrets()
        busy = true
        problem = nil
    }

    /// Empties every secret field.
    public mutating func wipeSecrets() {
        for i in fields.indices where fields[i].input.secret { fields[i].input.clear() }
    }
}
