import Foundation
import Testing
@testable import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// The OTP tab at 80x24 with the English strings.
enum OTPViewFixture {
    static let aesKey: [UInt8] = Array(0..<16).map { UInt8($0) * 17 }
    static let privateID: [UInt8] = [0xC0, 0xFF, 0xEE, 0x12, 0x34, 0x56]
    static let serial: UInt32 = 28_123_456
    static let publicID = Modhex.encode(YubicoOTP.publicID(serial: serial))

    static func otp(usage: UInt16, session: UInt8, publicID: [UInt8] = YubicoOTP.publicID(serial: serial)) -> String {
        let token = YubicoOTPToken(
            privateID: privateID, usageCounter: usage, timestamp: 0x0A0B0C,
            sessionCounter: session, random: 0x1234)
        return try! YubicoOTP.encode(token, key: aesKey, publicID: publicID)
    }

    /// The demo key selected, the OTP tab open, the AES key of `publicID` configured.
    static func state(virtual: Bool = false) -> AppState {
        var state = ViewFixture.state()
        state.virtualMode = virtual
        state.otp.aesKeys = [publicID: aesKey]
        _ = update(&state, .keyPress(.char("2")))
        state.status = nil
        return state
    }

    /// Types `text` and Enter as a key does.
    static func burst(_ text: String, into state: inout AppState) {
        for c in text {
            _ = update(&state, .keyPress(.char(c)))
            state.now += 0.005
        }
        _ = update(&state, .keyPress(.enter))
        state.now += 1
    }

    /// A Yubico OTP decoded, one without a key, one with a wrong key, an HOTP code and a static password.
    static func mixed() -> AppState {
        var state = state()
        state.otp.aesKeys["ijcccccc"] = [UInt8](repeating: 7, count: 16)
        burst("Correct-Horse-Battery", into: &state)
        burst("ubhe2812345687654321", into: &state)
        burst(otp(usage: 2, session: 0, publicID: try! Modhex.decode("ijcccccc")), into: &state)
        burst(otp(usage: 3, session: 0, publicID: try! Modhex.decode("cbdefghi")), into: &state)
        burst(otp(usage: 41, session: 3), into: &state)
        state.status = nil
        return state
    }

    /// The tab with the key's slot status read: slot 1 programmed (types on touch), slot 2 empty.
    static func slotsState() -> AppState {
        var state = state()
        let status = OTPSession.Status(version: Version(5, 7, 2), programSequence: 3, touchLevel: 0x05)
        _ = update(&state, .otp(.slotsRead(OTPSlots(keyID: ViewFixture.key.id, status: status))))
        return state
    }

    /// Bound key `c` pressed alone: the tab performs it once the burst gap has passed.
    static func alone(_ c: Character, _ state: AppState) -> AppState {
        var s = state
        s.now += 1
        _ = update(&s, .keyPress(.char(c)))
        s.now += 0.2
        _ = update(&s, .tick(now: s.now))
        s.status = nil
        return s
    }

    /// Slot 2 just programmed with a Yubico OTP: the values shown once.
    static func programmedState() -> AppState {
        var s = slotsState()
        let after = OTPSession.Status(version: Version(5, 7, 2), programSequence: 4, touchLevel: 0x0F)
        let secrets = OTPProgrammedSecrets(
            slot: 2, publicID: publicID, privateID: "c0ffee123456",
            key: "00112233445566778899aabbccddeeff", serial: serial)
        _ = update(
            &s, .otp(.slotsWritten(.programmed(slot: 2, secrets), OTPSlots(keyID: ViewFixture.key.id, status: after))))
        s.status = nil
        return s
    }

    /// The access code dialog on slot 1 (programmed), the new code typed twice.
    static func accessCodeState() -> AppState {
        var s = alone(OTPTabState.accessCodeKey, slotsState())
        for k: KeyPress in [.down, .down, .down] { _ = update(&s, .keyPress(k)) }
        for c in "a1a2a3a4a5a6" { _ = update(&s, .keyPress(.char(c))) }
        _ = update(&s, .keyPress(.enter))
        for c in "a1a2a3a4a5a6" { _ = update(&s, .keyPress(.char(c))) }
        s.status = nil
        return s
    }

