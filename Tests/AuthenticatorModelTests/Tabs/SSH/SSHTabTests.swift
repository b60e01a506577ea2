import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel

/// Builders for the SSH tab's states and the answers the runner would post. The keys are OpenSSH's own test keys
/// (openssh-portable, regress/unittests/sshkey/testdata: ed25519_sk1, ecdsa_sk1, ed25519_1 and ecdsa_1), each
/// with the `.pub` line and the fingerprint `ssh-keygen -l` printed for it there.
enum SSHFixture {
    static let d = Fixture.reader
    static let now = 1000.0

    /// ed25519_sk1.pub (application "ssh:") and ed25519_sk1.fp.
    static let edSKBlob =
        "AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAICFo/k5LU8863u66YC9eUO2170QduohPURkQnbLa/dczAAAABHNzaDo="
    static let edSKFingerprint = "SHA256:6WZVJ44bqhAWLVP4Ns0TDkoSQSsZo/h2K+mEvOaNFbw"
    /// ecdsa_sk1.pub (application "ssh:") and ecdsa_sk1.fp.
    static let ecSKBlob =
        "AAAAInNrLWVjZHNhLXNoYTItbmlzdHAyNTZAb3BlbnNzaC5jb20AAAAIbmlzdHAyNTYAAABBBGdVPkKOLUMZ7b6rZfS8BOHotic4NX4MmuyEmiu"
        + "vkaeKlbb1F+5oNezRYHpcF6P104trNVEONCu1XX1CA7px+QUAAAAEc3NoOg=="
    static let ecSKFingerprint = "SHA256:Go7HO0CVPYG+BSDSk9ZUJBKGSrtBExp6obTa9iqzIUo"
    /// ed25519_1.pub and ed25519_1.fp.
    static let edBlob = "AAAAC3NzaC1lZDI1NTE5AAAAIFOG6kY7Rf4UtCFvPwKgo/BztXck2xC4a2WyA34XtIwZ"
    static let edFingerprint = "SHA256:L3k/oJubblSY0lB9Ulsl7emDMnRPKm/8udf2ccwk560"
    /// ecdsa_1.pub (nistp256) and ecdsa_1.fp.
    static let ecBlob =
        "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAxZW5ZDq1vcnSlYbTPvQGN3PbGgRO0ht5Rcd/JwWr5AAw2iPY4d/5Lx"
        + "vybfb6ZttqsKJJUwhg38wpF5CCmlpQc="
    static let ecFingerprint = "SHA256:8ty77fOpABat1y88aNdclQTfU+lVvWe7jYZGw8VYtfg"

    static func hex(_ text: String) -> [UInt8] { try! Hex.decode(text) }

    /// A user as OpenSSH's `-O user=` puts it into the credential's user ID: NUL-padded to 32 bytes.
    static func userID(_ user: String?) -> [UInt8] {
        let bytes = Array((user ?? "").utf8)
        return bytes + [UInt8](repeating: 0, count: 32 - bytes.count)
    }

    /// ed25519_sk1 as a discoverable credential of the key: no user, a touch for every use.
    static let edSK = SSHKeyOnKey(
        key: SecurityKeySSHKey(
            publicKey: .ed25519(hex("2168fe4e4b53cf3adeeeba602f5e50edb5ef441dba884f5119109db2dafdd733")),
            application: "ssh:", flags: [.userPresenceRequired, .residentKey],
            keyHandle: Array(repeating: 0xE1, count: 48)
        ),
        userID: userID(nil), userName: "openssh", credProtect: 2)

    /// ecdsa_sk1 for user alice, a touch and the PIN for every use.
    static let ecSK = SSHKeyOnKey(
        key: SecurityKeySSHKey(
            publicKey: .ecdsaP256(
                hex(
                    "0467553e428e2d4319edbeab65f4bc04e1e8b62738357e0c9aec849a2baf91a78a95b6f517ee6835ecd1607a5c17a3f5d3"
                        + "8b6b35510e342bb55d7d4203ba71f905")),
            application: "ssh:", flags: [.userPresenceRequired, .userVerificationRequired, .residentKey],
            keyHandle: Array(repeating: 0xEC, count: 64)),
        userID: userID("alice"), userName: "openssh", credProtect: 3)

    /// ed25519_1 in slot 9A, with a certificate.
    static let pivEd = PIVSSHKey(
        slot: .authentication,
        publicKey: try! AsymmetricPublicKey(
            raw: hex("5386ea463b45fe14b4216f3f02a0a3f073b57724db10b86b65b2037e17b48c19"), type: .ed25519),
        certificateSubject: "CN=alice")!

    /// ecdsa_1 in slot 9C, without a certificate.
    static let pivEC = PIVSSHKey(
        slot: .signature,
        publicKey: try! AsymmetricPublicKey(
            ecPoint: hex(
                "040c595b9643ab5bdc9d29586d33ef4063773db1a044ed21b7945c77f2705abe40030da23d8e1dff92f1bf26df6fa66db6"
                    + "ab0a249530860dfcc291790829a5a507"),
            type: .p256),
        certificateSubject: nil)!

