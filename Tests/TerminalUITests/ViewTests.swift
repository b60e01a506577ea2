import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// Views drawn on the in-memory screen with the English string table.
enum ViewFixture {
    static let tables = StringTables.load(language: "en")
    static let text: Localize = { t in tables.text(t) }
    /// A USB YubiKey: its CCID reader and its FIDO HID interface.
    static let key = KeyDescriptor(
        transport: .pcsc(reader: "Yubico YubiKey OTP+FIDO+CCID 00 00"),
        name: "Yubico YubiKey OTP+FIDO+CCID 00 00",
        fidoHID: HIDDeviceInfo(path: "/dev/hidraw0", vendorID: 0x1050, productID: 0x0407))

    static func entry(
        _ id: String, code: String?, from: Int64 = 990, period: Int64 = 30, type: OATHType = .totp,
        touch: Bool = false, digits: Int = 6
    ) -> OATHSession.Entry {
        OATHSession.Entry(
            credential: Credential(rawID: Array(id.utf8), type: type, touch: touch),
            code: code.map { Code(value: $0, validFrom: from, validTo: from + period) }, digits: digits)
    }

    static let demo: [OATHSession.Entry] = [
        entry("GitHub:alice@example.com", code: "123456"),
        entry("60/Fastmail:alice@example.com", code: "654321", from: 960, period: 60),
        entry("Example Bank:alice", code: nil, type: .hotp),
        entry("Google:alice@example.com", code: nil, touch: true),
        entry("Corp VPN:alice", code: "12345678", digits: 8),
        entry("Steam:alice", code: "VP28K", digits: 5),
    ]

    static func state(_ entries: [OATHSession.Entry] = demo, now: Double = 1000) -> AppState {
        var state = AppState(now: now)
        _ = update(&state, .keyEvent(.keyArrived(key)))
        var info = KeyInfo(
            reader: key.name, atr: [], device: DeviceInfo(serial: 28_123_456, version: Version(5, 7, 2)),
            applications: ["OATH"], overNFC: false)
        info.device.formFactor = .usbAKeychain
        _ = update(&state, .probed(keyID: key.id, info))
        _ = update(
            &state,
            .oath(
                .opened(
                    keyID: key.id,
                    OATHSnapshot(
                        deviceID: "d", version: Version(5, 7, 2),
                        hasPassword: false, entries: entries))))
        state.status = nil
        return state
    }

    static func render(_ state: AppState, rows: Int = 24, columns: Int = 80, unicode: Bool = true) -> MemoryScreen {
        let screen = MemoryScreen(rows: rows, columns: columns, unicode: unicode)
        AppView(screen: screen, text: text).render(state)
        return screen
    }

    static func line(_ screen: MemoryScreen, containing text: String) -> String? {
        screen.lines.first { $0.contains(text) }
    }
}