    /// The access code dialog asked to remove slot 1's code with a wrong current code: the key refused.
    static func accessCodeRefusedState() -> AppState {
        var s = alone(OTPTabState.accessCodeKey, slotsState())
        for k: KeyPress in [.down, .char(" "), .down] { _ = update(&s, .keyPress(k)) }
        for c in "010203040506" { _ = update(&s, .keyPress(.char(c))) }
        _ = update(&s, .keyPress(.enter))
        s.now += 1
        _ = update(&s, .keyPress(.char("y")))
        _ = update(
            &s,
            .otp(
                .failed(
                    keyID: ViewFixture.key.id,
                    OTPTabWork.failure(
                        .slots, OTPError.configurationRefused,
                        accessCode: true))))
        s.status = nil
        return s
    }

    static func row(_ screen: MemoryScreen, containing text: String) -> Int? {
        screen.lines.firstIndex { $0.contains(text) }
    }
}

@Suite("Views: OTP tab")
struct OTPTabViewTests {
    @Test func theSlotsTheirDialogsAndTheValuesShownOnce() throws {
        let slots = ViewFixture.render(OTPViewFixture.slotsState())
        #expect(slots.contains("Slot 1: programmed, types on touch · slot 2: empty"))
        let program = ViewFixture.render(OTPViewFixture.alone(OTPTabState.programKey, OTPViewFixture.slotsState()))
        #expect(
            program.contains("Program an OTP slot") && program.contains("< Yubico OTP >") && program.contains("< 2 >"))
        #expect(program.contains("Access code (if protected)") && program.contains("random private ID and AES key"))
        var hotp = OTPViewFixture.alone(OTPTabState.programKey, OTPViewFixture.slotsState())
        for k: KeyPress in [.down, .right, .right, .down] { _ = update(&hotp, .keyPress(k)) }
        for c in "GEZDGNBV" { _ = update(&hotp, .keyPress(.char(c))) }
        let form = ViewFixture.render(hotp)
        #expect(form.contains("Secret (Base32)") && !form.contains("GEZDGNBV"))
        #expect(form.contains("< 6 >"))
        let shown = ViewFixture.render(OTPViewFixture.programmedState())
        #expect(
            shown.contains("Slot 2 programmed: shown once")
                && shown.contains("AES key     00112233445566778899aabbccddeeff"))
        #expect(shown.contains("Private ID  c0ffee123456") && shown.contains("Public ID   " + OTPViewFixture.publicID))
        #expect(shown.contains("Slot 1: programmed, types on touch · slot 2: programmed, types on touch"))
    }

    @Test func theHelpListsTheSlotKeys() {
        let screen = ViewFixture.render(OTPViewFixture.alone("?", OTPViewFixture.state()))
        #expect(
            screen.contains("program a slot: Yubico OTP") && screen.contains("swap the two slots")
                && screen.contains("delete a slot"))
        #expect(screen.contains("set, change or remove a slot's access code"))
    }

    @Test func theAccessCodeDialogMasksEveryCodeAndSaysWhyTheKeyRefused() throws {
        var state = OTPViewFixture.accessCodeState()
        var screen = ViewFixture.render(state)
        #expect(screen.contains("Access code of an OTP slot") && screen.contains("< 1 >") && screen.contains("< no >"))
        #expect(
            screen.contains("Current code (if protected)") && screen.contains("New code (12 hex digits)")
                && screen.contains("New code again"))
        // Typed codes are bullets, never the digits.
        #expect(!screen.contains("a1a2a3") && screen.contains(String(repeating: "•", count: 12)))
        #expect(screen.contains("its other settings return to the defaults"))
        _ = update(&state, .keyPress(.enter))
        screen = ViewFixture.render(state)
        #expect(screen.contains("Set the access code of slot 1?"))
        state = OTPViewFixture.accessCodeRefusedState()
        screen = ViewFixture.render(state)
        #expect(screen.contains("< yes >") && !screen.contains("New code again"))
        #expect(screen.contains("the current access code is wrong or missing"))
        #expect(!screen.contains("010203"))
    }

    @Test func emptyTabListensAndSaysHow() {
        let screen = ViewFixture.render(OTPViewFixture.state())
        #expect(screen.lines.count == 24 && screen.lines.allSatisfy { $0.cellWidth == 80 })
        #expect(screen.text(row: 0).contains("2 OTP"))
        #expect(screen.text(row: 1).contains("Touch your key now: listening for the OTP it types"))
        #expect(screen.text(row: 2).contains("slow typing by hand is ignored"))
        #expect(screen.contains("Nothing captured yet."))
        let hints = screen.text(row: 21)
        #expect(
            hints.contains("F5 NDEF") && hints.contains("x chal-resp") && hints.contains("p program")
                && hints.contains("w swap") && hints.contains("D delete") && hints.contains("a access code")
                && hints.contains("? help"))
        #expect(!hints.contains("touch the key"))
        #expect(screen.text(row: 22).contains("serial 28123456"))
    }

    @Test func capturesShowTimeTypePublicIDSerialAndCounters() throws {
        var state = OTPViewFixture.mixed()
        let screen = ViewFixture.render(state)
        #expect(screen.lines.allSatisfy { $0.cellWidth == 80 })
        let header = try #require(OTPViewFixture.row(screen, containing: "Public ID"))
        #expect(
            screen.lines[header].contains("Time") && screen.lines[header].contains("Type")
                && screen.lines[header].contains("Serial") && screen.lines[header].contains("Counters"))
        // Newest first: the decoded OTP, selected (reversed), with its serial and counters.
        let decoded = screen.lines[header + 1]
        #expect(
            decoded.contains("Yubico OTP") && decoded.contains(OTPViewFixture.publicID) && decoded.contains("28123456"))
        #expect(decoded.contains("usage 41 · session 3"))
        #expect(decoded.range(of: #"^ \d\d:\d\d:\d\d "#, options: .regularExpression) != nil)
        #expect(decoded.contains(OTPTabView.clock(state.otp.captures[0].time)))
        #expect(screen.style(row: header + 1, column: 3).reverse)
        let noKey = screen.lines[header + 2]
        #expect(noKey.contains("cbdefghi") && noKey.contains("no AES key") && noKey.contains(" - "))
        let wrong = screen.lines[header + 3]
        #expect(wrong.contains("ijcccccc") && wrong.contains("wrong AES key (CRC failed)"))
        #expect(screen.style(row: header + 3, column: 3).foreground == .red)
        let hotp = screen.lines[header + 4]
        #expect(
            hotp.contains("OATH-HOTP") && hotp.contains("ubhe28123456") && hotp.contains("28123456")
                && hotp.contains("code 87654321"))
        let fixed = screen.lines[header + 5]
        #expect(fixed.contains("static") && fixed.contains("21 characters (hidden)"))
        // The static password is never on screen.
        #expect(!screen.contains("Correct-Horse"))
        // The selected capture in full: the OTP, its fields, the private ID and the CRC.
        #expect(screen.contains("Yubico OTP · typed by the key"))
        #expect(screen.contains("  " + state.otp.captures[0].text!))
        #expect(screen.contains("Usage counter 41 · session counter 3 · timestamp 658188"))
        #expect(screen.contains("Private ID c0ffee123456 · CRC ok"))
        // Down to the wrong key: its details say so.
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.down))
        let wrongScreen = ViewFixture.render(state)
        #expect(wrongScreen.contains("The AES key for ijcccccc fails the CRC check"))
        #expect(wrongScreen.style(row: header + 3, column: 3).reverse)
        _ = update(&state, .keyPress(.up))
        #expect(ViewFixture.render(state).contains("No AES key for cbdefghi ([otp.aes_keys] in the config file)"))
    }

    @Test func aReplayIsFlagged() {
        var state = OTPViewFixture.state()
        let otp = OTPViewFixture.otp(usage: 5, session: 1)
        OTPViewFixture.burst(otp, into: &state)
        OTPViewFixture.burst(otp, into: &state)
        let screen = ViewFixture.render(state)
        #expect(screen.contains("usage 5 · session 1 · replay?"))
        #expect(screen.contains("not newer than an earlier OTP: replayed?"))
    }

    @Test func handTypingIsReportedAndAKeyTypingIsShown() {
        var state = OTPViewFixture.state()
        for c in "hello" {
            _ = update(&state, .keyPress(.char(c)))
            state.now += 0.3
            _ = update(&state, .tick(now: state.now))
        }
        _ = update(&state, .keyPress(.enter))
        var screen = ViewFixture.render(state)
        #expect(screen.text(row: 2).contains("Ignored 5 characters typed by hand (too slow for a key)"))
        #expect(screen.contains("Nothing captured yet."))
        for c in "vvcccc" {
            _ = update(&state, .keyPress(.char(c)))
            state.now += 0.005
        }
        screen = ViewFixture.render(state)
        #expect(screen.text(row: 1).contains("Receiving… 6 characters"))
    }

    @Test func virtualModeHintsNameTheTouchKey() {
        let screen = ViewFixture.render(OTPViewFixture.state(virtual: true))
        #expect(screen.text(row: 21).contains("T touch ·"))
        var touching = OTPViewFixture.state(virtual: true)
        _ = update(&touching, .keyPress(.ctrl("t")))
        #expect(ViewFixture.render(touching).text(row: 1).contains("Touching the virtual key…"))
        var reading = OTPViewFixture.state()
        _ = update(&reading, .keyPress(.function(5)))
        #expect(ViewFixture.render(reading).text(row: 1).contains("Reading the NDEF tag…"))
    }

    @Test func challengeFormShowsSlotChallengeAndLiveProblem() {
        var state = OTPViewFixture.state()
        _ = update(&state, .keyPress(.char("x")))
        _ = update(&state, .tick(now: state.now + 0.1))
        for c in "c0fz" { _ = update(&state, .keyPress(.char(c))) }
        var screen = ViewFixture.render(state)
        #expect(screen.lines.allSatisfy { $0.cellWidth == 80 })
        #expect(screen.contains("Challenge-response (HMAC-SHA1)"))
        #expect(screen.contains("< 2 >"))
        #expect(screen.contains("c0fz"))
        #expect(screen.contains("\"z\" is not a hex digit (0-9, a-f)"))
        #expect(screen.contains("Up to 64 bytes in hex"))
        #expect(screen.text(row: 21).contains("Esc cancel"))
        _ = update(&state, .keyPress(.backspace))
        _ = update(&state, .keyPress(.char("e")))
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .otp(.challengeWaitingForTouch(keyID: ViewFixture.key.id)))
        screen = ViewFixture.render(state)
        #expect(screen.contains("Touch your key…"))
        #expect(screen.text(row: 1).contains("Touch your key…"))
    }

    @Test func theAnswerIsShownUnderTheCaptures() {
        var state = OTPViewFixture.mixed()
        let response = Array(0..<20).map { UInt8($0) }
        _ = update(
            &state,
            .otp(
                .challengeAnswered(
                    keyID: ViewFixture.key.id, slot: 2, challenge: [0xC0, 0xFF, 0xEE], response: response)))
        let screen = ViewFixture.render(state)
        #expect(screen.contains("Challenge-response, slot 2, challenge c0ffee:"))
        #expect(screen.contains("  " + response.hex))
        #expect(screen.text(row: 23).contains("Slot 2 answered"))
        // The details of the selected capture are still there above it.
        #expect(screen.contains("Private ID c0ffee123456 · CRC ok"))
    }

    @Test func aLongListScrollsAndKeepsThePanelsOnScreen() {
        var state = OTPViewFixture.state()
        for i in 0..<30 { OTPViewFixture.burst(OTPViewFixture.otp(usage: 1, session: UInt8(i)), into: &state) }
        var screen = ViewFixture.render(state)
        #expect(screen.lines.allSatisfy { $0.cellWidth == 80 })
        #expect(screen.contains("/30"))
        #expect(screen.contains("usage 1 · session 29"))
        #expect(screen.contains("Usage counter 1 · session counter 29"))
        for _ in 0..<25 { _ = update(&state, .keyPress(.down)) }
        screen = ViewFixture.render(state)
        #expect(screen.contains("Usage counter 1 · session counter 4 "))
        #expect(screen.lines.contains { $0.contains("usage 1 · session 4") })
        #expect(!screen.contains("usage 1 · session 29"))
    }

    @Test func helpListsTheTabsKeysAndFitsAt80x24() {
        var state = OTPViewFixture.state()
        _ = update(&state, .keyPress(.char("?")))
        _ = update(&state, .tick(now: state.now + 0.1))
        let screen = ViewFixture.render(state)
        #expect(screen.lines.allSatisfy { $0.cellWidth == 80 })
        for text in [
            "F5 / Ctrl-R", "read the OTP from the NDEF tag", "HMAC-SHA1 challenge-response on slot 1 or 2",
            "T / Ctrl-T", "touch the virtual key", "clear the captures", "a fast burst is an OTP",
            "Ctrl-C", "any other key closes this help",
        ] {
            #expect(screen.contains(text), "\(text)\n\(screen.dump)")
        }
    }

    @Test func asciiFallbackWithoutUnicode() {
        let screen = ViewFixture.render(OTPViewFixture.mixed(), unicode: false)
        #expect(screen.lines.allSatisfy { $0.cellWidth == 80 })
        #expect(screen.contains(OTPViewFixture.publicID))
    }
}
