// Over 500 lines on purpose: the capture, key and NDEF suites share OTPFixture's OTPs; each suite is one topic.
import Foundation
import Testing
@testable import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The OTP tab's state built from messages, and Yubico OTPs made here with known fields.
enum OTPFixture {
    static let aesKey: [UInt8] = Array(0..<16).map { UInt8($0) * 17 }
    static let privateID: [UInt8] = [0xC0, 0xFF, 0xEE, 0x12, 0x34, 0x56]
    static let serial: UInt32 = 28_123_456
    /// The serial-based public ID (modhex of FF 00 and the serial): `vvcc…`.
    static let publicID = Modhex.encode(YubicoOTP.publicID(serial: serial))

    static func otp(
        usage: UInt16, session: UInt8, timestamp: UInt32 = 0x0A0B0C, key: [UInt8] = aesKey,
        publicID: [UInt8] = YubicoOTP.publicID(serial: serial)
    ) -> String {
        let token = YubicoOTPToken(
            privateID: privateID, usageCounter: usage, timestamp: timestamp,
            sessionCounter: session, random: 0x1234)
        return try! YubicoOTP.encode(token, key: key, publicID: publicID)
    }

    /// The reader's key selected, the OTP tab open, at t = 1000.
    static func state(aesKeys: [String: [UInt8]] = [publicID: aesKey], virtual: Bool = false) -> AppState {
        var state = AppState(now: 1000, virtualMode: virtual)
        _ = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        state.otp.aesKeys = aesKeys
        _ = update(&state, .keyPress(.char("2")))
        #expect(state.tab == .otp)
        state.status = nil
        return state
    }

    /// Types `text` and Enter as a key does: a character every `gap` seconds from `state.now`.
    @discardableResult
    static func burst(_ text: String, into state: inout AppState, gap: Double = 0.008) -> [Command] {
        var commands = [Command]()
        for c in text {
            commands += update(&state, .keyPress(.char(c)))
            state.now += gap
        }
        commands += update(&state, .keyPress(.enter))
        state.now += 1
        return commands
    }

    /// Types `text` and Enter as a person does: `gap` seconds between keys, a tick after each.
    static func slowly(_ text: String, into state: inout AppState, gap: Double = 0.2) -> [Command] {
        var commands = [Command]()
        for c in text {
            commands += update(&state, .keyPress(.char(c)))
            state.now += gap
            commands += update(&state, .tick(now: state.now))
        }
        return commands + update(&state, .keyPress(.enter))
    }

    static func nfcInfo(_ d: KeyDescriptor, nfc: Bool = true) -> KeyInfo {
        KeyInfo(
            reader: d.name, atr: [], device: DeviceInfo(serial: serial, version: Version(5, 7, 2)),
            applications: ["OTP", "OATH"], overNFC: nfc)
    }
}

@Suite("Model: OTP tab captures")
struct OTPCaptureTests {
    @Test func aPastedOTPIsDecodedAndNeverTakenForBindings() throws {
        var state = OTPFixture.state()
        let otp = OTPFixture.otp(usage: 7, session: 1)
        #expect(update(&state, .paste(otp + "\n")).isEmpty)
        let c = try #require(state.otp.captures.first)
        #expect(c.kind == .yubicoOTP && c.source == .pasted && c.text == otp)
        guard case .decoded(let d) = c.decryption else { Issue.record("not decoded: \(c.decryption)"); return }
        #expect(d.usageCounter == 7 && d.sessionCounter == 1)
        // "qx" pasted is no quit and no challenge form; several lines are no OTP.
        _ = update(&state, .paste("a\nb"))
        #expect(state.otp.captures.count == 1 && state.status?.text.key == "status.pasteIgnored")
        _ = update(&state, .paste("q"))
        #expect(!state.quitting && state.otp.form == nil)
    }

    @Test func yubicoOTPBurstShowsPublicIDSerialAndDecodedCounters() throws {
        var state = OTPFixture.state()
        let otp = OTPFixture.otp(usage: 41, session: 3)
        // The capture is stamped with the time of the Enter that ends it.
        let enter = state.now + 0.008 * Double(otp.count)
        #expect(OTPFixture.burst(otp, into: &state).isEmpty)
        #expect(state.otp.captures.count == 1)
        let c = try #require(state.otp.captures.first)
        #expect(c.kind == .yubicoOTP && c.source == .typed)
        #expect(c.publicID == OTPFixture.publicID && c.serial == OTPFixture.serial)
        #expect(c.text == otp && c.length == 44)
        #expect(abs(c.time - enter) < 0.000_001)
        guard case .decoded(let d) = c.decryption else { Issue.record("not decoded: \(c.decryption)"); return }
        #expect(d.usageCounter == 41 && d.sessionCounter == 3 && d.timestamp == 0x0A0B0C)
        #expect(d.privateID == "c0ffee123456" && !d.replayed)
        #expect(state.status?.text.key == "otp.status.yubico" && state.status?.kind == .success)
        #expect(state.otp.ignoredTyping == nil && state.otp.pendingCount == 0)
    }

