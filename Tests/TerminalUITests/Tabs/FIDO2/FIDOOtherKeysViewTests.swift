import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// The FIDO2 tab's credentials on "daily" beside those of "backup": a relying party on both, one on daily only and
/// one on backup only.
enum FIDOKeysViewFixture {
    static let daily = ViewFixture.key
    static let backup = AllKeysViewFixture.backup

    static func probed(_ d: KeyDescriptor, serial: UInt32) -> Msg {
        var info = KeyInfo(
            reader: d.name, atr: [], device: DeviceInfo(serial: serial, version: Version(5, 7, 2)),
            applications: ["OATH", "FIDO2"], overNFC: false)
        info.device.formFactor = .usbAKeychain
        return .probed(keyID: d.id, info)
    }

    /// Daily's credentials listed and backup plugged in; with `compare`, A pressed and backup's information read (its
    /// PIN asked for); with `read` too, backup's PIN given and its credentials read.
    static func state(compare: Bool = true, read: Bool = true, backupPIN: Bool = true) -> AppState {
        var state = FIDOViewFixture.state()
        state.keyNames = [28_123_456: "daily", 41_000_002: "backup"]
        _ = update(&state, .keyEvent(.keyArrived(backup)))
        _ = update(&state, probed(backup, serial: 41_000_002))
        _ = update(
            &state,
            .fido(
                .verified(
                    keyID: daily.id, FIDOViewFixture.info(),
                    credentials: [
                        FIDOCredential(
                            rpID: "example.com", rpName: "Example", userName: "alice", displayName: "Alice",
                            credentialID: [1, 2, 3, 4]),
                        FIDOCredential(
                            rpID: "github.com", rpName: "GitHub", userName: "alice@example.com",
                            credentialID: [5, 6, 7, 8]),
                    ])))
        if compare {
            _ = update(&state, .keyPress(.char("A")))
            _ = update(
                &state, .fido(.otherInfo(keyID: backup.id, FIDOViewFixture.info(pinSet: backupPIN ? true : false))))
        }
        if compare && read && backupPIN {
            FIDOViewFixture.type("backup-pin", &state)
            _ = update(&state, .keyPress(.enter))
            _ = update(
                &state,
                .fido(
                    .otherCredentials(
                        keyID: backup.id,
                        [
                            FIDOCredential(
                                rpID: "github.com", rpName: "GitHub", userName: "alice@example.com",
                                credentialID: [9, 10, 11, 12]),
                            FIDOCredential(
                                rpID: "spare.example", rpName: "Spare", userName: "carol", credentialID: [13, 14]),
                        ])))
        }
        state.status = nil
        return state
    }
}

@Suite("Views: the FIDO2 tab's credentials beside the other keys'")
struct FIDOOtherKeysViewTests {
    typealias F = FIDOKeysViewFixture

    @Test(arguments: [(24, 80), (30, 100), (20, 60)])
    func eachRelyingPartyShowsTheKeysThatHoldItAndWhereItIsMissing(rows: Int, columns: Int) throws {
        let screen = ViewFixture.render(F.state(), rows: rows, columns: columns)
        #expect(screen.lines.allSatisfy { $0.cellWidth == columns })
        #expect(screen.text(row: 2).hasPrefix(" Keys: daily · backup"), "\(screen.text(row: 2))")
        let github = try #require(ViewFixture.line(screen, containing: "github.com"))
        #expect(github.trimmingSpaces.hasSuffix("daily · backup"), "\(github)")
        let example = try #require(ViewFixture.line(screen, containing: "example.com"))
        #expect(example.contains("not on backup"), "\(example)")
        if columns >= 80 { #expect(example.contains("daily  not on backup"), "\(example)") }
        // A relying party of backup only is listed with its marks alone: its credential is not daily's to act on.
        let spare = try #require(ViewFixture.line(screen, containing: "spare.example"))
        #expect(spare.contains("not on daily"), "\(spare)")
        #expect(!screen.contains("carol"))
        // "not on" is a warning.
        let row = try #require(screen.lines.firstIndex(of: example))
        #expect(screen.style(row: row, column: columns - 3).foreground == .yellow)
        // Each of daily's credentials once, the first selected.
        #expect(screen.lines.filter { $0.contains("alice@example.com") }.count == 1)
        #expect(screen.text(row: rows - 3).contains("A this key only"), "\(screen.text(row: rows - 3))")
    }

    @Test func beforeAnotherKeyIsReadTheHintOffersItAndNothingIsMarked() throws {
        let screen = ViewFixture.render(F.state(compare: false))
        #expect(screen.text(row: 21).contains("A other keys"), "\(screen.text(row: 21))")
        #expect(!screen.contains("Keys:") && !screen.contains("not on"))
        #expect(try #require(ViewFixture.line(screen, containing: "github.com")).trimmingSpaces.hasSuffix("(GitHub)"))
        // Alone, the key has no other keys to offer.
        #expect(!ViewFixture.render(FIDOViewFixture.detailState()).text(row: 21).contains("other keys"))
    }

    @Test func thePINDialogNamesTheKeyHidesThePINAndSaysAWrongOne() throws {
        var state = F.state(read: false)
        FIDOViewFixture.type("typed-pin", &state)
        var screen = ViewFixture.render(state)
        #expect(screen.contains("FIDO2 PIN of YubiKey 5A 'backup'"))
        #expect(screen.contains("8 tries left") && screen.contains("not kept"))
        #expect(!screen.lines.joined().contains("typed-pin") && screen.contains("PIN  •••••••••"))
        #expect(screen.text(row: 2).contains("backup (waits for its PIN)"))
        _ = update(&state, .keyPress(.enter))
        _ = update(
            &state, .fido(.otherFailed(keyID: F.backup.id, FIDOFailure(.list, .wrongPIN(retriesLeft: 6)))))
        screen = ViewFixture.render(state)
        #expect(screen.contains("Wrong PIN: 6 tries left"))
        #expect(screen.contains("FIDO2 PIN of YubiKey 5A 'backup'"))
    }

    @Test func aKeyWithoutAPINIsNamedAsSuchAndMarksNothing() throws {
        let screen = ViewFixture.render(F.state(backupPIN: false))
        #expect(screen.text(row: 2).contains("backup (no FIDO2 PIN)"), "\(screen.text(row: 2))")
        #expect(!screen.contains("not on"))
    }

    @Test func aKeyPulledOutTakesItsMarksAway() throws {
        var state = F.state()
        _ = update(&state, .keyEvent(.keyLeft(id: F.backup.id)))
        let screen = ViewFixture.render(state)
        #expect(!screen.contains("backup") && !screen.contains("not on") && !screen.contains("spare.example"))
        #expect(screen.contains("example.com") && screen.contains("github.com"))
    }
}
