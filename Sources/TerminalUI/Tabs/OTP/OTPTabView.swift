import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

/// The OTP tab: "Touch your key now", the captures (newest first) with their type, public ID, serial and
/// counters, the selected capture's details, and the last challenge-response answer.
struct OTPTabView {
    let app: AppView
    let area: Box
    var unicode: Bool { screen.unicode }

    func render(_ state: AppState) {
        let otp = state.otp
        let width = area.width
        var row = area.row
        // What the tab is doing.
        let heading: UIText
        let headingStyle: TextStyle
        switch otp.busy {
        case .ndef?: heading = UIText("otp.view.readingNDEF"); headingStyle = theme.warning
        case .challenge? where otp.waitingForTouch: heading = UIText("view.touchYourKey"); headingStyle = theme.warning
        case .challenge?: heading = UIText("otp.view.challenging"); headingStyle = theme.warning
        case .touch?: heading = UIText("otp.view.touching"); headingStyle = theme.warning
        case .slots?: heading = UIText("otp.view.writingSlots"); headingStyle = theme.warning
        case nil:
            heading =
                otp.receiving
                ? UIText("otp.view.receiving", ["count": String(otp.pendingCount)])
                : UIText("otp.view.listening")
            headingStyle = theme.heading
        }
        screen.draw(" " + app.resolve(heading), row: row, column: area.column, style: headingStyle, width: width)
        row += 1
        if let n = otp.ignoredTyping {
            screen.draw(
                " " + app.text(UIText("otp.view.ignored", ["count": String(n)])), row: row, column: area.column,
                style: theme.warning, width: width)
        } else {
            screen.draw(
                " " + app.text(UIText("otp.view.howto")), row: row, column: area.column, style: theme.dim, width: width)
        }
        row += 1
        if let slots = otp.slots, slots.keyID == state.selectedKeyID {
            screen.draw(
                " " + app.resolve(slotsText(slots)), row: row, column: area.column, style: theme.dim, width: width)
        }
        row += 1
        let bottom = area.row + area.height
        // The panels under the list: the selected capture's details and the challenge-response answer.
        var panel = [(String, TextStyle)]()
        if let c = otp.selectedCapture { panel += details(c, state) }
        if let r = otp.response {
            panel.append(
                (
                    app.text(UIText("otp.view.response", ["slot": String(r.slot), "challenge": r.challenge])),
                    theme.heading
                ))
            panel.append(("  " + r.response, theme.code))
        }
        let listRows = max(1, bottom - row - panel.count - (panel.isEmpty ? 0 : 1) - 1)
        if otp.captures.isEmpty {
            screen.draw(
                " " + app.text(UIText("otp.view.none")), row: row, column: area.column, style: theme.dim, width: width)
            row += 1
        } else {
            list(state, top: row, rows: listRows)
            row += min(listRows, otp.captures.count + 1)
        }
        row += 1
        for (text, style) in panel where row < bottom {
            screen.draw(" " + text, row: row, column: area.column, style: style, width: width)
            row += 1
        }
        if let form = otp.form {
            var f = form
            if otp.waitingForTouch { f.note = UIText("view.touchYourKey") }
            app.form(f, width: 64)
        }
        if let dialog = otp.slotDialog { app.form(dialog.form, width: 72) }
        if let secrets = otp.programmed { programmed(secrets) }
    }

