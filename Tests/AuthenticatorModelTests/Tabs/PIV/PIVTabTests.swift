import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel

/// Builders for the PIV tab's states and the answers the runner would post.
enum PIVFixture {
    static let d = Fixture.reader
    /// 2026-01-01 00:00:00 UTC.
    static let now = 1_767_225_600.0
    static let day = 86_400.0

    static func certificate(
        _ subject: String = "CN=ykterm-test", notAfter: Double = now + 365 * day,
        algorithm: PIV.Algorithm = .eccP256
    ) -> PIVCertificateInfo {
        PIVCertificateInfo(
            subject: subject, issuer: subject, serialHex: "0A1B2C", notBefore: now - 10 * day,
            notAfter: notAfter, keyUsage: ["digitalSignature"], alternativeNames: ["DNS:example.org"],
            fingerprint: Array(repeating: "AB", count: 32).joined(separator: ":"),
            signatureAlgorithm: "ecdsa-with-SHA256", keyAlgorithm: algorithm)
    }

    static func key(_ pin: PIV.PINPolicy = .default, touch: PIV.TouchPolicy = .never) -> PIVKeyInfo {
        PIVKeyInfo(algorithm: .eccP256, pinPolicy: pin, touchPolicy: touch, origin: .generated)
    }

    /// A YubiKey 5 with a key and certificate in 9A, a certificate without key in 9C, a key in 9E and retired 82.
    static func info(
        pinRetries: Int = 3, pukRetries: Int? = 3, slots: [PIVSlotInfo]? = nil,
        defaults: Bool = false
    ) -> PIVInfo {
        PIVInfo(
            version: "5.7.2", serial: 28_123_456, pinRetries: pinRetries, pinTotal: 3, pinDefault: defaults,
            pukRetries: pukRetries, pukTotal: 3, pukDefault: defaults, managementKey: .aes192,
            managementKeyDefault: defaults,
            slots: slots ?? [
                PIVSlotInfo(slot: .authentication, key: key(), certificate: certificate(), certificateMatchesKey: true),
                PIVSlotInfo(slot: .signature, certificate: certificate("CN=signer", notAfter: now + 5 * day)),
                PIVSlotInfo(slot: .cardAuthentication, key: key()),
                PIVSlotInfo(slot: PIV.Slot(rawValue: 0x82), key: key(.never), certificate: certificate("CN=old")),
            ])
    }

    /// The PIV tab opened on `d`, its application read.
    static func opened(_ info: PIVInfo = info()) -> AppState {
        var state = AppState(now: now)
        _ = update(&state, .keyEvent(.keyArrived(d)))
        _ = update(&state, .keyPress(.char("5")))
        _ = update(&state, .piv(.loaded(keyID: d.id, info)))
        state.status = nil
        return state
    }

    static func press(_ keys: KeyPress..., into state: inout AppState) -> [Command] {
        keys.flatMap { update(&state, .keyPress($0)) }
    }

    /// Types each field's text and presses Enter after each (the last Enter submits).
    static func submit(_ fields: String..., into state: inout AppState) -> [Command] {
        var commands = [Command]()
        for text in fields {
            commands += Fixture.type(text, into: &state)
            commands += update(&state, .keyPress(.enter))
        }
        return commands
    }

    static func failed(_ operation: PIVOperation, _ reason: PIVFailureReason) -> Msg {
        .piv(.failed(keyID: d.id, PIVFailure(operation, reason)))
    }
}

@Suite("Model: PIV tab")
struct PIVTabUpdateTests {
    typealias F = PIVFixture

    @Test func tabFiveReadsTheKeyAndTheAnswerShowsIt() {
        var state = AppState(now: F.now)
        _ = update(&state, .keyEvent(.keyArrived(F.d)))
        #expect(state.piv.phase == .loading)
        let commands = update(&state, .keyPress(.char("5")))
        #expect(state.tab == .piv && commands == [.piv(.load(F.d))])
        #expect(state.piv.busy == PIVBusy(.load))
        _ = update(&state, .piv(.loaded(keyID: F.d.id, F.info())))
        #expect(state.piv.phase == .ready && state.piv.busy == nil && state.piv.info == F.info())
        // Another key's answer is not this tab's business; r reads again.
        _ = update(&state, .piv(.loaded(keyID: "elsewhere", F.info(pinRetries: 1))))
        #expect(state.piv.info?.pinRetries == 3)
        #expect(update(&state, .keyPress(.char("r"))) == [.piv(.load(F.d))])
        // Without a key the tab says so.
        var empty = AppState(now: 1)
        #expect(update(&empty, .keyPress(.char("5"))).isEmpty && empty.piv.phase == .noKey)
    }

