import KeyKit

// The fields of every `--json` output, in the order of the man page's JSON OUTPUT section: what scripts rely on,
// in one place, so that a field renamed or dropped shows in review (`Tests/Integration/json_fields.json` records
// each command's keys and a test compares them). Only the fields and how they are written are here; each type is
// made from KeyKit's values beside the command that prints it, in an extension there.

// MARK: info

/// `info --json`.
struct InfoJSON: Encodable, SnakeCaseJSON {
    var product: String?
    var serial: Int?
    var version: String
    var formFactor: String
    var fips: Bool
    var sky: Bool
    /// The key refuses PINs too easy to guess (an Enhanced PIN key).
    var pinComplexity: Bool
    var configLocked: Bool
    /// NFC is off until the key is next powered from USB.
    var nfcRestricted: Bool
    var usb: [String: String]
    var nfc: [String: String]?
}

// MARK: list

/// A key in `list --json`. serial, fido_hid and otp_hid are null when unknown or absent. The fields from what
/// the key told of itself (version to from_management) are left out when it could not be asked, and error is
/// there only then; hid_errors is there only when a HID node of the key cannot be opened.
struct ListedKeyJSON: Encodable, SnakeCaseJSON {
    var reader: String
    var name: String
    var serial: Int?
    /// The name given the key (`ykterm key name`); null when it has none.
    var keyName: String?
    var interfaces: [String]
    /// The hidraw node's path.
    var fidoHID: String?
    var otpHID: String?
    var device: Device?
    var error: String?
    /// Why each HID node this user may not open cannot be opened, and the fix, by path.
    var hidErrors: [String: String]

    /// What the key told of itself.
    struct Device: Encodable, SnakeCaseJSON {
        var version: String
        var formFactor: String
        var applications: [String]
        /// "usb" or "nfc".
        var transport: String
        var atr: String
        var configLocked: Bool
        /// False when the information was probed, without the Management application.
        var fromManagement: Bool
    }

    enum CodingKeys: CodingKey {
        case reader, name, serial, keyName, interfaces, fidoHID, otpHID, error, hidErrors
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(reader, forKey: .reader)
        try c.encode(name, forKey: .name)
        try c.encodeIfPresent(serial, forKey: .serial)
        try c.encodeIfPresent(keyName, forKey: .keyName)
        try c.encode(interfaces, forKey: .interfaces)
        try c.encodeIfPresent(fidoHID, forKey: .fidoHID)
        try c.encodeIfPresent(otpHID, forKey: .otpHID)
        if let device { try device.encode(to: encoder) }
        if let error { try c.encode(error, forKey: .error) }
        if !hidErrors.isEmpty { try c.encode(hidErrors, forKey: .hidErrors) }
    }
}

/// A reader in `list --readers --json`: whether a key that answers is in it, its ATR in hex, and whether
/// another program holds it exclusively.
struct ReaderStatusJSON: Encodable, SnakeCaseJSON {
    var reader: String
    var keyPresent: Bool
    var atr: String
    var exclusive: Bool
}

// MARK: oath list, oath code

struct OATHAccountJSON: Encodable {
    var id: String
    var issuer: String?
    var name: String
    var type: String
    /// The hash algorithm: LIST gives it, CALCULATE ALL does not (nil then).
    var algorithm: String?
    var digits: Int?
    var period: Int
    /// Whether a code needs a touch; nil when the key did not say.
    var touch: Bool?
}

/// A code in `oath code --json`: the account's fields, then the code and the seconds since 1970 it is valid
/// from and to (nil for HOTP and touch accounts without a code, and valid_to for a code that does not expire).
struct OATHCodeJSON: Encodable, SnakeCaseJSON {
    var account: OATHAccountJSON
    var code: String?
    var validFrom: Int?
    var validTo: Int?

    enum CodingKeys: CodingKey {
        case code, validFrom, validTo
    }

    func encode(to encoder: any Encoder) throws {
        try account.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(code, forKey: .code)
        try c.encodeIfPresent(validFrom, forKey: .validFrom)
        try c.encodeIfPresent(validTo, forKey: .validTo)
    }
}

/// A key in the JSON of the commands over several keys.
struct KeyJSON: Encodable, SnakeCaseJSON {
    var serial: Int?
    var name: String?
}

/// An account over several keys in `oath list --all-keys --json` / `oath code --all-keys --json`: the fields of
/// one key's, then `keys`, the keys that hold it.
struct OATHAcrossKeysJSON<Row: Encodable>: Encodable, SnakeCaseJSON {
    var row: Row
    var keys: [KeyJSON]

