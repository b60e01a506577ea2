import Testing
import KeyKit
@testable import AuthenticatorModel

/// Builders for the messages the runner would post.
enum Fixture {
    /// A USB YubiKey: its CCID reader and its FIDO HID interface.
    static let reader = KeyDescriptor(
        transport: .pcsc(reader: "Yubico YubiKey OTP+FIDO+CCID 00 00"), name: "Yubico YubiKey OTP+FIDO+CCID 00 00",
        fidoHID: HIDDeviceInfo(path: "/dev/hidraw0", vendorID: 0x1050, productID: 0x0407))
    static let other = KeyDescriptor(transport: .pcsc(reader: "Virtual PCD 00 01"), name: "Virtual PCD 00 01")

    static func credential(_ id: String, type: OATHType = .totp, touch: Bool = false) -> Credential {
        Credential(rawID: Array(id.utf8), type: type, touch: touch)
    }

    static func entry(
        _ id: String, code: String?, from: Int64 = 0, period: Int64 = 30,
        type: OATHType = .totp, touch: Bool = false
    ) -> OATHSession.Entry {
        OATHSession.Entry(
            credential: credential(id, type: type, touch: touch),
            code: code.map { Code(value: $0, validFrom: from, validTo: from + period) }, digits: 6)
    }

    static func snapshot(_ entries: [OATHSession.Entry], password: Bool = false) -> OATHSnapshot {
        OATHSnapshot(deviceID: "dev1", version: Version(5, 7, 2), hasPassword: password, entries: entries)
    }

    /// A state with `reader` selected and its accounts loaded at t = 1000.
    static func loaded(_ entries: [OATHSession.Entry]) -> AppState {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(reader)))
        _ = update(&state, .oath(.opened(keyID: reader.id, snapshot(entries))))
        return state
    }

    static func type(_ text: String, into state: inout AppState) -> [Command] {
        text.flatMap { update(&state, .keyPress(.char($0))) }
    }

    /// A key pressed a second after the last one (a deliberate answer, not part of a burst).
    static func later(_ key: KeyPress, into state: inout AppState) -> [Command] {
        state.now += 1
        return update(&state, .keyPress(key))
    }
}

@Suite("Model: keys arriving and leaving")
struct KeyLifecycleTests {
    @Test func firstKeyIsSelectedProbedAndOpened() {
        var state = AppState(now: 100)
        #expect(initialCommands(state) == [.watchKeys])
        let commands = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        #expect(commands == [.probe(Fixture.reader), .oath(.open(Fixture.reader, time: 100))])
        #expect(state.selectedKeyID == Fixture.reader.id)
        #expect(state.oath.phase == .loading)
    }

    @Test func secondKeyDoesNotTakeTheSelection() {
        var state = Fixture.loaded([Fixture.entry("a", code: "123456", from: 990)])
        let commands = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        #expect(commands == [.probe(Fixture.other)])
        #expect(state.selectedKeyID == Fixture.reader.id)
        #expect(state.keys.count == 2)
    }

    @Test func selectedKeyLeavingClearsTheTabAndTheNextKeyTakesOver() {
        var state = Fixture.loaded([Fixture.entry("a", code: "123456", from: 990)])
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        let commands = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        #expect(commands == [.forgetKey(keyID: Fixture.reader.id), .oath(.open(Fixture.other, time: 1000))])
        #expect(state.selectedKeyID == Fixture.other.id)
        #expect(state.status?.text.key == "status.keyRemoved")
        #expect(state.oath.accounts.isEmpty)
    }

    @Test func lastKeyLeavingShowsNoKeyAndItsReturnReloadsWithoutAKeypress() {
        var state = Fixture.loaded([Fixture.entry("a", code: "123456", from: 990)])
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        #expect(state.selectedKey == nil)
        #expect(state.oath.phase == .noKey)
        let commands = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        #expect(commands.contains(.oath(.open(Fixture.reader, time: 1000))))
    }

