// Over 500 lines on purpose: the console's input, answer and flow suites share APDUFixture; each suite is one topic.
import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The APDU console: a state on the APDU tab with `Fixture.reader` selected and probed.
enum APDUFixture {
    static let selectOATH = "00A4040007A0000005272101"
    static let selectOATHBytes: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x05, 0x27, 0x21, 0x01]

    static func console() -> AppState {
        var state = Fixture.loaded([Fixture.entry("a", code: "123456", from: 990)])
        var info = KeyInfo(
            reader: Fixture.reader.name, atr: [], device: DeviceInfo(serial: 28_123_456, version: Version(5, 7, 2)),
            applications: ["OATH"], overNFC: false)
        info.device.formFactor = .usbAKeychain
        _ = update(&state, .probed(keyID: Fixture.reader.id, info))
        state.status = nil
        _ = update(&state, .keyPress(.char("4")))
        return state
    }

    /// Types `text` and presses Enter: the commands that came of it.
    static func send(_ text: String, _ state: inout AppState) -> [Command] {
        _ = Fixture.type(text, into: &state)
        return update(&state, .keyPress(.enter))
    }

    /// The id of the `.send` command in `commands`.
    static func sent(_ commands: [Command]) -> (bytes: [UInt8], remaining: UInt8, id: Int)? {
        for c in commands {
            if case .apdu(.send(_, let bytes, let remaining, let id)) = c { return (bytes, remaining, id) }
        }
        return nil
    }

    /// The log as text, literal lines as they are and keyed lines as their key.
    /// The log as keys, except the lines that show a status word, in English words ("< SW=9000 (success)").
    static func log(_ state: AppState) -> [String] {
        state.apdu.log.map { $0.text.literal ?? ($0.text.nested.isEmpty ? $0.text.key : words($0.text)) }
    }

    static let english = StringTables.load(language: "en")
    static func words(_ text: UIText) -> String { english.text(text) }

    /// Answers command `id` (sent as `bytes`) with `response`, in one exchange.
    static func answer(_ state: inout AppState, id: Int, _ bytes: [UInt8], _ response: Response = Response(status: .ok))
    {
        _ = update(
            &state,
            .apdu(
                .answered(
                    keyID: state.apdu.keyID ?? Fixture.reader.id, id: id,
                    exchanges: [APDUExchange(command: bytes, response: response.bytes)], response: response)))
    }

    /// The OATH SELECT answer of a key with no password: version, name (salt) — YKOATH.
    static let oathSelectData: [UInt8] = [0x79, 0x03, 0x05, 0x07, 0x02, 0x71, 0x08, 1, 2, 3, 4, 5, 6, 7, 8]
}

