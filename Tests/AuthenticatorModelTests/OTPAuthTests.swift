import AuthenticatorModel
import Foundation
@testable import KeyKit
import Testing

// The otpauth:// and otpauth-migration:// parsers and Base32 (KeyKit), with what the user is told of each
// problem (ErrorExplanation, in English): these tests live with the words.

// MARK: - Helpers

private let english = StringTables.load(language: "en")

/// What the user is told of an `invalidURI` or `invalidCredential` error, or nil when `body` succeeds.
private func failure<T>(_ body: () throws(OATHError) -> T) -> String? {
    do {
        _ = try body()
        return nil
    } catch {
        switch error {
        case .invalidURI, .invalidCredential: return english.text(ErrorExplanation(error).text)
        default: return "unexpected error: \(error)"
        }
    }
}

private func base32Error(_ text: String) -> String? { failure { () throws(OATHError) in try Base32.decode(text) } }
private func uriError(_ uri: String) -> String? { failure { () throws(OATHError) in try OTPAuthURI.parse(uri) } }
private func migrationError(_ uri: String) -> String? {
    failure { () throws(OATHError) in try MigrationImport.parse(uri) }
}
private func payloadError(_ bytes: [UInt8]) -> String? {
    failure { () throws(OATHError) in try MigrationImport.parsePayload(bytes) }
}

/// What the Key URI Format's example secret, JBSWY3DPEHPK3PXP, decodes to.
private let helloSecret: [UInt8] = Array("Hello!".utf8) + [0xDE, 0xAD, 0xBE, 0xEF]

// MARK: - Base32

@Suite struct OTPAuthBase32Tests {
    /// RFC 4648 section 10.
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "MY======"), ("fo", "MZXQ===="), ("foo", "MZXW6==="), ("foob", "MZXW6YQ="),
        ("fooba", "MZXW6YTB"), ("foobar", "MZXW6YTBOI======"),
    ]

    @Test(arguments: vectors) func rfc4648Vectors(plain: String, encoded: String) throws {
        let bytes = Array(plain.utf8)
        #expect(Base32.encode(bytes, padding: true) == encoded)
        let unpadded = String(encoded.prefix(while: { $0 != "=" }))
        #expect(Base32.encode(bytes) == unpadded)
        if plain.isEmpty {
            // An empty secret is never useful: decoding refuses it.
            #expect(base32Error(encoded)?.contains("empty") == true)
        } else {
            #expect(try Base32.decode(encoded) == bytes)
            #expect(try Base32.decode(unpadded) == bytes)
            #expect(try Base32.decode(encoded.lowercased()) == bytes)
        }
    }

    @Test func lenientInput() throws {
        #expect(try Base32.decode("jbsw y3dp ehpk 3pxp") == helloSecret)
        #expect(try Base32.decode("JBSWY3DPEHPK3PXP") == helloSecret)
        #expect(try Base32.decode("\tJBSW Y3DP\tEHPK 3PXP ") == helloSecret)
        #expect(try Base32.decode("MZXW6YQ") == Array("foob".utf8))
        #expect(try Base32.decode("MZXW 6YQ=") == Array("foob".utf8))
        #expect(try Base32.decode("MZXQ = = = =") == Array("fo".utf8))
    }

    @Test func nonZeroTrailingBitsAreAccepted() throws {
        // "MY" is the canonical "f"; "MZ" has a 1 in the unused low bits.
        #expect(try Base32.decode("MZ") == Array("f".utf8))
        #expect(try Base32.decode("MZXW6YR") == Array("foob".utf8))
    }

    @Test func invalidCharacters() {
        #expect(base32Error("MZ1W6YTB")?.contains("\"1\" at position 3") == true)
        #expect(base32Error("MZXW6YT0")?.contains("\"0\" at position 8") == true)
        #expect(base32Error("MZXW-6YTB")?.contains("\"-\" at position 5") == true)
        #expect(base32Error("MZ XW 6YT!")?.contains("\"!\" at position 10") == true)
        #expect(base32Error("MZXWé")?.contains("\"é\" at position 5") == true)
        #expect(base32Error("MZXW\n6YTB")?.contains("not a Base32 character") == true)
    }

    @Test(arguments: ["M", "MZX", "MZXW6Y", "MZXW6YTBO", "MZXW6YTBOIM"])
    func impossibleLengths(text: String) {
        #expect(base32Error(text)?.contains("can't be 1, 3 or 6 characters more than a multiple of 8") == true)
    }

    @Test func badPadding() {
        #expect(base32Error("MY=Y")?.contains("padding (\"=\") at position 3") == true)
        #expect(base32Error("MZXW6YQ=MZXW6YQ=")?.contains("padding (\"=\") at position 8") == true)
        #expect(base32Error("MY==")?.contains("ends in 2 \"=\" but 2 Base32 characters need 6") == true)
        #expect(base32Error("MZXW6YTB=")?.contains("need none") == true)
    }

    @Test func emptySecrets() {
        #expect(base32Error("")?.contains("the secret is empty") == true)
        #expect(base32Error("   ")?.contains("the secret is empty") == true)
        #expect(base32Error("========")?.contains("the secret is empty") == true)
    }

    @Test func roundTripsEveryLength() throws {
        for count in 1...40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(try Base32.decode(Base32.encode(bytes)) == bytes)
            #expect(try Base32.decode(Base32.encode(bytes, padding: true)) == bytes)
            #expect(Base32.encode(bytes, padding: true).count % 8 == 0)
        }
    }
}

