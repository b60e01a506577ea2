// Over 500 lines on purpose: ScriptedConnection (used by most KeyKit test files) lives with the protocol layer's
// suites (chaining, SELECT, Management, probing), each suite one topic.
import KeyKit
import Synchronization
import Testing

private func bytes(_ hex: String) -> [UInt8] {
    try! Hex.decode(hex)
}

/// A YubiKey 5 NFC's ATR over USB (T0 = 0xFD).
private let usbATR = bytes("3B FD 13 00 00 81 31 FE 15 80 73 C0 21 C0 57 59 75 62 69 4B 65 79 40")
/// The same key on an NFC reader (T0 = 0x8D).
private let nfcATR = bytes("3B 8D 80 01 80 73 C0 21 C0 57 59 75 62 69 4B 65 79 F9")

/// A card that expects exactly the scripted commands, in order, and gives the canned answers.
/// Every command received is recorded, expected or not.
final class ScriptedConnection: SmartCardConnection {
    enum ScriptError: Error, Equatable {
        case unexpected(sent: String, expected: String)
        case exhausted(sent: String)
    }

    private struct State {
        var script: [(command: [UInt8], answer: [UInt8])]
        var sent: [[UInt8]] = []
        var closed = false
    }

    let atr: [UInt8]
    let name: String
    /// When the script is used up: answer every further command with this, or fail with this error.
    private let afterScript: Result<[UInt8], SmartCardError>?
    private let state: Mutex<State>

    init(
        atr: [UInt8] = usbATR, name: String = "Scripted Reader", _ script: [(String, String)],
        afterScript: Result<[UInt8], SmartCardError>? = nil
    ) {
        self.atr = atr
        self.name = name
        self.afterScript = afterScript
        state = Mutex(State(script: script.map { (bytes($0.0), bytes($0.1)) }))
    }

    var sent: [[UInt8]] { state.withLock { $0.sent } }
    var remaining: Int { state.withLock { $0.script.count } }

    func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        let next: Result<[UInt8], any Error> = state.withLock { s in
            s.sent.append(command)
            if s.closed { return .failure(SmartCardError.closed) }
            guard !s.script.isEmpty else {
                guard let afterScript else { return .failure(ScriptError.exhausted(sent: command.hex)) }
                return afterScript.mapError { $0 }
            }
            let step = s.script.removeFirst()
            guard step.command == command else {
                return .failure(ScriptError.unexpected(sent: command.hex, expected: step.command.hex))
            }
            return .success(step.answer)
        }
        return try next.get()
    }

    func close() async {
        state.withLock { $0.closed = true }
    }
}

private extension SmartCardError {
    var isMalformedResponse: Bool {
        if case .malformedResponse = self { return true }
        return false
    }
}

@Suite struct ResponseChainingTests {
    @Test func getResponseFetchesTheRestAnnouncedBy61xx() async throws {
        let card = ScriptedConnection([
            ("00 CA 00 00 00", "01 02 03 61 05"),
            ("00 C0 00 00 05", "04 05 06 07 08 61 02"),
            ("00 C0 00 00 02", "09 0A 90 00"),
        ])
        let proto = SmartCardProtocol(connection: card)
        let r = try await proto.send(APDU(ins: 0xCA, le: 256))
        #expect(r.data == Array(1...10))
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
        #expect(card.sent.count == 3)
    }

    @Test func status6100AsksFor256Bytes() async throws {
        let first = [UInt8](repeating: 0xAA, count: 256)
        let second = [UInt8](repeating: 0xBB, count: 256)
        let card = ScriptedConnection([
            ("00 CB 3F FF 00", first.hex + "61 00"),
            ("00 C0 00 00 00", second.hex + "61 03"),
            ("00 C0 00 00 03", "01 02 03 90 00"),
        ])
        let r = try await SmartCardProtocol(connection: card).send(APDU(ins: 0xCB, p1: 0x3F, p2: 0xFF, le: 256))
        #expect(r.data == first + second + [1, 2, 3])
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
    }

    @Test func customRemainingInstructionCarriesLe() async throws {
        // OATH: SEND REMAINING is 00 A5 00 00 00, with Le 00 (as yubikey-manager sends it): a key may read a
        // command without Le as "no data wanted".
        let card = ScriptedConnection([
            ("00 A1 00 00 00", "71 03 61 62 63 61 00"),
            ("00 A5 00 00 00", "71 03 64 65 66 61 10"),
            ("00 A5 00 00 00", "71 01 67 90 00"),
        ])
        let proto = SmartCardProtocol(connection: card, remainingInstruction: 0xA5)
        #expect(proto.remainingInstruction == 0xA5)
        let r = try await proto.send(APDU(ins: 0xA1, le: 256))
        #expect(r.data == bytes("71 03 61 62 63 71 03 64 65 66 71 01 67"))
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
    }