@Suite("Model: APDU console input")
struct APDUInputTests {
    @Test func hexWithOrWithoutSpacesAndColonsIsOneCommand() throws {
        let plain = parseAPDUInput("00A4040007A0000005272101")
        guard case .command(let bytes, let label, let summary) = plain else { Issue.record("\(plain)"); return }
        #expect(bytes == APDUFixture.selectOATHBytes)
        #expect(label == "SELECT OATH")  // typed in hex, labelled as the shortcut is
        #expect(summary.key == "apdu.input.ok")
        #expect(
            summary.arguments["bytes"] == "12" && summary.arguments["case"] == "3" && summary.arguments["lc"] == "7")
        #expect(summary.arguments["ins"] == "A4" && summary.arguments["le"] == "-")
        for text in [
            "00 A4 04 00 07 A0 00 00 05 27 21 01", "00a4 0400 07 a0000005272101", "00:A4:04:00:07:A0:00:00:05:27:21:01",
            "  00A4040007A0000005272101  ",
        ] {
            guard case .command(let b, _, _) = parseAPDUInput(text) else { Issue.record("\(text)"); continue }
            #expect(b == APDUFixture.selectOATHBytes, "\(text)")
        }
        // Case 2 with Le, and case 1.
        guard case .command(_, _, let s2) = parseAPDUInput("00CA 0000 00") else { Issue.record("case 2"); return }
        #expect(s2.arguments["case"] == "2" && s2.arguments["le"] == "256")
        guard case .command(_, _, let s1) = parseAPDUInput("00A1 0000") else { Issue.record("case 1"); return }
        #expect(s1.arguments["case"] == "1" && s1.arguments["lc"] == "0")
    }

    @Test func malformedInputSaysWhatIsWrongAsTyped() {
        func problem(_ text: String) -> UIText? {
            if case .problem(let why) = parseAPDUInput(text) { return why }
            return nil
        }
        #expect(parseAPDUInput("") == .empty)
        #expect(parseAPDUInput("   ") == .empty)
        let notHex = problem("00A4 04 0G")
        #expect(notHex?.key == ErrorKind.notHex.textKey)
        #expect(notHex?.arguments == ["character": "G", "position": "10"])
        #expect(problem("00A404000")?.key == ErrorKind.oddHex.textKey)
        #expect(problem("00A404000")?.arguments["count"] == "9")
        #expect(problem("00A4")?.key == "apdu.problem.short")
        #expect(problem("00A4")?.arguments["count"] == "2")
        let lc = problem("00A4040007A00000052721")
        #expect(lc?.key == "apdu.problem.lc")
        #expect(lc?.arguments == ["lc": "7", "follow": "6"])
        #expect(problem("00A4040007A00000052721010101")?.key == "apdu.problem.lc")
        // Lc and one more byte is Le (case 4).
        #expect(problem("00A4040007A000000527210100") == nil)
        #expect(problem("select")?.key == "apdu.problem.selectUsage")
        #expect(problem("select oath fido")?.key == "apdu.problem.selectUsage")
        let unknown = problem("select banana")
        #expect(unknown?.key == "apdu.problem.unknownApp")
        #expect(unknown?.arguments["name"] == "banana")
        #expect(unknown?.arguments["names"]?.contains("OpenPGP") == true)
        // An AID must be 5 to 16 bytes.
        #expect(problem("select A000")?.key == "apdu.problem.unknownApp")
    }

    @Test(arguments: [
        ("oath", "OATH", AID.oath), ("FIDO", "FIDO", AID.fido), ("fido2", "FIDO", AID.fido), ("u2f", "FIDO", AID.fido),
        ("otp", "OTP", AID.otp), ("management", "Management", AID.management), ("mgmt", "Management", AID.management),
        ("piv", "PIV", AID.piv), ("openpgp", "OpenPGP", AID.openpgp), ("pgp", "OpenPGP", AID.openpgp),
        ("ndef", "NDEF", AID.ndef),
    ])
    func selectShortcutsByName(name: String, known: String, aid: [UInt8]) {
        for verb in ["select", "sel", "SELECT"] {
            guard case .command(let bytes, let label, let summary) = parseAPDUInput("\(verb) \(name)") else {
                Issue.record("\(verb) \(name)")
                continue
            }
            #expect(bytes == [0x00, 0xA4, 0x04, 0x00, UInt8(aid.count)] + aid)
            #expect(label == "SELECT \(known)")
            #expect(summary.key == "apdu.input.select")
            #expect(summary.arguments["hex"] == Hex.encode(bytes, uppercase: true))
            #expect(apduSelected(bytes) == known)
        }
    }

    @Test func selectByAIDInHex() {
        guard case .command(let bytes, let label, _) = parseAPDUInput("sel A0:00:00:03:08:01") else {
            Issue.record("aid"); return
        }
        #expect(bytes == [0x00, 0xA4, 0x04, 0x00, 0x06, 0xA0, 0x00, 0x00, 0x03, 0x08, 0x01])
        #expect(label == "SELECT A00000030801")
        // A longer AID that starts with a known one names that application.
        #expect(apduSelected(bytes) == "PIV")
        #expect(apduSelected(Array(try! Hex.decode("00A4040005F000000001"))) == "F000000001")
        #expect(apduSelected(Array(try! Hex.decode("00A40000023F00"))) == nil)
    }
}

@Suite("Model: APDU console answers")
struct APDUAnswerTests {
    @Test func oathSelectAnswerShowsStatusMeaningHexAndNamedTLV() {
        let lines = apduAnswerLines(
            exchanges: [
                APDUExchange(
                    command: APDUFixture.selectOATHBytes,
                    response: APDUFixture.oathSelectData + [0x90, 0x00])
            ],
            response: Response(data: APDUFixture.oathSelectData, status: .ok), application: "OATH")
        #expect(lines.first?.kind == .ok)
        #expect(lines.first.map { APDUFixture.words($0.text) } == "< SW=9000 (success)")
        #expect(lines.first?.suffix?.key == "apdu.log.bytes")
        #expect(
            lines.contains { $0.kind == .data && $0.text.literal == "  79 03 05 07 02 71 08 01 02 03 04 05 06 07 08" })
        // One exchange: no wire lines.
        #expect(!lines.contains { $0.kind == .wire })
        #expect(lines.contains { $0.text.key == "apdu.log.tlvSimple" || $0.text.key == "apdu.log.tlv" })
        let tlv = lines.filter { $0.kind == .tlv }
        #expect(tlv.count == 2)
        #expect(tlv[0].text.literal == "    79 (3) 050702")
        #expect(tlv[0].suffix?.key == "apdu.tag.oath.version")
        #expect(tlv[1].text.literal == "    71 (8) 0102030405060708")
        #expect(tlv[1].suffix?.key == "apdu.tag.oath.name")
    }

    @Test func failureStatusWordsSayWhatTheyMean() {
        let lines = apduAnswerLines(
            exchanges: [APDUExchange(command: [0, 0xA4, 4, 0, 5, 1, 2, 3, 4, 5], response: [0x6A, 0x82])],
            response: Response(status: .fileNotFound), application: nil)
        #expect(lines.count == 1)
        #expect(lines[0].kind == .failure)
        #expect(APDUFixture.words(lines[0].text) == "< SW=6A82 (file or application not found)")
        #expect(lines[0].suffix == nil)
    }

    @Test func chainedAnswersShowEveryExchangeOnTheWire() {
        let exchanges = [
            APDUExchange(
                command: [0x00, 0xA4, 0x04, 0x00, 0x07] + AID.oath + [0x04],
                response: [0x79, 0x03, 0x05, 0x07, 0x61, 0x0A]),
            APDUExchange(
                command: [0x00, 0xA5, 0x00, 0x00], response: [0x02, 0x71, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, 0x90, 0x00]),
        ]
        let lines = apduAnswerLines(
            exchanges: exchanges, response: Response(data: APDUFixture.oathSelectData, status: .ok),
            application: "OATH")
        let wire = lines.filter { $0.kind == .wire }
        #expect(wire.count == 4)
        #expect(wire[0].text.literal == "  → 00A4040007A000000527210104")
        #expect(wire[1].text.key == "apdu.log.wireAnswer")
        #expect(APDUFixture.words(wire[1].text) == "  ← 4 bytes, SW=610A (10 more bytes available)")
        #expect(wire[2].text.literal == "  → 00A50000")
        #expect(APDUFixture.words(wire[3].text) == "  ← 11 bytes, SW=9000 (success)")
        // The gathered answer follows, whole.
        #expect(lines.contains { APDUFixture.words($0.text) == "< SW=9000 (success)" })
        #expect(lines.filter { $0.kind == .tlv }.count == 2)
    }

    @Test func berTLVOpensConstructedTagsAndTextShowsAsText() throws {
        // A template (constructed 0x61) holding two primitive tags.
        let data: [UInt8] = [0x61, 0x07, 0x4F, 0x02, 0xA0, 0x00, 0x50, 0x01, 0x41]
        let parsed = try #require(apduTLVLines(data))
        #expect(parsed.mode == .ber)
        #expect(parsed.lines.map(\.depth) == [0, 1, 1])
        #expect(parsed.lines.map(\.text) == ["61 (7)", "4F (2) A000", "50 (1) 41"])
        // Not TLV at all: none; printable text is shown as text.
        #expect(apduTLVLines([0x55, 0x32, 0x46, 0x5F, 0x56, 0x32]) == nil)
        let u2f = apduAnswerLines(
            exchanges: [], response: Response(data: Array("U2F_V2".utf8), status: .ok), application: "FIDO")
        #expect(u2f.contains { $0.text.key == "apdu.log.text" && $0.text.arguments["text"] == "U2F_V2" })
        #expect(apduTLVLines([]) == nil)
    }
}

