import Testing
import KeyKit
@testable import AuthenticatorModel

/// Builders for the OpenPGP tab's states and the answers the runner would post.
enum OpenPGPFixture {
    static let d = Fixture.reader
    static let now = 1_767_225_600.0
    static let fingerprint: [UInt8] = Array(0..<20)

    /// A YubiKey 5 with an Ed25519 key in SIG (touch on), nothing in DEC, an RSA key in AUT (touch fixed).
    static func info(pinTries: Int = 3, resetCodeTries: Int = 0, adminPINTries: Int = 3) -> OpenPGPCardInfo {
        OpenPGPCardInfo(
            version: "5.7.2", serial: 28_123_456, pinTries: pinTries, resetCodeTries: resetCodeTries,
            adminPINTries: adminPINTries, signatureCounter: 12, cardholder: "Alice Example",
            keys: [
                OpenPGPKeyRow(
                    slot: .signature, hasKey: true, algorithm: "Ed25519", fingerprint: fingerprint,
                    created: 1_767_225_600, origin: .imported, touchPolicy: .on),
                OpenPGPKeyRow(
                    slot: .decryption, hasKey: false, algorithm: "RSA2048",
                    fingerprint: [UInt8](repeating: 0, count: 20)),
                OpenPGPKeyRow(
                    slot: .authentication, hasKey: true, algorithm: "RSA2048", fingerprint: fingerprint.reversed(),
                    created: 1_700_000_000, origin: .generated, touchPolicy: .fixed),
            ])
    }

    /// The OpenPGP tab opened on `d`, its application read.
    static func opened(_ info: OpenPGPCardInfo = info()) -> AppState {
        var state = AppState(now: now)
        _ = update(&state, .keyEvent(.keyArrived(d)))
        _ = update(&state, .keyPress(.char("7")))
        _ = update(&state, .openpgp(.loaded(keyID: d.id, info)))
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

    static func failed(_ operation: OpenPGPTabOperation, _ reason: OpenPGPFailureReason) -> Msg {
        .openpgp(.failed(keyID: d.id, OpenPGPFailure(operation, reason)))
    }
}

@Suite("Model: OpenPGP tab")
struct OpenPGPTabUpdateTests {
    typealias F = OpenPGPFixture

    @Test func tabSevenReadsTheKeyAndTheAnswerShowsIt() {
        var state = AppState(now: F.now)
        _ = update(&state, .keyEvent(.keyArrived(F.d)))
        let commands = update(&state, .keyPress(.char("7")))
        #expect(state.tab == .openpgp && commands == [.openpgp(.load(F.d))])
        #expect(state.openpgp.phase == .loading && state.openpgp.busy == OpenPGPBusy(.load))
        _ = update(&state, .openpgp(.loaded(keyID: F.d.id, F.info())))
        #expect(state.openpgp.phase == .ready && state.openpgp.busy == nil && state.openpgp.info == F.info())
        // Another key's answer is not this tab's business; r reads again, and so does opening the tab again.
        _ = update(&state, .openpgp(.loaded(keyID: "elsewhere", F.info(pinTries: 1))))
        #expect(state.openpgp.info?.pinTries == 3)
        #expect(update(&state, .keyPress(.char("r"))) == [.openpgp(.load(F.d))])
        _ = update(&state, .openpgp(.loaded(keyID: F.d.id, F.info())))
        _ = update(&state, .keyPress(.char("1")))
        #expect(update(&state, .keyPress(.char("7"))).contains(.openpgp(.load(F.d))))
    }

    @Test func aKeyWithoutTheSmartCardInterfaceSaysSo() {
        var state = AppState(now: F.now)
        let hidOnly = KeyDescriptor(
            transport: .hid(path: "/dev/hidraw3"), name: "YubiKey FIDO",
            fidoHID: HIDDeviceInfo(path: "/dev/hidraw3", vendorID: 0x1050, productID: 0x0402))
        _ = update(&state, .keyEvent(.keyArrived(hidOnly)))
        #expect(update(&state, .keyPress(.char("7"))).isEmpty)
        guard case .unavailable(let why) = state.openpgp.phase else {
            Issue.record("\(state.openpgp.phase)")
            return
        }
        #expect(why.arguments["application"] == "OpenPGP")
    }

    @Test func theCursorMovesBetweenTheThreeKeys() {
        var state = F.opened()
        #expect(state.openpgp.selected?.slot == .signature)
        _ = F.press(.down, .down, .down, into: &state)
        #expect(state.openpgp.selected?.slot == .authentication)
        _ = F.press(.char("k"), into: &state)
        #expect(state.openpgp.selected?.slot == .decryption)
        _ = F.press(.home, into: &state)
        #expect(state.openpgp.selectedRow == 0)
    }