    @Test func publicIDInAnyCaseOfTheConfigAndTheOTPMatches() throws {
        var state = OTPFixture.state()
        OTPFixture.burst(OTPFixture.otp(usage: 1, session: 0).uppercased(), into: &state)
        let c = try #require(state.otp.captures.first)
        #expect(c.kind == .yubicoOTP && c.publicID == OTPFixture.publicID)
        guard case .decoded = c.decryption else { Issue.record("not decoded"); return }
    }

    @Test func withoutAnAESKeyTheOTPIsListedButNotDecoded() throws {
        var state = OTPFixture.state(aesKeys: [:])
        OTPFixture.burst(OTPFixture.otp(usage: 1, session: 0), into: &state)
        let c = try #require(state.otp.captures.first)
        #expect(c.kind == .yubicoOTP && c.publicID == OTPFixture.publicID && c.serial == OTPFixture.serial)
        #expect(c.decryption == .noKey)
        #expect(state.status?.text.key == "otp.status.yubico")
    }

    @Test func wrongAESKeyIsReportedAsAWarning() throws {
        var state = OTPFixture.state(aesKeys: [OTPFixture.publicID: [UInt8](repeating: 0x42, count: 16)])
        OTPFixture.burst(OTPFixture.otp(usage: 1, session: 0), into: &state)
        let c = try #require(state.otp.captures.first)
        #expect(c.decryption == .wrongKey)
        #expect(state.status?.text.key == "otp.status.wrongKey" && state.status?.kind == .warning)
    }

    @Test func anAlteredOTPFailsTheCRCLikeAWrongKey() throws {
        var state = OTPFixture.state()
        var otp = Array(OTPFixture.otp(usage: 1, session: 0))
        otp[20] = otp[20] == "c" ? "b" : "c"
        OTPFixture.burst(String(otp), into: &state)
        #expect(state.otp.captures.first?.decryption == .wrongKey)
    }

    @Test func countersNotAfterAnEarlierOTPAreFlaggedAsReplayed() throws {
        var state = OTPFixture.state()
        let first = OTPFixture.otp(usage: 5, session: 2)
        OTPFixture.burst(first, into: &state)
        OTPFixture.burst(OTPFixture.otp(usage: 5, session: 3), into: &state)
        OTPFixture.burst(first, into: &state)
        let flags = state.otp.captures.map { c -> Bool? in
            if case .decoded(let d) = c.decryption { return d.replayed } else { return nil }
        }
        // Newest first: the repeated first OTP is a replay; the later session counter was fine.
        #expect(flags == [true, false, false])
    }

    @Test func humanTypingSlowlyIsNotTakenAsAnOTP() {
        var state = OTPFixture.state()
        let otp = OTPFixture.otp(usage: 1, session: 0)
        _ = OTPFixture.slowly(String(otp.prefix(12)), into: &state)
        #expect(state.otp.captures.isEmpty)
        #expect(state.otp.ignoredTyping == 12)
        #expect(state.status == nil)
        // Esc clears the notice; a key's burst after it is taken.
        _ = update(&state, .keyPress(.escape))
        #expect(state.otp.ignoredTyping == nil)
        OTPFixture.burst(otp, into: &state)
        #expect(state.otp.captures.count == 1 && state.otp.ignoredTyping == nil)
    }

    @Test func whatAHumanTypedBeforeTheTouchIsDropped() throws {
        var state = OTPFixture.state()
        for c in "cbd" {
            _ = update(&state, .keyPress(.char(c)))
            state.now += 0.3
        }
        let otp = OTPFixture.otp(usage: 1, session: 0)
        OTPFixture.burst(otp, into: &state)
        #expect(state.otp.captures.first?.text == otp)
    }

    @Test func aFastButShortLineIsNotAnOTP() {
        var state = OTPFixture.state()
        OTPFixture.burst("cbdef", into: &state)
        #expect(state.otp.captures.isEmpty && state.otp.ignoredTyping == 5)
    }

