/// A field of a new OATH account.
public enum AccountField: String, Sendable, CaseIterable {
    case name, secret, type, algorithm, digits, period, counter
}

/// The rules for a new OATH account, one set for every way one is given: an `otpauth://` URI, the TUI's add
/// form and the options of `oath add`. Each field's reader takes the text as given and returns nil when it
/// breaks the rule (`AccountProblem.field`).
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
        guard !name.isEmpty else { throw .invalidCredential(.emptyName) }
        guard !secret.isEmpty else { throw .invalidCredential(.emptySecret) }
        let secretBytes = try Base32.decode(secret)
        guard let type = AccountRules.type(type) else { throw .invalidCredential(.field(.type, type)) }
        guard let algorithm = AccountRules.algorithm(algorithm) else {
            throw .invalidCredential(.field(.algorithm, algorithm))
        }
        guard let digits = AccountRules.digits(digits.trimmingSpaces) else {
            throw .invalidCredential(.field(.digits, digits))
        }
        guard let period = AccountRules.period(period.trimmingSpaces) else {
            throw .invalidCredential(.field(.period, period))
        }
        guard let counter = AccountRules.counter(counter.trimmingSpaces) else {
            throw .invalidCredential(.field(.counter, counter))
        }
        let issuer = issuer?.trimmingSpaces
        let data = CredentialData(
            name: name, issuer: issuer, type: type, algorithm: algorithm, digits: digits,
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

/// What is wrong with a new account's fields (facts; the words are the interface's).
public enum AccountProblem: Sendable, Equatable {
    case emptyName
    case emptySecret
    /// The field's text breaks its rule (`AccountRules`).
    case field(AccountField, String)
    /// A character of the secret (1-based `position`) is not Base32.
    case secretCharacter(String, position: Int)
    /// "=" padding at `position` with Base32 characters after it.
    case secretPaddingEarly(position: Int)
    /// No whole number of bytes is `count` Base32 characters (1, 3 or 6 more than a multiple of 8).
    case secretLength(Int)
    /// `given` "=" where `count` characters need `needed`.
    case secretPaddingCount(given: Int, count: Int, needed: Int)
    /// The ID (`[period/][issuer:]name`) has `bytes` bytes, more than the key's `maximum`.
    case idTooLong(id: String, bytes: Int, maximum: Int)
    /// Renaming to the ID of another account on the key.
    case nameTaken(String)
}

/// What is wrong with an `otpauth://` or `otpauth-migration://` URI (facts; the words are the interface's).
public enum URIProblem: Sendable, Equatable {
    case empty
    /// The text (its first 40 characters) has no scheme.
    case noScheme(String)
    case noSlashes(scheme: String)
    /// An `otpauth-migration://` export given where one `otpauth://` URI was expected.
    case migrationExport
    case scheme(String, expected: String)
    case missingType
    case missingLabel(type: String)
    case labelWithoutName(String)
    case missingSecret
    /// A "%" in `part` not followed by two hex digits (`text`: the "%" and what follows it).
    case percentEncoding(URIPart, String)
    case notUTF8(URIPart)
    case parameterTwice(String)
    /// A field of the account the URI describes breaks its rule, or its secret is not Base32.
    case account(AccountProblem)
    /// A Google Authenticator export that cannot be decoded.
    case export(ExportProblem)
}

/// What is wrong with a Google Authenticator export (`otpauth-migration://offline?data=...`).
/// `account` numbers count from 1; `shown` is an account as "issuer:name".
public enum ExportProblem: Equatable, Sendable {
    case host(String)
    case path(String)
    case missingData
    case noAccounts
    case nameNotUTF8(account: Int)
    case issuerNotUTF8(account: Int)
    /// `label`: the name field as it came (an issuer and a colon, say), empty when it was empty.
    case noName(account: Int, label: String)
    case md5(shown: String)
    case algorithm(shown: String, UInt64)
    case digits(shown: String, UInt64)
    case type(shown: String, UInt64)
    case counter(shown: String, Int64)
    case emptySecret(shown: String)
    /// The `data` parameter's base64.
    case base64Character(String, position: Int)
    case base64PaddingEarly
    case dataEmpty
    case base64Length(Int)
    case base64Padding(given: Int, count: Int, needed: Int)
    /// The protocol buffer inside, in the export's own message (`account` nil) or an account's. Field and wire
    /// type names are the format's own.
    case truncated(account: Int?, reading: String, at: Int)
    case varintTooLong(account: Int?, at: Int)
    case fieldNumber(account: Int?, UInt64, at: Int)
    case wireType(account: Int?, field: UInt64, UInt8, at: Int)
    case fieldType(account: Int?, field: String, found: String, expected: String)
    case group(account: Int?, UInt8)
}

/// Where in a URI a percent-encoded problem is.
public enum URIPart: Sendable, Equatable {
    case label
    case parameterName
    case parameter(String)
}
