import Testing
import KeyKit
@testable import AuthenticatorModel

/// Two keys plugged in, named "daily" and "backup", for the OATH tab's all-keys view.
enum TwoKeys {
    static let daily = Fixture.reader
    static let backup = Fixture.other

    static func info(_ d: KeyDescriptor, serial: UInt32) -> KeyInfo {
        var info = KeyInfo(
            reader: d.name, atr: [], device: DeviceInfo(version: Version(5, 7, 2)), applications: ["OATH"],
            overNFC: false)
        info.device.serial = serial
        return info
    }

    static func snapshot(_ entries: [OATHSession.Entry], device: String) -> OATHSnapshot {
        OATHSnapshot(deviceID: device, version: Version(5, 7, 2), hasPassword: false, entries: entries)
    }

    /// Both keys plugged in and probed, daily selected with `daily` read; with `allKeys`, the view over both keys on
    /// and backup's `backup` read.
    static func state(
        daily: [OATHSession.Entry], backup: [OATHSession.Entry], allKeys: Bool = true
    ) -> AppState {
        var state = AppState(now: 1000)
        state.keyNames = [41_000_001: "daily", 41_000_002: "backup"]
        _ = update(&state, .keyEvent(.keyArrived(Self.daily)))
        _ = update(&state, .probed(keyID: Self.daily.id, info(Self.daily, serial: 41_000_001)))
        _ = update(&state, .oath(.opened(keyID: Self.daily.id, snapshot(daily, device: "dev-daily"))))
        _ = update(&state, .keyEvent(.keyArrived(Self.backup)))
        _ = update(&state, .probed(keyID: Self.backup.id, info(Self.backup, serial: 41_000_002)))
        if allKeys {
            _ = update(&state, .keyPress(.char("A")))
            _ = update(&state, .oath(.opened(keyID: Self.backup.id, snapshot(backup, device: "dev-backup"))))
        }
        state.status = nil
        return state
    }

    static let github = Fixture.entry("GitHub:alice", code: "111111", from: 990)
    static let githubOnBackup = Fixture.entry("GitHub:alice", code: "222222", from: 990)
    static let dailyOnly = Fixture.entry("Daily:bob", code: "333333", from: 990)
    static let backupOnly = Fixture.entry("Spare:carol", code: "444444", from: 990)
    static let uri = "otpauth://totp/Ex:dave?secret=JBSWY3DPEHPK3PXP&issuer=Ex"
}

@Suite("Model: the OATH tab over every key")
struct OATHAllKeysTests {
    @Test func aTogglesTheViewReadsTheOtherKeysAndWritesTheChoice() {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        #expect(!state.oath.allKeys)
        let on = update(&state, .keyPress(.char("A")))
        #expect(on == [.rememberOATHAllKeys(true), .oath(.open(TwoKeys.backup, time: 1000))])
        #expect(state.oath.allKeys && state.oath.others[TwoKeys.backup.id]?.phase == .loading)
        #expect(state.status?.text.key == "oath.allKeys.on")
        let off = update(&state, .keyPress(.char("A")))
        #expect(off == [.rememberOATHAllKeys(false)])
        #expect(!state.oath.allKeys && state.oath.others.isEmpty)
        // The one-key view is as it was: the selected key's account.
        #expect(state.oath.visibleAccounts.map(\.id) == ["GitHub:alice"])
    }

