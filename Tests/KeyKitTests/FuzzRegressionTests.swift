@testable import KeyKit
import Synchronization
import Testing

/// One test per crash the libFuzzer targets in Tests/Fuzz found (`make fuzz`); the input that crashed is in the
/// test, and in Tests/Fuzz/Corpus/<target>/regression-* so the fuzzer starts from it too.
@Suite struct FuzzRegressionTests {
    /// FuzzCBOR: `{NaN: 0, NaN: 0}` (a2 f97e00 00 f97e00 00) decoded, because NaN is not equal to itself and
    /// both keys went into the dictionary; its canonical encoding then had the same key twice and did not
    /// decode. Duplicate keys are now found by their canonical encoding too.
    @Test func cborMapWithTwoNaNKeysIsADuplicateKey() throws {
        let input: [UInt8] = [0xA2, 0xF9, 0x7E, 0x00, 0x00, 0xF9, 0x7E, 0x00, 0x00]
        #expect(throws: CBORError.duplicateKey(offset: 5)) { try CBOR.decode(input) }
        // Float64 and float16 NaN with the same value are the same key as well.
        let mixed: [UInt8] = [0xA2, 0xF9, 0x7E, 0x00, 0x01, 0xFB, 0x7F, 0xF8, 0, 0, 0, 0, 0, 0, 0x02]
        #expect(throws: CBORError.self) { try CBOR.decode(mixed) }
        // One NaN key is fine, and its canonical encoding decodes to the same encoding.
        let one = try CBOR.decode([0xA1, 0xF9, 0x7E, 0x00, 0x00])
        #expect(try CBOR.decode(one.encoded, limits: CBOR.Limits(requireCanonicalKeys: true)).encoded == one.encoded)
        // NaNs with different payloads are different keys.
        let two = try CBOR.decode([0xA2, 0xF9, 0x7E, 0x00, 0x00, 0xF9, 0x7E, 0x01, 0x00])
        #expect(try CBOR.decode(two.encoded).encoded == two.encoded)
    }

    /// FuzzOTPAuthURI: a name starting with a combining mark (U+0301) and an `issuer` parameter. `make` wrote
    /// the label `a:%CC%81x`; decoded, the colon and the mark form one character, so `parse` did not find the
    /// colon and read the whole label as the name. The label is now split at the first colon scalar.
    @Test func otpauthLabelColonFollowedByACombiningMark() throws {
        let account = try OTPAuthURI.parse("otpauth://totp/%CC%81x?secret=JBSWY3DPEHPK3PXP&issuer=a")
        #expect(account.name.unicodeScalars.elementsEqual("\u{301}x".unicodeScalars))
        #expect(account.issuer == "a")
        let again = try OTPAuthURI.parse(OTPAuthURI.make(account))
        #expect(again == account)
        #expect(again.name.unicodeScalars.elementsEqual("\u{301}x".unicodeScalars))
        // The label's own issuer prefix is found the same way.
        let labelled = try OTPAuthURI.parse("otpauth://totp/Iss:%CC%81y?secret=JBSWY3DPEHPK3PXP")
        #expect(labelled.issuer == "Iss")
        #expect(labelled.name.unicodeScalars.elementsEqual("\u{301}y".unicodeScalars))
        // A name with a colon scalar and no issuer still gets the empty prefix that keeps it whole.
        let colonName = CredentialData(
            name: "a:\u{301}b", issuer: nil, type: .totp, algorithm: .sha1, digits: 6,
            period: 30, counter: 0, secret: [1, 2, 3, 4, 5])
        #expect(OTPAuthURI.make(colonName).hasPrefix("otpauth://totp/:"))
        #expect(try OTPAuthURI.parse(OTPAuthURI.make(colonName)) == colonName)
    }

