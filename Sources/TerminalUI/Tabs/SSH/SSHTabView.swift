import AuthenticatorModel
import KeyKit

/// The SSH tab: every SSH key on the key — FIDO `ssh:` credentials and PIV slots — with type, application or slot,
/// comment and fingerprint; a key's `authorized_keys` line in full; the dialogs, and "Touch your key" while a new
/// key waits for one.
struct SSHTabView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        let ssh = state.ssh
        if let load = content(ssh.phase, ssh.load, words: "ssh", unavailable: "unreadable") {
            if ssh.showDetails, let key = ssh.selected {
                details(key, state)
            } else {
                list(load, state)
            }
        }
        dialog(ssh.dialog, unless: ssh.busy) { touch() }
    }

    // MARK: The list

    /// Two lines a key: type, application or slot, and comment; then its fingerprint. Under the list, why a side
    /// shows nothing (the FIDO keys want the PIN, the key has no PIV).
    func list(_ load: SSHTabLoad, _ state: AppState) {
        let rows = state.ssh.rows
        let bottom = area.row + area.height
        screen.draw(
            " " + app.text(UIText("ssh.view.title", ["count": String(rows.count)]))
                + working(state.ssh.busy, after: dot), row: area.row,
            column: area.column, style: theme.heading, width: area.width)
        var notes = [(UIText, TextStyle)]()
        if load.fido != .listed { notes.append((load.fidoNote, fidoNoteStyle(load.fido))) }
        if let problem = load.pivProblem { notes.append((UIText("ssh.view.piv", nested: ["why": problem]), theme.dim)) }
        let noteLines = notes.flatMap { note in wrap(app.resolve(note.0), width: area.width - 3).map { ($0, note.1) } }
        let listBottom = bottom - (noteLines.isEmpty ? 0 : noteLines.count + 1)
        var top = area.row + 2
        if rows.isEmpty {
            if top < listBottom {
                screen.draw(
                    " " + app.text(UIText("ssh.view.none")), row: top, column: area.column, style: theme.dim,
                    width: area.width)
            }
        } else if listBottom - top >= 3 {
            let typeWidth = max(12, app.text(UIText("ssh.view.column.type")).cellWidth + 2)
            let whereWidth = min(
                max(14, (rows.map { whereText($0).cellWidth }.max() ?? 0) + 2), max(14, (area.width - typeWidth) / 2))
            let commentWidth = max(1, area.width - 1 - typeWidth - whereWidth)
            let heading = tableLine([
                (app.text(UIText("ssh.view.column.type")), typeWidth),
                (app.text(UIText("ssh.view.column.where")), whereWidth),
                (app.text(UIText("ssh.view.column.comment")), commentWidth),
            ])
            screen.draw(" " + heading, row: top, column: area.column, style: theme.dim, width: area.width)
            top += 1
            let visible = max(1, (listBottom - top) / 2)
            let selected = max(0, min(rows.count - 1, state.ssh.selectedRow))
            let first = max(0, selected - visible + 1)
            for (offset, (i, key)) in rows.enumerated().dropFirst(first).prefix(visible).enumerated() {
                let y = top + 2 * offset
                let style: TextStyle = i == selected ? theme.selection : .plain
                let text =
                    " "
                    + tableLine([
                        (key.shortType, typeWidth), (whereText(key), whereWidth), (comment(key), commentWidth),
                    ])
                screen.draw(
                    text.padded(toCells: area.width, unicode: screen.unicode), row: y, column: area.column, style: style
                )
                // Under the application; further left on a narrow terminal, so the whole fingerprint shows.
                let indent = max(1, min(1 + typeWidth, area.width - 1 - key.fingerprint.count))
                let print = String(repeating: " ", count: indent) + key.fingerprint
                screen.draw(
                    print.padded(toCells: area.width, unicode: screen.unicode), row: y + 1, column: area.column,
                    style: i == selected ? theme.selection : theme.dim)
            }
            scrollMark(first: first, visible: visible, count: rows.count)
        }
        for (i, (text, style)) in noteLines.enumerated() {
            screen.draw(
                " " + text, row: bottom - noteLines.count + i, column: area.column, style: style, width: area.width)
        }
    }

    func fidoNoteStyle(_ fido: SSHFIDOState) -> TextStyle {
        if case .pinNeeded = fido { return theme.warning }
        return theme.dim
    }

    /// The application (FIDO) or the slot (PIV).
    func whereText(_ key: SSHTabKey) -> String {
        switch key {
        case .fido(let k): return k.application
        case .piv(let k): return "PIV " + k.slot.description
        }
    }

    /// A FIDO key's user and what a use needs; a PIV slot's certificate, which PKCS #11 modules need to show it.
    func comment(_ key: SSHTabKey) -> String {
        switch key {
        case .fido(let k):
            var parts = [String]()
            if let user = k.user { parts.append(app.text(UIText("ssh.view.user", ["user": user]))) }
            parts.append(app.text(UIText(needsKey(k))))
            return parts.joined(separator: dot)
        case .piv(let k):
            guard let subject = k.certificateSubject else { return app.text(UIText("ssh.view.noCertificate")) }
            return subject.isEmpty ? app.text(UIText("piv.view.noSubject")) : subject
        }
    }

    /// What every use of a FIDO key needs: a touch, the PIN, both, or neither.
    func needsKey(_ k: SSHKeyOnKey) -> String {
        let touch = k.key.flags.contains(.userPresenceRequired)
        let pin = k.key.flags.contains(.userVerificationRequired)
        switch (touch, pin) {
        case (true, true): return "ssh.view.needsTouchAndPIN"
        case (true, false): return "ssh.view.needsTouch"
        case (false, true): return "ssh.view.needsPIN"
        case (false, false): return "ssh.view.needsNothing"
        }
    }

    // MARK: One key

    /// The key's facts, then its `authorized_keys` line in full (what `c` copies).
    func details(_ key: SSHTabKey, _ state: AppState) {
        var fields: [(label: String, value: String, style: TextStyle)] = []
        func add(_ label: String, _ value: String, _ style: TextStyle = .plain) {
            fields.append((app.text(UIText(label)), value, style))
        }
        add("ssh.details.type", key.typeName)
        switch key {
        case .fido(let k):
            add("ssh.details.application", k.application)
            add("ssh.details.user", k.user ?? app.text(UIText("ssh.details.noUser")))
            add("ssh.details.needs", app.text(UIText(needsKey(k))))
            if let level = k.credProtect { add("ssh.details.credProtect", String(level)) }
            add("ssh.details.credentialID", k.credentialID.hex)
            add("ssh.details.file", k.exportName)
        case .piv(let k):
            add("ssh.details.slot", k.slot.description)
            if let subject = k.certificateSubject {
                add("ssh.details.certificate", subject)
            } else {
                add("ssh.details.certificate", app.text(UIText("ssh.details.noCertificate")), theme.warning)
            }
            add("ssh.details.use", "ssh -I libykcs11.so")
        }
        add("ssh.details.fingerprint", key.fingerprint)
        screen.draw(
            " " + app.text(UIText("ssh.details.title", ["key": whereText(key)])) + working(state.ssh.busy, after: dot),
            row: area.row,
            column: area.column, style: theme.heading, width: area.width)
        // The line first (what Enter is for; it breaks anywhere, base64 having no spaces), then the facts in the
        // rows left.
        var row = area.row + 2
        let bottom = area.row + area.height
        screen.draw(
            " " + app.text(UIText("ssh.details.line")), row: row, column: area.column, style: theme.dim,
            width: area.width)
        row += 1
        let width = max(1, area.width - 2)
        var rest = Substring(key.line)
        while !rest.isEmpty, row < bottom {
            screen.draw(
                " " + String(rest.prefix(width)), row: row, column: area.column, style: .plain, width: area.width)
            rest = rest.dropFirst(width)
            row += 1
        }
        if row + 1 < bottom { labelled(fields, top: row + 1) }
    }

    /// The tab's bindings that apply now, for the hints line every tab shares.
    static func hints(_ state: AppState, app: AppView) -> String {
        var parts = [UIText]()
        if state.ssh.phase == .ready, state.ssh.load != nil {
            if state.ssh.showDetails {
                parts = [UIText("ssh.hint.back"), UIText("ssh.hint.copy")]
                if case .fido? = state.ssh.selected {
                    parts.append(UIText("ssh.hint.export"))
                    if state.ssh.pinHeld { parts.append(UIText("ssh.hint.delete")) }
                }
            } else {
                if !state.ssh.rows.isEmpty { parts += [UIText("ssh.hint.details"), UIText("ssh.hint.copy")] }
                parts.append(UIText("ssh.hint.new"))
                if !state.ssh.fidoKeys.isEmpty { parts.append(UIText("ssh.hint.export")) }
                if state.ssh.pinHeld && !state.ssh.fidoKeys.isEmpty { parts.append(UIText("ssh.hint.delete")) }
                if state.ssh.load?.fido == .pinNeeded { parts.append(UIText("ssh.hint.pin")) }
                parts.append(UIText("ssh.hint.reload"))
            }
        }
        return app.hints(parts, state)
    }

    // MARK: Overlays

    /// "Touch your key" in a box while the key makes the new SSH key.
    func touch() {
        let width = min(66, screen.size.columns)
        let lines =
            [app.text(UIText("ssh.touch.title")), ""] + wrap(app.text(UIText("ssh.touch.note")), width: width - 4)
        messageBox(
            title: app.text(UIText("ssh.touch.box")), lines: lines, style: theme.warning, width: width,
            footer: app.text(UIText("ssh.touch.cancel")))
    }
}

extension SSHTabView: TabView {}