    @Test func eachAccountOnceWithTheKeysThatHoldItAndTheFirstKeysCode() throws {
        let state = TwoKeys.state(
            daily: [TwoKeys.github, TwoKeys.dailyOnly], backup: [TwoKeys.githubOnBackup, TwoKeys.backupOnly])
        let rows = state.visibleOATHRows
        #expect(rows.map(\.id) == ["Daily:bob", "GitHub:alice", "Spare:carol"])
        let github = try #require(rows.first { $0.id == "GitHub:alice" })
        #expect(github.holders == [TwoKeys.daily.id, TwoKeys.backup.id] && github.missing.isEmpty)
        #expect(github.account.code?.value == "111111" && github.keyID == TwoKeys.daily.id)
        let daily = try #require(rows.first { $0.id == "Daily:bob" })
        #expect(daily.holders == [TwoKeys.daily.id] && daily.missing == [TwoKeys.backup.id])
        let spare = try #require(rows.first { $0.id == "Spare:carol" })
        #expect(spare.holders == [TwoKeys.backup.id] && spare.missing == [TwoKeys.daily.id])
        #expect(spare.account.code?.value == "444444")
        #expect(state.keyLabel(id: TwoKeys.daily.id) == "daily" && state.keyLabel(id: TwoKeys.backup.id) == "backup")
        // A key without a name is called by its serial.
        var unnamed = state
        unnamed.keyNames = [:]
        #expect(unnamed.keyLabel(id: TwoKeys.backup.id) == "41000002")
    }

