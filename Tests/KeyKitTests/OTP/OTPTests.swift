import Foundation
@testable import KeyKit
import Synchronization
import Testing

// Vectors: the token below was made with PyPI `yubiotp` (encode_otp) for the key 000102…0f, private ID
// a1a2a3a4a5a6, usage counter 0x0102, timestamp 0x123456, session counter 7, random 0xbeef, and the
// serial-based public ID of serial 28123456.
private let vectorKey: [UInt8] = Array(0..<16)
private let vectorOTP = "vvcccbltdbfcintthttrrgjfkdvedktvibiccfvuugdu"
private let vectorPlain = "a1a2a3a4a5a6020156341207efbe7cd0"

@Suite("OTP: modhex")
struct OTPModhexTests {
    @Test func alphabet() throws {
        #expect(Modhex.encode(try Hex.decode("0123456789abcdef")) == "cbdefghijklnrtuv")
        #expect(try Modhex.decode("cbdefghijklnrtuv") == (try Hex.decode("0123456789abcdef")))
        #expect(try Modhex.decode("VVCC") == [0xFF, 0x00])
        #expect(Modhex.encode([]) == "")
        #expect(Modhex.fromHex("ff00") == "vvcc")
    }

    @Test func invalid() {
        #expect(throws: Modhex.DecodeError.invalidCharacter("a", offset: 1)) { try Modhex.decode("ca") }
        #expect(throws: Modhex.DecodeError.oddLength(3)) { try Modhex.decode("cbd") }
        #expect(!Modhex.isModhex("hello"))
        #expect(Modhex.isModhex("hellhelt"))
    }
}

@Suite("OTP: CRC and Yubico OTP")
struct OTPYubicoTests {
    @Test func crc16() throws {
        let data = try Hex.decode("8792ebfe26cc130030c20011c89f")
        #expect(~CRC16.checksum(data) == 0xC823)
        #expect(CRC16.checksum(data + [0x23, 0xC8]) == CRC16.residue)
        #expect(CRC16.verify(data + [0x23, 0xC8]))
        #expect(!CRC16.verify([0x07] + data.dropFirst() + [0x23, 0xC8]))
    }

    @Test func tokenLayout() throws {
        let t = YubicoOTPToken(
            privateID: [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6], usageCounter: 0x0102,
            timestamp: 0x123456, sessionCounter: 7, random: 0xBEEF)
        #expect(t.bytes.hex == vectorPlain)
        #expect(try YubicoOTP.encode(t, key: vectorKey, publicID: YubicoOTP.publicID(serial: 28_123_456)) == vectorOTP)
    }

    @Test func decryptVector() throws {
        let d = try YubicoOTP.decryptVerified(vectorOTP, key: vectorKey)
        #expect(d.publicID == "vvcccbltdbfc")
        #expect(d.token.privateID.hex == "a1a2a3a4a5a6")
        #expect(d.token.usageCounter == 0x0102)
        #expect(d.token.sessionCounter == 7)
        #expect(d.token.timestamp == 0x123456)
        #expect(d.token.random == 0xBEEF)
        #expect(YubicoOTP.serial(fromPublicID: d.publicID) == 28_123_456)
    }

    @Test func roundTripAndPublicIDLengths() throws {
        let key = Crypto.random(16)
        for n in [0, 1, 6, 8] {
            let pid = Array(Crypto.random(n))
            let t = YubicoOTPToken(
                privateID: Crypto.random(6), usageCounter: 0x7FFF, timestamp: 0xFFFFFF,
                sessionCounter: 255, random: 0)
            let otp = try YubicoOTP.encode(t, key: key, publicID: pid)
            #expect(otp.count == 32 + 2 * n)
            let d = try YubicoOTP.decryptVerified(otp.uppercased(), key: key)
            #expect(d.token == t)
            #expect(d.publicID == Modhex.encode(pid))
        }
    }