    @Test func finalErrorStatusAfterChainingIsReturnedNotThrown() async throws {
        let card = ScriptedConnection([
            ("00 CA 00 00 00", "01 61 01"),
            ("00 C0 00 00 01", "69 85"),
        ])
        let r = try await SmartCardProtocol(connection: card).send(APDU(ins: 0xCA, le: 256))
        #expect(r.data == [0x01])
        #expect(r.status == .conditionsNotSatisfied)
        await #expect(throws: SmartCardError.status(.conditionsNotSatisfied)) {
            let again = ScriptedConnection([("00 CA 00 00 00", "69 85")])
            _ = try await SmartCardProtocol(connection: again).sendChecked(APDU(ins: 0xCA, le: 256))
        }
    }

    @Test func wrongLeIsResentWithTheExactLength() async throws {
        let card = ScriptedConnection([
            ("00 B0 00 00 00", "6C 10"),
            ("00 B0 00 00 10", [UInt8](repeating: 0x42, count: 16).hex + "90 00"),
        ])
        let r = try await SmartCardProtocol(connection: card).send(APDU(ins: 0xB0, le: 256))
        #expect(r.data == [UInt8](repeating: 0x42, count: 16))
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
    }

    @Test func wrongLeKeepsTheCommandData() async throws {
        let card = ScriptedConnection([
            ("80 CB 00 00 02 5C 00", "6C 03"),
            ("80 CB 00 00 02 5C 00 03", "01 02 61 01"),
            ("00 C0 00 00 01", "03 90 00"),
        ])
        let r = try await SmartCardProtocol(connection: card).send(APDU(cla: 0x80, ins: 0xCB, data: [0x5C, 0x00]))
        #expect(r.data == [1, 2, 3])
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
    }

    @Test func wrongLeZeroMeans256() async throws {
        let card = ScriptedConnection([
            ("00 B0 00 00 05", "6C 00"),
            ("00 B0 00 00 00", "90 00"),
        ])
        let r = try await SmartCardProtocol(connection: card).send(APDU(ins: 0xB0, le: 5))
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
    }

    @Test func endless61xxEndsWithAnError() async throws {
        let card = ScriptedConnection([("00 CA 00 00 00", "AA 61 01")], afterScript: .success(bytes("BB 61 01")))
        let error = await #expect(throws: SmartCardError.self) {
            try await SmartCardProtocol(connection: card).send(APDU(ins: 0xCA, le: 256))
        }
        #expect(error?.isMalformedResponse == true)
        let sent = card.sent
        #expect(sent.count > 1)
        #expect(sent.count <= SmartCardProtocol.maxResponseParts + 1)
        #expect(sent.dropFirst().allSatisfy { $0 == bytes("00 C0 00 00 01") })
    }

    @Test(arguments: ["", "90"])
    func answersShorterThanAStatusWordAreMalformed(answer: String) async throws {
        let card = ScriptedConnection([("00 A4 04 00 07 A0 00 00 05 27 21 01", answer)])
        let error = await #expect(throws: SmartCardError.self) {
            try await SmartCardProtocol(connection: card).send(.select(aid: AID.oath))
        }
        #expect(error?.isMalformedResponse == true)
    }

    @Test func observerSeesEveryRawExchangeInOrder() async throws {
        let card = ScriptedConnection([
            ("00 CA 00 00 00", "01 61 01"),
            ("00 C0 00 00 01", "02 90 00"),
        ])
        let seen = Mutex<[APDUExchange]>([])
        let proto = SmartCardProtocol(connection: card, observer: { e in seen.withLock { $0.append(e) } })
        _ = try await proto.send(APDU(ins: 0xCA, le: 256))
        #expect(
            seen.withLock { $0 } == [
                APDUExchange(command: bytes("00 CA 00 00 00"), response: bytes("01 61 01")),
                APDUExchange(command: bytes("00 C0 00 00 01"), response: bytes("02 90 00")),
            ])
    }

    @Test func closedConnectionErrorsPropagate() async throws {
        let card = ScriptedConnection([])
        await card.close()
        await #expect(throws: SmartCardError.closed) {
            try await SmartCardProtocol(connection: card).send(APDU(ins: 0xCA, le: 256))
        }
    }
}

@Suite struct CommandChainingTests {
    static let data = (0..<600).map { UInt8(truncatingIfNeeded: $0 * 3 + 1) }