    @Test func pinChangeChecksTheRulesAndSendsOnce() {
        var state = F.opened()
        _ = F.press(.char("p"), into: &state)
        #expect(state.openpgp.dialog?.kind == .changePIN && state.textFocused)
        // Too short once past the field; the confirmation is compared as it is typed.
        _ = F.submit("123456", "12345", into: &state)
        #expect(state.openpgp.dialog?.form.problem?.key == "openpgp.rule.short")
        #expect(state.openpgp.dialog?.form.problem?.arguments["minimum"] == "6")
        _ = update(&state, .keyPress(.up))
        _ = F.press(.backspace, .backspace, .backspace, .backspace, .backspace, into: &state)
        _ = Fixture.type("24681357", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("2469", into: &state)
        #expect(state.openpgp.dialog?.form.problem?.key == "openpgp.rule.mismatch")
        _ = F.press(.backspace, .backspace, into: &state)
        let commands = F.submit("681357", into: &state)
        #expect(commands == [.openpgp(.changePIN(F.d, current: "123456", new: "24681357"))])
        // The secrets left the state with the command.
        #expect(state.openpgp.dialog?.form.busy == true && state.openpgp.dialog?.form[OpenPGPField.new] == "")
        #expect(state.openpgp.busy == OpenPGPBusy(.changePIN))
        _ = update(&state, .openpgp(.changed(keyID: F.d.id, .changePIN, F.info())))
        #expect(state.openpgp.dialog == nil && state.openpgp.busy == nil)
        #expect(state.status?.text.key == "openpgp.pinChanged" && state.status?.kind == .success)
    }

    @Test func theAdminPINAndTheResetCodeTakeEightCharacters() {
        var state = F.opened()
        _ = F.press(.char("a"), into: &state)
        #expect(state.openpgp.dialog?.kind == .changeAdminPIN)
        _ = F.submit("12345678", "1234567", "1234567", into: &state)
        #expect(state.openpgp.dialog?.form.problem?.key == "openpgp.rule.short")
        #expect(state.openpgp.dialog?.form.problem?.nested["secret"]?.key == "openpgp.password.admin-pin")
        _ = update(&state, .keyPress(.escape))
        _ = F.press(.char("c"), into: &state)
        #expect(state.openpgp.dialog?.kind == .setResetCode)
        let commands = F.submit("12345678", "resetcode1", "resetcode1", into: &state)
        #expect(commands == [.openpgp(.setResetCode(F.d, adminPIN: "12345678", new: "resetcode1"))])
    }

    @Test func aWrongPasswordKeepsTheDialogWithTheTriesAndABlockedOneClosesIt() {
        var state = F.opened()
        _ = F.press(.char("p"), into: &state)
        _ = F.submit("000000", "24681357", "24681357", into: &state)
        _ = update(&state, F.failed(.changePIN, .wrongPassword(.user, retriesLeft: 2)))
        #expect(state.openpgp.dialog?.form.problem == UIText("openpgp.wrong.pin", ["retries": "2"]))
        #expect(state.openpgp.dialog?.form.busy == false && state.openpgp.dialog?.form.focus == 0)
        #expect(state.openpgp.dialog?.form[OpenPGPField.new] == "" && state.openpgp.info?.pinTries == 2)
        _ = F.submit("000001", "24681357", "24681357", into: &state)
        _ = update(&state, F.failed(.changePIN, .passwordBlocked(.user)))
        #expect(state.openpgp.dialog == nil && state.openpgp.info?.pinTries == 0)
        #expect(state.status?.text.key == "openpgp.blocked.pin" && state.status?.kind == .error)
        // A blocked PIN is not changed but unblocked: with the admin PIN, as no reset code is set.
        _ = F.press(.char("p"), into: &state)
        #expect(state.openpgp.dialog == nil && state.status?.text.key == "openpgp.blocked.pin")
        _ = F.press(.char("b"), into: &state)
        #expect(state.openpgp.dialog?.kind == .unblockPIN(withResetCode: false))
        let commands = F.submit("12345678", "13572468", "13572468", into: &state)
        #expect(commands == [.openpgp(.unblockPIN(F.d, resetCode: nil, adminPIN: "12345678", new: "13572468"))])
    }

    @Test func aPasswordTooSimpleForTheKeyKeepsTheDialogToTypeAgain() throws {
        var state = F.opened()
        _ = F.press(.char("a"), into: &state)
        _ = F.submit("12345678", "password", "password", into: &state)
        let reason = OpenPGPTabWork.reason(OpenPGPError.tooSimple(.admin))
        #expect(reason == .tooSimple(ErrorExplanation(OpenPGPError.tooSimple(.admin)).text))
        _ = update(&state, F.failed(.changeAdminPIN, reason))
        let dialog = try #require(state.openpgp.dialog)
        #expect(dialog.form.problem?.key == "error.pin-too-simple" && dialog.form.busy == false)
        #expect(dialog.form.problem?.nested["password"]?.key == "openpgp.password.admin-pin")
        // Every secret typed is gone; the cursor is on the first, the current admin PIN.
        #expect(dialog.form.focus == 0 && dialog.form[OpenPGPField.new] == "")
        #expect(state.openpgp.info?.adminPINTries == 3)
    }

    @Test func dTurnsTheKDFOnOrOffWithTheAdminPIN() throws {
        var state = F.opened()
        _ = F.press(.char("d"), into: &state)
        let dialog = try #require(state.openpgp.dialog)
        #expect(dialog.kind == .kdf(on: true) && dialog.form.title.key == "openpgp.kdf.title.on")
        #expect(dialog.form.fields.count == 1 && dialog.form.note?.key == "openpgp.kdf.note.on")
        #expect(F.submit("12345678", into: &state) == [.openpgp(.setKDF(F.d, on: true, adminPIN: "12345678"))])
        #expect(!String(describing: state).contains("12345678"))
        var info = F.info()
        info.kdfEnabled = true
        _ = update(&state, .openpgp(.changed(keyID: F.d.id, .kdf, info)))
        #expect(state.status?.text.key == "openpgp.kdfOn" && state.openpgp.dialog == nil)
        // With it on, d offers to turn it off.
        _ = F.press(.char("d"), into: &state)
        #expect(state.openpgp.dialog?.kind == .kdf(on: false))
        // A blocked admin PIN opens no dialog.
        var blocked = F.opened(F.info(adminPINTries: 0))
        _ = F.press(.char("d"), into: &blocked)
        #expect(blocked.openpgp.dialog == nil && blocked.status?.text.key == "openpgp.blocked.admin-pin")
    }

    @Test func theUnblockTakesTheResetCodeWhenOneIsSet() {
        var state = F.opened(F.info(pinTries: 0, resetCodeTries: 3))
        _ = F.press(.char("b"), into: &state)
        #expect(state.openpgp.dialog?.kind == .unblockPIN(withResetCode: true))
        let commands = F.submit("resetcode1", "135792", "135792", into: &state)
        #expect(commands == [.openpgp(.unblockPIN(F.d, resetCode: "resetcode1", adminPIN: nil, new: "135792"))])
        _ = update(&state, F.failed(.unblockPIN, .wrongPassword(.reset, retriesLeft: 2)))
        #expect(state.openpgp.info?.resetCodeTries == 2)
        #expect(state.openpgp.dialog?.form.problem == UIText("openpgp.wrong.reset-code", ["retries": "2"]))
    }

    @Test func aFixedTouchPolicyIsAskedAboutFirstAndAnotherIsNot() {
        var state = F.opened()
        _ = F.press(.char("t"), into: &state)
        #expect(state.openpgp.dialog?.kind == .touchPolicy(.signature))
        // It starts at the key's policy; Right steps through ykman's names.
        #expect(state.openpgp.dialog?.form[OpenPGPField.policy] == "on")
        _ = F.press(.right, into: &state)
        #expect(state.openpgp.dialog?.form[OpenPGPField.policy] == "fixed")
        _ = update(&state, .keyPress(.enter))
        var commands = F.submit("12345678", into: &state)
        #expect(
            commands.isEmpty && state.openpgp.dialog?.form.confirming?.question.key == "openpgp.touch.fixedQuestion")
        // Enter is No: back to the fields, nothing sent.
        commands = Fixture.later(.enter, into: &state)
        #expect(commands.isEmpty && state.openpgp.dialog?.form.confirming == nil)
        commands = F.press(.enter, into: &state)
        #expect(state.openpgp.dialog?.form.confirming != nil)
        // A y in the same burst as the question answers nothing; a later one sends the confirmed policy.
        #expect(F.press(.char("y"), into: &state).isEmpty)
        commands = Fixture.later(.char("y"), into: &state)
        #expect(
            commands == [
                .openpgp(.setTouchPolicy(F.d, slot: .signature, policy: .fixed, adminPIN: "12345678", confirmed: true))
            ])
        _ = update(&state, .openpgp(.touchPolicySet(keyID: F.d.id, slot: .signature, F.info())))
        #expect(state.openpgp.dialog == nil && state.status?.text.key == "openpgp.touchSet")

