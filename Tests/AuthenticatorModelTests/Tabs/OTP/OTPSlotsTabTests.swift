import Foundation
import Testing
@testable import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The slot dialogs of the OTP tab: program, swap, delete, their questions and the commands they send.
@Suite("OTP tab slots")
struct OTPSlotsTabTests {
    /// The OTP tab on the reader's key, whose status says slot 1 is programmed (types on touch), slot 2 empty.
    static func state() -> AppState {
        var state = OTPFixture.state()
        let status = OTPSession.Status(version: Version(5, 7, 2), programSequence: 3, touchLevel: 0x05)
        _ = update(&state, .otp(.slotsRead(OTPSlots(keyID: Fixture.reader.id, status: status))))
        return state
    }

    /// Presses bound `c` alone (the tab waits for the burst gap, then performs it).
    static func press(_ c: Character, _ state: inout AppState) -> [Command] {
        state.now += 1
        var commands = update(&state, .keyPress(.char(c)))
        state.now += 0.2
        commands += update(&state, .tick(now: state.now))
        return commands
    }

    static func type(_ text: String, _ state: inout AppState) {
        for c in text { _ = update(&state, .keyPress(.char(c))) }
    }

    /// Moves the focus to `field`: up to the top, then Down (at most ten presses).
    static func focus(_ field: OTPSlotField, _ state: inout AppState) {
        for _ in 0..<10 { _ = update(&state, .keyPress(.up)) }
        for _ in 0..<10 {
            guard let form = state.otp.slotDialog?.form, form.fields[form.focus].id != field.rawValue else { return }
            _ = update(&state, .keyPress(.down))
        }
        Issue.record("no field \(field.rawValue)")
    }

