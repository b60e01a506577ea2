import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel

/// The Add dialog's QR codes: Ctrl-G's new secret, shown once after adding, and an image path read for its code.
@Suite("Model: the Add dialog's new secret and image path")
struct OATHAddQRTests {
    static let secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"

    /// The list with the Add dialog open.
    static func adding() -> AppState {
        var state = Fixture.loaded([])
        _ = update(&state, .keyPress(.char("a")))
        return state
    }

    /// The dialog submitted (Enter on its last field) and the key's answer: the account added.
    static func addAndAnswer(_ state: inout AppState) -> [Command] {
        let last = (state.oath.dialog?.form.fields.count ?? 1) - 1
        state.oath.dialog?.form.focus = last
        let commands = update(&state, .keyPress(.enter))
        guard case .oath(.add(_, let accounts, _, _)) = commands.first, let data = accounts.first else {
            Issue.record("no add command: \(commands)")
            return commands
        }
        let entry = OATHSession.Entry(
            credential: Credential(rawID: Array(data.id.string.utf8), type: data.type, touch: data.touch), code: nil,
            digits: data.digits)
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: Fixture.reader.id, Fixture.snapshot([entry]),
                    UIText("oath.added", ["account": data.id.string]))))
        return commands
    }

    @Test func ctrlGAsksTheWorkForASecretAndItsAnswerFillsTheSecretField() throws {
        var state = Self.adding()
        _ = Fixture.type("otpauth://totp/Old:x?secret=GEZDGNBVGY3TQOJQ", into: &state)
        #expect(update(&state, .keyPress(.ctrl("g"))) == [.oath(.makeSecret)])
        // Nothing changed before the answer: the update makes no secret itself.
        #expect(!state.oath.secretMade)
        #expect(update(&state, .oath(.secretMade(Self.secret))).isEmpty)
        let form = try #require(state.oath.dialog?.form)
        #expect(form[AddField.secret] == Self.secret && form[AddField.uri].isEmpty)
        #expect(state.oath.dialog?.kind == .add(filledFromURI: nil))
        #expect(state.oath.secretMade)
        #expect(form.note == UIText("oath.add.secretMadeNote"))
        // The URI filled the issuer and the name: the focus leaves the emptied URI field for the name.
        #expect(form[AddField.issuer] == "Old" && form.fields[form.focus].id == AddField.name.rawValue)
        // In an empty dialog the issuer comes next; the note stays while the fields are typed.
        state = Self.adding()
        _ = update(&state, .oath(.secretMade(Self.secret)))
        #expect(state.oath.dialog.map { $0.form.fields[$0.form.focus].id } == AddField.issuer.rawValue)
        _ = Fixture.type("Made", into: &state)
        #expect(state.oath.dialog?.form.note == UIText("oath.add.secretMadeNote"))
        #expect(state.oath.dialog?.form[AddField.issuer] == "Made")
        // Outside the Add dialog Ctrl-G does nothing, and a late answer goes nowhere.
        var list = Fixture.loaded([])
        #expect(update(&list, .keyPress(.ctrl("g"))).isEmpty)
        _ = update(&list, .oath(.secretMade(Self.secret)))
        #expect(list.oath.dialog == nil && !list.oath.secretMade)
    }

    @Test func theAccountAddedWithAMadeSecretIsShownOnceThenWiped() throws {
        var state = Self.adding()
        _ = update(&state, .keyPress(.ctrl("g")))
        _ = update(&state, .oath(.secretMade(Self.secret)))
        _ = Fixture.type("Made", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("erin", into: &state)
        _ = Self.addAndAnswer(&state)
        #expect(state.oath.dialog == nil && !state.oath.secretMade)
        let shown = try #require(state.oath.shown)
        #expect(shown.id == "Made:erin")
        #expect(
            shown.uri
                == "otpauth://totp/Made:erin?secret=\(Self.secret)&issuer=Made&algorithm=SHA1&digits=6&period=30")
        #expect(try OTPAuthURI.accounts(in: shown.uri).first?.secret == Base32.decode(Self.secret))
        // While it is shown it has the keyboard: the tab keys and other keys do nothing, Enter closes it.
        #expect(state.textFocused)
        _ = update(&state, .keyPress(.char("2")))
        _ = update(&state, .keyPress(.char("a")))
        #expect(state.tab == .oath && state.oath.shown != nil && state.oath.dialog == nil)
        _ = update(&state, .keyPress(.enter))
        #expect(state.oath.shown == nil && !state.textFocused)
    }

    @Test func onTwoKeysTheAccountIsShownOnceAKeyTookItEvenWhenTheOtherDidNot() throws {
        var state = TwoKeys.state(daily: [TwoKeys.github], backup: [], allKeys: false)
        state.oath.addToAllKeys = true
        _ = update(&state, .keyPress(.char("a")))
        _ = update(&state, .oath(.secretMade(Self.secret)))
        _ = Fixture.type("Made", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = Fixture.type("erin", into: &state)
        let last = (state.oath.dialog?.form.fields.count ?? 1) - 1
        state.oath.dialog?.form.focus = last
        #expect(state.oath.dialog?.form.isOn(AlsoOnField(TwoKeys.backup.id)) == true)
        let submit = update(&state, .keyPress(.enter))
        guard case .oath(.each(let each)) = submit.first, each.count == 2 else {
            Issue.record("not one add per key: \(submit)")
            return
        }
        let erin = Fixture.entry("Made:erin", code: nil)
        _ = update(
            &state,
            .oath(
                .changed(
                    keyID: TwoKeys.daily.id, TwoKeys.snapshot([TwoKeys.github, erin], device: "dev-daily"),
                    UIText("oath.added", ["account": "Made:erin"]))))
        let full = OATHFailure(operation: .add, message: UIText("error.no-room"))
        _ = update(&state, .oath(.failed(keyID: TwoKeys.backup.id, full)))
        // The dialog waits for Enter to try backup again; Ctrl-G makes no other secret meanwhile.
        #expect(state.oath.dialog != nil && state.oath.shown == nil)
        #expect(update(&state, .keyPress(.ctrl("g"))).isEmpty)
        // Closed without trying again: daily holds the account, so it is shown for the phone all the same.
        _ = update(&state, .keyPress(.escape))
        #expect(state.oath.dialog == nil && state.oath.shown?.id == "Made:erin")
        #expect(state.oath.shown?.uri.contains("secret=\(Self.secret)") == true)
    }

    @Test func anAccountWhoseSecretWasTypedOrPastedIsNotShown() {
        var state = Self.adding()
        _ = Fixture.type("otpauth://totp/Ex:bob?secret=JBSWY3DPEHPK3PXP&issuer=Ex", into: &state)
        _ = Self.addAndAnswer(&state)
        #expect(state.oath.dialog == nil && state.oath.shown == nil)
        // A secret made, then replaced by a pasted URI: the URI's secret is the user's own.
        state = Self.adding()
        _ = update(&state, .oath(.secretMade(Self.secret)))
        state.oath.dialog?.form.focus(on: AddField.uri)
        _ = update(&state, .paste("otpauth://totp/Ex:carol?secret=GEZDGNBVGY3TQOJQ&issuer=Ex"))
        #expect(!state.oath.secretMade)
        _ = Self.addAndAnswer(&state)
        #expect(state.oath.shown == nil)
        // Cancelled before adding: the secret goes with the dialog.
        state = Self.adding()
        _ = update(&state, .oath(.secretMade(Self.secret)))
        _ = update(&state, .keyPress(.escape))
        #expect(state.oath.dialog == nil && state.oath.shown == nil && !state.oath.secretMade)
    }

    @Test func aPathInTheURIFieldIsReadOnEnterAndItsURIFillsTheDialog() throws {
        var state = Self.adding()
        _ = Fixture.type("'~/Pictures/enrol code.png'", into: &state)
        // Not a URI: no complaint while it is typed, and the note says what Enter does.
        #expect(state.oath.dialog?.form.problem == nil)
        #expect(state.oath.dialog?.form.note == UIText("oath.add.imageNote"))
        // The quotes a terminal puts around a dropped file go; ~ is the work's to expand.
        #expect(update(&state, .keyPress(.enter)) == [.oath(.readImage(path: "~/Pictures/enrol code.png"))])
        #expect(state.oath.dialog?.form.busy == true && state.oath.readingImage == "~/Pictures/enrol code.png")
        let uri = "otpauth://totp/ACME:carol?secret=JBSWY3DPEHPK3PXP&issuer=ACME&digits=8"
        _ = update(&state, .oath(.imageRead(path: "~/Pictures/enrol code.png", .success(uri))))
        let form = try #require(state.oath.dialog?.form)
        #expect(!form.busy && form.problem == nil && state.oath.readingImage == nil)
        #expect(form[AddField.uri] == uri && form[AddField.issuer] == "ACME" && form[AddField.name] == "carol")
        #expect(form[AddField.secret] == "JBSWY3DPEHPK3PXP" && form[AddField.digits] == "8")
        // As for a pasted URI: one Enter adds.
        let commands = update(&state, .keyPress(.enter))
        guard case .oath(.add(_, let accounts, false, _)) = commands.first else {
            Issue.record("no add command: \(commands)")
            return
        }
        #expect(accounts.map(\.id.string) == ["ACME:carol"] && accounts.first?.digits == 8)
    }

    @Test func anExportInAnImageIsAddedWholeAsAPastedOneIs() throws {
        var state = Self.adding()
        _ = Fixture.type("file:///tmp/export.png", into: &state)
        #expect(update(&state, .keyPress(.enter)) == [.oath(.readImage(path: "/tmp/export.png"))])
        // Two accounts (GitHub:alice, HOTP Bank:bob) in Google Authenticator's export format (made by
        // Tests/Integration/test_oath_qr.py's migration_uri).
        let export =
            "otpauth-migration://offline?data=CiMKCkhlbGxvId6tvu8SBWFsaWNlGgZHaXRIdWIgASgBMAI4AAofCgoxMjM0NTY3ODkwEgNib2IaBEJhbmsgASgBMAE4BRABGAE%3D"
        _ = update(&state, .oath(.imageRead(path: "/tmp/export.png", .success(export))))
        let form = try #require(state.oath.dialog?.form)
        #expect(form.note == UIText("oath.add.several", ["count": "2"]))
        let commands = update(&state, .keyPress(.enter))
        guard case .oath(.add(_, let accounts, _, _)) = commands.first else {
            Issue.record("no add command: \(commands)")
            return
        }
        #expect(accounts.map(\.id.string) == ["GitHub:alice", "Bank:bob"])
    }

    @Test func anImageWithoutOneAccountCodeIsSaidInTheDialogInTheCLIsWords() throws {
        let failures: [(QRImageError, String)] = [
            (.noCode(path: "/p.png"), "error.qr-no-code"),
            (.severalCodes(path: "/p.png", count: 2), "error.qr-several-codes"),
            (.notAccountURI(path: "/p.png", text: "https://example.com"), "error.qr-not-account"),
            (.notAnImage(path: "/p.png"), "error.qr-not-an-image"),
            (.unreadable(path: "/p.png", reason: "No such file or directory"), "error.file-unreadable"),
        ]
        for (error, key) in failures {
            var state = Self.adding()
            _ = Fixture.type("/p.png", into: &state)
            _ = update(&state, .keyPress(.enter))
            _ = update(&state, .oath(.imageRead(path: "/p.png", .failure(error))))
            let form = try #require(state.oath.dialog?.form)
            #expect(!form.busy && state.oath.readingImage == nil)
            #expect(form.problem == ErrorExplanation(error).text)
            #expect(form.problem?.key == key)
            #expect(form[AddField.uri] == "/p.png")
        }
    }

    @Test func escWhileTheImageIsReadClosesTheDialogAndItsAnswerGoesNowhere() {
        var state = Self.adding()
        _ = Fixture.type("/p.png", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .keyPress(.escape))
        #expect(state.oath.dialog == nil && state.oath.readingImage == nil)
        _ = update(&state, .oath(.imageRead(path: "/p.png", .success("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP"))))
        #expect(state.oath.dialog == nil)
        // Another dialog's answer does not fill a new one either.
        _ = update(&state, .keyPress(.char("a")))
        _ = update(&state, .oath(.imageRead(path: "/p.png", .success("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP"))))
        #expect(state.oath.dialog?.form[AddField.uri] == "")
    }

    @Test func imagePathsAsTyped() {
        #expect(addImagePath("") == nil && addImagePath("  ") == nil)
        #expect(addImagePath("otpauth://totp/x?secret=A") == nil && addImagePath("OTPAUTH-MIGRATION://x") == nil)
        #expect(addImagePath(" /a/b.png ") == "/a/b.png")
        #expect(addImagePath("\"/a/b c.png\"") == "/a/b c.png")
        #expect(addImagePath("file:///a/b.jpg") == "/a/b.jpg")
        #expect(OATHTabWork.expandingHome("~/b.png", home: "/home/u") == "/home/u/b.png")
        #expect(OATHTabWork.expandingHome("~", home: "/home/u") == "/home/u")
        #expect(OATHTabWork.expandingHome("~other/b.png", home: "/home/u") == "~other/b.png")
        #expect(OATHTabWork.expandingHome("/b.png", home: "/home/u") == "/b.png")
    }

    @Test func theWorkMakesA160BitSecretAndReadsAnImageOffTheScreensThread() async throws {
        let h = Harness(InProcessBackend(), directory: temporaryDirectory())
        var secrets = Set<String>()
        for _ in 0..<2 {
            let made = try await h.run(.oath(.makeSecret)) { msg -> String? in
                if case .oath(.secretMade(let s)) = msg { return s } else { return nil }
            }
            #expect(try made.count == 32 && Base32.decode(made).count == 20)
            secrets.insert(made)
        }
        #expect(secrets.count == 2)
        // A PNG with the code of a URI gives the URI; a missing file the system's reason.
        let directory = temporaryDirectory()
        let uri = "otpauth://totp/Ex:dave?secret=JBSWY3DPEHPK3PXP&issuer=Ex"
        let path = directory + "/code.png"
        try Data(QRImageTests().png(try #require(try QRCode(uri)).image(scale: 4))).write(
            to: URL(fileURLWithPath: path))
        let read = try await h.run(.oath(.readImage(path: path))) { msg -> Result<String, QRImageError>? in
            if case .oath(.imageRead(path, let r)) = msg { return r } else { return nil }
        }
        #expect(read == .success(uri))
        let missing = try await h.run(.oath(.readImage(path: directory + "/none.png"))) {
            msg -> Result<String, QRImageError>? in
            if case .oath(.imageRead(_, let r)) = msg { return r } else { return nil }
        }
        #expect(missing == .failure(.unreadable(path: directory + "/none.png", reason: "No such file or directory")))
    }
}
