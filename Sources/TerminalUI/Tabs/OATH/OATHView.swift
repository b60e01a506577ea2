import AuthenticatorModel
import KeyKit

/// The OATH tab: the filter line, the accounts with their codes and countdowns, and the tab's dialogs.
struct OATHView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        let oath = state.oath
        // An account shown once covers everything, whichever view it was added from.
        defer { if let shown = oath.shown { OATHShownAccountView(app: app).render(shown) } }
        if oath.comparing {
            comparison(state)
            if let dialog = oath.dialog { app.form(dialog.form) }
            return
        }
        if oath.allKeys, !state.oathAnsweredKeys.isEmpty {
            allKeysList(state)
            if let dialog = oath.dialog { app.form(dialog.form) }
            return
        }
        switch oath.phase {
        case .noKey:
            if state.service == .unavailable {
                centered([UIText("view.noPcscd"), UIText("view.noPcscdHint")])
            } else {
                centered([UIText("view.noKey"), UIText("view.noKeyHint")])
            }
        case .loading:
            centered([UIText("view.loading")])
        case .locked:
            centered([UIText("view.locked"), UIText("view.lockedHint")])
        case .unavailable(let why) where why.key.hasPrefix("view.notOnKey."):
            // Not an error: the key has no interface that carries OATH (or pcscd, which serves it, is not running).
            centered([UIText("view.notOnKey.title", ["application": "OATH"]), why])
        case .unavailable(let why) where why.key == "error.reader-not-answering":
            centered([UIText("view.keyNotAnswering"), why])
        case .unavailable(let why):
            centered([UIText("view.oathUnavailable"), why])
        case .ready:
            list(state)
        }
        if let dialog = oath.dialog { app.form(dialog.form) }
    }

    /// Column widths for the screen's width: the countdown bar goes first when space runs out, then the
    /// issuer gets its own column no more.
    struct Columns {
        var issuer: Int
        var name: Int
        var code: Int
        var bar: Int
        var seconds: Int
    }

    /// The columns for `accounts` in `width` cells (the area's, less the all-keys view's keys column).
    func columns(_ accounts: [OATHAccount], width: Int? = nil) -> Columns {
        let width = width ?? area.width
        let codeWidth = max(11, (accounts.map { $0.digits }.max() ?? 6) + 3)
        var c = Columns(issuer: 0, name: 0, code: codeWidth, bar: 0, seconds: 4)
        var rest = width - 2 - codeWidth - c.seconds - 2
        if rest >= 50 {
            c.bar = min(12, rest - 46)
            rest -= c.bar + 1
        }
        if rest >= 30 {
            c.issuer = min(20, max(10, rest / 3))
            c.name = rest - c.issuer - 1
        } else {
            c.name = max(4, rest)
        }
        return c
    }

    func list(_ state: AppState) {
        let oath = state.oath
        let top = filterLine(state, at: area.row)
        let visible = oath.visibleAccounts
        if visible.isEmpty {
            noAccounts(state, at: top)
            return
        }
        let c = columns(visible)
        let rows = area.row + area.height - top
        let selected = visible.firstIndex { $0.id == oath.selectedID } ?? 0
        // Keep the selection in view, a page at a time.
        let first = rows > 0 ? (selected / rows) * rows : 0
        for (offset, account) in visible.dropFirst(first).prefix(max(0, rows)).enumerated() {
            row(account, state: state, c: c, at: top + offset, selected: first + offset == selected)
        }
        pageMark(first: first, rows: rows, count: visible.count)
    }

    /// "12-22/40" at the bottom right when the list does not fit.
    func pageMark(first: Int, rows: Int, count: Int) {
        if count > rows, rows > 0 {
            let more = "\(first + 1)-\(min(count, first + rows))/\(count)"
            screen.draw(
                more, row: area.row + area.height - 1, column: area.width - more.cellWidth - 1, style: theme.dim)
        }
    }

    /// "No accounts" or "nothing matches", under the filter line.
    func noAccounts(_ state: AppState, at top: Int) {
        let what =
            state.oath.accounts.isEmpty && state.oath.others.values.allSatisfy(\.accounts.isEmpty)
            ? UIText("view.noAccounts", ["add": String(state.bindings.key(for: .add))])
            : UIText("view.noMatch", ["filter": state.oath.filter.text])
        screen.draw(" " + app.text(what), row: top + 1, column: 0, style: theme.dim, width: area.width)
    }

    /// The filter line while it is used; returns the first row under it.
    func filterLine(_ state: AppState, at row: Int) -> Int {
        let oath = state.oath
        var top = row
        if oath.filterFocused || !oath.filter.text.isEmpty {
            let label = app.text(UIText("view.filter"))
            screen.draw(" " + label, row: top, column: 0, style: theme.heading)
            let column = label.cellWidth + 2
            screen.draw(
                oath.filter.text, row: top, column: column, style: oath.filterFocused ? theme.field : .plain,
                width: max(0, area.width - column))
            if oath.filterFocused {
                screen.setCursor(
                    row: top, column: column + String(oath.filter.text.prefix(oath.filter.cursor)).cellWidth)
            }
            top += 1
        }
        return top
    }

    /// A row of the list, in the area's width less `reserved` cells on the right (the all-keys view's keys).
    func row(_ account: OATHAccount, state: AppState, c: Columns, at y: Int, selected: Bool, reserved: Int = 0) {
        let end = area.width - reserved
        let unicode = screen.unicode
        let base: TextStyle = selected ? theme.selection : .plain
        screen.draw(String.spaces(area.width), row: y, column: 0, style: base)
        var x = 0
        let pinned = state.oath.pinned.contains(account.id)
        screen.draw(
            pinned ? (unicode ? "★ " : "* ") : "  ", row: y, column: x,
            style: selected ? base : theme.pinned)
        x += 2
        if c.issuer > 0 {
            screen.draw(
                (account.issuer ?? "").padded(toCells: c.issuer, unicode: unicode), row: y, column: x,
                style: selected ? base : theme.heading)
            x += c.issuer + 1
            screen.draw(account.name.padded(toCells: c.name, unicode: unicode), row: y, column: x, style: base)
        } else {
            let label = account.issuer.map { "\($0): \(account.name)" } ?? account.name
            screen.draw(label.padded(toCells: c.name, unicode: unicode), row: y, column: x, style: base)
        }
        x += c.name + 1
        let now = state.now
        if let code = account.validCode(at: now) {
            let remaining = Double(code.validTo) - now
            let expiring = !account.isHOTP && remaining < 5
            var codeStyle = expiring ? theme.codeExpiring : theme.code
            if selected { codeStyle.reverse = true }
            screen.draw(
                Self.grouped(code.value).padded(toCells: c.code, alignment: .right, unicode: unicode),
                row: y, column: x, style: codeStyle)
            x += c.code + 1
            if !account.isHOTP {
                if c.bar > 0 {
                    let fraction = max(0, min(1, remaining / Double(account.period)))
                    var barStyle = expiring ? theme.barLow : theme.barFull
                    if selected { barStyle.reverse = true }
                    screen.draw(
                        Widgets.bar(fraction: fraction, width: c.bar, unicode: unicode), row: y, column: x,
                        style: barStyle)
                    x += c.bar + 1
                }
                let seconds = String(Int(remaining.rounded(.up)))
                screen.draw(
                    String.spaces(max(0, 3 - seconds.count)) + seconds + "s", row: y, column: x,
                    style: base)
            } else {
                screen.draw(
                    app.text(UIText("view.hotpAgain")), row: y, column: x, style: selected ? base : theme.dim,
                    width: max(0, end - x))
            }
        } else {
            let label: UIText
            if account.calculating {
                label = account.requiresTouch ? UIText("view.touchYourKey") : UIText("view.calculating")
            } else if account.requiresTouch {
                label = UIText("view.touchAccount")
            } else if account.isHOTP {
                label = UIText("view.hotpAccount")
            } else {
                label = UIText("view.calculating")
            }
            let style = account.calculating && account.requiresTouch ? theme.warning : theme.dim
            screen.draw(
                app.text(label).padded(toCells: max(0, end - x), unicode: unicode), row: y, column: x,
                style: selected ? base : style)
        }
    }

    /// `123456` → `123 456`, `12345678` → `1234 5678`; Steam codes (letters) stay whole.
    static func grouped(_ code: String) -> String {
        guard code.allSatisfy(\.isNumber) else { return code }
        let chars = Array(code)
        switch chars.count {
        case 6: return String(chars[0..<3]) + " " + String(chars[3...])
        case 7: return String(chars[0..<4]) + " " + String(chars[4...])
        case 8: return String(chars[0..<4]) + " " + String(chars[4...])
        default: return code
        }
    }
}