    @Test func programOpensOnTheEmptySlotAndTheTypeChoosesTheFields() {
        var state = Self.state()
        _ = Self.press("p", &state)
        let dialog = try! #require(state.otp.slotDialog)
        #expect(dialog.kind == .program && dialog.form[OTPSlotField.slot] == "2")
        #expect(dialog.form[OTPSlotField.type] == "Yubico OTP" && !dialog.form.has(OTPSlotField.secret))
        #expect(state.openForm != nil && state.textFocused)
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.right))
        _ = update(&state, .keyPress(.right))
        let hotp = try! #require(state.otp.slotDialog?.form)
        #expect(
            hotp[OTPSlotField.type] == "OATH-HOTP" && hotp.has(OTPSlotField.secret) && hotp.has(OTPSlotField.digits))
        #expect(hotp.focus == 1 && hotp.has(OTPSlotField.accessCode))
    }

    @Test func aYubicoOTPOnAnEmptySlotIsWrittenWithoutAQuestion() {
        var state = Self.state()
        _ = Self.press("p", &state)
        Self.focus(.accessCode, &state)
        let commands = update(&state, .keyPress(.enter))
        #expect(commands == [.otp(.program(Fixture.reader, slot: 2, .yubicoOTP, accessCode: nil))])
        #expect(state.otp.busy == .slots && state.otp.slotDialog?.form.busy == true)
        // The key answers: the slots as it reports them, the values shown once.
        let after = OTPSession.Status(version: Version(5, 7, 2), programSequence: 4, touchLevel: 0x0F)
        let secrets = OTPProgrammedSecrets(
            slot: 2, publicID: OTPFixture.publicID, privateID: "00112233aabb",
            key: String(repeating: "ab", count: 16), serial: OTPFixture.serial)
        _ = update(
            &state,
            .otp(.slotsWritten(.programmed(slot: 2, secrets), OTPSlots(keyID: Fixture.reader.id, status: after))))
        #expect(state.otp.slotDialog == nil && state.otp.busy == nil && state.otp.programmed == secrets)
        #expect(state.otp.slots?.status == after && state.status?.text == UIText("otp.slots.programmed", ["slot": "2"]))
        // Typing (a key's OTP) does not close the values; Esc does.
        _ = update(&state, .keyPress(.char("c")))
        #expect(state.otp.programmed != nil)
        _ = update(&state, .keyPress(.escape))
        #expect(state.otp.programmed == nil)
    }

    @Test func overwritingAProgrammedSlotAsksAndOnlyYesWrites() {
        var state = Self.state()
        _ = Self.press("p", &state)
        _ = update(&state, .keyPress(.left))  // slot 1, programmed
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.left))  // chal-resp
        #expect(state.otp.slotDialog?.form[OTPSlotField.type] == "chal-resp")
        Self.focus(.hmacKey, &state)
        Self.type("0102030405", &state)
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.char(" ")))  // require touch
        _ = update(&state, .keyPress(.down))
        Self.type("a1a2a3a4a5a6", &state)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.otp.slotDialog?.form.confirming?.question == UIText("otp.slots.overwrite", ["slot": "1"]))
        // No goes back to the fields; yes (not in the same burst) writes.
        state.now += 1
        #expect(update(&state, .keyPress(.char("n"))).isEmpty)
        #expect(state.otp.slotDialog?.form.confirming == nil)
        _ = update(&state, .keyPress(.enter))
        state.now += 1
        let commands = update(&state, .keyPress(.char("y")))
        #expect(
            commands == [
                .otp(
                    .program(
                        Fixture.reader, slot: 1, .challengeResponse(key: [1, 2, 3, 4, 5], touch: true),
                        accessCode: [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6]))
            ])
        // The secrets left the state with the command.
        #expect(
            state.otp.slotDialog?.form[OTPSlotField.hmacKey] == ""
                && state.otp.slotDialog?.form[OTPSlotField.accessCode] == "")
    }

    @Test func staticAndHOTPFieldsAreCheckedAsTyped() {
        var state = Self.state()
        _ = Self.press("p", &state)
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.right))  // static
        Self.focus(.password, &state)
        Self.type("hello", &state)  // o is no modhex letter
        #expect(
            state.otp.slotDialog?.form.problem
                == ErrorExplanation(OTPError.unencodableCharacter(offset: 4, layout: .modhex)).text)
        for _ in 0..<5 { _ = update(&state, .keyPress(.backspace)) }
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.backspace))
        _ = update(&state, .keyPress(.backspace))
        Self.type("39", &state)
        #expect(state.otp.slotDialog?.form.problem == ErrorExplanation(OTPError.invalidPasswordLength(39)).text)
        _ = update(&state, .keyPress(.backspace))
        _ = update(&state, .keyPress(.backspace))
        Self.type("20", &state)
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.char(" ")))  // US
        _ = update(&state, .keyPress(.down))
        #expect(
            update(&state, .keyPress(.enter)) == [
                .otp(
                    .program(
                        Fixture.reader, slot: 2,
                        .staticPassword(password: nil, length: 20, layout: .us),
                        accessCode: nil))
            ])
        // HOTP: Base32 secret, 8 digits; an empty secret is refused on submit, a bad code at once.
        var hotp = Self.state()
        _ = Self.press("p", &hotp)
        _ = update(&hotp, .keyPress(.down))
        _ = update(&hotp, .keyPress(.right))
        _ = update(&hotp, .keyPress(.right))
        Self.focus(.accessCode, &hotp)
        Self.type("zz", &hotp)
        #expect(hotp.otp.slotDialog?.form.problem == UIText("otp.chalresp.notHex", ["char": "z"]))
        _ = update(&hotp, .keyPress(.backspace))
        _ = update(&hotp, .keyPress(.backspace))
        _ = update(&hotp, .keyPress(.enter))
        #expect(hotp.otp.slotDialog?.form.problem == UIText("otp.slots.rule.secretEmpty"))
        Self.focus(.secret, &hotp)
        Self.type("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", &hotp)
        _ = update(&hotp, .keyPress(.down))
        _ = update(&hotp, .keyPress(.right))
        _ = update(&hotp, .keyPress(.down))
        #expect(
            update(&hotp, .keyPress(.enter)) == [
                .otp(
                    .program(
                        Fixture.reader, slot: 2,
                        .hotp(secret: Array("12345678901234567890".utf8), digits: 8),
                        accessCode: nil))
            ])
    }

    @Test func swapAndDeleteAlwaysAsk() {
        var state = Self.state()
        _ = Self.press("w", &state)
        #expect(state.otp.slotDialog?.kind == .swap)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.otp.slotDialog?.form.confirming?.question == UIText("otp.slots.swap.confirm"))
        state.now += 1
        #expect(update(&state, .keyPress(.char("y"))) == [.otp(.swapSlots(Fixture.reader, accessCode: nil))])
        let swapped = OTPSession.Status(version: Version(5, 7, 2), programSequence: 4, touchLevel: 0x0A)
        _ = update(&state, .otp(.slotsWritten(.swapped, OTPSlots(keyID: Fixture.reader.id, status: swapped))))
        #expect(state.otp.slots?.status == swapped && state.status?.text == UIText("otp.slots.swapped"))
        // Delete opens on the programmed slot (now 2); Esc at the question writes nothing.
        _ = Self.press("D", &state)
        #expect(state.otp.slotDialog?.kind == .delete && state.otp.slotDialog?.form[OTPSlotField.slot] == "2")
        _ = update(&state, .keyPress(.down))
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.otp.slotDialog?.form.confirming?.question == UIText("otp.slots.delete.confirm", ["slot": "2"]))
        _ = update(&state, .keyPress(.escape))
        #expect(state.otp.slotDialog?.form.confirming == nil)
        _ = update(&state, .keyPress(.enter))
        state.now += 1
        #expect(update(&state, .keyPress(.char("y"))) == [.otp(.deleteSlot(Fixture.reader, slot: 2, accessCode: nil))])
    }

    @Test func aRefusedWriteStaysInTheDialogAndAPulledKeyClosesIt() {
        var state = Self.state()
        _ = Self.press("w", &state)
        _ = update(&state, .keyPress(.enter))
        state.now += 1
        _ = update(&state, .keyPress(.char("y")))
        let refused = OTPTabWork.failure(.slots, OTPError.configurationRefused)
        #expect(refused.message == UIText("otp.slots.refused"))
        _ = update(&state, .otp(.failed(keyID: Fixture.reader.id, refused)))
        #expect(
            state.otp.slotDialog?.form.problem == UIText("otp.slots.refused")
                && state.otp.slotDialog?.form.busy == false)
        #expect(state.otp.busy == nil)
        _ = update(&state, .keyPress(.enter))
        state.now += 1
        _ = update(&state, .keyPress(.char("y")))
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        #expect(state.otp.slotDialog == nil && state.otp.busy == nil)
        #expect(state.status?.text == UIText("status.keyGoneMidOperation"))
    }

    @Test func theKeysAreInTheHelp() {
        let help = otpTabHelp(Self.state()).map(\.keys)
        #expect(help.contains("p") && help.contains("w") && help.contains("D") && help.contains("a"))
    }

    @Test func anAccessCodeIsTypedTwiceAskedForAndSentAsTheNewCode() {
        var state = Self.state()
        _ = Self.press("a", &state)
        let dialog = try! #require(state.otp.slotDialog)
        // On the programmed slot; the new code's fields while Remove is off.
        #expect(dialog.kind == .accessCode && dialog.form[OTPSlotField.slot] == "1" && dialog.form.problem == nil)
        #expect(
            dialog.form.fields.map(\.id) == [
                "slot", "removeAccessCode", "accessCode", "newAccessCode", "repeatAccessCode",
            ])
        #expect(
            dialog.form.fields.allSatisfy {
                $0.input.secret == ["accessCode", "newAccessCode", "repeatAccessCode"].contains($0.id)
            })
        Self.focus(.newAccessCode, &state)
        Self.type("000000000000", &state)
        #expect(state.otp.slotDialog?.form.problem == UIText("otp.slots.access.zero"))
        for _ in 0..<12 { _ = update(&state, .keyPress(.backspace)) }
        Self.type("A1A2A3A4A5A6", &state)
        _ = update(&state, .keyPress(.enter))
        Self.type("a1a2a3a4a5a7", &state)
        #expect(state.otp.slotDialog?.form.problem == UIText("otp.slots.access.mismatch"))
        #expect(update(&state, .keyPress(.enter)).isEmpty && state.otp.slotDialog?.form.confirming == nil)
        _ = update(&state, .keyPress(.backspace))
        Self.type("6", &state)
        #expect(state.otp.slotDialog?.form.problem == nil)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.otp.slotDialog?.form.confirming?.question == UIText("otp.slots.access.confirm", ["slot": "1"]))
        state.now += 1
        let commands = update(&state, .keyPress(.char("y")))
        #expect(
            commands == [
                .otp(.setAccessCode(Fixture.reader, slot: 1, current: nil, new: [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6]))
            ])
        // The codes left the state with the command.
        let form = try! #require(state.otp.slotDialog?.form)
        #expect(form.busy && form[OTPSlotField.newAccessCode] == "" && form[OTPSlotField.repeatAccessCode] == "")
        let status = OTPSession.Status(version: Version(5, 7, 2), programSequence: 4, touchLevel: 0x05)
        _ = update(
            &state,
            .otp(
                .slotsWritten(
                    .accessCodeChanged(slot: 1, removed: false), OTPSlots(keyID: Fixture.reader.id, status: status))))
        #expect(state.otp.slotDialog == nil && state.otp.busy == nil)
        #expect(state.status?.text == UIText("otp.slots.access.set", ["slot": "1"]))
    }

    @Test func removingNeedsTheCurrentCodeAndAWrongOneStaysInTheDialog() {
        var state = Self.state()
        _ = Self.press("a", &state)
        Self.focus(.removeAccessCode, &state)
        _ = update(&state, .keyPress(.char(" ")))
        // Remove: the new code's fields go; the current code is needed.
        #expect(state.otp.slotDialog?.form.has(OTPSlotField.newAccessCode) == false)
        #expect(state.otp.slotDialog?.form.focus == 1)
        _ = update(&state, .keyPress(.down))
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.otp.slotDialog?.form.problem == UIText("otp.slots.access.removeNeedsCurrent"))
        Self.type("0102 0304 0506", &state)
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(
            state.otp.slotDialog?.form.confirming?.question == UIText("otp.slots.access.confirmRemove", ["slot": "1"]))
        state.now += 1
        #expect(
            update(&state, .keyPress(.char("y"))) == [
                .otp(.setAccessCode(Fixture.reader, slot: 1, current: [1, 2, 3, 4, 5, 6], new: nil))
            ])
        // The key refuses (a wrong code): the dialog stays, says why, and takes another try.
        let refused = OTPTabWork.failure(.slots, OTPError.configurationRefused, accessCode: true)
        #expect(refused.message == UIText("otp.slots.access.refused"))
        _ = update(&state, .otp(.failed(keyID: Fixture.reader.id, refused)))
        let form = try! #require(state.otp.slotDialog?.form)
        #expect(form.problem == UIText("otp.slots.access.refused") && !form.busy && form[OTPSlotField.accessCode] == "")
        #expect(state.otp.busy == nil && state.otp.slotDialog?.kind == .accessCode)
        // Remove off again: the new code's fields come back.
        Self.focus(.removeAccessCode, &state)
        _ = update(&state, .keyPress(.char(" ")))
        #expect(state.otp.slotDialog?.form.has(OTPSlotField.repeatAccessCode) == true)
    }

    @Test func anEmptyOrChallengeResponseSlotIsRefusedBeforeAnythingIsSent() {
        var state = Self.state()
        _ = Self.press("a", &state)
        _ = update(&state, .keyPress(.right))  // slot 2: empty
        #expect(state.otp.slotDialog?.form.problem == ErrorExplanation(OTPError.slotEmpty(2)).text)
        // Slot 1 programmed without touch: challenge-response, whose settings an UPDATE would lose.
        var chalresp = OTPFixture.state()
        let status = OTPSession.Status(version: Version(5, 7, 2), programSequence: 3, touchLevel: 0x01)
        _ = update(&chalresp, .otp(.slotsRead(OTPSlots(keyID: Fixture.reader.id, status: status))))
        _ = Self.press("a", &chalresp)
        #expect(chalresp.otp.slotDialog?.form.problem == UIText("otp.slots.access.chalresp", ["slot": "1"]))
        Self.focus(.newAccessCode, &chalresp)
        Self.type("a1a2a3a4a5a6", &chalresp)
        _ = update(&chalresp, .keyPress(.enter))
        Self.type("a1a2a3a4a5a6", &chalresp)
        #expect(update(&chalresp, .keyPress(.enter)).isEmpty && chalresp.otp.slotDialog?.form.confirming == nil)
        #expect(chalresp.otp.slotDialog?.form.problem == UIText("otp.slots.access.chalresp", ["slot": "1"]))
    }
}