    @Test func longDataGoesAsAChainOfShortAPDUs() async throws {
        let d = Self.data
        let card = ScriptedConnection([
            ("10 DB 3F FF FF" + d[0..<255].hex, "90 00"),
            ("10 DB 3F FF FF" + d[255..<510].hex, "90 00"),
            ("00 DB 3F FF 5A" + d[510...].hex + "00", "AB CD 90 00"),
        ])
        let r = try await SmartCardProtocol(connection: card)
            .send(APDU(ins: 0xDB, p1: 0x3F, p2: 0xFF, data: d, le: 256))
        #expect(r.data == [0xAB, 0xCD])
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
        #expect(card.sent.allSatisfy { $0.count <= 5 + 255 + 1 })
    }

    @Test func aFailingChainPartStopsTheChain() async throws {
        let d = Self.data
        let card = ScriptedConnection([("10 DB 3F FF FF" + d[0..<255].hex, "6A 80")])
        let r = try await SmartCardProtocol(connection: card).send(APDU(ins: 0xDB, p1: 0x3F, p2: 0xFF, data: d))
        #expect(r.status == .incorrectParameters)
        #expect(card.sent.count == 1)
    }

    @Test func lastPartOfAChainIsChainedForResponsesToo() async throws {
        let d = Array(Self.data[0..<300])
        let card = ScriptedConnection([
            ("10 DB 00 00 FF" + d[0..<255].hex, "90 00"),
            ("00 DB 00 00 2D" + d[255...].hex, "01 61 01"),
            ("00 C0 00 00 01", "02 90 00"),
        ])
        let r = try await SmartCardProtocol(connection: card).send(APDU(ins: 0xDB, data: d))
        #expect(r.data == [1, 2])
        #expect(card.remaining == 0)
    }

    @Test func extendedModeSendsOneAPDU() async throws {
        let d = Self.data
        let card = ScriptedConnection([("00 DB 3F FF 00 02 58" + d.hex, "90 00")])
        let proto = SmartCardProtocol(connection: card, useExtendedAPDUs: true)
        let r = try await proto.send(APDU(ins: 0xDB, p1: 0x3F, p2: 0xFF, data: d))
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
    }

    @Test func largeLeWithShortDataIsSentExtended() async throws {
        let card = ScriptedConnection([("00 CA 00 00 00 03 E8", "01 90 00")])
        let r = try await SmartCardProtocol(connection: card).send(APDU(ins: 0xCA, le: 1000))
        #expect(r.data == [0x01])
        #expect(card.remaining == 0)
    }
}

@Suite struct SendRawAndSelectTests {
    @Test func sendRawSendsTheBytesUnchanged() async throws {
        let card = ScriptedConnection([
            ("80 CA 9F 7F 00", "9F 7F 01 02 90 00"),
            ("00 A4 04 00 08 A0 00 00 05 27 47 11 17 00", "35 2E 37 2E 32 90 00"),
            ("00 CB 3F FF 00 00 05 5C 03 5F C1 02 00 00", "53 00 90 00"),
        ])
        let proto = SmartCardProtocol(connection: card)
        let a = try await proto.sendRaw(bytes("80 CA 9F 7F 00"))
        #expect(a.data == bytes("9F 7F 01 02"))
        let b = try await proto.sendRaw(bytes("00 A4 04 00 08 A0 00 00 05 27 47 11 17 00"))
        #expect(b.data == Array("5.7.2".utf8))
        let c = try await proto.sendRaw(bytes("00 CB 3F FF 00 00 05 5C 03 5F C1 02 00 00"))
        #expect(c.data == [0x53, 0x00])
        #expect(card.remaining == 0)
    }

    @Test func sendRawFollows61xxAnd6Cxx() async throws {
        let card = ScriptedConnection([
            ("00 B0 00 00 00", "6C 04"),
            ("00 B0 00 00 04", "01 02 03 04 61 02"),
            ("00 C0 00 00 02", "05 06 90 00"),
        ])
        let r = try await SmartCardProtocol(connection: card).sendRaw(bytes("00 B0 00 00 00"))
        #expect(r.data == [1, 2, 3, 4, 5, 6])
        #expect(card.remaining == 0)
    }

    @Test func sendRawResendsAnExtendedCommandExtended() async throws {
        let card = ScriptedConnection([
            ("00 B0 00 00 00 01 00", "6C 10"),
            ("00 B0 00 00 00 00 10", "90 00"),
        ])
        let r = try await SmartCardProtocol(connection: card).sendRaw(bytes("00 B0 00 00 00 01 00"))
        #expect(r.status == .ok)
        #expect(card.remaining == 0)
    }

