import AuthenticatorModel
import Foundation
import KeyKit
import Testing
import VirtualKey

private func bytes(_ hex: String) -> [UInt8] {
    try! Hex.decode(hex)
}

private let selectOATH = bytes("00 A4 04 00 07 A0 00 00 05 27 21 01")

/// A strict-le key with `accounts` generated TOTP accounts, connected in-process.
private func strictKey(accounts: Int = 0) -> VirtualKey {
    VirtualKey(state: .yubiKey5NFC().withGeneratedAccounts(accounts), touchDelay: 0.01, profile: .strictLe)
}

/// RFC 4226 dynamic truncation of HMAC-SHA1(secret, time step), computed here rather than by KeyKit.
private func totp(_ secret: [UInt8], at time: Int64, digits: Int = 6) -> String {
    var step = UInt64(time / 30).bigEndian
    let counter = withUnsafeBytes(of: &step) { Array($0) }
    let mac = Crypto.hmac(.sha1, key: SecretBytes(secret), data: counter)
    let offset = Int(mac[19] & 0x0F)
    let value =
        (UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3])) % 1_000_000
    let text = String(value)
    return String(repeating: "0", count: digits - text.count) + text
}

@Suite("Virtual key profiles")
struct VirtualKeyProfileTests {
    @Test func namesAndUnknownNames() throws {
        #expect(try VirtualKeyProfile(named: "strict-le") == .strictLe)
        #expect(try VirtualKeyProfile(named: "yubikey") == .yubikey)
        #expect(try VirtualKeyProfile(named: "no-management") == .noManagement)
        for profile in VirtualKeyProfile.allCases { #expect(try VirtualKeyProfile(named: profile.name) == profile) }
        #expect(VirtualKeyProfile.names.hasPrefix("yubikey, strict-le, no-management, ndef-elsewhere, oath-basic, "))
        let error = #expect(throws: VirtualKeyProfile.UnknownName.self) { try VirtualKeyProfile(named: "strict") }
        #expect(error?.description == "unknown virtual key profile \"strict\": use one of \(VirtualKeyProfile.names)")
        #expect(VirtualKey().profile == .yubikey)
    }

    @Test func withoutManagementTheKeyIsProbed() async throws {
        let key = VirtualKey(state: .yubiKey5NFC(serial: 44_332_211), profile: .noManagement)
        let connection = VirtualKeyConnection(key: key)
        await #expect(throws: SmartCardError.self) { try await ManagementSession.make(connection: connection) }
        let info = try await KeyProbe.inspect(connection: connection)
        #expect(!info.device.fromManagement && info.device.serial == 44_332_211)
        #expect(Set(["OTP", "FIDO2", "OATH"]).isSubset(of: info.applications))
    }

    @Test func yubikeyProfileAnswersDataWithoutLe() {
        let key = VirtualKey(state: .yubiKey5NFC().withGeneratedAccounts(2))
        let select = key.process(selectOATH)
        #expect(select.count > 2 && select.suffix(2) == [0x90, 0x00])
        let list = key.process(bytes("00 A1 00 00"))
        #expect(list.count > 2 && list.suffix(2) == [0x90, 0x00])
    }

    @Test func strictLeWithholdsDataFromCommandsWithoutLe() throws {
        let key = strictKey(accounts: 12)
        // SELECT without Le: 61xx and nothing else; the fetch with Le brings the answer.
        let select = key.process(selectOATH)
        #expect(select.count == 2 && select[0] == 0x61)
        let selectAnswer = key.process(bytes("00 A5 00 00 00"))
        #expect(selectAnswer.count == Int(select[1]) + 2 && selectAnswer.suffix(2) == [0x90, 0x00])

        // LIST without Le: 61FF (256 bytes or more wait) and no data, every time, SEND REMAINING without Le
        // included, as the key of the other make answers.
        #expect(key.process(bytes("00 A1 00 00")) == bytes("61 00"))
        for _ in 0..<3 { #expect(key.process(bytes("00 A5 00 00")) == bytes("61 00")) }
        // With Le, the data comes in parts.
        var list = [UInt8]()
        var answer = key.process(bytes("00 A5 00 00 00"))
        while answer.count > 2 && answer[answer.count - 2] == 0x61 {
            list += answer.dropLast(2)
            answer = key.process(bytes("00 A5 00 00 00"))
        }
        #expect(answer.suffix(2) == [0x90, 0x00])
        list += answer.dropLast(2)
        let names = try TLV.parseAll(list, mode: .simple).filter { $0.tag == 0x72 }
        #expect(names.count == 12)

        // LIST with Le: data at once.
        let direct = key.process(bytes("00 A1 00 00 00"))
        #expect(direct.count == 258 && direct[256] == 0x61)
    }

    @Test func strictLeAnswersCommandsWithoutDataAsUsual() {
        let key = strictKey()
        _ = key.process(selectOATH + [0x00])
        // PUT answers no data: 9000 without Le.
        let put = bytes("00 01 00 00 1C 71 03 61 62 63 73 15 21 06") + [UInt8](repeating: 0x31, count: 19)
        #expect(key.process(put) == bytes("90 00"))
        // A refusal is a refusal.
        #expect(key.process(bytes("00 EE 00 00")) == bytes("6D 00"))
    }

    @Test func aRawCommandWithoutLeGetsItsDataThroughFetchesWithLe() async throws {
        // As typed in the APDU console: LIST without Le. The key answers 61xx and nothing; the transport's
        // fetches carry Le, so the list arrives, in one command and as many fetches as parts.
        let key = strictKey(accounts: 12)
        let proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key), remainingInstruction: 0xA5)
        _ = try await proto.select(AID.oath, name: "OATH")
        key.resetStatistics()
        let r = try await proto.sendRaw(bytes("00 A1 00 00"))
        #expect(r.status == .ok)
        #expect(try TLV.parseAll(r.data, mode: .simple).count == 12)
        #expect(key.statistics.commands == 1 + (r.data.count + 255) / 256)
    }