    @Test func staticPasswordIsClassifiedAndItsTextNeverKept() throws {
        var state = OTPFixture.state()
        let password = "Hunter2-Correct-Horse"
        OTPFixture.burst(password, into: &state)
        let c = try #require(state.otp.captures.first)
        #expect(c.kind == .staticPassword && c.text == nil && c.length == password.count)
        #expect(c.publicID == nil && c.decryption == .noKey)
        #expect(state.status?.text.key == "otp.status.static")
        #expect(!String(describing: state.otp).contains("Hunter2"))
        #expect(!String(describing: state.status as Any).contains("Hunter2"))
    }

    @Test func hotpCodesWithAndWithoutATokenIdentifier() throws {
        var state = OTPFixture.state()
        // Starts with "1", a tab binding: the burst keeps it from switching tabs.
        OTPFixture.burst("123456", into: &state)
        #expect(state.tab == .otp)
        var c = try #require(state.otp.captures.first)
        #expect(c.kind == .oathHOTP && c.code == "123456" && c.publicID == nil && c.serial == nil)
        #expect(state.status?.text.key == "otp.status.hotp")
        OTPFixture.burst("ubhe2812345687654321", into: &state)
        c = try #require(state.otp.captures.first)
        #expect(c.kind == .oathHOTP && c.code == "87654321")
        #expect(c.publicID == "ubhe28123456" && c.serial == 28_123_456)
    }

    @Test func anOTPStartingWithBoundKeysPerformsNoBinding() throws {
        // Public ID "ij…": "i" is the device-information binding.
        var state = OTPFixture.state(aesKeys: [:])
        let otp = OTPFixture.otp(usage: 1, session: 0, publicID: try Modhex.decode("ijcccccc"))
        #expect(otp.hasPrefix("ij"))
        #expect(OTPFixture.burst(otp, into: &state).isEmpty)
        _ = update(&state, .tick(now: state.now + 1))
        #expect(!state.showDeviceInfo && state.otp.deferred == nil)
        #expect(state.otp.captures.first?.publicID == "ijcccccc")
    }

    @Test func capturesAreNewestFirstCappedAndSelectable() {
        var state = OTPFixture.state()
        for i in 0..<(OTPTabState.maxCaptures + 5) {
            OTPFixture.burst(OTPFixture.otp(usage: 1, session: UInt8(i)), into: &state)
        }
        #expect(state.otp.captures.count == OTPTabState.maxCaptures)
        #expect(state.otp.selected == 0)
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.down))
        #expect(state.otp.selected == 2)
        _ = update(&state, .keyPress(.up))
        #expect(state.otp.selected == 1)
        _ = update(&state, .keyPress(.end))
        #expect(state.otp.selected == OTPTabState.maxCaptures - 1)
        _ = update(&state, .keyPress(.down))
        #expect(state.otp.selected == OTPTabState.maxCaptures - 1)
        _ = update(&state, .keyPress(.home))
        #expect(state.otp.selected == 0)
        _ = update(&state, .keyPress(.delete))
        #expect(state.otp.captures.isEmpty && state.otp.selectedCapture == nil)
    }
}

@Suite("Model: OTP tab keys")
struct OTPKeyTests {
    @Test func tabListensAndTakesPrintableKeys() {
        var state = OTPFixture.state()
        #expect(state.textFocused)
        _ = update(&state, .keyPress(.char("c")))
        #expect(state.otp.pendingCount == 1 && state.otp.deferred == nil && state.otp.wakeAt == nil)
        // Opening the tab again starts afresh.
        _ = update(&state, .keyPress(.tab))
        _ = update(&state, .keyPress(.backTab))
        #expect(state.tab == .otp && state.otp.pendingCount == 0)
    }

    @Test func aLoneBoundKeyActsOnceTheGapHasPassed() {
        var state = OTPFixture.state()
        _ = update(&state, .keyPress(.char("q")))
        #expect(!state.quitting)
        let due = try! #require(state.otp.wakeAt)
        #expect(due > 1000 && due < 1000.1)
        #expect(update(&state, .tick(now: 1000.02)).isEmpty && !state.quitting)
        #expect(update(&state, .tick(now: due)) == [.quit])
        #expect(state.quitting)
    }