    @Test func answersForAKeyThatLeftAreIgnored() {
        var state = Fixture.loaded([])
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        _ = update(
            &state,
            .oath(.opened(keyID: Fixture.reader.id, Fixture.snapshot([Fixture.entry("a", code: "1", from: 990)]))))
        #expect(state.oath.accounts.isEmpty)
    }

    @Test func pcscdGoingAwayIsShownAndItsReturnClearsTheMessage() {
        var state = AppState(now: 0)
        _ = update(&state, .keyEvent(.serviceUnavailable))
        #expect(state.service == .unavailable)
        #expect(state.status?.text.key == "status.pcscdMissing")
        _ = update(&state, .keyEvent(.serviceAvailable))
        #expect(state.status == nil)
    }

    @Test func aPcscdThatRefusesTheSessionIsToldApartFromOneThatIsGone() {
        var state = AppState(now: 0)
        _ = update(&state, .keyEvent(.serviceRefused))
        #expect(state.service == .refused && state.service.isDown)
        #expect(state.status?.text.key == "status.pcscdRefused")
        #expect(state.status?.text.arguments["user"] == PCSCDaemon.userName())
        // Refused, then gone: the message follows.
        _ = update(&state, .keyEvent(.serviceUnavailable))
        #expect(state.service == .unavailable && state.status?.text.key == "status.pcscdMissing")
        _ = update(&state, .keyEvent(.serviceAvailable))
        #expect(state.status == nil)
    }

    @Test func keySwitcherSelectsAnotherKeyAndRemembersItsSerial() {
        var state = Fixture.loaded([])
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        var info = KeyInfo(
            reader: Fixture.other.name, atr: [], device: DeviceInfo(version: Version(5, 4, 3)), applications: [],
            overNFC: false)
        info.device.serial = 4242
        _ = update(&state, .probed(keyID: Fixture.other.id, info))
        _ = update(&state, .keyPress(.char("K")))
        #expect(state.showKeySwitcher)
        _ = update(&state, .keyPress(.down))
        let commands = update(&state, .keyPress(.enter))
        #expect(commands == [.oath(.open(Fixture.other, time: 1000))])
        #expect(state.preferredSerial == 4242)
        #expect(!state.showKeySwitcher)
    }

    /// A reader stuck in pcscd still shows a card: the tabs go on with a key that answers, in whichever order the
    /// two probes come back, and stay where the user chose by serial.
    @Test func aKeyThatDoesNotAnswerGivesWayToOneThatDoes() {
        func answered(_ d: KeyDescriptor, serial: UInt32) -> KeyInfo {
            var info = KeyInfo(
                reader: d.name, atr: [], device: DeviceInfo(version: Version(5, 7, 2)), applications: ["OATH"],
                overNFC: true)
            info.device.serial = serial
            return info
        }
        // The silent key's probe fails after the other answered.
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        #expect(state.selectedKeyID == Fixture.reader.id)
        _ = update(&state, .probed(keyID: Fixture.other.id, answered(Fixture.other, serial: 4242)))
        #expect(state.selectedKeyID == Fixture.reader.id)
        let commands = update(&state, .probed(keyID: Fixture.reader.id, nil))
        #expect(state.selectedKeyID == Fixture.other.id)
        #expect(commands.contains(.oath(.open(Fixture.other, time: 1000))))
        // The other order: the silent key failed first, then the other answered.
        var later = AppState(now: 1000)
        _ = update(&later, .keyEvent(.keyArrived(Fixture.reader)))
        _ = update(&later, .keyEvent(.keyArrived(Fixture.other)))
        _ = update(&later, .probed(keyID: Fixture.reader.id, nil))
        #expect(later.selectedKeyID == Fixture.reader.id)
        _ = update(&later, .probed(keyID: Fixture.other.id, answered(Fixture.other, serial: 4242)))
        #expect(later.selectedKeyID == Fixture.other.id)
        // A key chosen by serial stays chosen.
        var chosen = AppState(now: 1000, preferredSerial: 77)
        _ = update(&chosen, .keyEvent(.keyArrived(Fixture.reader)))
        _ = update(&chosen, .keyEvent(.keyArrived(Fixture.other)))
        _ = update(&chosen, .probed(keyID: Fixture.reader.id, nil))
        _ = update(&chosen, .probed(keyID: Fixture.other.id, answered(Fixture.other, serial: 4242)))
        #expect(chosen.selectedKeyID == Fixture.reader.id)
    }
}