    /// The values a slot was just programmed with, shown once in a box of their own.
    func programmed(_ secrets: OTPProgrammedSecrets) {
        var lines = [String]()
        if let id = secrets.publicID { lines.append(app.text(UIText("otp.programmed.publicID", ["value": id]))) }
        if let id = secrets.privateID { lines.append(app.text(UIText("otp.programmed.privateID", ["value": id]))) }
        lines.append(
            app.text(
                UIText(
                    secrets.publicID == nil ? "otp.programmed.hmacKey" : "otp.programmed.aesKey",
                    ["value": secrets.key])))
        let width = min(72, screen.size.columns)
        let note = wrap(app.text(UIText("otp.programmed.note")), width: width - 4)
        let box = app.modal(
            lines: lines.count + 1 + note.count, width: width,
            title: app.text(UIText("otp.programmed.title", ["slot": String(secrets.slot)])))
        var row = box.innerRow
        for line in lines {
            screen.draw(" " + line, row: row, column: box.innerColumn, style: theme.code, width: box.innerWidth)
            row += 1
        }
        row += 1
        for line in note where row < box.innerRow + box.innerHeight {
            screen.draw(" " + line, row: row, column: box.innerColumn, style: theme.dim, width: box.innerWidth)
            row += 1
        }
    }

    /// Which of the key's two slots are programmed, and over which interface that was read.
    func slotsText(_ slots: OTPSlots) -> UIText {
        if let problem = slots.problem { return UIText("otp.view.slots.problem", ["why": app.resolve(problem)]) }
        guard let status = slots.status else { return UIText("otp.view.slots.reading") }
        func slot(_ n: Int) -> String {
            guard status.isConfigured(slot: n) else { return app.text(UIText("otp.view.slot.empty")) }
            return app.text(
                UIText(status.isTouchTriggered(slot: n) ? "otp.view.slot.touch" : "otp.view.slot.programmed"))
        }
        return UIText(slots.overHID ? "otp.view.slots.hid" : "otp.view.slots", ["slot1": slot(1), "slot2": slot(2)])
    }

    /// Column widths: time, type, public ID, serial; what is left goes to the summary.
    struct Columns {
        var time = 8
        var type = 11
        var publicID = 16
        var serial = 9
    }

    func list(_ state: AppState, top: Int, rows: Int) {
        let otp = state.otp
        let c = Columns()
        let header =
            " "
            + [
                app.text(UIText("otp.view.col.time")).padded(toCells: c.time, unicode: unicode),
                app.text(UIText("otp.view.col.type")).padded(toCells: c.type, unicode: unicode),
                app.text(UIText("otp.view.col.publicID")).padded(toCells: c.publicID, unicode: unicode),
                app.text(UIText("otp.view.col.serial")).padded(toCells: c.serial, unicode: unicode),
                app.text(UIText("otp.view.col.fields")),
            ].joined(separator: " ")
        screen.draw(header, row: top, column: area.column, style: theme.dim, width: area.width)
        let shown = max(0, rows - 1)
        guard shown > 0 else { return }
        let first = (otp.selected / shown) * shown
        for (offset, capture) in otp.captures.dropFirst(first).prefix(shown).enumerated() {
            let selected = first + offset == otp.selected
            let style: TextStyle = selected ? theme.selection : summaryStyle(capture)
            var line = " " + Self.clock(capture.time).padded(toCells: c.time, unicode: unicode) + " "
            line += app.text(typeText(capture)).padded(toCells: c.type, unicode: unicode) + " "
            line +=
                (capture.publicID.map { $0.isEmpty ? "-" : $0 } ?? "-").truncated(toCells: c.publicID, unicode: unicode)
                .padded(toCells: c.publicID, unicode: unicode) + " "
            line += (capture.serial.map(String.init) ?? "-").padded(toCells: c.serial, unicode: unicode) + " "
            line += app.text(summary(capture))
            screen.draw(
                line.padded(toCells: area.width, unicode: unicode), row: top + 1 + offset, column: area.column,
                style: style, width: area.width)
        }
        if otp.captures.count > shown {
            let more = "\(first + 1)-\(min(otp.captures.count, first + shown))/\(otp.captures.count)"
            screen.draw(more, row: top, column: area.column + area.width - more.cellWidth - 1, style: theme.dim)
        }
    }

    func typeText(_ c: OTPCaptureEntry) -> UIText {
        switch c.kind {
        case .yubicoOTP: return UIText("otp.type.yubico")
        case .oathHOTP: return UIText("otp.type.hotp")
        case .staticPassword: return UIText("otp.type.static")
        }
    }