@Suite("Views: OATH tab")
struct OATHViewTests {
    @Test(arguments: [(24, 80), (40, 120)])
    func listShowsGroupedCodesCountdownsAndBars(rows: Int, columns: Int) throws {
        let screen = ViewFixture.render(ViewFixture.state(), rows: rows, columns: columns)
        #expect(screen.lines.count == rows)
        #expect(screen.lines.allSatisfy { $0.cellWidth == columns })
        // Tab bar on top, the bindings above the status bar with the key, messages on the last line.
        #expect(screen.text(row: 0).hasPrefix(" 1 OATH  "))
        #expect(
            screen.text(row: 0).contains("2 OTP") && screen.text(row: 0).contains("3 FIDO2")
                && screen.text(row: 0).contains("4 APDU"))
        let status = screen.text(row: rows - 2)
        #expect(status.contains("serial 28123456") && status.contains("firmware 5.7.2") && status.contains("connected"))
        #expect(screen.text(row: rows - 3).contains("filter"))
        // Codes in groups, seconds left at t = 1000 (20 s of the 30-second period, 20 s of the 60-second).
        let github = try #require(ViewFixture.line(screen, containing: "GitHub"))
        #expect(github.contains("123 456") && github.contains(" 20s"))
        #expect(github.contains("█"))
        let vpn = try #require(ViewFixture.line(screen, containing: "Corp VPN"))
        #expect(vpn.contains("1234 5678"))
        #expect(ViewFixture.line(screen, containing: "Steam")?.contains("VP28K") == true)
        #expect(ViewFixture.line(screen, containing: "Example Bank")?.contains("HOTP · Enter") == true)
        #expect(ViewFixture.line(screen, containing: "Google")?.contains("touch · Enter") == true)
        // Sorted by issuer: Corp VPN, Example Bank, Fastmail, GitHub, Google, Steam.
        let order = ["Corp VPN", "Example Bank", "Fastmail", "GitHub", "Google", "Steam"].map { name in
            screen.lines.firstIndex { $0.contains(name) } ?? -1
        }
        #expect(order == order.sorted() && !order.contains(-1))
    }

    @Test func selectedRowIsReversedAndPinnedComeFirstWithAStar() throws {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.end))
        _ = update(&state, .keyPress(.char("p")))
        let screen = ViewFixture.render(state)
        let first = screen.text(row: 1)
        #expect(first.contains("★") && first.contains("Steam"))
        #expect(screen.style(row: 1, column: 5).reverse)
        #expect(!screen.style(row: 2, column: 5).reverse)
    }

    @Test func countdownTurnsToTheExpiringStyleInTheLastSeconds() throws {
        let screen = ViewFixture.render(ViewFixture.state(now: 1017))
        let row = try #require(screen.lines.firstIndex { $0.contains("GitHub") })
        let column = try #require(
            screen.lines[row].range(of: "123 456").map {
                screen.lines[row].distance(from: screen.lines[row].startIndex, to: $0.lowerBound)
            })
        #expect(screen.style(row: row, column: column).foreground == .red)
        #expect(screen.lines[row].contains("  3s"))
    }

    @Test func expiredCodesAreNotShown() {
        let screen = ViewFixture.render(ViewFixture.state(now: 1021))
        #expect(!screen.contains("123 456"))
    }

    @Test func filterLineAndNoMatch() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("/")))
        for c in "zzz" { _ = update(&state, .keyPress(.char(c))) }
        let screen = ViewFixture.render(state)
        #expect(screen.text(row: 1).contains("Filter: zzz"))
        #expect(screen.contains("No account matches \"zzz\"."))
        #expect(screen.cursor == CellPosition(row: 1, column: 12))
    }

    @Test func narrowTerminalDropsTheBarAndIssuerColumnWithoutGarbage() {
        let narrow = ViewFixture.render(ViewFixture.state(), rows: 24, columns: 60)
        #expect(narrow.lines.allSatisfy { $0.cellWidth == 60 })
        #expect(ViewFixture.line(narrow, containing: "GitHub")?.contains("123 456") == true)
        #expect(!narrow.contains("█"))
        let narrower = ViewFixture.render(ViewFixture.state(), rows: 24, columns: 44)
        #expect(narrower.lines.allSatisfy { $0.cellWidth == 44 })
        #expect(ViewFixture.line(narrower, containing: "GitHub: alice")?.contains("123 456") == true)
    }

    @Test func asciiFallbackWithoutUnicode() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("p")))
        let screen = ViewFixture.render(state, unicode: false)
        #expect(screen.lines.joined().unicodeScalars.allSatisfy { $0.isASCII })
        #expect(screen.contains("#"))
        #expect(screen.text(row: 1).hasPrefix("* "))
    }

    @Test func phasesSayWhatIsGoingOn() {
        var state = AppState(now: 0)
        #expect(ViewFixture.render(state).contains("No key"))
        #expect(ViewFixture.render(state).contains("no key"))
        _ = update(&state, .keyEvent(.serviceUnavailable))
        #expect(ViewFixture.render(state).contains("pcscd is not running"))
        _ = update(&state, .keyEvent(.serviceAvailable))
        _ = update(&state, .keyEvent(.keyArrived(ViewFixture.key)))
        #expect(ViewFixture.render(state).contains("Reading accounts…"))
        _ = update(&state, .oath(.locked(keyID: ViewFixture.key.id, deviceID: "d", version: Version(5, 7, 2))))
        let locked = ViewFixture.render(state)
        #expect(locked.contains("OATH password"))
        #expect(locked.contains("Remember on this computer"))
    }

    @Test func passwordFieldsShowBulletsNeverTheText() {
        var state = ViewFixture.state()
        state.oath.hasPassword = true
        _ = update(&state, .keyPress(.char("P")))
        for c in "hunter2" { _ = update(&state, .keyPress(.char(c))) }
        let screen = ViewFixture.render(state)
        #expect(screen.contains("Change OATH password"))
        #expect(screen.contains("•••••••"))
        #expect(!screen.contains("hunter2"))
    }

    @Test func addDialogShowsTheLiveProblem() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("a")))
        for c in "otpauth://totp/x?secret=!!" { _ = update(&state, .keyPress(.char(c))) }
        let screen = ViewFixture.render(state)
        #expect(screen.contains("Add account"))
        #expect(screen.contains("is not a Base32 character"))
        #expect(screen.contains("Esc cancel"))
    }

    @Test func deleteConfirmationNamesTheAccount() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("d")))
        let screen = ViewFixture.render(state)
        #expect(screen.contains("Delete Corp VPN:alice?"))
        #expect(screen.contains("y confirm · n / Enter / Esc cancel"))
    }
}

