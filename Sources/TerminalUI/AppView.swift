import AuthenticatorModel
import KeyKit

/// Turns model text into words on the screen (the string tables, in the user's language).
public typealias Localize = @Sendable (UIText) -> String

/// The colours and attributes views use, so a monochrome terminal falls back to attributes alone.
public struct Theme: Sendable {
    public var tabActive = TextStyle(foreground: .black, background: .cyan, bold: true)
    public var tabInactive = TextStyle(dim: false)
    public var selection = TextStyle(reverse: true)
    public var code = TextStyle(bold: true)
    public var codeExpiring = TextStyle(foreground: .red, bold: true)
    public var dim = TextStyle(dim: true)
    public var heading = TextStyle(bold: true, underline: false)
    public var statusBar = TextStyle(reverse: true)
    public var success = TextStyle(foreground: .green, bold: true)
    public var warning = TextStyle(foreground: .yellow, bold: true)
    public var error = TextStyle(foreground: .red, bold: true)
    public var pinned = TextStyle(foreground: .yellow)
    public var barFull = TextStyle(foreground: .green)
    public var barLow = TextStyle(foreground: .red)
    public var field = TextStyle(underline: true)
    public var focusedField = TextStyle(reverse: true)
    public var border = TextStyle(foreground: .cyan)
    /// A QR code: black on white whatever the terminal's colours (a phone reads dark modules on light).
    public var qrCode = TextStyle(foreground: .black, background: .white)

    public init() {}

    /// No colours: only bold, reverse and underline (`NO_COLOR`, or a terminal without colours).
    public static let monochrome: Theme = {
        var t = Theme()
        t.tabActive = TextStyle(bold: true, reverse: true)
        t.codeExpiring = TextStyle(bold: true, underline: true)
        t.success = TextStyle(bold: true)
        t.warning = TextStyle(bold: true)
        t.error = TextStyle(bold: true, reverse: true)
        t.pinned = TextStyle(bold: true)
        t.barFull = .plain
        t.barLow = TextStyle(bold: true)
        t.border = .plain
        t.qrCode = .plain
        return t
    }()
}

/// The whole screen: tab bar, the selected tab, the status bar, and any overlay.
public struct AppView {
    public let screen: Screen
    public let text: Localize
    public let theme: Theme

    public init(screen: Screen, text: @escaping Localize, theme: Theme = Theme()) {
        self.screen = screen
        // A terminal without UTF-8 gets every word in ASCII (the tables' symbols and umlauts have stand-ins).
        if screen.unicode {
            self.text = text
        } else {
            self.text = { (t: UIText) -> String in ASCIIFallback.fold(text(t)) }
        }
        self.theme = theme
    }

    /// The first row under the tab bar, and the last row above the hints line.
    var bodyTop: Int { 1 }
    var bodyBottom: Int { screen.size.rows - 4 }

    public func render(_ state: AppState) {
        screen.erase()
        screen.hideCursor()
        guard screen.size.rows >= 5, screen.size.columns >= 20 else {
            screen.draw(text(UIText("view.tooSmall")), row: 0, column: 0, style: theme.error)
            screen.present()
            return
        }
        tabBar(state)
        // The bars first: a tab's dialog may cover them on a short terminal.
        statusBar(state)
        let body = Box(row: bodyTop, column: 0, height: bodyBottom - bodyTop + 1, width: screen.size.columns)
        state.tab.view.init(app: self, area: body).render(state)
        if state.showDeviceInfo { DeviceInfoView(app: self).render(state) }
        if state.showKeySwitcher { keySwitcher(state) }
        if state.showHelp { help(state) }
        screen.present()
    }

    // MARK: Bars

    func tabBar(_ state: AppState) {
        let labels = Tab.allCases.map { " \($0.rawValue + 1) \(text(UIText($0.nameKey))) " }
        // A blank between the tabs when they all fit with it; on a narrow terminal they touch.
        let gap = labels.reduce(0) { $0 + $1.cellWidth + 1 } <= screen.size.columns ? 1 : 0
        var column = 0
        for (tab, label) in zip(Tab.allCases, labels) {
            screen.draw(label, row: 0, column: column, style: tab == state.tab ? theme.tabActive : theme.tabInactive)
            column += label.cellWidth + gap
        }
        let hint = text(UIText("view.helpHint", ["key": String(state.bindings.key(for: .help))]))
        let hintColumn = screen.size.columns - hint.cellWidth - 1
        if hintColumn > column { screen.draw(hint, row: 0, column: hintColumn, style: theme.dim) }
    }

