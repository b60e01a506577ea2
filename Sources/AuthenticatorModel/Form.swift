/// A modal form: labelled fields, one with the focus, a live validation message, and what it is for.
/// Enter moves to the next field and submits on the last; Up/Down move between fields; Esc cancels.
public struct Form: Sendable, Hashable {
    public struct Field: Sendable, Hashable {
        public var label: UIText
        public var input: TextField
        /// A yes/no field toggled with Space (the input's text is "yes" or "no").
        public var toggle: Bool
        /// Fixed choices cycled with Space or Left/Right (the input's text is one of them).
        public var choices: [String]

        public init(_ label: UIText, _ input: TextField = TextField(), toggle: Bool = false, choices: [String] = []) {
            self.label = label
            self.input = input
            self.toggle = toggle
            self.choices = choices
        }

        public var isOn: Bool { input.text == "yes" }
    }

    public var title: UIText
    public var fields: [Field]
    public var focus = 0
    /// The first problem with what is typed, re-checked after every key.
    public var problem: UIText?
    /// A line under the fields (what the form does, what will be lost).
    public var note: UIText?
    /// A confirmation has no fields: y / Enter confirms, n / Esc cancels.
    public var isConfirmation: Bool { fields.isEmpty }
    /// Set while the key works on the submitted form.
    public var busy = false

    public init(title: UIText, fields: [Field], note: UIText? = nil) {
        self.title = title
        self.fields = fields
        self.note = note
    }

    public subscript(_ i: Int) -> String { fields[i].input.text }

    public enum Outcome: Sendable, Equatable { case editing, submit, cancel }

    public mutating func handle(_ key: KeyPress) -> Outcome {
        if busy { return key == .escape ? .cancel : .editing }
        if isConfirmation {
            switch key {
            case .char("y"), .char("Y"), .char("j"), .char("J"), .enter: return .submit
            case .char("n"), .char("N"), .escape: return .cancel
            default: return .editing
            }
        }
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

    /// Empties every secret field.
    public mutating func wipeSecrets() {
        for i in fields.indices where fields[i].input.secret { fields[i].input.clear() }
    }
}