    enum CodingKeys: CodingKey { case keys }

    func encode(to encoder: any Encoder) throws {
        try row.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(keys, forKey: .keys)
    }
}

// MARK: oath info

/// An account in `oath list --json` (and the first fields of `oath code --json`).
/// `oath info --json`.
struct OATHInfoJSON: Encodable {
    var version: String
    /// Whether the key has a password.
    var password: Bool
    /// Whether an access key for it is remembered on this computer.
    var remembered: Bool
}

// MARK: oath diff

/// `oath diff --json`.
struct DiffJSON: Encodable, SnakeCaseJSON {
    struct Setting: Encodable, SnakeCaseJSON {
        var setting: String
        var a: String
        var b: String
    }
    struct Differing: Encodable, SnakeCaseJSON {
        var id: String
        var settings: [Setting]
    }
    var keys: [KeyJSON]
    var onlyA: [String]
    var onlyB: [String]
    var differing: [Differing]
}

// MARK: key names

/// A key's name in `key names --json`.
struct KeyNameJSON: Encodable, SnakeCaseJSON {
    var serial: Int
    var name: String
}

// MARK: otp parse, otp capture

/// An OTP's classification in `otp parse`, `otp capture` and `otp read --json`. public_id and serial are null
/// when the OTP has none; token (a Yubico OTP's) and code (an OATH-HOTP's) are left out when it has none.
struct ClassifiedOTPJSON: Encodable {
    var type: String
    /// The OTP translated back to US keys.
    var otp: String
    /// The OTP as typed.
    var raw: String
    var layout: String
    var publicID: String?
    var serial: Int?
    var token: String?
    var code: String?

    enum CodingKeys: String, CodingKey {
        case type, otp, raw, layout, serial, token, code
        case publicID = "public_id"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(otp, forKey: .otp)
        try c.encode(raw, forKey: .raw)
        try c.encode(layout, forKey: .layout)
        try c.encodeIfPresent(publicID, forKey: .publicID)
        try c.encodeIfPresent(serial, forKey: .serial)
        if let token { try c.encode(token, forKey: .token) }
        if let code { try c.encode(code, forKey: .code) }
    }
}

// MARK: otp decrypt

/// `otp decrypt --json`: the public ID (and the serial it encodes, null when it encodes none) and the fields
/// of the decrypted token.
struct DecryptedOTPJSON: Encodable, SnakeCaseJSON {
    var publicID: String
    var serial: Int?
    var privateID: String
    /// The usage counter.
    var counter: Int
    var sessionCounter: Int
    /// The 8 Hz timestamp.
    var timestamp: Int
    var random: Int
    var crc: Int
    var crcOK: Bool
}

// MARK: otp read

/// An NDEF record in `otp read --json`: a URI record's URI, a text record's text and language, or another
/// record's TNF and type (in hex).
enum NDEFRecordJSON: Encodable {
    case uri(String)
    case text(String, language: String)
    case other(tnf: Int, type: String)

    enum CodingKeys: String, CodingKey {
        case type, value, language, tnf
        case recordType = "record_type"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .uri(let u):
            try c.encode("uri", forKey: .type)
            try c.encode(u, forKey: .value)
        case .text(let t, let language):
            try c.encode("text", forKey: .type)
            try c.encode(t, forKey: .value)
            try c.encode(language, forKey: .language)
        case .other(let tnf, let type):
            try c.encode("other", forKey: .type)
            try c.encode(tnf, forKey: .tnf)
            try c.encode(type, forKey: .recordType)
        }
    }
}

/// `otp read --json`: the OTP's classification (`ClassifiedOTPJSON`) and the tag's records. Without an OTP,
/// otp and type are null and the classification's other fields are left out.
struct OTPReadJSON: Encodable {
    var classification: ClassifiedOTPJSON?
    var records: [NDEFRecordJSON]

    enum CodingKeys: String, CodingKey {
        case otp, type, records
    }

    func encode(to encoder: any Encoder) throws {
        if let classification { try classification.encode(to: encoder) }
        var c = encoder.container(keyedBy: CodingKeys.self)
        if classification == nil {
            try c.encodeNil(forKey: .otp)
            try c.encodeNil(forKey: .type)
        }
        try c.encode(records, forKey: .records)
    }
}

// MARK: otp info

/// `otp info --json`.
struct OTPInfoJSON: Encodable, SnakeCaseJSON {
    var version: String
    /// nil when the key does not let its serial be read.
    var serial: Int?
    var programSequence: Int
    var slots: [Slot]

