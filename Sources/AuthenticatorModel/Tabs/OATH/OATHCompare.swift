import KeyKit

// The OATH tab's comparison (`D`): the selected key's accounts against each other key's, as `oath diff` gives them —
// the accounts on one key only, and those set up differently. It needs the other keys' accounts, so it opens the
// all-keys view when that is off.

/// One pair of keys compared: the selected key (`a`) and another (`b`).
public struct OATHComparison: Sendable, Equatable {
    public var a: String
    public var b: String
    /// Nil while `b`'s accounts are not read.
    public var difference: OATHAcrossKeys.Difference?
    /// How many accounts `a` holds.
    public var count: Int
}

extension AppState {
    /// The selected key against each other key of the all-keys view, in the order the view keeps them.
    public var oathComparisons: [OATHComparison] {
        guard let selected = selectedKeyID, let own = oathAccounts(of: selected)?.accounts else { return [] }
        let label = keyLabel(id: selected)
        return oathKeys.filter { $0.id != selected }.map { key in
            let theirs = oath.others[key.id].flatMap { column -> [OATHAccount]? in
                column.phase == .ready || !column.accounts.isEmpty ? column.accounts : nil
            }
            return OATHComparison(
                a: label, b: keyLabel(key),
                difference: theirs.map { OATHAcrossKeys.difference(own.map(\.compared), $0.map(\.compared)) },
                count: own.count)
        }
    }
}

extension OATHAccount {
    /// The account as the comparison takes it.
    var compared: OATHOperations.Account { OATHOperations.Account(credential: credential, digits: digits) }
}

/// `D` on the list: the comparison, with the all-keys view turned on first when it is off (the other keys' accounts
/// are read then). With one key there is nothing to compare.
func openComparison(_ state: inout AppState) -> [Command] {
    guard state.oathKeys.contains(where: { $0.id != state.selectedKeyID }) else {
        state.status = StatusMessage(
            UIText("oath.compare.oneKey", ["key": state.selectedKey.map(state.keyLabel) ?? ""]), kind: .warning,
            expires: state.now + statusSeconds)
        return []
    }
    state.oath.comparing = true
    state.oath.compareScroll = 0
    return state.oath.allKeys ? [] : toggleAllKeys(&state)
}

/// Keys while the comparison is shown: it scrolls, and Esc (or `D` again) goes back to the list.
func compareKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    switch key {
    case .escape:
        state.oath.comparing = false
    case .down, .char("j"):
        state.oath.compareScroll += 1
    case .up, .char("k"):
        state.oath.compareScroll = max(0, state.oath.compareScroll - 1)
    case .pageDown:
        state.oath.compareScroll += 10
    case .pageUp:
        state.oath.compareScroll = max(0, state.oath.compareScroll - 10)
    case .home, .char("g"):
        state.oath.compareScroll = 0
    default:
        if state.bindings.action(for: key) == .compare { state.oath.comparing = false }
    }
    return []
}