// MARK: - otpauth://

@Suite struct OTPAuthURITests {
    @Test func keyURIFormatExample() throws {
        let uri = "otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example"
        let data = try OTPAuthURI.parse(uri)
        #expect(data.name == "alice@google.com")
        #expect(data.issuer == "Example")
        #expect(data.type == .totp)
        #expect(data.algorithm == .sha1)
        #expect(data.digits == 6)
        #expect(data.period == 30)
        #expect(data.counter == 0)
        #expect(data.secret == helloSecret)
        #expect(data.touch == false)
        #expect(data.id.string == "Example:alice@google.com")
    }

    @Test func percentEncodedLabels() throws {
        let a = try OTPAuthURI.parse(
            "otpauth://totp/ACME%20Co:john.doe%40email.com?secret=JBSWY3DPEHPK3PXP"
                + "&issuer=ACME%20Co&algorithm=SHA1&digits=6&period=30")
        #expect(a.issuer == "ACME Co")
        #expect(a.name == "john.doe@email.com")

        // An encoded colon separates too, and spaces before the account name are dropped.
        let b = try OTPAuthURI.parse("otpauth://totp/ACME%20Co%3A%20%20john?secret=JBSWY3DPEHPK3PXP")
        #expect(b.issuer == "ACME Co")
        #expect(b.name == "john")

        let c = try OTPAuthURI.parse("otpauth://totp/Caf%C3%A9:b%C3%B8b?secret=JBSWY3DPEHPK3PXP")
        #expect(c.issuer == "Café")
        #expect(c.name == "bøb")

        // No issuer at all, and an empty issuer prefix.
        let d = try OTPAuthURI.parse("otpauth://totp/alice?secret=JBSWY3DPEHPK3PXP")
        #expect(d.issuer == nil)
        #expect(d.name == "alice")
        let e = try OTPAuthURI.parse("otpauth://totp/:alice?secret=JBSWY3DPEHPK3PXP")
        #expect(e.issuer == nil)
        #expect(e.name == "alice")

        // A label with no issuer takes the issuer parameter.
        let f = try OTPAuthURI.parse("otpauth://totp/alice?secret=JBSWY3DPEHPK3PXP&issuer=Example")
        #expect(f.issuer == "Example")
        #expect(f.name == "alice")
    }

    @Test func plusIsLiteralInTheLabelAndASpaceInValues() throws {
        let data = try OTPAuthURI.parse("otpauth://totp/A+B:c+d?secret=JBSWY3DPEHPK3PXP&issuer=ACME+Co")
        #expect(data.name == "c+d")
        #expect(data.issuer == "ACME Co")
        let plus = try OTPAuthURI.parse("otpauth://totp/A%2BB:c?secret=JBSWY3DPEHPK3PXP&issuer=A%2BB")
        #expect(plus.issuer == "A+B")
    }

