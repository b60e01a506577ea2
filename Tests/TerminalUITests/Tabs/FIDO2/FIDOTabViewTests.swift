import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// The FIDO2 tab's states, drawn at 80x24 with the English strings.
enum FIDOViewFixture {
    static let key = ViewFixture.key

    static func info(pinSet: Bool? = true, retries: Int? = 8) -> FIDOInfo {
        FIDOInfo(
            versions: ["U2F_V2", "FIDO_2_0", "FIDO_2_1"], extensions: ["credProtect", "hmac-secret"],
            aaguid: "ee882879-721c-4913-9775-3dfcce97072a",
            options: ["rk": true, "up": true, "clientPin": pinSet == true, "credMgmt": true],
            pinSet: pinSet, retries: retries, minPINLength: 4, remainingCredentials: 23, firmware: "5.7.2")
    }

    /// The FIDO2 tab of the fixture key, its information read.
    static func state(_ info: FIDOInfo = info(), virtual: Bool = false) -> AppState {
        var state = ViewFixture.state()
        state.virtualMode = virtual
        _ = update(&state, .keyPress(.char("3")))
        _ = update(&state, .fido(.loaded(keyID: key.id, info)))
        state.status = nil
        return state
    }

    /// The credentials list of a key that can rename, with one credential that has every detail.
    static func detailState() -> AppState {
        var i = info()
        i.updateUser = true
        var s = state(i)
        _ = update(
            &s,
            .fido(
                .verified(
                    keyID: key.id, i,
                    credentials: [
                        FIDOCredential(
                            rpID: "example.com", rpName: "Example", userName: "alice", displayName: "Alice",
                            credentialID: Array(0..<48), userID: [0xA1, 0xB2], credProtect: 2, largeBlobKey: true)
                    ])))
        s.status = nil
        return s
    }

    static func type(_ text: String, _ state: inout AppState) {
        for c in text { _ = update(&state, .keyPress(.char(c))) }
    }

    static func screen(_ state: AppState) -> MemoryScreen {
        let screen = ViewFixture.render(state)
        #expect(screen.lines.count == 24 && screen.lines.allSatisfy { $0.cellWidth == 80 })
        return screen
    }

    static func contains(_ screen: MemoryScreen, _ text: String) -> Bool {
        screen.lines.contains { $0.contains(text) }
    }
}

@Suite("Views: FIDO2 tab")
struct FIDOTabViewTests {
    typealias F = FIDOViewFixture