    /// Row rows-3: the keys that work now (every tab, always there); row rows-2: the key and its state;
    /// row rows-1: the latest message.
    func statusBar(_ state: AppState) {
        let columns = screen.size.columns
        let keyRow = screen.size.rows - 2
        var parts = [String]()
        var reader: String?
        if let key = state.selectedKey {
            parts.append(state.displayName(of: key))
            if let serial = key.serial { parts.append(text(UIText("view.status.serial", ["serial": String(serial)]))) }
            if let version = key.version {
                parts.append(text(UIText("view.status.firmware", ["version": version.description])))
            }
            switch state.oath.phase {
            case .locked: parts.append(text(UIText("view.status.locked")))
            case .loading: parts.append(text(UIText("view.status.reading")))
            default: parts.append(text(UIText("view.status.connected")))
            }
            // The reader goes last: it is the first thing to give way on a narrow terminal.
            if key.model != nil, key.descriptor.name != key.model { reader = key.descriptor.name }
        } else if state.service.isDown {
            parts.append(text(UIText(state.service == .refused ? "view.status.pcscdRefused" : "view.status.noPcscd")))
        } else {
            parts.append(text(UIText("view.status.noKey")))
        }
        if state.keys.count > 1 {
            parts.append(
                text(
                    UIText(
                        "view.status.moreKeys",
                        ["count": String(state.keys.count), "key": String(state.bindings.key(for: .keys))])))
        }
        if state.virtualMode { parts.append(text(UIText("view.status.virtual"))) }
        if let reader { parts.append(reader) }
        let separator = screen.unicode ? " · " : " | "
        screen.draw(
            (" " + parts.joined(separator: separator)).padded(toCells: columns, unicode: screen.unicode),
            row: keyRow, column: 0, style: theme.statusBar)
        let messageRow = screen.size.rows - 1
        if let status = state.status {
            let style: TextStyle
            switch status.kind {
            case .info: style = .plain
            case .success: style = theme.success
            case .warning: style = theme.warning
            case .error: style = theme.error
            }
            screen.draw(" " + resolve(status.text), row: messageRow, column: 0, style: style, width: columns)
        }
        screen.draw(" " + hints(state), row: keyRow - 1, column: 0, style: theme.dim, width: columns)
    }

    func hints(_ state: AppState) -> String {
        // A question takes only its answers; a form its editing keys.
        if let form = state.openForm {
            if form.isConfirmation { return text(UIText("view.dialog.confirmHint")) }
            if form.confirming != nil { return text(UIText("view.dialog.questionHint")) }
            return state.tab.view.dialogHints(state, app: self) ?? text(UIText("view.hints.dialog"))
        }
        return state.tab.view.hints(state, app: self)
    }

    /// A tab's hints line: its own `parts`, then the keys for help and quit, which work everywhere.
    func hints(_ parts: [UIText], _ state: AppState) -> String {
        let b = state.bindings
        let general = UIText(
            "view.hints.general", ["help": String(b.key(for: .help)), "quit": String(b.key(for: .quit))])
        return (parts + [general]).map { text($0) }.joined(separator: screen.unicode ? " · " : " | ")
    }

    /// Model text, or the literal the protocol library gave.
    func resolve(_ t: UIText) -> String {
        guard let literal = t.literal else { return text(t) }
        return screen.unicode ? literal : ASCIIFallback.fold(literal)
    }

    // MARK: Overlays

    func overlayBox(lines: Int, width: Int) -> Box {
        let w = min(width, screen.size.columns)
        let h = min(lines + 2, screen.size.rows)
        return Box.centered(height: h, width: w, in: screen.size)
    }

