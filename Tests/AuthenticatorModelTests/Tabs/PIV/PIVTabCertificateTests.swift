import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel

/// The PIV tab's `g` (a self-signed certificate made on the key for the selected slot) and `s` (the slot's
/// authorized_keys line, copied).
@Suite("Model: PIV tab certificate and SSH line")
struct PIVTabCertificateTests {
    typealias F = PIVFixture

    /// 48 hex digits: an AES-192 management key, as the fixture's key has.
    static let managementKey = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071"

    static func slot(_ raw: UInt8) -> PIV.Slot { PIV.Slot(rawValue: raw) }

    @Test func gAsksForTheManagementKeyAndThePINThenWhetherToReplaceTheCertificate() throws {
        var state = F.opened()
        #expect(F.press(.char("g"), into: &state).isEmpty)
        let dialog = try #require(state.piv.dialog)
        // The key said its management key is not the default, and 9A's policy wants the PIN.
        #expect(dialog.kind == .generateCertificate(.authentication, managementKey: .required, pin: true))
        #expect(dialog.form.title == UIText("piv.generate.title", ["slot": "9A"]))
        #expect(dialog.form.fields.map(\.id) == ["subject", "days", "managementKey", "pin"])
        #expect(dialog.form[PIVField.subject] == "CN=PIV slot 9A" && dialog.form[PIVField.days] == "365")
        #expect(dialog.form.fields.map(\.input.secret) == [false, false, true, true])
        #expect(state.piv.selected?.slot == .authentication && state.textFocused)

        // 9A holds a certificate: the dialog asks before anything goes to the key.
        #expect(F.submit("", "", Self.managementKey, "975312", into: &state).isEmpty)
        #expect(
            state.piv.dialog?.form.confirming?.question == UIText("piv.generate.replace", ["slot": "9A"]))
        #expect(state.piv.busy == nil)
        // n goes back to the form with everything typed; Enter on the last field asks again.
        state.now += 1
        #expect(F.press(.char("n"), into: &state).isEmpty)
        #expect(state.piv.dialog?.form.confirming == nil && state.piv.dialog?.form[PIVField.pin] == "975312")
        #expect(F.press(.enter, into: &state).isEmpty && state.piv.dialog?.form.confirming != nil)
        state.now += 1
        let commands = F.press(.char("y"), into: &state)
        #expect(
            commands == [
                .piv(
                    .generateCertificate(
                        F.d, slot: .authentication, subject: "CN=PIV slot 9A", days: 365, pin: "975312",
                        managementKey: Self.managementKey))
            ])
        #expect(state.piv.busy == PIVBusy(.generateCertificate) && state.piv.dialog?.form.busy == true)
        // The secrets left the state with the command.
        let described = String(describing: state)
        #expect(!described.contains("975312") && !described.contains(Self.managementKey))

        // The key waits for a touch, signs, stores; the tab shows the key read again.
        _ = update(&state, .piv(.touch(keyID: F.d.id, waiting: true)))
        #expect(state.piv.busy?.touch == true)
        #expect(state.touchAlert?.text.nested["purpose"] == UIText("touch.for.piv.generateCertificate"))
        var info = F.info()
        info.slots[0].certificate = F.certificate("CN=PIV slot 9A")
        _ = update(
            &state,
            .piv(.certificateGenerated(keyID: F.d.id, slot: .authentication, subject: "CN=PIV slot 9A", info)))
        #expect(state.piv.dialog == nil && state.piv.busy == nil && state.piv.info == info)
        #expect(state.status?.text == UIText("piv.generated", ["slot": "9A", "subject": "CN=PIV slot 9A"]))
        #expect(state.status?.kind == .success)
    }

    @Test func aDefaultManagementKeyAndASlotWithoutPINOrCertificateAskOnlySubjectAndDays() throws {
        var state = F.opened(F.info(defaults: true))
        _ = F.press(.char("j"), .char("j"), .char("j"), into: &state)
        #expect(state.piv.selected?.slot == .cardAuthentication)
        _ = F.press(.char("g"), into: &state)
        let dialog = try #require(state.piv.dialog)
        #expect(dialog.kind == .generateCertificate(.cardAuthentication, managementKey: .notAsked, pin: false))
        #expect(dialog.form.fields.map(\.id) == ["subject", "days"])
        // 9E has no certificate: no question, the command goes at once.
        _ = F.press(.ctrl("u"), into: &state)
        _ = Fixture.type("CN=door, O=Example", into: &state)
        _ = F.press(.enter, .ctrl("u"), into: &state)
        let commands = F.submit("30", into: &state)
        #expect(
            commands == [
                .piv(
                    .generateCertificate(
                        F.d, slot: .cardAuthentication, subject: "CN=door, O=Example", days: 30, pin: nil,
                        managementKey: nil))
            ])
        // The read after the certificate failed: the certificate is still said to be stored, and the tab reads
        // the key again.
        let after = update(
            &state,
            .piv(
                .certificateGenerated(
                    keyID: F.d.id, slot: .cardAuthentication, subject: "CN=door, O=Example", nil)))
        #expect(after == [.piv(.load(F.d))] && state.piv.busy == PIVBusy(.load))
        #expect(state.status?.text == UIText("piv.generated", ["slot": "9E", "subject": "CN=door, O=Example"]))
    }

    @Test func firmwareThatDoesNotTellTheManagementKeyTakesAnEmptyOneForTheDefault() throws {
        let slots = [
            PIVSlotInfo(slot: .authentication, certificate: F.certificate()),
            PIVSlotInfo(slot: .signature),
        ]
        let old = PIVInfo(version: "4.3.7", pinRetries: 3, hasMetadata: false, slots: slots)
        var state = F.opened(old)
        _ = F.press(.char("g"), into: &state)
        let dialog = try #require(state.piv.dialog)
        // No metadata: the slot's default policy (the PIN) and an optional management key.
        #expect(dialog.kind == .generateCertificate(.authentication, managementKey: .optional, pin: true))
        #expect(dialog.form.fields[2].label == UIText("piv.field.managementKeyOptional"))
        _ = F.submit("", "", "", "975312", into: &state)
        state.now += 1
        #expect(
            F.press(.char("y"), into: &state) == [
                .piv(
                    .generateCertificate(
                        F.d, slot: .authentication, subject: "CN=PIV slot 9A", days: 365, pin: "975312",
                        managementKey: nil))
            ])
        // Typed, a 3DES key's length counts (older firmware has no other).
        _ = update(&state, F.failed(.generateCertificate, .managementKeyRequired))
        #expect(state.piv.dialog?.form.problem == UIText("piv.managementKeyRequired"))
        #expect(state.piv.dialog?.form.focus == 2)
        _ = Fixture.type("0102", into: &state)
        _ = F.press(.enter, into: &state)
        #expect(
            state.piv.dialog?.form.problem
                == UIText("piv.rule.managementKeyLength", ["algorithm": "TDES", "expected": "48", "count": "4"]))
        // A slot without a certificate has no key this firmware tells.
        _ = F.press(.escape, .char("j"), .char("g"), into: &state)
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.keyUnknown", ["slot": "9C"]))
        state.status = nil
        _ = F.press(.char("s"), into: &state)
        #expect(state.piv.busy == nil && state.status?.text == UIText("piv.keyUnknown", ["slot": "9C"]))
    }

    @Test func theFieldsAreCheckedAsTypedAndOnSubmit() {
        var state = F.opened()
        _ = F.press(.char("g"), into: &state)
        func problem() -> UIText? { state.piv.dialog?.form.problem }
        // The subject: said once the cursor leaves it.
        _ = F.press(.ctrl("u"), into: &state)
        #expect(problem() == nil)
        _ = F.press(.enter, into: &state)
        #expect(problem() == UIText("piv.rule.subjectEmpty"))
        _ = F.press(.backTab, into: &state)
        _ = Fixture.type("CN=", into: &state)
        _ = F.press(.enter, into: &state)
        #expect(problem() == ErrorExplanation(PIVOperationError.badSubject("CN=")).text)
        _ = F.press(.backTab, .ctrl("u"), into: &state)
        _ = Fixture.type("alice", into: &state)
        _ = F.press(.enter, into: &state)
        #expect(problem() == nil)
        // The days: digits from 1 to 36500, said at once.
        _ = F.press(.ctrl("u"), into: &state)
        #expect(problem() == nil)
        for wrong in ["0", "x", "36501", "-1"] {
            _ = F.press(.ctrl("u"), into: &state)
            _ = Fixture.type(wrong, into: &state)
            #expect(problem() == UIText("piv.rule.days", ["max": "36500"]), "\(wrong)")
        }
        _ = F.press(.ctrl("u"), into: &state)
        _ = Fixture.type("36500", into: &state)
        #expect(problem() == nil)
        // The management key: hex, and its characters never repeated.
        _ = F.press(.enter, into: &state)
        _ = Fixture.type("0a1z", into: &state)
        #expect(problem() == UIText("piv.rule.managementKeyHex"))
        _ = F.press(.ctrl("u"), into: &state)
        _ = F.press(.enter, into: &state)
        #expect(problem() == UIText("piv.rule.managementKeyEmpty"))
        _ = F.press(.backTab, into: &state)
        _ = Fixture.type("01:02:03", into: &state)
        _ = F.press(.enter, into: &state)
        #expect(
            problem()
                == UIText("piv.rule.managementKeyLength", ["algorithm": "AES192", "expected": "48", "count": "6"]))
        _ = F.press(.backTab, .ctrl("u"), into: &state)
        _ = Fixture.type(Self.managementKey, into: &state)
        _ = F.press(.enter, into: &state)
        #expect(problem() == nil)
        // The PIN: at most 8 characters, and not empty.
        _ = Fixture.type("123456789", into: &state)
        #expect(problem() == UIText("piv.rule.long", ["secret": "PIN", "count": "9"]))
        _ = F.press(.ctrl("u"), into: &state)
        #expect(F.press(.enter, into: &state).isEmpty)
        #expect(problem() == UIText("piv.rule.empty", ["secret": "PIN"]))
        #expect(state.piv.busy == nil && state.piv.dialog?.form.confirming == nil)
    }

    @Test func managementKeyRulesFollowTheAlgorithmAndAllowSeparators() {
        func problem(_ text: String, _ field: PIVManagementKeyField = .required, _ algorithm: PIV.Algorithm? = .aes128)
            -> UIText?
        {
            pivManagementKeyProblem(text, field, algorithm: algorithm, final: true)
        }
        #expect(problem("00112233 44556677:8899aabb ccddeeff") == nil)
        #expect(problem(String(repeating: "ab", count: 32), .required, .aes256) == nil)
        #expect(problem(String(repeating: "ab", count: 24), .optional, nil) == nil)
        #expect(
            problem(String(repeating: "ab", count: 24), .required, .aes256)
                == UIText("piv.rule.managementKeyLength", ["algorithm": "AES256", "expected": "64", "count": "48"]))
        #expect(problem("", .optional) == nil && problem("", .required) == UIText("piv.rule.managementKeyEmpty"))
        #expect(problem("0g") == UIText("piv.rule.managementKeyHex"))
        // While typing, only a wrong character counts.
        #expect(pivManagementKeyProblem("012", .required, algorithm: .aes128, final: false) == nil)
    }

    @Test func slotsThatCannotSignSaySoWithoutADialog() {
        var info = F.info()
        info.slots.append(
            PIVSlotInfo(
                slot: Self.slot(0x83),
                key: PIVKeyInfo(algorithm: .x25519, pinPolicy: .default, touchPolicy: .never, origin: .generated)))
        var state = F.opened(info)
        // 9C: a certificate without a key.
        _ = F.press(.char("j"), .char("g"), into: &state)
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.noKey", ["slot": "9C"]))
        // 9D: empty.
        _ = F.press(.char("j"), .char("g"), into: &state)
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.slotNoKey", ["slot": "9D"]))
        // g no longer moves in the list.
        #expect(state.piv.selected?.slot == .keyManagement)
        // 83: X25519 agrees on keys and cannot sign; SSH has no line for it either.
        _ = F.press(.char("G"), .char("g"), into: &state)
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.generate.cannotSign", ["slot": "83"]))
        _ = F.press(.char("s"), into: &state)
        #expect(
            state.piv.busy == nil
                && state.status?.text == UIText("piv.sshKey.unsupported", ["slot": "83", "algorithm": "X25519"]))
        // A blocked PIN stops a slot that needs it.
        var blocked = F.opened(F.info(pinRetries: 0))
        _ = F.press(.char("g"), into: &blocked)
        #expect(blocked.piv.dialog == nil && blocked.status?.text == UIText("piv.alert.pinBlocked"))
        // Home and PageUp go to the top.
        _ = F.press(.home, into: &state)
        #expect(state.piv.selected?.slot == .authentication)
    }

    @Test func theKeysAnswersStayInTheDialog() throws {
        var state = F.opened()
        _ = F.press(.char("g"), into: &state)
        func submit() {
            _ = F.submit("", "", Self.managementKey, "000000", into: &state)
            state.now += 1
            _ = F.press(.char("y"), into: &state)
        }
        submit()
        _ = update(&state, F.failed(.generateCertificate, .wrongPIN(retriesLeft: 2)))
        var dialog = try #require(state.piv.dialog)
        #expect(dialog.form.problem == UIText("piv.wrongPIN", ["retries": "2"]) && state.piv.info?.pinRetries == 2)
        // Both secrets are typed again: the cursor is on the first; subject and days stay.
        #expect(dialog.form[PIVField.pin] == "" && dialog.form[PIVField.managementKey] == "")
        #expect(dialog.form.focus == 2 && dialog.form[PIVField.subject] == "CN=PIV slot 9A" && !dialog.form.busy)
        _ = F.press(.backTab, .backTab, into: &state)
        submit()
        _ = update(&state, F.failed(.generateCertificate, .wrongManagementKey))
        dialog = try #require(state.piv.dialog)
        #expect(dialog.form.problem == UIText("piv.wrongManagementKey") && dialog.form.focus == 2)
        // Something else the key said (the certificate's key is not the slot's, ...): also in the dialog.
        _ = F.press(.backTab, .backTab, into: &state)
        submit()
        let other = UIText("error.certificate-not-slots-key", ["slot": "9A"])
        _ = update(&state, F.failed(.generateCertificate, .other(other)))
        #expect(state.piv.dialog?.form.problem == other)
        // A blocked PIN closes it, saying so.
        _ = F.press(.backTab, .backTab, into: &state)
        submit()
        _ = update(&state, F.failed(.generateCertificate, .pinBlocked))
        #expect(state.piv.dialog == nil && state.status?.text == UIText("piv.alert.pinBlocked"))
    }

    @Test func aSecretTheTabDidNotExpectIsAskedForKeepingSubjectAndDays() throws {
        var state = F.opened(F.info(defaults: true))
        _ = F.press(.char("j"), .char("j"), .char("j"), .char("g"), into: &state)
        _ = F.press(.ctrl("u"), into: &state)
        _ = F.submit("CN=door", into: &state)
        _ = F.press(.ctrl("u"), into: &state)
        _ = F.submit("90", into: &state)
        // The management key was changed since the tab read the key: the dialog asks for it.
        _ = update(&state, F.failed(.generateCertificate, .managementKeyRequired))
        var dialog = try #require(state.piv.dialog)
        #expect(dialog.kind == .generateCertificate(.cardAuthentication, managementKey: .required, pin: false))
        #expect(dialog.form[PIVField.subject] == "CN=door" && dialog.form[PIVField.days] == "90")
        #expect(dialog.form.problem == UIText("piv.managementKeyRequired") && dialog.form.focus == 2)
        #expect(state.piv.busy == nil)
        // The key wanted the PIN where its policy did not say so: asked for too.
        let commands = F.submit(Self.managementKey, into: &state)
        #expect(
            commands == [
                .piv(
                    .generateCertificate(
                        F.d, slot: .cardAuthentication, subject: "CN=door", days: 90, pin: nil,
                        managementKey: Self.managementKey))
            ])
        _ = update(&state, F.failed(.generateCertificate, .pinRequired))
        dialog = try #require(state.piv.dialog)
        #expect(dialog.kind == .generateCertificate(.cardAuthentication, managementKey: .required, pin: true))
        #expect(dialog.form.problem == UIText("piv.pinRequired") && dialog.form.focus == 2)
        #expect(dialog.form[PIVField.managementKey] == "" && dialog.form[PIVField.subject] == "CN=door")
        // Closed while the key works: its answer comes to the status line.
        _ = F.submit(Self.managementKey, "975312", into: &state)
        _ = F.press(.escape, into: &state)
        #expect(state.piv.dialog == nil && state.piv.busy == PIVBusy(.generateCertificate))
        _ = update(&state, F.failed(.generateCertificate, .wrongPIN(retriesLeft: 1)))
        #expect(state.status?.text == UIText("piv.wrongPIN", ["retries": "1"]) && state.status?.kind == .error)
    }

    @Test func sCopiesTheSlotsSSHLine() {
        var state = F.opened()
        let line = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY= PIV slot 9A"
        #expect(F.press(.char("s"), into: &state) == [.piv(.sshKey(F.d, slot: .authentication))])
        #expect(state.piv.busy == PIVBusy(.sshKey))
        // Busy: another key waits.
        #expect(F.press(.char("s"), into: &state).isEmpty)
        let commands = update(&state, .piv(.sshKeyRead(keyID: F.d.id, slot: .authentication, line: line)))
        #expect(
            commands == [.copy(line, status: UIText("piv.sshKeyCopied", ["slot": "9A"]))] && state.piv.busy == nil)
        // Another key's answer copies nothing.
        _ = F.press(.char("s"), into: &state)
        #expect(update(&state, .piv(.sshKeyRead(keyID: "elsewhere", slot: .authentication, line: line))).isEmpty)
        // What the key refused goes to the status line.
        let why = UIText("piv.sshKey.unsupported", ["slot": "9A", "algorithm": "X25519"])
        _ = update(&state, F.failed(.sshKey, .other(why)))
        #expect(state.piv.busy == nil && state.status?.text == why && state.status?.kind == .error)
        // The empty 9D and 9C's certificate without key have no public key.
        _ = F.press(.char("j"), .char("s"), into: &state)
        #expect(state.piv.busy == nil && state.status?.text == UIText("piv.noKey", ["slot": "9C"]))
        _ = F.press(.char("j"), .char("s"), into: &state)
        #expect(state.piv.busy == nil && state.status?.text == UIText("piv.slotNoKey", ["slot": "9D"]))
        // In the certificate's details s copies too, and g still scrolls to the top.
        _ = F.press(.home, .enter, .down, .down, into: &state)
        #expect(state.piv.showDetails && state.piv.detailsScroll == 2)
        _ = F.press(.char("g"), into: &state)
        #expect(state.piv.detailsScroll == 0 && state.piv.dialog == nil)
        #expect(F.press(.char("s"), into: &state) == [.piv(.sshKey(F.d, slot: .authentication))])
    }

    @Test func workSortsTheManagementKeysAnswers() {
        typealias W = PIVTabWork
        #expect(W.reason(PIVOperationError.needs(.managementKey), .generateCertificate) == .managementKeyRequired)
        #expect(W.reason(PIVError.managementKeyAuthenticationFailed, .generateCertificate) == .wrongManagementKey)
        #expect(W.reason(PIVError.managementKeyResponseMismatch, .generateCertificate) == .wrongManagementKey)
        #expect(W.reason(PIVOperationError.needs(.pin), .generateCertificate) == .pinRequired)
        #expect(
            W.reason(PIVOperationError.noPublicKey(.signature), .sshKey)
                == .other(ErrorExplanation(PIVOperationError.noPublicKey(.signature)).text))
        #expect(
            pivFailureText(.managementKeyRequired, operation: .generateCertificate).key == "piv.managementKeyRequired")
        #expect(pivFailureText(.wrongManagementKey, operation: .generateCertificate).key == "piv.wrongManagementKey")
    }

    @Test func helpNamesGAndS() {
        var state = F.opened()
        state.showHelp = true
        let entries = helpEntries(state)
        #expect(entries.contains { $0.keys == "g" && $0.text == UIText("piv.help.certificate") })
        #expect(entries.contains { $0.keys == "s" && $0.text == UIText("piv.help.sshKey") })
    }
}
