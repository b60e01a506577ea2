import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// Two keys, "daily" (selected, the demo accounts less Steam) and "backup" (the demo accounts less Corp VPN, and one
/// of its own), in the OATH tab's all-keys view.
enum AllKeysViewFixture {
    static let daily = ViewFixture.key
    static let backup = KeyDescriptor(transport: .pcsc(reader: "Virtual PCD 00 01"), name: "Virtual PCD 00 01")

    static func probed(_ d: KeyDescriptor, serial: UInt32) -> Msg {
        var info = KeyInfo(
            reader: d.name, atr: [], device: DeviceInfo(serial: serial, version: Version(5, 7, 2)),
            applications: ["OATH"], overNFC: false)
        info.device.formFactor = .usbAKeychain
        return .probed(keyID: d.id, info)
    }

    static func state(names: Bool = true, locked: Bool = false) -> AppState {
        var state = ViewFixture.state(ViewFixture.demo.filter { !$0.credential.id.string.hasPrefix("Steam") })
        if names { state.keyNames = [28_123_456: "daily", 41_000_002: "backup"] }
        _ = update(&state, .keyEvent(.keyArrived(backup)))
        _ = update(&state, probed(backup, serial: 41_000_002))
        _ = update(&state, .keyPress(.char("A")))
        if locked {
            _ = update(&state, .oath(.locked(keyID: backup.id, deviceID: "b", version: Version(5, 7, 2))))
            _ = update(&state, .keyPress(.escape))
        } else {
            let entries =
                ViewFixture.demo.filter { !$0.credential.id.string.hasPrefix("Corp VPN") }
                + [ViewFixture.entry("Spare:carol@example.com", code: "246810")]
            _ = update(
                &state,
                .oath(
                    .opened(
                        keyID: backup.id,
                        OATHSnapshot(deviceID: "b", version: Version(5, 7, 2), hasPassword: false, entries: entries))))
        }
        state.status = nil
        return state
    }
}

@Suite("Views: the OATH tab over every key")
struct OATHAllKeysViewTests {
    @Test(arguments: [(24, 80), (30, 100), (20, 60)])
    func eachAccountOnceWithItsKeysAndWhereItIsMissing(rows: Int, columns: Int) throws {
        let screen = ViewFixture.render(AllKeysViewFixture.state(), rows: rows, columns: columns)
        #expect(screen.lines.allSatisfy { $0.cellWidth == columns })
        #expect(screen.text(row: 1).hasPrefix(" Keys: daily · backup"))
        for issuer in ["Corp VPN", "Example Bank", "Fastmail", "GitHub", "Google", "Spare", "Steam"] {
            #expect(screen.lines.filter { $0.contains(issuer) }.count == 1, "\(issuer)")
        }
        let github = try #require(ViewFixture.line(screen, containing: "GitHub"))
        #expect(github.contains("123 456") && github.trimmingSpaces.hasSuffix("daily · backup"), "\(github)")
        let vpn = try #require(ViewFixture.line(screen, containing: "Corp VPN"))
        #expect(vpn.contains("1234 5678") && vpn.contains("not on backup"), "\(vpn)")
        let steam = try #require(ViewFixture.line(screen, containing: "Steam"))
        #expect(steam.contains("VP28K") && steam.contains("not on daily"), "\(steam)")
        // Where it fits, the keys that hold it too.
        if columns >= 80 { #expect(vpn.contains("daily  not on backup"), "\(vpn)") }
        // "not on" is a warning.
        let column = try #require(screen.lines.firstIndex(of: vpn).map { screen.lines[$0].cellWidth - 3 })
        let row = try #require(screen.lines.firstIndex(of: vpn))
        #expect(screen.style(row: row, column: column).foreground == .yellow)
        #expect(screen.text(row: rows - 3).contains("A one key"))
    }

    @Test(arguments: [(24, 80), (20, 60)])
    func dComparesTheSelectedKeyWithTheOtherAsOATHDiffDoes(rows: Int, columns: Int) throws {
        var state = AllKeysViewFixture.state()
        _ = update(&state, .keyPress(.char("D")))
        let screen = ViewFixture.render(state, rows: rows, columns: columns)
        let text = screen.lines.joined(separator: "\n")
        #expect(screen.text(row: 1).hasPrefix(" Accounts of daily and backup"), "\(text)")
        let onlyDaily = try #require(screen.lines.firstIndex { $0.contains("Only on daily, not on backup:") })
        #expect(screen.lines[onlyDaily + 1].trimmingSpaces.hasPrefix("Corp VPN"), "\(text)")
        let onlyBackup = try #require(screen.lines.firstIndex { $0.contains("Only on backup, not on daily:") })
        let listed = screen.lines[(onlyBackup + 1)...].prefix { $0.hasPrefix("     ") }.map(\.trimmingSpaces)
        #expect(listed.contains { $0.hasPrefix("Spare:carol") } && listed.contains { $0.hasPrefix("Steam") }, "\(text)")
        #expect(text.contains("Names and settings only"), "\(text)")
        #expect(screen.text(row: rows - 3).contains("D or Esc back to the list"))
        // Esc goes back to the list.
        _ = update(&state, .keyPress(.escape))
        #expect(ViewFixture.render(state, rows: rows, columns: columns).text(row: 1).hasPrefix(" Keys: daily · backup"))
    }

    @Test func withoutNamesTheKeysAreCalledBySerial() throws {
        let screen = ViewFixture.render(AllKeysViewFixture.state(names: false))
        #expect(screen.text(row: 1).hasPrefix(" Keys: 28123456 · 41000002"))
        #expect(ViewFixture.line(screen, containing: "GitHub")?.trimmingSpaces.hasSuffix("28123456 · 41000002") == true)
    }

    @Test func aLockedKeyIsSaidInTheKeysLineAndTheOthersAccountsAreListed() throws {
        let screen = ViewFixture.render(AllKeysViewFixture.state(locked: true))
        #expect(screen.text(row: 1).contains("backup (locked: R unlocks)"))
        // Backup's accounts are not known: nothing is marked as missing from it.
        #expect(!screen.contains("not on"))
        #expect(ViewFixture.line(screen, containing: "GitHub")?.trimmingSpaces.hasSuffix("daily") == true)
    }

    @Test func theOneKeyViewOffersAWithSeveralKeysAndIsOtherwiseUnchanged() throws {
        var state = AllKeysViewFixture.state()
        _ = update(&state, .keyPress(.char("A")))
        let screen = ViewFixture.render(state)
        #expect(!screen.contains("Keys:") && !screen.contains("daily · backup") && !screen.contains("Steam"))
        #expect(screen.text(row: 21).contains("A all keys"))
        // One key alone: the hints as before.
        #expect(ViewFixture.render(ViewFixture.state()).text(row: 21).contains("P password"))
    }

    @Test func theAddDialogHasACheckBoxPerOtherKey() throws {
        var state = AllKeysViewFixture.state()
        _ = update(&state, .keyPress(.char("a")))
        let screen = ViewFixture.render(state, rows: 30, columns: 100)
        let box = try #require(ViewFixture.line(screen, containing: "Also on backup"))
        #expect(box.contains("< no >"))
    }
}