    @Test func wrongKeyAndTampered() throws {
        var other = vectorKey
        other[0] ^= 1
        let d = try YubicoOTP.decrypt(vectorOTP, key: other)
        #expect(!d.crcOK)
        #expect(throws: YubicoOTPError.crcMismatch) { try YubicoOTP.decryptVerified(vectorOTP, key: other) }
        var chars = Array(vectorOTP)
        chars[20] = chars[20] == "c" ? "b" : "c"
        #expect(throws: YubicoOTPError.crcMismatch) { try YubicoOTP.decryptVerified(String(chars), key: vectorKey) }
        // Changing the public ID leaves the token intact.
        #expect(try YubicoOTP.decryptVerified("cccc" + vectorOTP.dropFirst(12), key: vectorKey).crcOK)
    }

    @Test func badInput() {
        #expect(throws: YubicoOTPError.self) { try YubicoOTP.decrypt("cbdefg", key: vectorKey) }
        #expect(throws: YubicoOTPError.self) { try YubicoOTP.decrypt(vectorOTP, key: [1, 2, 3]) }
        #expect(throws: YubicoOTPError.self) {
            try YubicoOTP.decrypt(String(repeating: "c", count: 50), key: vectorKey)
        }
        #expect(throws: YubicoOTPError.self) {
            try YubicoOTP.decrypt(String(repeating: "a", count: 32), key: vectorKey)
        }
    }
}

@Suite("OTP: classification and keyboard layouts")
struct OTPClassifierTests {
    @Test func yubico() {
        let c = OTPClassifier.classify(vectorOTP + "\r")
        #expect(c.kind == .yubicoOTP)
        #expect(c.publicID == "vvcccbltdbfc")
        #expect(c.serial == 28_123_456)
        #expect(c.token == String(vectorOTP.suffix(32)))
        #expect(c.layout == .us)
        let bare = OTPClassifier.classify(String(vectorOTP.suffix(32)))
        #expect(bare.kind == .yubicoOTP && bare.publicID == "" && bare.serial == nil)
        // Custom public ID: no serial.
        #expect(OTPClassifier.classify("ccccccbcgujh" + vectorOTP.suffix(32)).serial == nil)
        // Caps Lock.
        #expect(OTPClassifier.classify(vectorOTP.uppercased()).kind == .yubicoOTP)
    }

    @Test func hotp() {
        #expect(OTPClassifier.classify("123456").kind == .oathHOTP)
        #expect(OTPClassifier.classify("12345678").code == "12345678")
        let withID = OTPClassifier.classify("ubhe28123456" + "654321")
        #expect(withID.kind == .oathHOTP)
        #expect(withID.publicID == "ubhe28123456")
        #expect(withID.code == "654321")
        #expect(withID.serial == 28_123_456)
        #expect(OTPClassifier.classify("1234567").kind == .staticPassword)
        #expect(OTPClassifier.classify("correct horse").kind == .staticPassword)
        #expect(OTPClassifier.classify("").kind == .staticPassword)
    }

    @Test func layouts() {
        for layout in KeyboardLayout.allCases {
            let typed = layout.typed(vectorOTP)
            let c = OTPClassifier.classify(typed)
            #expect(c.kind == .yubicoOTP, "\(layout)")
            #expect(c.text == vectorOTP, "\(layout)")
            #expect(layout.translateToUS(typed) == vectorOTP)
        }
        // Modhex is the same on QWERTZ and AZERTY; Dvorak moves it.
        #expect(KeyboardLayout.de.typed(vectorOTP) == vectorOTP)
        #expect(KeyboardLayout.fr.typed(vectorOTP) == vectorOTP)
        let dvorak = KeyboardLayout.dvorak.typed(vectorOTP)
        #expect(dvorak != vectorOTP)
        #expect(OTPClassifier.classify(dvorak).layout == .dvorak)
        // AZERTY digits.
        let fr = OTPClassifier.classify("ubhe" + KeyboardLayout.fr.typed("28123456654321"))
        #expect(fr.kind == .oathHOTP && fr.layout == .fr && fr.code == "654321")
        #expect(KeyboardLayout.de.typed("yz") == "zy")
    }
}