    @Test func sendRawRejectsMalformedBytesWithoutSending() async throws {
        let card = ScriptedConnection([])
        let error = await #expect(throws: SmartCardError.self) {
            try await SmartCardProtocol(connection: card).sendRaw(bytes("00 A4 04 00 05 01"))
        }
        guard case .invalidAPDU = error else {
            Issue.record("expected invalidAPDU, got \(String(describing: error))")
            return
        }
        #expect(card.sent.isEmpty)
    }

    @Test func selectReturnsTheAnswer() async throws {
        let card = ScriptedConnection([
            ("00 A4 04 00 07 A0 00 00 05 27 21 01 00", "79 03 05 07 02 61 02"),
            ("00 C0 00 00 02", "71 00 90 00"),
        ])
        let answer = try await SmartCardProtocol(connection: card).select(AID.oath, name: "OATH")
        #expect(answer == bytes("79 03 05 07 02 71 00"))
    }

    @Test(arguments: ["6A 82", "6A 81", "6D 00", "6E 00", "69 99", "6A 86", "69 85"])
    func selectNotFoundMeansApplicationNotAvailable(status: String) async throws {
        let card = ScriptedConnection([("00 A4 04 00 07 A0 00 00 05 27 21 01 00", status)])
        await #expect(throws: SmartCardError.applicationNotAvailable("OATH")) {
            try await SmartCardProtocol(connection: card).select(AID.oath, name: "OATH")
        }
    }

    @Test func selectOtherFailuresKeepTheStatus() async throws {
        let card = ScriptedConnection([("00 A4 04 00 05 A0 00 00 03 08 00", "69 82")])
        await #expect(throws: SmartCardError.status(.securityConditionNotSatisfied)) {
            try await SmartCardProtocol(connection: card).select(AID.piv, name: "PIV")
        }
    }
}

/// READ CONFIG pages as a key sends them: a length byte, then simple TLVs.
private func page(_ tlvs: [TLV]) -> String {
    let body = tlvs.flatMap(\.encoded)
    return ([UInt8(body.count)] + body + [0x90, 0x00]).hex
}

/// SELECT carries Le 00: it answers data.
private let selectManagement = "00 A4 04 00 08 A0 00 00 05 27 47 11 17 00"

@Suite struct ManagementTests {
    @Test func twoPageDeviceInfo() async throws {
        let page0 = page([
            TLV(0x01, [0x02, 0x3B]),
            TLV(0x02, [0x01, 0xAD, 0x2B, 0x40]),
            TLV(0x03, [0x02, 0x1B]),
            TLV(0x04, [0x83]),
            TLV(0x05, [0x05, 0x07, 0x01]),
            TLV(0x10, [0x01]),
        ])
        let page1 = page([
            TLV(0x0D, [0x02, 0x3B]),
            TLV(0x0E, [0x00, 0x20]),
            TLV(0x06, [0x01, 0x2C]),
            TLV(0x07, [0x0F]),
            TLV(0x08, [0x40]),
            TLV(0x0A, [0x01]),
            TLV(0x13, Array("5A-123".utf8)),
        ])
        let card = ScriptedConnection([
            (selectManagement, "35 2E 37 2E 32 90 00"),
            ("00 1D 00 00 00", page0),
            ("00 1D 01 00 00", page1),
        ])
        let session = try await ManagementSession.make(connection: card)
        #expect(session.version == Version(5, 7, 2))
        let info = try await session.deviceInfo()
        #expect(card.remaining == 0)

        #expect(info.serial == 0x01AD_2B40)
        #expect(info.version == Version(5, 7, 1))  // tag 0x05 wins over SELECT
        #expect(info.formFactor == .usbCKeychain)
        #expect(info.isFIPS)
        #expect(!info.isSky)
        #expect(info.supportedUSB == [.otp, .u2f, .openpgp, .piv, .oath, .fido2])
        #expect(info.enabledUSB == [.otp, .u2f, .openpgp, .piv, .fido2])
        #expect(info.supportedNFC == [.otp, .u2f, .openpgp, .piv, .oath, .fido2])
        #expect(info.enabledNFC == [.oath])
        #expect(info.autoEjectTimeout == 300)
        #expect(info.challengeResponseTimeout == 15)
        #expect(info.deviceFlags == 0x40)
        #expect(info.isConfigLocked)
        #expect(info.partNumber == "5A-123")
        #expect(info.fromManagement)
        #expect(info.enabled(overNFC: true) == [.oath])
        #expect(info.enabled(overNFC: false) == info.enabledUSB)
        #expect(info.productName == "YubiKey 5C NFC FIPS")
    }

    @Test func lengthByteMismatchIsAnError() async throws {
        let body = TLV(0x01, [0x02, 0x3B]).encoded + TLV(0x05, [5, 7, 2]).encoded  // 9 bytes
        let card = ScriptedConnection([
            (selectManagement, "35 2E 37 2E 32 90 00"),
            ("00 1D 00 00 00", ([0x0A] + body + [0x90, 0x00]).hex),
        ])
        let session = try await ManagementSession.make(connection: card)
        let error = await #expect(throws: SmartCardError.self) { try await session.deviceInfo() }
        #expect(error?.isMalformedResponse == true)
    }

