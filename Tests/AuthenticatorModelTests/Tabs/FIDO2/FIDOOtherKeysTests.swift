import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// Two keys with FIDO2 plugged in, named "daily" and "backup" (and a third, "spare", when asked), the FIDO2 tab on
/// daily with its credentials listed.
enum FIDOKeys {
    static let daily = Fixture.reader
    static let backup = Fixture.other
    static let spare = KeyDescriptor(transport: .pcsc(reader: "Virtual PCD 00 02"), name: "Virtual PCD 00 02")

    static func probed(_ d: KeyDescriptor, serial: UInt32) -> Msg {
        var info = KeyInfo(
            reader: d.name, atr: [], device: DeviceInfo(version: Version(5, 7, 2)), applications: ["OATH", "FIDO2"],
            overNFC: false)
        info.device.serial = serial
        return .probed(keyID: d.id, info)
    }

    static let shared = FIDOFixture.credential("github.com", "alice", 1)
    static let dailyOnly = FIDOFixture.credential("example.com", "bob", 2)
    static let sharedOnBackup = FIDOFixture.credential("github.com", "alice", 3)
    static let backupOnly = FIDOFixture.credential("spare.example", "carol", 4)

    static func state(spare: Bool = false) -> AppState {
        var state = AppState(now: 1000)
        state.keyNames = [41_000_001: "daily", 41_000_002: "backup", 41_000_003: "spare"]
        let keys = [(daily, 41_000_001), (backup, 41_000_002)] + (spare ? [(Self.spare, 41_000_003)] : [])
        for (d, serial) in keys {
            _ = update(&state, .keyEvent(.keyArrived(d)))
            _ = update(&state, probed(d, serial: UInt32(serial)))
        }
        _ = update(&state, .keyPress(.char("3")))
        _ = update(&state, .fido(.loaded(keyID: daily.id, FIDOFixture.info(pinSet: true))))
        _ = update(
            &state,
            .fido(.verified(keyID: daily.id, FIDOFixture.info(pinSet: true), credentials: [shared, dailyOnly])))
        state.status = nil
        return state
    }

    static func type(_ text: String, into state: inout AppState) -> [Command] {
        text.flatMap { update(&state, .keyPress(.char($0))) } + update(&state, .keyPress(.enter))
    }
}

@Suite("Model: the FIDO2 tab's credentials beside the other keys'")
struct FIDOOtherKeysTests {
    typealias K = FIDOKeys

