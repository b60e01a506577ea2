/// HOTP (counter-based) or TOTP (time-based).
public enum OATHType: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case hotp = 0x10
    case totp = 0x20

    public var description: String { self == .hotp ? "hotp" : "totp" }
}

extension HashAlgorithm {
    /// The YKOATH algorithm code (low nibble of the key type byte).
    public var oathCode: UInt8 {
        switch self {
        case .sha1: return 0x01
        case .sha256: return 0x02
        case .sha512: return 0x03
        }
    }

    public init?(oathCode: UInt8) {
        switch oathCode & 0x0F {
        case 0x01: self = .sha1
        case 0x02: self = .sha256
        case 0x03: self = .sha512
        default: return nil
        }
    }
}

/// Everything needed to create an account on a key: what an `otpauth://` URI (or the add form) describes.
public struct CredentialData: Sendable, Equatable {
    public var name: String
    public var issuer: String?
    public var type: OATHType
    public var algorithm: HashAlgorithm
    public var digits: Int
    /// TOTP time step in seconds.
    public var period: Int
    /// HOTP initial counter.
    public var counter: UInt32
    public var secret: [UInt8]
    public var touch: Bool

    public static let defaultPeriod = 30
    public static let defaultDigits = 6

    public init(
        name: String, issuer: String? = nil, type: OATHType = .totp, algorithm: HashAlgorithm = .sha1,
        digits: Int = CredentialData.defaultDigits, period: Int = CredentialData.defaultPeriod,
        counter: UInt32 = 0, secret: [UInt8], touch: Bool = false
    ) {
        self.name = name
        self.issuer = issuer?.isEmpty == true ? nil : issuer
        self.type = type
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
        self.counter = counter
        self.secret = secret
        self.touch = touch
    }

    /// The credential ID stored on the key: `[period/][issuer:]name`.
    public var id: CredentialID {
        CredentialID(name: name, issuer: issuer, type: type, period: period)
    }
}

/// The ID the key stores for an account: `[period/][issuer:]name`. The period prefix is written only for
/// TOTP accounts whose period is not 30 seconds.
public struct CredentialID: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var issuer: String?
    public var type: OATHType
    public var period: Int

    /// The key stores at most 64 bytes of ID.
    public static let maxLength = 64

    public init(name: String, issuer: String?, type: OATHType, period: Int = CredentialData.defaultPeriod) {
        self.name = name
        self.issuer = issuer?.isEmpty == true ? nil : issuer
        self.type = type
        self.period = type == .totp ? period : CredentialData.defaultPeriod
    }

    /// Parses the bytes a key lists. Unparseable prefixes are kept as part of the name, as the key allows
    /// any bytes.
    public init(bytes: [UInt8], type: OATHType) {
        // Split on the bytes: "/" and ":" are ASCII, which UTF-8 never uses inside another character, and
        // walking Characters (grapheme clusters) cost 17,000 instructions per ID, half of `oath code`'s own work.
        var rest = bytes[...]
        var period = CredentialData.defaultPeriod
        if type == .totp, let slash = rest.firstIndex(of: UInt8(ascii: "/")),
            rest[..<slash].allSatisfy({ $0 < 0x80 }), let p = Int(String(decoding: rest[..<slash], as: UTF8.self)),
            p > 0
        {
            period = p
            rest = rest[(slash + 1)...]
        }
        var issuer: String?
        if let colon = rest.firstIndex(of: UInt8(ascii: ":")), colon != rest.startIndex {
            issuer = String(decoding: rest[..<colon], as: UTF8.self)
            rest = rest[(colon + 1)...]
        }
        self.init(name: String(decoding: rest, as: UTF8.self), issuer: issuer, type: type, period: period)
    }

    public var string: String {
        var s = ""
        if type == .totp && period != CredentialData.defaultPeriod { s += "\(period)/" }
        if let issuer { s += issuer + ":" }
        return s + name
    }

    public var bytes: [UInt8] { Array(string.utf8) }

    public var description: String { string }

    /// Throws when the ID is too long for the key.
    public func validate() throws(OATHError) {
        guard !name.isEmpty else { throw .invalidCredential(.emptyName) }
        guard bytes.count <= CredentialID.maxLength else {
            throw .invalidCredential(.idTooLong(id: string, bytes: bytes.count, maximum: CredentialID.maxLength))
        }
    }
}

/// An account as listed by the key.
public struct Credential: Sendable, Hashable, Identifiable {
    public var id: CredentialID
    public var type: OATHType
    /// Known from LIST (algorithm) on all keys.
    public var algorithm: HashAlgorithm?
    /// Known from CALCULATE ALL: true for accounts that need a touch.
    public var touch: Bool?
    public var rawID: [UInt8]

    public init(rawID: [UInt8], type: OATHType, algorithm: HashAlgorithm? = nil, touch: Bool? = nil) {
        self.rawID = rawID
        self.type = type
        self.algorithm = algorithm
        self.touch = touch
        self.id = CredentialID(bytes: rawID, type: type)
    }

    public var name: String { id.name }
    public var issuer: String? { id.issuer }
    public var period: Int { id.period }

    /// Steam Guard accounts show 5-character Steam codes.
    public var isSteam: Bool { type == .totp && issuer == "Steam" }
}

/// A code and the time window it is valid in (Unix seconds; HOTP codes have no end).
public struct Code: Sendable, Hashable {
    public var value: String
    public var validFrom: Int64
    public var validTo: Int64

    public init(value: String, validFrom: Int64, validTo: Int64) {
        self.value = value
        self.validFrom = validFrom
        self.validTo = validTo
    }
}

public enum OATHError: Error, Equatable, Sendable {
    case invalidCredential(AccountProblem)
    case invalidURI(URIProblem)
    case wrongPassword
    case passwordRequired
    case notSupported(feature: OATHFeature, minimum: Version, actual: Version)
    case noSpace
    case noSuchCredential(String)
    case credentialExists(String)
    case keyResponseMismatch
    case touchTimeout
    /// The key answered an optional command with a status saying it does not have it.
    case commandNotSupported(OATHOptionalCommand, StatusWord)

}

/// YKOATH commands that OATH applications of other makes may lack.
public enum OATHOptionalCommand: Sendable, Equatable, CaseIterable {
    case reset, setCode, rename

    /// Answers that mean "no such command": instruction (6D00), class (6E00) or function (6A81) not supported.
    static let notSupportedStatuses: Set<StatusWord> = [.invalidInstruction, .classNotSupported, .functionNotSupported]
}

/// Features that depend on the firmware version.
public enum OATHFeature: Sendable, CaseIterable {
    case rename
    case touch
    case sha512

    public var minimum: Version {
        switch self {
        case .rename: return Version(5, 3, 1)
        case .touch: return Version(4, 2, 4)
        case .sha512: return Version(4, 3, 1)
        }
    }

    public func isSupported(by version: Version) -> Bool {
        // YubiKey NEO (3.x) has touch only from 3.1.0 and no SHA-512; treat 0.x (virtual/unknown) as current.
        version >= minimum || version.major == 0
    }

    public func check(_ version: Version) throws(OATHError) {
        guard isSupported(by: version) else { throw .notSupported(feature: self, minimum: minimum, actual: version) }
    }
}