/// The slot commands performed by the real runner against the virtual key in process.
@Suite("OTP tab slot work against the virtual key")
struct OTPSlotsWorkTests {
    static func written(_ msg: Msg) -> (OTPSlotWrite, OTPSlots)? {
        if case .otp(.slotsWritten(let w, let s)) = msg { return (w, s) } else { return nil }
    }

    @Test func aProgrammedYubicoOTPDecryptsWithTheKeyShown() async throws {
        let backend = OTPTabWorkTests.backend()
        let h = Harness(backend, directory: temporaryDirectory())
        let d = InProcessBackend.descriptor
        let (write, slots) = try await h.run(.otp(.program(d, slot: 1, .yubicoOTP, accessCode: nil)), Self.written)
        guard case .programmed(1, let shown?) = write else { Issue.record("\(write)"); return }
        #expect(slots.status?.isConfigured(slot: 1) == true && slots.status?.isTouchTriggered(slot: 1) == true)
        let serial = try #require(shown.serial)
        #expect(shown.publicID == Modhex.encode(YubicoOTP.publicID(serial: serial)))
        let typed = try #require(backend.key.touch(slot: 1)).trimmingCharacters(in: .newlines)
        #expect(typed.hasPrefix(shown.publicID ?? "-") && typed.count == 44)
        let decrypted = try YubicoOTP.decrypt(typed, key: try Hex.decode(shown.key))
        #expect(decrypted.crcOK && decrypted.token.privateID.hex == shown.privateID)
    }

