/// The parameters of a CTAP2 request or subcommand: integer keys, CBOR values. They are kept with CBOR keys
/// from the start, as the request is encoded: an `[Int: CBOR]` was the only use of `Int: Hashable` in a FIDO
/// command, and the Swift runtime's first lookup of it scans every conformance record in the binary
/// (320,000 instructions, the cost of a dozen CTAP requests' own work).
public struct CTAPParameters: ExpressibleByDictionaryLiteral, Sendable, Equatable {
    private var entries = [CBOR: CBOR]()

    public init() {}

    public init(dictionaryLiteral elements: (Int, CBOR)...) {
        for (key, value) in elements { entries[CBOR(key)] = value }
    }

    public subscript(key: Int) -> CBOR? {
        get { entries[CBOR(key)] }
        set { entries[CBOR(key)] = newValue }
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// The parameters as the CBOR map they are sent as.
    public var cbor: CBOR { .map(entries) }
}

/// A CTAP2 status code other than success, with what it means for the user.
public struct CTAPError: Error, Hashable, Sendable {
    public let code: UInt8
    /// PIN retries left, when the session learned them after a wrong PIN.
    public var retriesLeft: Int?

    public init(_ code: UInt8, retriesLeft: Int? = nil) {
        self.code = code
        self.retriesLeft = retriesLeft
    }

    public static let invalidCommand: UInt8 = 0x01
    public static let invalidParameter: UInt8 = 0x02
    public static let invalidLength: UInt8 = 0x03
    public static let cborUnexpectedType: UInt8 = 0x11
    public static let fingerprintDatabaseFull: UInt8 = 0x17
    public static let invalidCBOR: UInt8 = 0x12
    public static let missingParameter: UInt8 = 0x14
    public static let credentialExcluded: UInt8 = 0x19
    public static let invalidCredential: UInt8 = 0x22
    public static let unsupportedAlgorithm: UInt8 = 0x26
    public static let operationDenied: UInt8 = 0x27
    public static let keyStoreFull: UInt8 = 0x28
    public static let unsupportedOption: UInt8 = 0x2B
    public static let invalidOption: UInt8 = 0x2C
    public static let keepaliveCancel: UInt8 = 0x2D
    public static let noCredentials: UInt8 = 0x2E
    public static let userActionTimeout: UInt8 = 0x2F
    public static let notAllowed: UInt8 = 0x30
    public static let pinInvalid: UInt8 = 0x31
    public static let pinBlocked: UInt8 = 0x32
    public static let pinAuthInvalid: UInt8 = 0x33
    public static let pinAuthBlocked: UInt8 = 0x34
    public static let pinNotSet: UInt8 = 0x35
    public static let pinRequired: UInt8 = 0x36
    public static let pinPolicyViolation: UInt8 = 0x37
    public static let requestTooLarge: UInt8 = 0x39
    public static let actionTimeout: UInt8 = 0x3A
    public static let upRequired: UInt8 = 0x3B
    public static let uvBlocked: UInt8 = 0x3C
    public static let integrityFailure: UInt8 = 0x3F
    public static let invalidSubcommand: UInt8 = 0x40
    public static let unauthorizedPermission: UInt8 = 0x42
    public static let other: UInt8 = 0x7F

