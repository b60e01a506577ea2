/// `otpauth://` URIs, as in Google Authenticator's Key URI Format:
/// `otpauth://TYPE/LABEL?secret=SECRET&issuer=ISSUER&algorithm=SHA1&digits=6&period=30&counter=0`.
///
/// Parsing rules:
/// - Whitespace around the URI is ignored; the scheme (`otpauth`) and the type (`totp`, `hotp`) are
///   case-insensitive, as are parameter names. A `#fragment` is dropped.
/// - The label is percent-decoded; in the label a `+` is a literal plus (RFC 3986: only `%20` is a space
///   in a path).
/// - In parameter values a `+` is a **space**, as in HTML form encoding (`application/x-www-form-urlencoded`):
///   many QR generators write issuers such as `ACME+Co` that way, and Python's `parse_qs` (ykman) reads
///   them so. A literal plus must be written `%2B`. This only matters for the issuer: a secret, algorithm
///   or number with a `+` in it is invalid either way.
/// - The label is `Account`, `Issuer:Account` or `Issuer: Account` (the colon may be `%3A`); it is split at
///   the first colon and spaces before the account name are dropped. An empty issuer before the colon
///   (`:Account`) means no issuer.
/// - **Issuer conflict:** the format says the label's issuer and the `issuer` parameter should be equal.
///   When both are given and differ, the `issuer` parameter wins (as in ykman) and the account name is
///   the label's part after the colon. An empty `issuer=` counts as absent.
/// - `secret` is required (Base32, see `Base32`). `algorithm` is SHA1, SHA256 or SHA512 (any case);
///   `digits` is 6, 7 or 8; `period` is 1...3600 seconds; `counter` is 0...4294967295. Missing ones take
///   the defaults (SHA1, 6, 30, 0). `period` and `counter` are checked whatever the type, but only the one
///   that applies is kept: an HOTP credential gets the default period, a TOTP one counter 0.
/// - Unknown parameters (`image`, `color`, ...) are ignored, even if repeated; a known parameter given twice
///   is an error.
/// - The ID's length is not checked here: `CredentialID.validate()` does that when the account is added.
///
/// Errors are `OATHError.invalidURI` with a message naming the field and the offending value.
public enum OTPAuthURI {
    public static let maxPeriod = AccountRules.maxPeriod

    /// Parses an `otpauth://` URI. See the type's documentation for the rules.
    public static func parse(_ uri: String) throws(OATHError) -> CredentialData {
        let parts = try OTPURIParts(uri)
        let scheme = parts.scheme.lowercased()
        guard scheme == "otpauth" else {
            if scheme == "otpauth-migration" {
                throw .invalidURI(.migrationExport)
            }
            throw .invalidURI(.scheme(String(parts.scheme), expected: "otpauth"))
        }
        guard !parts.authority.isEmpty else { throw .invalidURI(.missingType) }
        guard let type = AccountRules.type(String(parts.authority)) else {
            throw .invalidURI(.account(.field(.type, String(parts.authority))))
        }

        guard let rawLabel = parts.path, !rawLabel.isEmpty else {
            throw .invalidURI(.missingLabel(type: type.description))
        }
        let label = try OTPURIParts.percentDecode(rawLabel, plusIsSpace: false, part: .label)
        var labelIssuer: String?
        var name = label
        // The colon is found among Unicode scalars, not characters: a combining mark after it would otherwise
        // hide it inside one character (":\u{301}"), and an issuer would be read as part of the name.
        if let (prefix, rest) = OTPURIParts.splitAtColon(label) {
            labelIssuer = prefix.isEmpty ? nil : prefix
            name = String(rest.drop(while: { $0 == " " }))
        }
        // A name of spaces only is no name (as for an account typed in): written back after an issuer, its spaces
        // would be read as those after the colon.
        guard !name.allSatisfy({ $0 == " " }) else { throw .invalidURI(.labelWithoutName(label)) }

        let parameters = try OTPQueryParameters(
            parts.query, known: ["secret", "issuer", "algorithm", "digits", "period", "counter"])

        guard let secretText = parameters["secret"] else { throw .invalidURI(.missingSecret) }
        let secret: [UInt8]
        do throws(OATHError) {
            secret = try Base32.decode(secretText)
        } catch .invalidCredential(let problem) {
            throw .invalidURI(.account(problem))
        }

        var issuer = labelIssuer
        if let parameter = parameters["issuer"], !parameter.isEmpty { issuer = parameter }

        func field<T>(_ field: AccountField, _ read: (String) -> T?, default value: T) throws(OATHError) -> T {
            guard let text = parameters[field.rawValue] else { return value }
            guard let v = read(text) else { throw .invalidURI(.account(.field(field, text))) }
            return v
        }
        let algorithm = try field(.algorithm, AccountRules.algorithm, default: HashAlgorithm.sha1)
        let digits = try field(.digits, AccountRules.digits, default: CredentialData.defaultDigits)
        let period = try field(.period, AccountRules.period, default: CredentialData.defaultPeriod)
        let counter = try field(.counter, AccountRules.counter, default: UInt32(0))

        return CredentialData(
            name: name, issuer: issuer, type: type, algorithm: algorithm, digits: digits,
            period: type == .totp ? period : CredentialData.defaultPeriod,
            counter: type == .hotp ? counter : 0, secret: secret)
    }