@Suite("OTP: burst detector")
struct OTPBurstTests {
    private func type(_ d: inout BurstDetector, _ s: String, start: Double, gap: Double) -> BurstDetector.Event? {
        var t = start
        var last: BurstDetector.Event?
        for c in s {
            if let e = d.feed(c, at: t) { last = e }
            t += gap
        }
        return last
    }

    @Test func keyBurst() {
        var d = BurstDetector()
        #expect(type(&d, vectorOTP + "\r", start: 0, gap: 0.008) == .captured(vectorOTP))
        #expect(d.pending == "")
    }

    @Test func humanTyping() {
        var d = BurstDetector()
        #expect(type(&d, "hunter22\n", start: 0, gap: 0.15) == .rejected("2"))
        #expect(type(&d, "12\n", start: 10, gap: 0.005) == .rejected("12"))
    }

    @Test func humanThenKey() {
        var d = BurstDetector()
        _ = type(&d, "abc", start: 0, gap: 0.2)
        #expect(type(&d, vectorOTP + "\r\n", start: 1, gap: 0.01) == .captured(vectorOTP))
    }

    @Test func pauseBeforeEnter() {
        var d = BurstDetector()
        _ = type(&d, vectorOTP, start: 0, gap: 0.01)
        #expect(d.feed("\r", at: 5) == .rejected(vectorOTP))
    }

    @Test func wholeReadAtOnce() {
        var d = BurstDetector()
        #expect(d.feed(vectorOTP + "\r", at: 3) == .captured(vectorOTP))
    }
}

@Suite("OTP: NDEF")
struct OTPNDEFTests {
    @Test func uriRoundTrip() throws {
        let uri = NDEFOTP.defaultURIPrefix + vectorOTP
        let bytes = NDEFMessage.encode([.uri(uri)])
        #expect(bytes[0] == 0xD1)  // MB ME SR, TNF 1
        #expect(bytes[3] == 0x55 && bytes[4] == 0x04)  // "U", https://
        let records = try NDEFMessage.parse(bytes)
        #expect(try records[0].content() == .uri(uri))
        #expect(try NDEFOTP.extract(from: records) == vectorOTP)
    }

