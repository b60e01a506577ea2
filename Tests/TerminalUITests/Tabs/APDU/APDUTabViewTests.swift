import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// The APDU tab, the device view and the key switcher at 80x24, with the English strings.
enum APDUViewFixture {
    static let selectOATH = "00A4040007A0000005272101"
    static let selectBytes: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x05, 0x27, 0x21, 0x01]
    /// The OATH SELECT answer: version 5.7.2 and the 8-byte name (YKOATH).
    static let oathData: [UInt8] = [
        0x79, 0x03, 0x05, 0x07, 0x02, 0x71, 0x08, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
    ]
    static let second = KeyDescriptor(transport: .pcsc(reader: "Virtual PCD 00 01"), name: "Virtual PCD 00 01")

    /// The APDU tab of the view fixture's key.
    static func console() -> AppState {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("4")))
        return state
    }

    static func type(_ text: String, _ state: inout AppState) {
        for c in text { _ = update(&state, .keyPress(.char(c))) }
    }

    /// Sends `text` and answers it with `data` and `sw` (one exchange, or `exchanges`).
    static func exchange(
        _ text: String, data: [UInt8], sw: StatusWord = .ok, exchanges: [APDUExchange]? = nil,
        _ state: inout AppState
    ) {
        type(text, &state)
        let commands = update(&state, .keyPress(.enter))
        guard case .apdu(.send(_, let bytes, _, let id)) = commands.first else {
            Issue.record("nothing sent for \(text): \(commands)")
            return
        }
        let response = Response(data: data, status: sw)
        _ = update(
            &state,
            .apdu(
                .answered(
                    keyID: ViewFixture.key.id, id: id,
                    exchanges: exchanges ?? [APDUExchange(command: bytes, response: response.bytes)],
                    response: response)))
    }

    /// A key that told everything over Management: a YubiKey 5 NFC with PIV off over NFC.
    static func fullInfo(serial: UInt32 = 28_123_456) -> KeyInfo {
        let usb: Capabilities = [.otp, .u2f, .fido2, .oath, .piv, .openpgp, .hsmauth]
        var device = DeviceInfo(
            serial: serial, version: Version(5, 7, 2), formFactor: .usbAKeychain, supportedUSB: usb,
            enabledUSB: usb, supportedNFC: usb, enabledNFC: usb.subtracting(.piv),
            autoEjectTimeout: 0, challengeResponseTimeout: 15)
        device.partNumber = nil
        return KeyInfo(
            reader: ViewFixture.key.name, atr: [], device: device, applications: ["OATH", "PIV"], overNFC: false)
    }

    /// The device view of a key whose configuration is locked: OATH over USB turned off and confirmed, the
    /// lock code typed wrong and refused by the key.
    static func lockRefusedState() -> AppState {
        var s = ViewFixture.state()
        var info = fullInfo()
        info.device.isConfigLocked = true
        _ = update(&s, .probed(keyID: ViewFixture.key.id, info))
        for k: KeyPress in [.char("i"), .right, .right, .right, .char(" ")] { _ = update(&s, .keyPress(k)) }
        s.now += 1
        _ = update(&s, .keyPress(.char("y")))
        for c in "ffeeddccbbaa99887766554433221100" { _ = update(&s, .keyPress(.char(c))) }
        _ = update(&s, .keyPress(.enter))
        _ = update(
            &s, .configWritten(keyID: ViewFixture.key.id, failure: ErrorExplanation(ManagementError.wrongLockCode).text)
        )
        s.status = nil
        return s
    }

    /// L on an unlocked key: the new lock code typed once.
    static func setLockState() -> AppState {
        var s = ViewFixture.state()
        _ = update(&s, .probed(keyID: ViewFixture.key.id, fullInfo()))
        for k: KeyPress in [.char("i"), .char("L")] { _ = update(&s, .keyPress(k)) }
        for c in "00112233445566778899aabbccddeeff" { _ = update(&s, .keyPress(.char(c))) }
        s.status = nil
        return s
    }
}