    @Test func anHOTPSlotTypesTheRFC4226Codes() async throws {
        let backend = OTPTabWorkTests.backend()
        let h = Harness(backend, directory: temporaryDirectory())
        let d = InProcessBackend.descriptor
        let secret = Array("12345678901234567890".utf8)
        let (write, _) = try await h.run(
            .otp(.program(d, slot: 2, .hotp(secret: secret, digits: 6), accessCode: nil)), Self.written)
        #expect(write == .programmed(slot: 2, nil))
        // RFC 4226, appendix D: counts 0 and 1.
        #expect(backend.key.touch(slot: 2)?.trimmingCharacters(in: .newlines) == "755224")
        #expect(backend.key.touch(slot: 2)?.trimmingCharacters(in: .newlines) == "287082")
    }

    @Test func swapDeleteAndAnAccessCodeAsTheKeySeesThem() async throws {
        let backend = OTPTabWorkTests.backend()
        let h = Harness(backend, directory: temporaryDirectory())
        let d = InProcessBackend.descriptor
        let code: [UInt8] = [1, 2, 3, 4, 5, 6]
        let (write, _) = try await h.run(
            .otp(.program(d, slot: 1, .challengeResponse(key: nil, touch: false), accessCode: code)),
            Self.written)
        guard case .programmed(1, let shown?) = write else { Issue.record("\(write)"); return }
        #expect(shown.publicID == nil && shown.key.count == 40)
        // Without the code the key refuses, and says so in the tab's words.
        let refused = try await h.run(.otp(.deleteSlot(d, slot: 1, accessCode: nil)), OTPTabWorkTests.failure)
        #expect(refused.operation == .slots && refused.message == UIText("otp.slots.refused"))
        let (_, swapped) = try await h.run(.otp(.swapSlots(d, accessCode: code)), Self.written)
        #expect(swapped.status?.isConfigured(slot: 1) == false && swapped.status?.isConfigured(slot: 2) == true)
        let session = try await OTPSession.make(connection: VirtualKeyConnection(key: backend.key))
        let response = try await session.calculateHMAC(slot: 2, challenge: [7])
        #expect(response == Crypto.hmac(.sha1, key: try Hex.decode(shown.key), data: [7]))
        let (deleted, slots) = try await h.run(.otp(.deleteSlot(d, slot: 2, accessCode: code)), Self.written)
        #expect(deleted == .deleted(slot: 2) && (slots.status?.touchLevel ?? 0xFF) & 0x03 == 0)
    }