    @Test func codesAreAskedOfEveryKeyAtOnceAndEachKeysAnswerIsItsOwn() {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [TwoKeys.githubOnBackup, TwoKeys.backupOnly])
        #expect(update(&state, .tick(now: 1019)).isEmpty)
        let due = update(&state, .tick(now: 1020))
        #expect(
            due == [
                .oath(
                    .each([
                        .refresh(TwoKeys.daily, time: 1020, all: true, single: []),
                        .refresh(TwoKeys.backup, time: 1020, all: true, single: []),
                    ]))
            ])
        // Nothing more is asked while both are on their way.
        #expect(update(&state, .tick(now: 1021)).isEmpty)
        _ = update(
            &state,
            .oath(
                .codes(
                    keyID: TwoKeys.backup.id,
                    [
                        Fixture.entry("GitHub:alice", code: "555555", from: 1020),
                        Fixture.entry("Spare:carol", code: "666666", from: 1020),
                    ])))
        let spare = state.visibleOATHRows.first { $0.id == "Spare:carol" }
        #expect(spare?.account.code?.value == "666666")
        // GitHub's code is the first key's: daily has not answered yet, so backup's valid code is shown meanwhile.
        #expect(state.visibleOATHRows.first { $0.id == "GitHub:alice" }?.account.code?.value == "555555")
        _ = update(
            &state, .oath(.codes(keyID: TwoKeys.daily.id, [Fixture.entry("GitHub:alice", code: "777777", from: 1020)])))
        #expect(state.visibleOATHRows.first { $0.id == "GitHub:alice" }?.account.code?.value == "777777")
        #expect(!state.oath.refreshing && state.oath.others[TwoKeys.backup.id]?.refreshing == false)
        #expect(state.oath.counting)
    }

    @Test func pullingOneKeyOutRemovesOnlyItsMarks() {
        var state = TwoKeys.state(
            daily: [TwoKeys.github, TwoKeys.dailyOnly], backup: [TwoKeys.githubOnBackup, TwoKeys.backupOnly])
        let commands = update(&state, .keyEvent(.keyLeft(id: TwoKeys.backup.id)))
        #expect(commands == [.forgetKey(keyID: TwoKeys.backup.id)])
        #expect(state.oath.allKeys && state.oath.others.isEmpty)
        let rows = state.visibleOATHRows
        #expect(rows.map(\.id) == ["Daily:bob", "GitHub:alice"])
        #expect(rows.allSatisfy { $0.holders == [TwoKeys.daily.id] && $0.missing.isEmpty })
        // Daily's codes stay as they were.
        #expect(rows.map { $0.account.code?.value } == ["333333", "111111"])
    }

    @Test func theSelectedKeyLeavingHandsTheViewToTheOtherWithItsAccountsStillShown() {
        var state = TwoKeys.state(
            daily: [TwoKeys.github, TwoKeys.dailyOnly], backup: [TwoKeys.githubOnBackup, TwoKeys.backupOnly])
        let commands = update(&state, .keyEvent(.keyLeft(id: TwoKeys.daily.id)))
        #expect(commands == [.forgetKey(keyID: TwoKeys.daily.id), .oath(.open(TwoKeys.backup, time: 1000))])
        #expect(state.selectedKeyID == TwoKeys.backup.id && state.oath.allKeys && state.oath.others.isEmpty)
        #expect(state.visibleOATHRows.map(\.id) == ["GitHub:alice", "Spare:carol"])
        #expect(state.visibleOATHRows.first?.account.code?.value == "222222")
    }

    @Test func theKeySwitcherKeepsTheViewAndTheKeyShownBeforeJoinsTheOthers() {
        var state = TwoKeys.state(daily: [TwoKeys.github, TwoKeys.dailyOnly], backup: [TwoKeys.backupOnly])
        _ = update(&state, .keyPress(.char("K")))
        _ = update(&state, .keyPress(.down))
        let commands = update(&state, .keyPress(.enter))
        #expect(commands == [.oath(.open(TwoKeys.backup, time: 1000))])
        #expect(state.selectedKeyID == TwoKeys.backup.id)
        #expect(state.oath.others[TwoKeys.daily.id]?.accounts.map(\.id) == ["GitHub:alice", "Daily:bob"])
        #expect(state.visibleOATHRows.map(\.id) == ["Daily:bob", "GitHub:alice", "Spare:carol"])
    }

    @Test func aKeyThatAsksForItsPasswordAsksOnceThenJoins() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        _ = update(&state, .keyPress(.char("A")))
        _ = update(
            &state, .oath(.locked(keyID: TwoKeys.backup.id, deviceID: "dev-backup", version: Version(5, 7, 2))))
        let dialog = try #require(state.oath.dialog)
        #expect(dialog.kind == .unlockOther(keyID: TwoKeys.backup.id))
        #expect(dialog.form.title == UIText("oath.unlock.titleOf", ["key": "backup"]))
        // Esc: not asked again by the next answers or keys; daily's accounts stay listed.
        _ = update(&state, .keyPress(.escape))
        #expect(state.oath.dialog == nil)
        _ = update(&state, .tick(now: 1020))
        _ = update(
            &state, .oath(.codes(keyID: TwoKeys.daily.id, [Fixture.entry("GitHub:alice", code: "1", from: 1020)])))
        _ = update(&state, .keyPress(.down))
        #expect(state.oath.dialog == nil && state.visibleOATHRows.map(\.id) == ["GitHub:alice"])
        // R reads every key again, and the locked key asks again.
        let again = update(&state, .keyPress(.char("R")))
        #expect(
            again == [.oath(.each([.open(TwoKeys.daily, time: 1020), .open(TwoKeys.backup, time: 1020)]))])
        _ = update(
            &state, .oath(.locked(keyID: TwoKeys.backup.id, deviceID: "dev-backup", version: Version(5, 7, 2))))
        #expect(state.oath.dialog?.kind == .unlockOther(keyID: TwoKeys.backup.id))
        _ = Fixture.type("s3cret", into: &state)
        _ = update(&state, .keyPress(.enter))
        let submit = update(&state, .keyPress(.enter))
        #expect(submit == [.oath(.unlock(TwoKeys.backup, password: "s3cret", remember: false, time: 1020))])
        #expect(state.oath.dialog?.form[UnlockField.password] == "")
        // A wrong password keeps the dialog, for this key.
        _ = update(
            &state,
            .oath(
                .failed(
                    keyID: TwoKeys.backup.id,
                    OATHFailure(operation: .unlock, message: UIText("oath.wrongPassword"), wrongPassword: true))))
        #expect(state.oath.dialog?.form.problem == UIText("oath.wrongPassword"))
        _ = update(
            &state,
            .oath(
                .unlocked(
                    keyID: TwoKeys.backup.id, TwoKeys.snapshot([TwoKeys.backupOnly], device: "dev-backup"),
                    remembered: false)))
        #expect(state.oath.dialog == nil)
        #expect(state.status?.text == UIText("oath.unlockedKey", ["key": "backup"]))
        #expect(state.visibleOATHRows.map(\.id) == ["GitHub:alice", "Spare:carol"])
    }

    @Test func copyTakesTheShownCodeAndHOTPIsCalculatedOnTheFirstKeyThatHoldsIt() {
        let hotp = Fixture.entry("Bank:eve", code: nil, type: .hotp)
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [TwoKeys.githubOnBackup, hotp])
        // Bank:eve is first in the list, on backup only.
        let calculate = update(&state, .keyPress(.enter))
        #expect(calculate == [.oath(.calculate(TwoKeys.backup, hotp.credential, time: 1000))])
        #expect(state.oath.others[TwoKeys.backup.id]?.accounts.first { $0.id == "Bank:eve" }?.calculating == true)
        // A code of the same account from another key copies nothing.
        let code = Code(value: "987654", validFrom: 1000, validTo: Int64.max)
        #expect(update(&state, .oath(.code(keyID: TwoKeys.daily.id, accountID: "Bank:eve", code))).isEmpty)
        let copied = update(&state, .oath(.code(keyID: TwoKeys.backup.id, accountID: "Bank:eve", code)))
        #expect(copied == [.copy("987654", status: UIText("status.copied", ["account": "Bank:eve"]))])
        // A TOTP code on screen is copied as shown (daily's).
        _ = update(&state, .keyPress(.down))
        #expect(
            update(&state, .keyPress(.char("c")))
                == [.copy("111111", status: UIText("status.copied", ["account": "GitHub:alice"]))])
    }

    @Test func aTouchAccountOnAnotherKeyNamesThatKeyInTheTouchPrompt() {
        let touch = Fixture.entry("Corp:frank", code: nil, touch: true)
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [touch])
        let commands = update(&state, .keyPress(.enter))
        #expect(commands == [.oath(.calculate(TwoKeys.backup, touch.credential, time: 1000))])
        #expect(state.status?.subject == .touch)
        #expect(state.touchAlert?.text.arguments["key"]?.contains("backup") == true)
    }

    @Test func renameAndDeleteActOnTheSelectedKeyAndSayWhereAnAccountElseIs() {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [TwoKeys.githubOnBackup, TwoKeys.backupOnly])
        _ = update(&state, .keyPress(.end))
        #expect(state.selectedOATHRow?.id == "Spare:carol")
        #expect(update(&state, .keyPress(.char("d"))).isEmpty)
        #expect(state.oath.dialog == nil)
        #expect(state.status?.text.key == "oath.notOnSelectedKey")
        #expect(state.status?.text.arguments["keys"] == "backup" && state.status?.text.arguments["key"] == "daily")
        _ = update(&state, .keyPress(.home))
        _ = update(&state, .keyPress(.char("d")))
        #expect(state.oath.dialog?.kind == .delete(accountID: "GitHub:alice"))
    }

    @Test func aKeyProbedLaterJoinsAndOneThatCouldNotBeReadIsReadAgain() {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        _ = update(&state, .keyEvent(.keyLeft(id: TwoKeys.backup.id)))
        _ = update(&state, .keyPress(.char("A")))
        #expect(state.oath.others.isEmpty)
        _ = update(&state, .keyEvent(.keyArrived(TwoKeys.backup)))
        let joined = update(&state, .probed(keyID: TwoKeys.backup.id, TwoKeys.info(TwoKeys.backup, serial: 41_000_002)))
        #expect(joined == [.oath(.open(TwoKeys.backup, time: 1000))])
        _ = update(
            &state,
            .oath(
                .failed(
                    keyID: TwoKeys.backup.id,
                    OATHFailure(operation: .open, message: UIText("error.reader-not-answering")))))
        if case .unavailable = state.oath.others[TwoKeys.backup.id]?.phase {} else { Issue.record("not unavailable") }
        let again = update(&state, .probed(keyID: TwoKeys.backup.id, TwoKeys.info(TwoKeys.backup, serial: 41_000_002)))
        #expect(again == [.oath(.open(TwoKeys.backup, time: 1000))])
    }
}