    struct Slot: Encodable, SnakeCaseJSON {
        var slot: Int
        var configured: Bool
        var touchTriggered: Bool
    }
}

// MARK: otp yubiotp

/// `otp yubiotp --json`: the slot programmed, the key's serial (null when the key does not reveal it), the
/// credential's IDs and AES key, and the line for YubiCloud's upload form.
struct OTPYubiOTPJSON: Encodable, SnakeCaseJSON {
    var slot: Int
    var serial: Int?
    /// Modhex.
    var publicID: String
    /// Hex, as `key` is.
    var privateID: String
    var key: String
    var csv: String
}

// MARK: fido info

/// `fido info --json`. Every field is always there: null when the key does not say, and for a key that speaks
/// U2F only, fido2 false, its U2F version, and the other fields empty, false or null.
struct FIDOInfoJSON: Encodable {
    var versions: [String]
    var fido2: Bool
    var extensions: [String]
    var aaguid: String?
    var options: [String: Bool]
    var pinSet: Bool
    var pinRetries: Int?
    var minPINLength: Int?
    var pinProtocols: [Int]
    var transports: [String]
    /// COSE algorithm identifiers.
    var algorithms: [Int]
    var maxMsgSize: Int?
    var remainingDiscoverableCredentials: Int?
    var firmwareVersion: String?
    var forcePINChange: Bool
    var alwaysUV: Bool?
    var enterpriseAttestation: Bool?
    var maxRPIDsForMinPINLength: Int?
    /// The getInfo fields ykterm does not read, by `Info.fieldName`, their values as `Info.json` gives them.
    var otherFields: [String: JSONValue]

    enum CodingKeys: String, CodingKey {
        case versions, fido2, extensions, aaguid, options, transports, algorithms
        case pinSet = "pin_set"
        case pinRetries = "pin_retries"
        case minPINLength = "min_pin_length"
        case pinProtocols = "pin_protocols"
        case maxMsgSize = "max_msg_size"
        case remainingDiscoverableCredentials = "remaining_discoverable_credentials"
        case firmwareVersion = "firmware_version"
        case forcePINChange = "force_pin_change"
        case alwaysUV = "always_uv"
        case enterpriseAttestation = "enterprise_attestation"
        case maxRPIDsForMinPINLength = "max_rpids_for_min_pin_length"
        case otherFields = "other_fields"
    }
}

// MARK: fido credentials list

/// A discoverable credential in `fido credentials list --json` (IDs in hex; names nil when the key has none).
struct CredentialJSON: Encodable, SnakeCaseJSON {
    var rpID: String
    var credentialID: String
    var userID: String
    var userName: String?
    var displayName: String?
    /// The credProtect level (1 to 3), nil when the key does not say.
    var credProtect: Int?
    var largeBlobKey: Bool
}

/// A credential of `fido credentials list --json`, then `key`: the key it is on (serial and name).
struct CredentialOnKeyJSON: Encodable, SnakeCaseJSON {
    var credential: CredentialJSON
    var key: KeyJSON

    enum CodingKeys: CodingKey { case key }

    func encode(to encoder: any Encoder) throws {
        try credential.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(key, forKey: .key)
    }
}

/// A relying party in `fido credentials list --all-keys --json`: the keys that hold a credential for it, those read
/// that hold none, and its credentials with the key each is on.
struct RelyingPartyAcrossKeysJSON: Encodable, SnakeCaseJSON {
    var rpID: String
    var rpName: String?
    var keys: [KeyJSON]
    var notOn: [KeyJSON]
    var credentials: [CredentialOnKeyJSON]
}

// MARK: fido fingerprints list

/// A fingerprint in `fido fingerprints list --json`: its template ID in hex and its name (nil when it has none).
struct FingerprintJSON: Encodable {
    var id: String
    var name: String?
}

// MARK: u2f register, u2f sign

/// `u2f register --json`: the key handle and the uncompressed public key in hex, and the attestation
/// certificate's subject (empty when the certificate cannot be read).
struct U2FRegistrationJSON: Encodable, SnakeCaseJSON {
    var keyHandle: String
    var publicKey: String
    var certificateSubject: String
}

/// `u2f sign --json`: the key's counter, whether the user-presence flag is set, and the signature in hex.
struct U2FSignatureJSON: Encodable, SnakeCaseJSON {
    var counter: Int
    var userPresence: Bool
    var signature: String
}

// MARK: ssh list