    /// Builds an `otpauth://` URI for `data`, percent-encoding the label and issuer, with every parameter
    /// written out (`period` for TOTP, `counter` for HOTP) and the secret in unpadded Base32. `parse` gives
    /// `data` back (with `touch` false), except that spaces at the start of a name that follows an issuer
    /// are lost.
    ///
    /// An issuer containing a colon can't be in the label, so it is only in the `issuer` parameter; a name
    /// containing a colon with no issuer in the label gets an empty issuer prefix (`:name`) so that it is not
    /// split.
    public static func make(_ data: CredentialData) -> String {
        var label = ""
        if let issuer = data.issuer, !issuer.unicodeScalars.contains(":") {
            label = OTPURIParts.percentEncode(issuer) + ":"
        } else if data.name.unicodeScalars.contains(":") {
            label = ":"
        }
        label += OTPURIParts.percentEncode(data.name)
        var uri = "otpauth://\(data.type)/\(label)?secret=\(Base32.encode(data.secret))"
        if let issuer = data.issuer { uri += "&issuer=" + OTPURIParts.percentEncode(issuer) }
        uri += "&algorithm=\(data.algorithm.rawValue)&digits=\(data.digits)"
        switch data.type {
        case .totp: uri += "&period=\(data.period)"
        case .hotp: uri += "&counter=\(data.counter)"
        }
        return uri
    }
}

/// The pieces of `scheme://authority/path?query#fragment`, still percent-encoded.
struct OTPURIParts {
    var scheme: Substring
    var authority: Substring
    /// Everything after the first "/" following the authority; nil when there is no "/".
    var path: Substring?
    /// Everything after the first "?"; nil when there is no "?".
    var query: Substring?

    init(_ uri: String) throws(OATHError) {
        let text = uri.trimmingURIWhitespace()
        guard !text.isEmpty else { throw .invalidURI(.empty) }
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
            throw .invalidURI(.noScheme(String(text.prefix(40))))
        }
        scheme = text[..<colon]
        var rest = text[text.index(after: colon)...]
        guard rest.hasPrefix("//") else {
            throw .invalidURI(.noSlashes(scheme: String(scheme)))
        }
        rest = rest.dropFirst(2)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[rest.index(after: slash)...]
        } else {
            authority = rest
        }
    }

    /// The text before and after the first colon (a Unicode scalar, even where a combining mark follows it),
    /// or nil without one.
    static func splitAtColon(_ text: String) -> (String, String)? {
        let scalars = text.unicodeScalars
        guard let colon = scalars.firstIndex(of: ":") else { return nil }
        return (String(scalars[..<colon]), String(scalars[scalars.index(after: colon)...]))
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Decodes `%XX` escapes (and `+` as a space when `plusIsSpace`); the result must be UTF-8. `what` names
    /// the component in error messages ("the label", "issuer", ...).
    static func percentDecode(_ text: Substring, plusIsSpace: Bool, part: URIPart) throws(OATHError) -> String {
        let input = Array(text.utf8)
        var out = [UInt8]()
        out.reserveCapacity(input.count)
        var i = 0
        while i < input.count {
            let byte = input[i]
            if byte == UInt8(ascii: "%") {
                guard i + 2 < input.count, let high = hexValue(input[i + 1]), let low = hexValue(input[i + 2]) else {
                    let bad = String(decoding: input[i..<min(i + 3, input.count)], as: UTF8.self)
                    throw .invalidURI(.percentEncoding(part, bad))
                }
                out.append(high << 4 | low)
                i += 3
            } else if byte == UInt8(ascii: "+") && plusIsSpace {
                out.append(UInt8(ascii: " "))
                i += 1
            } else {
                out.append(byte)
                i += 1
            }
        }
        guard let decoded = String(validating: out, as: UTF8.self) else {
            throw .invalidURI(.notUTF8(part))
        }
        return decoded
    }

    /// Percent-encodes everything except RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`).
    static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The `name=value` pairs of a query whose names are in `known` (compared case-insensitively); the others
/// are skipped unparsed. Values are percent-decoded with `+` as a space unless `plusIsSpace` is false.
struct OTPQueryParameters {
    private var values: [String: String] = [:]

    init(_ query: Substring?, known: Set<String>, plusIsSpace: Bool = true) throws(OATHError) {
        guard let query else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let rawName: Substring
            let rawValue: Substring
            if let equals = pair.firstIndex(of: "=") {
                rawName = pair[..<equals]
                rawValue = pair[pair.index(after: equals)...]
            } else {
                rawName = pair
                rawValue = ""
            }
            // Names of unknown parameters that don't decode are just unknown.
            guard
                let name = (try? OTPURIParts.percentDecode(rawName, plusIsSpace: true, part: .parameterName))?
                    .lowercased(), known.contains(name)
            else { continue }
            guard values[name] == nil else { throw .invalidURI(.parameterTwice(name)) }
            values[name] = try OTPURIParts.percentDecode(rawValue, plusIsSpace: plusIsSpace, part: .parameter(name))
        }
    }

    subscript(name: String) -> String? { values[name] }
}

extension StringProtocol {
    /// Without spaces, tabs and line breaks at either end.
    func trimmingURIWhitespace() -> SubSequence {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
