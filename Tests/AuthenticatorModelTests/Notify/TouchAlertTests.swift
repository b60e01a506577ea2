import Foundation
import KeyKit
import Testing
@testable import AuthenticatorModel

/// A touch the key waits for: the words (which key, what for), the terminal's bell and notifications, and the
/// `[notify] touch` setting.
@Suite struct TouchAlertTests {
    @Test func theEscapesAreTheBellThenOSC777AndOSC9EachEndedWithST() {
        let both = TouchAlert.escapes(title: "ykterm", message: "Touch your key: x", signals: [.bell, .osc])
        #expect(both == "\u{07}\u{1B}]777;notify;ykterm;Touch your key: x\u{1B}\\\u{1B}]9;Touch your key: x\u{1B}\\")
        #expect(TouchAlert.escapes(title: "t", message: "m", signals: [.bell]) == "\u{07}")
        #expect(TouchAlert.escapes(title: "t", message: "m", signals: []) == "")
        // What came from a key or an account name cannot end the sequence early or split OSC 777's fields.
        let hostile = TouchAlert.escapes(
            title: "a;b", message: "x\u{1B}\\\u{07};y\u{9C}", signals: [.osc])
        #expect(hostile == "\u{1B}]777;notify;ab;x\\y\u{1B}\\\u{1B}]9;x\\;y\u{1B}\\")
    }

    @Test func notifyTouchIsReadWithItsLine() throws {
        #expect(try Config.parse(text: "", path: "c").notify.touch == [.bell, .osc])
        #expect(try Config.parse(text: "[notify]\ntouch = \"bell,osc\"\n", path: "c").notify.touch == [.bell, .osc])
        #expect(try Config.parse(text: "[notify]\ntouch = \"bell\"\n", path: "c").notify.touch == [.bell])
        #expect(try Config.parse(text: "[notify]\ntouch = \"osc, bell\"\n", path: "c").notify.touch == [.bell, .osc])
        #expect(try Config.parse(text: "[notify]\ntouch = \"none\"\n", path: "c").notify.touch == [])
        #expect(throws: ConfigError.self) { try Config.parse(text: "[notify]\n\ntouch = \"beep\"\n", path: "c") }
        do {
            _ = try Config.parse(text: "[notify]\n\ntouch = \"beep\"\n", path: "c")
        } catch {
            #expect(error.line == 3 && error.message.contains("\"bell,osc\""))
        }
    }

    /// Fixture.loaded's key, told to be a YubiKey 5 NFC with serial 28123456.
    static func named(_ state: AppState) -> AppState {
        var state = state
        state.keys[0].model = "YubiKey 5 NFC"
        state.keys[0].serial = 28_123_456
        return state
    }

    @Test func aTouchAccountOnTheOATHTabSaysWhichKeyAndWhatForOnce() throws {
        var state = Self.named(Fixture.loaded([Fixture.entry("Touch:alice", code: nil, touch: true)]))
        #expect(update(&state, .keyPress(.enter)).count == 1)
        let alert = try #require(state.touchAlert)
        #expect(alert.id == 1)
        let text = StringTables.load(language: "en").text(alert.text)
        #expect(text == "Touch your key YubiKey 5 NFC 28123456: OATH code for Touch:alice")
        #expect(state.status?.subject == .touch && state.status?.text == alert.text)
        // The code came: nothing waits, the line goes.
        _ = update(
            &state,
            .oath(
                .code(
                    keyID: Fixture.reader.id, accountID: "Touch:alice",
                    Code(value: "123456", validFrom: 990, validTo: 1020))))
        #expect(state.status?.subject != .touch && state.touchAlert?.id == 1)
    }

    @Test func aFIDOWaitSignalsOnceAndItsEndClearsTheLine() throws {
        var state = Self.named(Fixture.loaded([]))
        state.fido.keyID = Fixture.reader.id
        state.fido.busy = FIDOBusy(.delete)
        _ = update(&state, .fido(.touch(keyID: Fixture.reader.id, waiting: true)))
        #expect(state.touchAlert?.id == 1)
        // Keepalives go on while it waits: no second alert.
        _ = update(&state, .fido(.touch(keyID: Fixture.reader.id, waiting: true)))
        #expect(state.touchAlert?.id == 1)
        let text = StringTables.load(language: "en").text(try #require(state.touchAlert).text)
        #expect(text == "Touch your key YubiKey 5 NFC 28123456: FIDO2 credential deletion")
        _ = update(&state, .fido(.touch(keyID: Fixture.reader.id, waiting: false)))
        #expect(state.status == nil)
    }
}