    /// Both FIDO keys listed with the PIN, and both PIV slots.
    static let listed = SSHTabLoad(fido: .listed, fidoKeys: [edSK, ecSK], pivKeys: [pivEd, pivEC])
    /// The key has a FIDO2 PIN not given on this visit; the PIV slots are there.
    static let pinNeeded = SSHTabLoad(fido: .pinNeeded, minPINLength: 6, pivKeys: [pivEd, pivEC])

    /// The SSH tab opened on `d`, its keys read.
    static func opened(_ load: SSHTabLoad = listed) -> AppState {
        var state = AppState(now: now)
        _ = update(&state, .keyEvent(.keyArrived(d)))
        _ = update(&state, .keyPress(.char("6")))
        _ = update(&state, .ssh(.loaded(keyID: d.id, load)))
        state.status = nil
        return state
    }

    static func press(_ keys: KeyPress..., into state: inout AppState) -> [Command] {
        keys.flatMap { update(&state, .keyPress($0)) }
    }

    /// A key pressed a second after the last one: a deliberate answer to a question on screen.
    static func later(_ key: KeyPress, into state: inout AppState) -> [Command] {
        Fixture.later(key, into: &state)
    }

    /// Replaces the focused text field's contents with `text`.
    static func retype(_ text: String, into state: inout AppState) {
        for _ in 0..<200 { _ = update(&state, .keyPress(.backspace)) }
        _ = Fixture.type(text, into: &state)
    }

    static func failed(_ operation: SSHOperation, _ reason: FIDOFailureReason) -> Msg {
        .ssh(.failed(keyID: d.id, SSHFailure(operation, reason)))
    }

    static func isForget(_ command: Command) -> Bool {
        if case .ssh(.forgetPIN) = command { return true }
        return false
    }
}

@Suite("Model: SSH tab")
struct SSHTabUpdateTests {
    typealias F = SSHFixture