@Suite("Model: APDU console")
struct APDUConsoleTests {
    @Test func inputHasTheFocusWhenTheTabOpensAndKeysAreText() {
        var state = APDUFixture.console()
        #expect(state.tab == .apdu)
        #expect(state.apdu.inputFocused && state.textFocused)
        // Digits, q and ? are hex or text here, not tab switches, quit or help.
        _ = Fixture.type("1q?2", into: &state)
        #expect(state.tab == .apdu && !state.quitting && !state.showHelp)
        #expect(state.apdu.input.text == "1q?2")
        // Esc leaves the input: now the global keys work; Enter goes back in.
        _ = update(&state, .keyPress(.escape))
        #expect(!state.apdu.inputFocused && !state.textFocused)
        _ = update(&state, .keyPress(.char("i")))
        #expect(state.showDeviceInfo)
        _ = update(&state, .keyPress(.char("x")))
        #expect(!state.showDeviceInfo)
        _ = update(&state, .keyPress(.enter))
        #expect(state.apdu.inputFocused)
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("/")))
        #expect(state.apdu.inputFocused)
        // Leaving the tab and coming back puts the focus in the input again.
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("1")))
        #expect(state.tab == .oath)
        _ = update(&state, .keyPress(.char("4")))
        #expect(state.tab == .apdu && state.apdu.inputFocused)
    }

    @Test func enterSendsTheCommandOnTheSelectedKey() throws {
        var state = APDUFixture.console()
        let commands = APDUFixture.send(APDUFixture.selectOATH, &state)
        let sent = try #require(APDUFixture.sent(commands))
        #expect(commands == [.apdu(.send(Fixture.reader, bytes: APDUFixture.selectOATHBytes, remaining: 0xA5, id: 1))])
        #expect(sent.id == 1)
        #expect(state.apdu.pending == 1 && state.apdu.keyID == Fixture.reader.id)
        #expect(state.apdu.input.text.isEmpty)
        #expect(state.apdu.history == [APDUFixture.selectOATH])
        let log = APDUFixture.log(state)
        #expect(log == ["apdu.note.connecting", "> 00A4040007A0000005272101"])
        #expect(state.apdu.log[1].suffix == .literal("SELECT OATH"))
        // The note names the key by its model, as the probe told it.
        #expect(state.selectedKey?.model != nil)
        #expect(state.apdu.log[0].text.arguments["name"] == state.selectedKey?.model)

        // The answer: the status word, the data, the TLV view with the OATH names; OATH is now selected.
        _ = update(
            &state,
            .apdu(
                .answered(
                    keyID: Fixture.reader.id, id: 1,
                    exchanges: [
                        APDUExchange(
                            command: APDUFixture.selectOATHBytes,
                            response: APDUFixture.oathSelectData + [0x90, 0x00])
                    ],
                    response: Response(data: APDUFixture.oathSelectData, status: .ok))))
        #expect(state.apdu.pending == nil && state.apdu.connected)
        #expect(state.apdu.application == "OATH")
        #expect(APDUFixture.log(state).contains("< SW=9000 (success)"))
        #expect(state.apdu.log.contains { $0.kind == .tlv && $0.suffix?.key == "apdu.tag.oath.version" })

        // The next command goes on the same connection: no new "connection opened" note; an OATH answer
        // in parts is fetched with SEND REMAINING.
        let next = APDUFixture.send("00 A1 00 00", &state)
        #expect(APDUFixture.sent(next)?.remaining == 0xA5)
        #expect(APDUFixture.sent(next)?.id == 2)
        #expect(APDUFixture.log(state).filter { $0 == "apdu.note.connecting" }.count == 1)
        _ = update(
            &state,
            .apdu(
                .answered(
                    keyID: Fixture.reader.id, id: 2,
                    exchanges: [APDUExchange(command: [0, 0xA1, 0, 0], response: [0x90, 0])],
                    response: Response(status: .ok))))
        // Another application's answers are fetched with GET RESPONSE.
        let sel = APDUFixture.send("sel piv", &state)
        #expect(APDUFixture.sent(sel)?.remaining == 0xC0)
        #expect(state.apdu.log.last?.suffix?.literal == "SELECT PIV")
        _ = update(
            &state,
            .apdu(
                .answered(
                    keyID: Fixture.reader.id, id: 3,
                    exchanges: [APDUExchange(command: APDUFixture.sent(sel)!.bytes, response: [0x6A, 0x82])],
                    response: Response(status: .fileNotFound))))
        // A failed SELECT leaves nothing selected.
        #expect(state.apdu.application == nil)
        #expect(APDUFixture.log(state).last == "< SW=6A82 (file or application not found)")
        #expect(state.apdu.log.last?.kind == .failure)
    }

    @Test func malformedLineSendsNothingAndSaysWhy() {
        var state = APDUFixture.console()
        let commands = APDUFixture.send("00A4 04 0G", &state)
        #expect(commands.isEmpty)
        #expect(state.apdu.pending == nil && state.apdu.history.isEmpty)
        // The line stays to be corrected; the status line and the log say what is wrong.
        #expect(state.apdu.input.text == "00A4 04 0G")
        #expect(state.status?.kind == .error)
        #expect(state.status?.text.key == ErrorKind.notHex.textKey)
        #expect(state.apdu.log.last?.text == UIText("apdu.log.notSent", ["input": "00A4 04 0G"]))
        #expect(state.apdu.log.last?.suffix?.key == ErrorKind.notHex.textKey)
        #expect(state.apdu.log.last?.kind == .error)
        // An empty line does nothing at all.
        _ = update(&state, .keyPress(.ctrl("u")))
        let before = state.apdu.log.count
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        #expect(state.apdu.log.count == before)
    }

    @Test func oneCommandAtATime() {
        var state = APDUFixture.console()
        _ = APDUFixture.send(APDUFixture.selectOATH, &state)
        let again = APDUFixture.send("00A40400", &state)
        #expect(again.isEmpty)
        #expect(state.status?.text.key == "apdu.status.pending")
        #expect(state.apdu.input.text == "00A40400")
        #expect(state.apdu.history.count == 1)
        // An answer to another command, or for another key, changes nothing.
        _ = update(
            &state, .apdu(.answered(keyID: Fixture.reader.id, id: 7, exchanges: [], response: Response(status: .ok))))
        _ = update(
            &state, .apdu(.answered(keyID: Fixture.other.id, id: 1, exchanges: [], response: Response(status: .ok))))
        #expect(state.apdu.pending == 1)
    }

    @Test func noKeyMeansNothingIsSent() {
        var state = APDUFixture.console()
        _ = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        let commands = APDUFixture.send(APDUFixture.selectOATH, &state)
        #expect(commands.isEmpty)
        #expect(state.apdu.log.last?.text.key == "apdu.error.noKey")
        #expect(state.apdu.log.last?.kind == .error)
    }

    @Test func historyWalksWithUpAndDownAndKeepsTheDraft() {
        var state = APDUFixture.console()
        for (i, line) in ["sel oath", "00A4040007A0000005272101", "00A10000"].enumerated() {
            _ = APDUFixture.send(line, &state)
            _ = update(
                &state,
                .apdu(.answered(keyID: Fixture.reader.id, id: i + 1, exchanges: [], response: Response(status: .ok))))
        }
        // The same line twice in a row is kept once.
        _ = APDUFixture.send("00A10000", &state)
        _ = update(
            &state, .apdu(.answered(keyID: Fixture.reader.id, id: 4, exchanges: [], response: Response(status: .ok))))
        #expect(state.apdu.history == ["sel oath", "00A4040007A0000005272101", "00A10000"])
        _ = Fixture.type("00CA", into: &state)
        _ = update(&state, .keyPress(.up))
        #expect(state.apdu.input.text == "00A10000")
        _ = update(&state, .keyPress(.up))
        _ = update(&state, .keyPress(.up))
        #expect(state.apdu.input.text == "sel oath")
        _ = update(&state, .keyPress(.up))
        #expect(state.apdu.input.text == "sel oath")
        _ = update(&state, .keyPress(.down))
        #expect(state.apdu.input.text == "00A4040007A0000005272101")
        _ = update(&state, .keyPress(.down))
        _ = update(&state, .keyPress(.down))
        // Past the newest: the draft typed before Up.
        #expect(state.apdu.input.text == "00CA")
        #expect(state.apdu.historyIndex == nil)
        // Sending a recalled line sends it again.
        _ = update(&state, .keyPress(.up))
        let commands = update(&state, .keyPress(.enter))
        #expect(APDUFixture.sent(commands)?.bytes == [0x00, 0xA1, 0x00, 0x00])
    }

    @Test func aFailureDropsTheConnectionAndAPulledKeyIsNamed() {
        var state = APDUFixture.console()
        _ = APDUFixture.send("sel oath", &state)
        APDUFixture.answer(&state, id: 1, APDUFixture.selectOATHBytes)
        #expect(state.apdu.connected && state.apdu.application == "OATH")
        _ = APDUFixture.send("00A10000", &state)
        _ = update(
            &state,
            .apdu(.failed(keyID: Fixture.reader.id, id: 2, message: .literal("the key was removed"), keyGone: true)))
        #expect(!state.apdu.connected && state.apdu.application == nil && state.apdu.pending == nil)
        #expect(APDUFixture.log(state).suffix(2) == ["the key was removed", "status.keyGoneMidOperation"])
        // The next command opens a new connection, and says so.
        _ = APDUFixture.send("00A10000", &state)
        #expect(APDUFixture.log(state).suffix(2) == ["apdu.note.connecting", "> 00A10000"])
    }

    @Test func keyLeavingClosesTheConsoleConnectionAndLateAnswersAreIgnored() {
        var state = APDUFixture.console()
        _ = APDUFixture.send("sel oath", &state)
        let commands = update(&state, .keyEvent(.keyLeft(id: Fixture.reader.id)))
        #expect(commands.contains(.apdu(.close)))
        #expect(state.apdu.keyID == nil && state.apdu.pending == nil && !state.apdu.connected)
        #expect(APDUFixture.log(state).last == "apdu.note.closedLeft")
        _ = update(
            &state, .apdu(.answered(keyID: Fixture.reader.id, id: 1, exchanges: [], response: Response(status: .ok))))
        #expect(!state.apdu.connected && state.apdu.application == nil)
        #expect(APDUFixture.log(state).last == "apdu.note.closedLeft")
    }

    @Test func anotherKeySelectedClosesTheConnection() {
        var state = APDUFixture.console()
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        _ = APDUFixture.send("sel oath", &state)
        _ = update(
            &state, .apdu(.answered(keyID: Fixture.reader.id, id: 1, exchanges: [], response: Response(status: .ok))))
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("K")))
        _ = update(&state, .keyPress(.down))
        let commands = update(&state, .keyPress(.enter))
        #expect(state.selectedKeyID == Fixture.other.id)
        #expect(commands.contains(.apdu(.close)))
        #expect(APDUFixture.log(state).last == "apdu.note.closedChanged")
        // The next command goes to the other key, on a new connection.
        _ = update(&state, .keyPress(.enter))
        let sent = APDUFixture.send("00A10000", &state)
        #expect(sent.first == .apdu(.send(Fixture.other, bytes: [0x00, 0xA1, 0x00, 0x00], remaining: 0xC0, id: 2)))
    }

    @Test func otherTabsWorkOnTheKeyIsNotedBeforeTheNextCommand() {
        var state = APDUFixture.console()
        _ = APDUFixture.send("sel piv", &state)
        _ = update(
            &state, .apdu(.answered(keyID: Fixture.reader.id, id: 1, exchanges: [], response: Response(status: .ok))))
        // The OATH codes are due again at the next period: the OATH tab reads them on the same key.
        let refresh = update(&state, .tick(now: 1021))
        #expect(refresh.contains { if case .oath(.refresh) = $0 { return true } else { return false } })
        #expect(state.apdu.otherWork == ["OATH"])
        _ = APDUFixture.send("00CB3FFF", &state)
        let log = APDUFixture.log(state)
        #expect(log.suffix(2) == ["apdu.note.otherWork", "> 00CB3FFF"])
        #expect(state.apdu.log[state.apdu.log.count - 2].text.arguments["what"] == "OATH")
        #expect(state.apdu.otherWork.isEmpty)
    }

    @Test func logScrollsAndClears() {
        var state = APDUFixture.console()
        for i in 1...30 {
            _ = APDUFixture.send("00A10000", &state)
            _ = update(
                &state,
                .apdu(.answered(keyID: Fixture.reader.id, id: i, exchanges: [], response: Response(status: .ok))))
        }
        #expect(state.apdu.log.count == 61)
        _ = update(&state, .keyPress(.pageUp))
        #expect(state.apdu.scroll == APDUTabState.page)
        _ = update(&state, .keyPress(.pageDown))
        #expect(state.apdu.scroll == 0)
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("k")))
        _ = update(&state, .keyPress(.char("k")))
        #expect(state.apdu.scroll == 2)
        _ = update(&state, .keyPress(.char("g")))
        #expect(state.apdu.scroll == 60)
        _ = update(&state, .keyPress(.char("G")))
        #expect(state.apdu.scroll == 0)
        _ = update(&state, .keyPress(.pageUp))
        // A new line follows the output again.
        _ = update(&state, .keyPress(.enter))
        _ = APDUFixture.send("00A10000", &state)
        #expect(state.apdu.scroll == 0)
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("x")))
        #expect(state.apdu.log.isEmpty)
        // The history outlives clearing the log.
        #expect(state.apdu.history == ["00A10000"])
    }

    @Test func savingTheTranscriptAsksForAFileAndForOverwriting() throws {
        var state = APDUFixture.console()
        _ = update(&state, .keyPress(.escape))
        // Nothing to save yet.
        _ = update(&state, .keyPress(.char("s")))
        #expect(state.apdu.dialog?.form.problem?.key == "apdu.save.nothing.transcript")
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        _ = update(&state, .keyPress(.escape))
        #expect(state.apdu.dialog == nil)

        _ = update(&state, .keyPress(.enter))
        _ = APDUFixture.send(APDUFixture.selectOATH, &state)
        _ = update(
            &state, .apdu(.answered(keyID: Fixture.reader.id, id: 1, exchanges: [], response: Response(status: .ok))))
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.char("s")))
        #expect(state.apdu.dialog?.kind == .save(.transcript))
        #expect(state.apdu.dialog?.form[SaveField.path] == "ykterm-apdu-transcript.txt")
        #expect(state.textFocused)
        // An empty name is refused as typed.
        _ = update(&state, .keyPress(.ctrl("u")))
        #expect(state.apdu.dialog?.form.problem?.key == "apdu.save.pathEmpty")
        #expect(update(&state, .keyPress(.enter)).isEmpty)
        _ = Fixture.type("/tmp/t.txt", into: &state)
        #expect(state.apdu.dialog?.form.problem == nil)
        let save = update(&state, .keyPress(.enter))
        #expect(save == [.apdu(.save(path: "/tmp/t.txt", .transcript(state.apdu.log), overwrite: false))])
        #expect(state.apdu.dialog == nil)
        // The file exists: a confirmation, and yes writes over it.
        _ = update(
            &state,
            .apdu(.saveFailed(.transcript, path: "/tmp/t.txt", message: UIText("apdu.save.failed"), exists: true)))
        #expect(state.apdu.dialog?.kind == .overwrite(.transcript, path: "/tmp/t.txt"))
        #expect(state.apdu.dialog?.form.isConfirmation == true)
        state.now += 1
        let overwrite = update(&state, .keyPress(.char("y")))
        #expect(overwrite == [.apdu(.save(path: "/tmp/t.txt", .transcript(state.apdu.log), overwrite: true))])
        _ = update(&state, .apdu(.saved(.transcript, path: "/tmp/t.txt")))
        #expect(state.status?.kind == .success)
        #expect(state.status?.text == UIText("apdu.save.saved.transcript", ["path": "/tmp/t.txt"]))
        // Other failures go to the status line.
        _ = update(
            &state,
            .apdu(
                .saveFailed(
                    .history, path: "/nope/h",
                    message: UIText("apdu.save.failed", ["path": "/nope/h", "why": "No such file or directory"]),
                    exists: false)))
        #expect(state.status?.kind == .error && state.status?.text.key == "apdu.save.failed")
        #expect(state.apdu.dialog == nil)
        // The history goes to a file of its own.
        _ = update(&state, .keyPress(.char("h")))
        #expect(state.apdu.dialog?.kind == .save(.history))
        let history = update(&state, .keyPress(.enter))
        #expect(
            history == [
                .apdu(.save(path: "ykterm-apdu-history.txt", .history([APDUFixture.selectOATH]), overwrite: false))
            ])
    }
}

