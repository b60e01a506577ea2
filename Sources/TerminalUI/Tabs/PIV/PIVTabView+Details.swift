import AuthenticatorModel
import KeyKit

/// A slot in full: its certificate (subject, issuer, serial, validity, key usage, alternative names, SHA-256
/// fingerprint, signature algorithm) and its key (algorithm, origin, PIN and touch policies).
extension PIVTabView {
    func details(_ slot: PIVSlotInfo, _ info: PIVInfo, _ state: AppState) {
        var lines: [(UIText, String, TextStyle)] = []
        func add(_ label: String, _ value: String, _ style: TextStyle = .plain) {
            lines.append((UIText(label), value, style))
        }
        if let c = slot.certificate {
            add("piv.details.subject", c.subject.isEmpty ? app.text(UIText("piv.view.noSubject")) : c.subject)
            add("piv.details.issuer", c.issuer)
            add("piv.details.serial", c.serialHex)
            add("piv.details.notBefore", c.notBefore.map(PIVTabView.dateTime) ?? "?")
            let (validity, style) = expiry(c, now: state.now)
            add("piv.details.notAfter", (c.notAfter.map(PIVTabView.dateTime) ?? "?") + validity, style)
            add(
                "piv.details.keyUsage",
                c.keyUsage.map { $0.isEmpty ? app.text(UIText("piv.details.none")) : $0.joined(separator: ", ") }
                    ?? app.text(UIText("piv.details.noExtension")))
            add(
                "piv.details.alternativeNames",
                c.alternativeNames.isEmpty
                    ? app.text(UIText("piv.details.none")) : c.alternativeNames.joined(separator: ", "))
            add("piv.details.fingerprint", c.fingerprint)
            add("piv.details.signatureAlgorithm", c.signatureAlgorithm)
        } else if let problem = slot.certificateProblem {
            add("piv.details.certificate", app.resolve(problem), theme.warning)
        } else {
            add("piv.details.certificate", app.text(UIText("piv.view.noCertificate")))
        }
        if let key = slot.key {
            add("piv.details.key", key.algorithm.description + dot + app.text(origin(key.origin)))
            add("piv.details.pinPolicy", app.text(pinPolicy(key.pinPolicy, slot: slot.slot)))
            add("piv.details.touchPolicy", app.text(touchPolicy(key.touchPolicy)))
        } else if info.hasMetadata {
            add("piv.details.key", app.text(UIText("piv.view.noKey")))
        } else if let algorithm = slot.algorithm {
            add("piv.details.key", algorithm.description + dot + app.text(UIText("piv.details.keyFromCertificate")))
        }
        switch slot.certificateMatchesKey {
        case true?: add("piv.details.match", app.text(UIText("piv.details.matches")), theme.success)
        case false?: add("piv.details.match", app.text(UIText("piv.details.mismatch")), theme.error)
        case nil: break
        }

        let labelWidth = min(24, (lines.map { app.text($0.0).cellWidth }.max() ?? 10) + 2)
        let valueColumn = area.column + 1 + labelWidth
        let valueWidth = max(1, area.width - valueColumn - 1)
        let title =
            app.text(UIText("piv.details.title", ["slot": slot.slot.description])) + dot + app.text(slotName(slot.slot))
        var shown: [(label: String, value: String, style: TextStyle)] = [
            (" " + title + working(state.piv.busy, after: dot), "", theme.heading), ("", "", .plain),
        ]
        for (label, value, style) in lines {
            // A fingerprint breaks at its colons, nowhere else.
            let pieces =
                label.key == "piv.details.fingerprint"
                ? fingerprintLines(value, width: valueWidth) : wrap(value, width: valueWidth)
            for (i, piece) in pieces.enumerated() {
                shown.append((i == 0 ? " " + app.text(label) : "", piece, style))
            }
        }
        let rows = area.height
        let first = min(state.piv.detailsScroll, max(0, shown.count - rows))
        let more = shown.count - first > rows
        for (offset, line) in shown.dropFirst(first).prefix(more ? rows - 1 : rows).enumerated() {
            let row = area.row + offset
            if offset + first == 0 {
                screen.draw(line.label, row: row, column: area.column, style: line.style, width: area.width)
                continue
            }
            screen.draw(line.label, row: row, column: area.column, style: theme.dim, width: labelWidth + 1)
            screen.draw(line.value, row: row, column: valueColumn, style: line.style, width: valueWidth)
        }
        if more {
            screen.draw(
                " " + app.text(UIText("piv.view.more")), row: area.row + rows - 1, column: area.column,
                style: theme.dim, width: area.width)
        }
    }

    /// How long the certificate is still valid, after its end date, and the colour that says how urgent.
    func expiry(_ c: PIVCertificateInfo, now: Double) -> (String, TextStyle) {
        switch c.expiry(now: now) {
        case .valid(let days?): return (dot + app.text(UIText("piv.details.daysLeft", ["days": String(days)])), .plain)
        case .valid(nil): return ("", .plain)
        case .soon(let days):
            return (dot + app.text(UIText("piv.details.daysLeft", ["days": String(days)])), theme.warning)
        case .expired(let days):
            return (dot + app.text(UIText("piv.details.expired", ["days": String(days)])), theme.error)
        case .notYetValid: return (dot + app.text(UIText("piv.details.notYetValid")), theme.error)
        }
    }

    /// "AB:CD:…" in lines of whole pairs.
    func fingerprintLines(_ text: String, width: Int) -> [String] {
        // Each pair takes three cells with its colon; the last line's last pair has none.
        let pairs = max(1, width / 3)
        let parts = text.split(separator: ":").map(String.init)
        guard parts.count > pairs else { return [text] }
        return stride(from: 0, to: parts.count, by: pairs).map { start in
            let line = parts[start..<min(parts.count, start + pairs)].joined(separator: ":")
            return start + pairs < parts.count ? line + ":" : line
        }
    }

    func origin(_ origin: PIV.Origin) -> UIText {
        switch origin {
        case .generated: return UIText("piv.origin.generated")
        case .imported: return UIText("piv.origin.imported")
        }
    }

    /// The policy as the key applies it: the default is the slot's (the PIN once for most, never for 9E).
    func pinPolicy(_ policy: PIV.PINPolicy, slot: PIV.Slot) -> UIText {
        switch policy {
        case .default:
            return UIText(
                PIVSignatureCheck.needsPIN(slot, pinPolicy: .default)
                    ? "piv.pinPolicy.defaultPIN" : "piv.pinPolicy.defaultNever")
        case .never: return UIText("piv.pinPolicy.never")
        case .once: return UIText("piv.pinPolicy.once")
        case .always: return UIText("piv.pinPolicy.always")
        case .matchOnce: return UIText("piv.pinPolicy.matchOnce")
        case .matchAlways: return UIText("piv.pinPolicy.matchAlways")
        }
    }

    func touchPolicy(_ policy: PIV.TouchPolicy) -> UIText {
        switch policy {
        case .default, .never: return UIText("piv.touchPolicy.never")
        case .always: return UIText("piv.touchPolicy.always")
        case .cached: return UIText("piv.touchPolicy.cached")
        }
    }
}