@Suite("Views: APDU console")
struct APDUTabViewTests {
    @Test func emptyConsoleExplainsItselfAndTheInputHasTheCursor() {
        let state = APDUViewFixture.console()
        let screen = ViewFixture.render(state)
        #expect(screen.text(row: 0).contains("4 APDU"))
        #expect(screen.text(row: 1).contains("APDU console"))
        #expect(screen.text(row: 1).contains("not connected"))
        #expect(screen.contains("Type a command APDU in hex (spaces allowed) and press Enter."))
        #expect(screen.contains("Example: 00A4040007A0000005272101 selects the OATH application."))
        #expect(screen.contains("select oath, sel fido"))
        // The shortcut names, wrapped to the width of the screen.
        let intro = screen.lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(intro.contains("Shortcuts:"))
        for name in ["OATH", "FIDO", "OTP", "Management", "PIV", "OpenPGP", "NDEF"] {
            #expect(intro.contains(name + ",") || intro.contains(name + ")"), "\(name)")
        }
        // The input line above the check line; the cursor sits in it.
        #expect(screen.text(row: 19).hasPrefix(" > "))
        #expect(screen.cursor == CellPosition(row: 19, column: 3))
        #expect(screen.text(row: 20).contains("hex, or select NAME"))
        // The bindings of the input in the hints line.
        #expect(screen.text(row: 21).contains("Enter send") && screen.text(row: 21).contains("Esc leave input"))
    }

    @Test func inputIsCheckedAsTyped() {
        var state = APDUViewFixture.console()
        APDUViewFixture.type("00A4 04 0G", &state)
        var screen = ViewFixture.render(state)
        #expect(screen.text(row: 19).contains(" > 00A4 04 0G"))
        #expect(screen.cursor == CellPosition(row: 19, column: 13))
        let problem = screen.text(row: 20)
        #expect(problem.contains("'G' at position 10 is not a hexadecimal digit"))
        let column = problem.distance(from: problem.startIndex, to: problem.range(of: "'G'")!.lowerBound)
        #expect(screen.style(row: 20, column: column) == Theme().error)

        state = APDUViewFixture.console()
        APDUViewFixture.type("00A4040007A0000005272101", &state)
        screen = ViewFixture.render(state)
        #expect(screen.text(row: 20).contains("12 bytes · case 3 · INS A4 · Lc 7 · Le - · Enter sends"))

        state = APDUViewFixture.console()
        APDUViewFixture.type("sel oath", &state)
        #expect(ViewFixture.render(state).text(row: 20).contains("00A4040007A0000005272101 · Enter sends"))

        state = APDUViewFixture.console()
        APDUViewFixture.type("select banana", &state)
        #expect(ViewFixture.render(state).text(row: 20).contains("unknown application \"banana\""))
    }

    @Test func malformedLineOnEnterSaysItWasNotSent() {
        var state = APDUViewFixture.console()
        APDUViewFixture.type("00A40", &state)
        _ = update(&state, .keyPress(.enter))
        let screen = ViewFixture.render(state)
        #expect(screen.contains("not sent: 00A40"))
        #expect(screen.text(row: 23).contains("odd number of hex digits (5)"))
        #expect(screen.text(row: 19).contains(" > 00A40"))
    }

    @Test func oathSelectShowsCommandStatusWordDataAndTLV() throws {
        var state = APDUViewFixture.console()
        APDUViewFixture.exchange(APDUViewFixture.selectOATH, data: APDUViewFixture.oathData, &state)
        let screen = ViewFixture.render(state)
        #expect(screen.text(row: 1).contains("selected: OATH"))
        #expect(screen.text(row: 1).contains(state.selectedKey?.model ?? "?"))
        #expect(screen.contains("connection opened to"))
        let command = try #require(ViewFixture.line(screen, containing: "> 00A4040007A0000005272101"))
        #expect(command.contains("SELECT OATH"))
        let sw = try #require(ViewFixture.line(screen, containing: "< SW=9000 (success)"))
        #expect(sw.contains("15 bytes"))
        #expect(screen.contains("79 03 05 07 02 71 08 11 22 33 44 55 66 77 88"))
        #expect(screen.contains("TLV"))
        #expect(ViewFixture.line(screen, containing: "79 (3) 050702")?.contains("version") == true)
        #expect(ViewFixture.line(screen, containing: "71 (8) 1122334455667788")?.contains("name") == true)
        // The input is empty again and keeps the focus.
        #expect(screen.text(row: 19).trimmingCharacters(in: .whitespaces) == ">")
        #expect(screen.cursor == CellPosition(row: 19, column: 3))
    }