/// An SSH key in `ssh list --json`. user is null when the key was made for no user; cred_protect when the key does
/// not say.
struct SSHKeyJSON: Encodable, SnakeCaseJSON {
    var type: String
    /// The authorized_keys line.
    var publicKey: String
    var fingerprint: String
    var application: String
    var user: String?
    var credProtect: Int?
    var touchRequired: Bool
    var verifyRequired: Bool
    /// Hex.
    var credentialID: String
    /// The file name ssh-keygen -K gives it.
    var file: String
}

// MARK: piv info

/// `piv info --json`. Every field is always there, null when the key does not say (a key before firmware 5.3
/// gives no PIN metadata, an empty slot no algorithm).
struct PIVInfoJSON: Encodable, SnakeCaseJSON {
    var version: String
    var serial: Int?
    var pinTries: Int
    var pinTotalTries: Int?
    var pinIsDefault: Bool?
    var pukTries: Int?
    var pukIsDefault: Bool?
    var managementKey: ManagementKey?
    var slots: [Slot]

    struct ManagementKey: Encodable, SnakeCaseJSON {
        var algorithm: String
        var isDefault: Bool
        var touchPolicy: String
    }

    struct Slot: Encodable, SnakeCaseJSON {
        var slot: String
        var name: String
        var algorithm: String?
        var origin: String?
        var pinPolicy: String?
        var touchPolicy: String?
        var publicKeyPEM: String?
        var certificate: Certificate?
    }

    struct Certificate: Encodable, SnakeCaseJSON {
        var subject: String
        var issuer: String
        var serial: String
        var notBefore: String?
        var notAfter: String?
        var sha256Fingerprint: String
        var keyUsage: [String]
        var subjectAlternativeNames: [String]
        var matchesKey: Bool?
    }
}

// MARK: piv keys info

/// `piv keys info --json`.
struct PIVKeyJSON: Encodable, SnakeCaseJSON {
    var slot: String
    var name: String
    var algorithm: String
    var origin: String
    var pinPolicy: String
    var touchPolicy: String
    var publicKeyPEM: String
}

// MARK: openpgp info

/// `openpgp info --json`.
struct OpenPGPInfoJSON: Encodable, SnakeCaseJSON {
    var openpgpVersion: String
    var applicationVersion: String
    var serial: Int
    var manufacturer: Int
    var pinTries: Int
    var resetCodeTries: Int
    var adminPinTries: Int
    var signaturePinPolicy: String
    var kdfEnabled: Bool
    var signatureCounter: Int?
    var cardholder: String?
    var url: String?
    var keys: [Key]
    var certificates: [Certificate]

    struct Key: Encodable, SnakeCaseJSON {
        var slot: String
        var hasKey: Bool
        var algorithm: String?
        var fingerprint: String?
        var created: String?
        var origin: String?
        var touchPolicy: String?
    }

    /// A slot's certificate: whether one is stored, and what it says (nil when unreadable).
    struct Certificate: Encodable, SnakeCaseJSON {
        var slot: String
        var present: Bool
        var subject: String?
        var issuer: String?
        var notBefore: String?
        var notAfter: String?
        var sha256Fingerprint: String?
    }
}

// MARK: hsmauth

struct HSMAuthInfoJSON: Encodable {
    var version: String
    var management_key_retries: Int
    var credentials: Int
}

/// What `hsmauth credentials list --json` prints for each credential.
struct HSMAuthCredentialJSON: Encodable {
    var label: String
    var type: String
    var touch: Bool
    var retries: Int
}

struct HSMAuthSessionKeysJSON: Encodable {
    var enc: String
    var mac: String
    var rmac: String
}

// MARK: monitor

/// An event in `monitor` (and `monitor --json`, one object a line): every value a string, and the fields that do
/// not apply left out.
struct MonitorEventJSON: Encodable, Equatable {
    var event: String
    var id: String?
    var name: String?
    var interfaces: String?
    var reader: String?
    var atr: String?
    var fido: String?
    var otp: String?
    var serial: String?

    enum CodingKeys: CodingKey {
        case event, id, name, interfaces, reader, atr, fido, otp, serial
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        for (key, value) in fields { if let value { try c.encode(value, forKey: key) } }
    }

    /// The fields in the order `text` writes them; nil ones are left out.
    var fields: [(CodingKeys, String?)] {
        [
            (.event, event), (.id, id), (.name, name), (.interfaces, interfaces), (.reader, reader), (.atr, atr),
            (.fido, fido), (.otp, otp), (.serial, serial),
        ]
    }
}