@Suite("Views: shell")
struct ShellViewTests {
    @Test func helpOverlayListsEveryBinding() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("?")))
        let screen = ViewFixture.render(state, rows: 40, columns: 120)
        for action in Action.allCases {
            #expect(screen.contains(ViewFixture.tables.format(action.helpKey, [:])), "\(action)")
        }
        #expect(screen.contains("Ctrl-C") && screen.contains("Shift-Tab"))
    }

    @Test func everyTabHasItsOwnTitleInTheTabBar() {
        var state = ViewFixture.state()
        // Tab switches from anywhere (the OTP tab and the APDU console take digits as input).
        for tab in [Tab.otp, Tab.fido, Tab.apdu, Tab.piv, Tab.ssh, Tab.openpgp, Tab.oath] {
            _ = update(&state, .keyPress(.tab))
            #expect(state.tab == tab)
            let bar = ViewFixture.render(state).text(row: 0)
            #expect(
                bar.contains("1 OATH") && bar.contains("2 OTP") && bar.contains("3 FIDO2") && bar.contains("4 APDU")
                    && bar.contains("5 PIV") && bar.contains("6 SSH") && bar.contains("7 OpenPGP"))
        }
    }

    @Test func statusMessagesReplaceTheHints() {
        var state = ViewFixture.state()
        _ = update(&state, .keyEvent(.keyLeft(id: ViewFixture.key.id)))
        let screen = ViewFixture.render(state)
        #expect(screen.text(row: 23).contains("was removed"))
    }

    @Test func keySwitcherListsKeysWithSerials() {
        var state = ViewFixture.state()
        _ = update(
            &state,
            .keyEvent(
                .keyArrived(KeyDescriptor(transport: .pcsc(reader: "Virtual PCD 00 01"), name: "Virtual PCD 00 01"))))
        _ = update(&state, .keyPress(.char("K")))
        let screen = ViewFixture.render(state)
        #expect(screen.contains("Keys present"))
        #expect(screen.contains("serial 28123456"))
        #expect(screen.contains("Virtual PCD 00 01"))
        #expect(screen.text(row: 22).contains("2 keys"))
    }

    @Test func tinyTerminalSaysSo() {
        let screen = ViewFixture.render(ViewFixture.state(), rows: 4, columns: 30)
        #expect(screen.text(row: 0).contains("too small"))
    }
}