/// The virtual key in process; `pull()` makes the open connections fail as a key pulled out would.
final class PullableBackend: KeyBackend, @unchecked Sendable {
    // @unchecked: `pulled` is a LockedValue and `key` is itself Sendable.
    let key = VirtualKey(state: VirtualKeyState.yubiKey5NFC().withDemoAccounts())
    let pulled = LockedValue(false)
    let connections = LockedValue(0)

    final class Connection: SmartCardConnection, @unchecked Sendable {
        // @unchecked: the inner connection is Sendable; `pulled` is a LockedValue.
        let inner: VirtualKeyConnection
        let pulled: LockedValue<Bool>
        init(_ inner: VirtualKeyConnection, pulled: LockedValue<Bool>) {
            self.inner = inner
            self.pulled = pulled
        }
        var atr: [UInt8] { inner.atr }
        var name: String { inner.name }
        func transmit(_ command: [UInt8]) async throws -> [UInt8] {
            if pulled.withLock({ $0 }) { throw SmartCardError.cardRemoved }
            return try await inner.transmit(command)
        }
        func close() async { await inner.close() }
    }

    func events() -> AsyncStream<KeyEvent> { AsyncStream { $0.yield(.keyArrived(InProcessBackend.descriptor)) } }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        guard !pulled.withLock({ $0 }) else { throw SmartCardError.noCard(descriptor.name) }
        connections.withLock { $0 += 1 }
        return Connection(VirtualKeyConnection(key: key), pulled: pulled)
    }
}