    @Test func aReadsTheOtherKeysAsksEachPINByNameAndMarksEachRelyingParty() throws {
        var state = K.state()
        #expect(state.fidoRelyingParties.allSatisfy { $0.holders.isEmpty && $0.missing.isEmpty })
        let commands = update(&state, .keyPress(.char("A")))
        #expect(commands == [.fido(.loadOthers([K.backup]))])
        #expect(state.fido.others[K.backup.id]?.phase == .loading)
        #expect(state.status?.text == UIText("fido.others.on", ["keys": "backup"]))
        _ = update(&state, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: true, retries: 7))))
        // The dialog names the key, and says how many tries it has.
        let dialog = try #require(state.fido.dialog)
        #expect(dialog.kind == .otherPIN(keyID: K.backup.id))
        #expect(dialog.form.title == UIText("fido.others.pinTitle", ["key": "YubiKey 5 'backup'"]))
        #expect(dialog.form.note == UIText("fido.others.pinNote", ["key": "backup", "retries": "7"]))
        // The PIN leaves with the command; the form keeps nothing.
        #expect(K.type("backup-pin", into: &state) == [.fido(.readOther(K.backup, pin: "backup-pin"))])
        #expect(state.fido.dialog?.form[PINField.pin] == "" && state.fido.dialog?.form.busy == true)
        #expect(state.fido.others[K.backup.id]?.phase == .reading)
        _ = update(&state, .fido(.otherCredentials(keyID: K.backup.id, [K.sharedOnBackup, K.backupOnly])))
        #expect(state.fido.dialog == nil)
        #expect(state.status?.text == UIText("fido.others.read", ["key": "backup", "count": "2"]))
        let rows = state.fidoRelyingParties
        #expect(rows.map(\.rpID) == ["example.com", "github.com", "spare.example"])
        #expect(rows[0].holders == [K.daily.id] && rows[0].missing == [K.backup.id])
        #expect(rows[1].holders == [K.daily.id, K.backup.id] && rows[1].missing.isEmpty)
        #expect(rows[2].holders == [K.backup.id] && rows[2].missing == [K.daily.id])
        // The credentials listed stay the selected key's: selection, delete and rename act on them.
        #expect(state.fido.sortedCredentials.map(\.id) == [K.dailyOnly.id, K.shared.id])
        // A again: the selected key's alone.
        #expect(update(&state, .keyPress(.char("A"))).isEmpty)
        #expect(state.fido.others.isEmpty && state.status?.text.key == "fido.others.off")
        #expect(state.fidoRelyingParties.map(\.rpID) == ["example.com", "github.com"])
    }

    @Test func aWrongPINSaysSoWithTheTriesLeftAndAsksAgain() throws {
        var state = K.state()
        _ = update(&state, .keyPress(.char("A")))
        _ = update(&state, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: true))))
        _ = K.type("not-the-pin", into: &state)
        _ = update(
            &state,
            .fido(.otherFailed(keyID: K.backup.id, FIDOFailure(.list, .wrongPIN(retriesLeft: 6)))))
        let dialog = try #require(state.fido.dialog)
        #expect(dialog.kind == .otherPIN(keyID: K.backup.id) && !dialog.form.busy)
        #expect(dialog.form.problem == UIText("fido.wrongPIN", ["retries": "6"]))
        #expect(state.fido.others[K.backup.id]?.phase == .needsPIN)
        #expect(state.fido.others[K.backup.id]?.info?.retries == 6)
        #expect(K.type("backup-pin", into: &state) == [.fido(.readOther(K.backup, pin: "backup-pin"))])
        _ = update(&state, .fido(.otherCredentials(keyID: K.backup.id, [K.sharedOnBackup])))
        #expect(state.fido.others[K.backup.id]?.credentials == [K.sharedOnBackup])
        // A blocked PIN (or three wrong in a row) leaves the key out, saying why.
        var blocked = K.state()
        _ = update(&blocked, .keyPress(.char("A")))
        _ = update(&blocked, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: true))))
        _ = K.type("wrong", into: &blocked)
        _ = update(&blocked, .fido(.otherFailed(keyID: K.backup.id, FIDOFailure(.list, .pinAuthBlocked))))
        #expect(blocked.fido.dialog == nil)
        #expect(blocked.fido.others[K.backup.id]?.phase == .skipped(UIText("fido.alert.reinsert")))
        #expect(blocked.status?.text.key == "fido.others.failedOn" && blocked.status?.kind == .error)
    }

    @Test func escSkipsAKeyAndKeysWithoutAPINOrCredentialManagementAreNamedAsSuch() throws {
        var state = K.state(spare: true)
        #expect(update(&state, .keyPress(.char("A"))) == [.fido(.loadOthers([K.backup, K.spare]))])
        // Spare answers first, but backup comes first in the key switcher's order: each is asked in that order.
        _ = update(&state, .fido(.otherInfo(keyID: K.spare.id, FIDOFixture.info(pinSet: true))))
        #expect(state.fido.dialog?.kind == .otherPIN(keyID: K.spare.id))
        _ = update(&state, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: true))))
        #expect(state.fido.dialog?.kind == .otherPIN(keyID: K.spare.id))
        // Esc: spare is left out, and backup is asked next.
        #expect(update(&state, .keyPress(.escape)).isEmpty)
        #expect(state.fido.others[K.spare.id]?.phase == .skipped(UIText("fido.others.skipped")))
        #expect(state.fido.dialog?.kind == .otherPIN(keyID: K.backup.id))
        _ = update(&state, .keyPress(.escape))
        #expect(state.fido.dialog == nil && state.fidoComparedKeys.isEmpty)
        #expect(state.fidoRelyingParties.allSatisfy { $0.missing.isEmpty })

        #expect(fidoOtherKeyReadiness(FIDOFixture.info(pinSet: false)) == .skipped(UIText("fido.others.noPIN")))
        #expect(
            fidoOtherKeyReadiness(FIDOFixture.info(pinSet: true, credentialManagement: false))
                == .skipped(UIText("fido.others.noCredentialManagement")))
        #expect(
            fidoOtherKeyReadiness(FIDOFixture.info(pinSet: nil)) == .skipped(UIText("fido.others.noPINSupport")))
        #expect(
            fidoOtherKeyReadiness(FIDOFixture.info(pinSet: true, retries: 0))
                == .skipped(UIText("fido.others.blocked")))
        var noPIN = K.state()
        _ = update(&noPIN, .keyPress(.char("A")))
        _ = update(&noPIN, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: false))))
        #expect(noPIN.fido.dialog == nil)
        #expect(noPIN.fido.others[K.backup.id]?.phase == .skipped(UIText("fido.others.noPIN")))
        // A key that speaks U2F only is named with the reason the tab gives for it.
        var u2f = K.state()
        _ = update(&u2f, .keyPress(.char("A")))
        _ = update(&u2f, .fido(.otherFailed(keyID: K.backup.id, FIDOFailure(.load, .u2fOnly))))
        #expect(u2f.fido.others[K.backup.id]?.phase == .skipped(UIText("fido.u2fOnly")))
    }

    @Test func aKeyPulledOutDropsItsMarksAndItsDialog() throws {
        var state = K.state(spare: true)
        _ = update(&state, .keyPress(.char("A")))
        _ = update(&state, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: true))))
        _ = K.type("backup-pin", into: &state)
        _ = update(&state, .fido(.otherCredentials(keyID: K.backup.id, [K.sharedOnBackup])))
        _ = update(&state, .fido(.otherInfo(keyID: K.spare.id, FIDOFixture.info(pinSet: true))))
        #expect(state.fido.dialog?.kind == .otherPIN(keyID: K.spare.id))
        #expect(state.fidoRelyingParties.first { $0.rpID == "example.com" }?.missing == [K.backup.id])
        // Spare leaves while its PIN is asked: the dialog goes with it.
        _ = update(&state, .keyEvent(.keyLeft(id: K.spare.id)))
        #expect(state.fido.dialog == nil && state.fido.others[K.spare.id] == nil)
        // Backup leaves: its marks go; daily's list stays as it was.
        _ = update(&state, .keyEvent(.keyLeft(id: K.backup.id)))
        #expect(state.fido.others.isEmpty && state.fidoComparedKeys.isEmpty)
        #expect(state.fidoRelyingParties.map(\.rpID) == ["example.com", "github.com"])
        #expect(state.fidoRelyingParties.allSatisfy { $0.holders.isEmpty && $0.missing.isEmpty })
        #expect(state.fido.showCredentials && state.fido.credentials?.count == 2)
        // An answer of a key that left is not the view's any more.
        _ = update(&state, .fido(.otherCredentials(keyID: K.backup.id, [K.backupOnly])))
        #expect(state.fido.others.isEmpty)
    }

    @Test func leavingTheViewEndsTheComparisonAndWipesTheDialog() throws {
        for leave: [KeyPress] in [[.escape, .escape], [.char("l")], [.char("1")]] {
            var state = K.state()
            _ = update(&state, .keyPress(.char("A")))
            _ = update(&state, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: true))))
            _ = K.type("backup-pin", into: &state)
            _ = update(&state, .fido(.otherCredentials(keyID: K.backup.id, [K.sharedOnBackup])))
            for key in leave { _ = update(&state, .keyPress(key)) }
            #expect(state.fido.others.isEmpty, "\(leave)")
        }
        // Another tab while a PIN is being typed: Tab moves in the dialog, so the tab is left by Esc first.
        var typing = K.state()
        _ = update(&typing, .keyPress(.char("A")))
        _ = update(&typing, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: true))))
        for c in "12" { _ = update(&typing, .keyPress(.char(c))) }
        #expect(typing.fido.dialog?.form[PINField.pin] == "12")
        fidoEndComparison(&typing)
        #expect(typing.fido.dialog == nil && typing.fido.others.isEmpty)
        // K chooses another key: what was read goes with the key it was compared with.
        var switched = K.state()
        _ = update(&switched, .keyPress(.char("A")))
        _ = update(&switched, .keyPress(.char("K")))
        _ = update(&switched, .keyPress(.down))
        _ = update(&switched, .keyPress(.enter))
        #expect(switched.selectedKeyID == K.backup.id && switched.fido.others.isEmpty)
    }

    @Test func withoutAnotherKeyASaysSoAndTheHintsAndHelpOfferIt() {
        var alone = AppState(now: 1000)
        _ = update(&alone, .keyEvent(.keyArrived(K.daily)))
        _ = update(&alone, .keyPress(.char("3")))
        _ = update(&alone, .fido(.loaded(keyID: K.daily.id, FIDOFixture.info(pinSet: true))))
        _ = update(
            &alone, .fido(.verified(keyID: K.daily.id, FIDOFixture.info(pinSet: true), credentials: [K.shared])))
        #expect(update(&alone, .keyPress(.char("A"))).isEmpty)
        #expect(alone.status?.text.key == "fido.others.none" && alone.fido.others.isEmpty)
        // The help names the binding, rebound or not.
        #expect(fidoTabHelp(alone).contains { $0.keys == "A" && $0.text.key == "fido.help.otherKeys" })
        var rebound = alone
        rebound.bindings = try! KeyBindings(overrides: [.allKeys: "O"])
        #expect(fidoTabHelp(rebound).contains { $0.keys == "O" && $0.text.key == "fido.help.otherKeys" })
        // Outside the credentials A does nothing.
        var info = K.state()
        _ = update(&info, .keyPress(.escape))
        #expect(update(&info, .keyPress(.char("A"))).isEmpty && info.fido.others.isEmpty)
    }

    @Test func relyingPartiesOverKeysAreEachOnceWithTheirHoldersAndCredentialsInKeyOrder() {
        let empty = FIDOCredential(rpID: "github.com", rpName: nil, userName: "zoe", credentialID: [5])
        let parties = FIDOAcrossKeys.relyingParties([
            [K.shared, K.dailyOnly], [empty, K.sharedOnBackup, K.backupOnly], [],
        ])
        #expect(parties.map(\.rpID) == ["example.com", "github.com", "spare.example"])
        #expect(parties.map(\.holders) == [[0], [0, 1], [1]])
        #expect(parties.map(\.missing) == [[1, 2], [2], [0, 2]])
        // Key order, then user; the name from the first key that gives one.
        #expect(
            parties[1].credentials.map { [$0.key, Int($0.credential.credentialID[0])] } == [[0, 1], [1, 3], [1, 5]])
        #expect(parties[1].rpName == "github.com")
    }

    @Test func aKeyWhoseInformationCameWhileAnotherDialogWasOpenAsksWhenItCloses() {
        var state = K.state()
        _ = update(&state, .keyPress(.char("A")))
        _ = update(&state, .keyPress(.char("d")))
        #expect(state.fido.dialog?.kind == .deleteCredential(id: K.dailyOnly.id))
        _ = update(&state, .fido(.otherInfo(keyID: K.backup.id, FIDOFixture.info(pinSet: true))))
        #expect(state.fido.dialog?.kind == .deleteCredential(id: K.dailyOnly.id))
        _ = update(&state, .keyPress(.escape))
        #expect(state.fido.dialog?.kind == .otherPIN(keyID: K.backup.id))
    }

    @Test func aKeyPluggedInWhileComparingJoins() {
        var state = K.state()
        _ = update(&state, .keyPress(.char("A")))
        _ = update(&state, .keyEvent(.keyArrived(K.spare)))
        let commands = update(&state, K.probed(K.spare, serial: 41_000_003))
        #expect(commands.contains(.fido(.loadOthers([K.spare]))))
        #expect(state.fido.others[K.spare.id]?.phase == .loading)
    }
}