    @Test func issuerParameterWinsOverTheLabel() throws {
        let data = try OTPAuthURI.parse("otpauth://totp/Old%20Name:alice?secret=JBSWY3DPEHPK3PXP&issuer=New%20Name")
        #expect(data.issuer == "New Name")
        #expect(data.name == "alice")
        // An empty issuer parameter counts as absent.
        let empty = try OTPAuthURI.parse("otpauth://totp/Label:alice?secret=JBSWY3DPEHPK3PXP&issuer=")
        #expect(empty.issuer == "Label")
    }

    @Test func hotpWithCounter() throws {
        let data = try OTPAuthURI.parse("otpauth://hotp/Example:alice?secret=JBSWY3DPEHPK3PXP&counter=42&period=60")
        #expect(data.type == .hotp)
        #expect(data.counter == 42)
        #expect(data.period == 30)  // not meaningful for HOTP
        let max = try OTPAuthURI.parse("otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=4294967295")
        #expect(max.counter == UInt32.max)
        let missing = try OTPAuthURI.parse("otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP")
        #expect(missing.counter == 0)
        // A counter on a TOTP URI is checked but not kept.
        let totp = try OTPAuthURI.parse("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&counter=5")
        #expect(totp.counter == 0)
    }

    @Test func sha512EightDigitsSixtySeconds() throws {
        let data = try OTPAuthURI.parse(
            "otpauth://totp/Big:bob?secret=jbsw%20y3dp%20ehpk%203pxp&algorithm=SHA512"
                + "&digits=8&period=60&issuer=Big")
        #expect(data.algorithm == .sha512)
        #expect(data.digits == 8)
        #expect(data.period == 60)
        #expect(data.secret == helloSecret)
        #expect(data.id.string == "60/Big:bob")
        let seven = try OTPAuthURI.parse("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&algorithm=sha256&digits=7")
        #expect(seven.algorithm == .sha256)
        #expect(seven.digits == 7)
    }

    @Test func caseWhitespaceUnknownParametersAndFragments() throws {
        let data = try OTPAuthURI.parse(
            "  OTPAuth://TOTP/Example:alice?SECRET=JBSWY3DPEHPK3PXP&image=https%3A%2F%2F"
                + "example.com%2Fa.png&image=x&color=red&Issuer=Example#frag \n")
        #expect(data.type == .totp)
        #expect(data.issuer == "Example")
        #expect(data.name == "alice")
        #expect(data.secret == helloSecret)
        // A bare unknown flag and empty pairs are fine.
        _ = try OTPAuthURI.parse("otpauth://totp/x?&secret=JBSWY3DPEHPK3PXP&&lock&")
    }

