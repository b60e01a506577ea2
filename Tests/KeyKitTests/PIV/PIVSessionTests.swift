import Synchronization
import Testing
@testable import KeyKit

private func h(_ hex: String) -> [UInt8] { try! Hex.decode(hex) }

/// SELECT PIV and GET VERSION, as every PIV script starts.
func pivOpening(version: String = "05 07 01") -> [(String, String)] {
    [
        ("00 A4 04 00 05 A0 00 00 03 08 00", "61 11 4F 06 00 00 10 00 01 00 79 07 4F 05 A0 00 00 03 08 90 00"),
        ("00 FD 00 00 00", version + " 90 00"),
    ]
}

/// A PIV session on a card that expects exactly `script` after the opening.
func pivSession(version: String = "05 07 01", _ script: [(String, String)]) async throws
    -> (PIVSession, ScriptedConnection)
{
    let card = ScriptedConnection(pivOpening(version: version) + script)
    return (try await PIVSession.make(connection: card), card)
}

/// A card that answers each whole command through `respond` (for exchanges with random parts), recording them:
/// it joins chained commands (CLA 10) and hands out answers longer than 256 bytes with 61xx and GET RESPONSE.
final class PIVRespondingCard: SmartCardConnection {
    let atr: [UInt8] = []
    let name = "PIV test card"
    /// The answer to one whole command (data and status word).
    let respond: @Sendable (APDU) -> [UInt8]
    private struct State {
        var log: [APDU] = []
        var chain: [UInt8] = []
        var pending: [UInt8] = []
        var finalStatus: [UInt8] = []
        var exchanges = 0
    }
    private let state = Mutex(State())

    init(version: [UInt8] = [5, 7, 1], _ answer: @escaping @Sendable (APDU) -> [UInt8]) {
        respond = { apdu in
            switch apdu.ins {
            case 0xA4: return [0x90, 0x00]
            case PIV.Ins.getVersion: return version + [0x90, 0x00]
            default: return answer(apdu)
            }
        }
    }

    /// The whole commands received, chains joined.
    var received: [APDU] { state.withLock { $0.log } }
    /// The raw exchanges, chained parts and GET RESPONSEs counted.
    var exchanges: Int { state.withLock { $0.exchanges } }

    func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        let apdu = try APDU(parsing: command)
        return state.withLock { s in
            s.exchanges += 1
            if apdu.ins == 0xC0, !s.pending.isEmpty { return Self.part(&s) }
            if apdu.cla & 0x10 != 0 {
                s.chain += apdu.data
                return [0x90, 0x00]
            }
            var whole = apdu
            whole.data = s.chain + apdu.data
            s.chain = []
            s.log.append(whole)
            let answer = respond(whole)
            guard answer.count > 258 else { return answer }
            s.pending = Array(answer.dropLast(2))
            s.finalStatus = Array(answer.suffix(2))
            return Self.part(&s)
        }
    }

    private static func part(_ s: inout State) -> [UInt8] {
        let part = Array(s.pending.prefix(256))
        s.pending.removeFirst(part.count)
        if s.pending.isEmpty { return part + s.finalStatus }
        return part + [0x61, s.pending.count >= 256 ? 0 : UInt8(s.pending.count)]
    }

    func close() async {}
}

@Suite struct PIVSessionTests {
    let pin = SecretBytes(utf8: "123456")

    @Test func opensWithSelectAndVersion() async throws {
        let (session, card) = try await pivSession(version: "05 04 03", [])
        #expect(session.version == Version(5, 4, 3))
        #expect(session.defaultManagementKeyAlgorithm == .tripleDES)
        #expect(card.remaining == 0)
        let (newer, _) = try await pivSession([])
        #expect(newer.defaultManagementKeyAlgorithm == .aes192)
    }