@Suite("Runner: APDU console against the virtual key")
struct APDUWorkTests {
    static let d = InProcessBackend.descriptor

    func answer(_ harness: Harness, _ bytes: [UInt8], remaining: UInt8 = 0xC0, id: Int) async throws -> APDUTabMsg {
        try await harness.run(.apdu(.send(Self.d, bytes: bytes, remaining: remaining, id: id))) { msg -> APDUTabMsg? in
            switch msg {
            case .apdu(let m):
                switch m {
                case .answered(_, let i, _, _) where i == id: return m
                case .failed(_, let i, _, _) where i == id: return m
                default: return nil
                }
            default: return nil
            }
        }
    }

    @Test func selectOATHAnswersWithItsTLVAndTheSelectionHoldsForTheNextCommand() async throws {
        let backend = PullableBackend()
        let harness = Harness(backend, directory: temporaryDirectory())
        let first = try await answer(harness, APDUFixture.selectOATHBytes, remaining: 0xA5, id: 1)
        guard case .answered(_, _, let exchanges, let response) = first else { Issue.record("\(first)"); return }
        #expect(response.status == .ok)
        #expect(exchanges.count == 1 && exchanges[0].command == APDUFixture.selectOATHBytes)
        let tlvs = try TLV.parseAll(response.data, mode: .simple)
        #expect(tlvs.contains { $0.tag == 0x79 } && tlvs.contains { $0.tag == 0x71 })
        // LIST on the same connection answers from OATH: the SELECT held.
        let list = try await answer(harness, [0x00, 0xA1, 0x00, 0x00], remaining: 0xA5, id: 2)
        guard case .answered(_, _, _, let listed) = list else { Issue.record("\(list)"); return }
        #expect(listed.status == .ok)
        #expect(try TLV.parseAll(listed.data, mode: .simple).allSatisfy { $0.tag == 0x72 })
        #expect(backend.connections.withLock { $0 } == 1)
    }