    @Test func shortcutAndFailureStatusWord() throws {
        var state = APDUViewFixture.console()
        APDUViewFixture.exchange("sel piv", data: [], sw: .fileNotFound, &state)
        let screen = ViewFixture.render(state)
        #expect(ViewFixture.line(screen, containing: "> 00A4040005A000000308")?.contains("SELECT PIV") == true)
        let sw = try #require(ViewFixture.line(screen, containing: "< SW=6A82"))
        #expect(sw.contains("file or application not found"))
        #expect(screen.text(row: 1).contains("selected: none"))
        let row = try #require(screen.lines.firstIndex { $0.contains("< SW=6A82") })
        #expect(screen.style(row: row, column: 1) == Theme().warning)
    }

    @Test func chainedAnswerShowsEachExchange() {
        var state = APDUViewFixture.console()
        let first = Array(APDUViewFixture.oathData.prefix(4)) + [0x61, 0x0B]
        let rest = Array(APDUViewFixture.oathData.dropFirst(4)) + [0x90, 0x00]
        APDUViewFixture.exchange(
            APDUViewFixture.selectOATH + "04", data: APDUViewFixture.oathData,
            exchanges: [
                APDUExchange(command: APDUViewFixture.selectBytes + [0x04], response: first),
                APDUExchange(command: [0x00, 0xA5, 0x00, 0x00], response: rest),
            ], &state)
        let screen = ViewFixture.render(state)
        #expect(screen.contains("→ 00A4040007A000000527210104"))
        #expect(screen.contains("← 4 bytes, SW=610B (11 more bytes available)"))
        #expect(screen.contains("→ 00A50000"))
        #expect(screen.contains("← 11 bytes, SW=9000 (success)"))
        #expect(screen.contains("< SW=9000 (success)"))
    }

    @Test func pendingCommandSaysWorking() {
        var state = APDUViewFixture.console()
        APDUViewFixture.type("00A10000", &state)
        _ = update(&state, .keyPress(.enter))
        let screen = ViewFixture.render(state)
        #expect(screen.text(row: 20).contains("Working"))
        #expect(screen.contains("> 00A10000"))
    }

    @Test func longLogShowsTheNewestAndScrollsBack() {
        var state = APDUViewFixture.console()
        for _ in 0..<12 { APDUViewFixture.exchange("00A10000", data: [], &state) }
        // 1 note + 12 × (command, status) lines; 17 rows show, between the header and the input.
        var screen = ViewFixture.render(state)
        #expect(screen.text(row: 1).contains("9-25/25"))
        #expect(screen.text(row: 18).contains("< SW=9000"))
        _ = update(&state, .keyPress(.pageUp))
        screen = ViewFixture.render(state)
        #expect(screen.text(row: 1).contains("1-17/25"))
        #expect(screen.text(row: 2).contains("connection opened"))
    }

    @Test func longInputScrollsToKeepTheCursorInView() {
        var state = APDUViewFixture.console()
        let long = "00DA0000" + "FF" + String(repeating: "AB", count: 60)
        APDUViewFixture.type(long, &state)
        let screen = ViewFixture.render(state)
        let cursor = screen.cursor
        #expect(cursor?.row == 19)
        #expect((cursor?.column ?? 99) < 80)
        #expect(screen.text(row: 19).contains("ABAB"))
        #expect(!screen.text(row: 19).contains("00DA"))
    }

    @Test func outsideTheInputTheHintsNameTheConsoleKeysAndHelpFitsAt80x24() {
        var state = APDUViewFixture.console()
        _ = update(&state, .keyPress(.escape))
        var screen = ViewFixture.render(state)
        let hints = screen.text(row: 21)
        #expect(hints.contains("Enter type") && hints.contains("s save transcript"))
        #expect(screen.text(row: 20).contains("Enter, : or / to type a command"))
        #expect(screen.cursor == nil)
        _ = update(&state, .keyPress(.char("?")))
        screen = ViewFixture.render(state)
        for text in [
            "send the command", "earlier and later commands", "scroll the log",
            "SELECT: oath fido otp management piv openpgp ndef",
            "save the transcript", "clear the log", "device information", "any other key closes this help",
        ] {
            #expect(screen.contains(text), "\(text)")
        }
    }

