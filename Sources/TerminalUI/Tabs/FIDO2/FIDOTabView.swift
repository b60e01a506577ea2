import AuthenticatorModel
import KeyKit

/// The FIDO2 tab: the authenticator's information at a glance, the credentials list, the PIN dialogs,
/// the guided reset and "Touch your key" while the key waits for presence.
struct FIDOTabView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        let fido = state.fido
        switch fido.phase {
        case .noKey where fido.reset == nil:
            // FIDO keys on USB are HID devices: pcscd running or not, the hint is to insert a key.
            centered([UIText("view.noKey"), UIText("fido.view.noKeyHint")])
        case .loading where fido.info == nil && fido.reset == nil:
            centered([UIText("fido.view.reading")])
        case .unavailable(let why):
            // "No FIDO2 here" only when the key has none to offer; a key whose FIDO interface could not be
            // opened or read (no permission for its hidraw node, an error) does have FIDO2.
            let absent = ["fido.notOnKey", "fido.notAvailable", "fido.u2fOnly"].contains(why.key)
            centered([UIText(absent ? "fido.view.unavailable" : "fido.view.unreadable"), why])
        default:
            if fido.showCredentials, fido.credentials != nil {
                if fido.showCredentialDetail, let c = fido.selected {
                    credentialDetail(c)
                } else {
                    credentials(state)
                }
            } else if let info = fido.info {
                information(info, state)
            }
        }
        if let stage = fido.reset { reset(stage, state) }
        if let dialog = fido.dialog { app.form(dialog.form) }
        // "Touch your key" goes on top of everything: whenever the key waits for presence, it says so.
        if let busy = fido.busy, busy.touch {
            touch(busy)
        } else if let busy = fido.busy, busy.operation == .reset {
            message(title: UIText("fido.reset.title"), lines: [UIText("fido.reset.sending")], style: theme.warning)
        }
    }

    // MARK: Information

    func information(_ info: FIDOInfo, _ state: AppState) {
        var lines: [(UIText, String, TextStyle)] = []
        lines.append((UIText("fido.view.versions"), info.versions.joined(separator: dot), .plain))
        lines.append((UIText("fido.view.aaguid"), info.aaguid, .plain))
        if let firmware = info.firmware { lines.append((UIText("fido.view.firmware"), firmware, .plain)) }
        let pin: UIText
        var pinStyle = TextStyle.plain
        switch info.pinSet {
        case true?:
            if info.retries == 0 {
                pin = UIText("fido.view.pinBlocked")
                pinStyle = theme.error
            } else if let r = info.retries {
                pin = UIText("fido.view.pinSetRetries", ["retries": String(r)])
                if r <= 3 { pinStyle = theme.warning }
            } else {
                pin = UIText("fido.view.pinSet")
            }
        case false?: pin = UIText("fido.view.pinNotSet")
        case nil: pin = UIText("fido.view.pinUnsupported")
        }
        lines.append((UIText("fido.view.pin"), app.resolve(pin), pinStyle))
        lines.append(
            (
                UIText("fido.view.minLength"),
                app.text(UIText("fido.view.characters", ["count": String(info.minPINLength)])), .plain
            ))
        if let on = info.alwaysUV {
            lines.append(
                (
                    UIText("fido.view.alwaysUV"),
                    app.text(UIText(on ? "fido.view.alwaysUVOn" : "fido.view.alwaysUVOff")),
                    .plain
                ))
        }
        var room =
            info.remainingCredentials.map { app.text(UIText("fido.view.room", ["count": String($0)])) }
            ?? app.text(UIText("fido.view.roomUnknown"))
        if let listed = state.fido.credentials?.count {
            room += dot + app.text(UIText("fido.view.listed", ["count": String(listed)]))
        }
        lines.append((UIText("fido.view.credentials"), room, .plain))
        if info.bioEnrollment {
            let prints: String
            switch state.fido.fingerprints {
            case nil: prints = app.text(UIText("fido.view.fingerprintsUnread"))
            case let list? where list.isEmpty: prints = app.text(UIText("fido.view.noFingerprints"))
            case let list?:
                prints = list.map { $0.name ?? app.text(UIText("fido.view.noName")) }.joined(separator: dot)
            }
            lines.append((UIText("fido.view.fingerprints"), prints, .plain))
        }
        let options = info.options.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value ? "yes" : "no")" }
        lines.append((UIText("fido.view.options"), options.joined(separator: " "), .plain))
        if !info.extensions.isEmpty {
            lines.append((UIText("fido.view.extensions"), info.extensions.joined(separator: ", "), .plain))
        }

        let labelWidth = min(24, (lines.map { app.text($0.0).cellWidth }.max() ?? 10) + 2)
        let valueColumn = area.column + 1 + labelWidth
        let valueWidth = max(1, area.width - valueColumn - 1)
        // What the tab is doing with the key follows the title (a slow key shows it is at work).
        let title =
            app.text(UIText("fido.view.title")) + working(state.fido.busy, after: screen.unicode ? " · " : " - ")
        // Every screen line of the information: the title, the fields with their values wrapped, the alert.
        var shown: [(label: String, value: String, column: Int, style: TextStyle)] = [
            (" " + title, "", 0, theme.heading), ("", "", 0, .plain),
        ]
        for (label, value, style) in lines {
            for (i, piece) in wrap(value, width: valueWidth).enumerated() {
                shown.append((i == 0 ? " " + app.text(label) : "", piece, valueColumn, style))
            }
        }
        if let alert = state.fido.alert {
            shown.append(("", "", 0, .plain))
            for piece in wrap(app.resolve(alert), width: area.width - 3) {
                shown.append((" " + piece, "", 0, theme.warning))
            }
        }
        // A short terminal scrolls (Up/Down); a line at the bottom says more follows.
        let rows = area.height
        let first = min(state.fido.infoScroll, max(0, shown.count - rows))
        let more = shown.count - first > rows
        for (offset, line) in shown.dropFirst(first).prefix(more ? rows - 1 : rows).enumerated() {
            let row = area.row + offset
            let labelStyle = line.column == 0 ? line.style : theme.dim
            screen.draw(
                line.label, row: row, column: area.column, style: labelStyle,
                width: line.column == 0 ? area.width : labelWidth + 1)
            if line.column > 0 {
                screen.draw(line.value, row: row, column: line.column, style: line.style, width: valueWidth)
            }
        }
        if more {
            screen.draw(
                " " + app.text(UIText("fido.view.more")), row: area.row + rows - 1, column: area.column,
                style: theme.dim, width: area.width)
        }
    }

    /// The tab's bindings that apply now, for the hints line every tab shares.
    static func hints(_ state: AppState, app: AppView) -> String {
        var parts = [UIText]()
        let updateUser = state.fido.info?.updateUser == true
        if state.fido.showCredentials && state.fido.showCredentialDetail {
            parts =
                (updateUser ? [UIText("fido.hint.rename")] : []) + [
                    UIText("fido.hint.delete"),
                    UIText("fido.hint.backToList"),
                ]
        } else if state.fido.showCredentials {
            // With other keys with FIDO2 plugged in, the all-keys binding shows theirs beside (or this key's alone).
            let allKeys = ["key": String(state.bindings.key(for: .allKeys))]
            let others =
                !state.fido.others.isEmpty
                ? [UIText("fido.hint.thisKeyOnly", allKeys)]
                : state.otherFIDOKeys.isEmpty ? [] : [UIText("fido.hint.otherKeys", allKeys)]
            parts =
                [UIText("fido.hint.move"), UIText("fido.hint.details")]
                + (updateUser ? [UIText("fido.hint.rename")] : [])
                + [UIText("fido.hint.delete")] + others + [UIText("fido.hint.back")]
        } else if state.fido.phase == .ready, let info = state.fido.info {
            if info.pinSet == false { parts.append(UIText("fido.hint.set")) }
            if info.pinSet == true { parts += [UIText("fido.hint.change"), UIText("fido.hint.verify")] }
            if info.credentialManagement { parts.append(UIText("fido.hint.list")) }
            parts += [UIText("fido.hint.reset"), UIText("fido.hint.reload")]
        }
        return app.hints(parts, state)
    }

    // MARK: Credentials

    func credentials(_ state: AppState) {
        let list = state.fido.sortedCredentials
        var top = area.row
        screen.draw(
            " " + app.text(UIText("fido.view.credentialsTitle", ["count": String(list.count)])), row: top,
            column: area.column, style: theme.heading, width: area.width)
        // With other keys in the view, the line under the title names them, and says which is still read or left out.
        if !state.fido.others.isEmpty { keysLine(state, at: top + 1) }
        top += 2
        let parties = state.fidoRelyingParties
        guard !list.isEmpty || !parties.isEmpty else {
            screen.draw(
                " " + app.text(UIText("fido.view.noCredentials")), row: top, column: area.column,
                style: theme.dim, width: area.width)
            return
        }
        // Rows: a heading per relying party (with the keys that hold it, when other keys were read), then the selected
        // key's credentials for it. A relying party of another key only has its heading alone.
        enum Line { case empty, rp(Int), credential(Int) }
        var lines = [Line]()
        if list.isEmpty { lines.append(.empty) }
        for (p, party) in parties.enumerated() {
            lines.append(.rp(p))
            for (i, c) in list.enumerated() where c.rpID == party.rpID { lines.append(.credential(i)) }
        }
        let marks = parties.map { keyMarks($0, state) }
        let widest = marks.map { $0.full.cellWidth }.max() ?? 0
        let marksWidth = min(widest, max(12, area.width / 3))
        let selected = max(0, min(list.count - 1, state.fido.selectedCredential))
        let rows = max(1, area.row + area.height - 1 - top)
        let selectedLine =
            lines.firstIndex { if case .credential(selected) = $0 { return true } else { return false } } ?? 0
        let first = (selectedLine / rows) * rows
        let idWidth = 16
        for (offset, line) in lines.dropFirst(first).prefix(rows).enumerated() {
            let y = top + offset
            switch line {
            case .empty:
                screen.draw(
                    " " + app.text(UIText("fido.view.noCredentials")), row: y, column: area.column,
                    style: theme.dim, width: area.width)
            case .rp(let p):
                let party = parties[p], mark = marks[p]
                var label = party.rpID
                if let name = party.rpName, name != party.rpID { label += "  (\(name))" }
                let labelWidth = mark.full.isEmpty ? area.width : max(1, area.width - marksWidth - 2)
                screen.draw(" " + label, row: y, column: area.column, style: theme.heading, width: labelWidth)
                if !mark.full.isEmpty {
                    drawMarks(mark, at: y, column: area.column + area.width - marksWidth - 1, width: marksWidth)
                }
            case .credential(let i):
                let c = list[i]
                let isSelected = i == selected
                let style: TextStyle = isSelected ? theme.selection : .plain
                var who = c.userName ?? app.text(UIText("fido.view.noName"))
                if let display = c.displayName, display != c.userName { who += "  (\(display))" }
                let id = c.credentialID.hex
                let shortID = id.count > idWidth ? String(id.prefix(idWidth - 1)) + (screen.unicode ? "…" : "~") : id
                let whoWidth = max(4, area.width - 4 - idWidth - 5)
                let text = "   " + who.padded(toCells: whoWidth, unicode: screen.unicode) + "  id " + shortID
                screen.draw(
                    text.padded(toCells: area.width, unicode: screen.unicode), row: y, column: area.column,
                    style: style)
            }
        }
        scrollMark(first: first, visible: rows, count: lines.count)
    }

    /// What a relying party's row says of the keys compared: those that hold a credential for it ("daily · backup"),
    /// and "not on backup" for those that hold none. Empty while no other key was read.
    struct KeyMarks {
        var holders: String
        var missing: String?

        var full: String { missing.map { holders.isEmpty ? $0 : holders + "  " + $0 } ?? holders }
    }

    func keyMarks(_ party: FIDORelyingPartyRow, _ state: AppState) -> KeyMarks {
        let holders = party.holders.map { state.keyLabel(id: $0) }.joined(separator: dot)
        guard !party.missing.isEmpty else { return KeyMarks(holders: holders) }
        let missing = party.missing.map { state.keyLabel(id: $0) }.joined(separator: ", ")
        return KeyMarks(holders: holders, missing: app.text(UIText("fido.view.notOn", ["keys": missing])))
    }

    /// The marks of a relying party, right-aligned: the holders dim, "not on …" as a warning; when both do not fit,
    /// the warning alone.
    func drawMarks(_ marks: KeyMarks, at y: Int, column: Int, width: Int) {
        let unicode = screen.unicode
        guard let missing = marks.missing else {
            screen.draw(
                marks.holders.padded(toCells: width, unicode: unicode), row: y, column: column, style: theme.dim)
            return
        }
        var x = column
        if marks.full.cellWidth <= width, !marks.holders.isEmpty {
            screen.draw(marks.holders + "  ", row: y, column: x, style: theme.dim)
            x += marks.holders.cellWidth + 2
        }
        screen.draw(
            missing.padded(toCells: column + width - x, unicode: unicode), row: y, column: x, style: theme.warning)
    }

    /// The line under the credentials' title while other keys are in the view: the selected key first in bold, then
    /// the others, each with what keeps its credentials out, if anything does.
    func keysLine(_ state: AppState, at y: Int) {
        let label = app.text(UIText("fido.view.keys"))
        screen.draw(" " + label, row: y, column: area.column, style: theme.dim, width: area.width)
        var x = area.column + label.cellWidth + 2
        let shown = state.keys.filter { $0.id == state.selectedKeyID || state.fido.others[$0.id] != nil }
        let selectedFirst =
            shown.filter { $0.id == state.selectedKeyID } + shown.filter { $0.id != state.selectedKeyID }
        for (i, key) in selectedFirst.enumerated() where x < area.column + area.width {
            let room = max(0, area.column + area.width - x)
            if i > 0 {
                screen.draw(dot, row: y, column: x, style: theme.dim, width: room)
                x += 3
            }
            var text = state.keyLabel(key)
            var style = key.id == state.selectedKeyID ? theme.heading : TextStyle.plain
            if let why = state.fido.others[key.id].flatMap(otherKeyState) {
                text += " (" + app.text(why) + ")"
                style = theme.warning
            }
            screen.draw(text, row: y, column: x, style: style, width: max(0, area.column + area.width - x))
            x += text.cellWidth
        }
    }

    /// Why another key's credentials are not in the view (nil: they are).
    func otherKeyState(_ other: FIDOOtherKey) -> UIText? {
        switch other.phase {
        case .loading, .reading: return UIText("fido.view.keyReading")
        case .needsPIN: return UIText("fido.view.keyWaiting")
        case .read: return nil
        case .skipped(let why): return why
        }
    }

    /// One credential's details: its relying party, user, IDs, credProtect level and large-blob key.
    func credentialDetail(_ c: FIDOCredential) {
        let none = app.text(UIText("fido.view.noName"))
        let protect =
            c.credProtect.map { level in
                (1...3).contains(level)
                    ? app.text(UIText("fido.detail.credProtect\(level)", ["level": String(level)]))
                    : String(level)
            } ?? app.text(UIText("fido.detail.unknown"))
        let fields: [(String, String)] = [
            ("fido.detail.rp", c.rpName.map { $0 == c.rpID ? c.rpID : "\(c.rpID)  (\($0))" } ?? c.rpID),
            ("fido.detail.userName", c.userName ?? none),
            ("fido.detail.displayName", c.displayName ?? none),
            ("fido.detail.userID", c.userID.isEmpty ? none : c.userID.hex),
            ("fido.detail.credentialID", c.credentialID.hex),
            ("fido.detail.credProtect", protect),
            ("fido.detail.largeBlob", app.text(UIText(c.largeBlobKey ? "fido.detail.yes" : "fido.detail.no"))),
        ]
        screen.draw(
            " " + app.text(UIText("fido.detail.title")), row: area.row, column: area.column, style: theme.heading,
            width: area.width)
        labelled(fields.map { (app.text(UIText($0.0)), $0.1, TextStyle.plain) }, top: area.row + 2)
    }

    // MARK: Overlays

    /// A box in the middle of the screen with a title, wrapped lines and a footer.
    func message(title: UIText, lines: [UIText], style: TextStyle, footer: UIText? = nil, width: Int = 66) {
        let inner = min(width, screen.size.columns) - 4
        let texts = lines.flatMap { wrap(app.resolve($0), width: inner) + [""] }.dropLast()
        messageBox(
            title: app.resolve(title), lines: Array(texts), style: style, width: width, footer: footer.map(app.text))
    }

    func touch(_ busy: FIDOBusy) {
        let lines =
            busy.operation == .reset
            ? [UIText("fido.touch.title"), UIText("fido.touch.reset")]
            : [UIText("fido.touch.title"), UIText("fido.touch.note")]
        message(
            title: UIText("fido.touch.box"), lines: lines, style: theme.warning, footer: UIText("fido.touch.cancel"))
    }

    func reset(_ stage: FIDOResetStage, _ state: AppState) {
        let check = screen.unicode ? "✔" : "x"
        switch stage {
        case .sending:
            return
        case .removeKey:
            message(
                title: UIText("fido.reset.title"),
                lines: [
                    UIText("fido.reset.reinsert"), UIText("fido.reset.step1"), UIText("fido.reset.step2"),
                    UIText("fido.reset.step3"),
                ],
                style: theme.warning, footer: UIText("fido.reset.cancelHint"))
        case .insertKey:
            message(
                title: UIText("fido.reset.title"),
                lines: [
                    UIText("fido.reset.reinsert"), UIText("fido.reset.step1Done", ["check": check]),
                    UIText("fido.reset.step2"), UIText("fido.reset.step3"),
                ],
                style: theme.warning, footer: UIText("fido.reset.cancelHint"))
        }
    }
}

extension FIDOTabView: TabView {}
