import KeyKit
import Testing

/// The one set of rules for a new OATH account (`AccountRules`, `AccountFields`), which the otpauth:// parser,
/// the TUI's add form and `oath add` all use.
@Suite struct AccountRulesTests {
    @Test func fieldReadersTakeWhatTheRuleAllowsAndNothingElse() {
        #expect(
            AccountRules.type("TOTP") == .totp && AccountRules.type("hotp") == .hotp && AccountRules.type("otp") == nil)
        #expect(AccountRules.algorithm("sha256") == .sha256 && AccountRules.algorithm("SHA512") == .sha512)
        #expect(AccountRules.algorithm("SHA-256") == nil && AccountRules.algorithm("MD5") == nil)
        #expect([5, 6, 7, 8, 9].map { AccountRules.digits(String($0)) } == [nil, 6, 7, 8, nil])
        #expect(AccountRules.digits("+6") == nil && AccountRules.digits("") == nil && AccountRules.digits("6 ") == nil)
        #expect(AccountRules.period("0") == nil && AccountRules.period("1") == 1 && AccountRules.period("3600") == 3600)
        #expect(AccountRules.period("3601") == nil && AccountRules.period("-30") == nil)
        #expect(AccountRules.counter("4294967295") == UInt32.max && AccountRules.counter("4294967296") == nil)
        #expect(AccountRules.counter("99999999999999999999999") == nil)
    }

    static func fields(_ change: (inout AccountFields) -> Void = { _ in }) -> AccountFields {
        var f = AccountFields(name: "  alice@example.com ", issuer: " Example ", secret: "JBSW Y3DP EHPK 3PXP")
        change(&f)
        return f
    }

    @Test func goodFieldsMakeTheAccountTrimmed() throws {
        let data = try Self.fields {
            $0.type = "HOTP"; $0.counter = "7"; $0.period = "60"
        }.credential()
        #expect(data.name == "alice@example.com" && data.issuer == "Example")
        #expect(data.secret == Array("Hello!\u{DE}\u{AD}\u{BE}\u{EF}".unicodeScalars.map { UInt8($0.value) }))
        // The counter counts for HOTP only, the period for TOTP only.
        #expect(data.type == .hotp && data.counter == 7 && data.period == 30)
        let totp = try Self.fields {
            $0.counter = "7"; $0.period = "60"
        }.credential()
        #expect(totp.counter == 0 && totp.period == 60)
        #expect(try Self.fields { $0.issuer = "  " }.credential().issuer == nil)
    }

    @Test(arguments: [
        (AccountField.digits, "9", "digits must be 6, 7 or 8, not \"9\""),
        (.period, "0", "period must be a whole number of seconds from 1 to 3600, not \"0\""),
        (.counter, "-1", "counter must be a whole number from 0 to 4294967295, not \"-1\""),
        (.algorithm, "MD5", "algorithm must be SHA1, SHA256 or SHA512, not \"MD5\""),
        (.type, "motp", "type must be totp or hotp, not \"motp\""),
    ])
    func eachBrokenRuleIsNamedTheSameByFieldsAndByURI(field: AccountField, value: String, message: String) {
        var fields = Self.fields()
        switch field {
        case .digits: fields.digits = value
        case .period: fields.period = value
        case .counter: fields.counter = value; fields.type = "hotp"
        case .algorithm: fields.algorithm = value
        case .type: fields.type = value
        case .name, .secret: break
        }
        #expect(throws: OATHError.invalidCredential(.field(field, value))) { try fields.credential() }
        let uri =
            field == .type
            ? "otpauth://\(value)/x?secret=JBSWY3DPEHPK3PXP"
            : "otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&\(field.rawValue)=\(value)"
        #expect(throws: OATHError.invalidURI(.account(.field(field, value)))) { try OTPAuthURI.parse(uri) }
    }

    @Test func emptyNameOrSecretAndBadBase32AreRefused() {
        #expect(throws: OATHError.invalidCredential(.emptyName)) {
            try Self.fields { $0.name = "   " }.credential()
        }
        #expect(throws: OATHError.invalidCredential(.emptySecret)) { try Self.fields { $0.secret = "" }.credential() }
        #expect(throws: OATHError.self) { try Self.fields { $0.secret = "not base32 !" }.credential() }
    }

    @Test func anIDTooLongForTheKeyIsRefused() {
        #expect(throws: OATHError.self) { try Self.fields { $0.name = String(repeating: "n", count: 60) }.credential() }
        #expect(throws: Never.self) { try Self.fields { $0.name = String(repeating: "n", count: 54) }.credential() }
    }

    @Test func whatAnOlderKeyCannotStore() throws {
        let touch = try Self.fields { $0.touch = true }.credential()
        let sha512 = try Self.fields { $0.algorithm = "sha512" }.credential()
        #expect(touch.unsupportedFeature(on: Version(4, 2, 3)) == .touch)
        #expect(touch.unsupportedFeature(on: Version(4, 2, 4)) == nil)
        #expect(sha512.unsupportedFeature(on: Version(4, 3, 0)) == .sha512)
        #expect(sha512.unsupportedFeature(on: Version(5, 7, 2)) == nil)
    }

    @Test func aURIOrAnExportGivesItsAccounts() throws {
        #expect(
            try OTPAuthURI.accounts(in: " otpauth://totp/Ex:bob?secret=JBSWY3DPEHPK3PXP ").map(\.id.string) == [
                "Ex:bob"
            ])
        #expect(throws: OATHError.self) { try OTPAuthURI.accounts(in: "otpauth-migration://offline?data=") }
    }
}