    @Test func saveDialogAndOverwriteConfirmation() {
        var state = APDUViewFixture.console()
        APDUViewFixture.exchange("00A10000", data: [], &state)
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("s")))
        var screen = ViewFixture.render(state)
        #expect(screen.contains("Save the transcript"))
        #expect(ViewFixture.line(screen, containing: "File")?.contains("ykterm-apdu-transcript.txt") == true)
        #expect(screen.contains("mode 0600"))
        #expect(screen.text(row: 21).contains("Esc cancel"))
        _ = update(&state, .keyPress(.enter))
        _ = update(
            &state,
            .apdu(
                .saveFailed(
                    .transcript, path: "ykterm-apdu-transcript.txt", message: UIText("apdu.save.failed"), exists: true))
        )
        screen = ViewFixture.render(state)
        #expect(screen.contains("The file exists. Overwrite it?"))
        #expect(screen.contains("ykterm-apdu-transcript.txt exists: what it holds now is lost."))
        #expect(screen.contains("y confirm"))
        state.now += 1
        _ = update(&state, .keyPress(.char("y")))
        _ = update(&state, .apdu(.saved(.transcript, path: "ykterm-apdu-transcript.txt")))
        #expect(ViewFixture.render(state).text(row: 23).contains("Transcript saved to ykterm-apdu-transcript.txt"))
    }

    @Test func aLongPathInTheOverwriteQuestionIsWrappedNotCut() {
        var state = APDUViewFixture.console()
        APDUViewFixture.exchange("00A10000", data: [], &state)
        let path = "/tmp/" + String(repeating: "very-long-directory-name/", count: 4) + "transcript.txt"
        _ = update(
            &state, .apdu(.saveFailed(.transcript, path: path, message: UIText("apdu.save.failed"), exists: true)))
        let screen = ViewFixture.render(state)
        let text = screen.lines.map { $0.replacingOccurrences(of: "│", with: "").trimmingCharacters(in: .whitespaces) }
            .joined()
        #expect(text.contains(path + " exists"))
    }

    @Test func keyLeavingIsNotedInTheLog() {
        var state = APDUViewFixture.console()
        APDUViewFixture.exchange("sel oath", data: APDUViewFixture.oathData, &state)
        _ = update(&state, .keyEvent(.keyLeft(id: ViewFixture.key.id)))
        let screen = ViewFixture.render(state)
        #expect(screen.contains("the key left: the console's connection is closed"))
        #expect(screen.text(row: 1).contains("not connected"))
        #expect(screen.text(row: 22).contains("no key"))
    }

    @Test func asciiTerminal() {
        var state = APDUViewFixture.console()
        APDUViewFixture.exchange("sel oath", data: APDUViewFixture.oathData, &state)
        let screen = ViewFixture.render(state, unicode: false)
        #expect(screen.text(row: 1).contains(" | "))
        #expect(screen.contains("< SW=9000 (success)"))
    }
}

