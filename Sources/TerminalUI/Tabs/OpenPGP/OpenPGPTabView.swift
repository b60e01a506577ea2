import AuthenticatorModel
import KeyKit

/// The OpenPGP tab: the card at a glance as `gpg --card-status` shows it (versions and serial, the tries left of
/// the PIN, the reset code and the admin PIN, the signature PIN policy and counter, the cardholder) and its three
/// keys with algorithm, creation date, touch policy and fingerprint; the dialogs over it.
struct OpenPGPTabView {
    let app: AppView
    let area: Box

    func render(_ state: AppState) {
        let openpgp = state.openpgp
        if let info = content(openpgp.phase, openpgp.info, words: "openpgp") {
            overview(info, state)
        }
        // No operation of the tab waits for a touch: the dialog is all there is over it.
        dialog(openpgp.dialog, unless: openpgp.busy) {}
    }

    /// The card's facts, each with how much it matters.
    func facts(_ info: OpenPGPCardInfo) -> [(UIText, String, TextStyle)] {
        var lines: [(UIText, String, TextStyle)] = []
        lines.append(
            (
                UIText("openpgp.view.version"),
                app.text(
                    UIText(
                        "openpgp.view.versions",
                        ["specification": info.specification, "version": info.version]))
                    + dot + app.text(UIText("view.status.serial", ["serial": String(info.serial)])), .plain
            ))
        func tries(_ password: OpenPGP.Password) -> (String, TextStyle) {
            let left = info.tries(password)
            if left == 0 {
                return (
                    app.text(UIText("openpgp.view.blocked." + password.textName)),
                    password == .reset ? theme.dim : theme.error
                )
            }
            return (
                app.text(UIText("openpgp.view.tries", ["left": String(left)])),
                left < OpenPGPTabView.defaultTries ? theme.warning : .plain
            )
        }
        for password in OpenPGP.Password.allCases {
            let (text, style) = tries(password)
            lines.append((UIText("openpgp.view." + password.textName), text, style))
        }
        var signatures = app.text(
            info.signatureCounter.map { UIText("openpgp.view.signatureCount", ["count": String($0)]) }
                ?? UIText("openpgp.view.signatureCountUnknown"))
        signatures +=
            dot + app.text(UIText(info.pinForSeveralSignatures ? "openpgp.view.pinOnce" : "openpgp.view.pinAlways"))
        lines.append((UIText("openpgp.view.signatures"), signatures, .plain))
        if info.cardholder.isEmpty {
            lines.append((UIText("openpgp.view.cardholder"), app.text(UIText("openpgp.view.notSet")), theme.dim))
        } else {
            lines.append((UIText("openpgp.view.cardholder"), info.cardholder, .plain))
        }
        if !info.url.isEmpty { lines.append((UIText("openpgp.view.url"), info.url, .plain)) }
        if info.kdfEnabled {
            lines.append((UIText("openpgp.view.kdf"), app.text(UIText("openpgp.view.kdfOn")), .plain))
        }
        return lines
    }

    /// A card's tries when new: three each (the reset code has none until it is set).
    static let defaultTries = 3

    func overview(_ info: OpenPGPCardInfo, _ state: AppState) {
        screen.draw(
            " " + app.text(UIText("openpgp.view.title")) + working(state.openpgp.busy, after: dot), row: area.row,
            column: area.column,
            style: theme.heading, width: area.width)
        let row = labelled(facts(info).map { (app.text($0.0), $0.1, $0.2) }, top: area.row + 2) + 1
        keys(info, state, top: row, bottom: area.row + area.height)
    }

    /// The three keys between `top` and `bottom`: a heading, then a line per key with its fingerprint below it
    /// when there is room.
    func keys(_ info: OpenPGPCardInfo, _ state: AppState, top: Int, bottom: Int) {
        guard bottom - top >= 2 else { return }
        let width = area.width - 1
        let names = info.keys.map { openpgpSlotName($0.slot) }
        let slotWidth = (names.map(\.cellWidth).max() ?? 4) + 2
        let noKey = app.text(UIText("openpgp.view.noKey"))
        let algorithmWidth =
            ([app.text(UIText("openpgp.view.column.algorithm")), noKey] + info.keys.compactMap(\.algorithm))
            .map(\.cellWidth).max().map { $0 + 2 } ?? 12
        let createdWidth = max(12, app.text(UIText("openpgp.view.column.created")).cellWidth + 2)
        let touchWidth = max(1, width - slotWidth - algorithmWidth - createdWidth)
        let heading = tableLine([
            (app.text(UIText("openpgp.view.column.key")), slotWidth),
            (app.text(UIText("openpgp.view.column.algorithm")), algorithmWidth),
            (app.text(UIText("openpgp.view.column.created")), createdWidth),
            (app.text(UIText("openpgp.view.column.touch")), touchWidth),
        ])
        screen.draw(" " + heading, row: top, column: area.column, style: theme.dim, width: area.width)
        // Two lines a key (the fingerprint under it) when they fit, else one.
        let perKey = bottom - top - 1 >= 2 * info.keys.count ? 2 : 1
        let selected = max(0, min(info.keys.count - 1, state.openpgp.selectedRow))
        var y = top + 1
        for (i, key) in info.keys.enumerated() where y < bottom {
            let isSelected = i == selected
            let created = key.created == 0 ? "" : PIVTabView.date(Double(key.created))
            let text =
                " "
                + tableLine([
                    (names[i], slotWidth), (key.hasKey ? key.algorithm ?? "?" : noKey, algorithmWidth),
                    (key.hasKey ? created : "", createdWidth),
                    (app.text(openpgpTouchText(key.touchPolicy)), touchWidth),
                ])
            let style: TextStyle = isSelected ? theme.selection : (key.hasKey ? .plain : theme.dim)
            screen.draw(
                text.padded(toCells: area.width, unicode: screen.unicode), row: y, column: area.column, style: style)
            y += 1
            if perKey == 2, y < bottom {
                if key.hasKey, let fingerprint = key.fingerprintText {
                    screen.draw(
                        String(repeating: " ", count: 5) + fingerprint, row: y, column: area.column, style: theme.dim,
                        width: area.width)
                }
                y += 1
            }
        }
    }

    /// "SIG Signature", as GnuPG's card status names the keys.
    func openpgpSlotName(_ slot: OpenPGP.KeySlot) -> String {
        openpgpSlotLabel(slot) + " " + app.text(UIText("openpgp.slot." + slot.name))
    }

    /// The tab's bindings that apply now, for the hints line every tab shares.
    static func hints(_ state: AppState, app: AppView) -> String {
        var parts = [UIText]()
        if state.openpgp.phase == .ready, state.openpgp.info != nil {
            parts = [
                UIText("openpgp.hint.touch"), UIText("openpgp.hint.pin"), UIText("openpgp.hint.adminPIN"),
                UIText("openpgp.hint.resetCode"), UIText("openpgp.hint.unblock"), UIText("openpgp.hint.export"),
                UIText("openpgp.hint.attest"), UIText("openpgp.hint.reset"), UIText("openpgp.hint.reload"),
            ]
        }
        return app.hints(parts, state)
    }
}

extension OpenPGPTabView: TabView {}