    public var name: String {
        switch code {
        case 0x01: return "CTAP1_ERR_INVALID_COMMAND"
        case 0x02: return "CTAP1_ERR_INVALID_PARAMETER"
        case 0x03: return "CTAP1_ERR_INVALID_LENGTH"
        case 0x11: return "CTAP2_ERR_CBOR_UNEXPECTED_TYPE"
        case 0x12: return "CTAP2_ERR_INVALID_CBOR"
        case 0x14: return "CTAP2_ERR_MISSING_PARAMETER"
        case 0x17: return "CTAP2_ERR_FP_DATABASE_FULL"
        case 0x19: return "CTAP2_ERR_CREDENTIAL_EXCLUDED"
        case 0x22: return "CTAP2_ERR_INVALID_CREDENTIAL"
        case 0x26: return "CTAP2_ERR_UNSUPPORTED_ALGORITHM"
        case 0x27: return "CTAP2_ERR_OPERATION_DENIED"
        case 0x28: return "CTAP2_ERR_KEY_STORE_FULL"
        case 0x2B: return "CTAP2_ERR_UNSUPPORTED_OPTION"
        case 0x2C: return "CTAP2_ERR_INVALID_OPTION"
        case 0x2D: return "CTAP2_ERR_KEEPALIVE_CANCEL"
        case 0x2E: return "CTAP2_ERR_NO_CREDENTIALS"
        case 0x2F: return "CTAP2_ERR_USER_ACTION_TIMEOUT"
        case 0x30: return "CTAP2_ERR_NOT_ALLOWED"
        case 0x31: return "CTAP2_ERR_PIN_INVALID"
        case 0x32: return "CTAP2_ERR_PIN_BLOCKED"
        case 0x33: return "CTAP2_ERR_PIN_AUTH_INVALID"
        case 0x34: return "CTAP2_ERR_PIN_AUTH_BLOCKED"
        case 0x35: return "CTAP2_ERR_PIN_NOT_SET"
        case 0x36: return "CTAP2_ERR_PUAT_REQUIRED"
        case 0x37: return "CTAP2_ERR_PIN_POLICY_VIOLATION"
        case 0x39: return "CTAP2_ERR_REQUEST_TOO_LARGE"
        case 0x3A: return "CTAP2_ERR_ACTION_TIMEOUT"
        case 0x3B: return "CTAP2_ERR_UP_REQUIRED"
        case 0x3C: return "CTAP2_ERR_UV_BLOCKED"
        case 0x3F: return "CTAP2_ERR_INTEGRITY_FAILURE"
        case 0x40: return "CTAP2_ERR_INVALID_SUBCOMMAND"
        case 0x42: return "CTAP2_ERR_UNAUTHORIZED_PERMISSION"
        case 0x7F: return "CTAP1_ERR_OTHER"
        default: return "CTAP error 0x" + String(code, radix: 16, uppercase: true)
        }
    }

}

/// What `authenticatorGetInfo` reports.
public struct AuthenticatorInfo: Sendable, Equatable {
    public var versions: [String]
    public var extensions: [String]
    public var aaguid: [UInt8]
    public var options: [String: Bool]
    public var maxMessageSize: Int?
    public var pinUVAuthProtocols: [Int]
    public var maxCredentialCountInList: Int?
    public var maxCredentialIDLength: Int?
    public var transports: [String]
    public var algorithms: [Int]
    public var minPINLength: Int
    public var firmwareVersion: Int?

    /// `firmwareVersion` as a version: YubiKeys (and the virtual key) put it as 0xMMmmpp, so 329474 is 5.7.2.
    /// Nil when absent or outside 0...0xFFFFFF.
    public var firmware: Version? {
        guard let v = firmwareVersion, (0...0xFF_FFFF).contains(v) else { return nil }
        return Version(v >> 16, (v >> 8) & 0xFF, v & 0xFF)
    }
    public var remainingDiscoverableCredentials: Int?
    /// The PIN must be changed before a PIN/UV auth token is given out again (set by authenticatorConfig's
    /// forceChangePin, or by a minimum PIN length above the current PIN's).
    public var forcePINChange: Bool
    /// How many relying parties setMinPINLength's minPinLengthRPIDs may name.
    public var maxRPIDsForSetMinPINLength: Int?
    public var raw: CBOR

    public init(cbor: CBOR) throws {
        guard cbor.map != nil else { throw CTAPError(CTAPError.invalidCBOR) }
        raw = cbor
        typealias Key = CTAP2.InfoKey
        versions = cbor[Key.versions]?.array?.compactMap(\.string) ?? []
        extensions = cbor[Key.extensions]?.array?.compactMap(\.string) ?? []
        guard let aaguid = cbor[Key.aaguid]?.bytes, aaguid.count == 16 else {
            throw FIDOSessionError.malformed(Malformation(.aaguid, .missing))
        }
        self.aaguid = aaguid
        var opts = [String: Bool]()
        for (k, v) in cbor[Key.options]?.map ?? [:] {
            if let k = k.string, let v = v.bool { opts[k] = v }
        }
        options = opts
        maxMessageSize = cbor[Key.maxMsgSize]?.int
        pinUVAuthProtocols = cbor[Key.pinUVAuthProtocols]?.array?.compactMap(\.int) ?? []
        maxCredentialCountInList = cbor[Key.maxCredentialCountInList]?.int
        maxCredentialIDLength = cbor[Key.maxCredentialIDLength]?.int
        transports = cbor[Key.transports]?.array?.compactMap(\.string) ?? []
        algorithms = cbor[Key.algorithms]?.array?.compactMap { $0["alg"]?.int } ?? []
        forcePINChange = cbor[Key.forcePINChange]?.bool ?? false
        minPINLength = cbor[Key.minPINLength]?.int ?? 4
        maxRPIDsForSetMinPINLength = cbor[Key.maxRPIDsForSetMinPINLength]?.int
        firmwareVersion = cbor[Key.firmwareVersion]?.int
        remainingDiscoverableCredentials = cbor[Key.remainingDiscoverableCredentials]?.int
    }