        // Cached is not fixed: no question.
        _ = F.press(.down, .char("t"), into: &state)
        _ = F.press(.right, .right, .right, into: &state)
        #expect(state.openpgp.dialog?.form[OpenPGPField.policy] == "cached")
        _ = update(&state, .keyPress(.enter))
        commands = F.submit("12345678", into: &state)
        #expect(
            commands == [
                .openpgp(
                    .setTouchPolicy(F.d, slot: .decryption, policy: .cached, adminPIN: "12345678", confirmed: false))
            ])
    }

    @Test func aFixedPolicyCannotBeChangedAndIsSaidSo() {
        var state = F.opened()
        _ = F.press(.end, .char("t"), into: &state)
        #expect(state.openpgp.dialog == nil && state.status?.text == UIText("openpgp.touch.isFixed", ["slot": "AUT"]))
    }

    @Test func attestWantsAKeyAndThePIN() {
        var state = F.opened()
        _ = F.press(.down, .char("A"), into: &state)
        #expect(state.openpgp.dialog == nil && state.status?.text == UIText("openpgp.noKey", ["slot": "DEC"]))
        _ = F.press(.up, .char("A"), into: &state)
        #expect(state.openpgp.dialog?.kind == .attest(.signature))
        let commands = F.submit("123456", into: &state)
        #expect(commands == [.openpgp(.attest(F.d, slot: .signature, pin: "123456"))])
        _ = update(&state, .openpgp(.attested(keyID: F.d.id, slot: .signature, issuer: "CN=att", F.info())))
        #expect(state.openpgp.dialog == nil)
        #expect(state.status?.text == UIText("openpgp.attested", ["slot": "SIG", "issuer": "CN=att"]))
    }

    @Test func exportAsksBeforeReplacingAFile() {
        var state = F.opened()
        _ = F.press(.char("e"), into: &state)
        #expect(state.openpgp.dialog?.form[OpenPGPField.path] == "openpgp-sig-certificate.pem")
        var commands = F.press(.enter, into: &state)
        #expect(
            commands == [
                .openpgp(.export(F.d, slot: .signature, path: "openpgp-sig-certificate.pem", overwrite: false))
            ])
        _ = update(&state, .openpgp(.exportExists(keyID: F.d.id, path: "openpgp-sig-certificate.pem")))
        #expect(state.openpgp.dialog?.form.confirming != nil && state.openpgp.busy == nil)
        commands = Fixture.later(.char("y"), into: &state)
        #expect(
            commands == [.openpgp(.export(F.d, slot: .signature, path: "openpgp-sig-certificate.pem", overwrite: true))]
        )
        _ = update(&state, .openpgp(.exported(keyID: F.d.id, slot: .signature, path: "x.pem")))
        #expect(state.openpgp.dialog == nil && state.status?.kind == .success)
    }

    @Test func theResetTakesOnlyADeliberateY() {
        var state = F.opened()
        _ = F.press(.char("R"), into: &state)
        #expect(state.openpgp.dialog?.kind == .reset && state.openpgp.dialog?.form.isConfirmation == true)
        #expect(F.press(.char("y"), into: &state).isEmpty)
        #expect(Fixture.later(.enter, into: &state).isEmpty && state.openpgp.dialog == nil)
        _ = F.press(.char("R"), into: &state)
        #expect(Fixture.later(.char("y"), into: &state) == [.openpgp(.reset(F.d))])
        _ = update(&state, .openpgp(.changed(keyID: F.d.id, .reset, F.info())))
        #expect(state.openpgp.dialog == nil && state.status?.text.key == "openpgp.resetDone")
    }

    @Test func anotherKeyEmptiesTheTabAndWipesTheDialog() {
        var state = F.opened()
        _ = F.press(.char("p"), into: &state)
        _ = Fixture.type("123456", into: &state)
        _ = update(&state, .keyEvent(.keyLeft(id: F.d.id)))
        #expect(state.openpgp.dialog == nil && state.openpgp.info == nil && state.openpgp.phase == .noKey)
    }

    @Test func pasteGoesOnlyIntoADialog() {
        var state = F.opened()
        _ = update(&state, .paste("123456"))
        #expect(state.openpgp.dialog == nil && state.status?.text.key == "status.pasteIgnored")
        _ = F.press(.char("p"), into: &state)
        _ = update(&state, .paste("123456"))
        #expect(state.openpgp.dialog?.form[OpenPGPField.current] == "123456")
    }
}