@Suite("Model: the Add dialog over several keys")
struct OATHAddToKeysTests {
    @Test func theOtherKeysAreCheckBoxesCheckedWhenTheConfigSaysSo() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        _ = update(&state, .keyPress(.char("a")))
        var form = try #require(state.oath.dialog?.form)
        let box = try #require(form.fields.last)
        #expect(box.id == AlsoOnField(TwoKeys.backup.id).rawValue && box.toggle && !box.isOn)
        #expect(box.label == UIText("oath.add.alsoOn", ["key": "backup"]))
        _ = update(&state, .keyPress(.escape))
        state.oath.addToAllKeys = true
        #expect(update(&state, .paste(TwoKeys.uri)).isEmpty)
        form = try #require(state.oath.dialog?.form)
        #expect(form.isOn(AlsoOnField(TwoKeys.backup.id)) && form[AddField.name] == "dave")
        // One key alone: no check boxes, and the one-key add as before.
        var alone = Fixture.loaded([])
        _ = update(&alone, .keyPress(.char("a")))
        #expect(alone.oath.dialog?.form.fields.count == AddField.allCases.count)
    }

    @Test func eachKeyAnswersForItselfAndAFailureIsNamedAndTriedAgain() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        state.oath.addToAllKeys = true
        _ = update(&state, .paste(TwoKeys.uri))
        let submit = update(&state, .keyPress(.enter))
        guard case .oath(.each(let each)) = submit.first, each.count == 2,
            case .add(TwoKeys.daily, let accounts, false, 1000) = each[0],
            case .add(TwoKeys.backup, accounts, false, 1000) = each[1]
        else {
            Issue.record("not one add per key: \(submit)")
            return
        }
        #expect(accounts.map(\.id.string) == ["Ex:dave"])
        // The secret stays in the dialog while the keys work, to try a key again.
        #expect(state.oath.dialog?.form.busy == true && state.oath.dialog?.form[AddField.secret] == "JBSWY3DPEHPK3PXP")
        let dave = Fixture.entry("Ex:dave", code: "123456", from: 990)
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.daily.id, TwoKeys.snapshot([TwoKeys.github, dave], device: "dev-daily"),
                    UIText("oath.added", ["account": "Ex:dave"]))))
        // Daily took it (its list shows it), the dialog waits for backup.
        #expect(state.oath.accounts.map(\.id).contains("Ex:dave") && state.oath.dialog?.form.busy == true)
        let full = OATHFailure(operation: .add, message: UIText("error.no-room"))
        _ = update(&state, .oath(.failed(keyID: TwoKeys.backup.id, full)))
        let form = try #require(state.oath.dialog?.form)
        #expect(!form.busy && form[AddField.secret] == "JBSWY3DPEHPK3PXP")
        let report = try #require(form.problem)
        let words = ViewText.resolve(report)
        #expect(words.contains("Added to daily.") && words.contains("Not added to backup:"), "\(words)")
        #expect(words.contains("Enter tries backup again"), "\(words)")
        #expect(state.status?.kind != .error)
        // Enter tries backup alone again.
        let retry = update(&state, .keyPress(.enter))
        #expect(retry == [.oath(.add(TwoKeys.backup, accounts, overwrite: false, time: 1000))])
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.backup.id, TwoKeys.snapshot([dave], device: "dev-backup"),
                    UIText("oath.added", ["account": "Ex:dave"]))))
        #expect(state.oath.dialog == nil && state.oath.change == nil)
        #expect(state.status?.text == UIText("oath.addedTo", ["account": "Ex:dave", "keys": "daily, backup"]))
    }

    @Test func aKeyThatHoldsTheAccountIsAskedAboutByNameThenReplaced() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        _ = update(&state, .paste(TwoKeys.uri))
        state.oath.dialog?.form.focus(on: AlsoOnField(TwoKeys.backup.id))
        _ = update(&state, .keyPress(.char(" ")))
        _ = update(&state, .keyPress(.enter))
        // Backup's accounts are not on the tab: it says it holds the account.
        let taken = OATHFailure(
            operation: .add, message: UIText("error.account-exists", ["account": "Ex:dave"]), taken: ["Ex:dave"])
        _ = update(&state, .oath(.failed(keyID: TwoKeys.backup.id, taken)))
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.daily.id,
                    TwoKeys.snapshot([TwoKeys.github, Fixture.entry("Ex:dave", code: "1", from: 990)], device: "d"),
                    UIText("oath.added", ["account": "Ex:dave"]))))
        #expect(
            ViewText.resolve(try #require(state.oath.dialog?.form.problem)).contains("backup already holds Ex:dave"))
        state.now += 1
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(
            state.oath.dialog?.form.confirming?.question
                == UIText("oath.add.replaceQuestionOn", ["accounts": "Ex:dave", "keys": "backup"]))
        state.now += 1
        let replace = update(&state, .keyPress(.char("y")))
        guard case .oath(.add(TwoKeys.backup, _, true, _)) = replace.first, replace.count == 1 else {
            Issue.record("no replacing add on backup: \(replace)")
            return
        }
    }

    @Test func aLockedOrPulledOutKeyIsNamedAndTheOthersKeepTheAccount() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        state.oath.addToAllKeys = true
        _ = update(&state, .paste(TwoKeys.uri))
        _ = update(&state, .keyPress(.enter))
        _ = update(
            &state, .oath(.locked(keyID: TwoKeys.backup.id, deviceID: "dev-backup", version: Version(5, 7, 2))))
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.daily.id, TwoKeys.snapshot([TwoKeys.github], device: "dev-daily"),
                    UIText("oath.added", ["account": "Ex:dave"]))))
        var words = ViewText.resolve(try #require(state.oath.dialog?.form.problem))
        #expect(words.contains("Not added to backup: the key asks for its OATH password"), "\(words)")
        // Tried again, and pulled out meanwhile: its check box goes, and the dialog says so.
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .keyEvent(.keyLeft(id: TwoKeys.backup.id)))
        let form = try #require(state.oath.dialog?.form)
        #expect(!form.has(AlsoOnField(TwoKeys.backup.id)) && !form.busy)
        words = ViewText.resolve(try #require(form.problem))
        #expect(
            words.contains("Not added to backup: the key was pulled out") && words.hasSuffix("Esc closes."), "\(words)")
        // Esc closes; the secret goes with the dialog.
        _ = update(&state, .keyPress(.escape))
        #expect(state.oath.dialog == nil && state.oath.change == nil)
    }
}

