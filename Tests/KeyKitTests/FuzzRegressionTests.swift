@testable import KeyKit
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
        let colonName = CredentialData(name: "a:\u{301}b", issuer: nil, type: .totp, algorithm: .sha1, digits: 6,
                                       period: 30, counter: 0, secret: [1, 2, 3, 4, 5])
        #expect(OTPAuthURI.make(colonName).hasPrefix("otpauth://totp/:"))
        #expect(try OTPAuthURI.parse(OTPAuthURI.make(colonName)) == colonName)
    }

    /// FuzzMigration: the same colon in a Google Authenticator export: an account named U+0301 "x" with issuer
    /// "i" came back from its own otpauth URI as the account "i:\u{301}x".
    @Test func migrationAccountNameStartingWithACombiningMark() throws {
        func field(_ number: UInt8, _ bytes: [UInt8]) -> [UInt8] { [number << 3 | 2, UInt8(bytes.count)] + bytes }
        let account = field(1, Array("abcdefghij".utf8)) + field(2, Array("\u{301}x".utf8)) + field(3, [0x69])
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
}