@Suite("Strings")
struct StringTableTests {
    /// Every key the model and views use, and every key of any language, exists in every language with
    /// the same placeholders.
    @Test func everyKeyInEveryLanguageWithTheSamePlaceholders() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
            .standardized
        let dir = root.appendingPathComponent("Resources/strings")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
        #expect(files.contains("en.json") && files.contains("de.json"))
        let tables = try files.map {
            try JSONDecoder().decode([String: String].self, from: Data(contentsOf: dir.appendingPathComponent($0)))
        }
        let allKeys = tables.reduce(into: Set<String>()) { $0.formUnion($1.keys) }
        func placeholders(_ s: String) -> Set<String> {
            Set(s.matches(of: /\{([a-zA-Z]+)\}/).map { String($0.1) })
        }
        for (file, table) in zip(files, tables) {
            #expect(Set(table.keys) == allKeys, "\(file) lacks \(allKeys.subtracting(table.keys).sorted())")
            for (key, value) in table {
                #expect(
                    placeholders(value) == placeholders(tables[files.firstIndex(of: "en.json")!][key] ?? ""),
                    "\(file): \(key)")
            }
        }
        // Keys named in the sources (UIText("...") and the command line's words("...") and the tab and action
        // keys) are all in English. A literal followed by `+` is the prefix of keys made from a value
        // (`"answer." + part.rawValue`); the tests of those values (DetailTextTests, ErrorExplanationTests) word
        // every one of them.
        var used = Set<String>()
        for sub in ["Sources/AuthenticatorModel", "Sources/TerminalUI", "Sources/ykterm"] {
            let enumerator = FileManager.default.enumerator(atPath: root.appendingPathComponent(sub).path)
            while let path = enumerator?.nextObject() as? String {
                guard path.hasSuffix(".swift") else { continue }
                let source = try String(
                    contentsOf: root.appendingPathComponent(sub).appendingPathComponent(path), encoding: .utf8)
                for m in source.matches(of: /UIText\("([a-zA-Z.\-]+)"(?!\s*\+)/) where m.1 != "literal" {
                    used.insert(String(m.1))
                }
                for m in source.matches(of: /\bwords\("([a-zA-Z.\-]+)"(?!\s*\+)/) { used.insert(String(m.1)) }
            }
        }
        used.formUnion(Action.allCases.map(\.helpKey))
        used.formUnion(Tab.allCases.map(\.nameKey))
        used.formUnion(Tab.allCases.map(\.helpHeadingKey))
        #expect(used.count > 80)
        #expect(used.subtracting(allKeys).isEmpty, "missing: \(used.subtracting(allKeys).sorted())")
    }

    @Test func languageComesFromTheLocaleVariables() {
        #expect(StringTables.language(environment: ["LANG": "de_DE.UTF-8"]) == "de")
        #expect(StringTables.language(environment: ["LANG": "de_DE.UTF-8", "LC_ALL": "en_US.UTF-8"]) == "en")
        #expect(StringTables.language(environment: ["LC_MESSAGES": "de_AT", "LANG": "fr_FR"]) == "de")
        #expect(StringTables.language(environment: [:]) == "en")
        let german = StringTables.load(language: "de")
        #expect(german.format("status.keyRemoved", ["name": "YubiKey"]) == "YubiKey wurde entfernt")
        // A language without a table falls back to English.
        #expect(StringTables.load(language: "xx").format("view.noKey", [:]) == "No key")
    }
}

@Suite("Views: help")
struct HelpViewTests {
    static func helpScreen(_ state: AppState, rows: Int, columns: Int) -> MemoryScreen {
        let screen = MemoryScreen(rows: rows, columns: columns)
        AppView(screen: screen, text: ViewFixture.text).render(state)
        return screen
    }