    @Test func informationAtAGlance() throws {
        let screen = F.screen(F.state())
        #expect(screen.text(row: 0).contains("3 FIDO2"))
        #expect(F.contains(screen, "FIDO2 authenticator"))
        #expect(try #require(ViewFixture.line(screen, containing: "Versions")).contains("U2F_V2 · FIDO_2_0 · FIDO_2_1"))
        #expect(
            try #require(ViewFixture.line(screen, containing: "AAGUID")).contains(
                "ee882879-721c-4913-9775-3dfcce97072a"))
        #expect(try #require(ViewFixture.line(screen, containing: "Firmware")).contains("5.7.2"))
        #expect(try #require(ViewFixture.line(screen, containing: "PIN  ")).contains("set · 8 tries left"))
        #expect(try #require(ViewFixture.line(screen, containing: "Minimum PIN length")).contains("4 characters"))
        #expect(try #require(ViewFixture.line(screen, containing: "Credentials")).contains("room for 23 more"))
        let options = try #require(ViewFixture.line(screen, containing: "Options"))
        #expect(options.contains("clientPin=yes") && options.contains("rk=yes") && options.contains("up=yes"))
        #expect(F.contains(screen, "credProtect, hmac-secret"))
        // The bindings that apply: a PIN is set, so change and verify, not set.
        let hints = screen.text(row: 21)
        #expect(
            hints.contains("c change PIN") && hints.contains("v verify PIN") && hints.contains("l credentials")
                && hints.contains("R reset"))
        #expect(!hints.contains("s set PIN"))
    }

    @Test func noPINYetOffersToSetOne() throws {
        let screen = F.screen(F.state(F.info(pinSet: false, retries: nil)))
        #expect(try #require(ViewFixture.line(screen, containing: "PIN  ")).contains("not set (s sets one)"))
        let hints = screen.text(row: 21)
        #expect(hints.contains("s set PIN") && !hints.contains("c change PIN"))
    }

    @Test func fewTriesLeftAndABlockedPINStandOut() throws {
        let few = F.screen(F.state(F.info(retries: 2)))
        let row = try #require(few.lines.firstIndex { $0.contains("set · 2 tries left") })
        let column = try #require(few.text(row: row).range(of: "set · 2")).lowerBound.utf16Offset(
            in: few.text(row: row))
        #expect(few.style(row: row, column: column) == Theme().warning)
        let blocked = F.screen(F.state(F.info(retries: 0)))
        #expect(F.contains(blocked, "blocked: only a reset (R)"))
        // The alert under the information says what to do.
        #expect(F.contains(blocked, "The PIN is blocked after too many wrong tries"))
    }

    @Test func setPINDialogHidesThePINAndChecksTheRulesAsYouType() throws {
        var state = F.state(F.info(pinSet: false, retries: nil))
        _ = update(&state, .keyPress(.char("s")))
        F.type("ab1", &state)
        let screen = F.screen(state)
        #expect(F.contains(screen, "Set the FIDO2 PIN"))
        let field = try #require(ViewFixture.line(screen, containing: "New PIN  "))
        #expect(field.contains("•••") && !field.contains("ab1"))
        #expect(!screen.lines.joined().contains("ab1"))
        #expect(F.contains(screen, "the PIN must have at least 4 characters (3 given)"))
        #expect(F.contains(screen, "New PIN again"))
        #expect(screen.cursor != nil)
    }

    @Test func changePINDialogShowsTheKeysAnswer() {
        var state = F.state()
        _ = update(&state, .keyPress(.char("c")))
        F.type("wrong", &state)
        _ = update(&state, .keyPress(.enter))
        F.type("new-pin", &state)
        _ = update(&state, .keyPress(.enter))
        F.type("new-pin", &state)
        _ = update(&state, .keyPress(.enter))
        let working = F.screen(state)
        #expect(F.contains(working, "Change the FIDO2 PIN") && F.contains(working, "Current PIN"))
        _ = update(&state, .fido(.failed(keyID: F.key.id, FIDOFailure(.changePIN, .wrongPIN(retriesLeft: 6)))))
        let screen = F.screen(state)
        #expect(F.contains(screen, "Wrong current PIN: 6 tries left; the PIN was not changed"))
    }

    @Test func wrongPINOnVerifyShowsTheTriesLeft() {
        var state = F.state()
        _ = update(&state, .keyPress(.char("v")))
        F.type("0000", &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .fido(.failed(keyID: F.key.id, FIDOFailure(.verifyPIN, .wrongPIN(retriesLeft: 7)))))
        let screen = F.screen(state)
        #expect(F.contains(screen, "Verify the FIDO2 PIN"))
        #expect(F.contains(screen, "Wrong PIN: 7 tries left before the PIN is blocked"))
        // Behind the dialog, the information shows the new count too.
        #expect(F.contains(screen, "set · 7 tries left"))
    }

    @Test func credentialsListedByRelyingPartyWithTheSelectionAndTheDeleteConfirmation() throws {
        var state = F.state()
        let creds = [
            FIDOCredential(
                rpID: "github.com", rpName: "GitHub", userName: "alice", displayName: "Alice Liddell",
                credentialID: Array(repeating: 0xAB, count: 32)),
            FIDOCredential(rpID: "example.org", rpName: "example.org", userName: "bob", credentialID: [1, 2, 3, 4]),
            FIDOCredential(rpID: "github.com", rpName: "GitHub", userName: "carol", credentialID: [9, 9]),
        ]
        _ = update(&state, .fido(.verified(keyID: F.key.id, F.info(), credentials: creds)))
        _ = update(&state, .keyPress(.char("j")))
        let screen = F.screen(state)
        #expect(F.contains(screen, "Discoverable credentials (3)"))
        let rpRows = ["example.org", "github.com  (GitHub)"].map { rp in
            screen.lines.firstIndex { $0.contains(rp) } ?? -1
        }
        #expect(rpRows[0] >= 0 && rpRows[1] > rpRows[0])
        let alice = try #require(screen.lines.firstIndex { $0.contains("alice  (Alice Liddell)") })
        #expect(screen.text(row: alice).contains("id abababababababa…"))
        #expect(alice > rpRows[1])
        // j moved to the second in list order: alice (github.com, after example.org's bob).
        #expect(screen.style(row: alice, column: 5).reverse)
        #expect(screen.text(row: 21).contains("d delete") && screen.text(row: 21).contains("Esc / l back"))
        _ = update(&state, .keyPress(.char("d")))
        let confirm = F.screen(state)
        #expect(F.contains(confirm, "Delete the credential of alice for github.com?"))
        #expect(F.contains(confirm, "Signing in to github.com with this key will no longer work."))
    }

    @Test func emptyCredentialsListSaysSo() {
        var state = F.state()
        _ = update(&state, .fido(.verified(keyID: F.key.id, F.info(), credentials: [])))
        let screen = F.screen(state)
        #expect(F.contains(screen, "Discoverable credentials (0)") && F.contains(screen, "No discoverable credentials"))
    }

    @Test func resetWarnsWhatIsLostThenShowsTouchYourKeyWithEscToCancel() {
        var state = F.state(virtual: true)
        _ = update(&state, .keyPress(.char("R")))
        let warning = F.screen(state)
        #expect(F.contains(warning, "Reset FIDO2?"))
        let text = warning.lines.joined(separator: " ")
        #expect(text.contains("Every FIDO credential on this key is lost") && text.contains("PIN is removed"))
        #expect(F.contains(warning, "y confirm · n / Enter / Esc cancel"))
        state.now += 1
        _ = update(&state, .keyPress(.char("y")))
        let sending = F.screen(state)
        #expect(F.contains(sending, "Resetting… touch your key when it blinks."))
        _ = update(&state, .fido(.touch(keyID: F.key.id, waiting: true)))
        let touch = F.screen(state)
        #expect(F.contains(touch, "Touch your key") && F.contains(touch, "Esc cancels"))
        #expect(F.contains(touch, "Touching the key confirms the reset"))
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .fido(.failed(keyID: F.key.id, FIDOFailure(.reset, .cancelled))))
        let after = F.screen(state)
        #expect(!F.contains(after, "Touch your key"))
        #expect(after.text(row: 23).contains("Reset cancelled: nothing was reset"))
    }

    @Test func guidedResetOfARealKeyAsksToRemoveAndReinsert() {
        var state = F.state()
        _ = update(&state, .keyPress(.char("R")))
        state.now += 1
        _ = update(&state, .keyPress(.char("y")))
        _ = update(&state, .fido(.failed(keyID: F.key.id, FIDOFailure(.reset, .notAllowed))))
        let remove = F.screen(state)
        #expect(F.contains(remove, "The key allows a reset only within a few seconds"))
        #expect(F.contains(remove, "1. Remove the key now.") && F.contains(remove, "2. Insert it again"))
        #expect(F.contains(remove, "Esc cancels: nothing is reset"))
        _ = update(&state, .keyEvent(.keyLeft(id: F.key.id)))
        let insert = F.screen(state)
        #expect(F.contains(insert, "1. Removed ✔") && F.contains(insert, "2. Insert it again"))
    }

    @Test func keyPulledOutMidOperationIsSaidInTheStatusLine() {
        var state = F.state()
        _ = update(&state, .keyPress(.char("v")))
        F.type("123456", &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .fido(.failed(keyID: F.key.id, FIDOFailure(.verifyPIN, .keyGone))))
        let screen = F.screen(state)
        #expect(!F.contains(screen, "Verify the FIDO2 PIN"))
        let gone = ViewFixture.tables.format("status.keyGoneMidOperation", [:])
        #expect(screen.text(row: 23).contains(String(gone.prefix(30))))
    }

    @Test func noKeyAndUnavailableStates() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyPress(.char("3")))
        let none = F.screen(state)
        #expect(F.contains(none, "No key") && F.contains(none, "Insert a FIDO2 key"))
        var loaded = F.state()
        _ = update(&loaded, .keyPress(.char("r")))
        _ = update(&loaded, .fido(.failed(keyID: F.key.id, FIDOFailure(.load, .notAvailable))))
        let unavailable = F.screen(loaded)
        #expect(F.contains(unavailable, "No FIDO2 here"))
        // A FIDO interface this user may not open is not a key without FIDO2: the heading says it could not be
        // read, and the reason names the node.
        var refused = F.state()
        _ = update(&refused, .keyPress(.char("r")))
        let permission = UIText("error.hid-permission", ["path": "/dev/hidraw7"])
        _ = update(&refused, .fido(.failed(keyID: F.key.id, FIDOFailure(.load, .other(permission)))))
        let unreadable = F.screen(refused)
        #expect(F.contains(unreadable, "FIDO2 could not be read") && !F.contains(unreadable, "No FIDO2 here"))
        #expect(F.contains(unreadable, "/dev/hidraw7"))
    }

    @Test func helpOverlayListsTheTabsBindings() {
        var state = F.state()
        _ = update(&state, .keyPress(.char("?")))
        let screen = F.screen(state)
        for (key, text) in [
            ("s", "set a PIN"), ("c", "change the PIN"), ("v", "verify the PIN"),
            ("l", "list the credentials"), ("R", "reset"), ("Enter / Esc", "in a PIN dialog"),
        ] {
            #expect(screen.lines.contains { $0.contains(" \(key) ") && $0.contains(text) }, "\(key): \(text)")
        }
    }

    @Test func germanStringsFitToo() {
        let tables = StringTables.load(language: "de")
        let screen = MemoryScreen(rows: 24, columns: 80, unicode: true)
        var state = F.state()
        _ = update(&state, .keyPress(.char("c")))
        AppView(screen: screen, text: { t in tables.text(t) }).render(state)
        #expect(screen.lines.allSatisfy { $0.cellWidth == 80 })
        #expect(screen.lines.contains { $0.contains(tables.format("fido.changePIN.title", [:])) })
    }
}