    @Test func emptyReadConfigAnswerIsAnError() async throws {
        let card = ScriptedConnection([
            (selectManagement, "35 2E 37 2E 32 90 00"),
            ("00 1D 00 00 00", "90 00"),
        ])
        let session = try await ManagementSession.make(connection: card)
        let error = await #expect(throws: SmartCardError.self) { try await session.deviceInfo() }
        #expect(error?.isMalformedResponse == true)
    }

    @Test func malformedTLVsInReadConfigAreAnError() async throws {
        let card = ScriptedConnection([
            (selectManagement, "35 2E 37 2E 32 90 00"),
            ("00 1D 00 00 00", "04 01 05 02 3B 90 00"),
        ])
        let session = try await ManagementSession.make(connection: card)
        let error = await #expect(throws: SmartCardError.self) { try await session.deviceInfo() }
        #expect(error?.isMalformedResponse == true)
    }

    @Test func missingSupportedUSBIsAnError() async throws {
        let card = ScriptedConnection([
            (selectManagement, "35 2E 37 2E 32 90 00"),
            ("00 1D 00 00 00", page([TLV(0x02, [0, 0, 0, 1]), TLV(0x05, [5, 7, 2])])),
        ])
        let session = try await ManagementSession.make(connection: card)
        let error = await #expect(throws: SmartCardError.self) { try await session.deviceInfo() }
        #expect(error?.isMalformedResponse == true)

        let direct = #expect(throws: SmartCardError.self) {
            try DeviceInfo(tlvs: [0x02: [0, 0, 0, 1]], defaultVersion: Version(5, 7, 2))
        }
        #expect(direct?.isMalformedResponse == true)
    }

    @Test func endlessMoreDataFlagEndsWithAnError() async throws {
        let endless = page([TLV(0x01, [0x00, 0x3F]), TLV(0x10, [0x01])])
        let pages = (0..<16).map { ("00 1D " + [UInt8($0)].hex + " 00 00", endless) }
        let card = ScriptedConnection([(selectManagement, "35 2E 37 2E 32 90 00")] + pages)
        let session = try await ManagementSession.make(connection: card)
        let error = await #expect(throws: SmartCardError.self) { try await session.deviceInfo() }
        #expect(error?.isMalformedResponse == true)
        #expect(card.sent.count <= 17)
    }

    @Test func versionFieldMustBeThreeBytes() {
        let error = #expect(throws: SmartCardError.self) {
            try DeviceInfo(tlvs: [0x01: [0x00, 0x3F], 0x05: [5, 7]], defaultVersion: Version(5, 7, 2))
        }
        #expect(error?.isMalformedResponse == true)
    }

    @Test func minimalDeviceInfoUsesDefaults() throws {
        let info = try DeviceInfo(tlvs: [0x01: [0x00, 0x3F], 0x02: [0, 0, 0, 0]], defaultVersion: Version(5, 2, 7))
        #expect(info.version == Version(5, 2, 7))
        #expect(info.serial == nil)  // 0 means no serial
        #expect(info.enabledUSB == info.supportedUSB)
        #expect(info.supportedNFC == nil)
        #expect(info.enabledNFC == nil)
        #expect(info.formFactor == .unknown)
        #expect(!info.isConfigLocked)
        #expect(info.productName == "YubiKey 5")
    }

    /// ykman's names for the 4 series (yubikit's support.get_name): no shape or NFC in the name.
    @Test func yubiKey4SeriesNamesAreYkmans() {
        let all: Capabilities = [.otp, .u2f, .openpgp, .piv, .oath]
        #expect(
            DeviceInfo(version: Version(4, 3, 7), formFactor: .usbAKeychain, supportedUSB: all).productName
                == "YubiKey 4")
        #expect(
            DeviceInfo(version: Version(4, 3, 7), formFactor: .usbCKeychain, supportedUSB: all).productName
                == "YubiKey 4")
        #expect(DeviceInfo(version: Version(4, 4, 5), supportedUSB: all).productName == "YubiKey FIPS (4 Series)")
        #expect(DeviceInfo(version: Version(4, 3, 7), supportedUSB: [.otp, .u2f]).productName == "YubiKey Edge")
        #expect(
            DeviceInfo(version: Version(5, 4, 3), formFactor: .usbCKeychain, supportedUSB: all).productName
                == "YubiKey 5C")
    }

    /// The names yubikit's `get_name` gives these keys (from their device information, as over NFC), one per shape,
    /// series and edition.
    @Test(arguments: [
        ("YubiKey 5 NFC", Version(5, 7, 2), FormFactor.usbAKeychain, true, false, false, false),
        ("YubiKey 5A", Version(5, 7, 2), .usbAKeychain, false, false, false, false),
        ("YubiKey 5C", Version(5, 4, 3), .usbCKeychain, false, false, false, false),
        ("YubiKey 5C NFC", Version(5, 4, 3), .usbCKeychain, true, false, false, false),
        ("YubiKey 5 Nano", Version(5, 4, 3), .usbANano, false, false, false, false),
        ("YubiKey 5C Nano", Version(5, 4, 3), .usbCNano, false, false, false, false),
        ("YubiKey 5Ci", Version(5, 4, 3), .usbCLightning, false, false, false, false),
        ("YubiKey 5C NFC FIPS", Version(5, 4, 3), .usbCKeychain, true, true, false, false),
        ("YubiKey 5 NFC - Enhanced PIN", Version(5, 7, 4), .usbAKeychain, true, false, false, true),
        ("YubiKey Preview", Version(5, 2, 1), .usbAKeychain, true, false, false, false),
        ("YubiKey Preview", Version(5, 5, 1), .usbAKeychain, true, false, false, false),
        ("YubiKey NEO", Version(3, 5, 0), .unknown, true, false, false, false),
        ("YubiKey", Version(2, 4, 0), .unknown, false, false, false, false),
    ])
    func yubiKeyNamesAreYkmans(
        name: String, version: Version, formFactor: FormFactor, nfc: Bool, fips: Bool, sky: Bool, enhancedPIN: Bool
    ) {
        let all: Capabilities = [.otp, .u2f, .openpgp, .piv, .oath, .hsmauth, .fido2]
        let info = DeviceInfo(
            serial: 1, version: version, formFactor: formFactor, isFIPS: fips, isSky: sky, supportedUSB: all,
            supportedNFC: nfc ? all : nil, pinComplexity: enhancedPIN)
        #expect(info.productName == name)
    }

    /// yubikit's names for the Bio series and for Security Keys: a key with FIDO alone and no serial before 5.2.8
    /// has no shape in its name; later ones do, and one with a serial is an Enterprise Edition.
    @Test func bioAndSecurityKeyNamesAreYkmans() {
        let fido: Capabilities = [.u2f, .fido2]
        let all: Capabilities = [.otp, .u2f, .openpgp, .piv, .oath, .hsmauth, .fido2]
        func name(_ v: Version, _ ff: FormFactor, nfc: Bool, serial: UInt32? = nil, sky: Bool, _ usb: Capabilities)
            -> String?
        {
            DeviceInfo(
                serial: serial, version: v, formFactor: ff, isSky: sky, supportedUSB: usb,
                supportedNFC: nfc ? usb : nil
            ).productName
        }
        #expect(
            name(Version(5, 6, 6), .usbABio, nfc: false, serial: 1, sky: false, fido) == "YubiKey Bio - FIDO Edition")
        #expect(
            name(Version(5, 6, 6), .usbCBio, nfc: false, serial: 1, sky: false, all)
                == "YubiKey C Bio - Multi-protocol Edition")
        #expect(name(Version(5, 4, 3), .usbAKeychain, nfc: true, sky: true, fido) == "Security Key NFC")
        #expect(name(Version(5, 7, 2), .usbCKeychain, nfc: true, sky: true, fido) == "Security Key C NFC")
        #expect(
            name(Version(5, 7, 2), .usbAKeychain, nfc: true, serial: 1, sky: true, fido)
                == "Security Key NFC - Enterprise Edition")
        #expect(name(Version(5, 1, 2), .usbAKeychain, nfc: true, sky: true, fido) == "Security Key NFC")
        #expect(name(Version(5, 2, 7), .usbAKeychain, nfc: false, sky: true, fido) == "Security Key by Yubico")
        #expect(name(Version(5, 1, 2), .usbAKeychain, nfc: false, sky: true, [.u2f]) == "FIDO U2F Security Key")
    }

    @Test func pinComplexityRoundTrips() throws {
        let info = DeviceInfo(serial: 5, version: Version(5, 7, 4), supportedUSB: [.piv], pinComplexity: true)
        let parsed = try DeviceInfo(tlvs: info.configTLVs().dictionary, defaultVersion: Version(1, 0, 0))
        #expect(parsed.pinComplexity && parsed.productName == "YubiKey 5 - Enhanced PIN")
        #expect(
            try !DeviceInfo(tlvs: [0x01: [0x00, 0x10], 0x16: [0]], defaultVersion: Version(5, 7, 4)).pinComplexity)
    }

    @Test func configTLVsRoundTrip() throws {
        let info = DeviceInfo(
            serial: 12_345_678, version: Version(5, 4, 3), formFactor: .usbCNano, isFIPS: false,
            isSky: true, supportedUSB: [.otp, .u2f, .fido2], enabledUSB: [.u2f, .fido2],
            supportedNFC: [.u2f, .fido2], enabledNFC: [.fido2], isConfigLocked: true,
            partNumber: "SKY-1", autoEjectTimeout: 0, challengeResponseTimeout: 20,
            deviceFlags: 0x80)
        let tlvs = info.configTLVs()
        #expect(tlvs.first?.tag == 0x01)
        let parsed = try DeviceInfo(tlvs: tlvs.dictionary, defaultVersion: Version(1, 0, 0))
        #expect(parsed == info)
        // As yubikit names it (a USB-C nano Security Key with a serial).
        #expect(parsed.productName == "Security Key C Nano - Enterprise Edition")
    }

    @Test
    func oversizedFormFactorIsAnError() {
        #expect(throws: SmartCardError.self) {
            try DeviceInfo(tlvs: [0x01: [0x00, 0x3F], 0x04: [0x01, 0x01]], defaultVersion: Version(5, 7, 2))
        }
    }

    @Test
    func eightByteIntegerFieldIsAnError() {
        #expect(throws: SmartCardError.self) {
            try DeviceInfo(tlvs: [0x01: [UInt8](repeating: 0xFF, count: 8)], defaultVersion: Version(5, 7, 2))
        }
    }

    @Test func oldFirmwareHasNoDeviceInfo() async throws {
        let card = ScriptedConnection([(selectManagement, "34 2E 30 2E 30 90 00")])
        let session = try await ManagementSession.make(connection: card)
        #expect(session.version == Version(4, 0, 0))
        let error = await #expect(throws: SmartCardError.self) { try await session.deviceInfo() }
        #expect(error == .deviceInfoNeedsFirmware(Version(4, 0, 0)))
        #expect(card.sent.count == 1)  // no READ CONFIG sent
    }

    @Test func selectWithoutAVersionIsMalformed() async throws {
        let card = ScriptedConnection([(selectManagement, "6E 6F 6E 65 90 00")])
        let error = await #expect(throws: SmartCardError.self) { try await ManagementSession.make(connection: card) }
        #expect(error?.isMalformedResponse == true)
    }

    @Test func keyWithoutManagement() async throws {
        let card = ScriptedConnection([(selectManagement, "6A 82")])
        await #expect(throws: SmartCardError.applicationNotAvailable("Management")) {
            try await ManagementSession.make(connection: card)
        }
    }
}