    @Test func tabCyclingReachesPIVAndTheDigitIsReserved() {
        var state = AppState(now: F.now)
        _ = update(&state, .keyPress(.backTab))
        _ = update(&state, .keyPress(.backTab))
        _ = update(&state, .keyPress(.backTab))
        #expect(state.tab == .piv)
        _ = update(&state, .keyPress(.tab))
        _ = update(&state, .keyPress(.tab))
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .oath)
        #expect(throws: KeyBindings.BindingError.reserved("5")) { try KeyBindings(overrides: [.copy: "5"]) }
        #expect(helpEntries(state).contains { $0.keys == "1-7" })
    }

    @Test func aKeyWithoutASmartCardInterfaceHasNoPIV() {
        var state = AppState(now: F.now)
        let hid = KeyDescriptor(
            transport: .hid(path: "/dev/hidraw4"), name: "Security Key",
            fidoHID: HIDDeviceInfo(path: "/dev/hidraw4", vendorID: 0x1050, productID: 0x0120))
        _ = update(&state, .keyEvent(.keyArrived(hid)))
        #expect(update(&state, .keyPress(.char("5"))).isEmpty)
        guard case .unavailable(let why) = state.piv.phase else { Issue.record("\(state.piv.phase)"); return }
        #expect(why.key == "view.notOnKey.ccid" && why.arguments["application"] == "PIV")
    }

    @Test func rowsShowTheFourSlotsAlwaysThenTheRetiredOnesThatHoldSomething() {
        let rows = F.info().rows
        #expect(rows.map(\.slot.description) == ["9A", "9C", "9D", "9E", "82"])
        #expect(rows[2].isEmpty && !rows[1].isEmpty && rows[1].key == nil)
        #expect(rows[1].algorithm == .eccP256)
        #expect(PIVInfo(version: "5.7.2", pinRetries: 3).rows.count == 4)
    }

    @Test func movingOpeningDetailsAndBack() {
        var state = F.opened()
        _ = F.press(.down, .char("j"), into: &state)
        #expect(state.piv.selected?.slot == .keyManagement)
        // An empty slot has nothing to show.
        _ = F.press(.enter, into: &state)
        #expect(!state.piv.showDetails && state.status?.text == UIText("piv.slotEmpty", ["slot": "9D"]))
        _ = F.press(.char("k"), .char("k"), .enter, into: &state)
        #expect(state.piv.showDetails && state.piv.selected?.slot == .authentication)
        _ = F.press(.down, .down, into: &state)
        #expect(state.piv.detailsScroll == 2 && state.piv.selected?.slot == .authentication)
        _ = F.press(.escape, into: &state)
        #expect(!state.piv.showDetails)
        _ = F.press(.char("G"), into: &state)
        #expect(state.piv.selected?.slot == PIV.Slot(rawValue: 0x82))
        // New information keeps the cursor on its slot.
        _ = update(
            &state,
            .piv(.loaded(keyID: F.d.id, F.info(slots: [PIVSlotInfo(slot: PIV.Slot(rawValue: 0x82), key: F.key())]))))
        #expect(state.piv.selected?.slot == PIV.Slot(rawValue: 0x82))
    }

    @Test func verifyAsksThePINForTheDefaultPolicyAndThePINLeavesWithTheCommand() throws {
        var state = F.opened()
        #expect(F.press(.char("v"), into: &state).isEmpty)
        let dialog = try #require(state.piv.dialog)
        #expect(dialog.kind == .verify(.authentication) && dialog.form.fields.allSatisfy { $0.input.secret })
        #expect(state.textFocused)
        // An empty PIN is not sent.
        #expect(F.press(.enter, into: &state).isEmpty)
        #expect(state.piv.dialog?.form.problem == UIText("piv.rule.empty", ["secret": "PIN"]))
        let commands = F.submit("246813", into: &state)
        #expect(commands == [.piv(.verify(F.d, slot: .authentication, pin: "246813"))])
        #expect(state.piv.busy == PIVBusy(.verify) && state.piv.dialog?.form.busy == true)
        #expect(!String(describing: state).contains("246813"))
        // The key waits for a touch, then answers.
        _ = update(&state, .piv(.touch(keyID: F.d.id, waiting: true)))
        #expect(state.piv.busy?.touch == true)
        _ = update(&state, .piv(.verified(keyID: F.d.id, slot: .authentication, .verified(.eccP256), F.info())))
        #expect(state.piv.dialog == nil && state.piv.busy == nil)
        #expect(state.status?.text == UIText("piv.verify.verified", ["slot": "9A", "algorithm": "ECCP256"]))
        #expect(state.status?.kind == .success)
    }

    @Test func verifyWithoutThePINWhereTheSlotDoesNotWantIt() {
        var state = F.opened()
        _ = F.press(.char("j"), .char("j"), .char("j"), into: &state)
        #expect(state.piv.selected?.slot == .cardAuthentication)
        // 9E holds a key but no certificate: nothing to check with.
        #expect(F.press(.char("v"), into: &state).isEmpty)
        #expect(state.status?.text == UIText("piv.noCertificate", ["slot": "9E"]))
        // Retired 82 has the policy "never": no dialog.
        #expect(
            F.press(.char("j"), .char("v"), into: &state) == [
                .piv(.verify(F.d, slot: PIV.Slot(rawValue: 0x82), pin: nil))
            ])
        #expect(state.piv.dialog == nil && state.piv.busy == PIVBusy(.verify))
        _ = update(
            &state, .piv(.verified(keyID: F.d.id, slot: PIV.Slot(rawValue: 0x82), .mismatch(.eccP256), F.info())))
        #expect(state.status?.kind == .error && state.status?.text.key == "piv.verify.mismatch")
        // A certificate without a key cannot sign.
        _ = F.press(.home, .char("j"), .char("v"), into: &state)
        #expect(state.status?.text == UIText("piv.noKey", ["slot": "9C"]))
    }

    @Test func needsPINFollowsPolicyAndSlot() {
        #expect(PIVSignatureCheck.needsPIN(.authentication, pinPolicy: .default))
        #expect(PIVSignatureCheck.needsPIN(.signature, pinPolicy: nil))
        #expect(!PIVSignatureCheck.needsPIN(.cardAuthentication, pinPolicy: .default))
        #expect(PIVSignatureCheck.needsPIN(.cardAuthentication, pinPolicy: .once))
        #expect(!PIVSignatureCheck.needsPIN(.authentication, pinPolicy: .never))
    }

    @Test func everyOutcomeIsWorded() {
        let outcomes: [(PIVSignatureCheck.Outcome, String, StatusMessage.Kind)] = [
            (.verified(.rsa2048), "piv.verify.verified", .success),
            (.noCertificate, "piv.noCertificate", .warning),
            (.unsupportedCertificateKey, "piv.verify.unsupportedKey", .error),
            (.mismatch(.eccP384), "piv.verify.mismatch", .error),
            (.differentAlgorithm(certificate: .rsa2048, key: .eccP256), "piv.verify.differentAlgorithm", .error),
        ]
        for (outcome, key, kind) in outcomes {
            let (text, k) = pivOutcomeText(outcome, slot: .signature)
            #expect(text.key == key && k == kind && text.arguments["slot"] == "9C")
        }
        #expect(
            pivOutcomeText(.differentAlgorithm(certificate: .rsa2048, key: .eccP256), slot: .signature).0.arguments
                == ["slot": "9C", "certificate": "RSA2048", "key": "ECCP256"])
    }

    @Test func aWrongPINKeepsTheDialogAndShowsTheTriesLeftUntilItIsBlocked() {
        var state = F.opened()
        _ = F.press(.char("v"), into: &state)
        _ = F.submit("000000", into: &state)
        _ = update(&state, F.failed(.verify, .wrongPIN(retriesLeft: 2)))
        #expect(state.piv.dialog?.form.problem == UIText("piv.wrongPIN", ["retries": "2"]))
        #expect(state.piv.dialog?.form.busy == false && state.piv.dialog?.form[PIVField.pin] == "")
        #expect(state.piv.info?.pinRetries == 2 && state.piv.busy == nil)
        _ = F.submit("000001", into: &state)
        _ = update(&state, F.failed(.verify, .pinBlocked))
        #expect(state.piv.dialog == nil && state.piv.info?.pinRetries == 0)
        #expect(
            state.status?.text == UIText("piv.alert.pinBlocked") && state.piv.alert == UIText("piv.alert.pinBlocked"))
        // Blocked: v and p say so; b unblocks with the PUK.
        _ = F.press(.char("p"), into: &state)
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.alert.pinBlocked"))
        _ = F.press(.char("b"), into: &state)
        #expect(state.piv.dialog?.kind == .unblockPIN)
        let commands = F.submit("12345678", "new-pin", "new-pin", into: &state)
        #expect(commands == [.piv(.unblockPIN(F.d, puk: "12345678", new: "new-pin"))])
        _ = update(&state, .piv(.changed(keyID: F.d.id, .unblockPIN, F.info())))
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.pinUnblocked") && state.piv.alert == nil)
    }

    @Test func changePINChecksTheRulesAsTyped() {
        var state = F.opened()
        _ = F.press(.char("p"), into: &state)
        #expect(state.piv.dialog?.kind == .changePIN && state.piv.dialog?.form.fields.count == 3)
        func problem() -> UIText? { state.piv.dialog?.form.problem }
        _ = Fixture.type("123456789", into: &state)
        #expect(problem() == UIText("piv.rule.long", ["secret": "PIN", "count": "9"]))
        for _ in 0..<3 { _ = update(&state, .keyPress(.backspace)) }
        #expect(problem() == nil)
        // A short new PIN is said once the focus leaves it.
        _ = update(&state, .keyPress(.enter))
        _ = F.submit("1234", into: &state)
        #expect(state.piv.dialog?.form.focus == 2)
        #expect(problem() == UIText("piv.rule.short", ["secret": "PIN", "count": "4"]))
        _ = update(&state, .keyPress(.backTab))
        _ = Fixture.type("56", into: &state)
        #expect(problem() == nil)
        // The confirmation is compared as it is typed.
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("9", into: &state)
        #expect(problem() == UIText("piv.rule.mismatch", ["secret": "PIN"]))
        _ = update(&state, .keyPress(.backspace))
        _ = Fixture.type("123456", into: &state)
        #expect(problem() == nil)
        // The current PIN again is refused on submit.
        #expect(F.press(.enter, into: &state).isEmpty)
        #expect(problem() == UIText("piv.rule.same", ["secret": "PIN"]))
    }

    @Test func changePINAndPUKSendTheirCommandsAndSayTheOutcome() {
        var state = F.opened()
        _ = F.press(.char("p"), into: &state)
        #expect(
            F.submit("135790", "654321", "654321", into: &state) == [
                .piv(.changePIN(F.d, current: "135790", new: "654321"))
            ])
        #expect(!String(describing: state).contains("654321") && !String(describing: state).contains("135790"))
        _ = update(&state, F.failed(.changePIN, .wrongPIN(retriesLeft: 1)))
        #expect(state.piv.dialog?.form.problem == UIText("piv.wrongCurrentPIN", ["retries": "1"]))
        #expect(state.piv.dialog?.form.focus == 0)
        _ = F.submit("111111", "654321", "654321", into: &state)
        _ = update(&state, .piv(.changed(keyID: F.d.id, .changePIN, F.info())))
        #expect(state.status?.text == UIText("piv.pinChanged") && state.piv.dialog == nil)
        _ = F.press(.char("u"), into: &state)
        #expect(state.piv.dialog?.kind == .changePUK)
        #expect(
            F.submit("12345678", "87654321", "87654321", into: &state)
                == [.piv(.changePUK(F.d, current: "12345678", new: "87654321"))])
        _ = update(&state, F.failed(.changePUK, .wrongPUK(retriesLeft: 2)))
        #expect(state.piv.dialog?.form.problem == UIText("piv.wrongCurrentPUK", ["retries": "2"]))
        #expect(state.piv.info?.pukRetries == 2)
        // Esc closes the dialog with its secrets.
        _ = F.press(.escape, into: &state)
        #expect(state.piv.dialog == nil)
    }

    @Test func aPINTooSimpleForTheKeyKeepsTheDialogToTypeAgain() {
        var state = F.opened()
        _ = F.press(.char("p"), into: &state)
        _ = F.submit("123456", "111111", "111111", into: &state)
        let reason = PIVTabWork.reason(PIVError.tooSimple(puk: false), .changePIN)
        #expect(reason == .tooSimple(ErrorExplanation(PIVError.tooSimple(puk: false)).text))
        _ = update(&state, F.failed(.changePIN, reason))
        #expect(state.piv.dialog?.form.problem?.key == "error.pin-too-simple")
        #expect(state.piv.dialog?.form.problem?.nested["password"]?.key == "piv.secret.pin")
        #expect(state.piv.dialog?.form.focus == 0 && state.piv.info?.pinRetries == 3)
        #expect(!String(describing: state).contains("111111"))
    }

    @Test func aBlockedPUKStopsTheUnblockAndTheChange() {
        var state = F.opened(F.info(pinRetries: 0, pukRetries: 0))
        #expect(state.piv.alert == UIText("piv.alert.bothBlocked"))
        _ = F.press(.char("b"), into: &state)
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.alert.bothBlocked"))
        _ = F.press(.char("u"), into: &state)
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.alert.pukBlocked"))
    }

    @Test func exportAsksBeforeReplacingAFile() throws {
        var state = F.opened()
        _ = F.press(.char("e"), into: &state)
        let dialog = try #require(state.piv.dialog)
        #expect(dialog.kind == .export(.authentication) && dialog.form[PIVField.path] == "piv-9a-certificate.pem")
        let commands = F.press(.enter, into: &state)
        #expect(
            commands == [.piv(.export(F.d, slot: .authentication, path: "piv-9a-certificate.pem", overwrite: false))])
        _ = update(&state, .piv(.exportExists(keyID: F.d.id, path: "piv-9a-certificate.pem")))
        #expect(
            state.piv.dialog?.form.confirming?.question
                == UIText("piv.export.overwrite", ["path": "piv-9a-certificate.pem"]))
        #expect(state.piv.busy == nil)
        // A y in the same burst is no answer; one a moment later is.
        #expect(F.press(.char("y"), into: &state).isEmpty)
        state.now += 1
        #expect(
            F.press(.char("y"), into: &state)
                == [.piv(.export(F.d, slot: .authentication, path: "piv-9a-certificate.pem", overwrite: true))])
        _ = update(&state, .piv(.exported(keyID: F.d.id, slot: .authentication, path: "piv-9a-certificate.pem")))
        #expect(state.piv.dialog == nil)
        #expect(state.status?.text == UIText("piv.exported", ["slot": "9A", "path": "piv-9a-certificate.pem"]))
        // No certificate, no export; an empty path is refused.
        _ = F.press(.char("j"), .char("j"), .char("j"), .char("e"), into: &state)
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.noCertificate", ["slot": "9E"]))
        _ = F.press(.home, .char("e"), into: &state)
        for _ in 0..<30 { _ = update(&state, .keyPress(.backspace)) }
        #expect(
            F.press(.enter, into: &state).isEmpty && state.piv.dialog?.form.problem == UIText("piv.export.pathEmpty"))
        // Closed while the key was asked: the file's existence is no question any more, and the tab is free.
        _ = Fixture.type("x.pem", into: &state)
        _ = F.press(.enter, .escape, into: &state)
        _ = update(&state, .piv(.exportExists(keyID: F.d.id, path: "x.pem")))
        #expect(state.piv.dialog == nil && state.piv.busy == nil)
    }

    @Test func failuresExplainTheKeysAnswer() {
        var state = F.opened()
        _ = F.press(.char("p"), into: &state)
        _ = F.submit("123456", "654321", "654321", into: &state)
        _ = update(&state, F.failed(.changePIN, .keyGone))
        #expect(state.piv.dialog == nil && state.status?.text == UIText("status.keyGoneMidOperation"))
        _ = F.press(.char("e"), .enter, into: &state)
        _ = update(&state, F.failed(.export, .other(UIText("error.file-unwritable", ["path": "x", "detail": "y"]))))
        #expect(state.piv.dialog?.form.problem?.key == "error.file-unwritable")
        _ = F.press(.escape, into: &state)
        // A slot that wants the PIN where the firmware did not say so: the dialog opens, saying why.
        _ = F.press(.char("G"), .char("v"), into: &state)
        _ = update(&state, F.failed(.verify, .pinRequired))
        #expect(state.piv.dialog?.kind == .verify(PIV.Slot(rawValue: 0x82)))
        #expect(state.piv.dialog?.form.problem == UIText("piv.pinRequired"))
        _ = F.press(.escape, into: &state)
        _ = update(
            &state, .piv(.failed(keyID: F.d.id, PIVFailure(.load, .notAvailable(UIText("error.application-missing"))))))
        #expect(state.piv.phase == .unavailable(UIText("error.application-missing")))
    }

    @Test func workSortsErrorsIntoReasons() {
        typealias W = PIVTabWork
        #expect(W.reason(PIVError.wrongPIN(retriesLeft: 2), .verify) == .wrongPIN(retriesLeft: 2))
        #expect(W.reason(PIVError.wrongPIN(retriesLeft: 0), .verify) == .pinBlocked)
        #expect(W.reason(PIVError.pinBlocked, .changePIN) == .pinBlocked)
        #expect(W.reason(PIVError.wrongPUK(retriesLeft: 1), .unblockPIN) == .wrongPUK(retriesLeft: 1))
        #expect(W.reason(PIVError.pukBlocked, .changePUK) == .pukBlocked)
        #expect(W.reason(PIVError.securityConditionNotSatisfied, .verify) == .pinRequired)
        #expect(W.reason(SmartCardError.noCard("r"), .load) == .keyGone)
        #expect(
            W.reason(PIVOperationError.noCertificate(.signature), .export)
                == .other(UIText("piv.noCertificate", ["slot": "9C"])))
        // The rest is worded by ErrorExplanation.
        #expect(W.reason(PIVError.noSpace, .export) == .other(ErrorExplanation(PIVError.noSpace).text))
    }

    @Test func anotherKeyStartsAfreshAndPasteGoesIntoTheDialogOnly() {
        var state = F.opened()
        #expect(!pivTabPaste(&state, "123456"))
        _ = F.press(.char("v"), into: &state)
        #expect(pivTabPaste(&state, "123456") && state.piv.dialog?.form[PIVField.pin] == "123456")
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        _ = update(&state, .keyEvent(.keyLeft(id: F.d.id)))
        #expect(state.selectedKeyID == Fixture.other.id)
        #expect(state.piv.dialog == nil && state.piv.info == nil && state.piv.keyID == Fixture.other.id)
    }

    @Test func expiryIsCountedFromTheClockOfTheState() {
        let c = F.certificate(notAfter: F.now + 45 * F.day)
        #expect(c.expiry(now: F.now) == .valid(days: 45))
        #expect(c.expiry(now: F.now + 20 * F.day) == .soon(days: 25))
        #expect(c.expiry(now: F.now + 47 * F.day) == .expired(days: 2))
        #expect(c.expiry(now: F.now - 20 * F.day) == .notYetValid)
    }

    @Test func helpNamesTheTabsKeys() {
        var state = F.opened()
        state.showHelp = true
        let entries = helpEntries(state)
        #expect(entries.first?.text == UIText("help.section.piv"))
        for key in ["v", "p", "u", "b", "e", "r"] { #expect(entries.contains { $0.keys == key }, "\(key)") }
    }
}