@Suite("FIDO2 tab work: another key's credentials")
struct FIDOOtherKeysWorkTests {
    static let d = FIDOTestBackend.descriptor

    @Test func anotherKeysCredentialsAreReadWithItsPINAndNoTokenIsKept() async throws {
        let backend = FIDOTestBackend()
        let harness = Harness(backend, directory: temporaryDirectory())
        let fido = try await PCSCFIDOConnection.open(card: VirtualKeyConnection(key: backend.key))
        let session = try await CTAP2Session.make(connection: fido)
        let made = try await session.makeCredential(
            clientDataHash: Crypto.digest(.sha256, Array("alice".utf8)), rp: .init(id: "example.org", name: "Example"),
            user: .init(id: Array("alice".utf8), name: "alice", displayName: "Alice"), residentKey: true)
        try await session.setPIN("other-pin")
        await fido.close()

        func answer(_ command: FIDOTabCommand) async throws -> FIDOTabMsg {
            try await harness.run(.fido(command)) { msg -> FIDOTabMsg? in
                if case .fido(let m) = msg { return m }
                return nil
            }
        }
        guard case .otherInfo(Self.d.id, let info) = try await answer(.loadOthers([Self.d])) else {
            Issue.record("no information"); return
        }
        #expect(info.pinSet == true && info.credentialManagement)
        #expect(
            try await answer(.readOther(Self.d, pin: "wrong-pin"))
                == .otherFailed(keyID: Self.d.id, FIDOFailure(.list, .wrongPIN(retriesLeft: 7))))
        guard case .otherCredentials(Self.d.id, let listed) = try await answer(.readOther(Self.d, pin: "other-pin"))
        else {
            Issue.record("no credentials"); return
        }
        #expect(listed.map(\.credentialID) == [made.credentialID] && listed.first?.rpID == "example.org")
        // No token was kept: the selected key's list still asks for the PIN.
        #expect(
            try await answer(.listCredentials(Self.d))
                == .failed(keyID: Self.d.id, FIDOFailure(.list, .tokenInvalid)))
    }
}
