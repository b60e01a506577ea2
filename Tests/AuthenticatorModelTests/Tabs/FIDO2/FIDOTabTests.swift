// Over 500 lines on purpose: the tab's update suite and its work suite against the virtual key share FIDOFixture
// and the test backend; each suite is one topic.
import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// Builders for the FIDO2 tab's states and the answers the runner would post.
enum FIDOFixture {
    static let d = Fixture.reader

    static func info(
        pinSet: Bool? = false, retries: Int? = 8, minimum: Int = 4, credentialManagement: Bool = true,
        powerCycle: Bool = false
    ) -> FIDOInfo {
        FIDOInfo(
            versions: ["U2F_V2", "FIDO_2_0", "FIDO_2_1"], extensions: ["credProtect", "hmac-secret"],
            aaguid: "ee882879-721c-4913-9775-3dfcce97072a",
            options: ["rk": true, "up": true, "clientPin": pinSet == true, "credMgmt": credentialManagement],
            pinSet: pinSet, retries: retries, powerCycleNeeded: powerCycle, minPINLength: minimum,
            remainingCredentials: 25, credentialManagement: credentialManagement, firmware: "5.7.2")
    }

    /// The FIDO2 tab opened on `d`, its information read.
    static func opened(_ info: FIDOInfo = info(), virtual: Bool = false) -> AppState {
        var state = AppState(now: 1000, virtualMode: virtual)
        _ = update(&state, .keyEvent(.keyArrived(d)))
        _ = update(&state, .keyPress(.char("3")))
        _ = update(&state, .fido(.loaded(keyID: d.id, info)))
        state.status = nil
        return state
    }

    static func credential(_ rp: String, _ user: String, _ id: UInt8) -> FIDOCredential {
        FIDOCredential(rpID: rp, rpName: rp, userName: user, credentialID: [id, 0xA0, 0xB1, 0xC2])
    }

    static func press(_ keys: KeyPress..., into state: inout AppState) -> [Command] {
        keys.flatMap { update(&state, .keyPress($0)) }
    }

    /// Opens a confirmation with `opener`, and a second later answers it yes.
    static func confirm(_ opener: KeyPress, into state: inout AppState) -> [Command] {
        _ = update(&state, .keyPress(opener))
        state.now += 1
        return update(&state, .keyPress(.char("y")))
    }

    static func failed(_ operation: FIDOOperation, _ reason: FIDOFailureReason) -> Msg {
        .fido(.failed(keyID: d.id, FIDOFailure(operation, reason)))
    }
}

@Suite("Model: FIDO2 tab")
struct FIDOTabUpdateTests {
    typealias F = FIDOFixture