@Suite("Views: short terminals")
struct ShortTerminalTests {
    static func render(_ state: AppState) -> MemoryScreen {
        let screen = MemoryScreen(rows: 15, columns: 60)
        AppView(screen: screen, text: ViewFixture.text).render(state)
        return screen
    }

    @Test func theFIDO2InformationScrollsAtSixtyByFifteen() {
        var state = FIDOViewFixture.state()
        var screen = Self.render(state)
        #expect(screen.contains("↓ more below") && !screen.contains("Extensions"))
        for _ in 0..<6 { _ = update(&state, .keyPress(.down)) }
        screen = Self.render(state)
        #expect(screen.contains("Extensions") && screen.contains("credProtect"))
        #expect(!screen.contains("↓ more below"))
        _ = update(&state, .keyPress(.home))
        #expect(Self.render(state).contains("FIDO2 authenticator"))
    }

    @Test func theAddDialogKeepsItsOutlineAndKeysAtSixtyByFifteen() {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("a")))
        let screen = Self.render(state)
        #expect(screen.text(row: 0).hasPrefix("┌ Add account"))
        #expect(screen.text(row: 14).hasPrefix("└") && screen.text(row: 14).hasSuffix("┘"))
        #expect(screen.text(row: 13).contains("Esc cancel"))
        #expect(screen.contains("Require touch"))
    }
}