    @Test func tabNumbersHelpAndTheChallengeFormWorkAlone() {
        var state = OTPFixture.state()
        _ = update(&state, .keyPress(.char("?")))
        _ = update(&state, .tick(now: 1001))
        #expect(state.showHelp)
        _ = update(&state, .keyPress(.char("a")))
        #expect(!state.showHelp)
        state.now = 1002
        _ = update(&state, .keyPress(.char("x")))
        _ = update(&state, .tick(now: 1003))
        #expect(state.otp.form != nil)
        _ = update(&state, .keyPress(.escape))
        #expect(state.otp.form == nil)
        state.now = 1004
        _ = update(&state, .keyPress(.char("1")))
        _ = update(&state, .tick(now: 1005))
        #expect(state.tab == .oath)
    }

    @Test func aKeyLaterWithoutATickPerformsTheBindingFirst() {
        var state = OTPFixture.state()
        _ = update(&state, .keyPress(.char("3")))
        state.now += 0.5
        _ = update(&state, .keyPress(.char("c")))
        #expect(state.tab == .fido)
    }

    @Test func aKeyNoKeyTypesEndsTheWaitAtOnce() {
        var state = OTPFixture.state()
        _ = update(&state, .keyPress(.char("x")))
        state.now += 0.005
        _ = update(&state, .keyPress(.up))
        // The form opened, then Up moved its focus to the slot.
        #expect(state.otp.form?.focus == 0)
    }

    @Test func theBoundKeyLeavingTheTabIsForgotten() {
        var state = OTPFixture.state()
        _ = update(&state, .keyPress(.char("q")))
        state.tab = .oath
        _ = update(&state, .tick(now: 1001))
        #expect(!state.quitting && state.otp.deferred == nil)
    }

    @Test func touchAsksTheVirtualKeyAndItsOTPIsCaptured() throws {
        var state = OTPFixture.state(virtual: true)
        #expect(update(&state, .keyPress(.ctrl("t"))) == [.otp(.touch)])
        #expect(state.otp.busy == .touch)
        #expect(update(&state, .keyPress(.ctrl("t"))).isEmpty)
        _ = update(&state, .otp(.touched(OTPFixture.otp(usage: 3, session: 0))))
        #expect(state.otp.busy == nil)
        let c = try #require(state.otp.captures.first)
        #expect(c.source == .touch && c.kind == .yubicoOTP)
        // "T" alone does the same.
        _ = update(&state, .keyPress(.char("T")))
        #expect(update(&state, .tick(now: state.now + 0.1)) == [.otp(.touch)])
    }

    @Test func touchOnARealKeySaysToTouchItsButton() {
        var state = OTPFixture.state()
        #expect(update(&state, .keyPress(.ctrl("t"))).isEmpty)
        #expect(state.status?.text.key == "otp.touchRealKey" && state.otp.busy == nil)
        // A backend that cannot be touched says the same.
        var virtual = OTPFixture.state(virtual: true)
        _ = update(&virtual, .keyPress(.ctrl("t")))
        _ = update(&virtual, .otp(.touched(nil)))
        #expect(virtual.status?.text.key == "otp.touchRealKey" && virtual.otp.busy == nil)
    }
}

@Suite("Model: OTP tab NDEF")
struct OTPNDEFTests {
    @Test func f5AndCtrlRReadTheTagAndItsOTPIsCaptured() throws {
        var state = OTPFixture.state()
        #expect(update(&state, .keyPress(.function(5))) == [.otp(.readNDEF(Fixture.reader))])
        #expect(state.otp.busy == .ndef)
        #expect(update(&state, .keyPress(.ctrl("r"))).isEmpty)
        let otp = OTPFixture.otp(usage: 7, session: 1)
        _ = update(&state, .otp(.ndefRead(keyID: Fixture.reader.id, otp: otp)))
        #expect(state.otp.busy == nil)
        let c = try #require(state.otp.captures.first)
        #expect(c.source == .ndef && c.text == otp)
        guard case .decoded(let d) = c.decryption else { Issue.record("not decoded"); return }
        #expect(d.usageCounter == 7 && d.sessionCounter == 1)
        #expect(update(&state, .keyPress(.ctrl("r"))) == [.otp(.readNDEF(Fixture.reader))])
    }

    @Test func withoutAKeyThereIsNothingToRead() {
        var state = OTPFixture.state()
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        #expect(update(&state, .keyPress(.function(5))).isEmpty)
        #expect(state.status?.text.key == "otp.noKey")
    }

