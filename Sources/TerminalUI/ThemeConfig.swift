import AuthenticatorModel

extension Theme {
    /// This theme with the config file's `[colors]` applied: each role named there gets that colour (`none`:
    /// the terminal's own), as the foreground, or the background for the selected tab.
    public func applying(_ colors: [Config.ThemeRole: Config.ColorName]) -> Theme {
        var theme = self
        for (role, name) in colors {
            let color = TerminalColor.allCases.first { "\($0)" == name.rawValue }
            switch role {
            case .tab: theme.tabActive.background = color
            case .code: theme.code.foreground = color
            case .expiring: theme.codeExpiring.foreground = color
            case .success: theme.success.foreground = color
            case .warning: theme.warning.foreground = color
            case .error: theme.error.foreground = color
            case .pinned: theme.pinned.foreground = color
            case .bar: theme.barFull.foreground = color
            case .barLow: theme.barLow.foreground = color
            case .border: theme.border.foreground = color
            }
        }
        return theme
    }
}