@Suite struct KeyProbeTests {
    @Test func atrHighNibbleFIsUSB() {
        #expect(!KeyProbe.isNFC(atr: usbATR))
        #expect(KeyProbe.isNFC(atr: nfcATR))
        #expect(!KeyProbe.isNFC(atr: [0x3B, 0xF8, 0x13, 0x00]))
        #expect(KeyProbe.isNFC(atr: [0x3B, 0x8F, 0x80, 0x01]))
        #expect(KeyProbe.isNFC(atr: [0x3B, 0x0F]))
        #expect(KeyProbe.isNFC(atr: [0x3B, 0xEF]))
        #expect(!KeyProbe.isNFC(atr: [0x3B]))
        #expect(!KeyProbe.isNFC(atr: []))
    }

    @Test func inspectUsesManagement() async throws {
        let card = ScriptedConnection(
            atr: nfcATR, name: "Reader 0",
            [
                (selectManagement, "35 2E 37 2E 32 90 00"),
                (
                    "00 1D 00 00 00",
                    page([
                        TLV(0x01, [0x02, 0x3B]), TLV(0x02, [0x00, 0x00, 0x30, 0x39]), TLV(0x03, [0x02, 0x3B]),
                        TLV(0x04, [0x01]), TLV(0x0D, [0x02, 0x3B]), TLV(0x0E, [0x00, 0x30]),
                    ])
                ),
            ])
        let info = try await KeyProbe.inspect(connection: card)
        #expect(card.remaining == 0)
        #expect(info.reader == "Reader 0")
        #expect(info.overNFC)
        #expect(info.atr == nfcATR)
        #expect(info.device.serial == 12345)
        #expect(info.device.version == Version(5, 7, 2))
        #expect(info.applications == ["OATH", "PIV"])  // the NFC-enabled set, since the ATR says NFC
        #expect(info.label == "Reader 0 (serial 12345)")
    }