extension OATHAddToKeysTests {
    @Test func theSelectedKeyPulledOutMidAddSaysWhatWasCutShortAsWithOneKey() {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        _ = update(&state, .paste(TwoKeys.uri))
        _ = update(&state, .keyPress(.enter))
        let gone = OATHFailure(operation: .add, message: .literal("removed"), keyGone: true)
        _ = update(&state, .oath(.failed(keyID: TwoKeys.daily.id, gone)))
        _ = update(&state, .keyEvent(.keyLeft(id: TwoKeys.daily.id)))
        #expect(state.oath.dialog == nil && state.oath.change == nil)
        #expect(state.status?.text.key == "status.keyGoneMidOperation")
    }
}

@Suite("Model: rename and delete over several keys")
struct OATHChangeOnKeysTests {
    static func credential(_ entry: OATHSession.Entry) -> Credential { entry.credential }

    @Test func deleteOffersTheOtherKeysThatHoldTheAccountAsksNamingThemAndEachAnswers() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github, TwoKeys.dailyOnly], backup: [TwoKeys.githubOnBackup])
        state.oath.addToAllKeys = true
        // An account on daily only: the plain confirmation, no check box.
        #expect(state.selectedOATHRow?.id == "Daily:bob")
        _ = update(&state, .keyPress(.char("d")))
        #expect(state.oath.dialog?.form.fields.isEmpty == true)
        _ = update(&state, .keyPress(.escape))
        // On both: backup is a check box, checked as the config says; Enter asks once more, naming both keys.
        _ = update(&state, .keyPress(.end))
        _ = update(&state, .keyPress(.char("d")))
        let form = try #require(state.oath.dialog?.form)
        #expect(form.has(AlsoOnField(TwoKeys.backup.id)) && form.isOn(AlsoOnField(TwoKeys.backup.id)))
        state.now += 1
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(
            state.oath.dialog?.form.confirming?.question
                == UIText("oath.delete.questionOn", ["account": "GitHub:alice", "keys": "daily, backup"]))
        state.now += 1
        let delete = update(&state, .keyPress(.char("y")))
        #expect(
            delete == [
                .oath(
                    .each([
                        .delete(TwoKeys.daily, TwoKeys.github.credential, time: 1002),
                        .delete(TwoKeys.backup, TwoKeys.githubOnBackup.credential, time: 1002),
                    ]))
            ])
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.daily.id, TwoKeys.snapshot([TwoKeys.dailyOnly], device: "dev-daily"),
                    UIText("oath.deleted", ["account": "GitHub:alice"]))))
        // Backup pulled out while it worked: named, daily's delete stands.
        let gone = OATHFailure(operation: .delete, message: .literal("removed"), keyGone: true)
        _ = update(&state, .oath(.failed(keyID: TwoKeys.backup.id, gone)))
        let words = ViewText.resolve(try #require(state.oath.dialog?.form.problem))
        #expect(
            words.contains("Deleted from daily.") && words.contains("Not deleted from backup: the key was pulled out"))
        #expect(words.contains("Enter tries backup again"), "\(words)")
        // Enter tries backup alone, asking once more for it.
        state.now += 1
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(
            state.oath.dialog?.form.confirming?.question
                == UIText("oath.delete.questionOn", ["account": "GitHub:alice", "keys": "backup"]))
        state.now += 1
        let retry = update(&state, .keyPress(.char("y")))
        #expect(retry == [.oath(.delete(TwoKeys.backup, TwoKeys.githubOnBackup.credential, time: 1004))])
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.backup.id, TwoKeys.snapshot([], device: "dev-backup"),
                    UIText("oath.deleted", ["account": "GitHub:alice"]))))
        #expect(state.oath.dialog == nil && state.oath.change == nil)
        #expect(state.status?.text == UIText("oath.deletedFrom", ["account": "GitHub:alice", "keys": "daily, backup"]))
    }

    @Test func deleteWithTheOtherKeyUncheckedActsOnTheSelectedKeyAlone() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [TwoKeys.githubOnBackup])
        _ = update(&state, .keyPress(.char("d")))
        #expect(state.oath.dialog?.form.isOn(AlsoOnField(TwoKeys.backup.id)) == false)
        state.now += 1
        _ = update(&state, .keyPress(.enter))
        #expect(
            state.oath.dialog?.form.confirming?.question
                == UIText("oath.delete.questionOn", ["account": "GitHub:alice", "keys": "daily"]))
        state.now += 1
        #expect(
            update(&state, .keyPress(.char("y"))) == [
                .oath(.delete(TwoKeys.daily, TwoKeys.github.credential, time: 1002))
            ])
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.daily.id, TwoKeys.snapshot([], device: "dev-daily"),
                    UIText("oath.deleted", ["account": "GitHub:alice"]))))
        #expect(state.oath.dialog == nil && state.status?.text == UIText("oath.deleted", ["account": "GitHub:alice"]))
        // Backup keeps it.
        #expect(state.oath.others[TwoKeys.backup.id]?.accounts.map(\.id) == ["GitHub:alice"])
    }

    @Test func renameGoesToEachKeyCheckedWithItsOwnAccount() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [TwoKeys.githubOnBackup])
        state.oath.addToAllKeys = true
        _ = update(&state, .keyPress(.char("r")))
        var dialog = try #require(state.oath.dialog)
        #expect(dialog.form.isOn(AlsoOnField(TwoKeys.backup.id)))
        dialog.form[RenameField.name] = "GitHub:bob"
        state.oath.dialog = dialog
        let renamed = CredentialID(name: "bob", issuer: "GitHub", type: .totp, period: 30)
        #expect(
            update(&state, .keyPress(.enter)) == [
                .oath(
                    .each([
                        .rename(TwoKeys.daily, TwoKeys.github.credential, to: renamed, time: 1000),
                        .rename(TwoKeys.backup, TwoKeys.githubOnBackup.credential, to: renamed, time: 1000),
                    ]))
            ])
        let bob = Fixture.entry("GitHub:bob", code: "111111", from: 990)
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.backup.id, TwoKeys.snapshot([bob], device: "dev-backup"),
                    UIText("oath.renamed", ["old": "GitHub:alice", "new": "GitHub:bob"]))))
        #expect(state.oath.dialog?.form.busy == true)
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.daily.id, TwoKeys.snapshot([bob], device: "dev-daily"),
                    UIText("oath.renamed", ["old": "GitHub:alice", "new": "GitHub:bob"]))))
        #expect(state.oath.dialog == nil && state.oath.change == nil)
        #expect(
            state.status?.text
                == UIText("oath.renamedOn", ["old": "GitHub:alice", "new": "GitHub:bob", "keys": "daily, backup"]))
    }
}

