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
}

extension TabView {
    var screen: Screen { app.screen }
    var theme: Theme { app.theme }

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

    /// What the tab is doing with the key, to follow its title: `separator` and the words of the string key that
    /// `key` gives the operation. Nothing while the tab is idle or the key waits for a touch (the touch box says
    /// so), or for an operation `key` gives no words.
    func working<Operation>(
        _ busy: KeyBusy<Operation>?, after separator: String, _ key: (Operation) -> String?
    ) -> String {
        guard let busy, !busy.touch, let key = key(busy.operation) else { return "" }
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
        }
    }
}
