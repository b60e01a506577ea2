import AuthenticatorModel
import Glibc
import KeyKit

/// The PIV tab: version, serial, PIN and PUK tries and the management key, the slots at a glance (key,
/// certificate subject, expiry), a slot's certificate in full, the dialogs and "Touch your key" while the key
/// waits to sign.
struct PIVTabView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        let piv = state.piv
        if let info = content(piv.phase, piv.info, words: "piv") {
            if piv.showDetails, let row = piv.selected {
                details(row, info, state)
            } else {
                overview(info, state)
            }
        }
        // While the key waits for a touch, that is all there is to say: the box takes the dialog's place.
        dialog(piv.dialog, unless: piv.busy) { touch(state) }
    }

    // MARK: At a glance

    /// PIN, PUK and management key, each with its state and how much it matters.
    func secrets(_ info: PIVInfo) -> [(UIText, String, TextStyle)] {
        var lines: [(UIText, String, TextStyle)] = []
        var version = info.version
        if let serial = info.serial {
            version += dot + app.text(UIText("view.status.serial", ["serial": String(serial)]))
        }
        lines.append((UIText("piv.view.version"), version, .plain))

        func tries(_ left: Int?, _ total: Int?, isDefault: Bool?, defaultHint: String, blocked: String) -> (
            String, TextStyle
        ) {
            guard let left else { return (app.text(UIText("piv.view.triesUnknown")), theme.dim) }
            if left == 0 { return (app.text(UIText(blocked)), theme.error) }
            var text = app.text(
                total.map { UIText("piv.view.triesOf", ["left": String(left), "total": String($0)]) }
                    ?? UIText("piv.view.tries", ["left": String(left)]))
            var style = left < (total ?? PIV.defaultRetries) ? theme.warning : TextStyle.plain
            if isDefault == true {
                text += dot + app.text(UIText(defaultHint))
                style = theme.warning
            }
            return (text, style)
        }
        let pin = tries(
            info.pinRetries, info.pinTotal, isDefault: info.pinDefault, defaultHint: "piv.view.defaultPIN",
            blocked: "piv.view.pinBlocked")
        lines.append((UIText("piv.view.pin"), pin.0, pin.1))
        let puk = tries(
            info.pukRetries, info.pukTotal, isDefault: info.pukDefault, defaultHint: "piv.view.defaultPUK",
            blocked: "piv.view.pukBlocked")
        lines.append((UIText("piv.view.puk"), puk.0, puk.1))
        if let algorithm = info.managementKey {
            if info.managementKeyDefault == true {
                lines.append(
                    (
                        UIText("piv.view.managementKey"),
                        algorithm.description + dot + app.text(UIText("piv.view.defaultManagementKey")), theme.warning
                    ))
            } else {
                lines.append((UIText("piv.view.managementKey"), algorithm.description, .plain))
            }
        } else {
            lines.append(
                (UIText("piv.view.managementKey"), app.text(UIText("piv.view.managementKeyUnknown")), theme.dim))
        }
        return lines
    }

    func overview(_ info: PIVInfo, _ state: AppState) {
        let bottom = area.row + area.height
        screen.draw(
            " " + app.text(UIText("piv.view.title")) + working(state.piv.busy, after: dot), row: area.row,
            column: area.column,
            style: theme.heading, width: area.width)
        let row = labelled(secrets(info).map { (app.text($0.0), $0.1, $0.2) }, top: area.row + 2) + 1
        let alert = state.piv.alert.map { wrap(app.resolve($0), width: area.width - 3) } ?? []
        slots(info, state, top: row, bottom: bottom - (alert.isEmpty ? 0 : alert.count + 1))
        for (i, line) in alert.enumerated() {
            screen.draw(
                " " + line, row: bottom - alert.count + i, column: area.column, style: theme.warning, width: area.width)
        }
    }

    /// The slot list between `top` and `bottom`: a heading, then a line per slot; it scrolls to keep the cursor
    /// in view.
    func slots(_ info: PIVInfo, _ state: AppState, top: Int, bottom: Int) {
        guard bottom - top >= 2 else { return }
        let rows = info.rows
        let width = area.width - 1
        let unknown = app.text(UIText("piv.view.unknown"))
        let keyWidth =
            ([app.text(UIText("piv.view.column.key")), app.text(UIText("piv.view.noKey")), "RSA4096"]
                .map(\.cellWidth).max() ?? 7) + 2
        let expiryWidth = max(10, app.text(UIText("piv.view.column.expires")).cellWidth) + 1
        let names = rows.map { $0.slot.description + " " + app.text(slotName($0.slot)) }
        let slotWidth = max(4, min((names.map(\.cellWidth).max() ?? 4) + 2, width - keyWidth - expiryWidth - 12))
        let certificateWidth = max(1, width - slotWidth - keyWidth - expiryWidth)
        let heading = tableLine([
            (app.text(UIText("piv.view.column.slot")), slotWidth), (app.text(UIText("piv.view.column.key")), keyWidth),
            (app.text(UIText("piv.view.column.certificate")), certificateWidth),
            (app.text(UIText("piv.view.column.expires")), expiryWidth),
        ])
        screen.draw(" " + heading, row: top, column: area.column, style: theme.dim, width: area.width)
        let visible = bottom - top - 1
        let selected = max(0, min(rows.count - 1, state.piv.selectedRow))
        let first = max(0, selected - visible + 1)
        for (offset, (i, slot)) in rows.enumerated().dropFirst(first).prefix(visible).enumerated() {
            let y = top + 1 + offset
            // Firmware that tells the slots' keys says "no key"; older firmware's slots are known by their
            // certificates only.
            let key: String
            if let algorithm = info.hasMetadata ? slot.key?.algorithm : slot.algorithm {
                key = algorithm.description
            } else if slot.isEmpty {
                key = screen.unicode ? "–" : "-"
            } else {
                key = info.hasMetadata ? app.text(UIText("piv.view.noKey")) : unknown
            }
            let certificate: String
            var certificateStyle = TextStyle.plain
            if let c = slot.certificate {
                certificate = c.subject.isEmpty ? app.text(UIText("piv.view.noSubject")) : c.subject
            } else if slot.certificateProblem != nil {
                certificate = app.text(UIText("piv.view.certificateUnreadable"))
                certificateStyle = theme.warning
            } else {
                certificate = app.text(UIText(slot.isEmpty ? "piv.view.empty" : "piv.view.noCertificate"))
            }
            var expiry = ""
            var expiryStyle = TextStyle.plain
            if let c = slot.certificate, let end = c.notAfter {
                expiry = PIVTabView.date(end)
                switch c.expiry(now: state.now) {
                case .expired, .notYetValid: expiryStyle = theme.error
                case .soon: expiryStyle = theme.warning
                case .valid: break
                }
            }
            let isSelected = i == selected
            let base: TextStyle = isSelected ? theme.selection : (slot.isEmpty ? theme.dim : .plain)
            let text =
                " "
                + tableLine([
                    (names[i], slotWidth), (key, keyWidth), (certificate, certificateWidth), (expiry, expiryWidth),
                ])
            screen.draw(
                text.padded(toCells: area.width, unicode: screen.unicode), row: y, column: area.column, style: base)
            let certificateColumn = area.column + 1 + slotWidth + keyWidth
            if certificateStyle != .plain, !isSelected {
                screen.draw(
                    certificate, row: y, column: certificateColumn, style: certificateStyle, width: certificateWidth - 1
                )
            }
            if expiryStyle != .plain {
                screen.draw(
                    expiry, row: y, column: certificateColumn + certificateWidth, style: expiryStyle, width: expiryWidth
                )
            }
        }
        // On the title's row: the heading's columns fill theirs.
        scrollMark(first: first, visible: visible, count: rows.count)
    }

    /// The slot's name as PIV documents call it.
    func slotName(_ slot: PIV.Slot) -> UIText {
        switch slot {
        case .authentication: return UIText("piv.slot.authentication")
        case .signature: return UIText("piv.slot.signature")
        case .keyManagement: return UIText("piv.slot.keyManagement")
        case .cardAuthentication: return UIText("piv.slot.cardAuthentication")
        case .attestation: return UIText("piv.slot.attestation")
        default: return UIText("piv.slot.retired", ["number": String(Int(slot.rawValue) - 0x81)])
        }
    }

    /// The tab's bindings that apply now, for the hints line every tab shares.
    static func hints(_ state: AppState, app: AppView) -> String {
        var parts = [UIText]()
        if state.piv.phase == .ready, state.piv.info != nil {
            if state.piv.showDetails {
                parts = [
                    UIText("piv.hint.back"), UIText("piv.hint.verify"), UIText("piv.hint.export"),
                    UIText("piv.hint.sshKey"),
                ]
            } else {
                parts = [
                    UIText("piv.hint.details"), UIText("piv.hint.verify"), UIText("piv.hint.certificate"),
                    UIText("piv.hint.sshKey"), UIText("piv.hint.export"), UIText("piv.hint.pin"),
                    UIText("piv.hint.puk"), UIText("piv.hint.unblock"), UIText("piv.hint.reload"),
                ]
            }
        }
        return app.hints(parts, state)
    }

    // MARK: Overlays

    /// "Touch your key" in a box: the key signs once touched (and gives up by itself when it is not).
    func touch(_ state: AppState) {
        let slot = state.piv.selected?.slot.description ?? ""
        let lines =
            [app.text(UIText("piv.touch.title")), ""]
            + wrap(app.text(UIText("piv.touch.note", ["slot": slot])), width: 62)
        messageBox(title: app.text(UIText("piv.touch.box")), lines: lines, style: theme.warning, width: 66)
    }

    // MARK: Dates

    /// A day in UTC: "2026-07-01".
    static func date(_ seconds: Double) -> String {
        String(dateTime(seconds).prefix(10))
    }

    /// A moment in UTC: "2026-07-01 12:00:00 UTC".
    static func dateTime(_ seconds: Double) -> String {
        var t = time_t(seconds.rounded(.down))
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return "?" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }
}

extension PIVTabView: TabView {}
