import KeyKit
import Synchronization
import Testing

private func bytes(_ hex: String) -> [UInt8] {
    try! Hex.decode(hex)
}

/// A card that answers every command through `answer` and records what it was sent.
private final class RecordingConnection: SmartCardConnection {
    let atr: [UInt8] = bytes("3B 8D 80 01 80 73 C0 21 C0 57 59 75 62 69 4B 65 79 F9")
    let name = "Recording Reader"
    private let answer: @Sendable ([UInt8]) -> [UInt8]
    private let log = Mutex<[[UInt8]]>([])

    init(_ answer: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        self.answer = answer
    }

    var sent: [[UInt8]] { log.withLock { $0 } }

    /// The commands sent with this instruction (and P1, when given), parsed.
    func commands(ins: UInt8, p1: UInt8? = nil) -> [APDU] {
        sent.compactMap { try? APDU(parsing: $0) }.filter { $0.ins == ins && (p1 == nil || $0.p1 == p1) }
    }

    func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        log.withLock { $0.append(command) }
        return answer(command)
    }

    func close() async {}
}

@Suite("Le: a 61xx answer without data")
struct EmptyResponsePartTests {
    @Test func sendRemainingAnswered61xxWithoutDataEndsAtOnce() async throws {
        // The key of another make: it answers 61FF and no data, every time.
        let card = ScriptedConnection(
            [("00 A1 00 00 00", "61 FF"), ("00 A5 00 00 00", "61 FF")],
            afterScript: .success(bytes("61 FF")))
        let proto = SmartCardProtocol(connection: card, remainingInstruction: 0xA5)
        await #expect(throws: SmartCardError.emptyResponsePart(StatusWord(rawValue: 0x61FF), after: "SEND REMAINING")) {
            _ = try await proto.send(APDU(ins: 0xA1, le: 256))
        }
        // One command and one fetch; not thousands.
        #expect(card.sent == [bytes("00 A1 00 00 00"), bytes("00 A5 00 00 00")])
    }

    @Test func getResponseAnswered61xxWithoutDataEndsAtOnce() async throws {
        let card = ScriptedConnection(
            [("00 CA 00 00 00", "01 02 61 10"), ("00 C0 00 00 10", "61 10")],
            afterScript: .success(bytes("61 10")))
        await #expect(throws: SmartCardError.emptyResponsePart(StatusWord(rawValue: 0x6110), after: "GET RESPONSE")) {
            _ = try await SmartCardProtocol(connection: card).send(APDU(ins: 0xCA, le: 256))
        }
        #expect(card.sent.count == 2)
    }

    @Test func rawCommandsEndTheSameWay() async throws {
        let card = ScriptedConnection(
            [("00 A1 00 00", "61 FF"), ("00 C0 00 00 FF", "61 FF")],
            afterScript: .success(bytes("61 FF")))
        await #expect(throws: SmartCardError.emptyResponsePart(StatusWord(rawValue: 0x61FF), after: "GET RESPONSE")) {
            _ = try await SmartCardProtocol(connection: card).sendRaw(bytes("00 A1 00 00"))
        }
        #expect(card.sent.count == 2)
    }

    @Test func aFirstAnswerWithoutDataIsFollowedOnce() async throws {
        // A command sent without Le may be answered 61xx and no data (ISO 7816-4, T=0): the fetch, with Le,
        // brings the data.
        let card = ScriptedConnection([("00 01 00 00 02 AA BB", "61 03"), ("00 A5 00 00 00", "01 02 03 90 00")])
        let r = try await SmartCardProtocol(connection: card, remainingInstruction: 0xA5)
            .send(APDU(ins: 0x01, data: [0xAA, 0xBB]))
        #expect(r.data == [1, 2, 3])
        #expect(r.status == .ok)
    }

    @Test func dataThatKeepsComingStillHasTheLastResortBound() async throws {
        let card = ScriptedConnection([("00 A1 00 00 00", "AA 61 FF")], afterScript: .success(bytes("BB 61 FF")))
        await #expect(throws: SmartCardError.self) {
            _ = try await SmartCardProtocol(connection: card, remainingInstruction: 0xA5).send(APDU(ins: 0xA1, le: 256))
        }
        #expect(card.sent.count == SmartCardProtocol.maxResponseParts)
        #expect(card.sent.dropFirst().allSatisfy { $0 == bytes("00 A5 00 00 00") })
    }
}

