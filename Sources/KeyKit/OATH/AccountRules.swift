/// A field of a new OATH account.
public enum AccountField: String, Sendable, CaseIterable {
    case name, secret, type, algorithm, digits, period, counter
}

/// The rules for a new OATH account, one set for every way one is given: an `otpauth://` URI, the TUI's add
/// form and the options of `oath add`. Each field's reader takes the text as given and returns nil when it
/// breaks the rule; `requirement` says what the rule is.
public enum AccountRules {
    public static let maxPeriod = 3600

    /// `totp` or `hotp`, in any case.
    public static func type(_ text: String) -> OATHType? {
        OATHType.allCases.first { $0.description == text.lowercased() }
    }

    /// SHA1, SHA256 or SHA512, in any case.
    public static func algorithm(_ text: String) -> HashAlgorithm? {
        HashAlgorithm(rawValue: text.uppercased())
    }

    public static func digits(_ text: String) -> Int? {
        decimal(text).flatMap { (6...8).contains($0) ? Int($0) : nil }
    }

    /// Seconds, 1 to `maxPeriod`.
    public static func period(_ text: String) -> Int? {
        decimal(text).flatMap { (1...UInt64(maxPeriod)).contains($0) ? Int($0) : nil }
    }

    public static func counter(_ text: String) -> UInt32? {
        decimal(text).flatMap { $0 <= UInt64(UInt32.max) ? UInt32($0) : nil }
    }

    /// What a field must be, to follow its name in a message.
    public static func requirement(_ field: AccountField) -> String {
        switch field {
        case .name: return "must not be empty"
        case .secret: return "must be Base32 (letters A-Z and digits 2-7)"
        case .type: return "must be totp or hotp"
        case .algorithm: return "must be SHA1, SHA256 or SHA512"
        case .digits: return "must be 6, 7 or 8"
        case .period: return "must be a whole number of seconds from 1 to \(maxPeriod)"
        case .counter: return "must be a whole number from 0 to \(UInt32.max)"
        }
    }

    /// "digits must be 6, 7 or 8, not "9"".
    public static func problem(_ field: AccountField, _ text: String) -> String {
        "\(field.rawValue) \(requirement(field)), not \"\(text)\""
    }

    /// A run of ASCII digits as a number; nil for anything else, or past UInt64.
    static func decimal(_ text: String) -> UInt64? {
        guard !text.isEmpty else { return nil }
        var n: UInt64 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            n = s
        }
        return n
    }
}

/// A new account's fields as typed (the TUI's add form, `oath add --name ...`), checked by `AccountRules`.
public struct AccountFields: Sendable {
    public var name: String
    public var issuer: String?
    /// Base32, as typed (spaces and lower case allowed, as `Base32.decode` takes them).
    public var secret: String
    public var type = "totp"
    public var algorithm = "SHA1"
    public var digits = "6"
    public var period = "30"
    public var counter = "0"
    public var touch = false

    public init(name: String, issuer: String?, secret: String) {
        self.name = name
        self.issuer = issuer
        self.secret = secret
    }

    /// The account, or the first rule a field breaks (`OATHError.invalidCredential`). Name and issuer are
    /// taken without the spaces around them; the counter counts for HOTP only, the period for TOTP only.
    public func credential() throws(OATHError) -> CredentialData {
        let name = name.trimmingSpaces
        guard !name.isEmpty else { throw .invalidCredential("the account name \(AccountRules.requirement(.name))") }
        guard !secret.isEmpty else { throw .invalidCredential("the secret is empty") }
        let secretBytes = try Base32.decode(secret)
        guard let type = AccountRules.type(type) else { throw .invalidCredential(AccountRules.problem(.type, type)) }
        guard let algorithm = AccountRules.algorithm(algorithm) else {
            throw .invalidCredential(AccountRules.problem(.algorithm, algorithm))
        }
        guard let digits = AccountRules.digits(digits.trimmingSpaces) else {
            throw .invalidCredential(AccountRules.problem(.digits, digits))
        }
        guard let period = AccountRules.period(period.trimmingSpaces) else {
            throw .invalidCredential(AccountRules.problem(.period, period))
        }
        guard let counter = AccountRules.counter(counter.trimmingSpaces) else {
            throw .invalidCredential(AccountRules.problem(.counter, counter))
        }
        let issuer = issuer?.trimmingSpaces
        let data = CredentialData(name: name, issuer: issuer, type: type, algorithm: algorithm, digits: digits,
                                  period: type == .totp ? period : CredentialData.defaultPeriod,
                                  counter: type == .hotp ? counter : 0, secret: secretBytes, touch: touch)
        try data.id.validate()
        return data
    }
}

extension CredentialData {
    /// The first thing about this account a key with firmware `version` cannot store (touch, SHA-512).
    public func unsupportedFeature(on version: Version) -> OATHFeature? {
        if touch, !OATHFeature.touch.isSupported(by: version) { return .touch }
        if algorithm == .sha512, !OATHFeature.sha512.isSupported(by: version) { return .sha512 }
        return nil
    }
}

extension OTPAuthURI {
    /// The accounts a URI carries: one from `otpauth://`, or every account of an `otpauth-migration://` export.
    public static func accounts(in uri: String) throws(OATHError) -> [CredentialData] {
        if uri.trimmingWhitespace.lowercased().hasPrefix("otpauth-migration:") { return try MigrationImport.parse(uri) }
        return [try parse(uri)]
    }
}