    @Test func malformedVersionAndMissingApplication() async throws {
        await #expect(throws: PIVError.malformed(.version(length: 2))) {
            _ = try await pivSession(version: "05 07", [])
        }
        await #expect(throws: SmartCardError.applicationNotAvailable("PIV")) {
            _ = try await PIVSession.make(
                connection: ScriptedConnection([("00 A4 04 00 05 A0 00 00 03 08 00", "6A 82")]))
        }
    }

    @Test func serial() async throws {
        let (session, _) = try await pivSession([("00 F8 00 00 00", "01 23 45 67 90 00")])
        #expect(try await session.serial() == 0x0123_4567)
        let (short, _) = try await pivSession([("00 F8 00 00 00", "01 23 45 90 00")])
        await #expect(throws: PIVError.malformed(.serial(length: 3))) { _ = try await short.serial() }
        let (old, _) = try await pivSession(version: "04 03 05", [])
        await #expect(
            throws: PIVError.notSupported(feature: .serial, minimum: Version(5, 0, 0), actual: Version(4, 3, 5))
        ) {
            _ = try await old.serial()
        }
    }

    // MARK: Metadata

    @Test func pinAndPUKMetadata() async throws {
        let (session, _) = try await pivSession([
            ("00 F7 00 80 00", "01 01 FF 05 01 01 06 02 03 02 90 00"),
            ("00 F7 00 81 00", "01 01 FF 05 01 00 06 02 05 05 90 00"),
        ])
        #expect(try await session.pinMetadata() == PIVPINMetadata(isDefault: true, totalRetries: 3, retriesLeft: 2))
        #expect(try await session.pukMetadata() == PIVPINMetadata(isDefault: false, totalRetries: 5, retriesLeft: 5))
    }

    @Test func managementKeyMetadata() async throws {
        let (session, _) = try await pivSession([
            ("00 F7 00 9B 00", "01 01 0A 02 02 00 01 05 01 01 90 00"),
            // Firmware 5.3 leaves the algorithm out: 3DES.
            ("00 F7 00 9B 00", "02 02 00 02 05 01 00 90 00"),
            ("00 F7 00 9B 00", "01 01 11 02 02 00 01 05 01 01 90 00"),
        ])
        #expect(
            try await session.managementKeyMetadata()
                == PIVManagementKeyMetadata(algorithm: .aes192, isDefault: true, touchPolicy: .never))
        #expect(try await session.managementKeyAlgorithm() == .aes192)
        #expect(
            try await session.managementKeyMetadata()
                == PIVManagementKeyMetadata(algorithm: .tripleDES, isDefault: false, touchPolicy: .always))
        await #expect(throws: PIVError.malformed(.unknownAlgorithm(0x11))) {
            _ = try await session.managementKeyMetadata()
        }
    }

    @Test func slotMetadata() async throws {
        let key = try AsymmetricPrivateKey(pkcs8: PIVFixtures.attestedKey).publicKey
        let body = "01 01 11 02 02 02 03 03 01 01 04 43 " + key.pivEncoding.hex
        let (session, _) = try await pivSession([
            ("00 F7 00 9A 00", body + "90 00"),
            ("00 F7 00 9C 00", "6A 88"),
            ("00 F7 00 9D 00", "01 01 11 02 02 07 01 03 01 01 04 00 90 00"),
            ("00 F7 00 9E 00", "01 01 11 02 01 02 03 01 01 04 00 90 00"),
            ("00 F7 00 82 00", "01 01 11 02 02 02 01 03 01 09 04 00 90 00"),
        ])
        #expect(
            try await session.slotMetadata(.authentication)
                == PIVSlotMetadata(
                    algorithm: .eccP256, pinPolicy: .once, touchPolicy: .cached, origin: .generated, publicKey: key))
        await #expect(throws: PIVError.noKeyInSlot(.signature)) { _ = try await session.slotMetadata(.signature) }
        await #expect(throws: PIVError.malformed(.unknownPINPolicy(7))) {
            _ = try await session.slotMetadata(.keyManagement)
        }
        await #expect(throws: PIVError.malformed(.fieldLength(tag: 2, length: 1))) {
            _ = try await session.slotMetadata(.cardAuthentication)
        }
        await #expect(throws: PIVError.malformed(.unknownOrigin(9))) {
            _ = try await session.slotMetadata(PIV.Slot(rawValue: 0x82))
        }
    }

    @Test func metadataNeedsFirmware53() async throws {
        let (session, card) = try await pivSession(version: "05 02 07", [])
        await #expect(
            throws: PIVError.notSupported(feature: .metadata, minimum: Version(5, 3, 0), actual: Version(5, 2, 7))
        ) {
            _ = try await session.pinMetadata()
        }
        #expect(try await session.managementKeyAlgorithm() == .tripleDES)
        #expect(card.remaining == 0)
    }

    // MARK: PIN and PUK

    @Test func verifyPIN() async throws {
        let (session, card) = try await pivSession([
            ("00 20 00 80 08 31 32 33 34 35 36 FF FF", "90 00"),
            ("00 20 00 80 08 31 32 33 34 35 36 FF FF", "63 C2"),
            ("00 20 00 80 08 31 32 33 34 35 36 FF FF", "69 83"),
            ("00 20 00 80 08 31 32 33 34 35 36 FF FF", "63 C0"),
            ("00 20 00 80 08 31 32 33 34 35 36 FF FF", "6A 80"),
        ])
        try await session.verifyPIN(pin)
        await #expect(throws: PIVError.wrongPIN(retriesLeft: 2)) { try await session.verifyPIN(pin) }
        await #expect(throws: PIVError.pinBlocked) { try await session.verifyPIN(pin) }
        await #expect(throws: PIVError.wrongPIN(retriesLeft: 0)) { try await session.verifyPIN(pin) }
        await #expect(throws: PIVError.incorrectParameters(.incorrectParameters)) { try await session.verifyPIN(pin) }
        await #expect(throws: PIVError.pinLength(9)) { try await session.verifyPIN(SecretBytes(utf8: "123456789")) }
        #expect(card.remaining == 0)
    }

    @Test func pinRetriesFromMetadataOrAnEmptyVerify() async throws {
        let (session, _) = try await pivSession([("00 F7 00 80 00", "05 01 00 06 02 05 04 90 00")])
        #expect(try await session.pinRetries() == 4)
        let (old, card) = try await pivSession(
            version: "05 02 07",
            [
                ("00 20 00 80", "63 C3"),
                ("00 20 00 80 08 31 32 33 34 35 36 FF FF", "63 C2"),
                ("00 20 00 80", "63 C2"),
                ("00 20 00 80 08 31 32 33 34 35 36 FF FF", "90 00"),
                // Verified: the empty VERIFY answers 9000, and the count is the one after a right PIN.
                ("00 20 00 80", "90 00"),
                ("00 20 00 80", "69 83"),
            ])
        #expect(try await old.pinRetries() == 3)
        await #expect(throws: PIVError.wrongPIN(retriesLeft: 2)) { try await old.verifyPIN(pin) }
        #expect(try await old.pinRetries() == 2)
        try await old.verifyPIN(pin)
        #expect(try await old.pinRetries() == 3)
        #expect(try await old.pinRetries() == 0)
        #expect(card.remaining == 0)
    }

    @Test func changeAndUnblock() async throws {
        let old = "31 32 33 34 35 36 FF FF", new = "36 35 34 33 32 31 FF FF"
        let puk = "31 32 33 34 35 36 37 38", newPUK = "38 37 36 35 34 33 32 31"
        let (session, card) = try await pivSession([
            ("00 24 00 80 10 \(old) \(new)", "90 00"),
            ("00 24 00 80 10 \(old) \(new)", "63 C1"),
            ("00 24 00 81 10 \(puk) \(newPUK)", "90 00"),
            ("00 24 00 81 10 \(puk) \(newPUK)", "63 C2"),
            ("00 24 00 81 10 \(puk) \(newPUK)", "69 83"),
            ("00 2C 00 80 10 \(puk) \(new)", "90 00"),
            ("00 2C 00 80 10 \(puk) \(new)", "63 C0"),
            ("00 2C 00 80 10 \(puk) \(new)", "69 83"),
        ])
        let newPIN = SecretBytes(utf8: "654321"), pukValue = SecretBytes(utf8: "12345678")
        try await session.changePIN(old: pin, new: newPIN)
        await #expect(throws: PIVError.wrongPIN(retriesLeft: 1)) { try await session.changePIN(old: pin, new: newPIN) }
        try await session.changePUK(old: pukValue, new: SecretBytes(utf8: "87654321"))
        await #expect(throws: PIVError.wrongPUK(retriesLeft: 2)) {
            try await session.changePUK(old: pukValue, new: SecretBytes(utf8: "87654321"))
        }
        await #expect(throws: PIVError.pukBlocked) {
            try await session.changePUK(old: pukValue, new: SecretBytes(utf8: "87654321"))
        }
        try await session.unblockPIN(puk: pukValue, newPIN: newPIN)
        await #expect(throws: PIVError.wrongPUK(retriesLeft: 0)) {
            try await session.unblockPIN(puk: pukValue, newPIN: newPIN)
        }
        await #expect(throws: PIVError.pukBlocked) { try await session.unblockPIN(puk: pukValue, newPIN: newPIN) }
        // New PINs are 6 to 8 bytes; nothing is sent otherwise.
        await #expect(throws: PIVError.pinLength(5)) {
            try await session.changePIN(old: pin, new: SecretBytes(utf8: "12345"))
        }
        await #expect(throws: PIVError.pinLength(9)) {
            try await session.unblockPIN(puk: pukValue, newPIN: SecretBytes(utf8: "123456789"))
        }
        #expect(card.remaining == 0)
    }

    @Test func retriesResetAndBlocking() async throws {
        let ff8 = String(repeating: "FF ", count: 8)
        let (session, card) = try await pivSession([
            ("00 FA 05 07", "90 00"),
            ("00 FA 05 07", "69 82"),
            ("00 FB 00 00", "69 85"),
            ("00 20 00 80 08 \(ff8)", "63 C1"),
            ("00 20 00 80 08 \(ff8)", "63 C0"),
            ("00 2C 00 80 10 \(ff8) \(ff8)", "63 C2"),
            ("00 2C 00 80 10 \(ff8) \(ff8)", "63 C1"),
            ("00 2C 00 80 10 \(ff8) \(ff8)", "69 83"),
            ("00 FB 00 00", "90 00"),
        ])
        try await session.setPINRetries(pin: 5, puk: 7)
        await #expect(throws: PIVError.securityConditionNotSatisfied) {
            try await session.setPINRetries(pin: 5, puk: 7)
        }
        await #expect(throws: PIVError.incorrectParameters(.incorrectParameters)) {
            try await session.setPINRetries(pin: 0, puk: 3)
        }
        await #expect(throws: PIVError.resetConditionsNotMet) { try await session.reset() }
        try await session.blockPINAndPUK()
        try await session.reset()
        #expect(card.remaining == 0)
    }

    // MARK: Management key

    /// A card holding `key` of `algorithm` that runs the mutual authentication; `lie` makes its answer wrong.
    static func managementKeyCard(_ algorithm: PIV.Algorithm, key: [UInt8], lie: Bool = false) -> PIVRespondingCard {
        let cipher = BlockCipher.Algorithm(algorithm)!
        let witness = Crypto.random(cipher.blockSize)
        return PIVRespondingCard { apdu in
            guard apdu.ins == PIV.Ins.authenticate, apdu.p1 == algorithm.rawValue, apdu.p2 == 0x9B,
                let template = try? TLV.parseAll(apdu.data).value(for: 0x7C),
                let fields = try? TLV.parseAll(template)
            else { return [0x6A, 0x80] }
            if fields.value(for: 0x80) == [] {
                let encrypted = try! BlockCipher.encrypt(cipher, key: key, block: witness)
                return TLV(0x7C, TLV(0x80, encrypted).encoded).encoded + [0x90, 0x00]
            }
            guard fields.value(for: 0x80) == witness, let challenge = fields.value(for: 0x81) else {
                return [0x69, 0x82]
            }
            var answer = try! BlockCipher.encrypt(cipher, key: key, block: challenge)
            if lie { answer[0] ^= 1 }
            return TLV(0x7C, TLV(0x82, answer).encoded).encoded + [0x90, 0x00]
        }
    }

    @Test(arguments: [PIV.Algorithm.tripleDES, .aes128, .aes192, .aes256])
    func mutualAuthentication(algorithm: PIV.Algorithm) async throws {
        let key = Crypto.random(algorithm.keyLength!)
        let card = Self.managementKeyCard(algorithm, key: key)
        let session = try await PIVSession.make(connection: card)
        try await session.authenticate(managementKey: SecretBytes(key), algorithm: algorithm)
        let sent = card.received.filter { $0.ins == PIV.Ins.authenticate }
        #expect(sent.count == 2)
        #expect(sent[0].data == h("7C 02 80 00"))
        #expect(sent[0].le == 256)
        #expect(sent[1].data.count == 2 + 2 * (2 + algorithm.blockSize!))
        // A wrong key: the key refuses the witness.
        await #expect(throws: PIVError.managementKeyAuthenticationFailed) {
            try await session.authenticate(managementKey: SecretBytes(Crypto.random(key.count)), algorithm: algorithm)
        }
        await #expect(throws: PIVError.managementKeyLength(expected: key.count, actual: 5)) {
            try await session.authenticate(managementKey: SecretBytes([1, 2, 3, 4, 5]), algorithm: algorithm)
        }
    }

    @Test func theKeyMustKnowTheManagementKeyToo() async throws {
        let card = Self.managementKeyCard(.aes192, key: PIV.defaultManagementKey, lie: true)
        let session = try await PIVSession.make(connection: card)
        await #expect(throws: PIVError.managementKeyResponseMismatch) {
            try await session.authenticate(managementKey: SecretBytes(PIV.defaultManagementKey), algorithm: .aes192)
        }
        await #expect(throws: PIVError.notAManagementKeyAlgorithm(.eccP256)) {
            try await session.authenticate(managementKey: SecretBytes(PIV.defaultManagementKey), algorithm: .eccP256)
        }
    }

    @Test func authenticationAsksMetadataForTheAlgorithm() async throws {
        let inner = Self.managementKeyCard(.aes192, key: PIV.defaultManagementKey)
        let card = PIVRespondingCard { apdu in
            apdu.ins == PIV.Ins.getMetadata ? h("01 01 0A 02 02 00 01 05 01 01 90 00") : inner.respond(apdu)
        }
        let session = try await PIVSession.make(connection: card)
        try await session.authenticate(managementKey: SecretBytes(PIV.defaultManagementKey))
        #expect(card.received.map(\.ins) == [0xA4, 0xFD, 0xF7, 0x87, 0x87])
    }

    @Test func setManagementKey() async throws {
        let key = String(repeating: "11 ", count: 24), aes = String(repeating: "22 ", count: 32)
        let (session, card) = try await pivSession([
            ("00 FF FF FF 1B 03 9B 18 \(key)", "90 00"),
            ("00 FF FF FE 23 0C 9B 20 \(aes)", "90 00"),
        ])
        try await session.setManagementKey(SecretBytes(h(key)), algorithm: .tripleDES)
        try await session.setManagementKey(SecretBytes(h(aes)), algorithm: .aes256, requireTouch: true)
        #expect(try await session.managementKeyAlgorithm() == .aes256)
        await #expect(throws: PIVError.managementKeyLength(expected: 16, actual: 24)) {
            try await session.setManagementKey(SecretBytes(h(key)), algorithm: .aes128)
        }
        #expect(card.remaining == 0)
        let (old, _) = try await pivSession(version: "05 03 00", [])
        await #expect(
            throws: PIVError.notSupported(
                feature: .aesManagementKey, minimum: Version(5, 4, 0),
                actual: Version(5, 3, 0))
        ) {
            try await old.setManagementKey(SecretBytes(h(aes)), algorithm: .aes256)
        }
    }
}
