/// The actions a key can be bound to outside text fields.
public enum Action: String, CaseIterable, Sendable, Hashable {
    case quit, help, keys, device, filter, copy, add, delete, rename, pin, password, refresh

    /// The string-table key of the help overlay's description.
    public var helpKey: String { "help.action.\(rawValue)" }
}

/// Which character triggers which action; defaults as in the man page, overridable in the config file.
public struct KeyBindings: Sendable, Hashable {
    public private(set) var characters: [Action: Character]

    public static let defaults: [Action: Character] = [
        .quit: "q", .help: "?", .keys: "K", .device: "i", .filter: "/", .copy: "c", .add: "a", .delete: "d",
        .rename: "r", .pin: "p", .password: "P", .refresh: "R",
    ]

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
        characters = Self.defaults
    }

    /// The defaults with `overrides` applied; two actions on one key, or a key reserved for tabs and
    /// movement, is an error.
    public init(overrides: [Action: Character]) throws(BindingError) {
        var map = Self.defaults
        for (action, c) in overrides { map[action] = c }
        let reserved: Set<Character> = Tab.numberKeys.union(["j", "k"])
        var seen = [Character: Action]()
        for action in Action.allCases {
            guard let c = map[action] else { continue }
            if reserved.contains(c) { throw .reserved(c) }
            if let other = seen[c] { throw .duplicate(c, other, action) }
            seen[c] = action
        }
        characters = map
    }

    public func action(for key: KeyPress) -> Action? {
        guard case .char(let c) = key else { return nil }
        return characters.first { $0.value == c }?.key
    }

    public func key(for action: Action) -> Character { characters[action] ?? " " }
}