@Suite("Model: keyboard")
struct KeyboardTests {
    @Test func tabsSwitchWithNumbersTabAndShiftTab() {
        var state = AppState(now: 0)
        _ = update(&state, .keyPress(.char("3")))
        #expect(state.tab == .fido)
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .apdu)
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .piv)
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .ssh)
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .openpgp)
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .oath)
        _ = update(&state, .keyPress(.backTab))
        #expect(state.tab == .openpgp)
    }

    @Test func qQuitsOutsideFieldsButIsTextInTheFilter() {
        var state = Fixture.loaded([Fixture.entry("qa", code: "1", from: 990)])
        _ = update(&state, .keyPress(.char("/")))
        #expect(state.textFocused)
        #expect(update(&state, .keyPress(.char("q"))).isEmpty)
        #expect(!state.quitting)
        #expect(state.oath.filter.text == "q")
        // Digits are text too, not tab switches.
        _ = update(&state, .keyPress(.char("2")))
        #expect(state.tab == .oath)
        _ = update(&state, .keyPress(.enter))
        #expect(update(&state, .keyPress(.char("q"))) == [.quit])
        #expect(state.quitting)
    }

    @Test func ctrlCQuitsFromAnywhereEvenInADialog() {
        var state = Fixture.loaded([])
        _ = update(&state, .keyPress(.char("a")))
        #expect(state.oath.dialog != nil)
        #expect(update(&state, .keyPress(.ctrl("c"))) == [.quit])
    }

    @Test func helpOverlayOpensAndAnyKeyClosesIt() {
        var state = AppState(now: 0)
        _ = update(&state, .keyPress(.char("?")))
        #expect(state.showHelp)
        _ = update(&state, .keyPress(.char("x")))
        #expect(!state.showHelp)
    }

    @Test func reboundKeysTakeEffectAndClashesAreRefused() throws {
        let bindings = try KeyBindings(overrides: [.quit: "x", .copy: "y"])
        var state = AppState(now: 0, bindings: bindings)
        #expect(update(&state, .keyPress(.char("q"))).isEmpty)
        #expect(update(&state, .keyPress(.char("x"))) == [.quit])
        #expect(throws: KeyBindings.BindingError.self) { try KeyBindings(overrides: [.quit: "a"]) }
        #expect(throws: KeyBindings.BindingError.self) { try KeyBindings(overrides: [.help: "1"]) }
    }
}

@Suite("Model: OATH codes and time")
struct OATHTimeTests {
    @Test func tickBeforeTheBoundaryAsksNothingAndAtTheBoundaryOneCalculateAll() {
        var state = Fixture.loaded([
            Fixture.entry("a", code: "111111", from: 990), Fixture.entry("b", code: "222222", from: 990),
        ])
        #expect(update(&state, .tick(now: 1019.5)).isEmpty)
        let commands = update(&state, .tick(now: 1020))
        #expect(commands == [.oath(.refresh(Fixture.reader, time: 1020, all: true, single: []))])
        // While the refresh is on its way, further ticks ask nothing more.
        #expect(update(&state, .tick(now: 1021)).isEmpty)
        _ = update(
            &state,
            .oath(
                .codes(
                    keyID: Fixture.reader.id,
                    [Fixture.entry("a", code: "333333", from: 1020), Fixture.entry("b", code: "444444", from: 1020)])))
        #expect(state.oath.accounts.map { $0.code?.value } == ["333333", "444444"])
        #expect(update(&state, .tick(now: 1030)).isEmpty)
    }

