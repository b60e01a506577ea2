/// One line of the help overlay: the keys and what they do, or a section heading (no keys).
public struct HelpEntry: Sendable, Hashable {
    public var keys: String
    public var text: UIText
    public var isHeading: Bool

    public init(_ keys: String, _ text: UIText) {
        self.keys = keys
        self.text = text
        self.isHeading = false
    }

    public static func heading(_ text: UIText) -> HelpEntry {
        var entry = HelpEntry("", text)
        entry.isHeading = true
        return entry
    }
}

/// The help for the shown tab: its own bindings first, then the ones that work everywhere.
public func helpEntries(_ state: AppState) -> [HelpEntry] {
    let b = state.bindings
    var entries: [HelpEntry] = [.heading(UIText(state.tab.helpHeadingKey))] + state.tab.model.help(state)
    entries.append(.heading(UIText("help.section.general")))
    entries += [
        HelpEntry("Tab / Shift-Tab", UIText("help.tabs")),
        HelpEntry("1-\(Tab.allCases.count)", UIText("help.tabNumbers")),
    ]
    for action in [Action.help, .keys, .device, .quit] {
        entries.append(HelpEntry(String(b.key(for: action)), UIText(action.helpKey)))
    }
    entries.append(HelpEntry("Ctrl-C", UIText("help.ctrlC")))
    entries.append(HelpEntry("Paste", UIText("help.paste")))
    return entries
}

/// The OATH tab's keys.
func oathHelp(_ b: KeyBindings) -> [HelpEntry] {
    var entries = [
        HelpEntry("Up/Down j/k", UIText("help.move")),
        HelpEntry("PgUp/PgDn Home/End", UIText("help.page")),
        HelpEntry("Enter", UIText("help.enter")),
        HelpEntry("Esc", UIText("help.escape")),
    ]
    for action in [Action.filter, .copy, .add, .delete, .rename, .pin, .password, .refresh, .allKeys, .compare] {
        entries.append(HelpEntry(String(b.key(for: action)), UIText(action.helpKey)))
    }
    // The Add dialog's own keys: a new secret, and an image path read for its QR code.
    entries.append(HelpEntry("Ctrl-G", UIText("help.oath.newSecret")))
    entries.append(HelpEntry("Enter", UIText("help.oath.image")))
    return entries
}

extension Tab {
    /// The string-table key of the tab's name.
    public var nameKey: String {
        switch self {
        case .oath: return "tab.oath"
        case .otp: return "tab.otp"
        case .fido: return "tab.fido"
        case .apdu: return "tab.apdu"
        case .piv: return "tab.piv"
        case .ssh: return "tab.ssh"
        case .openpgp: return "tab.openpgp"
        }
    }

    /// The string-table key of the tab's section in the help.
    public var helpHeadingKey: String { "help.section." + String(nameKey.dropFirst(4)) }
}

/// Keys while the help is shown: Up/Down, PgUp/PgDn, Home/End (and j/k, g/G) scroll it by entries; any
/// other key closes it.
func helpKey(_ state: inout AppState, _ key: KeyPress) {
    let last = max(0, helpEntries(state).count - 1)
    func scroll(_ to: Int) { state.helpScroll = max(0, min(last, to)) }
    switch key {
    case .up, .char("k"): scroll(state.helpScroll - 1)
    case .down, .char("j"): scroll(state.helpScroll + 1)
    // A page is five entries: even at 15 rows at least that many show, so paging never skips one.
    case .pageUp: scroll(state.helpScroll - 5)
    case .pageDown: scroll(state.helpScroll + 5)
    case .home, .char("g"): scroll(0)
    case .end, .char("G"): scroll(last)
    default:
        state.showHelp = false
        state.helpScroll = 0
    }
}