    @Test func aLongAnswerComesInPartsAndEveryExchangeIsReported() async throws {
        let harness = Harness(PullableBackend(), directory: temporaryDirectory())
        // Le = 4: the key answers 4 bytes and 61xx; SEND REMAINING fetches the rest.
        let reply = try await answer(harness, APDUFixture.selectOATHBytes + [0x04], remaining: 0xA5, id: 1)
        guard case .answered(_, _, let exchanges, let response) = reply else { Issue.record("\(reply)"); return }
        #expect(exchanges.count >= 2)
        #expect(try Response(raw: exchanges[0].response).status.isMoreDataAvailable)
        #expect(exchanges[1].command == [0x00, 0xA5, 0x00, 0x00, 0x00])
        #expect(response.status == .ok)
        #expect(try TLV.parseAll(response.data, mode: .simple).contains { $0.tag == 0x71 })
        // GET RESPONSE for the Management application.
        let mgmt = try await answer(harness, [0x00, 0xA4, 0x04, 0x00, 0x08] + AID.management + [0x02], id: 2)
        guard case .answered(_, _, let mx, let mr) = mgmt else { Issue.record("\(mgmt)"); return }
        #expect(mx.count >= 2 && mx[1].command.prefix(2) == [0x00, 0xC0])
        #expect(mr.status == .ok && apduText(mr.data) != nil)
    }