    /// Each malformed URI and a substring only its own message has.
    static let malformed: [(String, String)] = [
        ("", "the URI is empty"),
        ("totp/x?secret=JBSWY3DPEHPK3PXP", "has no scheme"),
        ("otpauth:totp/x?secret=JBSWY3DPEHPK3PXP", "expected \"//\" after \"otpauth:\""),
        ("https://totp/x?secret=JBSWY3DPEHPK3PXP", "scheme must be otpauth, not \"https\""),
        ("otpauth-migration://offline?data=CgA", "Google Authenticator export"),
        ("otpauth://motp/x?secret=JBSWY3DPEHPK3PXP", "type must be totp or hotp, not \"motp\""),
        ("otpauth:///x?secret=JBSWY3DPEHPK3PXP", "missing type"),
        ("otpauth://totp?secret=JBSWY3DPEHPK3PXP", "missing label"),
        ("otpauth://totp/?secret=JBSWY3DPEHPK3PXP", "missing label"),
        ("otpauth://totp/Issuer:?secret=JBSWY3DPEHPK3PXP", "has no account name"),
        ("otpauth://totp/Issuer:%20%20?secret=JBSWY3DPEHPK3PXP", "has no account name"),
        ("otpauth://totp/a%2?secret=JBSWY3DPEHPK3PXP", "the label has \"%2\", which"),
        ("otpauth://totp/a%zz?secret=JBSWY3DPEHPK3PXP", "the label has \"%zz\", which is not a percent-encoding"),
        ("otpauth://totp/a%FF?secret=JBSWY3DPEHPK3PXP", "the label is not valid UTF-8"),
        ("otpauth://totp/x", "missing secret"),
        ("otpauth://totp/x?issuer=Example", "missing secret"),
        ("otpauth://totp/x?secret=", "the secret is empty"),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PX1", "\"1\" at position 16"),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3P", "can't be 1, 3 or 6 characters more than a multiple of 8"),
        ("otpauth://totp/x?secret=JB%G0", "secret has \"%G0\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&secret=JBSWY3DPEHPK3PXP", "parameter \"secret\" is given twice"),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&Digits=6&digits=6", "parameter \"digits\" is given twice"),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&issuer=%E2%28", "issuer is not valid UTF-8"),
        (
            "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&algorithm=MD5",
            "algorithm must be SHA1, SHA256 or SHA512, not \"MD5\""
        ),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&algorithm=SHA-256", "not \"SHA-256\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&algorithm=", "SHA512, not \"\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=9", "digits must be 6, 7 or 8, not \"9\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=5", "digits must be 6, 7 or 8, not \"5\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=six", "digits must be 6, 7 or 8, not \"six\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=%2B6", "digits must be 6, 7 or 8, not \"+6\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=", "digits must be 6, 7 or 8, not \"\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=0", "from 1 to 3600, not \"0\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=-30", "from 1 to 3600, not \"-30\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=3601", "from 1 to 3600, not \"3601\""),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=30s", "period must be a whole number of seconds"),
        ("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=99999999999999999999999", "not \"99999999999999999999999\""),
        (
            "otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=-1",
            "counter must be a whole number from 0 to 4294967295, not \"-1\""
        ),
        ("otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=4294967296", "not \"4294967296\""),
        ("otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=1e3", "counter must be a whole number"),
    ]

    @Test(arguments: malformed) func malformedFieldsAreRejectedPrecisely(uri: String, expected: String) {
        let message = uriError(uri)
        #expect(message?.contains(expected) == true, "\(uri): \(message ?? "accepted")")
    }

    @Test func aURIsProblemIsAnInvalidURI() {
        #expect(throws: OATHError.invalidURI(.account(.field(.digits, "9")))) {
            try OTPAuthURI.parse("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=9")
        }
    }

    static let roundTrips: [CredentialData] = [
        CredentialData(name: "alice@google.com", issuer: "Example", secret: helloSecret),
        CredentialData(
            name: "john.doe@email.com", issuer: "ACME Co", type: .totp, algorithm: .sha512, digits: 8,
            period: 60, secret: Array(0...63)),
        CredentialData(
            name: "counter", issuer: nil, type: .hotp, algorithm: .sha256, digits: 7, counter: 4_294_967_295,
            secret: [1, 2, 3, 4, 5]),
        CredentialData(name: "a+b c%d&e=f?g#h/i", issuer: "Q&A + 100% / #1", secret: [0xFF]),
        CredentialData(name: "bøb 😀", issuer: "Café", secret: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        CredentialData(name: "name:with:colons", issuer: nil, secret: [9, 8, 7]),
        CredentialData(name: "name:with:colons", issuer: "Issuer:Colon", secret: [9, 8, 7]),
        CredentialData(name: "x", issuer: "Issuer:Colon", type: .hotp, secret: [9, 8, 7]),
    ]

    @Test(arguments: roundTrips) func makeThenParseRoundTrips(data: CredentialData) throws {
        let uri = OTPAuthURI.make(data)
        #expect(uri.hasPrefix("otpauth://\(data.type)/"))
        #expect(!uri.contains(" "))
        #expect(try OTPAuthURI.parse(uri) == data, "\(uri)")
    }

    @Test func makeWritesTheKeyURIFormat() {
        let data = CredentialData(name: "john.doe@email.com", issuer: "ACME Co", secret: helloSecret)
        #expect(
            OTPAuthURI.make(data) == "otpauth://totp/ACME%20Co:john.doe%40email.com?secret=JBSWY3DPEHPK3PXP"
                + "&issuer=ACME%20Co&algorithm=SHA1&digits=6&period=30")
        let hotp = CredentialData(name: "x", type: .hotp, counter: 7, secret: helloSecret)
        #expect(OTPAuthURI.make(hotp) == "otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&counter=7")
    }
}