    @Test func anAccessCodeSetChangedAndRemovedKeepsTheSlotsSecret() async throws {
        let backend = OTPTabWorkTests.backend()
        let h = Harness(backend, directory: temporaryDirectory())
        let d = InProcessBackend.descriptor
        let secret = Array("12345678901234567890".utf8)
        _ = try await h.run(.otp(.program(d, slot: 1, .hotp(secret: secret, digits: 6), accessCode: nil)), Self.written)
        let code: [UInt8] = [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6]
        let (set, _) = try await h.run(.otp(.setAccessCode(d, slot: 1, current: nil, new: code)), Self.written)
        #expect(set == .accessCodeChanged(slot: 1, removed: false))
        // Protected now: a delete without the code, and a change with a wrong one, are refused.
        let deleteRefused = try await h.run(.otp(.deleteSlot(d, slot: 1, accessCode: nil)), OTPTabWorkTests.failure)
        #expect(deleteRefused.message == UIText("otp.slots.refused"))
        let wrong = try await h.run(
            .otp(.setAccessCode(d, slot: 1, current: [1, 2, 3, 4, 5, 6], new: nil)), OTPTabWorkTests.failure)
        #expect(wrong.operation == .slots && wrong.message == UIText("otp.slots.access.refused"))
        // Changed, then removed with the right codes; the slot still types RFC 4226's first code.
        let next: [UInt8] = [1, 1, 2, 3, 5, 8]
        _ = try await h.run(.otp(.setAccessCode(d, slot: 1, current: code, new: next)), Self.written)
        let (removed, slots) = try await h.run(.otp(.setAccessCode(d, slot: 1, current: next, new: nil)), Self.written)
        #expect(removed == .accessCodeChanged(slot: 1, removed: true) && slots.status?.isConfigured(slot: 1) == true)
        #expect(backend.key.touch(slot: 1)?.trimmingCharacters(in: .newlines) == "755224")
        let (deleted, _) = try await h.run(.otp(.deleteSlot(d, slot: 1, accessCode: nil)), Self.written)
        #expect(deleted == .deleted(slot: 1))
    }

    /// A key that enforces PIN complexity: a new access code of one byte repeated is refused in its own words
    /// (the dialog keeps them for another try), and the slot gets no code.
    @Test func anEnhancedPINKeyRefusesAnAccessCodeOfOneRepeatedByte() async throws {
        var state = VirtualKeyState.yubiKey5NFC()
        state.pinComplexity = true
        let h = Harness(InProcessBackend(state), directory: temporaryDirectory())
        let d = InProcessBackend.descriptor
        let secret = Array("12345678901234567890".utf8)
        _ = try await h.run(.otp(.program(d, slot: 1, .hotp(secret: secret, digits: 6), accessCode: nil)), Self.written)
        let trivial = [UInt8](repeating: 0xA1, count: OTPSlotConfiguration.accessCodeSize)
        let refused = try await h.run(
            .otp(.setAccessCode(d, slot: 1, current: nil, new: trivial)), OTPTabWorkTests.failure)
        #expect(refused.operation == .slots && refused.message.key == "error.access-code-too-simple")
        let (deleted, _) = try await h.run(.otp(.deleteSlot(d, slot: 1, accessCode: nil)), Self.written)
        #expect(deleted == .deleted(slot: 1))
    }
}