    @Test func prefixes() throws {
        #expect(
            try NDEFRecord(tnf: 1, type: [0x55], payload: [0x06] + Array("a@b".utf8)).content() == .uri("mailto:a@b"))
        #expect(try NDEFRecord(tnf: 1, type: [0x55], payload: [0x23] + Array("x".utf8)).content() == .uri("urn:nfc:x"))
        #expect(try NDEFRecord(tnf: 1, type: [0x55], payload: [0x00]).content() == .uri(""))
        #expect(try NDEFRecord(tnf: 1, type: [0x55], payload: [0xF0, 0x61]).content() == .uri("a"))
        #expect(NDEFRecord.uri("http://www.x").payload == [0x01, 0x78])
    }

    @Test func longRecordWithID() throws {
        let payload = [UInt8(2)] + Array("en".utf8) + Array(String(repeating: "z", count: 300).utf8)
        // MB ME IL (not SR), TNF 1, type length 1, payload length 4 bytes, ID length 2.
        let bytes: [UInt8] =
            [0xC9, 0x01] + BigEndian.bytes(UInt64(payload.count), count: 4) + [0x02, 0x54, 0x69, 0x64]
            + payload
        let r = try NDEFMessage.parse(bytes)
        #expect(r.count == 1 && r[0].id == [0x69, 0x64])
        #expect(try r[0].content() == .text(String(repeating: "z", count: 300), language: "en", utf16: false))
        #expect(NDEFMessage.encode(r) == bytes)
    }

    @Test func textUTF16() throws {
        let be: [UInt8] = [0x82] + Array("de".utf8) + [0x00, 0x4F, 0x00, 0x54, 0x00, 0x50]
        #expect(
            try NDEFRecord(tnf: 1, type: [0x54], payload: be).content() == .text("OTP", language: "de", utf16: true))
        let le: [UInt8] = [0x80, 0xFF, 0xFE, 0x4F, 0x00, 0x4B, 0x00]
        #expect(try NDEFRecord(tnf: 1, type: [0x54], payload: le).content() == .text("OK", language: "", utf16: true))
        #expect(throws: NDEFError.self) { try NDEFRecord(tnf: 1, type: [0x54], payload: [0x80, 0x00]).content() }
        #expect(throws: NDEFError.self) { try NDEFRecord(tnf: 1, type: [0x54], payload: [0x05, 0x65]).content() }
    }

    @Test func textOTPAndPattern() throws {
        let records = try NDEFMessage.parse(NDEFMessage.encode([.text(" \(vectorOTP)\n")]))
        #expect(try NDEFOTP.extract(from: records) == vectorOTP)
        let custom = [NDEFRecord.uri("https://example.com/otp?code=\(vectorOTP)&x=1")]
        #expect(try NDEFOTP.extract(from: custom, pattern: "code=([a-z]+)") == vectorOTP)
        #expect(throws: NDEFError.self) { try NDEFOTP.extract(from: custom, pattern: "code=[a-z]+") }
        #expect(throws: NDEFError.self) { try NDEFOTP.extract(from: custom, pattern: "(") }
        #expect(throws: NDEFError.self) { try NDEFOTP.extract(from: custom, pattern: "nothing=(x)") }
        #expect(throws: NDEFError.self) { try NDEFOTP.extract(from: [NDEFRecord(tnf: 2, type: [0x61], payload: [])]) }
    }

    @Test func twoRecords() throws {
        let bytes = NDEFMessage.encode([.text("hello"), .uri(NDEFOTP.defaultURIPrefix + vectorOTP)])
        #expect(bytes[0] & 0xC0 == 0x80)
        let r = try NDEFMessage.parse(bytes)
        #expect(r.count == 2)
    }

    @Test func malformed() {
        let good = NDEFMessage.encode([.uri(NDEFOTP.defaultURIPrefix + vectorOTP)])
        let cases: [[UInt8]] = [
            [],
            [0xD1],
            Array(good.dropLast()),  // truncated payload
            good + [0x00],  // trailing byte
            [good[0] & ~0x80] + good.dropFirst(),  // no MB
            [good[0] & ~0x40] + good.dropFirst(),  // no ME, nothing follows
            [0xF1, 0x01, 0x01, 0x55, 0x00],  // chunked
            [0xD7, 0x00, 0x00],  // TNF 7
            [0xD0, 0x01, 0x00, 0x55],  // empty record with a type
            [0xD9, 0x01, 0x01],  // ID length missing
            [0xC1, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x55],  // huge long payload length
            [0xD1, 0xFF, 0x00],  // type runs past the end
        ]
        for c in cases {
            #expect(throws: NDEFError.self, "\(c.hex)") { try NDEFMessage.parse(c) }
        }
        // Random bytes never crash.
        for _ in 0..<2000 {
            let n = Int.random(in: 0..<40)
            _ = try? NDEFMessage.parse((0..<n).map { _ in UInt8.random(in: 0...255) })
        }
        #expect(throws: NDEFError.self) { try NDEFRecord(tnf: 1, type: [0x55], payload: []).content() }
        #expect(throws: NDEFError.self) { try NDEFRecord(tnf: 1, type: [0x55], payload: [0x04, 0xFF]).content() }
    }

    @Test func capabilityContainer() throws {
        let cc: [UInt8] = [0x00, 0x0F, 0x20, 0x00, 0x3B, 0x00, 0x34, 0x04, 0x06, 0xE1, 0x04, 0x00, 0xFF, 0x00, 0xFF]
        let p = try NDEFSession.CapabilityContainer(parsing: cc)
        #expect(p.ndefFileID == [0xE1, 0x04] && p.maxReadLength == 0x3B && p.ndefMaxSize == 0xFF)
        #expect(throws: NDEFError.self) { try NDEFSession.CapabilityContainer(parsing: Array(cc.prefix(10))) }
        var noFile = cc
        noFile[7] = 0x05
        #expect(throws: NDEFError.self) { try NDEFSession.CapabilityContainer(parsing: noFile) }
    }
}

