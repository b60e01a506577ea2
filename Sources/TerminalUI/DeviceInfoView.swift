import AuthenticatorModel
import KeyKit

/// The Management information of the selected key, as an overlay: model, serial, firmware, form factor,
/// flags, and which applications are supported and enabled over USB and NFC. Any key closes it.
struct DeviceInfoView {
    let app: AppView

    var screen: Screen { app.screen }
    var theme: Theme { app.theme }

    /// The rows of the overlay: label and value (an empty label continues the value above).
    func rows(_ state: AppState) -> [(label: String, value: String, style: TextStyle)] {
        func t(_ key: String, _ args: [String: String] = [:]) -> String { app.text(UIText(key, args)) }
        guard let key = state.selectedKey else {
            let text =
                state.service == .refused
                ? "view.status.pcscdRefused" : state.service == .unavailable ? "view.status.noPcscd" : "view.noKey"
            return [("", t(text), theme.dim)]
        }
        var rows: [(label: String, value: String, style: TextStyle)] = []
        guard let info = key.info else {
            rows.append((t("device.reader"), key.descriptor.name, .plain))
            rows.append(("", t(key.probed ? "device.unreadable" : "device.reading"), theme.dim))
            return rows
        }
        let d = info.device
        let yes = t("device.yes"), no = t("device.no")
        rows.append((t("device.model"), d.productName ?? t(d.unnamedKey.key), theme.heading))
        rows.append((t("device.serial"), d.serial.map(String.init) ?? t("device.unknown"), .plain))
        rows.append((t("device.name"), state.givenName(of: key) ?? t("device.noName"), .plain))
        rows.append((t("device.firmware"), d.version.description, .plain))
        if d.fromManagement {
            rows.append((t("device.formFactor"), t("form-factor." + d.formFactor.identifier), .plain))
            var flags = [String]()
            if d.isFIPS { flags.append("FIPS") }
            if d.isSky { flags.append("Security Key") }
            if !flags.isEmpty { rows.append((t("device.series"), flags.joined(separator: ", "), .plain)) }
            // Only an Enhanced PIN key has the row: it refuses new PINs too easy to guess.
            if d.pinComplexity { rows.append((t("device.pinComplexity"), t("device.enforced"), .plain)) }
            if d.nfcRestricted { rows.append((t("device.nfcRestricted"), t("device.untilUSB"), theme.warning)) }
            rows.append(
                (t("device.configLock"), d.isConfigLocked ? yes : no, d.isConfigLocked ? theme.warning : .plain))
            if let part = d.partNumber, !part.isEmpty { rows.append((t("device.partNumber"), part, .plain)) }
            if let eject = d.autoEjectTimeout {
                rows.append(
                    (
                        t("device.autoEject"),
                        eject == 0 ? t("device.off") : t("device.seconds", ["count": String(eject)]), .plain
                    ))
            }
            if let cr = d.challengeResponseTimeout {
                rows.append((t("device.chalrespTimeout"), t("device.seconds", ["count": String(cr)]), .plain))
            }
        }
        rows.append((t("device.reader"), info.reader, .plain))
        rows.append((t("device.transport"), t(info.overNFC ? "device.nfc" : "device.usb"), .plain))
        rows.append((t("device.interfaces"), interfaces(key.descriptor), .plain))
        if d.fromManagement {
            rows.append((t("device.usbApps"), capabilities(enabled: d.enabledUSB, supported: d.supportedUSB), .plain))
            if let supported = d.supportedNFC, !supported.isEmpty {
                rows.append(
                    (t("device.nfcApps"), capabilities(enabled: d.enabledNFC ?? [], supported: supported), .plain))
            } else {
                rows.append((t("device.nfcApps"), t("device.noNFC"), theme.dim))
            }
        } else {
            rows.append((t("device.apps"), info.applications.joined(separator: " "), .plain))
            rows.append(("", t("device.probed"), theme.dim))
        }
        return rows
    }

    /// "CCID · FIDO HID · OTP HID" (the reader is named in its own row; `ykterm list` has the hidraw paths).
    func interfaces(_ d: KeyDescriptor) -> String {
        var parts = [String]()
        if d.reader != nil { parts.append(d.overNFC ? "NFC" : "CCID") }
        if d.fidoHID != nil { parts.append("FIDO HID") }
        if d.otpHID != nil { parts.append("OTP HID") }
        return parts.joined(separator: screen.unicode ? " · " : ", ")
    }

    /// `OTP FIDO2 OATH -PIV` style: enabled ones plain, supported but disabled ones marked off.
    func capabilities(enabled: Capabilities, supported: Capabilities) -> String {
        let off = app.text(UIText("device.offMark"))
        let names = Capabilities.named.compactMap { cap, name -> String? in
            guard supported.contains(cap) else { return nil }
            return enabled.contains(cap) ? name : "\(name)\(off)"
        }
        return names.isEmpty ? "-" : names.joined(separator: " ")
    }