    @Test func otherPeriodsAreCalculatedSinglyAtTheirOwnBoundary() {
        let sixty = Fixture.entry("60/Fastmail:a", code: "555555", from: 960, period: 60)
        var state = Fixture.loaded([Fixture.entry("a", code: "111111", from: 990), sixty])
        // At 1020 both expire: one CALCULATE ALL plus one CALCULATE for the 60-second account.
        #expect(
            update(&state, .tick(now: 1020)) == [
                .oath(.refresh(Fixture.reader, time: 1020, all: true, single: [sixty.credential]))
            ])
        _ = update(
            &state,
            .oath(
                .codes(
                    keyID: Fixture.reader.id,
                    [
                        Fixture.entry("a", code: "1", from: 1020),
                        Fixture.entry("60/Fastmail:a", code: "666666", from: 1020, period: 60),
                    ])))
        // At 1050 only the 30-second code expired: CALCULATE ALL, and the 60-second one is left alone.
        #expect(
            update(&state, .tick(now: 1050)) == [.oath(.refresh(Fixture.reader, time: 1050, all: true, single: []))])
        _ = update(
            &state,
            .oath(
                .codes(
                    keyID: Fixture.reader.id,
                    [
                        Fixture.entry("a", code: "2", from: 1050),
                        OATHSession.Entry(credential: sixty.credential, code: nil, digits: 6),
                    ])))
        #expect(state.oath.accounts.first { $0.id == "60/Fastmail:a" }?.code?.value == "666666")
        #expect(state.oath.nextExpiry(after: 1050) == 1080)
    }

    @Test func touchAndHOTPAccountsAreNeverCalculatedByTheClock() {
        var state = Fixture.loaded([
            Fixture.entry("touch", code: nil, touch: true), Fixture.entry("hotp", code: nil, type: .hotp),
        ])
        #expect(update(&state, .tick(now: 5000)).isEmpty)
        #expect(state.oath.nextExpiry(after: 5000) == nil)
    }

    @Test func enterOnATouchAccountCalculatesThenCopies() {
        var state = Fixture.loaded([Fixture.entry("touch", code: nil, touch: true)])
        let commands = update(&state, .keyPress(.enter))
        #expect(commands == [.oath(.calculate(Fixture.reader, Fixture.credential("touch", touch: true), time: 1000))])
        #expect(state.oath.accounts[0].calculating)
        let after = update(
            &state,
            .oath(
                .code(
                    keyID: Fixture.reader.id, accountID: "touch",
                    Code(value: "987654", validFrom: 990, validTo: 1020))))
        #expect(after == [.copy("987654", status: UIText("status.copied", ["account": "touch"]))])
        #expect(!state.oath.accounts[0].calculating)
        // A valid code is copied at once, without asking the key.
        #expect(
            update(&state, .keyPress(.char("c"))) == [
                .copy("987654", status: UIText("status.copied", ["account": "touch"]))
            ])
    }

    @Test func nextExpiryIsTheEarliestShownCode() {
        let state = Fixture.loaded([
            Fixture.entry("a", code: "1", from: 990),
            Fixture.entry("60/b", code: "2", from: 960, period: 60),
        ])
        #expect(state.oath.nextExpiry(after: 1000) == 1020)
    }
}

@Suite("Model: OATH list, filter, pins")
struct OATHListTests {
    @Test func filterNarrowsAsYouTypeAndEscClearsIt() {
        var state = Fixture.loaded([
            Fixture.entry("GitHub:alice", code: "1", from: 990),
            Fixture.entry("Google:alice", code: "2", from: 990),
            Fixture.entry("Fastmail:bob", code: "3", from: 990),
        ])
        _ = update(&state, .keyPress(.char("/")))
        _ = Fixture.type("gi", into: &state)
        #expect(state.oath.visibleAccounts.map(\.id) == ["GitHub:alice"])
        _ = update(&state, .keyPress(.backspace))
        #expect(state.oath.visibleAccounts.map(\.id) == ["GitHub:alice", "Google:alice"])
        _ = update(&state, .keyPress(.escape))
        #expect(!state.oath.filterFocused)
        #expect(state.oath.visibleAccounts.count == 3)
    }