    func summary(_ c: OTPCaptureEntry) -> UIText {
        switch c.kind {
        case .yubicoOTP:
            switch c.decryption {
            case .decoded(let d):
                return UIText(
                    d.replayed ? "otp.summary.replayed" : "otp.summary.decoded",
                    ["usage": String(d.usageCounter), "session": String(d.sessionCounter)])
            case .wrongKey: return UIText("otp.summary.wrongKey")
            case .noKey: return UIText("otp.summary.noKey")
            }
        case .oathHOTP: return UIText("otp.summary.code", ["code": c.code ?? ""])
        case .staticPassword: return UIText("otp.summary.static", ["count": String(c.length)])
        }
    }

    func summaryStyle(_ c: OTPCaptureEntry) -> TextStyle {
        switch c.decryption {
        case .decoded(let d): return d.replayed ? theme.warning : .plain
        case .wrongKey: return theme.error
        case .noKey: return .plain
        }
    }

    /// The selected capture, field by field.
    func details(_ c: OTPCaptureEntry, _ state: AppState) -> [(String, TextStyle)] {
        var lines = [(String, TextStyle)]()
        let source: String
        switch c.source {
        case .typed: source = app.text(UIText("otp.source.typed"))
        case .touch: source = app.text(UIText("otp.source.touch"))
        case .ndef: source = app.text(UIText("otp.source.ndef"))
        case .pasted: source = app.text(UIText("otp.source.pasted"))
        }
        lines.append(
            (app.text(UIText("otp.view.detail", ["type": app.text(typeText(c)), "source": source])), theme.heading))
        if let text = c.text { lines.append(("  " + text, theme.code)) }
        if c.layout != .us {
            lines.append(("  " + app.text(UIText("otp.view.layout", ["layout": c.layout.displayName])), theme.dim))
        }
        guard c.kind == .yubicoOTP else { return lines }
        let id = c.publicID ?? ""
        switch c.decryption {
        case .decoded(let d):
            lines.append(
                (
                    "  "
                        + app.text(
                            UIText(
                                "otp.view.fields",
                                [
                                    "usage": String(d.usageCounter), "session": String(d.sessionCounter),
                                    "timestamp": String(d.timestamp),
                                ])), .plain
                ))
            lines.append(
                (
                    "  "
                        + app.text(
                            UIText(
                                d.replayed ? "otp.view.crcReplayed" : "otp.view.crcOK",
                                ["privateID": d.privateID])),
                    d.replayed ? theme.warning : theme.success
                ))
        case .wrongKey:
            lines.append(("  " + app.text(UIText("otp.view.wrongKey", ["publicID": id])), theme.error))
        case .noKey:
            lines.append(("  " + app.text(UIText("otp.view.noKey", ["publicID": id.isEmpty ? "-" : id])), theme.dim))
        }
        return lines
    }

    /// Local wall-clock time, HH:MM:SS.
    static func clock(_ time: Double) -> String {
        var t = time_t(time.rounded(.down))
        var parts = tm()
        guard localtime_r(&t, &parts) != nil else { return "--:--:--" }
        return [parts.tm_hour, parts.tm_min, parts.tm_sec].map { String.zeroPadded(Int($0), width: 2) }.joined(
            separator: ":")
    }

    /// The line of bindings at the bottom while the tab is shown.
    static func hints(_ state: AppState, app: AppView) -> String {
        let b = state.bindings
        return app.text(
            UIText(
                state.virtualMode ? "otp.hints.virtual" : "otp.hints",
                [
                    "challenge": String(OTPTabState.challengeKey), "touch": String(OTPTabState.touchKey),
                    "program": String(OTPTabState.programKey), "swap": String(OTPTabState.swapKey),
                    "delete": String(OTPTabState.deleteKey), "access": String(OTPTabState.accessCodeKey),
                    "help": String(b.key(for: .help)), "quit": String(b.key(for: .quit)),
                ]))
    }
}

extension OTPTabView: TabView {}
