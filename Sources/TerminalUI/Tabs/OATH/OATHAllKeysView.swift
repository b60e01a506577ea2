import AuthenticatorModel
import KeyKit

/// The OATH tab's all-keys view: a line with the keys in it, then each account once, with the code of the first key
/// that holds it and, on the right, the keys that hold it ("daily · backup") or a mark for a key that does not
/// ("not on backup").
extension OATHView {
    func allKeysList(_ state: AppState) {
        keysLine(state, at: area.row)
        let top = filterLine(state, at: area.row + 1)
        let visible = state.visibleOATHRows
        if visible.isEmpty {
            noAccounts(state, at: top)
            return
        }
        var labels = [String: String]()
        for key in state.keys { labels[key.id] = state.keyLabel(key) }
        let marks = visible.map { keyMarks($0, labels: labels) }
        // The keys column: as wide as its longest text, at most a quarter of the screen (at least 12 cells).
        let widest = marks.map { $0.full.cellWidth }.max() ?? 0
        let keysWidth = min(widest, max(12, area.width / 4))
        let reserved = keysWidth + 1
        let c = columns(visible.map(\.account), width: area.width - reserved)
        let rows = area.row + area.height - top
        let selected = visible.firstIndex { $0.id == state.oath.selectedID } ?? 0
        let first = rows > 0 ? (selected / rows) * rows : 0
        for (offset, merged) in visible.dropFirst(first).prefix(max(0, rows)).enumerated() {
            let y = top + offset
            let isSelected = first + offset == selected
            row(merged.account, state: state, c: c, at: y, selected: isSelected, reserved: reserved)
            drawMarks(marks[first + offset], at: y, column: area.width - keysWidth, width: keysWidth, isSelected)
        }
        pageMark(first: first, rows: rows, count: visible.count)
    }

    /// What the keys column says of an account: the keys that hold it, and the keys that do not.
    struct KeyMarks {
        var holders: String
        var missing: String?

        var full: String { missing.map { holders + "  " + $0 } ?? holders }
    }

    /// `labels`: each key's label by its ID (`AppState.keyLabel`), made once for the frame; a key gone is called by
    /// its ID.
    func keyMarks(_ row: OATHMergedAccount, labels: [String: String]) -> KeyMarks {
        let holders = row.holders.map { labels[$0] ?? $0 }.joined(separator: " · ")
        guard !row.missing.isEmpty else { return KeyMarks(holders: holders) }
        let missing = row.missing.map { labels[$0] ?? $0 }.joined(separator: ", ")
        return KeyMarks(holders: holders, missing: app.text(UIText("view.oath.notOn", ["keys": missing])))
    }

    /// The keys column of a row: the holders dim, "not on …" as a warning; when both do not fit, the warning alone.
    func drawMarks(_ marks: KeyMarks, at y: Int, column: Int, width: Int, _ selected: Bool) {
        let unicode = screen.unicode
        let base: TextStyle = selected ? theme.selection : .plain
        guard let missing = marks.missing else {
            screen.draw(
                marks.holders.padded(toCells: width, unicode: unicode), row: y, column: column,
                style: selected ? base : theme.dim)
            return
        }
        var x = column
        if marks.full.cellWidth <= width {
            screen.draw(marks.holders + "  ", row: y, column: x, style: selected ? base : theme.dim)
            x += marks.holders.cellWidth + 2
        }
        var style = theme.warning
        if selected { style.reverse = true }
        screen.draw(missing.padded(toCells: column + width - x, unicode: unicode), row: y, column: x, style: style)
    }

    /// The line over the list: the keys in the view, the selected one (which Add, rename, delete and the password act
    /// on) first in bold, each with what keeps its accounts out of the list, if anything does.
    func keysLine(_ state: AppState, at y: Int) {
        let label = app.text(UIText("view.oath.keys"))
        screen.draw(" " + label, row: y, column: 0, style: theme.dim, width: area.width)
        var x = label.cellWidth + 2
        for (i, key) in state.oathKeys.enumerated() where x < area.width {
            if i > 0 {
                screen.draw(" · ", row: y, column: x, style: theme.dim, width: max(0, area.width - x))
                x += 3
            }
            let selected = key.id == state.selectedKeyID
            var text = state.keyLabel(key)
            var style = selected ? theme.heading : TextStyle.plain
            if let why = keyState(state, key.id) {
                text += " (" + app.text(why) + ")"
                style = theme.warning
            }
            screen.draw(text, row: y, column: x, style: style, width: max(0, area.width - x))
            x += text.cellWidth
        }
    }

    /// Why a key's accounts are not in the list (nil: they are).
    func keyState(_ state: AppState, _ keyID: String) -> UIText? {
        guard let (phase, accounts) = state.oathAccounts(of: keyID) else { return UIText("view.oath.keyReading") }
        switch phase {
        case .ready: return nil
        case .loading, .noKey: return accounts.isEmpty ? UIText("view.oath.keyReading") : nil
        case .locked:
            let key =
                keyID == state.selectedKeyID ? state.bindings.key(for: .password) : state.bindings.key(for: .refresh)
            return UIText("view.oath.keyLocked", ["key": String(key)])
        case .unavailable: return UIText("view.oath.keyUnavailable")
        }
    }
}