// Vectors: yubikey-manager's `HmacSha1SlotConfiguration(key).get_config(access_code)` (yubikit 5.x).
private func hexBytes(_ text: String) -> [UInt8] { (try? Hex.decode(text)) ?? [] }

@Suite("OTP: slot configuration")
struct OTPSlotConfigurationTests {
    @Test func challengeResponseMatchesYubikeyManager() throws {
        let twenty = hexBytes("303132333435363738393a3b3c3d3e3f40414243")
        #expect(
            try OTPSlotConfiguration.challengeResponse(key: twenty).bytes
                == hexBytes(
                    "00000000000000000000000000000000404142430000303132333435363738393a3b3c3d3e3f0000000000000024402600000921"
                ))
        let five = hexBytes("0102030405")
        #expect(
            try OTPSlotConfiguration.challengeResponse(key: five, requireTouch: true).bytes
                == hexBytes(
                    "00000000000000000000000000000000000000000000010203040500000000000000000000000000000000000024402e0000c51d"
                ))
        let code = hexBytes("a1a2a3a4a5a6")
        #expect(
            try OTPSlotConfiguration.challengeResponse(key: five, requireTouch: true, accessCode: code).bytes
                == hexBytes(
                    "0000000000000000000000000000000000000000000001020304050000000000000000000000a1a2a3a4a5a60024402e000052e7"
                ))
    }

    @Test func parsesBackAndChecksTheCRC() throws {
        let key = hexBytes("303132333435363738393a3b3c3d3e3f40414243")
        let bytes = try OTPSlotConfiguration.challengeResponse(key: key, requireTouch: true).bytes
        #expect(bytes.count == OTPSlotConfiguration.size)
        #expect(OTPSlotConfiguration.crc(bytes) == OTPSlotConfiguration.crcResidual)
        let parsed = try #require(OTPSlotConfiguration(bytes: bytes))
        #expect(parsed.isChallengeResponse && parsed.isHMACChallengeResponse && parsed.requiresTouch)
        #expect(parsed.hmacKey == key)
        #expect(!parsed.hasAccessCode)
        #expect(parsed.bytes == bytes)
        var broken = bytes
        broken[30] ^= 0x01
        #expect(OTPSlotConfiguration(bytes: broken) == nil)
        #expect(OTPSlotConfiguration(bytes: Array(bytes.dropLast())) == nil)
        let noTouch = try #require(
            OTPSlotConfiguration(bytes: try OTPSlotConfiguration.challengeResponse(key: key).bytes))
        #expect(noTouch.isHMACChallengeResponse && !noTouch.requiresTouch)
    }

    @Test func keySizes() throws {
        #expect(throws: OTPError.invalidKey(0)) { try OTPSlotConfiguration.challengeResponse(key: []) }
        #expect(throws: OTPError.invalidKey(21)) {
            try OTPSlotConfiguration.challengeResponse(key: [UInt8](repeating: 7, count: 21))
        }
        #expect(throws: OTPError.invalidKey(64)) {
            try OTPSlotConfiguration.challengeResponse(key: [UInt8](repeating: 7, count: 64))
        }
        #expect(throws: OTPError.invalidAccessCode) {
            try OTPSlotConfiguration.challengeResponse(key: [1], accessCode: [1, 2, 3])
        }
        // Longer than a SHA-1 block: hashed first, as HMAC itself does, so the response is the same.
        let long = [UInt8](repeating: 0x5A, count: 65)
        let c = try OTPSlotConfiguration.challengeResponse(key: long)
        #expect(c.hmacKey == Crypto.digest(.sha1, long))
        #expect(Crypto.hmac(.sha1, key: c.hmacKey, data: [1, 2, 3]) == Crypto.hmac(.sha1, key: long, data: [1, 2, 3]))
        // A short key is padded with zeros, which HMAC does too.
        let short = try OTPSlotConfiguration.challengeResponse(key: [0xAB])
        #expect(Crypto.hmac(.sha1, key: short.hmacKey, data: [9]) == Crypto.hmac(.sha1, key: [0xAB], data: [9]))
    }

    @Test func challengePadding() {
        let endsInZero: [UInt8] = [1, 2, 0]
        let padded = OTPSlotConfiguration.paddedHMACChallenge(endsInZero)
        #expect(padded.count == 64 && padded.suffix(61).allSatisfy { $0 == 1 })
        #expect(OTPSlotConfiguration.strippedHMACChallenge(padded) == endsInZero)
        let other: [UInt8] = [0xFF, 0x10]
        let padded2 = OTPSlotConfiguration.paddedHMACChallenge(other)
        #expect(padded2.suffix(62).allSatisfy { $0 == 0 })
        #expect(OTPSlotConfiguration.strippedHMACChallenge(padded2) == other)
        let full = [UInt8](0..<64)
        #expect(OTPSlotConfiguration.paddedHMACChallenge(full) == full)
    }
}