    @Test func pinnedAccountsComeFirstThenByIssuer() {
        var state = Fixture.loaded([
            Fixture.entry("Zeta:z", code: "1", from: 990),
            Fixture.entry("Alpha:a", code: "2", from: 990),
            Fixture.entry("Mid:m", code: "3", from: 990),
        ])
        #expect(state.oath.visibleAccounts.map(\.id) == ["Alpha:a", "Mid:m", "Zeta:z"])
        _ = update(&state, .keyPress(.end))
        let commands = update(&state, .keyPress(.char("p")))
        #expect(commands == [.savePins(deviceID: "dev1", ["Zeta:z"])])
        #expect(state.oath.visibleAccounts.map(\.id) == ["Zeta:z", "Alpha:a", "Mid:m"])
        #expect(state.oath.selectedAccount?.id == "Zeta:z")
    }

    @Test func selectionMovesAndStaysOnTheSameAccountAcrossRefreshes() {
        var state = Fixture.loaded([
            Fixture.entry("A:a", code: "1", from: 990), Fixture.entry("B:b", code: "2", from: 990),
        ])
        _ = update(&state, .keyPress(.down))
        #expect(state.oath.selectedAccount?.id == "B:b")
        _ = update(
            &state,
            .oath(
                .codes(
                    keyID: Fixture.reader.id,
                    [Fixture.entry("A:a", code: "5", from: 1020), Fixture.entry("B:b", code: "6", from: 1020)])))
        #expect(state.oath.selectedAccount?.id == "B:b")
        _ = update(&state, .keyPress(.down))
        #expect(state.oath.selectedAccount?.id == "B:b")
    }
}

