import AuthenticatorModel

/// What a tab's view is to the app: drawn in the body between the bars, with the hints line it wants. A new
/// tab's view is a folder named as the tab's model folder, with a type that conforms.
protocol TabView {
    init(app: AppView, area: Box)
    var app: AppView { get }
    /// Where the tab draws: the body between the bars.
    var area: Box { get }
    func render(_ state: AppState)
    /// The hints line while the tab is shown and no dialog is open.
    static func hints(_ state: AppState, app: AppView) -> String
    /// The hints line while the tab's dialog takes its fields (nil: the keys every form has).
    static func dialogHints(_ state: AppState, app: AppView) -> String?
}

extension TabView {
    static func dialogHints(_ state: AppState, app: AppView) -> String? { nil }

    var screen: Screen { app.screen }
    var theme: Theme { app.theme }
    /// What separates the parts of a line: a middle dot, or a comma without UTF-8.
    var dot: String { screen.unicode ? " · " : ", " }

    /// What a key tab has read (`read`) when it is there to draw; nil when the tab has nothing of its own to show and
    /// a placeholder was drawn instead: no key selected, the first read under way, or no such application (a key
    /// that stopped answering said as such). `words` is the tab's prefix in the string tables
    /// (`<words>.view.noKeyHint`, `<words>.view.reading`, `<words>.view.<unavailable>`).
    func content<Read>(_ phase: KeyTabPhase, _ read: Read?, words: String, unavailable: String = "unavailable")
        -> Read?
    {
        placeholder(phase, read: read != nil, words: words, unavailable: unavailable) ? nil : read
    }

    /// Draws `content`'s placeholder for `phase`; false when there is none to draw.
    private func placeholder(_ phase: KeyTabPhase, read: Bool, words: String, unavailable: String) -> Bool {
        switch phase {
        case .noKey: centered([UIText("view.noKey"), UIText(words + ".view.noKeyHint")])
        case .loading where !read: centered([UIText(words + ".view.reading")])
        case .unavailable(let why) where why.key == "error.reader-not-answering":
            centered([UIText("view.keyNotAnswering"), why])
        case .unavailable(let why): centered([UIText(words + ".view." + unavailable), why])
        default: return false
        }
        return true
    }

    /// `lines` in the middle of the tab's area, the first as a heading.
    func centered(_ lines: [UIText]) {
        app.centered(lines, in: area)
    }

    /// Labelled values from row `top` down (a dim label column, values wrapped beside it), no further than the
    /// area's last row; returns the row after the last one drawn.
    @discardableResult
    func labelled(_ fields: [(label: String, value: String, style: TextStyle)], top: Int) -> Int {
        let labelWidth = min(24, (fields.map(\.label.cellWidth).max() ?? 10) + 2)
        let valueColumn = area.column + 1 + labelWidth
        let valueWidth = max(1, area.width - valueColumn - 1)
        var row = top
        for field in fields {
            for (i, piece) in wrap(field.value, width: valueWidth).enumerated() where row < area.row + area.height {
                if i == 0 {
                    screen.draw(
                        " " + field.label, row: row, column: area.column, style: theme.dim, width: labelWidth + 1)
                }
                screen.draw(piece, row: row, column: valueColumn, style: field.style, width: valueWidth)
                row += 1
            }
        }
        return row
    }

    /// A table's line: each cell's text cut to leave a blank before the next column, and padded to its width.
    func tableLine(_ cells: [(String, Int)]) -> String {
        cells.map {
            $0.0.truncated(toCells: $0.1 - 1, unicode: screen.unicode).padded(toCells: $0.1, unicode: screen.unicode)
        }
        .joined()
    }

    /// Which rows of a scrolled list show ("12-22/40"), at the right of the title's row; nothing when all of them
    /// fit.
    func scrollMark(first: Int, visible: Int, count: Int) {
        guard count > visible else { return }
        let more = "\(first + 1)-\(min(count, first + visible))/\(count)"
        screen.draw(more, row: area.row, column: area.column + area.width - more.cellWidth - 1, style: theme.dim)
    }

    /// The tab's dialog over it, or while the key waits for a touch, `touch` in its place: that is all there is to
    /// say then.
    func dialog<Operation, Kind>(_ dialog: TabDialog<Kind>?, unless busy: KeyBusy<Operation>?, touch: () -> Void) {
        if let busy, busy.touch {
            touch()
        } else if let dialog {
            app.form(dialog.form)
        }
    }

    /// A box in the middle of the screen: `title` on its outline and its first line in `style`, the other lines
    /// plain, and `footer` dimmed on its last row.
    func messageBox(title: String, lines: [String], style: TextStyle, width: Int, footer: String? = nil) {
        let box = app.overlayBox(lines: lines.count + (footer == nil ? 0 : 2), width: width)
        box.draw(on: screen, title: title, style: theme.border, titleStyle: style)
        for (i, line) in lines.enumerated() where i < box.innerHeight {
            screen.draw(
                " " + line, row: box.innerRow + i, column: box.innerColumn, style: i == 0 ? style : .plain,
                width: box.innerWidth)
        }
        if let footer {
            screen.draw(
                footer.centered(inCells: box.innerWidth, unicode: screen.unicode),
                row: box.innerRow + box.innerHeight - 1, column: box.innerColumn, style: theme.dim)
        }
    }

    /// What the tab is doing with the key, to follow its title: `separator` and the operation's working words.
    /// Nothing while the tab is idle or the key waits for a touch (the touch box says so), or for an operation the
    /// tab says nothing of.
    func working<Operation: KeyTabOperation>(_ busy: KeyBusy<Operation>?, after separator: String) -> String {
        guard let busy, !busy.touch, let key = busy.operation.workingKey else { return "" }
        return separator + app.text(UIText(key))
    }
}

extension Tab {
    /// The tab's view (the one list of them).
    var view: any TabView.Type {
        switch self {
        case .oath: return OATHView.self
        case .otp: return OTPTabView.self
        case .fido: return FIDOTabView.self
        case .apdu: return APDUTabView.self
        case .piv: return PIVTabView.self
        case .ssh: return SSHTabView.self
        case .openpgp: return OpenPGPTabView.self
        }
    }
}