/// A scripted card that takes `delay` seconds to answer each command (a slot waiting for a touch).
private final class SlowConnection: SmartCardConnection {
    let inner: ScriptedConnection
    let delay: Double
    var atr: [UInt8] { inner.atr }
    var name: String { inner.name }

    init(_ inner: ScriptedConnection, delay: Double) {
        self.inner = inner
        self.delay = delay
    }

    func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
        return try await inner.transmit(command)
    }

    func close() async { await inner.close() }
}

private final class CallCounter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

@Suite("OTP: session")
struct OTPSessionTests {
    /// SELECT with Le 00 (it answers the status).
    private static let select = ((try? APDU(ins: 0xA4, p1: 0x04, data: AID.otp, le: 256).encoded()) ?? []).hex

    /// Status 5.7.2, program sequence 3, and the touch level given.
    private static func status(_ sequence: UInt8 = 3, level: UInt16 = 0x0002) -> String {
        "050702" + Hex.encode([sequence, UInt8(level & 0xFF), UInt8(level >> 8)])
    }

    @Test func statusBits() throws {
        let s = try OTPSession.Status(bytes: hexBytes("05070209" + "0500"))
        #expect(s.version == Version(5, 7, 2) && s.programSequence == 9)
        #expect(s.isConfigured(slot: 1) && s.isTouchTriggered(slot: 1))
        #expect(!s.isConfigured(slot: 2) && !s.isTouchTriggered(slot: 2))
        let both = try OTPSession.Status(bytes: hexBytes("0507020a" + "0b00"))
        #expect(both.slot1Configured && both.slot2Configured && !both.slot1Touch && both.slot2Touch)
        #expect(throws: OTPError.self) { try OTPSession.Status(bytes: [5, 7, 2]) }
    }

    @Test func calculateSendsThePaddedChallenge() async throws {
        let response = [UInt8](repeating: 0xA5, count: 20)
        let challenge: [UInt8] = [0x01, 0x02, 0x03]
        let card = ScriptedConnection([
            (Self.select, Self.status() + "9000"),
            ("00013800" + "40" + OTPSlotConfiguration.paddedHMACChallenge(challenge).hex + "00", response.hex + "9000"),
        ])
        let session = try await OTPSession.make(connection: card)
        #expect(await session.status.slot2Configured)
        #expect(try await session.calculateHMAC(slot: 2, challenge: challenge) == response)
        #expect(card.remaining == 0)
    }