@Suite("Model: OATH password, add, rename, delete")
struct OATHDialogTests {
    @Test func lockedKeyAsksForThePasswordAndAWrongOneKeepsTheDialog() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        let commands = update(
            &state, .oath(.locked(keyID: Fixture.reader.id, deviceID: "dev1", version: Version(5, 7, 2))))
        #expect(commands == [.loadPins(deviceID: "dev1")])
        #expect(state.oath.phase == .locked)
        #expect(state.oath.dialog?.kind == .unlock)
        _ = Fixture.type("hunter2", into: &state)
        #expect(state.oath.dialog?.form[UnlockField.password] == "hunter2")
        _ = update(&state, .keyPress(.enter))  // to "remember"
        _ = update(&state, .keyPress(.char(" ")))  // remember: yes
        let submit = update(&state, .keyPress(.enter))
        #expect(submit == [.oath(.unlock(Fixture.reader, password: "hunter2", remember: true, time: 1000))])
        // The typed password does not stay in the state.
        #expect(state.oath.dialog?.form[UnlockField.password] == "")
        _ = update(
            &state,
            .oath(
                .failed(
                    keyID: Fixture.reader.id,
                    OATHFailure(operation: .unlock, message: UIText("oath.wrongPassword"), wrongPassword: true))))
        #expect(state.oath.dialog?.form.problem == UIText("oath.wrongPassword"))
        #expect(state.oath.dialog?.form.busy == false)
        _ = update(
            &state,
            .oath(
                .unlocked(
                    keyID: Fixture.reader.id,
                    Fixture.snapshot([Fixture.entry("a", code: "1", from: 990)], password: true), remembered: true)))
        #expect(state.oath.phase == .ready)
        #expect(state.oath.dialog == nil)
        #expect(state.oath.hasPassword)
    }

    @Test func addFromAURIIsValidatedAsYouType() throws {
        var state = Fixture.loaded([])
        _ = update(&state, .keyPress(.char("a")))
        _ = Fixture.type("otpauth://totp/Ex:bob?secret=1", into: &state)
        #expect(state.oath.dialog?.form.problem != nil)
        for _ in 0..<1 { _ = update(&state, .keyPress(.backspace)) }
        _ = Fixture.type("JBSWY3DPEHPK3PXP&issuer=Ex", into: &state)
        #expect(state.oath.dialog?.form.problem == nil)
        // The URI filled the fields for review; one Enter adds.
        let form = try #require(state.oath.dialog?.form)
        #expect(
            form[AddField.issuer] == "Ex" && form[AddField.name] == "bob" && form[AddField.secret] == "JBSWY3DPEHPK3PXP"
        )
        let commands = update(&state, .keyPress(.enter))
        guard case .oath(.add(_, let accounts, let overwrite, _)) = commands.first, let data = accounts.first else {
            Issue.record("no add command: \(commands)")
            return
        }
        #expect(accounts.count == 1 && !overwrite)
        #expect(data.name == "bob")
        #expect(data.issuer == "Ex")
        #expect(data.secret == Array("Hello!".utf8) + [0xDE, 0xAD, 0xBE, 0xEF])
    }

    @Test func aPastedURIOnTheListOpensAddFilledInEveryField() throws {
        var state = Fixture.loaded([Fixture.entry("Ex:bob", code: "1", from: 990)])
        let uri = "otpauth://hotp/ACME:carol?secret=JBSWY3DPEHPK3PXP&issuer=ACME&algorithm=SHA256&digits=8&counter=42\n"
        #expect(update(&state, .paste(uri)).isEmpty)
        let dialog = try #require(state.oath.dialog)
        #expect(dialog.kind.isAdd)
        let form = dialog.form
        #expect(form[AddField.uri] == uri.trimmingWhitespace)
        #expect(
            form[AddField.issuer] == "ACME" && form[AddField.name] == "carol"
                && form[AddField.secret] == "JBSWY3DPEHPK3PXP")
        #expect(
            form[AddField.type] == "HOTP" && form[AddField.algorithm] == "SHA256" && form[AddField.digits] == "8"
                && form[AddField.counter] == "42")
        #expect(form.problem == nil)
        // Changed on review, the fields are what is added.
        state.oath.dialog?.form.focus(on: AddField.name)
        _ = update(&state, .keyPress(.ctrl("u")))
        _ = Fixture.type("dave", into: &state)
        let commands = update(&state, .keyPress(.enter))
        guard case .oath(.add(_, let accounts, false, _)) = commands.first, let data = accounts.first else {
            Issue.record("no add command: \(commands)")
            return
        }
        #expect(data.id.string == "ACME:dave" && data.type == .hotp && data.counter == 42 && data.digits == 8)
        #expect(data.algorithm == .sha256)
    }

    @Test func pastedTextThatIsNotAURINeverActsAsKeys() {
        var state = Fixture.loaded([
            Fixture.entry("Ex:bob", code: "1", from: 990), Fixture.entry("Ex:zed", code: "2", from: 990),
        ])
        // "study": s, t, u, d (delete), y (yes) as keys would have deleted the selected account.
        #expect(update(&state, .paste("study")).isEmpty)
        #expect(state.oath.dialog == nil && state.oath.accounts.count == 2 && state.oath.pinned.isEmpty)
        #expect(state.status?.text == UIText("status.pasteIgnoredOATH"))
        // In the filter, a paste is text.
        _ = update(&state, .keyPress(.char("/")))
        _ = update(&state, .paste("zed"))
        #expect(state.oath.filter.text == "zed" && state.oath.visibleAccounts.map(\.id) == ["Ex:zed"])
    }

    @Test func anExportWithSeveralAccountsAddsThemAll() throws {
        // Two accounts, Ex:a and Ex:b, as Google Authenticator exports them (protobuf, then base64).
        let secret: [UInt8] = Array("Hello!".utf8) + [0xDE, 0xAD, 0xBE, 0xEF]
        func account(_ name: String) -> [UInt8] {
            let body: [UInt8] =
                [0x0A, UInt8(secret.count)] + secret + [0x12, UInt8(name.utf8.count)] + Array(name.utf8)
            return [0x0A, UInt8(body.count)] + body
        }
        // base64 of account("Ex:a") + account("Ex:b"), "+" and "/" percent-encoded.
        let uri = "otpauth-migration://offline?data=" + Self.base64(account("Ex:a") + account("Ex:b"))
        var state = Fixture.loaded([])
        _ = update(&state, .paste(uri))
        #expect(state.oath.dialog?.form.note == UIText("oath.add.several", ["count": "2"]))
        #expect(state.oath.dialog?.form.problem == nil)
        let commands = update(&state, .keyPress(.enter))
        guard case .oath(.add(_, let accounts, false, _)) = commands.first else {
            Issue.record("no add command: \(commands)")
            return
        }
        #expect(accounts.map(\.id.string) == ["Ex:a", "Ex:b"])
    }

    static func base64(_ bytes: [UInt8]) -> String {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var out = ""
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            var v = 0
            for j in 0..<3 { v = v << 8 | (j < n ? Int(bytes[i + j]) : 0) }
            for j in 0..<4 {
                guard j <= n else { out += "="; continue }
                let d = (v >> (18 - 6 * j)) & 63
                out += d < 62 ? String(table[d]) : (d == 62 ? "%2B" : "%2F")
            }
            i += 3
        }
        return out
    }

    @Test func addFromFieldsRefusesBadBase32AndDuplicates() throws {
        var state = Fixture.loaded([Fixture.entry("Ex:bob", code: "1", from: 990)])
        _ = update(&state, .keyPress(.char("a")))
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("Ex", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("bob", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("JBSWY3DPEHPK3PX1", into: &state)
        let problem = try #require(state.oath.dialog?.form.problem)
        #expect(problem == UIText("account.secret-character", ["character": "1", "position": "16"]))
        _ = update(&state, .keyPress(.backspace))
        _ = Fixture.type("P", into: &state)
        #expect(state.oath.dialog?.form.problem == nil)
        // An account of that name exists: adding asks before it replaces it; a y in the same burst is no answer.
        var commands = [Command]()
        for _ in 0..<7 { commands += update(&state, .keyPress(.enter)) }
        #expect(commands.isEmpty)
        #expect(
            state.oath.dialog?.form.confirming?.question == UIText("oath.add.replaceQuestion", ["accounts": "Ex:bob"]))
        #expect(update(&state, .keyPress(.char("y"))).isEmpty)
        // No (Enter) goes back to the fields with everything kept.
        #expect(Fixture.later(.enter, into: &state).isEmpty)
        #expect(
            state.oath.dialog?.form.confirming == nil && state.oath.dialog?.form[AddField.secret] == "JBSWY3DPEHPK3PXP")
        _ = update(&state, .keyPress(.enter))
        commands = Fixture.later(.char("y"), into: &state)
        guard case .oath(.add(_, let accounts, true, _)) = commands.first else {
            Issue.record("no overwriting add: \(commands)")
            return
        }
        #expect(accounts.map(\.id.string) == ["Ex:bob"])
    }

    @Test func renameAndDeleteConfirm() {
        var state = Fixture.loaded([Fixture.entry("Ex:bob", code: "1", from: 990)])
        _ = update(&state, .keyPress(.char("r")))
        #expect(state.oath.dialog?.form[RenameField.name] == "Ex:bob")
        for _ in 0..<3 { _ = update(&state, .keyPress(.backspace)) }
        _ = Fixture.type("carol", into: &state)
        let rename = update(&state, .keyPress(.enter))
        #expect(
            rename == [
                .oath(
                    .rename(
                        Fixture.reader, Fixture.credential("Ex:bob"),
                        to: CredentialID(name: "carol", issuer: "Ex", type: .totp), time: 1000))
            ])
        state.oath.dialog = nil
        _ = update(&state, .keyPress(.char("d")))
        #expect(state.oath.dialog?.form.isConfirmation == true)
        #expect(update(&state, .keyPress(.char("n"))).isEmpty)
        #expect(state.oath.dialog == nil)
        // Enter is No; so is a y that came with the d (a burst); a deliberate y deletes.
        _ = update(&state, .keyPress(.char("d")))
        #expect(update(&state, .keyPress(.enter)).isEmpty && state.oath.dialog == nil)
        _ = update(&state, .keyPress(.char("d")))
        #expect(update(&state, .keyPress(.char("y"))).isEmpty && state.oath.dialog != nil)
        #expect(
            Fixture.later(.char("y"), into: &state) == [
                .oath(.delete(Fixture.reader, Fixture.credential("Ex:bob"), time: 1001))
            ])
    }

    @Test func removingThePasswordAsksFirst() {
        var state = Fixture.loaded([])
        state.oath.hasPassword = true
        _ = update(&state, .keyPress(.char("P")))
        _ = Fixture.type("old", into: &state)
        for _ in 0..<2 { #expect(update(&state, .keyPress(.enter)).isEmpty) }
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.oath.dialog?.form.confirming?.question == UIText("oath.password.removeQuestion"))
        #expect(
            Fixture.later(.char("y"), into: &state) == [
                .oath(.setPassword(Fixture.reader, current: "old", new: "", time: 1001))
            ])
    }

    @Test func tabMovesBetweenTheFieldsOfADialog() {
        var state = Fixture.loaded([])
        _ = update(&state, .keyPress(.char("a")))
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .oath && state.oath.dialog?.form.focus == 1)
        _ = update(&state, .keyPress(.backTab))
        #expect(state.tab == .oath && state.oath.dialog?.form.focus == 0)
    }

    @Test func renameIsRefusedBeforeFirmware53() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        _ = update(
            &state,
            .oath(
                .opened(
                    keyID: Fixture.reader.id,
                    OATHSnapshot(
                        deviceID: "d", version: Version(5, 2, 4), hasPassword: false,
                        entries: [Fixture.entry("Ex:bob", code: "1", from: 990)]))))
        _ = update(&state, .keyPress(.char("r")))
        #expect(state.oath.dialog == nil)
        #expect(state.status?.text.key == "oath.renameUnsupported")
    }

    @Test func passwordChangeNeedsMatchingConfirmation() {
        var state = Fixture.loaded([])
        state.oath.hasPassword = true
        _ = update(&state, .keyPress(.char("P")))
        #expect(state.oath.dialog?.form.fields.count == 3)
        _ = Fixture.type("old", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("new1", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("new2", into: &state)
        #expect(state.oath.dialog?.form.problem == UIText("oath.password.mismatch"))
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        _ = update(&state, .keyPress(.backspace))
        _ = Fixture.type("1", into: &state)
        #expect(
            update(&state, .keyPress(.enter)) == [
                .oath(.setPassword(Fixture.reader, current: "old", new: "new1", time: 1000))
            ])
    }

    @Test func keyPulledOutMidOperationSaysSoAndClosesTheDialog() {
        var state = Fixture.loaded([Fixture.entry("Ex:bob", code: "1", from: 990)])
        _ = update(&state, .keyPress(.char("d")))
        _ = Fixture.later(.char("y"), into: &state)
        _ = update(
            &state,
            .oath(
                .failed(
                    keyID: Fixture.reader.id,
                    OATHFailure(operation: .delete, message: .literal("removed"), keyGone: true))))
        #expect(state.oath.dialog == nil)
        #expect(state.status?.text.key == "status.keyGoneMidOperation")
        #expect(state.oath.accounts.count == 1)
    }
}