    @Test func oathListAddAndCalculateAllWith12AccountsUnderStrictLe() async throws {
        let key = strictKey()
        let session = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        var secrets = [String: [UInt8]]()
        for i in 0..<12 {
            let secret = (0..<20).map { UInt8(truncatingIfNeeded: $0 * 13 + i * 29 + 1) }
            let name = "user\(i)@example.org"
            secrets["Example \(i):" + name] = secret
            try await session.put(CredentialData(name: name, issuer: "Example \(i)", secret: secret))
        }
        key.resetStatistics()
        let listed = try await session.list()
        #expect(Set(listed.map(\.id.string)) == Set(secrets.keys))
        // The list is longer than one answer: it came in parts, each fetched with Le.
        #expect(key.statistics.byInstruction[0xA5, default: 0] >= 1)

        for time: Int64 in [59, 1_111_111_109, 2_000_000_000] {
            let entries = try await session.calculateAll(at: time)
            #expect(entries.count == 12)
            for e in entries {
                #expect(
                    e.code?.value == totp(secrets[e.credential.id.string] ?? [], at: time),
                    "\(e.credential.id) at \(time)")
            }
        }
        let one = try #require(listed.first)
        #expect(try await session.calculate(one, at: 59).value == totp(secrets[one.id.string] ?? [], at: 59))
    }

    @Test func otpManagementAndFIDOUnderStrictLe() async throws {
        let key = strictKey()
        let connection = VirtualKeyConnection(key: key)
        let info = try await KeyProbe.inspect(connection: connection)
        #expect(info.device.fromManagement && info.device.serial == key.state.serial)
        let otp = try await OTPSession.make(connection: connection)
        #expect(try await otp.serial() == key.state.serial)
        let fido = try await PCSCFIDOConnection.open(card: connection)
        #expect(try await U2FSession(connection: fido).version() == "U2F_V2")
        let ctap = try await CTAP2Session.make(connection: fido)
        #expect(await ctap.info.versions.contains { $0.hasPrefix("FIDO_2") })
    }
}

@Suite("Trace of answers in parts")
struct TraceNestingTests {
    @Test func redactorLabelsEveryFetchWithTheCommandItAnswers() {
        var redactor = APDURedactor()
        _ = redactor.redact(command: selectOATH + [0x00], response: bytes("79 03 05 07 02 90 00"))
        let list = redactor.redact(command: bytes("00 A1 00 00 00"), response: [0x72, 0x01, 0x21, 0x61, 0x00])
        #expect(list.label == "OATH LIST")
        var labels = [String?]()
        for _ in 0..<5 {
            labels.append(
                redactor.redact(command: bytes("00 A5 00 00 00"), response: [0x72, 0x01, 0x21, 0x61, 0x00]).label)
        }
        labels.append(
            redactor.redact(command: bytes("00 A5 00 00 00"), response: [0x72, 0x01, 0x21, 0x90, 0x00]).label)
        #expect(labels == Array(repeating: "SEND REMAINING (OATH LIST)", count: 6))
        // The answers of a redacted command stay redacted in every part.
        _ = redactor.redact(
            command: bytes("00 A4 00 01 0A 74 08 00 00 00 00 00 00 00 01 00"),
            response: [0x71, 0x01, 0x61, 0x61, 0x00])
        for _ in 0..<3 {
            let part = redactor.redact(
                command: bytes("00 A5 00 00 00"), response: [0x76, 0x05, 6, 1, 2, 3, 4, 0x61, 0x00])
            #expect(part.label == "SEND REMAINING (OATH CALCULATE ALL)")
            #expect(part.response == "<7 bytes redacted> 6100")
        }
        // An unlabelled command's parts (SELECT of YubiHSM Auth, which the redactor does not name) are plain GET
        // RESPONSEs, not nested either.
        var other = APDURedactor()
        _ = other.redact(command: bytes("00 A4 04 00 07 A0 00 00 05 27 21 07 00"), response: bytes("61 02"))
        for _ in 0..<3 {
            #expect(
                other.redact(command: bytes("00 C0 00 00 02"), response: bytes("AA 61 02")).label
                    == "GET RESPONSE (SELECT)")
        }
        var unknown = APDURedactor()
        _ = unknown.redact(command: bytes("00 CA 00 00 00"), response: bytes("AA 61 02"))
        for _ in 0..<3 {
            #expect(
                unknown.redact(command: bytes("00 C0 00 00 02"), response: bytes("AA 61 02")).label == "GET RESPONSE")
        }
    }

    @Test func traceOfALongListHasOneLinePerExchange() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/trace.log"
        let key = strictKey(accounts: 40)
        let tracer = try WireTracer(path: path)
        let count = try await tracer.run {
            let session = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
            return try await session.list().count
        }
        #expect(count == 40)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        let commands = lines.filter { $0.contains("] > ") }
        let fetches = commands.filter { $0.contains("SEND REMAINING") }
        #expect(fetches.count >= 4)
        #expect(fetches.allSatisfy { $0.hasSuffix("00A5000000  SEND REMAINING (OATH LIST)") })
        #expect(!lines.contains { $0.contains("SEND REMAINING (SEND REMAINING") })
        // One command line and one answer line per exchange, whatever the round.
        #expect(commands.count == key.statistics.commands)
        #expect(lines.filter { $0.contains("] < ") }.count == commands.count)
    }
}