@Suite("Views: device information and key switcher")
struct DeviceViewTests {
    @Test func managementInformationOfTheSelectedKey() throws {
        var state = ViewFixture.state()
        _ = update(&state, .probed(keyID: ViewFixture.key.id, APDUViewFixture.fullInfo()))
        _ = update(&state, .keyPress(.char("i")))
        #expect(state.showDeviceInfo)
        let screen = ViewFixture.render(state)
        #expect(screen.contains("Device information"))
        #expect(ViewFixture.line(screen, containing: "Model")?.contains("YubiKey 5") == true)
        #expect(ViewFixture.line(screen, containing: "Serial")?.contains("28123456") == true)
        #expect(ViewFixture.line(screen, containing: "Firmware")?.contains("5.7.2") == true)
        #expect(ViewFixture.line(screen, containing: "Form factor")?.contains("Keychain (USB-A)") == true)
        #expect(ViewFixture.line(screen, containing: "Auto-eject")?.contains("off") == true)
        #expect(ViewFixture.line(screen, containing: "Challenge-response timeout")?.contains("15 s") == true)
        #expect(ViewFixture.line(screen, containing: "Connected over")?.contains("USB") == true)
        // Only an Enhanced PIN key has a PIN complexity row.
        #expect(ViewFixture.line(screen, containing: "PIN complexity") == nil)
        let usb = try #require(ViewFixture.line(screen, containing: "USB applications"))
        #expect(usb.contains("OTP U2F FIDO2 OATH PIV OpenPGP HSMAUTH"))
        let nfc = try #require(ViewFixture.line(screen, containing: "NFC applications"))
        #expect(nfc.contains("OATH PIV(off) OpenPGP"))
        #expect(screen.contains("arrows · Space on/off · L lock code · n name · other keys close"))
        // The cursor is on the first toggle: OTP over USB, drawn reversed.
        let otpRow = try #require(screen.lines.firstIndex { $0.contains("USB applications") })
        let otpColumn = screen.lines[otpRow].distance(
            from: screen.lines[otpRow].startIndex,
            to: screen.lines[otpRow].range(of: "OTP U2F")!.lowerBound)
        #expect(screen.style(row: otpRow, column: otpColumn).reverse)
        #expect(!screen.style(row: otpRow, column: otpColumn + 4).reverse)
        // The overlay fits: its border is on screen, the status bar still below it.
        #expect(screen.text(row: 22).contains("serial 28123456"))
        // Any key closes it.
        _ = update(&state, .keyPress(.char("z")))
        #expect(!state.showDeviceInfo)
        #expect(!ViewFixture.render(state).contains("Device information"))
        var enhanced = APDUViewFixture.fullInfo()
        enhanced.device.pinComplexity = true
        _ = update(&state, .probed(keyID: ViewFixture.key.id, enhanced))
        _ = update(&state, .keyPress(.char("i")))
        let rendered = ViewFixture.render(state)
        #expect(ViewFixture.line(rendered, containing: "Model")?.contains("YubiKey 5 NFC - Enhanced PIN") == true)
        #expect(ViewFixture.line(rendered, containing: "PIN complexity")?.contains("enforced") == true)
        #expect(ViewFixture.line(rendered, containing: "NFC restricted") == nil)
        enhanced.device.nfcRestricted = true
        _ = update(&state, .probed(keyID: ViewFixture.key.id, enhanced))
        let restricted = ViewFixture.render(state)
        #expect(
            ViewFixture.line(restricted, containing: "NFC restricted")?.contains(
                "off until the key is next on USB power") == true)
    }

    @Test func toggleAsksWithBeforeAndAfterThenWrites() throws {
        var state = ViewFixture.state()
        _ = update(&state, .probed(keyID: ViewFixture.key.id, APDUViewFixture.fullInfo()))
        _ = update(&state, .keyPress(.char("i")))
        // Down to OATH over USB (OTP U2F FIDO2 OATH), then Space.
        for _ in 0..<3 { _ = update(&state, .keyPress(.down)) }
        _ = update(&state, .keyPress(.char(" ")))
        var screen = ViewFixture.render(state)
        // Before → after, wrapped to the box.
        #expect(screen.contains("USB applications: OTP U2F FIDO2 OATH PIV OpenPGP HSMAUTH → OTP U2F"))
        #expect(screen.contains("FIDO2 PIV OpenPGP HSMAUTH"))
        #expect(screen.contains("y applies the change"))
        #expect(!screen.contains("restarts"))
        _ = update(&state, .tick(now: state.now + 1))
        let commands = update(&state, .keyPress(.char("y")))
        #expect(
            commands == [
                .writeConfig(
                    ViewFixture.key, DeviceConfiguration(enabledUSB: [.otp, .u2f, .fido2, .piv, .openpgp, .hsmauth]),
                    reboot: false)
            ])
        screen = ViewFixture.render(state)
        #expect(screen.contains("Writing the configuration"))
        #expect(update(&state, .configWritten(keyID: ViewFixture.key.id, failure: nil)) == [.probe(ViewFixture.key)])
        #expect(ViewFixture.render(state).contains("Configuration updated."))
    }

    @Test func aLockedKeyAsksForItsLockCodeMaskedAndSaysWhenItIsWrong() throws {
        var state = ViewFixture.state()
        var info = APDUViewFixture.fullInfo()
        info.device.isConfigLocked = true
        _ = update(&state, .probed(keyID: ViewFixture.key.id, info))
        for k: KeyPress in [.char("i"), .right, .right, .right, .char(" ")] { _ = update(&state, .keyPress(k)) }
        var screen = ViewFixture.render(state)
        #expect(screen.contains("its lock code is asked for next") && screen.contains("y applies the change"))
        state = APDUViewFixture.lockRefusedState()
        screen = ViewFixture.render(state)
        #expect(screen.contains("Configuration lock code") && screen.contains("Current lock code"))
        #expect(screen.contains("the configuration is locked and the lock code was wrong"))
        #expect(!screen.contains("ffeedd"))
        // The hints line is the dialog's while it is open.
        #expect(screen.text(row: 21).contains("Esc cancel"))
        // Typed again: bullets, never the digits.
        for c in "0011223344" { _ = update(&state, .keyPress(.char(c))) }
        screen = ViewFixture.render(state)
        #expect(screen.contains(String(repeating: "•", count: 10)) && !screen.contains("0011223344"))
    }

    @Test func lOpensTheLockCodeDialogNamedInTheFooterAndTheHelp() {
        var state = ViewFixture.state()
        _ = update(&state, .probed(keyID: ViewFixture.key.id, APDUViewFixture.fullInfo()))
        _ = update(&state, .keyPress(.char("i")))
        #expect(ViewFixture.render(state).contains("L lock code"))
        let screen = ViewFixture.render(APDUViewFixture.setLockState())
        #expect(screen.contains("Set the configuration lock code") && screen.contains("New lock code again"))
        #expect(screen.contains(String(repeating: "•", count: 32)) && !screen.contains("00112233"))
        let help = ViewFixture.render(Golden.press([.char("?")], ViewFixture.state()), rows: 60)
        #expect(help.contains("applications on/off; L: the lock code"))
    }

    @Test func keyWithoutNFCAndKeyStillBeingRead() {
        var state = ViewFixture.state()
        var info = APDUViewFixture.fullInfo()
        info.device.supportedNFC = nil
        info.device.enabledNFC = nil
        _ = update(&state, .probed(keyID: ViewFixture.key.id, info))
        _ = update(&state, .keyPress(.char("i")))
        #expect(ViewFixture.line(ViewFixture.render(state), containing: "NFC applications")?.contains("no NFC") == true)

        var reading = AppState(now: 1000)
        _ = update(&reading, .keyEvent(.keyArrived(ViewFixture.key)))
        _ = update(&reading, .keyPress(.char("i")))
        let screen = ViewFixture.render(reading)
        #expect(screen.contains("Reading the key…"))
        #expect(ViewFixture.line(screen, containing: "Reader")?.contains(ViewFixture.key.name) == true)
        _ = update(&reading, .probed(keyID: ViewFixture.key.id, nil))
        #expect(ViewFixture.render(reading).contains("The key did not tell"))
    }

    @Test func probedKeyWithoutManagementAndNoKey() {
        var state = ViewFixture.state()
        let info = KeyInfo(
            reader: ViewFixture.key.name, atr: [], device: DeviceInfo(version: Version(0, 0, 0), fromManagement: false),
            applications: ["OATH", "FIDO"], overNFC: true)
        _ = update(&state, .probed(keyID: ViewFixture.key.id, info))
        _ = update(&state, .keyPress(.char("i")))
        let screen = ViewFixture.render(state)
        #expect(ViewFixture.line(screen, containing: "Applications")?.contains("OATH FIDO") == true)
        #expect(screen.contains("Probed: the key has no Management application"))
        #expect(ViewFixture.line(screen, containing: "Connected over")?.contains("NFC") == true)
        #expect(ViewFixture.line(screen, containing: "Serial")?.contains("unknown") == true)

        var empty = AppState(now: 1000)
        _ = update(&empty, .keyPress(.char("i")))
        #expect(ViewFixture.render(empty).contains("No key"))
    }

    @Test func deviceViewOpensFromTheAPDUTabOutsideTheInput() {
        var state = APDUViewFixture.console()
        _ = update(&state, .keyPress(.char("i")))
        #expect(!state.showDeviceInfo)
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("i")))
        #expect(state.showDeviceInfo)
        #expect(ViewFixture.render(state).contains("Device information"))
    }

    @Test func severalKeysAreNamedAndTheSwitcherChoosesOne() throws {
        var state = ViewFixture.state()
        _ = update(&state, .keyEvent(.keyArrived(APDUViewFixture.second)))
        _ = update(&state, .probed(keyID: APDUViewFixture.second.id, APDUViewFixture.fullInfo(serial: 31_000_001)))
        _ = update(&state, .keyPress(.char("i")))
        #expect(ViewFixture.render(state).contains("2 keys present: K switches"))
        // K opens the switcher over the device view.
        _ = update(&state, .keyPress(.char("K")))
        #expect(state.showKeySwitcher && state.showDeviceInfo)
        var screen = ViewFixture.render(state)
        #expect(screen.contains("Keys present"))
        let first = try #require(screen.lines.firstIndex { $0.contains("serial 28123456") && $0.contains("●") })
        let second = try #require(screen.lines.firstIndex { $0.contains("serial 31000001") })
        #expect(screen.lines[second].contains("Virtual PCD 00 01"))
        #expect(!screen.lines[second].contains("●"))
        let column = screen.lines[first].distance(
            from: screen.lines[first].startIndex, to: screen.lines[first].range(of: "●")!.lowerBound)
        #expect(screen.style(row: first, column: column).reverse)
        #expect(screen.contains("Up/Down choose · Enter select · Esc close"))
        _ = update(&state, .keyPress(.down))
        screen = ViewFixture.render(state)
        let markColumn = column
        #expect(screen.style(row: second, column: markColumn).reverse)
        #expect(!screen.style(row: first, column: markColumn).reverse)
        _ = update(&state, .keyPress(.enter))
        #expect(!state.showKeySwitcher)
        #expect(state.selectedKeyID == APDUViewFixture.second.id)
        #expect(state.preferredSerial == 31_000_001)
        screen = ViewFixture.render(state)
        #expect(screen.text(row: 22).contains("serial 31000001"))
        // The device view, still open, shows the key chosen; any other key closes it.
        #expect(state.showDeviceInfo)
        #expect(ViewFixture.line(screen, containing: "Serial")?.contains("31000001") == true)
        _ = update(&state, .keyPress(.escape))
        #expect(!state.showDeviceInfo)
        // With one key, K closes the device view like any other key.
        _ = update(&state, .keyEvent(.keyLeft(id: ViewFixture.key.id)))
        _ = update(&state, .keyPress(.char("i")))
        _ = update(&state, .keyPress(.char("K")))
        #expect(!state.showDeviceInfo && !state.showKeySwitcher)
    }

    @Test func switcherInASCIIAndWithNoKeys() {
        var state = ViewFixture.state()
        _ = update(&state, .keyEvent(.keyArrived(APDUViewFixture.second)))
        _ = update(&state, .keyPress(.char("K")))
        let screen = ViewFixture.render(state, unicode: false)
        #expect(screen.lines.contains { $0.contains("* ") && $0.contains("serial 28123456") })
        var empty = AppState(now: 1000)
        _ = update(&empty, .keyPress(.char("K")))
        #expect(ViewFixture.render(empty).contains("No key: insert one"))
    }
}

@Suite("Views: wrapping")
struct WrapTests {
    @Test func wordsLongerThanALineAreBrokenNotCut() {
        #expect(wrap("a bb ccc", width: 4) == ["a bb", "ccc"])
        #expect(wrap("see /tmp/abcdefghij now", width: 6) == ["see", "/tmp/a", "bcdefg", "hij", "now"])
        #expect(wrap("x\n\ny", width: 3) == ["x", "", "y"])
        #expect(wrap("anything", width: 0).isEmpty)
    }
}