    @Test func aKeyOnAnNFCReaderIsReadOncePerArrival() {
        var state = OTPFixture.state()
        // USB: nothing by itself.
        #expect(
            update(&state, .probed(keyID: Fixture.reader.id, OTPFixture.nfcInfo(Fixture.reader, nfc: false))).isEmpty)
        // NFC: read as soon as the probe says so.
        #expect(
            update(&state, .probed(keyID: Fixture.reader.id, OTPFixture.nfcInfo(Fixture.reader))) == [
                .otp(.readNDEF(Fixture.reader))
            ])
        _ = update(&state, .otp(.ndefRead(keyID: Fixture.reader.id, otp: OTPFixture.otp(usage: 1, session: 0))))
        #expect(update(&state, .probed(keyID: Fixture.reader.id, OTPFixture.nfcInfo(Fixture.reader))).isEmpty)
        // Leaving the tab and coming back does not read it again...
        _ = update(&state, .keyPress(.tab))
        #expect(update(&state, .keyPress(.backTab)).isEmpty)
        // ...taking it off the reader and putting it back does.
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        _ = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        #expect(
            update(&state, .probed(keyID: Fixture.reader.id, OTPFixture.nfcInfo(Fixture.reader))) == [
                .otp(.readNDEF(Fixture.reader))
            ])
    }

    @Test func aCardOnAnNFCReaderWithoutATagIsToldApartFromAUSBKey() {
        var state = OTPFixture.state()
        _ = update(&state, .probed(keyID: Fixture.reader.id, OTPFixture.nfcInfo(Fixture.reader)))
        _ = update(
            &state,
            .otp(
                .failed(
                    keyID: Fixture.reader.id,
                    OTPTabFailure(operation: .ndef, message: UIText("otp.ndef.notAvailable"), applicationMissing: true))
            ))
        #expect(state.status?.text.key == "otp.ndef.noTag" && state.otp.busy == nil)
        var usb = OTPFixture.state()
        _ = update(&usb, .probed(keyID: Fixture.reader.id, OTPFixture.nfcInfo(Fixture.reader, nfc: false)))
        _ = update(&usb, .keyPress(.function(5)))
        _ = update(
            &usb,
            .otp(
                .failed(
                    keyID: Fixture.reader.id,
                    OTPTabFailure(operation: .ndef, message: UIText("otp.ndef.notAvailable"), applicationMissing: true))
            ))
        #expect(usb.status?.text.key == "otp.ndef.notAvailable")
    }

    @Test func anNFCKeyIsReadWhenTheTabOpensNotBefore() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        #expect(update(&state, .probed(keyID: Fixture.reader.id, OTPFixture.nfcInfo(Fixture.reader))).isEmpty)
        // The tag first, then which slots are programmed.
        #expect(
            update(&state, .keyPress(.char("2"))) == [
                .otp(.readNDEF(Fixture.reader)), .otp(.readSlots(Fixture.reader)),
            ])
    }

    @Test func theSlotsAreReadOnceWhenTheTabOpensAndShownWithTheInterface() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(USBFixture.hidOnly)))
        #expect(update(&state, .keyPress(.char("2"))) == [.otp(.readSlots(USBFixture.hidOnly))])
        let status = OTPSession.Status(version: Version(5, 7, 2), programSequence: 3, touchLevel: 0x06)
        _ = update(&state, .otp(.slotsRead(OTPSlots(keyID: USBFixture.hidOnly.id, status: status, overHID: true))))
        #expect(state.otp.slots?.status?.slot2Configured == true && state.otp.slots?.overHID == true)
        // Not again on the next opening of the tab.
        _ = update(&state, .keyPress(.char("1")))
        #expect(update(&state, .keyPress(.char("2"))).isEmpty)
        // A Security Key has no OTP application: nothing to read.
        var sky = AppState(now: 1000)
        _ = update(&sky, .keyEvent(.keyArrived(USBFixture.securityKey)))
        #expect(update(&sky, .keyPress(.char("2"))).isEmpty)
    }

    @Test func failuresSaySoAndAnswersForAnotherKeyAreIgnored() {
        var state = OTPFixture.state()
        _ = update(&state, .keyPress(.function(5)))
        _ = update(&state, .otp(.ndefRead(keyID: Fixture.other.id, otp: OTPFixture.otp(usage: 1, session: 0))))
        #expect(state.otp.captures.isEmpty)
        _ = update(
            &state,
            .otp(
                .failed(
                    keyID: Fixture.reader.id,
                    OTPTabFailure(operation: .ndef, message: UIText("otp.ndef.notAvailable"), applicationMissing: true))
            ))
        #expect(state.otp.busy == nil)
        #expect(state.status?.text.key == "otp.ndef.notAvailable" && state.status?.kind == .error)
        _ = update(&state, .keyPress(.function(5)))
        _ = update(
            &state,
            .otp(
                .failed(
                    keyID: Fixture.reader.id, OTPTabFailure(operation: .ndef, message: .literal("gone"), keyGone: true))
            ))
        #expect(state.status?.text.key == "status.keyGoneMidOperation")
        #expect(state.otp.captures.isEmpty)
    }
}

