import AuthenticatorModel
import KeyKit

/// The OATH tab's comparison (`D`): for the selected key and each other key, the accounts on one of them only and
/// those set up differently, as `oath diff` says it; then what a comparison of names cannot tell.
extension OATHView {
    func comparison(_ state: AppState) {
        var lines = [(text: String, style: TextStyle)]()
        func add(_ text: UIText, _ style: TextStyle, indent: Int = 1) {
            for line in wrap(app.text(text), width: max(1, area.width - indent - 1)) {
                lines.append((String.spaces(indent) + line, style))
            }
        }
        for pair in state.oathComparisons {
            add(UIText("oath.compare.title", ["a": pair.a, "b": pair.b]), theme.heading)
            guard let difference = pair.difference else {
                add(UIText("oath.compare.reading", ["key": pair.b]), theme.dim, indent: 3)
                lines.append(("", .plain))
                continue
            }
            if difference.isEmpty {
                add(
                    UIText("oath.compare.same", ["a": pair.a, "b": pair.b, "count": String(pair.count)]), .plain,
                    indent: 3)
            }
            for (ids, key, other) in [(difference.onlyA, pair.a, pair.b), (difference.onlyB, pair.b, pair.a)]
            where !ids.isEmpty {
                add(UIText("oath.compare.onlyOn", ["key": key, "other": other]), theme.warning, indent: 3)
                for id in ids { lines.append((String.spaces(5) + id, .plain)) }
            }
            if !difference.differing.isEmpty {
                add(UIText("oath.compare.differs", ["a": pair.a, "b": pair.b]), theme.warning, indent: 3)
                for d in difference.differing {
                    let settings = d.settings.map { "\($0.setting.rawValue) \($0.a) / \($0.b)" }.joined(separator: "; ")
                    lines.append((String.spaces(5) + d.id + "  " + settings, .plain))
                }
            }
            lines.append(("", .plain))
        }
        if lines.isEmpty {
            add(UIText("oath.compare.oneKey", ["key": state.selectedKey.map(state.keyLabel) ?? ""]), theme.dim)
            lines.append(("", .plain))
        }
        add(UIText("oath.compare.secrets"), theme.dim)
        let rows = area.height
        let first = min(state.oath.compareScroll, max(0, lines.count - rows))
        for (offset, line) in lines.dropFirst(first).prefix(rows).enumerated() {
            screen.draw(line.text, row: area.row + offset, column: 0, style: line.style, width: area.width)
        }
    }
}