    @Test func calculateRefusesBadInputWithoutSending() async throws {
        let card = ScriptedConnection([(Self.select, Self.status() + "9000")])
        let session = try await OTPSession.make(connection: card)
        await #expect(throws: OTPError.slotEmpty(1)) { try await session.calculateHMAC(slot: 1, challenge: [1]) }
        await #expect(throws: OTPError.invalidSlot(3)) { try await session.calculateHMAC(slot: 3, challenge: [1]) }
        await #expect(throws: OTPError.challengeTooLong(65)) {
            try await session.calculateHMAC(slot: 2, challenge: [UInt8](repeating: 1, count: 65))
        }
        #expect(card.sent.count == 1)
    }

    @Test func slotWithAnotherConfigurationIsReported() async throws {
        let card = ScriptedConnection([
            (Self.select, Self.status(level: 0x0001) + "9000"),
            ("00013000" + "40" + OTPSlotConfiguration.paddedHMACChallenge([7]).hex + "00", "6985"),
        ])
        let session = try await OTPSession.make(connection: card)
        await #expect(throws: OTPError.notChallengeResponse(1)) {
            try await session.calculateHMAC(slot: 1, challenge: [7])
        }
    }

    @Test func touchNoticeComesOnlyWhenTheAnswerIsSlow() async throws {
        let response = [UInt8](repeating: 0x11, count: 20)
        let apdu = "00013800" + "40" + OTPSlotConfiguration.paddedHMACChallenge([9]).hex + "00"
        // Fast answer: the notice is cancelled and never comes, even after its delay has passed.
        let fast = CallCounter()
        let quick = try await OTPSession.make(
            connection: ScriptedConnection([
                (Self.select, Self.status() + "9000"), (apdu, response.hex + "9000"),
            ]))
        #expect(
            try await quick.calculateHMAC(slot: 2, challenge: [9], touchNoticeAfter: 0.2) { fast.add() } == response)
        try await Task.sleep(nanoseconds: 400_000_000)
        #expect(fast.value == 0)
        // Slow answer: the notice comes once.
        let slow = CallCounter()
        let card = SlowConnection(
            ScriptedConnection([
                (Self.select, Self.status() + "9000"), (apdu, response.hex + "9000"),
            ]), delay: 0.5)
        let waiting = try await OTPSession.make(connection: card)
        #expect(
            try await waiting.calculateHMAC(slot: 2, challenge: [9], touchNoticeAfter: 0.05) { slow.add() } == response)
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(slow.value == 1)
    }

    @Test func programmingChecksTheSequence() async throws {
        let key = hexBytes("0102030405")
        let config = try OTPSlotConfiguration.challengeResponse(key: key, requireTouch: true).bytes
        // A write answers the new status: Le 00.
        let write = "00010300" + "3a" + config.hex + "000000000000" + "00"
        let card = ScriptedConnection([
            (Self.select, Self.status(3, level: 0x0000) + "9000"),
            (write, Self.status(4, level: 0x0002) + "9000"),
            (write, Self.status(4, level: 0x0002) + "9000"),  // refused: the sequence did not move
        ])
        let session = try await OTPSession.make(connection: card)
        try await session.programChallengeResponse(slot: 2, key: key, requireTouch: true)
        #expect(await session.status.slot2Configured)
        await #expect(throws: OTPError.configurationRefused) {
            try await session.programChallengeResponse(slot: 2, key: key, requireTouch: true)
        }
        await #expect(throws: OTPError.invalidKey(21)) {
            try await session.programChallengeResponse(slot: 1, key: [UInt8](repeating: 1, count: 21))
        }
        #expect(card.remaining == 0 && card.sent.count == 3)
    }

    @Test func deletingTheLastSlotResetsTheSequence() async throws {
        let card = ScriptedConnection([
            (Self.select, Self.status(7, level: 0x0001) + "9000"),
            ("00010100" + "3a" + [UInt8](repeating: 0, count: 58).hex + "00", Self.status(0, level: 0x0000) + "9000"),
        ])
        let session = try await OTPSession.make(connection: card)
        try await session.deleteSlot(slot: 1)
        #expect(await !session.status.slot1Configured)
        await #expect(throws: OTPError.invalidSlot(0)) { try await session.deleteSlot(slot: 0) }
    }
}