@Suite("Model: OTP tab challenge-response")
struct OTPChallengeTests {
    static func openForm(_ state: inout AppState) {
        _ = update(&state, .keyPress(.char("x")))
        _ = update(&state, .tick(now: state.now + 0.1))
    }

    @Test func formValidatesAsYouTypeAndSubmitsTheChallenge() throws {
        var state = OTPFixture.state()
        Self.openForm(&state)
        let form = try #require(state.otp.form)
        #expect(form[ChallengeField.slot] == "2" && form.focus == 1 && form.problem == nil)
        // Enter on an empty challenge: a problem, no command.
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.otp.form?.problem == UIText("otp.chalresp.empty"))
        _ = Fixture.type("c0fz", into: &state)
        #expect(state.otp.form?.problem == UIText("otp.chalresp.notHex", ["char": "z"]))
        _ = update(&state, .keyPress(.backspace))
        #expect(state.otp.form?.problem == UIText("otp.chalresp.odd"))
        _ = update(&state, .keyPress(.ctrl("u")))
        _ = Fixture.type(String(repeating: "ab", count: 65), into: &state)
        #expect(state.otp.form?.problem == UIText("otp.chalresp.tooLong", ["count": "65"]))
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        _ = update(&state, .keyPress(.ctrl("u")))
        // "q" and digits are text in the form.
        _ = Fixture.type("c0 ff EE", into: &state)
        #expect(state.otp.form?.problem == nil && !state.quitting)
        // The slot: Up to it, Space to change it.
        _ = update(&state, .keyPress(.up))
        _ = update(&state, .keyPress(.char(" ")))
        #expect(state.otp.form?[ChallengeField.slot] == "1")
        _ = update(&state, .keyPress(.enter))
        let commands = update(&state, .keyPress(.enter))
        #expect(commands == [.otp(.challengeResponse(Fixture.reader, slot: 1, challenge: [0xC0, 0xFF, 0xEE]))])
        #expect(state.otp.form?.busy == true && state.otp.busy == .challenge)
        // Keys while it works do nothing; the key asks for a touch; the answer closes the form.
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        _ = update(&state, .otp(.challengeWaitingForTouch(keyID: Fixture.reader.id)))
        #expect(state.otp.waitingForTouch)
        let response = [UInt8](repeating: 0xAB, count: 20)
        _ = update(
            &state,
            .otp(
                .challengeAnswered(
                    keyID: Fixture.reader.id, slot: 1, challenge: [0xC0, 0xFF, 0xEE], response: response)))
        #expect(state.otp.form == nil && state.otp.busy == nil && !state.otp.waitingForTouch)
        #expect(
            state.otp.response
                == ChallengeResponseResult(
                    keyID: Fixture.reader.id, slot: 1, challenge: "c0ffee",
                    response: String(repeating: "ab", count: 20)))
        #expect(state.status?.text == UIText("otp.chalresp.done", ["slot": "1"]))
    }

    @Test func aSlotThatCannotAnswerKeepsTheFormWithTheReason() {
        var state = OTPFixture.state()
        Self.openForm(&state)
        _ = Fixture.type("00", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(
            &state,
            .otp(
                .failed(
                    keyID: Fixture.reader.id,
                    OTPTabFailure(operation: .challenge, message: UIText("otp.chalresp.slotEmpty", ["slot": "2"])))))
        #expect(state.otp.form?.problem == UIText("otp.chalresp.slotEmpty", ["slot": "2"]))
        #expect(state.otp.form?.busy == false && state.otp.busy == nil)
        // Submitting again works.
        #expect(
            update(&state, .keyPress(.enter)) == [.otp(.challengeResponse(Fixture.reader, slot: 2, challenge: [0]))])
    }

    @Test func keyPulledOutMidChallengeSaysSoAndClosesTheForm() {
        var state = OTPFixture.state()
        Self.openForm(&state)
        _ = Fixture.type("0102", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(
            &state,
            .otp(
                .failed(
                    keyID: Fixture.reader.id,
                    OTPTabFailure(operation: .challenge, message: .literal("no card"), keyGone: true))))
        #expect(state.otp.form == nil && state.otp.busy == nil && state.otp.response == nil)
        #expect(state.status?.text.key == "status.keyGoneMidOperation")
    }

    @Test func keyLeavingBeforeTheAnswerClosesTheFormAndTheLateAnswerIsIgnored() {
        var state = OTPFixture.state()
        Self.openForm(&state)
        _ = Fixture.type("0102", into: &state)
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        #expect(state.otp.form == nil && state.otp.busy == nil)
        #expect(state.status?.text.key == "status.keyGoneMidOperation")
        _ = update(
            &state, .otp(.challengeAnswered(keyID: Fixture.reader.id, slot: 2, challenge: [1, 2], response: [1])))
        #expect(state.otp.response == nil)
    }

    @Test func aKeyChangeUnderAnOpenFormIsPointedOut() {
        var state = OTPFixture.state()
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        Self.openForm(&state)
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        #expect(state.selectedKeyID == Fixture.other.id)
        #expect(state.otp.form?.problem == UIText("otp.keyChanged"))
        _ = Fixture.type("ab", into: &state)
        #expect(
            update(&state, .keyPress(.enter)) == [.otp(.challengeResponse(Fixture.other, slot: 2, challenge: [0xAB]))])
    }

    @Test func withoutAKeyTheFormDoesNotOpen() {
        var state = OTPFixture.state()
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        Self.openForm(&state)
        #expect(state.otp.form == nil && state.status?.text.key == "otp.noKey")
    }

    @Test func theAnswerBelongsToItsKey() {
        var state = OTPFixture.state()
        state.otp.response = ChallengeResponseResult(keyID: Fixture.reader.id, slot: 2, challenge: "00", response: "11")
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        #expect(state.otp.response == nil)
    }

    @Test func challengeProblemRules() {
        #expect(challengeProblem("") == UIText("otp.chalresp.empty"))
        #expect(challengeProblem("   ") == UIText("otp.chalresp.empty"))
        #expect(challengeProblem("0g") == UIText("otp.chalresp.notHex", ["char": "g"]))
        #expect(challengeProblem("abc") == UIText("otp.chalresp.odd"))
        #expect(challengeProblem(String(repeating: "00", count: 64)) == nil)
        #expect(challengeProblem(String(repeating: "00", count: 65)) == UIText("otp.chalresp.tooLong", ["count": "65"]))
        #expect(challengeProblem("DE AD be ef") == nil)
    }
}