@Suite("Model: comparing the keys' accounts")
struct OATHCompareTests {
    @Test func dOpensTheAllKeysViewAndComparesAsOATHDiff() {
        var mixed = Fixture.entry("Mixed:dan", code: "12345678", from: 990)
        mixed.digits = 8
        var state = TwoKeys.state(
            daily: [TwoKeys.github, TwoKeys.dailyOnly, Fixture.entry("Mixed:dan", code: "123456", from: 990)],
            backup: [], allKeys: false)
        // From the one-key view: the all-keys view comes on (and is remembered), backup's accounts are read.
        let opened = update(&state, .keyPress(.char("D")))
        #expect(state.oath.comparing && state.oath.allKeys)
        #expect(
            opened.contains(.rememberOATHAllKeys(true)) && opened.contains(.oath(.open(TwoKeys.backup, time: 1000))))
        #expect(state.oathComparisons.map(\.difference) == [nil])
        _ = update(
            &state,
            .oath(
                .opened(
                    keyID: TwoKeys.backup.id,
                    TwoKeys.snapshot([TwoKeys.githubOnBackup, TwoKeys.backupOnly, mixed], device: "dev-backup"))))
        let pair = state.oathComparisons
        #expect(pair.map(\.a) == ["daily"] && pair.map(\.b) == ["backup"] && pair.first?.count == 3)
        let difference = pair.first?.difference
        #expect(difference?.onlyA == ["Daily:bob"] && difference?.onlyB == ["Spare:carol"])
        #expect(difference?.differing.map(\.id) == ["Mixed:dan"])
        #expect(difference?.differing.first?.settings.map(\.setting) == [.digits])
        // Keys scroll it; Esc or D again goes back to the list, which stays in the all-keys view.
        _ = update(&state, .keyPress(.char("j")))
        #expect(state.oath.compareScroll == 1)
        _ = update(&state, .keyPress(.char("a")))
        #expect(state.oath.dialog == nil && state.oath.comparing)
        _ = update(&state, .keyPress(.char("D")))
        #expect(!state.oath.comparing && state.oath.allKeys)
    }

    @Test func withOneKeyThereIsNothingToCompare() {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        _ = update(&state, .keyEvent(.keyLeft(id: TwoKeys.backup.id)))
        #expect(update(&state, .keyPress(.char("D"))).isEmpty)
        #expect(!state.oath.comparing && state.status?.text == UIText("oath.compare.oneKey", ["key": "daily"]))
    }
}

/// The English words of a model text, as the view resolves them.
enum ViewText {
    static let tables = StringTables.load(language: "en")
    static func resolve(_ text: UIText) -> String { tables.text(text) }
}