@Suite("Le: commands that answer data carry it")
struct CommandLeTests {
    private static let salt = bytes("01 02 03 04 05 06 07 08")

    /// A minimal OATH application: one TOTP account "abc".
    private static func oath(_ command: [UInt8]) -> [UInt8] {
        switch (command[1], command[2]) {
        case (0xA4, 0x04): return bytes("79 03 05 07 02 71 08") + salt + [0x90, 0x00]
        case (0xA1, _): return bytes("72 04 21 61 62 63 90 00")
        case (0xA4, _): return bytes("71 03 61 62 63 76 05 06 00 01 E2 40 90 00")
        case (0xA2, _): return bytes("76 05 06 00 01 E2 40 90 00")
        case (0x01, _), (0x02, _), (0x05, _): return [0x90, 0x00]
        default: return [0x6D, 0x00]
        }
    }

    @Test func oathSelectListCalculateAllAndCalculateCarryLe() async throws {
        let card = RecordingConnection(CommandLeTests.oath)
        let session = try await OATHSession.make(connection: card)
        let accounts = try await session.list()
        #expect(accounts.map(\.id.string) == ["abc"])
        let time: Int64 = 59
        let entries = try await session.calculateAll(at: time)
        #expect(entries.first?.code?.value == "123456")
        _ = try await session.calculate(accounts[0], at: time)

        #expect(card.sent[0] == bytes("00 A4 04 00 07 A0 00 00 05 27 21 01 00"))
        #expect(try card.commands(ins: 0xA1).map { try $0.encoded() } == [bytes("00 A1 00 00 00")])
        let challenge = "74 08 00 00 00 00 00 00 00 01"
        #expect(
            try card.commands(ins: 0xA4, p1: 0x00).map { try $0.encoded() } == [
                bytes("00 A4 00 01 0A " + challenge + " 00")
            ])
        #expect(card.commands(ins: 0xA2).allSatisfy { $0.le == 256 })
    }

    @Test func oathCommandsWithoutDataInTheirAnswerCarryNoLe() async throws {
        let card = RecordingConnection(CommandLeTests.oath)
        let session = try await OATHSession.make(connection: card)
        let put = try await session.put(CredentialData(name: "def", secret: bytes("00112233445566778899AABBCCDDEEFF")))
        try await session.delete(put)
        #expect(card.commands(ins: 0x01).map(\.le) == [nil])
        #expect(card.commands(ins: 0x02).map(\.le) == [nil])
    }

    @Test func otpAndProbeCommandsThatAnswerDataCarryLe() async throws {
        let card = RecordingConnection { command in
            switch (command[1], command[2]) {
            case (0xA4, _): return bytes("05 07 02 03 00 00 90 00")
            case (0x03, _): return bytes("05 07 02 03 00 00 90 00")
            case (0x01, 0x10): return bytes("00 0F 42 40 90 00")
            default: return [0x6D, 0x00]
            }
        }
        let session = try await OTPSession.make(connection: card)
        _ = try await session.serial()
        try await session.refreshStatus()
        #expect(card.sent[0] == bytes("00 A4 04 00 07 A0 00 00 05 27 20 01 00"))
        #expect(card.sent[1] == bytes("00 01 10 00 00"))
        #expect(card.sent[2] == bytes("00 03 00 00 00"))
    }

    @Test func u2fVersionOverPCSCCarriesLe() async throws {
        let card = RecordingConnection { command in
            switch command[1] {
            case 0xA4: return Array("U2F_V2".utf8) + [0x90, 0x00]
            case 0x03: return Array("U2F_V2".utf8) + [0x90, 0x00]
            default: return [0x6D, 0x00]
            }
        }
        let fido = try await PCSCFIDOConnection.open(card: card)
        #expect(try await U2FSession(connection: fido).version() == "U2F_V2")
        #expect(card.sent == [bytes("00 A4 04 00 08 A0 00 00 06 47 2F 00 01 00"), bytes("00 03 00 00 00 00 00")])
    }
}