/// The tab's commands performed by the real runner against the virtual key in process.
@Suite("OTP tab work against the virtual key")
struct OTPTabWorkTests {
    static let token = OTPTokenState(
        aesKey: OTPFixture.aesKey, publicID: YubicoOTP.publicID(serial: OTPFixture.serial),
        privateID: OTPFixture.privateID, usageCounter: 9)

    static func backend() -> InProcessBackend {
        var state = VirtualKeyState.yubiKey5NFC()
        state.otpToken = token
        return InProcessBackend(state)
    }

    static func failure(_ msg: Msg) -> OTPTabFailure? {
        if case .otp(.failed(_, let f)) = msg { return f } else { return nil }
    }

    @Test func ndefReadGivesAYubicoOTPThatDecryptsWithTheTokenKey() async throws {
        let backend = Self.backend()
        let h = Harness(backend, directory: temporaryDirectory())
        var state = OTPFixture.state()
        var usage = [Int]()
        for _ in 0..<2 {
            let (keyID, otp) = try await h.run(.otp(.readNDEF(InProcessBackend.descriptor))) {
                msg -> (String, String)? in
                if case .otp(.ndefRead(let k, let o)) = msg { return (k, o) } else { return nil }
            }
            #expect(keyID == InProcessBackend.descriptor.id)
            #expect(otp.hasPrefix(OTPFixture.publicID) && otp.count == 44)
            capture(&state, otp, source: .ndef)
            let c = try #require(state.otp.captures.first)
            guard case .decoded(let d) = c.decryption else { Issue.record("not decoded: \(otp)"); return }
            #expect(d.privateID == "c0ffee123456" && !d.replayed)
            usage.append(d.usageCounter)
        }
        #expect(usage.allSatisfy { $0 >= 9 })
    }