    @Test func openingTheTabReadsTheKeyAndTheAnswerShowsIt() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(F.d)))
        #expect(state.fido.phase == .loading)
        let commands = update(&state, .keyPress(.char("3")))
        #expect(commands == [.fido(.load(F.d))])
        #expect(state.tab == .fido && state.fido.busy == FIDOBusy(.load))
        _ = update(&state, .fido(.loaded(keyID: F.d.id, F.info())))
        #expect(state.fido.phase == .ready && state.fido.busy == nil && state.fido.info == F.info())
        // An answer for another key is not this tab's business.
        _ = update(&state, .fido(.loaded(keyID: "elsewhere", F.info(pinSet: true))))
        #expect(state.fido.info?.pinSet == false)
        // r reads again; without a key the tab says so.
        #expect(update(&state, .keyPress(.char("r"))) == [.fido(.load(F.d))])
        var empty = AppState(now: 1)
        #expect(update(&empty, .keyPress(.char("3"))).isEmpty)
        #expect(empty.fido.phase == .noKey)
    }

    @Test func loadFailureSaysWhy() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(F.d)))
        _ = update(&state, .keyPress(.char("3")))
        _ = update(&state, F.failed(.load, .notAvailable))
        #expect(state.fido.phase == .unavailable(UIText("fido.notAvailable")))
        #expect(F.press(.char("s"), into: &state).isEmpty && state.fido.dialog == nil)
    }

    @Test func setPINRulesAreCheckedAsYouTypeAndThePINLeavesTheStateWithTheCommand() throws {
        var state = F.opened()
        _ = update(&state, .keyPress(.char("s")))
        let dialog = try #require(state.fido.dialog)
        #expect(dialog.kind == .setPIN && dialog.form.fields.count == 2)
        #expect(dialog.form.fields.allSatisfy { $0.input.secret })
        #expect(state.textFocused)
        // Too short, said at once, with the minimum and the count so far.
        _ = Fixture.type("12", into: &state)
        #expect(
            state.fido.dialog?.form.problem == UIText(ErrorKind.pinTooShort.textKey, ["minimum": "4", "count": "2"]))
        _ = Fixture.type("3Zq", into: &state)
        #expect(state.fido.dialog?.form.problem == nil)
        // Enter moves to the confirmation; a wrong character there shows at once.
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.fido.dialog?.form.focus == 1)
        _ = Fixture.type("9", into: &state)
        #expect(state.fido.dialog?.form.problem == UIText("fido.pin.mismatch"))
        _ = update(&state, .keyPress(.backspace))
        #expect(state.fido.dialog?.form.problem == nil)
        _ = Fixture.type("123Zq", into: &state)
        let commands = update(&state, .keyPress(.enter))
        #expect(commands == [.fido(.setPIN(F.d, new: "123Zq"))])
        #expect(state.fido.busy == FIDOBusy(.setPIN))
        let busy = try #require(state.fido.dialog)
        #expect(busy.form.busy && busy.form.fields.allSatisfy { $0.input.text.isEmpty })
        #expect(!String(describing: state).contains("123Zq"))
        // The key's answer closes the dialog.
        _ = update(&state, .fido(.pinSet(keyID: F.d.id, F.info(pinSet: true), changed: false)))
        #expect(state.fido.dialog == nil && state.fido.busy == nil)
        #expect(state.fido.info?.pinSet == true)
        #expect(state.status?.text == UIText("fido.pinSetDone") && state.status?.kind == .success)
    }

    @Test func setPINRefusesShortAndDifferingPINsOnSubmit() {
        var state = F.opened(F.info(minimum: 6))
        _ = update(&state, .keyPress(.char("s")))
        _ = Fixture.type("1234", into: &state)
        #expect(
            state.fido.dialog?.form.problem == UIText(ErrorKind.pinTooShort.textKey, ["minimum": "6", "count": "4"]))
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("1234", into: &state)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(
            state.fido.dialog?.form.problem == UIText(ErrorKind.pinTooShort.textKey, ["minimum": "6", "count": "4"]))
        #expect(state.fido.busy == nil)
        // Long enough, but the two differ.
        _ = update(&state, .keyPress(.up))
        _ = Fixture.type("56", into: &state)
        _ = update(&state, .keyPress(.enter))
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.fido.dialog?.form.problem == UIText("fido.pin.mismatch"))
    }

    @Test func typingInADialogIsTextNotBindings() {
        var state = F.opened()
        _ = update(&state, .keyPress(.char("s")))
        let commands = Fixture.type("1q?3R", into: &state)
        #expect(commands.isEmpty)
        #expect(state.tab == .fido && !state.quitting && !state.showHelp)
        #expect(state.fido.dialog?.form[PINField.new] == "1q?3R")
    }

    @Test func escCancelsADialogAndWipesWhatWasTyped() {
        var state = F.opened(F.info(pinSet: true))
        _ = update(&state, .keyPress(.char("c")))
        _ = Fixture.type("Zx9Qv1", into: &state)
        #expect(String(describing: state).contains("Zx9Qv1"))
        #expect(update(&state, .keyPress(.escape)).isEmpty)
        #expect(state.fido.dialog == nil && state.fido.busy == nil)
        #expect(!String(describing: state).contains("Zx9Qv1"))
    }

    @Test func actionsThatDoNotFitThePINStateSaySo() {
        var withPIN = F.opened(F.info(pinSet: true))
        _ = update(&withPIN, .keyPress(.char("s")))
        #expect(withPIN.fido.dialog == nil && withPIN.status?.text == UIText("fido.pinAlreadySet"))
        var without = F.opened()
        for key in ["c", "v"] {
            without.status = nil
            _ = update(&without, .keyPress(.char(Character(key))))
            #expect(without.fido.dialog == nil && without.status?.text == UIText("fido.noPIN"))
        }
        _ = update(&without, .keyPress(.char("l")))
        #expect(without.status?.text == UIText("fido.listNeedsPIN"))
        var noPIN = F.opened(F.info(pinSet: nil, retries: nil))
        _ = update(&noPIN, .keyPress(.char("s")))
        #expect(noPIN.status?.text == UIText("fido.noPINSupport"))
        var noCredMgmt = F.opened(F.info(pinSet: true, credentialManagement: false))
        _ = update(&noCredMgmt, .keyPress(.char("l")))
        #expect(noCredMgmt.status?.text == UIText("fido.noCredentialManagement"))
    }

    @Test func changePINAsksTheCurrentPINAndTheNewOneTwice() throws {
        var state = F.opened(F.info(pinSet: true))
        _ = update(&state, .keyPress(.char("c")))
        let dialog = try #require(state.fido.dialog)
        #expect(dialog.kind == .changePIN && dialog.form.fields.count == 3)
        // Submitting with the current PIN empty is refused.
        _ = F.press(.enter, .enter, .enter, into: &state)
        #expect(state.fido.dialog?.form.problem == UIText("fido.pin.currentEmpty"))
        state.fido.dialog = pinDialog(.changePIN, state.fido.info)
        // The new PIN equal to the current one is refused too.
        _ = Fixture.type("old-pin", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("old-pin", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("old-pin", into: &state)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.fido.dialog?.form.problem == UIText("fido.pin.same"))
        state.fido.dialog = pinDialog(.changePIN, state.fido.info)
        _ = Fixture.type("old-pin", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("new-pin", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("new-pin", into: &state)
        #expect(update(&state, .keyPress(.enter)) == [.fido(.changePIN(F.d, current: "old-pin", new: "new-pin"))])
        _ = update(&state, .fido(.pinSet(keyID: F.d.id, F.info(pinSet: true), changed: true)))
        #expect(state.fido.dialog == nil && state.status?.text == UIText("fido.pinChanged"))
    }

    @Test func wrongCurrentPINKeepsTheDialogAndShowsTheRetriesLeft() throws {
        var state = F.opened(F.info(pinSet: true))
        _ = update(&state, .keyPress(.char("c")))
        _ = Fixture.type("wrong", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("new-pin", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("new-pin", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, F.failed(.changePIN, .wrongPIN(retriesLeft: 5)))
        let dialog = try #require(state.fido.dialog)
        #expect(dialog.form.problem == UIText("fido.wrongCurrentPIN", ["retries": "5"]))
        #expect(!dialog.form.busy && dialog.form.focus == 0)
        #expect(dialog.form.fields.allSatisfy { $0.input.text.isEmpty })
        #expect(state.fido.info?.retries == 5 && state.fido.busy == nil)
        // The key's rules for the new PIN put the cursor on the new PIN.
        _ = Fixture.type("right", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("aaaa", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("aaaa", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, F.failed(.changePIN, .policyViolation))
        #expect(state.fido.dialog?.form.problem == UIText("fido.policyViolation"))
        #expect(state.fido.dialog?.form.focus == 1)
    }

    @Test func wrongPINOnVerifyShowsTheRetriesLeft() throws {
        var state = F.opened(F.info(pinSet: true))
        _ = update(&state, .keyPress(.char("v")))
        #expect(state.fido.dialog?.kind == .verifyPIN(thenList: false))
        // An empty PIN is refused before the key is asked.
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.fido.dialog?.form.problem == UIText("fido.pin.empty"))
        _ = Fixture.type("0000", into: &state)
        #expect(update(&state, .keyPress(.enter)) == [.fido(.verifyPIN(F.d, pin: "0000", thenList: false))])
        _ = update(&state, F.failed(.verifyPIN, .wrongPIN(retriesLeft: 7)))
        #expect(state.fido.dialog?.form.problem == UIText("fido.wrongPIN", ["retries": "7"]))
        #expect(state.fido.info?.retries == 7)
        _ = Fixture.type("123456", into: &state)
        _ = update(&state, .keyPress(.enter))
        var after = F.info(pinSet: true)
        after.retries = 8
        _ = update(&state, .fido(.verified(keyID: F.d.id, after, credentials: nil)))
        #expect(state.fido.dialog == nil && state.fido.hasToken)
        #expect(state.status?.text == UIText("fido.pinCorrect", ["retries": "8"]))
    }

    @Test func blockedPINsCloseTheDialogAndLeaveAnAlert() {
        var state = F.opened(F.info(pinSet: true))
        _ = update(&state, .keyPress(.char("v")))
        _ = Fixture.type("0000", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, F.failed(.verifyPIN, .pinAuthBlocked))
        #expect(state.fido.dialog == nil && state.fido.alert == UIText("fido.alert.reinsert"))
        #expect(state.status?.kind == .error)
        _ = update(&state, .keyPress(.char("v")))
        _ = Fixture.type("0000", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, F.failed(.verifyPIN, .pinBlocked))
        #expect(state.fido.alert == UIText("fido.alert.blocked") && state.fido.info?.retries == 0)
    }

    @Test func keyPulledOutMidOperationSaysSoAndDropsTheDialog() {
        var state = F.opened(F.info(pinSet: true))
        _ = update(&state, .keyPress(.char("v")))
        _ = Fixture.type("123456", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, F.failed(.verifyPIN, .keyGone))
        #expect(state.fido.dialog == nil && state.fido.busy == nil)
        #expect(
            state.status
                == StatusMessage(UIText("status.keyGoneMidOperation"), kind: .error, subject: .operationCutShort))
        // The monitor's word that follows does not replace what the user must know of the operation.
        _ = update(&state, .keyEvent(.keyLeft(id: F.d.id)))
        #expect(state.status?.text == UIText("status.keyGoneMidOperation"))
        // The monitor's word may come first: the tab forgets the key, and the late answer changes nothing.
        var other = F.opened(F.info(pinSet: true))
        _ = update(&other, .keyPress(.char("v")))
        _ = Fixture.type("123456", into: &other)
        _ = update(&other, .keyPress(.enter))
        _ = update(&other, .keyEvent(.keyLeft(id: F.d.id)))
        #expect(
            other.fido.phase == .noKey && other.fido.dialog == nil && other.fido.busy == nil && other.fido.info == nil)
        let removed = other.status
        _ = update(&other, F.failed(.verifyPIN, .keyGone))
        #expect(other.status == removed)
        // Back again: the tab reads it afresh.
        #expect(update(&other, .keyEvent(.keyArrived(F.d))).contains(.fido(.load(F.d))))
    }

    @Test func escDuringACommandCancelsIt() {
        var state = F.opened(F.info(pinSet: true))
        _ = update(&state, .keyPress(.char("v")))
        _ = Fixture.type("123456", into: &state)
        _ = update(&state, .keyPress(.enter))
        #expect(update(&state, .keyPress(.escape)) == [.fido(.cancel)])
        #expect(state.fido.dialog == nil)
        _ = update(&state, F.failed(.verifyPIN, .cancelled))
        #expect(state.fido.busy == nil && state.status?.text == UIText("fido.cancelled"))
    }

    @Test func fingerprintsOfTheKeyAreKeptUntilItLeaves() {
        var info = F.info(pinSet: true)
        info.bioEnrollment = true
        var state = F.opened(info)
        #expect(state.fido.fingerprints == nil)
        let thumb = FIDOFingerprint(templateID: [1, 2], name: "thumb")
        #expect(update(&state, .fido(.fingerprints(keyID: "another key", [thumb]))).isEmpty)
        #expect(state.fido.fingerprints == nil)
        #expect(update(&state, .fido(.fingerprints(keyID: F.d.id, [thumb]))).isEmpty)
        #expect(state.fido.fingerprints == [thumb])
        _ = update(&state, .keyEvent(.keyLeft(id: F.d.id)))
        #expect(state.fido.fingerprints == nil)
    }

    @Test func credentialsAreListedAfterThePINSortedByRelyingPartyAndDeletedAfterAsking() throws {
        var state = F.opened(F.info(pinSet: true))
        _ = update(&state, .keyPress(.char("l")))
        #expect(state.fido.dialog?.kind == .verifyPIN(thenList: true))
        _ = Fixture.type("123456", into: &state)
        #expect(update(&state, .keyPress(.enter)) == [.fido(.verifyPIN(F.d, pin: "123456", thenList: true))])
        let bob = F.credential("b.example", "bob", 1), alice = F.credential("a.example", "alice", 2),
            zed = F.credential("a.example", "zed", 3)
        _ = update(&state, .fido(.verified(keyID: F.d.id, F.info(pinSet: true), credentials: [bob, zed, alice])))
        #expect(state.fido.showCredentials && state.fido.hasToken && state.fido.dialog == nil)
        #expect(state.fido.sortedCredentials == [alice, zed, bob])
        _ = update(&state, .keyPress(.char("j")))
        #expect(state.fido.selected == zed)
        // d asks first; n keeps it.
        _ = update(&state, .keyPress(.char("d")))
        let confirm = try #require(state.fido.dialog)
        #expect(confirm.kind == .deleteCredential(id: zed.id) && confirm.form.isConfirmation)
        #expect(confirm.form.title == UIText("fido.delete.title", ["user": "zed", "rp": "a.example"]))
        #expect(update(&state, .keyPress(.char("n"))).isEmpty)
        #expect(state.fido.dialog == nil && state.fido.credentials?.count == 3)
        #expect(F.confirm(.char("d"), into: &state) == [.fido(.deleteCredential(F.d, credentialID: zed.credentialID))])
        #expect(state.fido.busy == FIDOBusy(.delete) && state.fido.dialog == nil)
        _ = update(&state, .fido(.deleted(keyID: F.d.id, zed, remaining: [alice, bob], F.info(pinSet: true))))
        #expect(state.fido.sortedCredentials == [alice, bob] && state.fido.busy == nil)
        #expect(state.status?.text == UIText("fido.deleted", ["user": "zed", "rp": "a.example"]))
        // l (or Esc) goes back; with the token held, l lists again without asking.
        _ = update(&state, .keyPress(.escape))
        #expect(!state.fido.showCredentials)
        #expect(update(&state, .keyPress(.char("l"))) == [.fido(.listCredentials(F.d))])
        #expect(state.fido.dialog == nil)
    }

    @Test func anExpiredTokenAsksForThePINAgain() {
        var state = F.opened(F.info(pinSet: true))
        state.fido.hasToken = true
        #expect(update(&state, .keyPress(.char("l"))) == [.fido(.listCredentials(F.d))])
        _ = update(&state, F.failed(.list, .tokenInvalid))
        #expect(!state.fido.hasToken)
        #expect(state.fido.dialog?.kind == .verifyPIN(thenList: true))
        #expect(state.fido.dialog?.form.problem == UIText("fido.tokenInvalid"))
    }

    @Test func resetWarnsWhatIsLostThenWaitsForTheTouchWhichEscCancels() throws {
        var state = F.opened(F.info(pinSet: true), virtual: true)
        _ = update(&state, .keyPress(.char("R")))
        let warning = try #require(state.fido.dialog)
        #expect(warning.kind == .reset && warning.form.isConfirmation && warning.form.note == UIText("fido.reset.note"))
        #expect(update(&state, .keyPress(.char("n"))).isEmpty && state.fido.dialog == nil && state.fido.reset == nil)
        // Enter is No, the default: nothing is reset.
        _ = update(&state, .keyPress(.char("R")))
        #expect(update(&state, .keyPress(.enter)).isEmpty && state.fido.dialog == nil && state.fido.reset == nil)
        // A y in the same burst as R (typeahead, a paste without bracketing) answers nothing.
        _ = update(&state, .keyPress(.char("R")))
        #expect(update(&state, .keyPress(.char("y"))).isEmpty && state.fido.dialog != nil)
        state.now += 0.03
        #expect(update(&state, .keyPress(.char("y"))).isEmpty && state.fido.dialog != nil)
        // A deliberate y, after the question was on screen, resets.
        state.now += 0.5
        #expect(update(&state, .keyPress(.char("y"))) == [.fido(.reset(F.d))])
        #expect(state.fido.reset == .sending(keyID: F.d.id) && state.fido.busy == FIDOBusy(.reset))
        _ = update(&state, .fido(.touch(keyID: F.d.id, waiting: true)))
        #expect(state.fido.busy == FIDOBusy(.reset, touch: true))
        // Other keys do nothing while the key waits; Esc cancels.
        #expect(update(&state, .keyPress(.char("s"))).isEmpty)
        #expect(update(&state, .keyPress(.escape)) == [.fido(.cancel)])
        _ = update(&state, F.failed(.reset, .cancelled))
        #expect(state.fido.reset == nil && state.fido.busy == nil)
        #expect(state.status?.text == UIText("fido.resetCancelled") && state.status?.kind == .warning)
        // Again, touched this time.
        _ = F.confirm(.char("R"), into: &state)
        _ = update(&state, .fido(.touch(keyID: F.d.id, waiting: true)))
        _ = update(&state, .fido(.resetDone(keyID: F.d.id, F.info(pinSet: false))))
        #expect(state.fido.reset == nil && state.fido.busy == nil && state.fido.info?.pinSet == false)
        #expect(state.status?.text == UIText("fido.resetDone"))
    }

    @Test func aPasteOnTheTabNeverActsAndOnlyAPINFieldTakesIt() {
        var state = F.opened(F.info(pinSet: true), virtual: true)
        // "Ry" pasted: no dialog, no reset, a word in the status line.
        #expect(update(&state, .paste("Ry")).isEmpty)
        #expect(state.fido.dialog == nil && state.fido.reset == nil && state.fido.busy == nil)
        #expect(state.status?.text == UIText("status.pasteIgnored"))
        // Into the verify dialog's PIN field it goes as text (a password manager's paste).
        _ = update(&state, .keyPress(.char("v")))
        #expect(update(&state, .paste("1234\n")).isEmpty)
        #expect(state.fido.dialog?.form[PINField.pin] == "1234")
        // A confirmation takes no paste.
        state.fido.dialog = nil
        _ = update(&state, .keyPress(.char("R")))
        state.now += 1
        #expect(update(&state, .paste("y")).isEmpty && state.fido.dialog?.kind == .reset)
    }

    @Test func resetOfTheVirtualKeyOutsideItsWindowExplainsWhy() {
        var state = F.opened(F.info(pinSet: true), virtual: true)
        _ = F.confirm(.char("R"), into: &state)
        _ = update(&state, F.failed(.reset, .notAllowed))
        #expect(state.fido.reset == nil && state.status?.text == UIText("fido.notAllowedVirtual"))
    }

    @Test func resetOfARealKeyGuidesThroughRemovalAndReinsertion() {
        var state = F.opened(F.info(pinSet: true))
        _ = F.confirm(.char("R"), into: &state)
        _ = update(&state, F.failed(.reset, .notAllowed))
        #expect(state.fido.reset == .removeKey(F.d))
        _ = update(&state, .keyEvent(.keyLeft(id: F.d.id)))
        #expect(state.fido.reset == .insertKey(F.d))
        // Inserted again: the reset goes first, before the probe and the OATH tab read the key.
        let commands = update(&state, .keyEvent(.keyArrived(F.d)))
        #expect(commands.first == .fido(.reset(F.d)))
        #expect(!commands.contains(.fido(.load(F.d))))
        #expect(state.fido.reset == .sending(keyID: F.d.id) && state.fido.busy == FIDOBusy(.reset))
        _ = update(&state, .fido(.touch(keyID: F.d.id, waiting: true)))
        #expect(state.fido.busy?.touch == true)
        _ = update(&state, .fido(.resetDone(keyID: F.d.id, F.info(pinSet: false))))
        #expect(state.fido.reset == nil && state.fido.phase == .ready && state.status?.text == UIText("fido.resetDone"))
    }

    @Test func escWhileWaitingForTheKeyToBeReinsertedCancelsTheReset() {
        var state = F.opened(F.info(pinSet: true))
        _ = F.confirm(.char("R"), into: &state)
        _ = update(&state, F.failed(.reset, .notAllowed))
        _ = update(&state, .keyEvent(.keyLeft(id: F.d.id)))
        #expect(update(&state, .keyPress(.escape)).isEmpty)
        #expect(state.fido.reset == nil && state.status?.text == UIText("fido.resetCancelled"))
        #expect(!update(&state, .keyEvent(.keyArrived(F.d))).contains(.fido(.reset(F.d))))
    }

    /// The rules themselves are tested once, in KeyKit (PINRules); here, how the dialog says each one.
    @Test func eachBrokenPINRuleHasItsText() {
        #expect(fidoPINProblem("1234", minimum: 4) == nil)
        #expect(
            fidoPINProblem("123", minimum: 4) == UIText(ErrorKind.pinTooShort.textKey, ["minimum": "4", "count": "3"]))
        #expect(fidoPINProblem("ab\0cd", minimum: 4) == UIText(ErrorKind.pinHasNUL.textKey))
        #expect(
            fidoPINProblem(String(repeating: "ä", count: 32), minimum: 4)
                == UIText(ErrorKind.pinTooLong.textKey, ["bytes": "64"]))
    }

    @Test func failureTextsExplainTheKeysAnswer() {
        #expect(
            fidoFailureText(.wrongPIN(retriesLeft: 3), operation: .verifyPIN)
                == UIText("fido.wrongPIN", ["retries": "3"]))
        #expect(
            fidoFailureText(.wrongPIN(retriesLeft: 3), operation: .changePIN)
                == UIText("fido.wrongCurrentPIN", ["retries": "3"]))
        #expect(fidoFailureText(.pinBlocked, operation: .verifyPIN) == UIText("fido.alert.blocked"))
        #expect(fidoFailureText(.policyViolation, operation: .setPIN) == UIText("fido.policyViolation"))
        #expect(fidoFailureText(.timeout, operation: .reset) == UIText("fido.resetTimeout"))
        #expect(
            FIDOTabWork.reason(CTAPError(CTAPError.pinInvalid, retriesLeft: 6), .verifyPIN) == .wrongPIN(retriesLeft: 6)
        )
        #expect(FIDOTabWork.reason(CTAPError(CTAPError.pinAuthBlocked), .verifyPIN) == .pinAuthBlocked)
        #expect(FIDOTabWork.reason(CTAPError(CTAPError.keepaliveCancel), .reset) == .cancelled)
        #expect(FIDOTabWork.reason(SmartCardError.cardRemoved, .setPIN) == .keyGone)
    }
}