    /// FuzzOTPAuthURI (600 s run of 2026-11-29): `otpauth://totp/  ?secret=JBPXP&issuer=_`, an account named
    /// two spaces. `make` wrote its label as `_:%20%20`, and `parse` took the spaces for those after the colon:
    /// no name. A name of spaces only is now no name in a URI and in a migration export, as when typed in.
    @Test func otpauthNameOfSpacesOnly() throws {
        #expect(throws: OATHError.invalidURI(.labelWithoutName("  "))) {
            try OTPAuthURI.parse("otpauth://totp/  ?secret=JBPXP&issuer=_")
        }
        #expect(throws: OATHError.self) { try OTPAuthURI.parse("otpauth://totp/%20?secret=JBPXP") }
        // A name with spaces around it still goes both ways.
        let spaced = try OTPAuthURI.parse("otpauth://totp/%20a%20?secret=JBPXP&issuer=_")
        #expect(try OTPAuthURI.parse(OTPAuthURI.make(spaced)).name.trimmingSpaces == "a")
        func field(_ number: UInt8, _ bytes: [UInt8]) -> [UInt8] { [number << 3 | 2, UInt8(bytes.count)] + bytes }
        let account =
            field(1, Array("abcdefghij".utf8)) + field(2, Array("  ".utf8)) + field(3, [0x69])
            + [4 << 3, 1, 5 << 3, 1, 6 << 3, 2]
        #expect(throws: OATHError.self) { try MigrationImport.parsePayload(field(1, account)) }
    }

    /// FuzzMigration: the same colon in a Google Authenticator export: an account named U+0301 "x" with issuer
    /// "i" came back from its own otpauth URI as the account "i:\u{301}x".
    @Test func migrationAccountNameStartingWithACombiningMark() throws {
        func field(_ number: UInt8, _ bytes: [UInt8]) -> [UInt8] { [number << 3 | 2, UInt8(bytes.count)] + bytes }
        let account =
            field(1, Array("abcdefghij".utf8)) + field(2, Array("\u{301}x".utf8)) + field(3, [0x69])
            + [4 << 3, 1, 5 << 3, 1, 6 << 3, 2]
        let parsed = try MigrationImport.parsePayload(field(1, account))
        #expect(parsed.count == 1)
        let a = try #require(parsed.first)
        #expect(a.issuer == "i")
        #expect(a.name.unicodeScalars.elementsEqual("\u{301}x".unicodeScalars))
        #expect(try OTPAuthURI.parse(OTPAuthURI.make(a)) == a)
        // "Issuer:Account" in the name is still split at the colon scalar.
        let split = field(1, Array("abcdefghij".utf8)) + field(2, Array("Iss:\u{301}n".utf8))
        let b = try #require(try MigrationImport.parsePayload(field(1, split)).first)
        #expect(b.issuer == "Iss")
        #expect(b.name.unicodeScalars.elementsEqual("\u{301}n".unicodeScalars))
    }

    /// FuzzOATHCalculateAll: a CALCULATE ALL answer giving the GitHub account a truncated code of 0x62 = 98
    /// digits (76 05 62 06EB971C) stopped the process: formatting took 10^98 modulo 2^32, which is 0, and
    /// divided by it. A code of more than 10 digits (all a 31-bit value has) or of none is now the key's
    /// malformed answer, and formatting never divides by zero.
    @Test func oathCodeOf98DigitsIsAMalformedAnswer() async throws {
        let salt: [UInt8] = [0xBD, 0xDE, 0xC0, 0x70, 0x62, 0xD7, 0xAD, 0x0A]
        let select = TLV(0x79, [5, 7, 2]).encoded + TLV(0x71, salt).encoded
        let github = TLV(0x71, Array("GitHub:alice@example.com".utf8)).encoded
        let card = AnswersInOrder([
            select + [0x90, 0x00],
            github + TLV(0x76, [0x62, 0x06, 0xEB, 0x97, 0x1C]).encoded + [0x90, 0x00],
        ])
        let session = try await OATHSession.make(connection: card)
        await #expect(throws: SmartCardError.malformedResponse(Malformation(.oathDigits, .value("98")))) {
            _ = try await session.calculateAll(at: 1_750_004_800)
        }
        // No digits at all, in a full answer to CALCULATE, is as malformed.
        let credential = Credential(rawID: Array("GitHub:alice@example.com".utf8), type: .totp)
        #expect(throws: SmartCardError.malformedResponse(Malformation(.oathDigits, .value("0")))) {
            _ = try OATHSession.code(
                fromFull: [0] + [UInt8](repeating: 1, count: 20), credential: credential,
                time: 1_750_004_800)
        }
        // Ten digits are the whole value (10^10 modulo 2^32 made them 0737418239); more only pad it.
        #expect(OATHSession.format(value: 2_147_483_647, digits: 10, steam: false) == "2147483647")
        #expect(OATHSession.format(value: 0x8000_04D2, digits: 12, steam: false) == "000000001234")
        #expect(OATHSession.format(value: 1_284_755_224, digits: 98, steam: false).count == 98)
        #expect(OATHSession.format(value: 1_284_755_224, digits: 0, steam: false) == "0")
        // The same answer with 8 digits gives the code.
        let eight = AnswersInOrder([
            select + [0x90, 0x00],
            github + TLV(0x76, [0x08, 0x06, 0xEB, 0x97, 0x1C]).encoded + [0x90, 0x00],
        ])
        let entries = try await OATHSession.make(connection: eight).calculateAll(at: 1_750_004_800)
        #expect(entries.map(\.code?.value) == ["16102940"])
    }

    /// FuzzCTAP2PINChange: a key agreement key whose coordinates are not a point on P-256 (the fuzzer changed
    /// the virtual key's y) ended the PIN change with OpenSSL's CryptoError, which no caller maps; the CLI then
    /// said the key might have taken the new PIN, though nothing had been sent. It is now the key's malformed
    /// answer, before anything is sent.
    @Test func keyAgreementOffTheCurveIsAMalformedAnswer() async throws {
        let x: [UInt8] = try Hex.decode("d24f707f56e853691ebe51ca5fddbae4ba0c21e5dd559f50b835faacb3b35630")
        let y: [UInt8] = try Hex.decode("d5cb7f1fcf8b5e9fc697fb180ad946f335b6132cdb9be17b01e143cfef3b8b04")
        let info: CBOR = [
            1: ["FIDO_2_0", "FIDO_2_1"], 3: .bytes([UInt8](repeating: 0x80, count: 16)),
            4: ["clientPin": true], 6: [2, 1],
        ]
        let keyAgreement: CBOR = [1: [1: 2, 3: -25, -1: 1, -2: .bytes(x), -3: .bytes(y)]]
        let key = CTAPAnswersInOrder([[0x00] + info.encoded, [0x00] + keyAgreement.encoded])
        let session = try await CTAP2Session.make(connection: key)
        await #expect(throws: FIDOSessionError.malformed(Malformation(.keyAgreement, .notOnCurve))) {
            try await session.changePIN(old: "123456", new: "654321")
        }
        #expect(key.requests.map(\.first) == [0x04, 0x06], "getInfo and getKeyAgreement, no changePIN")
        #expect(throws: FIDOSessionError.self) { _ = try PINUVAuthProtocol.publicKey(fromCOSE: keyAgreement[1]!) }
    }
}

/// A card that gives its answers in order, whatever it is sent (a replay of a fuzzer's input).
private final class AnswersInOrder: SmartCardConnection {
    let atr: [UInt8] = []
    let name = "answers in order"
    private let answers: Mutex<[[UInt8]]>

    init(_ answers: [[UInt8]]) { self.answers = Mutex(answers) }

    func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        guard let next = answers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
            throw SmartCardError.cardRemoved
        }
        return next
    }

    func close() async {}
}

/// A FIDO key that gives its CTAP answers in order, and keeps the requests.
private final class CTAPAnswersInOrder: FIDOConnection {
    let name = "CTAP answers in order"
    private let state: Mutex<(answers: [[UInt8]], requests: [[UInt8]])>

    init(_ answers: [[UInt8]]) { state = Mutex((answers, [])) }

    var requests: [[UInt8]] { state.withLock { $0.requests } }

    func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        try state.withLock { s in
            s.requests.append(request)
            guard !s.answers.isEmpty else { throw FIDOTransportError.deviceGone }
            return s.answers.removeFirst()
        }
    }

    func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] { [0x6D, 0x00] }
    func cancel() async {}
    func close() async {}
}
