/// The actions a key can be bound to outside text fields.
public enum Action: String, CaseIterable, Sendable, Hashable {
    case quit, help, keys, device, filter, copy, add, delete, rename, pin, password, refresh
    /// The OATH tab: the selected key's accounts, or those of every key at once; the FIDO2 tab's credentials: the
    /// other keys' beside them (which keys hold a passkey for the same relying party).
    case allKeys = "all_keys"
    /// The OATH tab: the accounts of the selected key compared with each other key's (what `oath diff` says).
    case compare

    /// The string-table key of the help overlay's description.
    public var helpKey: String { "help.action.\(rawValue)" }
}

/// Which character triggers which action; defaults as in the man page, overridable in the config file.
public struct KeyBindings: Sendable, Hashable {
    /// One character per action, in `Action.allCases` order. An array, not a dictionary keyed by Action: every
    /// command loads the config, and a dictionary's first use costs a scan of the runtime's conformance records
    /// (Action: Hashable, about 190,000 instructions) that only the TUI's key handling would need.
    private var characters: [Character]

    /// The man page's bindings.
    public static func defaultKey(_ action: Action) -> Character {
        switch action {
        case .quit: "q"
        case .help: "?"
        case .keys: "K"
        case .device: "i"
        case .filter: "/"
        case .copy: "c"
        case .add: "a"
        case .delete: "d"
        case .rename: "r"
        case .pin: "p"
        case .password: "P"
        case .refresh: "R"
        case .allKeys: "A"
        case .compare: "D"
        }
    }

    public enum BindingError: Error, Equatable, CustomStringConvertible {
        case duplicate(Character, Action, Action)
        case reserved(Character)

        public var description: String {
            switch self {
            case .duplicate(let c, let a, let b): return "\"\(c)\" is bound to both \(a.rawValue) and \(b.rawValue)"
            case .reserved(let c): return "\"\(c)\" is reserved (1-\(Tab.allCases.count) switch tabs, j/k move)"
            }
        }
    }

    public init() {
        characters = Action.allCases.map(Self.defaultKey)
    }

    /// The defaults with `overrides` applied; two actions on one key, or a key reserved for tabs and
    /// movement, is an error.
    public init(overrides: [Action: Character]) throws(BindingError) {
        let reserved: Set<Character> = Tab.numberKeys.union(["j", "k"])
        var seen = [Character: Action]()
        characters = []
        for action in Action.allCases {
            let c = overrides[action] ?? Self.defaultKey(action)
            if reserved.contains(c) { throw .reserved(c) }
            if let other = seen[c] { throw .duplicate(c, other, action) }
            seen[c] = action
            characters.append(c)
        }
    }

    public func action(for key: KeyPress) -> Action? {
        guard case .char(let c) = key else { return nil }
        return characters.firstIndex(of: c).map { Action.allCases[$0] }
    }

    public func key(for action: Action) -> Character { characters[Action.allCases.firstIndex(of: action)!] }
}