// MARK: - The work, against the in-process virtual key

/// The virtual key in process, with a simulated touch; `unplug()` makes the key vanish, also from
/// connections already open (as a key pulled out in the middle of a command).
final class FIDOTestBackend: KeyBackend, @unchecked Sendable {
    // @unchecked: `present` is a LockedValue; `key` is immutable.
    static let descriptor = KeyDescriptor(transport: .virtual, name: "Virtual Key")
    let key: VirtualKey
    let present = LockedValue(true)
    /// Seconds each CTAP getInfo takes to answer (0: at once), and whether one is under way now.
    let slowGetInfo: Double
    let gettingInfo = LockedValue(false)

    init(
        userPresenceDelay: Double = 0, resetWindow: Double = 10, slowGetInfo: Double = 0,
        profile: VirtualKeyProfile = .yubikey
    ) {
        key = VirtualKey(
            state: .yubiKey5NFC(), userPresenceDelay: userPresenceDelay, resetWindow: resetWindow,
            profile: profile)
        self.slowGetInfo = slowGetInfo
    }

    func unplug() { present.withLock { $0 = false } }

    func events() -> AsyncStream<KeyEvent> {
        AsyncStream { $0.yield(.keyArrived(Self.descriptor)) }
    }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        guard present.withLock({ $0 }) else { throw SmartCardError.noCard(descriptor.name) }
        return PullableConnection(VirtualKeyConnection(key: key), backend: self)
    }
}