    /// The help of the shown tab (its keys, then the ones that work everywhere), descriptions wrapped, never
    /// cut; it scrolls by entries from `state.helpScroll` when it does not fit, and says where it is.
    func help(_ state: AppState) {
        let entries = helpEntries(state)
        let width = min(100, screen.size.columns)
        let inner = max(1, width - 2)
        let keyWidth = min(max(4, inner / 3), entries.filter { !$0.isHeading }.map { $0.keys.cellWidth }.max() ?? 4)
        let textWidth = max(1, inner - keyWidth - 3)
        // Each entry as the lines it takes.
        let blocks: [[(keys: String, text: String, heading: Bool)]] = entries.map { entry in
            if entry.isHeading { return [("", resolve(entry.text), true)] }
            let lines = wrap(resolve(entry.text), width: textWidth)
            return lines.enumerated().map { i, line in (i == 0 ? entry.keys : "", line, false) }
        }
        let total = blocks.reduce(0) { $0 + $1.count }
        let box = modal(lines: total + 1, width: width, title: text(UIText("view.help.title")))
        let room = max(0, box.innerHeight - 1)
        let first = min(state.helpScroll, max(0, entries.count - 1))
        var row = box.innerRow
        var shownLast = first - 1
        for (index, block) in blocks.enumerated().dropFirst(first) {
            guard row + block.count <= box.innerRow + room || row == box.innerRow else { break }
            for line in block where row < box.innerRow + room {
                if line.heading {
                    screen.draw(
                        " " + line.text, row: row, column: box.innerColumn, style: theme.heading, width: box.innerWidth)
                } else {
                    screen.draw(
                        " " + line.keys.padded(toCells: keyWidth, unicode: screen.unicode), row: row,
                        column: box.innerColumn, style: theme.code, width: keyWidth + 1)
                    screen.draw(
                        line.text, row: row, column: box.innerColumn + keyWidth + 3, style: .plain, width: textWidth)
                }
                row += 1
            }
            shownLast = index
        }
        let position =
            first > 0 || shownLast < entries.count - 1
            ? "\(first + 1)-\(shownLast + 1)/\(entries.count) " + (screen.unicode ? "· " : "| ") : ""
        var footer = position + text(UIText("view.help.footer"))
        if footer.cellWidth > box.innerWidth { footer = position + text(UIText("view.help.footerShort")) }
        screen.draw(
            footer.centered(inCells: box.innerWidth, unicode: screen.unicode),
            row: box.innerRow + box.innerHeight - 1, column: box.innerColumn, style: theme.dim, width: box.innerWidth)
    }

    func keySwitcher(_ state: AppState) {
        let box = modal(lines: max(state.keys.count, 1) + 2, width: 70, title: text(UIText("view.keys.title")))
        if state.keys.isEmpty {
            screen.draw(
                " " + text(UIText("view.keys.none")), row: box.innerRow, column: box.innerColumn,
                style: theme.dim, width: box.innerWidth)
        }
        for (i, key) in state.keys.enumerated() where i < box.innerHeight - 2 {
            var label = state.displayName(of: key)
            if let serial = key.serial {
                label += "  " + text(UIText("view.status.serial", ["serial": String(serial)]))
            }
            if key.model != nil { label += "  " + key.descriptor.name }
            // Which interfaces this one key has (a USB YubiKey: CCID+FIDO+OTP).
            label += "  [" + key.descriptor.interfaces.map { $0.rawValue.uppercased() }.joined(separator: "+") + "]"
            let mark = key.id == state.selectedKeyID ? (screen.unicode ? "● " : "* ") : "  "
            screen.draw(
                (" " + mark + label).padded(toCells: box.innerWidth, unicode: screen.unicode),
                row: box.innerRow + i, column: box.innerColumn,
                style: i == state.keySwitcherIndex ? theme.selection : .plain)
        }
        screen.draw(
            text(UIText("view.keys.footer")).centered(inCells: box.innerWidth, unicode: screen.unicode),
            row: box.innerRow + box.innerHeight - 1, column: box.innerColumn, style: theme.dim)
    }

    /// A modal box: it covers the whole rows it spans (nothing behind shows beside it), then its outline.
    func modal(lines: Int, width: Int, title: String) -> Box {
        let box = overlayBox(lines: lines, width: width)
        let blank = String.spaces(screen.size.columns)
        for row in box.row..<(box.row + box.height) { screen.draw(blank, row: row, column: 0, style: .plain) }
        box.draw(on: screen, title: title, style: theme.border, titleStyle: theme.heading)
        return box
    }

