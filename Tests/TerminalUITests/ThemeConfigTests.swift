import Testing
@testable import AuthenticatorModel
@testable import TerminalUI

@Suite("Theme from the config file")
struct ThemeConfigTests {
    @Test func colorsReplaceTheRolesNamedAndKeepTheRest() throws {
        let config = try Config.parse(
            text: "[colors]\ncode = \"magenta\"\ntab = \"blue\"\nerror = \"none\"\nbar-low = \"yellow\"",
            path: "c")
        let base = Theme()
        let theme = base.applying(config.colors)
        #expect(theme.code.foreground == .magenta)
        #expect(theme.code.bold == base.code.bold)
        #expect(theme.tabActive.background == .blue)
        #expect(theme.tabActive.foreground == base.tabActive.foreground)
        #expect(theme.error.foreground == nil)
        #expect(theme.barLow.foreground == .yellow)
        #expect(theme.success == base.success)
        #expect(theme.border == base.border)
        #expect(base.applying([:]).code == base.code)
    }

    @Test func everyRoleChangesSomething() {
        let base = Theme()
        for role in Config.ThemeRole.allCases {
            let changed = base.applying([role: .black])
            let styles: [(TextStyle, TextStyle)] = [
                (changed.tabActive, base.tabActive), (changed.code, base.code),
                (changed.codeExpiring, base.codeExpiring),
                (changed.success, base.success), (changed.warning, base.warning), (changed.error, base.error),
                (changed.pinned, base.pinned), (changed.barFull, base.barFull), (changed.barLow, base.barLow),
                (changed.border, base.border),
            ]
            #expect(styles.filter { $0.0 != $0.1 }.count == 1, "\(role)")
        }
    }
}