/// A connection that fails as a removed card once its backend is unplugged.
final class PullableConnection: SmartCardConnection {
    let inner: VirtualKeyConnection
    let backend: FIDOTestBackend
    var atr: [UInt8] { inner.atr }
    var name: String { inner.name }

    init(_ inner: VirtualKeyConnection, backend: FIDOTestBackend) {
        self.inner = inner
        self.backend = backend
    }

    func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        guard backend.present.withLock({ $0 }) else { throw SmartCardError.cardRemoved }
        // NFCCTAP_MSG (80 10) carrying authenticatorGetInfo (04).
        if backend.slowGetInfo > 0, command.count > 5, command[1] == 0x10, command[4] == 1, command[5] == 0x04 {
            backend.gettingInfo.withLock { $0 = true }
            try await Task.sleep(for: .seconds(backend.slowGetInfo))
            backend.gettingInfo.withLock { $0 = false }
        }
        return try await inner.transmit(command)
    }

    func close() async { await inner.close() }
}

@Suite("FIDO2 tab work against the virtual key")
struct FIDOTabWorkTests {
    static let d = FIDOTestBackend.descriptor

    func fido(_ msg: Msg) -> FIDOTabMsg? {
        if case .fido(let m) = msg, case .touch = m { return nil }
        if case .fido(let m) = msg { return m }
        return nil
    }