    @Test func eachTabShowsItsOwnKeysThenTheGeneralOnes() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("?")))
        var text = Self.helpScreen(state, rows: 40, columns: 100).lines.joined(separator: "\n")
        #expect(text.contains("OATH tab") && text.contains("copy the code; compute a touch or HOTP code"))
        #expect(text.contains("Everywhere") && text.contains("quit from anywhere"))
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("4")))
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("?")))
        text = Self.helpScreen(state, rows: 40, columns: 100).lines.joined(separator: "\n")
        // The APDU tab's Enter sends; the OATH tab's "copy the code" is not offered there.
        #expect(text.contains("APDU tab") && text.contains("send the command"))
        #expect(!text.contains("copy the code") && !text.contains("filter accounts"))
    }

    @Test func atSixtyByFifteenItScrollsAndNothingIsCut() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("?")))
        let entries = helpEntries(state)
        var seen = Set<String>()
        var screen = Self.helpScreen(state, rows: 15, columns: 60)
        // Every description is wrapped inside the box: no line runs into the border.
        for _ in 0..<entries.count {
            for line in screen.lines where line.contains("│") {
                let inside = line.split(separator: "│", omittingEmptySubsequences: false)
                #expect(inside.count >= 3, "\(line)")
            }
            for entry in entries
            where !entry.isHeading && screen.lines.contains(where: { $0.contains(" " + entry.keys + " ") }) {
                seen.insert(entry.keys)
            }
            _ = update(&state, .keyPress(.down))
            screen = Self.helpScreen(state, rows: 15, columns: 60)
        }
        // Scrolled to the end, every binding was on screen at some point: P, R and Ctrl-C too.
        #expect(seen.isSuperset(of: ["P", "R", "Ctrl-C", "q"]), "\(seen)")
        #expect(screen.lines.joined().contains("/\(entries.count)"))
        // Any other key closes it.
        _ = update(&state, .keyPress(.char("x")))
        #expect(!state.showHelp && state.helpScroll == 0)
    }
}

@Suite("Views: the hints line")
struct HintsLineTests {
    @Test func everyTabHasItsHintsOnTheSameLineEvenWithAMessageShowing() {
        var state = ViewFixture.state()
        // A key just arrived: its message does not take the hints' place.
        state.status = StatusMessage(UIText("status.keyArrived", ["name": "YubiKey"]), kind: .info, expires: 2000)
        let expected: [Tab: String] = [
            .oath: "filter", .otp: "F5 NDEF", .fido: "help", .apdu: "Enter send", .piv: "help", .ssh: "help",
            .openpgp: "help",
        ]
        for tab in Tab.allCases {
            state.tab = tab
            let screen = ViewFixture.render(state)
            #expect(screen.text(row: 21).contains(expected[tab]!), "\(tab): \(screen.text(row: 21))")
            #expect(screen.text(row: 23).contains("YubiKey connected"))
        }
    }

    @Test func aNewActionReplacesTheLastMessageAndCopyNamesTheAccount() {
        var state = ViewFixture.state()
        _ = update(
            &state, .copied(true, UIText("status.copied", ["how": "OSC 52", "account": "GitHub:alice@example.com"])))
        #expect(
            ViewFixture.render(state).text(row: 23).contains("Copied the code of GitHub:alice@example.com (OSC 52)"))
        // Opening a dialog is a new action: the old message goes.
        _ = update(&state, .keyPress(.char("a")))
        #expect(state.status == nil)
    }
}

@Suite("Views: dialog messages")
struct DialogMessageTests {
    @Test func aLongProblemWrapsAndLeadsWithTheRule() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("a")))
        _ = update(&state, .keyPress(.down))
        for c in String(repeating: "i", count: 40) { _ = update(&state, .keyPress(.char(c))) }
        _ = update(&state, .keyPress(.down))
        for c in String(repeating: "n", count: 40) { _ = update(&state, .keyPress(.char(c))) }
        _ = update(&state, .keyPress(.down))
        for c in "JBSWY3DPEHPK3PXP" { _ = update(&state, .keyPress(.char(c))) }
        let screen = ViewFixture.render(state)
        let text = screen.lines.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " │")) }.joined(
            separator: " ")
        #expect(text.contains("issuer and name together may have at most 64 bytes (81 here)"), "\(screen.lines)")
        // Nothing behind the dialog shows beside it on the rows it covers.
        for line in screen.lines where line.contains("│") {
            let outside = line.prefix { $0 != "│" } + line.reversed().prefix { $0 != "│" }
            #expect(outside.allSatisfy { $0 == " " }, "\(line)")
        }
    }
}

@Suite("Views: hints in dialogs")
struct DialogHintTests {
    @Test func aQuestionsHintsNameOnlyItsAnswers() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("d")))
        let hints = ViewFixture.render(state).text(row: 21)
        #expect(hints.contains("y confirm · n / Enter / Esc cancel") && !hints.contains("Space toggles"), "\(hints)")
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("a")))
        #expect(ViewFixture.render(state).text(row: 21).contains("Space toggles"))
    }
}