    /// True when a PIN is set (option clientPin); nil when the key has no PIN support.
    public var pinSet: Bool? { options["clientPin"] }

    /// The getInfo keys the properties above are read from.
    public static let readKeys: Set<CBOR> = {
        typealias Key = CTAP2.InfoKey
        return Set(
            [
                Key.versions, Key.extensions, Key.aaguid, Key.options, Key.maxMsgSize, Key.pinUVAuthProtocols,
                Key.maxCredentialCountInList, Key.maxCredentialIDLength, Key.transports, Key.algorithms,
                Key.forcePINChange, Key.minPINLength, Key.firmwareVersion, Key.maxRPIDsForSetMinPINLength,
                Key.remainingDiscoverableCredentials,
            ].map { CBOR($0) })
    }()

    /// The getInfo entries not read into the properties above (fields of later specifications, or of the
    /// key's maker), as the key sent them, by key.
    public var otherFields: [(key: CBOR, value: CBOR)] {
        (raw.map ?? [:]).filter { !AuthenticatorInfo.readKeys.contains($0.key) }
            .sorted { CBOR.canonicalLess($0.key.encoded, $1.key.encoded) }
            .map { (key: $0.key, value: $0.value) }
    }

    public var supportsCredentialManagement: Bool {
        options["credMgmt"] == true || options["credentialMgmtPreview"] == true
    }

    /// Whether credential management has updateUserInformation: CTAP 2.1's credMgmt has it, the preview
    /// command of YubiKey 5.2 to 5.4 does not.
    public var supportsUpdateUserInformation: Bool { options[CTAP2.Option.credentialManagement] == true }

    /// Whether authenticatorConfig is there (option authnrCfg).
    public var supportsConfig: Bool { options[CTAP2.Option.authenticatorConfig] == true }

    /// Whether authenticatorConfig's setMinPINLength is there.
    public var supportsSetMinPINLength: Bool {
        supportsConfig && options[CTAP2.Option.setMinPINLength] == true
    }

    /// Whether fingerprints can be enrolled (option bioEnroll, or the preview's userVerificationMgmtPreview).
    public var supportsBioEnrollment: Bool {
        options[CTAP2.Option.bioEnrollment] != nil || options[CTAP2.Option.bioEnrollmentPreview] != nil
    }

    /// Whether every credential needs user verification; nil when the key cannot be switched to that.
    public var alwaysUV: Bool? { options[CTAP2.Option.alwaysUV] }

    /// Whether enterprise attestation is enabled; nil when the key has none.
    public var enterpriseAttestation: Bool? { options[CTAP2.Option.enterpriseAttestation] }