    @Test func inspectProbesKeysWithoutManagement() async throws {
        let card = ScriptedConnection(
            name: "Reader 1",
            [
                (selectManagement, "6A 82"),
                ("00 A4 04 00 07 A0 00 00 05 27 20 01 00", "04 03 04 05 00 00 90 00"),
                ("00 01 10 00 00", "00 0F 42 40 90 00"),
                ("00 A4 04 00 08 A0 00 00 06 47 2F 00 01 00", "55 32 46 5F 56 32 90 00"),
                // "U2F_V2" may come from a key that speaks CTAP2 too: getInfo is asked, and refused here.
                ("00 A4 04 00 08 A0 00 00 06 47 2F 00 01 00", "55 32 46 5F 56 32 90 00"),
                ("80 10 80 00 01 04 00", "6D 00"),
                ("00 A4 04 00 07 A0 00 00 05 27 21 01 00", "6A 82"),
                ("00 A4 04 00 05 A0 00 00 03 08 00", "61 02"),
                ("00 C0 00 00 02", "AA BB 90 00"),
                ("00 A4 04 00 06 D2 76 00 01 24 01 00", "6D 00"),
                ("00 A4 04 00 07 A0 00 00 05 27 21 07 00", "6A 82"),
            ])
        let info = try await KeyProbe.inspect(connection: card)
        #expect(card.remaining == 0)
        #expect(!info.overNFC)
        #expect(info.applications == ["OTP", "U2F", "PIV"])
        #expect(info.device.version == Version(4, 3, 4))
        #expect(info.device.serial == 1_000_000)
        #expect(info.device.supportedUSB == [.otp, .u2f, .piv])
        #expect(info.device.supportedNFC == nil)
        #expect(!info.device.fromManagement)
        #expect(info.device.productName == nil)
        #expect(info.device.unnamedKey == .compatible)
    }