    /// A modal form, centred: title, fields, the live problem (or the question it asks), a note and the keys
    /// that work. Messages wrap, never cut. On a short screen the note goes first, then the fields scroll so
    /// the focused one stays in view; the outline and the keys line always show.
    func form(_ form: Form, width: Int = 76) {
        let inner = max(1, min(width, screen.size.columns) - 2)
        let messageStyle: TextStyle
        var message: [String]
        if form.busy {
            message = wrap(text(UIText("view.working")), width: inner - 2)
            messageStyle = theme.warning
        } else if let question = form.confirming {
            message = wrap(resolve(question.question), width: inner - 2)
            messageStyle = theme.warning
        } else if let problem = form.problem {
            message = wrap(resolve(problem), width: inner - 2)
            messageStyle = theme.error
        } else {
            message = []
            messageStyle = .plain
        }
        var noteLines = form.note.map { wrap(resolve($0), width: inner - 2) } ?? []
        let fieldCount = max(1, form.fields.count)
        // Inside the outline: the fields, a blank line, the message (at least one line), the note, the keys.
        func needed(_ fields: Int) -> Int { fields + 1 + max(1, message.count) + noteLines.count + 1 }
        let room = max(1, screen.size.rows - 2)
        if needed(fieldCount) > room { noteLines = [] }
        if needed(fieldCount) > room { message = Array(message.prefix(max(1, room - fieldCount - 2))) }
        let visibleFields = max(1, min(fieldCount, room - (needed(fieldCount) - fieldCount)))
        let box = modal(lines: needed(visibleFields), width: width, title: resolve(form.title))
        let bottom = box.innerRow + box.innerHeight
        var row = box.innerRow
        let firstField = form.focus >= visibleFields ? form.focus - visibleFields + 1 : 0
        let labelWidth = min(28, (form.fields.map { resolve($0.label).cellWidth }.max() ?? 0) + 1)
        for (i, field) in form.fields.enumerated().dropFirst(firstField).prefix(visibleFields) where row < bottom - 1 {
            let focused = i == form.focus
            screen.draw(
                " " + resolve(field.label).padded(toCells: labelWidth, unicode: screen.unicode), row: row,
                column: box.innerColumn, style: focused ? theme.heading : .plain, width: box.innerWidth)
            let valueColumn = box.innerColumn + labelWidth + 2
            let valueWidth = max(1, box.innerWidth - labelWidth - 3)
            var shown =
                field.input.secret
                ? String(repeating: screen.unicode ? "•" : "*", count: field.input.text.count)
                : field.input.text
            var cursor =
                field.input.secret ? field.input.cursor : String(field.input.text.prefix(field.input.cursor)).cellWidth
            if field.toggle || !field.choices.isEmpty { shown = "< \(shown) >" }
            // Long values scroll so the cursor stays in view.
            if cursor >= valueWidth {
                let drop = cursor - valueWidth + 1
                shown = String(shown.dropFirst(drop))
                cursor -= drop
            }
            screen.draw(
                shown.padded(toCells: valueWidth, unicode: screen.unicode), row: row, column: valueColumn,
                style: focused ? theme.focusedField : theme.field)
            if focused && field.isText && !form.busy && form.confirming == nil {
                screen.setCursor(row: row, column: valueColumn + cursor)
            }
            row += 1
        }
        row += 1
        for line in message.prefix(max(0, bottom - 1 - row)) {
            screen.draw(" " + line, row: row, column: box.innerColumn, style: messageStyle, width: box.innerWidth)
            row += 1
        }
        if message.isEmpty { row += 1 }
        for line in noteLines where row < bottom - 1 {
            screen.draw(" " + line, row: row, column: box.innerColumn, style: theme.dim, width: box.innerWidth)
            row += 1
        }
        let hint =
            form.isConfirmation
            ? "view.dialog.confirmHint" : form.confirming != nil ? "view.dialog.questionHint" : "view.dialog.hint"
        screen.draw(
            text(UIText(hint)).centered(inCells: box.innerWidth, unicode: screen.unicode),
            row: bottom - 1, column: box.innerColumn, style: theme.dim, width: box.innerWidth)
    }
}

/// Splits text into lines of at most `width` cells at spaces (a word longer than a line, such as a file
/// path, is broken over lines).
extension AppView {
    /// A tab's message in the middle of its area: the first line as a heading, the rest dim, each wrapped to the
    /// area's width (what a tab shows instead of its content: no key, not on this key, could not be read).
    func centered(_ lines: [UIText], in area: Box) {
        let texts = lines.flatMap { wrap(resolve($0), width: area.width - 4) }
        let top = area.row + max(0, (area.height - texts.count) / 2)
        for (i, line) in texts.enumerated() where top + i < area.row + area.height {
            screen.draw(
                line.centered(inCells: area.width, unicode: screen.unicode), row: top + i, column: area.column,
                style: i == 0 ? theme.heading : theme.dim)
        }
    }
}

func wrap(_ text: String, width: Int) -> [String] {
    guard width > 0 else { return [] }
    var lines = [String]()
    for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
        var line = ""
        for word in paragraph.split(separator: " ") {
            var w = String(word)
            if !line.isEmpty {
                if line.cellWidth + 1 + w.cellWidth <= width {
                    line += " " + w
                    continue
                }
                lines.append(line)
            }
            while w.cellWidth > width {
                let head = w.prefix(cells: width)
                guard !head.isEmpty else { break }
                lines.append(head)
                w = String(w.dropFirst(head.count))
            }
            line = w.prefix(cells: width)
        }
        lines.append(line)
    }
    return lines
}