    /// UUID text form of the AAGUID.
    public var aaguidString: String {
        let h = aaguid.hex
        let p = Array(h)
        return [String(p[0..<8]), String(p[8..<12]), String(p[12..<16]), String(p[16..<20]), String(p[20..<32])]
            .joined(separator: "-")
    }
}

public enum FIDOSessionError: Error, Equatable, Sendable {
    case malformed(Malformation)
    /// Fewer code points (`count`) than the key's `minimum`.
    case pinTooShort(minimum: Int, count: Int)
    /// More than 63 bytes of UTF-8 (`bytes`).
    case pinTooLong(bytes: Int)
    case pinHasNUL
    case noPINSupport
    /// A signature the key made does not verify.
    case signatureInvalid(SignatureCheck)
    /// The key lacks something the operation needs.
    case notSupported(FIDOFeature)
    /// The key refuses every CTAP2 message: its FIDO application speaks U2F (CTAP1) only.
    case ctap2NotSupported
    /// The key offers no PIN/UV auth protocol this client speaks (the numbers it offers).
    case noCommonPINProtocol([Int])
    /// The key gives out no PIN/UV auth token until its PIN is changed: it answered a token request with
    /// CTAP2_ERR_PIN_POLICY_VIOLATION (getInfo's forcePINChange).
    case pinChangeRequired
    /// setMinPINLength asked for less than the key's minimum (`current`): a minimum only grows, until a reset.
    case minPINLengthDecrease(current: Int, requested: Int)
    /// A fingerprint's friendly name longer (`bytes` of UTF-8) than the key's `maximum`.
    case fingerprintNameTooLong(maximum: Int, bytes: Int)
    /// No enrolled fingerprint has this template ID (or, from the command line, starts with these bytes).
    case noSuchFingerprint(templateID: [UInt8])
    /// A fingerprint enrollment was stopped before its template was complete: the capture under way was
    /// cancelled (CTAP2_ERR_KEEPALIVE_CANCEL) and the key told to drop the template (cancelCurrentEnrollment).
    case enrollmentCancelled

    /// The signatures ykterm checks.
    public enum SignatureCheck: String, Sendable, CaseIterable {
        /// A packed attestation whose algorithm is neither ES256 nor EdDSA.
        case attestationAlgorithm = "attestation-algorithm"
        /// An attestation signature against its certificate's key.
        case attestation
        /// A self attestation against the credential's own key.
        case selfAttestation = "self-attestation"
        /// An assertion made for another relying party.
        case assertionRelyingParty = "assertion-relying-party"
        case assertion
        case u2fRegistration = "u2f-registration"
        case u2fAuthentication = "u2f-authentication"
    }

    /// What a key can lack.
    public enum FIDOFeature: Equatable, Sendable {
        case credentialManagement
        /// Credential management's updateUserInformation (CTAP 2.1 credMgmt).
        case updateUserInformation
        /// authenticatorConfig (option authnrCfg).
        case authenticatorConfig
        /// authenticatorConfig's setMinPINLength (option setMinPINLength).
        case setMinPINLength
        /// Always requiring user verification (option alwaysUv).
        case alwaysUV
        /// Enterprise attestation (option ep).
        case enterpriseAttestation
        /// Fingerprint enrollment (option bioEnroll): a key with a fingerprint sensor.
        case bioEnrollment
        /// An attestation statement format ykterm does not check (its name as the key gave it).
        case attestationFormat(String)
        /// A COSE signature algorithm ykterm does not verify (its number, if the key gave one).
        case signatureAlgorithm(Int?)
    }
}

/// The rules for a new PIN, as CTAP 2.1 and the key define them, checked before anything is sent, by every
/// face of ykterm: no NUL, at most 63 bytes of UTF-8, at least `minimum` Unicode code points (4 unless the key
/// says more).
public enum PINRules {
    public static let maxBytes = 63

    /// The first rule `pin` breaks, or nil.
    public static func problem(_ pin: String, minimum: Int = 4) -> FIDOSessionError? {
        if pin.unicodeScalars.contains("\0") { return .pinHasNUL }
        if pin.utf8.count > maxBytes { return .pinTooLong(bytes: pin.utf8.count) }
        let minimum = max(minimum, 4), count = pin.unicodeScalars.count
        if count < minimum { return .pinTooShort(minimum: minimum, count: count) }
        return nil
    }

    public static func check(_ pin: String, minimum: Int = 4) throws(FIDOSessionError) {
        if let problem = problem(pin, minimum: minimum) { throw problem }
    }
}

/// PIN/UV auth token permissions (CTAP 2.1).
public struct PINPermissions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let makeCredential = PINPermissions(rawValue: 0x01)
    public static let getAssertion = PINPermissions(rawValue: 0x02)
    public static let credentialManagement = PINPermissions(rawValue: 0x04)
    public static let bioEnrollment = PINPermissions(rawValue: 0x08)
    public static let largeBlobWrite = PINPermissions(rawValue: 0x10)
    public static let authenticatorConfig = PINPermissions(rawValue: 0x20)
}