// MARK: - otpauth-migration://

/// A tiny protobuf encoder, independent of the parser.
private enum PB {
    static func varint(_ value: UInt64) -> [UInt8] {
        var v = value
        var out = [UInt8]()
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
        return out
    }

    static func key(_ field: Int, _ wireType: Int) -> [UInt8] { varint(UInt64(field << 3 | wireType)) }
    static func int(_ field: Int, _ value: UInt64) -> [UInt8] { key(field, 0) + varint(value) }
    static func int64(_ field: Int, _ value: Int64) -> [UInt8] { int(field, UInt64(bitPattern: value)) }
    static func bytes(_ field: Int, _ value: [UInt8]) -> [UInt8] {
        key(field, 2) + varint(UInt64(value.count)) + value
    }
    static func string(_ field: Int, _ value: String) -> [UInt8] { bytes(field, Array(value.utf8)) }

    static func account(
        secret: [UInt8], name: String, issuer: String = "", algorithm: UInt64? = nil,
        digits: UInt64? = nil, type: UInt64? = nil, counter: Int64? = nil,
        extra: [UInt8] = []
    ) -> [UInt8] {
        var out = bytes(1, secret) + string(2, name)
        if !issuer.isEmpty { out += string(3, issuer) }
        if let algorithm { out += int(4, algorithm) }
        if let digits { out += int(5, digits) }
        if let type { out += int(6, type) }
        if let counter { out += int64(7, counter) }
        return out + extra
    }

    static func payload(_ accounts: [[UInt8]], header: Bool = true) -> [UInt8] {
        var out = accounts.flatMap { bytes(1, $0) }
        if header { out += int(2, 1) + int(3, 1) + int(4, 0) + int(5, 123_456_789) }
        return out
    }

    /// Standard base64 (Foundation's, not ours), with + / = percent-encoded as Google does.
    static func uri(_ payload: [UInt8]) -> String {
        let b64 = Data(payload).base64EncodedString()
        let escaped = b64.replacingOccurrences(of: "+", with: "%2B").replacingOccurrences(of: "/", with: "%2F")
            .replacingOccurrences(of: "=", with: "%3D")
        return "otpauth-migration://offline?data=" + escaped
    }
}

@Suite struct OTPAuthMigrationTests {
    static let secretA = helloSecret
    static let secretB: [UInt8] = Array(0..<20)
    static let secretC: [UInt8] = Array(repeating: 0xFB, count: 64)  // lots of "+" and "/" in base64

    static let sample: [UInt8] = PB.payload([
        PB.account(secret: secretA, name: "alice@google.com", issuer: "Example", algorithm: 1, digits: 1, type: 2),
        PB.account(secret: secretB, name: "ACME Co: john", algorithm: 2, digits: 2, type: 1, counter: 42),
        PB.account(secret: secretC, name: "Other:bob", issuer: "Different", algorithm: 3, digits: 2, type: 2),
        // Everything unspecified, plus unknown fields of every skippable wire type.
        PB.account(
            secret: [1, 2, 3], name: "plain",
            extra: PB.key(9, 0) + PB.varint(300) + PB.key(10, 1)
                + [1, 2, 3, 4, 5, 6, 7, 8] + PB.key(11, 5) + [1, 2, 3, 4] + PB.string(12, "ignored")),
        PB.account(secret: [4, 5], name: "Same:carol", issuer: "Same", algorithm: 0, digits: 0, type: 0),
    ])