    @Test func aKeyPulledOutMidCommandFailsCleanlyAndTheNextCommandReconnects() async throws {
        let backend = PullableBackend()
        let harness = Harness(backend, directory: temporaryDirectory())
        _ = try await answer(harness, APDUFixture.selectOATHBytes, id: 1)
        backend.pulled.withLock { $0 = true }
        let failed = try await answer(harness, [0x00, 0xA1, 0x00, 0x00], id: 2)
        guard case .failed(_, _, let message, let gone) = failed else { Issue.record("\(failed)"); return }
        #expect(gone)
        #expect(ErrorKind.allCases.contains { $0.keyGone && $0.textKey == message.key }, "\(message)")
        backend.pulled.withLock { $0 = false }
        let again = try await answer(harness, APDUFixture.selectOATHBytes, id: 3)
        guard case .answered(_, _, _, let response) = again else { Issue.record("\(again)"); return }
        #expect(response.status == .ok)
        #expect(backend.connections.withLock { $0 } == 2)
    }

    @Test func closeDropsTheConnection() async throws {
        let backend = PullableBackend()
        let harness = Harness(backend, directory: temporaryDirectory())
        _ = try await answer(harness, APDUFixture.selectOATHBytes, id: 1)
        harness.runner.perform(.apdu(.close))
        _ = try await answer(harness, [0x00, 0xA1, 0x00, 0x00], id: 2)
        #expect(backend.connections.withLock { $0 } == 2)
    }