    func run(_ harness: Harness, _ command: FIDOTabCommand, timeout: Double = 60) async throws -> FIDOTabMsg {
        try await harness.run(.fido(command), timeout: timeout) { fido($0) }
    }

    /// Waits, without sending anything, for a message `match` accepts among all posted so far.
    func wait<T>(_ harness: Harness, timeout: Double = 5, _ match: @escaping (Msg) -> T?) async throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = harness.messages.withLock({ $0.lazy.compactMap(match).first }) { return found }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw CancellationError()
    }

    func waitForTouch(_ harness: Harness) async throws {
        _ = try await wait(harness) { msg -> Bool? in
            if case .fido(.touch(_, waiting: true)) = msg { return true }
            return nil
        }
    }

    func info(_ harness: Harness) async throws -> FIDOInfo {
        guard case .loaded(_, let info) = try await run(harness, .load(Self.d)) else { throw CancellationError() }
        return info
    }

    /// Makes a discoverable credential with a CTAP2 session of our own (no PIN set yet, so none is needed).
    func makeCredential(_ key: VirtualKey, rp: String, user: String) async throws -> [UInt8] {
        let fido = try await PCSCFIDOConnection.open(card: VirtualKeyConnection(key: key))
        defer { Task { await fido.close() } }
        let session = try await CTAP2Session.make(connection: fido)
        let made = try await session.makeCredential(
            clientDataHash: Crypto.digest(.sha256, Array(user.utf8)),
            rp: .init(id: rp, name: rp),
            user: .init(id: Array(user.utf8), name: user, displayName: user.capitalized),
            residentKey: true)
        return made.credentialID
    }

    @Test func informationAtAGlance() async throws {
        let harness = Harness(FIDOTestBackend(), directory: temporaryDirectory())
        let info = try await info(harness)
        #expect(info.versions.contains("FIDO_2_0"))
        #expect(info.aaguid.count == 36 && info.aaguid.filter { $0 == "-" }.count == 4)
        #expect(info.pinSet == false && info.minPINLength >= 4)
        #expect(info.options["rk"] == true)
        #expect(info.remainingCredentials != nil && info.credentialManagement)
    }

    @Test func setChangeAndVerifyThePIN() async throws {
        let harness = Harness(FIDOTestBackend(), directory: temporaryDirectory())
        guard case .pinSet(_, let set, changed: false) = try await run(harness, .setPIN(Self.d, new: "first-pin"))
        else {
            Issue.record("set PIN failed"); return
        }
        #expect(set.pinSet == true && set.retries == 8)
        // Setting again is refused without asking the key.
        #expect(
            try await run(harness, .setPIN(Self.d, new: "other-pin"))
                == .failed(keyID: Self.d.id, FIDOFailure(.setPIN, .other(UIText("fido.pinAlreadySet")))))
        // A wrong PIN costs a try, and the answer says how many are left.
        #expect(
            try await run(harness, .verifyPIN(Self.d, pin: "not-it", thenList: false))
                == .failed(keyID: Self.d.id, FIDOFailure(.verifyPIN, .wrongPIN(retriesLeft: 7))))
        guard
            case .verified(_, let verified, nil) = try await run(
                harness, .verifyPIN(Self.d, pin: "first-pin", thenList: false))
        else {
            Issue.record("verify failed"); return
        }
        #expect(verified.retries == 8)
        #expect(
            try await run(harness, .changePIN(Self.d, current: "not-it", new: "second-pin"))
                == .failed(keyID: Self.d.id, FIDOFailure(.changePIN, .wrongPIN(retriesLeft: 7))))
        guard
            case .pinSet(_, _, changed: true) = try await run(
                harness, .changePIN(Self.d, current: "first-pin", new: "second-pin"))
        else {
            Issue.record("change PIN failed"); return
        }
        // The old PIN fails now, the new one works.
        #expect(
            try await run(harness, .verifyPIN(Self.d, pin: "first-pin", thenList: false))
                == .failed(keyID: Self.d.id, FIDOFailure(.verifyPIN, .wrongPIN(retriesLeft: 7))))
        guard case .verified = try await run(harness, .verifyPIN(Self.d, pin: "second-pin", thenList: false)) else {
            Issue.record("the new PIN was not accepted"); return
        }
    }

    @Test func aKeyWithASensorHasItsFingerprintsReadWithTheCredentials() async throws {
        let backend = FIDOTestBackend(profile: .yubikeyBio)
        let harness = Harness(backend, directory: temporaryDirectory())
        _ = try await run(harness, .setPIN(Self.d, new: "bio-pin1"))
        // A fingerprint enrolled with a session of our own.
        let fido = try await PCSCFIDOConnection.open(card: VirtualKeyConnection(key: backend.key))
        let s = try await CTAP2Session.make(connection: fido)
        try await s.verifyPIN("bio-pin1", permissions: [.bioEnrollment])
        var step = try await s.enrollBegin()
        while step.remaining > 0 { step = try await s.enrollCaptureNextSample(templateID: step.templateID) }
        try await s.setFingerprintName(templateID: step.templateID, name: "thumb")
        await fido.close()
        #expect(try await info(harness).bioEnrollment)
        // The fingerprints come first, then the credentials they were read with.
        let first = try await run(harness, .verifyPIN(Self.d, pin: "bio-pin1", thenList: true))
        #expect(first == .fingerprints(keyID: Self.d.id, [FIDOFingerprint(templateID: step.templateID, name: "thumb")]))
        let listed = try await wait(harness) { msg -> [FIDOCredential]? in
            if case .fido(.verified(_, _, let credentials?)) = msg { return credentials }
            return nil
        }
        #expect(listed.isEmpty)
    }

    @Test func credentialsAreListedWithTheTokenAndDeleted() async throws {
        let backend = FIDOTestBackend()
        let harness = Harness(backend, directory: temporaryDirectory())
        let aliceID = try await makeCredential(backend.key, rp: "example.org", user: "alice")
        let bobID = try await makeCredential(backend.key, rp: "example.com", user: "bob")
        _ = try await run(harness, .setPIN(Self.d, new: "cred-pin"))
        // Without a verified PIN there is no token: the tab is told to ask for the PIN.
        #expect(
            try await run(harness, .listCredentials(Self.d))
                == .failed(keyID: Self.d.id, FIDOFailure(.list, .tokenInvalid)))
        guard
            case .verified(_, let info, let listed?) = try await run(
                harness, .verifyPIN(Self.d, pin: "cred-pin", thenList: true))
        else {
            Issue.record("verify and list failed"); return
        }
        #expect(Set(listed.map(\.credentialID)) == [aliceID, bobID])
        let alice = try #require(listed.first { $0.credentialID == aliceID })
        #expect(alice.rpID == "example.org" && alice.userName == "alice" && alice.displayName == "Alice")
        // The token is held between commands: listing again needs no PIN.
        guard case .credentials(_, let again) = try await run(harness, .listCredentials(Self.d)) else {
            Issue.record("list with the held token failed"); return
        }
        #expect(again.count == 2)
        guard
            case .deleted(_, let gone, let remaining, let after) = try await run(
                harness, .deleteCredential(Self.d, credentialID: aliceID))
        else {
            Issue.record("delete failed"); return
        }
        #expect(gone.credentialID == aliceID && remaining.map(\.credentialID) == [bobID])
        #expect(after.remainingCredentials == info.remainingCredentials.map { $0 + 1 })
        // Forgetting the key drops the token.
        harness.runner.perform(.forgetKey(keyID: Self.d.id))
        #expect(
            try await run(harness, .listCredentials(Self.d))
                == .failed(keyID: Self.d.id, FIDOFailure(.list, .tokenInvalid)))
    }

    @Test func keyPulledOutMidOperationIsReportedAsGone() async throws {
        let backend = FIDOTestBackend(userPresenceDelay: 5, resetWindow: .infinity)
        let harness = Harness(backend, directory: temporaryDirectory())
        _ = try await run(harness, .setPIN(Self.d, new: "kept-pin"))
        // The reset waits for a touch; the key leaves while it waits.
        harness.runner.perform(.fido(.reset(Self.d)))
        try await waitForTouch(harness)
        backend.unplug()
        let answer = try await wait(harness, timeout: 60) { msg -> FIDOTabMsg? in
            if case .fido(.failed(_, let f)) = msg, f.operation == .reset { return .failed(keyID: Self.d.id, f) }
            return nil
        }
        #expect(answer == .failed(keyID: Self.d.id, FIDOFailure(.reset, .keyGone)))
        // Nothing half-done: back in, the PIN is still set.
        backend.present.withLock { $0 = true }
        #expect(try await info(harness).pinSet == true)
        // A command for a key that is not there says so too.
        backend.unplug()
        #expect(try await run(harness, .load(Self.d)) == .failed(keyID: Self.d.id, FIDOFailure(.load, .keyGone)))
    }

    @Test func resetWaitsForTheTouchAndCanBeCancelled() async throws {
        let backend = FIDOTestBackend(userPresenceDelay: 10, resetWindow: .infinity)
        let harness = Harness(backend, directory: temporaryDirectory())
        _ = try await run(harness, .setPIN(Self.d, new: "reset-pin"))
        harness.runner.perform(.fido(.reset(Self.d)))
        try await waitForTouch(harness)
        let start = Date()
        let cancelled = try await harness.run(.fido(.cancel), timeout: 5) { msg -> FIDOFailure? in
            if case .fido(.failed(_, let f)) = msg, f.operation == .reset { return f }
            return nil
        }
        #expect(cancelled == FIDOFailure(.reset, .cancelled))
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(try await info(harness).pinSet == true)
    }

    @Test func escBeforeTheKeyStartsWaitingStillCancels() async throws {
        // The cancel comes while the session still reads getInfo, before the reset is sent (which clears the
        // connection's cancel flag): it reaches the key at the reset's first keep-alive.
        let backend = FIDOTestBackend(userPresenceDelay: 10, resetWindow: .infinity, slowGetInfo: 0.5)
        let harness = Harness(backend, directory: temporaryDirectory())
        harness.runner.perform(.fido(.reset(Self.d)))
        let deadline = Date().addingTimeInterval(5)
        while !backend.gettingInfo.withLock({ $0 }) && Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(backend.gettingInfo.withLock { $0 })
        let start = Date()
        let answer = try await harness.run(.fido(.cancel), timeout: 8) { msg -> FIDOFailure? in
            if case .fido(.failed(_, let f)) = msg { return f }
            if case .fido(.resetDone) = msg { return FIDOFailure(.reset, .other(.literal("reset done"))) }
            return nil
        }
        #expect(answer == FIDOFailure(.reset, .cancelled))
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test func resetAfterTheTouchDeletesThePINAndCredentials() async throws {
        let backend = FIDOTestBackend(userPresenceDelay: 0.3, resetWindow: .infinity)
        let harness = Harness(backend, directory: temporaryDirectory())
        _ = try await run(harness, .setPIN(Self.d, new: "reset-pin"))
        guard case .resetDone(_, let info) = try await run(harness, .reset(Self.d)) else {
            Issue.record("reset failed"); return
        }
        #expect(info.pinSet == false)
        let touches = harness.messages.withLock { $0 }.contains {
            if case .fido(.touch(_, waiting: true)) = $0 { return true } else { return false }
        }
        #expect(touches)
    }

    @Test func resetLongAfterPowerUpIsNotAllowed() async throws {
        let harness = Harness(FIDOTestBackend(resetWindow: 0), directory: temporaryDirectory())
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await run(harness, .reset(Self.d)) == .failed(keyID: Self.d.id, FIDOFailure(.reset, .notAllowed)))
    }
}