    /// The lines under the rows: a change waiting for its yes (before → after, a restart, the interface it turns
    /// off), or how to use the view.
    func footer(_ state: AppState, toggles: [DeviceConfigToggle]) -> [(text: String, style: TextStyle)] {
        if let pending = state.deviceConfig.pending {
            // Wrapped to the box (72 columns, or the screen's), so before and after are read whole.
            let width = max(1, min(72, screen.size.columns) - 4)
            var lines = wrap(app.text(pending.change.text), width: width).map { ($0, theme.heading) }
            if pending.change.needsReboot {
                lines += wrap(app.text(UIText("config.tui.restarts")), width: width).map { ($0, TextStyle.plain) }
            }
            if let cut = pending.cuts {
                lines += wrap(
                    app.text(UIText("config.tui.cuts", ["interface": cut.rawValue.uppercased()])), width: width
                )
                .map { ($0, theme.warning) }
            }
            if state.selectedKey?.info?.device.isConfigLocked == true {
                lines += wrap(app.text(UIText("config.tui.lockedAsk")), width: width).map { ($0, theme.warning) }
            }
            lines.append((app.text(UIText("config.tui.confirm")), theme.dim))
            return lines
        }
        var lines = [(text: String, style: TextStyle)]()
        if state.keys.count > 1 {
            lines.append(
                (
                    app.text(
                        UIText(
                            "device.moreKeys",
                            [
                                "count": String(state.keys.count),
                                "key": String(state.bindings.key(for: .keys)),
                            ])), theme.dim
                ))
        }
        lines.append(
            (
                app.text(
                    UIText(
                        toggles.isEmpty ? "device.footer" : "device.footer.toggles",
                        ["lock": String(DeviceConfigState.lockCodeKey)])), theme.dim
            ))
        return lines
    }

    /// Redraws the applications rows as toggles: each name on its own, the one under the cursor reversed.
    func drawToggles(
        _ state: AppState, toggles: [DeviceConfigToggle], rows: [(label: String, value: String, style: TextStyle)],
        box: Box, labelWidth: Int
    ) {
        guard let device = state.selectedKey?.info?.device else { return }
        let cursor = min(state.deviceConfig.cursor, toggles.count - 1)
        let off = app.text(UIText("device.offMark"))
        for transport in ConfigTransport.allCases {
            let label = app.text(UIText(transport == .usb ? "device.usbApps" : "device.nfcApps"))
            guard let index = rows.firstIndex(where: { $0.label == label }), index < box.innerHeight else { continue }
            let enabled = transport == .usb ? device.enabledUSB : device.enabledNFC ?? []
            let y = box.innerRow + index
            var column = box.innerColumn + labelWidth + 2
            let end = box.innerColumn + box.innerWidth - 1
            for (i, toggle) in toggles.enumerated() where toggle.transport == transport {
                let name = Capabilities.named.first { $0.0 == toggle.application }?.1 ?? ""
                let text = enabled.contains(toggle.application) ? name : name + off
                guard column + text.cellWidth <= end else { break }
                let style =
                    i == cursor ? theme.selection : enabled.contains(toggle.application) ? TextStyle.plain : theme.dim
                screen.draw(text, row: y, column: column, style: style, width: text.cellWidth)
                column += text.cellWidth + 1
            }
        }
    }

    func render(_ state: AppState) {
        let rows = rows(state)
        let toggles = state.selectedKey?.configToggles ?? []
        let footerLines = footer(state, toggles: toggles)
        let footer = footerLines.map(\.text)
        let box = app.overlayBox(lines: rows.count + footer.count + 1, width: 72)
        box.draw(on: screen, title: app.text(UIText("device.title")), style: theme.border, titleStyle: theme.heading)
        // Wide enough for the longest label ("Challenge-response timeout", German ones too).
        let labelWidth = min(30, (rows.map { $0.label.cellWidth }.max() ?? 0) + 1)
        for (i, row) in rows.enumerated() where i < box.innerHeight - footer.count - 1 {
            let y = box.innerRow + i
            screen.draw(
                " " + row.label.padded(toCells: labelWidth, unicode: screen.unicode), row: y, column: box.innerColumn,
                style: theme.dim, width: box.innerWidth)
            screen.draw(
                row.value, row: y, column: box.innerColumn + labelWidth + 2, style: row.style,
                width: max(0, box.innerWidth - labelWidth - 3))
        }
        if !toggles.isEmpty {
            drawToggles(state, toggles: toggles, rows: rows, box: box, labelWidth: labelWidth)
        }
        for (i, line) in footerLines.enumerated() {
            let y = box.innerRow + box.innerHeight - footer.count + i
            screen.draw(
                line.text.centered(inCells: box.innerWidth, unicode: screen.unicode), row: y, column: box.innerColumn,
                style: line.style, width: box.innerWidth)
        }
        // The lock code dialog over it: the codes as bullets.
        if let dialog = state.deviceConfig.lockDialog { app.form(dialog.form, width: 72) }
        if let dialog = state.deviceConfig.nameDialog { app.form(dialog.form, width: 72) }
    }
}