    @Test func transcriptAndHistoryFilesArePrivateAndNeverOverwrittenUnasked() throws {
        let dir = temporaryDirectory()
        let path = dir + "/transcript.txt"
        let tables = StringTables.load(language: "en")
        let lines = [
            APDULogLine(.command, .literal("> 00A4040007A0000005272101"), suffix: .literal("SELECT OATH")),
            APDULogLine(.ok, .literal("< SW=9000 (success)"), suffix: UIText("apdu.log.bytes", ["count": "15"])),
            APDULogLine(.note, UIText("apdu.log.tlvSimple")),
        ]
        let saved = APDUTabWork.save(path: path, .transcript(lines), overwrite: false, tables: tables)
        guard case .saved(.transcript, path) = saved else { Issue.record("\(saved)"); return }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(
            text == "> 00A4040007A0000005272101  SELECT OATH\n< SW=9000 (success)  15 bytes\n  TLV (one-byte tags):\n")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Existing: refused, marked so the model asks; with overwrite it is replaced.
        let again = APDUTabWork.save(path: path, .history(["sel oath"]), overwrite: false, tables: tables)
        guard case .saveFailed(.history, _, let message, true) = again else { Issue.record("\(again)"); return }
        #expect(message.key == "apdu.save.failed")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
        let over = APDUTabWork.save(path: path, .history(["sel oath", "00A10000"]), overwrite: true, tables: tables)
        guard case .saved = over else { Issue.record("\(over)"); return }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "sel oath\n00A10000\n")
        // A directory that is not there: a failure that names why.
        let missing = APDUTabWork.save(
            path: dir + "/no/such/dir/t.txt", .history(["x"]), overwrite: false, tables: tables)
        guard case .saveFailed(_, _, let why, false) = missing else { Issue.record("\(missing)"); return }
        #expect(why.arguments["why"]?.isEmpty == false)
        #expect(
            PathString.expandingHome("~/x.txt").hasSuffix("/x.txt")
                && !PathString.expandingHome("~/x.txt").hasPrefix("~"))
        try? FileManager.default.removeItem(atPath: dir)
    }
}

@Suite("Model: device view and key switcher")
struct DeviceViewModelTests {
    @Test func keysBindingOpensTheSwitcherOverTheDeviceViewAndClosesIt() throws {
        var state = AppState(now: 1000, bindings: try KeyBindings(overrides: [.keys: "S"]))
        _ = update(&state, .keyEvent(.keyArrived(Fixture.reader)))
        _ = update(&state, .keyEvent(.keyArrived(Fixture.other)))
        _ = update(&state, .keyPress(.char("i")))
        #expect(state.showDeviceInfo)
        _ = update(&state, .keyPress(.char("S")))
        #expect(state.showKeySwitcher && state.showDeviceInfo)
        #expect(state.keySwitcherIndex == 0)
        // K is not the keys binding here: it neither closes nor moves.
        _ = update(&state, .keyPress(.char("K")))
        #expect(state.showKeySwitcher)
        _ = update(&state, .keyPress(.char("S")))
        #expect(!state.showKeySwitcher && state.showDeviceInfo)
        _ = update(&state, .keyPress(.char("S")))
        _ = update(&state, .keyPress(.char("j")))
        let commands = update(&state, .keyPress(.enter))
        #expect(state.selectedKeyID == Fixture.other.id)
        #expect(commands.contains(.oath(.open(Fixture.other, time: 1000))))
        #expect(state.showDeviceInfo && !state.showKeySwitcher)
        _ = update(&state, .keyPress(.char("S")))
        _ = update(&state, .keyPress(.char("q")))
        #expect(!state.showKeySwitcher && !state.quitting)
        _ = update(&state, .keyPress(.escape))
        #expect(!state.showDeviceInfo)
    }
}

@Suite("Model: APDU console labels and OATH names")
struct APDULabelTests {
    @Test func aSelectTypedInHexIsLabelledLikeTheShortcut() {
        guard case .command(_, let label, _) = parseAPDUInput("00A4040007A0000005272101") else {
            Issue.record("not a command")
            return
        }
        #expect(label == "SELECT OATH")
        guard case .command(_, let same, _) = parseAPDUInput("select oath") else { return }
        #expect(same == label)
        // An AID no one knows, or another instruction, gets no label.
        guard case .command(_, let unknown, _) = parseAPDUInput("00A4040005F000000001"),
            case .command(_, let other, _) = parseAPDUInput("00A10000")
        else { return }
        #expect(unknown == nil && other == nil)
    }

    @Test func oathListAnswersShowTheAccountNamesAsText() throws {
        // LIST: 72 (1 + name): 0x21 = TOTP, SHA-1.
        let name = Array("GitHub:alice@example.com".utf8)
        let data: [UInt8] = [0x72, UInt8(name.count + 1), 0x21] + name + [0x71, 3] + Array("bob".utf8)
        let tlv = try #require(apduTLVLines(data, tagNames: oathTagNames))
        let english = StringTables.load(language: "en")
        #expect(
            tlv.lines.map { $0.name.map(english.text) } == ["name list \"GitHub:alice@example.com\"", "name \"bob\""])
        #expect(
            tlv.lines.map { $0.name.map(StringTables.load(language: "de").text) } == [
                "Namensliste „GitHub:alice@example.com“", "Name „bob“",
            ])
        // Not valid UTF-8: the tag's name alone, the hex stays.
        let bad = try #require(apduTLVLines([0x71, 2, 0xFF, 0xFE], tagNames: oathTagNames))
        #expect(bad.lines.map { $0.name.map(english.text) } == ["name"])
    }
}