extension OATHView: TabView {
    /// The Add dialog's keys: those of every form, and Ctrl-G for a new secret.
    static func dialogHints(_ state: AppState, app: AppView) -> String? {
        guard state.oath.dialog?.kind.isAdd == true else { return nil }
        return app.text(UIText("view.hints.addDialog"))
    }

    static func hints(_ state: AppState, app: AppView) -> String {
        let b = state.bindings
        if state.oath.shown != nil { return app.text(UIText("oath.shown.hint")) }
        if state.oath.filterFocused { return app.text(UIText("view.hints.filter")) }
        if state.oath.comparing {
            return app.text(UIText("oath.compare.keys", ["move": "j/k", "close": String(b.key(for: .compare))]))
        }
        let keys: [String: String] = [
            "copy": String(b.key(for: .copy)), "filter": String(b.key(for: .filter)), "add": String(b.key(for: .add)),
            "delete": String(b.key(for: .delete)), "rename": String(b.key(for: .rename)),
            "pin": String(b.key(for: .pin)), "allKeys": String(b.key(for: .allKeys)),
            "compare": String(b.key(for: .compare)), "help": String(b.key(for: .help)),
            "quit": String(b.key(for: .quit)),
        ]
        // With several keys, A is offered: to see every key's accounts, or the selected key's again.
        if state.oath.allKeys && !state.oathAnsweredKeys.isEmpty {
            return app.text(UIText("view.hints.oathAllKeys", keys))
        }
        if state.oath.phase == .ready && state.oathKeys.count > 1 {
            return app.text(UIText("view.hints.oathKeys", keys))
        }
        if state.oath.phase == .locked {
            return app.text(UIText("view.hints.locked", ["quit": String(b.key(for: .quit))]))
        }
        // No accounts to act on: only what works everywhere.
        switch state.oath.phase {
        case .noKey, .unavailable:
            return app.hints([], state)
        default: break
        }
        return app.text(
            UIText(
                "view.hints.oath",
                [
                    "copy": String(b.key(for: .copy)), "filter": String(b.key(for: .filter)),
                    "add": String(b.key(for: .add)),
                    "delete": String(b.key(for: .delete)), "rename": String(b.key(for: .rename)),
                    "pin": String(b.key(for: .pin)),
                    "password": String(b.key(for: .password)), "help": String(b.key(for: .help)),
                    "quit": String(b.key(for: .quit)),
                ]))
    }
}