    @Test func probeAsksGetInfoWhenTheFIDOSelectSaysU2F() async throws {
        // A key without Management whose FIDO application answers SELECT "U2F_V2" (as YubiKeys do over NFC)
        // and getInfo with FIDO_2_0: it speaks FIDO2 too.
        let info: CBOR = [1: ["U2F_V2", "FIDO_2_0"], 3: .bytes([UInt8](repeating: 0x11, count: 16))]
        let card = ScriptedConnection(
            atr: nfcATR, name: "Reader 2",
            [
                (selectManagement, "6A 82"),
                ("00 A4 04 00 07 A0 00 00 05 27 20 01 00", "6A 82"),
                ("00 A4 04 00 08 A0 00 00 06 47 2F 00 01 00", "55 32 46 5F 56 32 90 00"),
                ("00 A4 04 00 08 A0 00 00 06 47 2F 00 01 00", "55 32 46 5F 56 32 90 00"),
                ("80 10 80 00 01 04 00", ([0x00] + info.encoded + [0x90, 0x00]).hex),
                ("00 A4 04 00 07 A0 00 00 05 27 21 01 00", "79 03 05 04 03 71 01 AA 90 00"),
                ("00 A4 04 00 05 A0 00 00 03 08 00", "6A 82"),
                ("00 A4 04 00 06 D2 76 00 01 24 01 00", "6A 82"),
                ("00 A4 04 00 07 A0 00 00 05 27 21 07 00", "6A 82"),
            ])
        let probed = try await KeyProbe.inspect(connection: card)
        #expect(card.remaining == 0)
        #expect(probed.applications == ["FIDO2", "U2F", "OATH"])
        #expect(probed.device.supportedNFC?.contains(.fido2) == true)
    }

    @Test func aFIDO2OnlySelectAnswerIsFIDO2WithoutU2F() async throws {
        let card = ScriptedConnection(
            name: "Reader 3",
            [
                (selectManagement, "6A 82"),
                ("00 A4 04 00 07 A0 00 00 05 27 20 01 00", "6A 82"),
                ("00 A4 04 00 08 A0 00 00 06 47 2F 00 01 00", "46 49 44 4F 5F 32 5F 30 90 00"),
                ("00 A4 04 00 07 A0 00 00 05 27 21 01 00", "6A 82"),
                ("00 A4 04 00 05 A0 00 00 03 08 00", "6A 82"),
                ("00 A4 04 00 06 D2 76 00 01 24 01 00", "6A 82"),
                ("00 A4 04 00 07 A0 00 00 05 27 21 07 00", "6A 82"),
            ])
        let probed = try await KeyProbe.inspect(connection: card)
        #expect(card.remaining == 0)
        #expect(probed.applications == ["FIDO2"])
    }

    @Test func inspectReportsAKeyThatWentAway() async throws {
        let card = ScriptedConnection([], afterScript: .failure(.cardRemoved))
        await #expect(throws: SmartCardError.cardRemoved) { try await KeyProbe.inspect(connection: card) }
    }
}