    @Test func aCardWithoutAnNDEFTagOrOTPApplicationIsAClearFailure() async throws {
        let h = Harness(NoApplicationsBackend(), directory: temporaryDirectory())
        let ndef = try await h.run(.otp(.readNDEF(NoApplicationsBackend.descriptor)), Self.failure)
        #expect(
            ndef == OTPTabFailure(operation: .ndef, message: UIText("otp.ndef.notAvailable"), applicationMissing: true))
        let challenge = try await h.run(
            .otp(.challengeResponse(NoApplicationsBackend.descriptor, slot: 2, challenge: [1])), Self.failure)
        #expect(
            challenge
                == OTPTabFailure(
                    operation: .challenge, message: UIText("otp.chalresp.notAvailable"), applicationMissing: true))
    }

    @Test func challengeResponseMatchesHMACSHA1OfTheSlotKey() async throws {
        let backend = Self.backend()
        let secret = Array("ykterm-test-secret!!".utf8)
        let session = try await OTPSession.make(connection: VirtualKeyConnection(key: backend.key))
        try await session.programChallengeResponse(slot: 2, key: secret)
        let h = Harness(backend, directory: temporaryDirectory())
        for challenge in [[UInt8]([0x00]), Array("ykterm".utf8), (1...63).map { UInt8($0) }] {
            let response = try await h.run(
                .otp(.challengeResponse(InProcessBackend.descriptor, slot: 2, challenge: challenge))
            ) { msg -> [UInt8]? in
                if case .otp(.challengeAnswered(_, 2, challenge, let r)) = msg { return r } else { return nil }
            }
            #expect(response == Crypto.hmac(.sha1, key: secret, data: challenge))
        }
    }

    @Test func anEmptySlotAndAPulledKeyAreReported() async throws {
        let backend = Self.backend()
        let h = Harness(backend, directory: temporaryDirectory())
        let empty = try await h.run(
            .otp(.challengeResponse(InProcessBackend.descriptor, slot: 1, challenge: [1])), Self.failure)
        #expect(empty == OTPTabFailure(operation: .challenge, message: UIText("otp.chalresp.slotEmpty", ["slot": "1"])))
        backend.unplug()
        let gone = try await h.run(
            .otp(.challengeResponse(InProcessBackend.descriptor, slot: 2, challenge: [1])), Self.failure)
        #expect(gone.keyGone && gone.operation == .challenge)
        let ndef = try await h.run(.otp(.readNDEF(InProcessBackend.descriptor)), Self.failure)
        #expect(ndef.keyGone && ndef.operation == .ndef)
    }

    @Test func aBackendThatCannotBeTouchedSaysSo() async throws {
        let h = Harness(Self.backend(), directory: temporaryDirectory())
        let touched = try await h.run(.otp(.touch)) { msg -> String?? in
            if case .otp(.touched(let o)) = msg { return .some(o) } else { return nil }
        }
        #expect(touched == .some(nil))
    }

    @Test func errorsMapToMessagesThatSayWhatToDo() {
        #expect(
            OTPTabWork.failure(.challenge, OTPError.notChallengeResponse(1)).message
                == UIText("otp.chalresp.notHMAC", ["slot": "1"]))
        #expect(
            OTPTabWork.failure(.challenge, OTPError.touchTimeout(2)).message
                == UIText("otp.chalresp.touchTimeout", ["slot": "2"]))
        #expect(
            OTPTabWork.failure(.challenge, SmartCardError.applicationNotAvailable("OTP")).message
                == UIText("otp.chalresp.notAvailable"))
        #expect(
            OTPTabWork.failure(.ndef, SmartCardError.applicationNotAvailable("OTP")).message
                == UIText("otp.ndef.notAvailable"))
        #expect(OTPTabWork.failure(.ndef, SmartCardError.noCard("r")).keyGone)
    }
}

/// A card on an NFC reader that has none of the applications: every command gets 6A82 (file not found).
final class NoApplicationsBackend: KeyBackend, Sendable {
    static let descriptor = KeyDescriptor(transport: .pcsc(reader: "ACS ACR122U 00 00"), name: "ACS ACR122U 00 00")

    final class Connection: SmartCardConnection {
        let atr: [UInt8] = [0x3B, 0x8F, 0x80, 0x01]
        let name = NoApplicationsBackend.descriptor.name
        func transmit(_ command: [UInt8]) async throws -> [UInt8] { [0x6A, 0x82] }
        func close() async {}
    }

    func events() -> AsyncStream<KeyEvent> { AsyncStream { $0.yield(.keyArrived(Self.descriptor)) } }
    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection { Connection() }
}
