import AuthenticatorModel
import KeyKit

/// The APDU tab: a header (key, selected application, connection), the log, the input line and what the
/// input check says about it.
struct APDUTabView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        let apdu = state.apdu
        guard area.height >= 4 else { return }
        let inputRow = area.row + area.height - 2
        let checkRow = area.row + area.height - 1
        let logTop = area.row + 1
        let logRows = max(0, inputRow - logTop)
        header(state, logRows: logRows)
        if apdu.log.isEmpty {
            intro(state, top: logTop, rows: logRows)
        } else {
            log(apdu, top: logTop, rows: logRows)
        }
        input(apdu, row: inputRow)
        check(state, row: checkRow)
        if let dialog = apdu.dialog { app.form(dialog.form) }
    }

    /// The window of log lines shown: the newest unless scrolled back.
    static func window(count: Int, rows: Int, scroll: Int) -> Range<Int> {
        guard rows > 0, count > 0 else { return 0..<0 }
        let back = min(scroll, max(0, count - rows))
        let end = count - back
        return max(0, end - rows)..<end
    }

    func header(_ state: AppState, logRows: Int) {
        let apdu = state.apdu
        var parts = [app.text(UIText("apdu.view.title"))]
        if let key = state.selectedKey { parts.append(key.model ?? key.descriptor.name) }
        if apdu.connected {
            parts.append(
                app.text(
                    UIText("apdu.view.application", ["name": apdu.application ?? app.text(UIText("apdu.view.none"))])))
        } else {
            parts.append(app.text(UIText("apdu.view.notConnected")))
        }
        let separator = screen.unicode ? " · " : " | "
        screen.draw(
            " " + parts.joined(separator: separator), row: area.row, column: area.column, style: theme.heading,
            width: area.width)
        if apdu.log.count > logRows, logRows > 0 {
            let w = Self.window(count: apdu.log.count, rows: logRows, scroll: apdu.scroll)
            let position = "\(w.lowerBound + 1)-\(w.upperBound)/\(apdu.log.count)"
            screen.draw(
                " " + position, row: area.row, column: area.column + area.width - position.cellWidth - 2,
                style: theme.dim)
        }
    }

    func intro(_ state: AppState, top: Int, rows: Int) {
        let names = AID.known.map(\.name).joined(separator: ", ")
        var texts = [
            UIText("apdu.view.intro"), UIText("apdu.view.introExample"),
            UIText("apdu.view.introSelect", ["names": names]),
        ]
        // A key without a smart-card interface (or with pcscd not running) takes no APDUs: said first.
        if let key = state.selectedKey, !key.descriptor.has(.apdu) {
            texts.insert(notOnKeyText(key.descriptor, state.service, application: "The APDU console"), at: 0)
        }
        let lines =
            texts
            .flatMap { wrap(app.resolve($0), width: area.width - 4) }
        for (i, line) in lines.enumerated() where i + 1 < rows {
            screen.draw(
                "  " + line, row: top + 1 + i, column: area.column, style: i == 0 ? .plain : theme.dim,
                width: area.width)
        }
    }

    func style(_ kind: APDULogLine.Kind) -> TextStyle {
        switch kind {
        case .command: return theme.heading
        case .wire, .note: return theme.dim
        case .ok: return theme.success
        case .failure: return theme.warning
        case .data: return .plain
        case .tlv: return TextStyle(foreground: theme.border.foreground)
        case .error: return theme.error
        }
    }

    func log(_ apdu: APDUTabState, top: Int, rows: Int) {
        let window = Self.window(count: apdu.log.count, rows: rows, scroll: apdu.scroll)
        for (offset, i) in window.enumerated() {
            let line = apdu.log[i]
            let text = " " + app.resolve(line.text)
            screen.draw(text, row: top + offset, column: area.column, style: style(line.kind), width: area.width)
            if let suffix = line.suffix, text.cellWidth + 2 < area.width {
                screen.draw(
                    app.resolve(suffix), row: top + offset, column: area.column + text.cellWidth + 2, style: theme.dim,
                    width: area.width - text.cellWidth - 2)
            }
        }
    }

    func input(_ apdu: APDUTabState, row: Int) {
        let prompt = " > "
        screen.draw(prompt, row: row, column: area.column, style: theme.heading)
        let column = area.column + prompt.cellWidth
        let width = max(1, area.width - prompt.cellWidth - 1)
        var shown = apdu.input.text
        var cursor = String(apdu.input.text.prefix(apdu.input.cursor)).cellWidth
        // A long line scrolls so the cursor stays in view.
        if cursor >= width {
            let drop = cursor - width + 1
            shown = String(shown.dropFirst(drop))
            cursor -= drop
        }
        let focused = apdu.inputFocused && apdu.dialog == nil
        screen.draw(
            shown.padded(toCells: width, unicode: screen.unicode), row: row, column: column,
            style: focused ? theme.field : theme.dim)
        if focused { screen.setCursor(row: row, column: column + cursor) }
    }

    func check(_ state: AppState, row: Int) {
        let apdu = state.apdu
        let text: String
        let style: TextStyle
        if apdu.pending != nil {
            (text, style) = (app.text(UIText("view.working")), theme.warning)
        } else {
            switch apdu.parsed {
            case .empty:
                let key = apdu.inputFocused ? "apdu.view.hintFocused" : "apdu.view.hintUnfocused"
                (text, style) = (app.text(UIText(key, ["filter": String(state.bindings.key(for: .filter))])), theme.dim)
            case .command(_, _, let summary):
                (text, style) = (app.resolve(summary), theme.dim)
            case .problem(let why):
                (text, style) = (app.resolve(why), theme.error)
            }
        }
        screen.draw("   " + text, row: row, column: area.column, style: style, width: area.width)
    }

    /// The bindings line at the bottom while the tab shows.
    static func hints(_ state: AppState, _ text: Localize) -> String {
        if state.apdu.inputFocused { return text(UIText("apdu.hints.input")) }
        return text(
            UIText(
                "apdu.hints.log",
                [
                    "help": String(state.bindings.key(for: .help)),
                    "quit": String(state.bindings.key(for: .quit)),
                    "device": String(state.bindings.key(for: .device)),
                ]))
    }
}

extension APDUTabView: TabView {
    static func hints(_ state: AppState, app: AppView) -> String { hints(state, app.text) }
}