    @Test func theKeysAreOpenSSHsOwnTestKeys() {
        // The tab shows and copies these: ssh-keygen's lines and fingerprints for the same keys.
        let rows = F.opened().ssh.rows
        #expect(
            rows.map(\.line) == [
                "sk-ssh-ed25519@openssh.com " + F.edSKBlob + " ssh:",
                "sk-ecdsa-sha2-nistp256@openssh.com " + F.ecSKBlob + " ssh:",
                "ssh-ed25519 " + F.edBlob + " PIV slot 9A",
                "ecdsa-sha2-nistp256 " + F.ecBlob + " PIV slot 9C",
            ])
        #expect(rows.map(\.fingerprint) == [F.edSKFingerprint, F.ecSKFingerprint, F.edFingerprint, F.ecFingerprint])
        #expect(rows.map(\.shortType) == ["ed25519-sk", "ecdsa-sk", "ed25519", "ecdsa"])
    }

    @Test func tabSixReadsTheKeyAndTheAnswerShowsIt() {
        var state = AppState(now: F.now)
        _ = update(&state, .keyEvent(.keyArrived(F.d)))
        let commands = update(&state, .keyPress(.char("6")))
        #expect(state.tab == .ssh && commands == [.ssh(.load(F.d))])
        #expect(state.ssh.busy == SSHBusy(.load) && state.ssh.phase == .loading && state.ssh.keyID == F.d.id)
        // Another key's answer is not this tab's business.
        _ = update(&state, .ssh(.loaded(keyID: "elsewhere", F.listed)))
        #expect(state.ssh.load == nil && state.ssh.phase == .loading)
        _ = update(&state, .ssh(.loaded(keyID: F.d.id, F.listed)))
        #expect(state.ssh.phase == .ready && state.ssh.busy == nil && state.ssh.pinHeld)
        // FIDO keys first, in the order the key gave them, then the PIV slots.
        #expect(state.ssh.rows == [.fido(F.edSK), .fido(F.ecSK), .piv(F.pivEd), .piv(F.pivEC)])
        // r reads again; each visit reads again.
        #expect(F.press(.char("r"), into: &state) == [.ssh(.load(F.d))])
        _ = update(&state, .ssh(.loaded(keyID: F.d.id, F.listed)))
        _ = F.press(.char("1"), into: &state)
        #expect(F.press(.char("6"), into: &state).contains(.ssh(.load(F.d))))
        // Without a key the tab says so and asks nothing.
        var empty = AppState(now: F.now)
        #expect(update(&empty, .keyPress(.char("6"))).isEmpty && empty.ssh.phase == .noKey)
    }

    @Test func thePINIsAskedOncePerVisit() throws {
        var state = F.opened(F.pinNeeded)
        let dialog = try #require(state.ssh.dialog)
        #expect(dialog.kind == .pin(thenNew: false) && dialog.form.fields.allSatisfy { $0.input.secret })
        #expect(dialog.form.note == UIText("ssh.pin.note", ["minimum": "6"]) && state.textFocused)
        // Esc shows the PIV slots without it, and a read again does not ask again on this visit.
        #expect(F.press(.escape, into: &state).isEmpty)
        #expect(state.ssh.dialog == nil && state.ssh.rows == [.piv(F.pivEd), .piv(F.pivEC)])
        #expect(F.press(.char("r"), into: &state) == [.ssh(.load(F.d))])
        _ = update(&state, .ssh(.loaded(keyID: F.d.id, F.pinNeeded)))
        #expect(state.ssh.dialog == nil)
        // v asks for it deliberately.
        _ = F.press(.char("v"), into: &state)
        #expect(state.ssh.dialog?.kind == .pin(thenNew: false))
        _ = F.press(.escape, into: &state)
        // The next visit asks again (nothing was held, so nothing is forgotten on the way out).
        #expect(!F.press(.char("1"), into: &state).contains(where: F.isForget))
        #expect(F.press(.char("6"), into: &state).contains(.ssh(.load(F.d))))
        _ = update(&state, .ssh(.loaded(keyID: F.d.id, F.pinNeeded)))
        #expect(state.ssh.dialog?.kind == .pin(thenNew: false))
    }

    @Test func anAnswerThatComesAfterTheVisitAsksNothing() {
        var state = AppState(now: F.now)
        _ = update(&state, .keyEvent(.keyArrived(F.d)))
        _ = F.press(.char("6"), .char("1"), into: &state)
        _ = update(&state, .ssh(.loaded(keyID: F.d.id, F.pinNeeded)))
        #expect(state.tab == .oath && state.ssh.dialog == nil && state.ssh.busy == nil)
    }

    @Test func aPINTheKeyTookAfterTheVisitEndedIsNotKept() {
        var state = F.opened(F.pinNeeded)
        _ = Fixture.type("482916", into: &state)
        _ = F.press(.enter, into: &state)
        // Esc closes the dialog while the key checks the PIN, and the user leaves the tab: the runner is told to
        // forget the PIN (it may keep it yet, if the key takes it).
        #expect(F.press(.escape, .char("1"), into: &state).contains(where: F.isForget))
        #expect(state.tab == .oath && state.ssh.busy == SSHBusy(.verifyPIN))
        // The key took the PIN: the runner keeps it (SSHTabWork, .verifyPIN) and answers after the visit ended.
        let commands = update(&state, .ssh(.listed(keyID: F.d.id, [F.edSK])))
        #expect(commands.contains(.ssh(.forgetPIN(keyID: F.d.id))))
        #expect(!state.ssh.pinHeld && state.ssh.fidoKeys.isEmpty && state.ssh.busy == nil)
    }

    @Test func thePINTypedIsSentAndTheListFillsTheRows() {
        var state = F.opened(F.pinNeeded)
        // An empty PIN is not sent.
        #expect(F.press(.enter, into: &state).isEmpty)
        #expect(state.ssh.dialog?.form.problem == UIText("fido.pin.empty"))
        _ = Fixture.type("482916", into: &state)
        #expect(F.press(.enter, into: &state) == [.ssh(.verifyPIN(F.d, pin: "482916"))])
        #expect(state.ssh.busy == SSHBusy(.verifyPIN) && state.ssh.dialog?.form.busy == true)
        _ = update(&state, .ssh(.listed(keyID: F.d.id, [F.edSK, F.ecSK])))
        #expect(state.ssh.dialog == nil && state.ssh.busy == nil && state.ssh.pinHeld)
        #expect(state.ssh.load?.fido == .listed)
        #expect(state.ssh.rows == [.fido(F.edSK), .fido(F.ecSK), .piv(F.pivEd), .piv(F.pivEC)])
        #expect(!String(describing: state).contains("482916"))
    }

    @Test func thePINLeavesTheStateWithTheCommand() {
        var state = F.opened(F.pinNeeded)
        _ = Fixture.type("482916", into: &state)
        _ = F.press(.enter, into: &state)
        // The PIN field is emptied as the command leaves: the state keeps no PIN while the key works.
        #expect(!String(describing: state).contains("482916"))
        #expect(state.ssh.dialog?.form.busy == true)
    }

    @Test func nAsksThePINFirstThenOpensTheNewKeyDialog() {
        var state = F.opened(F.pinNeeded)
        _ = F.press(.escape, .char("n"), into: &state)
        #expect(state.ssh.dialog?.kind == .pin(thenNew: true))
        _ = Fixture.type("482916", into: &state)
        #expect(F.press(.enter, into: &state) == [.ssh(.verifyPIN(F.d, pin: "482916"))])
        _ = update(&state, .ssh(.listed(keyID: F.d.id, [F.edSK])))
        #expect(state.ssh.dialog?.kind == .new && state.ssh.busy == nil && state.ssh.pinHeld)
        #expect(state.ssh.rows.first == .fido(F.edSK))
    }

    @Test func leavingTheTabForgetsThePINAndHidesTheFIDOKeys() {
        var state = F.opened()
        _ = F.press(.char("G"), into: &state)
        #expect(state.ssh.pinHeld && state.ssh.selected == .piv(F.pivEC))
        #expect(F.press(.char("2"), into: &state).filter(F.isForget) == [.ssh(.forgetPIN(keyID: F.d.id))])
        #expect(!state.ssh.pinHeld && state.ssh.fidoKeys.isEmpty && state.ssh.load?.fido == .pinNeeded)
        #expect(state.ssh.rows == [.piv(F.pivEd), .piv(F.pivEC)])
        // Tab and Shift-Tab leave it too.
        var again = F.opened()
        #expect(F.press(.tab, into: &again).contains(.ssh(.forgetPIN(keyID: F.d.id))))
        #expect(again.tab == .openpgp && again.ssh.fidoKeys.isEmpty)
    }

    @Test func anotherKeyForgetsThePINOfTheOldOneAndReadsTheNewOne() {
        var state = F.opened()
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        // K opens the key switcher; the second key is chosen.
        let commands = F.press(.char("K"), .down, .enter, into: &state)
        #expect(state.selectedKeyID == Fixture.other.id)
        #expect(commands.contains(.ssh(.forgetPIN(keyID: F.d.id))) && commands.contains(.ssh(.load(Fixture.other))))
        #expect(state.ssh.keyID == Fixture.other.id && state.ssh.load == nil && !state.ssh.pinHeld)
        // The old key's answers change nothing now.
        _ = update(&state, .ssh(.loaded(keyID: F.d.id, F.listed)))
        _ = update(&state, .ssh(.listed(keyID: F.d.id, [F.edSK])))
        #expect(state.ssh.load == nil && state.ssh.rows.isEmpty && !state.ssh.pinHeld)
        // A key without a PIN held has none to forget.
        let back = F.press(.char("K"), .up, .enter, into: &state)
        #expect(!back.contains(where: F.isForget) && back.contains(.ssh(.load(F.d))))
    }

    @Test func cCopiesTheSelectedLineExactly() {
        var state = F.opened()
        #expect(
            F.press(.char("c"), into: &state) == [
                .copy(
                    "sk-ssh-ed25519@openssh.com " + F.edSKBlob + " ssh:", status: UIText("ssh.copied", ["key": "ssh:"]))
            ])
        #expect(
            F.press(.down, .char("c"), into: &state) == [
                .copy(
                    "sk-ecdsa-sha2-nistp256@openssh.com " + F.ecSKBlob + " ssh:",
                    status: UIText("ssh.copiedOfUser", ["key": "ssh:", "user": "alice"]))
            ])
        #expect(
            F.press(.down, .char("c"), into: &state) == [
                .copy("ssh-ed25519 " + F.edBlob + " PIV slot 9A", status: UIText("ssh.copied", ["key": "PIV 9A"]))
            ])
        // The details view copies the same line.
        _ = F.press(.down, .enter, into: &state)
        #expect(state.ssh.showDetails && state.ssh.selected == .piv(F.pivEC))
        #expect(
            F.press(.char("c"), into: &state) == [
                .copy(
                    "ecdsa-sha2-nistp256 " + F.ecBlob + " PIV slot 9C", status: UIText("ssh.copied", ["key": "PIV 9C"]))
            ])
        _ = F.press(.escape, into: &state)
        #expect(!state.ssh.showDetails)
        // No key, nothing copied.
        var none = F.opened(SSHTabLoad(fido: .listed, pivKeys: []))
        #expect(F.press(.char("c"), into: &none).isEmpty && none.status?.text == UIText("ssh.noneSelected"))
    }

    @Test func newKeyDialogBuildsTheRequestAsTyped() throws {
        var state = F.opened()
        _ = F.press(.char("n"), into: &state)
        let dialog = try #require(state.ssh.dialog)
        #expect(dialog.kind == .new && dialog.form[SSHField.application] == "ssh:")
        #expect(dialog.form.fields.first { $0.id == SSHField.type.rawValue }?.choices == ["ed25519", "ecdsa"])
        // Defaults: OpenSSH's application, no user, Ed25519, a touch and no PIN for each use, ~/.ssh.
        #expect(
            F.press(.enter, .enter, .enter, .enter, .enter, .enter, into: &state) == [
                .ssh(
                    .new(
                        F.d,
                        SSHNewKeyRequest(
                            application: "ssh:", user: nil, type: .ed25519, verifyRequired: false,
                            touchRequired: true, directory: "~/.ssh")))
            ])
        #expect(state.ssh.busy == SSHBusy(.new) && state.ssh.dialog?.form.busy == true)
        // Every option changed.
        state = F.opened()
        _ = F.press(.char("n"), into: &state)
        _ = Fixture.type("work", into: &state)
        _ = F.press(.enter, into: &state)
        _ = Fixture.type("alice", into: &state)
        _ = F.press(.enter, .char(" "), .enter, .char(" "), .enter, .char(" "), .enter, into: &state)
        F.retype("/tmp/keys", into: &state)
        #expect(
            F.press(.enter, into: &state) == [
                .ssh(
                    .new(
                        F.d,
                        SSHNewKeyRequest(
                            application: "ssh:work", user: "alice", type: .ecdsa, verifyRequired: true,
                            touchRequired: false, directory: "/tmp/keys")))
            ])
    }

    @Test func newKeyDialogRefusesWhatOpenSSHWouldNot() {
        var state = F.opened(SSHTabLoad(fido: .noPIN, edDSA: false, pivKeys: []))
        _ = F.press(.char("n"), into: &state)
        // A key without EdDSA offers ECDSA only.
        #expect(state.ssh.dialog?.form.fields.first { $0.id == SSHField.type.rawValue }?.choices == ["ecdsa"])
        F.retype("web", into: &state)
        #expect(state.ssh.dialog?.form.problem == UIText("ssh.problem.application"))
        F.retype("ssh:work", into: &state)
        #expect(state.ssh.dialog?.form.problem == nil)
        _ = F.press(.enter, into: &state)
        _ = Fixture.type(String(repeating: "u", count: 32), into: &state)
        #expect(state.ssh.dialog?.form.problem == UIText("ssh.problem.user"))
        _ = F.press(.backspace, .enter, .enter, .enter, .enter, into: &state)
        F.retype("", into: &state)
        #expect(F.press(.enter, into: &state).isEmpty)
        #expect(state.ssh.dialog?.form.problem == UIText("ssh.problem.directory") && state.ssh.busy == nil)
        _ = Fixture.type("~/keys", into: &state)
        #expect(
            F.press(.enter, into: &state) == [
                .ssh(
                    .new(
                        F.d,
                        SSHNewKeyRequest(
                            application: "ssh:work", user: String(repeating: "u", count: 31), type: .ecdsa,
                            verifyRequired: false, touchRequired: true, directory: "~/keys")))
            ])
    }

    /// The new-key dialog filled with ssh:work, alice, ECDSA and /tmp/keys, and submitted.
    static func submittedNewKey() -> (AppState, SSHNewKeyRequest) {
        var state = F.opened()
        _ = F.press(.char("n"), into: &state)
        _ = Fixture.type("work", into: &state)
        _ = F.press(.enter, into: &state)
        _ = Fixture.type("alice", into: &state)
        _ = F.press(.enter, .char(" "), .enter, .enter, .enter, into: &state)
        F.retype("/tmp/keys", into: &state)
        _ = F.press(.enter, into: &state)
        let request = SSHNewKeyRequest(
            application: "ssh:work", user: "alice", type: .ecdsa, verifyRequired: false, touchRequired: true,
            directory: "/tmp/keys")
        return (state, request)
    }

    @Test func filesAndAKeyItWouldReplaceAreAskedAboutInTurn() {
        var (state, request) = Self.submittedNewKey()
        let paths = ["/tmp/keys/id_ecdsa_sk_rk_work_alice", "/tmp/keys/id_ecdsa_sk_rk_work_alice.pub"]
        _ = update(&state, .ssh(.filesExist(keyID: F.d.id, paths)))
        #expect(state.ssh.busy == nil && state.ssh.dialog?.form.busy == false)
        #expect(
            state.ssh.dialog?.form.confirming?.question
                == UIText("ssh.replaceFiles", ["paths": paths.joined(separator: ", ")]))
        // A y in the burst that asked is no answer; a deliberate one sends the request again, files replaced.
        #expect(F.press(.char("y"), into: &state).isEmpty)
        var files = request
        files.replacingFiles = true
        #expect(F.later(.char("y"), into: &state) == [.ssh(.new(F.d, files))])
        // The key holds one for ssh:work and alice: asked too, and the yes keeps the first.
        _ = update(&state, .ssh(.keyExists(keyID: F.d.id, application: "ssh:work", user: "alice")))
        #expect(
            state.ssh.dialog?.form.confirming?.question
                == UIText("ssh.replaceKeyOfUser", ["application": "ssh:work", "user": "alice"]))
        var both = files
        both.replacingKey = true
        #expect(F.later(.char("y"), into: &state) == [.ssh(.new(F.d, both))])
        // Made: the dialog closes, the new key is listed and selected, and the status says where it went.
        var made = F.ecSK
        made.key.application = "ssh:work"
        let path = "/tmp/keys/id_ecdsa_sk_rk_work_alice"
        _ = update(&state, .ssh(.made(keyID: F.d.id, made, path: path, keys: [F.edSK, made])))
        #expect(state.ssh.dialog == nil && state.ssh.busy == nil && state.ssh.selected == .fido(made))
        #expect(state.status?.text == UIText("ssh.made", ["type": "ecdsa-sk", "path": path]))
        #expect(state.status?.kind == .success)
    }

    @Test func aKeyWithoutAUserIsAskedAboutByItsApplication() {
        var (state, _) = Self.submittedNewKey()
        _ = update(&state, .ssh(.keyExists(keyID: F.d.id, application: "ssh:work", user: nil)))
        #expect(
            state.ssh.dialog?.form.confirming?.question
                == UIText("ssh.replaceKey", ["application": "ssh:work", "user": ""]))
    }

    @Test func anEditAfterAQuestionStartsOver() {
        var (state, request) = Self.submittedNewKey()
        _ = update(&state, .ssh(.filesExist(keyID: F.d.id, ["/tmp/keys/id_ecdsa_sk_rk_work_alice"])))
        _ = F.later(.char("y"), into: &state)
        _ = update(&state, .ssh(.keyExists(keyID: F.d.id, application: "ssh:work", user: "alice")))
        // No: back to the fields. The directory changed: nothing agreed before holds for it.
        #expect(F.later(.char("n"), into: &state).isEmpty)
        #expect(state.ssh.dialog?.form.confirming == nil && state.ssh.dialog?.kind == .new)
        _ = Fixture.type("2", into: &state)
        var edited = request
        edited.directory = "/tmp/keys2"
        #expect(F.press(.enter, into: &state) == [.ssh(.new(F.d, edited))])
        // A question answered for a dialog closed meanwhile asks nothing.
        _ = F.press(.escape, into: &state)
        _ = update(&state, .ssh(.filesExist(keyID: F.d.id, ["/tmp/keys2/id_ecdsa_sk_rk_work_alice"])))
        #expect(state.ssh.dialog == nil && state.ssh.busy == nil)
    }

    @Test func exportWritesTheSelectedKeyOrAllAndAsksBeforeReplacing() {
        var state = F.opened()
        _ = F.press(.down, .char("e"), into: &state)
        #expect(state.ssh.dialog?.kind == .export(credentialID: F.ecSK.credentialID))
        #expect(F.press(.enter, into: &state) == [.ssh(.export(F.d, [F.ecSK], directory: "~/.ssh", overwrite: false))])
        _ = update(&state, .ssh(.filesExist(keyID: F.d.id, ["/home/a/.ssh/id_ecdsa_sk_rk__alice"])))
        #expect(
            F.later(.char("y"), into: &state) == [.ssh(.export(F.d, [F.ecSK], directory: "~/.ssh", overwrite: true))])
        _ = update(&state, .ssh(.exported(keyID: F.d.id, paths: ["/home/a/.ssh/id_ecdsa_sk_rk__alice"])))
        #expect(state.ssh.dialog == nil && state.ssh.busy == nil)
        #expect(state.status?.text == UIText("ssh.exported", ["path": "/home/a/.ssh/id_ecdsa_sk_rk__alice"]))
        // E: every FIDO key; a question answered yes before does not carry over.
        _ = F.press(.char("E"), into: &state)
        #expect(state.ssh.dialog?.kind == .export(credentialID: nil))
        #expect(
            F.press(.enter, into: &state) == [
                .ssh(.export(F.d, [F.edSK, F.ecSK], directory: "~/.ssh", overwrite: false))
            ])
        _ = update(&state, .ssh(.exported(keyID: F.d.id, paths: ["/k/id_ed25519_sk_rk", "/k/id_ecdsa_sk_rk__alice"])))
        #expect(state.status?.text == UIText("ssh.exportedMany", ["count": "2", "directory": "/k"]))
    }

    @Test func deleteAsksFirstAndSendsTheCredentialID() throws {
        var state = F.opened()
        _ = F.press(.down, .char("d"), into: &state)
        let dialog = try #require(state.ssh.dialog)
        #expect(dialog.kind == .delete(credentialID: F.ecSK.credentialID) && dialog.form.isConfirmation)
        #expect(dialog.form.title == UIText("ssh.delete.title", ["application": "ssh:"]))
        #expect(dialog.form.note == UIText("ssh.delete.note", ["fingerprint": F.ecSKFingerprint]))
        // n keeps it; a y in the burst of d is no answer.
        #expect(F.press(.char("n"), into: &state).isEmpty && state.ssh.dialog == nil)
        #expect(F.press(.char("d"), .char("y"), into: &state).isEmpty && state.ssh.dialog != nil)
        #expect(F.later(.char("y"), into: &state) == [.ssh(.delete(F.d, credentialID: F.ecSK.credentialID))])
        #expect(state.ssh.dialog == nil && state.ssh.busy == SSHBusy(.delete))
        _ = update(&state, .ssh(.deleted(keyID: F.d.id, F.ecSK, remaining: [F.edSK])))
        #expect(state.ssh.busy == nil && state.ssh.rows == [.fido(F.edSK), .piv(F.pivEd), .piv(F.pivEC)])
        #expect(
            state.status?.text == UIText("ssh.deleted", ["application": "ssh:", "fingerprint": F.ecSKFingerprint]))
    }

    @Test func deletingWantsThePINOfTheVisit() {
        // A key without a PIN: a key made there is listed, but deleting it needs a PIN first.
        var state = F.opened(SSHTabLoad(fido: .noPIN, pivKeys: [F.pivEd]))
        _ = update(&state, .ssh(.made(keyID: F.d.id, F.edSK, path: "/k/id_ed25519_sk_rk", keys: nil)))
        #expect(state.ssh.rows == [.fido(F.edSK), .piv(F.pivEd)] && state.ssh.selected == .fido(F.edSK))
        #expect(F.press(.char("d"), into: &state).isEmpty)
        #expect(state.ssh.dialog == nil && state.status?.text == UIText("ssh.fido.noPIN"))
        // The held PIN refused (changed elsewhere) while a key was made: the rows stay, and d asks for it.
        var refused = F.opened()
        _ = F.press(.char("n"), .enter, .enter, .enter, .enter, .enter, .enter, into: &refused)
        _ = update(&refused, F.failed(.new, .wrongPIN(retriesLeft: 5)))
        _ = F.press(.escape, into: &refused)
        #expect(!refused.ssh.pinHeld && refused.ssh.selected == .fido(F.edSK))
        #expect(F.press(.char("d"), into: &refused).isEmpty)
        // The refusal made the keys want the PIN again: d asks for it, and says nothing about there being none.
        #expect(refused.ssh.load?.fido == .pinNeeded && refused.ssh.dialog?.kind == .pin(thenNew: false))
        #expect(refused.status?.text != UIText("ssh.fido.none"))
    }

    @Test func aPIVSlotIsNotDeletedOrExportedHere() {
        var state = F.opened()
        _ = F.press(.char("G"), into: &state)
        #expect(state.ssh.selected == .piv(F.pivEC))
        #expect(F.press(.char("d"), into: &state).isEmpty)
        #expect(state.ssh.dialog == nil && state.status?.text == UIText("ssh.deleteFIDOOnly"))
        #expect(F.press(.delete, into: &state).isEmpty && state.ssh.dialog == nil)
        #expect(F.press(.char("e"), into: &state).isEmpty)
        #expect(state.ssh.dialog == nil && state.status?.text == UIText("ssh.exportFIDOOnly"))
        // E writes the FIDO keys, which the PIV row does not stop.
        _ = F.press(.char("E"), into: &state)
        #expect(state.ssh.dialog?.kind == .export(credentialID: nil))
    }

    @Test func aWrongPINKeepsThePINDialogAndSaysHowManyTriesAreLeft() throws {
        var state = F.opened(F.pinNeeded)
        _ = Fixture.type("000000", into: &state)
        _ = F.press(.enter, into: &state)
        _ = update(&state, F.failed(.verifyPIN, .wrongPIN(retriesLeft: 6)))
        let dialog = try #require(state.ssh.dialog)
        #expect(dialog.kind == .pin(thenNew: false) && !dialog.form.busy && dialog.form[SSHField.pin].isEmpty)
        #expect(dialog.form.problem == UIText("fido.wrongPIN", ["retries": "6"]))
        #expect(state.ssh.busy == nil && !state.ssh.pinHeld)
        // The held PIN refused while making a key (changed elsewhere): the PIN is asked instead.
        var held = F.opened()
        _ = F.press(.char("n"), into: &held)
        _ = F.press(.enter, .enter, .enter, .enter, .enter, .enter, into: &held)
        _ = update(&held, F.failed(.new, .wrongPIN(retriesLeft: 5)))
        #expect(held.ssh.dialog?.kind == .pin(thenNew: false) && !held.ssh.pinHeld)
        #expect(held.ssh.dialog?.form.problem == UIText("fido.wrongPIN", ["retries": "5"]))
        // No PIN held where one was needed: asked for, in those words.
        var none = F.opened()
        _ = F.press(.char("d"), into: &none)
        _ = F.later(.char("y"), into: &none)
        _ = update(&none, F.failed(.delete, .tokenInvalid))
        #expect(none.ssh.dialog?.kind == .pin(thenNew: false))
        #expect(none.ssh.dialog?.form.problem == UIText("ssh.pinAgain"))
    }

    @Test func aKeyPulledOutMidOperationClosesTheDialogAndSaysSo() {
        var state = F.opened(F.pinNeeded)
        _ = Fixture.type("482916", into: &state)
        _ = F.press(.enter, into: &state)
        _ = update(&state, F.failed(.verifyPIN, .keyGone))
        #expect(state.ssh.dialog == nil && state.ssh.busy == nil)
        #expect(
            state.status
                == StatusMessage(UIText("status.keyGoneMidOperation"), kind: .error, subject: .operationCutShort))
        // A blocked PIN closes the dialog too.
        var blocked = F.opened(F.pinNeeded)
        _ = Fixture.type("000000", into: &blocked)
        _ = F.press(.enter, into: &blocked)
        _ = update(&blocked, F.failed(.verifyPIN, .pinBlocked))
        #expect(blocked.ssh.dialog == nil && blocked.status?.text == UIText("fido.alert.blocked"))
        // A read that failed before anything was shown says why in the tab.
        var unread = AppState(now: F.now)
        _ = update(&unread, .keyEvent(.keyArrived(F.d)))
        _ = F.press(.char("6"), into: &unread)
        _ = update(&unread, F.failed(.load, .notAvailable))
        #expect(unread.ssh.phase == .unavailable(UIText("fido.notAvailable")) && unread.ssh.busy == nil)
    }

    @Test func answersForAnotherKeyAreIgnored() {
        var state = F.opened(F.pinNeeded)
        _ = Fixture.type("482916", into: &state)
        _ = F.press(.enter, into: &state)
        let before = state
        let other = "elsewhere"
        let answers: [SSHTabMsg] = [
            .loaded(keyID: other, F.listed), .touch(keyID: other, waiting: true), .listed(keyID: other, [F.edSK]),
            .filesExist(keyID: other, ["/x"]), .keyExists(keyID: other, application: "ssh:", user: nil),
            .made(keyID: other, F.edSK, path: "/x", keys: nil), .exported(keyID: other, paths: ["/x"]),
            .deleted(keyID: other, F.edSK, remaining: []),
            .failed(keyID: other, SSHFailure(.verifyPIN, .wrongPIN(retriesLeft: 1))),
        ]
        for answer in answers {
            let commands = update(&state, .ssh(answer))
            // A PIN another key took is forgotten: the runner may have kept it after the key changed.
            if case .listed = answer {
                #expect(commands == [.ssh(.forgetPIN(keyID: other))])
            } else {
                #expect(commands.isEmpty)
            }
            #expect(state.ssh == before.ssh && state.status == before.status, "\(answer)")
            #expect(state.touchAlert == nil)
        }
    }

    @Test func aTouchIsAnnouncedOnceAndEscStopsTheWait() {
        var (state, _) = Self.submittedNewKey()
        #expect(state.touchAlert == nil)
        _ = update(&state, .ssh(.touch(keyID: F.d.id, waiting: true)))
        #expect(state.ssh.busy == SSHBusy(.new, touch: true))
        #expect(state.touchAlert?.id == 1 && state.status?.subject == .touch)
        #expect(state.touchAlert?.text.nested["purpose"] == UIText("touch.for.ssh.new"))
        // The same wait said again is not a new alert.
        _ = update(&state, .ssh(.touch(keyID: F.d.id, waiting: true)))
        #expect(state.touchAlert?.id == 1)
        // Esc closes the dialog and stops the wait; the answer still comes.
        #expect(F.press(.escape, into: &state) == [.ssh(.cancel)])
        #expect(state.ssh.dialog == nil)
        _ = update(&state, F.failed(.new, .cancelled))
        #expect(state.ssh.busy == nil && state.status?.text == UIText("fido.cancelled"))
        // A deletion waits without a dialog: Esc stops it, other keys wait.
        var deleting = F.opened()
        _ = F.press(.char("d"), into: &deleting)
        _ = F.later(.char("y"), into: &deleting)
        _ = update(&deleting, .ssh(.touch(keyID: F.d.id, waiting: true)))
        #expect(F.press(.char("n"), .char("c"), into: &deleting).isEmpty && deleting.ssh.dialog == nil)
        #expect(F.press(.escape, into: &deleting) == [.ssh(.cancel)])
        // Esc without a wait for a touch stops nothing.
        var reading = F.opened()
        _ = F.press(.char("r"), into: &reading)
        #expect(F.press(.escape, into: &reading).isEmpty)
    }

    @Test func aFileThatCouldNotBeWrittenIsNotReportedAsWritten() {
        var (state, _) = Self.submittedNewKey()
        // What the work posts when the key made the credential but its files could not be written.
        let unwritable = UIText("error.file-unwritable", ["path": "/tmp/keys", "detail": "No such file or directory"])
        var made = F.ecSK
        made.key.application = "ssh:work"
        _ = update(
            &state, .ssh(.madeWithoutFiles(keyID: F.d.id, made, problem: unwritable, keys: [F.edSK, made])))
        // The key holds the new credential and the list shows it; the status says the files were not written.
        #expect(state.ssh.rows.contains(.fido(made)) && state.ssh.dialog == nil)
        #expect(state.status?.kind == .error)
        #expect(state.status?.text == UIText("ssh.madeWithoutFiles", nested: ["why": unwritable]))
    }

    @Test func pasteGoesIntoADialogFieldOnly() {
        var state = F.opened()
        #expect(!sshTabPaste(&state, "482916"))
        _ = F.press(.char("v"), into: &state)
        #expect(sshTabPaste(&state, "482916") && state.ssh.dialog?.form[SSHField.pin] == "482916")
    }

    @Test func helpNamesTheTabsKeys() {
        var state = F.opened()
        state.showHelp = true
        let entries = helpEntries(state)
        for key in ["Enter", "c", "n", "e / E", "d / Del", "v", "r"] {
            #expect(entries.contains { $0.keys == key }, "\(key)")
        }
    }
}