    static func check(_ accounts: [CredentialData]) {
        #expect(accounts.count == 5)
        guard accounts.count == 5 else { return }
        #expect(
            accounts[0]
                == CredentialData(
                    name: "alice@google.com", issuer: "Example", type: .totp,
                    algorithm: .sha1, digits: 6, secret: secretA))
        #expect(
            accounts[1]
                == CredentialData(
                    name: "john", issuer: "ACME Co", type: .hotp, algorithm: .sha256,
                    digits: 8, counter: 42, secret: secretB))
        #expect(
            accounts[2]
                == CredentialData(
                    name: "Other:bob", issuer: "Different", type: .totp,
                    algorithm: .sha512, digits: 8, secret: secretC))
        #expect(accounts[3] == CredentialData(name: "plain", secret: [1, 2, 3]))
        #expect(accounts[4] == CredentialData(name: "carol", issuer: "Same", secret: [4, 5]))
        #expect(accounts.allSatisfy { $0.period == 30 })
    }

    @Test func parsesSeveralAccounts() throws {
        let uri = PB.uri(Self.sample)
        #expect(uri.contains("%2B") || uri.contains("%2F"))
        Self.check(try MigrationImport.parse(uri))
    }

    @Test func acceptsURLSafeUnpaddedAndUnescapedBase64() throws {
        let b64 = Data(Self.sample).base64EncodedString()
        let urlSafe = b64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        Self.check(try MigrationImport.parse("otpauth-migration://offline?data=" + urlSafe))
        // Literal + and / (a hand-pasted URI) and an upper-case scheme, with other parameters.
        Self.check(try MigrationImport.parse("OTPAUTH-MIGRATION://Offline?x=1&data=" + b64 + "&y=2"))
    }

    @Test func payloadsWithoutHeaderOrWithUnknownTopLevelFields() throws {
        let accounts = [PB.account(secret: [7], name: "z")]
        #expect(try MigrationImport.parsePayload(PB.payload(accounts, header: false)).count == 1)
        let extra = PB.payload(accounts) + PB.key(99, 5) + [0, 0, 0, 0] + PB.string(100, "future")
        #expect(try MigrationImport.parsePayload(extra).count == 1)
    }

    @Test func md5AccountsAreRejectedByName() {
        let payload = PB.payload([
            PB.account(secret: [1], name: "fine"),
            PB.account(secret: [1], name: "legacy", issuer: "OldCorp", algorithm: 4),
        ])
        #expect(migrationError(PB.uri(payload))?.contains("account \"OldCorp:legacy\" uses MD5") == true)
    }

    @Test func truncatedPayload() {
        let cut = Array(Self.sample.dropLast(3))
        #expect(migrationError(PB.uri(cut))?.contains("cut short") == true)
    }

    @Test func badBase64() {
        #expect(migrationError("otpauth-migration://offline?data=AB!D")?.contains("\"!\" at position 3") == true)
        #expect(migrationError("otpauth-migration://offline?data=ABCDE")?.contains("5 base64 characters") == true)
        #expect(migrationError("otpauth-migration://offline?data=AB%3DC")?.contains("padding") == true)
        #expect(migrationError("otpauth-migration://offline?data=ABC%3D%3D")?.contains("ends in 2") == true)
        #expect(migrationError("otpauth-migration://offline?data=")?.contains("data is empty") == true)
    }

    @Test func badURIs() {
        let data = PB.uri(Self.sample).split(separator: "?")[1]
        #expect(migrationError("otpauth://offline?\(data)")?.contains("must be otpauth-migration") == true)
        #expect(migrationError("otpauth-migration://online?\(data)")?.contains("offline") == true)
        #expect(migrationError("otpauth-migration://offline/x?\(data)")?.contains("unexpected path") == true)
        #expect(migrationError("otpauth-migration://offline")?.contains("missing data") == true)
        #expect(migrationError("otpauth-migration://offline?\(data)&\(data)")?.contains("given twice") == true)
    }

    @Test func badAccountFields() throws {
        func error(_ account: [UInt8]) -> String? { payloadError(PB.payload([account])) }
        #expect(error(PB.account(secret: [1], name: "x", algorithm: 5))?.contains("unknown algorithm (5)") == true)
        #expect(error(PB.account(secret: [1], name: "x", digits: 3))?.contains("unknown digit count (3)") == true)
        #expect(error(PB.account(secret: [1], name: "x", type: 3))?.contains("unknown type (3)") == true)
        #expect(error(PB.account(secret: [1], name: "x", type: 1, counter: -1))?.contains("counter -1") == true)
        #expect(
            error(PB.account(secret: [1], name: "x", type: 1, counter: 1 << 32))?
                .contains("counter 4294967296") == true)
        #expect(
            try MigrationImport.parsePayload(
                PB.payload([
                    PB.account(
                        secret: [1], name: "x", type: 2,
                        counter: -1)
                ]))[0].counter == 0)
        #expect(error(PB.account(secret: [], name: "x"))?.contains("\"x\" has an empty secret") == true)
        #expect(error(PB.account(secret: [1], name: ""))?.contains("account 1 has no name") == true)
        #expect(error(PB.account(secret: [1], name: "Issuer:"))?.contains("has no name (\"Issuer:\")") == true)
        #expect(error(PB.bytes(1, [1]) + PB.bytes(2, [0xC3, 0x28]))?.contains("name is not valid UTF-8") == true)
        #expect(
            error(PB.bytes(1, [1]) + PB.string(2, "x") + PB.bytes(3, [0xFF]))?
                .contains("issuer is not valid UTF-8") == true)
        #expect(payloadError([])?.contains("no accounts") == true)
        #expect(payloadError(PB.int(2, 1))?.contains("no accounts") == true)
    }

    @Test func strictWireFormat() {
        let good = PB.account(secret: [1], name: "x")
        // Wire types 3 and 4 (groups), 6 and 7 (undefined).
        for wireType in [3, 4, 6, 7] {
            #expect(
                payloadError(PB.payload([good]) + PB.key(20, wireType))?
                    .contains("unsupported wire type \(wireType)") == true)
        }
        // Field number 0.
        #expect(payloadError([0x00, 0x00])?.contains("invalid field number 0") == true)
        // A known field with the wrong wire type.
        #expect(payloadError(PB.int(1, 5))?.contains("otp_parameters as varint, not length-delimited") == true)
        #expect(payloadError(PB.payload([PB.int(1, 5)]))?.contains("secret as varint") == true)
        #expect(payloadError(PB.payload([good]) + PB.string(2, "v"))?.contains("version as length-delimited") == true)
        // Varints: 10 bytes with a final 1 is the largest; longer or overflowing ones are refused.
        let max = [UInt8](repeating: 0xFF, count: 9) + [0x01]
        #expect(payloadError(PB.payload([good]) + PB.key(2, 0) + max) == nil)
        #expect(
            payloadError(PB.payload([good]) + PB.key(2, 0) + [UInt8](repeating: 0xFF, count: 9) + [0x02])?
                .contains("longer than 64 bits") == true)
        #expect(
            payloadError(PB.payload([good]) + PB.key(2, 0) + [UInt8](repeating: 0x80, count: 10) + [0x00])?
                .contains("longer than 64 bits") == true)
        // A length that runs past the end, inside and outside an account.
        #expect(payloadError(PB.key(1, 2) + PB.varint(UInt64.max))?.contains("cut short") == true)
        #expect(payloadError(PB.bytes(1, PB.key(1, 2) + [5, 1]))?.contains("account 1 is cut short") == true)
        #expect(
            payloadError(PB.payload([good]) + PB.key(30, 1) + [1, 2, 3])?
                .contains("cut short (in a fixed64") == true)
        #expect(
            payloadError(PB.payload([good]) + PB.key(30, 5) + [1, 2, 3])?
                .contains("cut short (in a fixed32") == true)
    }

    @Test func everyPrefixAndMutationIsHandledWithoutCrashing() {
        var accepted = 0
        for length in 0...Self.sample.count {
            let prefix = Array(Self.sample.prefix(length))
            if payloadError(prefix) == nil { accepted += 1 }
            _ = migrationError(PB.uri(prefix))
        }
        // Only prefixes that end between whole fields (after at least one account) can parse.
        #expect(accepted >= 1 && accepted < 20)
        // Every byte replaced by a few values.
        for i in Self.sample.indices {
            for value: UInt8 in [0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF] {
                var mutated = Self.sample
                mutated[i] = value
                _ = payloadError(mutated)
            }
        }
    }
}
