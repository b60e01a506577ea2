/// Google Authenticator's "Transfer accounts" export: `otpauth-migration://offline?data=BASE64`, where the
/// data is a protobuf `MigrationPayload`:
///
/// ```
/// message MigrationPayload {
///   repeated OtpParameters otp_parameters = 1;
///   int32 version = 2; int32 batch_size = 3; int32 batch_index = 4; int32 batch_id = 5;
/// }
/// message OtpParameters {
///   bytes secret = 1; string name = 2; string issuer = 3; Algorithm algorithm = 4;
///   DigitCount digits = 5; OtpType type = 6; int64 counter = 7;
/// }
/// enum Algorithm { UNSPECIFIED = 0; SHA1 = 1; SHA256 = 2; SHA512 = 3; MD5 = 4; }
/// enum DigitCount { UNSPECIFIED = 0; SIX = 1; EIGHT = 2; }
/// enum OtpType { UNSPECIFIED = 0; HOTP = 1; TOTP = 2; }
/// ```
///
/// Rules:
/// - The scheme and host are case-insensitive; `data` is required and may appear once; other parameters
///   are ignored. `data` is percent-decoded with `+` kept as a plus (it is a base64 digit here). Both
///   standard (`+/`) and URL-safe (`-_`) base64 are accepted, with or without `=` padding (correct if
///   present); spaces and line breaks are not.
/// - The protobuf reader is strict: truncated input, varints longer than 10 bytes or overflowing 64 bits,
///   group wire types (3, 4), unknown wire types (6, 7), field number 0 and a known field with the wrong
///   wire type are errors. Unknown fields are skipped. A repeated scalar field keeps its last value, as
///   protobuf specifies.
/// - Unspecified enum values take the defaults (SHA1, 6 digits, TOTP); values outside the enums are errors.
///   MD5 accounts are errors, as a YubiKey can't store them. The period is always 30 seconds (the export
///   does not carry it).
/// - A name `Issuer:Account` (or `Issuer: Account`) is split like an otpauth label when the issuer field is
///   empty or equal to the prefix; otherwise the whole name is kept as the account name.
/// - An HOTP counter must be 0...4294967295. Names must be non-empty UTF-8; secrets non-empty.
/// - An export with no accounts is an error.
///
/// Errors are `OATHError.invalidURI` with a message naming the account (by name, or by position when the
/// name is not known yet).
public enum MigrationImport {
    /// Parses an `otpauth-migration://offline?data=...` URI into the accounts it carries, in order.
    public static func parse(_ uri: String) throws(OATHError) -> [CredentialData] {
        let parts = try OTPURIParts(uri)
        guard parts.scheme.lowercased() == "otpauth-migration" else {
            throw .invalidURI(.scheme(String(parts.scheme), expected: "otpauth-migration"))
        }
        guard parts.authority.lowercased() == "offline" else {
            throw .invalidURI(.export(.host(String(parts.authority))))
        }
        guard parts.path == nil || parts.path == "" else {
            throw .invalidURI(.export(.path(String(parts.path!))))
        }
        let parameters = try OTPQueryParameters(parts.query, known: ["data"], plusIsSpace: false)
        guard let data = parameters["data"] else { throw .invalidURI(.export(.missingData)) }
        let payload = try decodeBase64(data)
        return try parsePayload(payload)
    }

    /// Parses the protobuf `MigrationPayload` bytes (the decoded `data` parameter).
    public static func parsePayload(_ payload: [UInt8]) throws(OATHError) -> [CredentialData] {
        var reader = ProtobufReader(payload, account: nil)
        var accounts = [CredentialData]()
        while let (field, wireType) = try reader.nextField() {
            switch field {
            case 1:
                let bytes = try reader.readLengthDelimited(wireType, field: "otp_parameters")
                accounts.append(try parseAccount(bytes, number: accounts.count + 1))
            case 2, 3, 4, 5:
                // version, batch_size, batch_index, batch_id: read (so they are checked) and not needed.
                let names = ["version", "batch_size", "batch_index", "batch_id"]
                _ = try reader.readVarint(wireType, field: names[field - 2])
            default:
                try reader.skip(wireType)
            }
        }
        guard !accounts.isEmpty else { throw .invalidURI(.export(.noAccounts)) }
        return accounts
    }

    private static func parseAccount(_ bytes: ArraySlice<UInt8>, number: Int) throws(OATHError) -> CredentialData {
        var reader = ProtobufReader(bytes, account: number)
        var secret: [UInt8] = []
        var nameBytes: ArraySlice<UInt8> = []
        var issuerBytes: ArraySlice<UInt8> = []
        var algorithm: UInt64 = 0
        var digits: UInt64 = 0
        var type: UInt64 = 0
        var counter: UInt64 = 0
        while let (field, wireType) = try reader.nextField() {
            switch field {
            case 1: secret = Array(try reader.readLengthDelimited(wireType, field: "secret"))
            case 2: nameBytes = try reader.readLengthDelimited(wireType, field: "name")
            case 3: issuerBytes = try reader.readLengthDelimited(wireType, field: "issuer")
            case 4: algorithm = try reader.readVarint(wireType, field: "algorithm")
            case 5: digits = try reader.readVarint(wireType, field: "digits")
            case 6: type = try reader.readVarint(wireType, field: "type")
            case 7: counter = try reader.readVarint(wireType, field: "counter")
            default: try reader.skip(wireType)
            }
        }

        guard let fullName = String(validating: nameBytes, as: UTF8.self) else {
            throw .invalidURI(.export(.nameNotUTF8(account: number)))
        }
        guard let issuerField = String(validating: issuerBytes, as: UTF8.self) else {
            throw .invalidURI(.export(.issuerNotUTF8(account: number)))
        }
        var name = fullName
        var issuer: String? = issuerField.isEmpty ? nil : issuerField
        if let (prefix, rest) = OTPURIParts.splitAtColon(fullName) {
            if issuer == nil || issuer == prefix {
                name = String(rest.drop(while: { $0 == " " }))
                if !prefix.isEmpty { issuer = prefix }
            }
        }
        guard !name.allSatisfy({ $0 == " " }) else {
            throw .invalidURI(.export(.noName(account: number, label: fullName)))
        }
        let shown = (issuer.map { $0 + ":" } ?? "") + name

        let hash: HashAlgorithm
        switch algorithm {
        case 0, 1: hash = .sha1
        case 2: hash = .sha256
        case 3: hash = .sha512
        case 4: throw .invalidURI(.export(.md5(shown: shown)))
        default: throw .invalidURI(.export(.algorithm(shown: shown, algorithm)))
        }
        let digitCount: Int
        switch digits {
        case 0, 1: digitCount = 6
        case 2: digitCount = 8
        default: throw .invalidURI(.export(.digits(shown: shown, digits)))
        }
        let oathType: OATHType
        switch type {
        case 0, 2: oathType = .totp
        case 1: oathType = .hotp
        default: throw .invalidURI(.export(.type(shown: shown, type)))
        }
        var hotpCounter: UInt32 = 0
        if oathType == .hotp {
            // int64: a negative counter arrives as a huge two's-complement varint.
            let signed = Int64(bitPattern: counter)
            guard signed >= 0, signed <= Int64(UInt32.max) else {
                throw .invalidURI(.export(.counter(shown: shown, signed)))
            }
            hotpCounter = UInt32(signed)
        }
        guard !secret.isEmpty else { throw .invalidURI(.export(.emptySecret(shown: shown))) }
        return CredentialData(
            name: name, issuer: issuer, type: oathType, algorithm: hash, digits: digitCount,
            period: CredentialData.defaultPeriod, counter: hotpCounter, secret: secret)
    }

    /// Standard or URL-safe base64, padding optional (but exact if present).
    static func decodeBase64(_ text: String) throws(OATHError) -> [UInt8] {
        var values = [UInt8]()
        values.reserveCapacity(text.utf8.count)
        var paddingCount = 0
        var position = 0
        for character in text {
            position += 1
            if character == "=" {
                paddingCount += 1
                continue
            }
            let value: UInt8?
            if let ascii = character.asciiValue {
                switch ascii {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = ascii - UInt8(ascii: "A")
                case UInt8(ascii: "a")...UInt8(ascii: "z"): value = ascii - UInt8(ascii: "a") + 26
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = ascii - UInt8(ascii: "0") + 52
                case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
                case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
                default: value = nil
                }
            } else {
                value = nil
            }
            guard let value else {
                throw .invalidURI(.export(.base64Character(String(character), position: position)))
            }
            guard paddingCount == 0 else {
                throw .invalidURI(.export(.base64PaddingEarly))
            }
            values.append(value)
        }
        guard !values.isEmpty else { throw .invalidURI(.export(.dataEmpty)) }
        let needed: Int
        switch values.count % 4 {
        case 0: needed = 0
        case 2: needed = 2
        case 3: needed = 1
        default:
            throw .invalidURI(.export(.base64Length(values.count)))
        }
        guard paddingCount == 0 || paddingCount == needed else {
            throw .invalidURI(
                .export(
                    .base64Padding(
                        given: paddingCount, count: values.count,
                        needed: needed)))
        }
        return BitGroups.regroup(values, from: 6, to: 8)
    }
}

/// A strict reader of the protobuf wire format over a byte slice. It never reads out of bounds: every
/// problem is an `OATHError.invalidURI` naming the account it was reading (nil: the export's own message).
struct ProtobufReader {
    enum WireType: UInt8 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case startGroup = 3
        case endGroup = 4
        case fixed32 = 5

        var name: String {
            switch self {
            case .varint: return "varint"
            case .fixed64: return "fixed64"
            case .lengthDelimited: return "length-delimited"
            case .startGroup: return "start-group"
            case .endGroup: return "end-group"
            case .fixed32: return "fixed32"
            }
        }
    }

    private let bytes: ArraySlice<UInt8>
    private var index: Int
    private let account: Int?

    init(_ bytes: [UInt8], account: Int?) {
        self.init(bytes[...], account: account)
    }

    init(_ bytes: ArraySlice<UInt8>, account: Int?) {
        self.bytes = bytes
        self.index = bytes.startIndex
        self.account = account
    }

    var isAtEnd: Bool { index >= bytes.endIndex }

    private func truncated(_ reading: String) -> OATHError {
        .invalidURI(.export(.truncated(account: account, reading: reading, at: index - bytes.startIndex)))
    }

    /// A base-128 varint of at most 10 bytes that fits in 64 bits.
    mutating func readVarint() throws(OATHError) -> UInt64 {
        let start = index
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard index < bytes.endIndex else { throw truncated("varint") }
            let byte = bytes[index]
            index += 1
            if shift == 63 && byte > 1 {
                throw .invalidURI(.export(.varintTooLong(account: account, at: start - bytes.startIndex)))
            }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// The next field's number and wire type, or nil at the end of the message.
    mutating func nextField() throws(OATHError) -> (Int, WireType)? {
        guard !isAtEnd else { return nil }
        let at = index - bytes.startIndex
        let key = try readVarint()
        let number = key >> 3
        guard number >= 1, number <= 0x1FFF_FFFF else {
            throw .invalidURI(.export(.fieldNumber(account: account, number, at: at)))
        }
        let rawType = UInt8(key & 0x07)
        guard let wireType = WireType(rawValue: rawType), wireType != .startGroup, wireType != .endGroup else {
            throw .invalidURI(.export(.wireType(account: account, field: number, rawType, at: at)))
        }
        return (Int(number), wireType)
    }

    private func expect(_ wireType: WireType, _ expected: WireType, field: String) throws(OATHError) {
        guard wireType == expected else {
            throw .invalidURI(
                .export(
                    .fieldType(
                        account: account, field: field, found: wireType.name,
                        expected: expected.name)))
        }
    }

    mutating func readLengthDelimited() throws(OATHError) -> ArraySlice<UInt8> {
        let length = try readVarint()
        guard length <= UInt64(bytes.endIndex - index) else { throw truncated("length-delimited field") }
        let start = index
        index += Int(length)
        return bytes[start..<index]
    }

    /// The value of the varint field `field`, whose key said `wireType`: an error unless that is a varint.
    mutating func readVarint(_ wireType: WireType, field: String) throws(OATHError) -> UInt64 {
        try expect(wireType, .varint, field: field)
        return try readVarint()
    }

    /// The bytes of the length-delimited field `field`, whose key said `wireType`: an error unless that is
    /// length-delimited.
    mutating func readLengthDelimited(_ wireType: WireType, field: String) throws(OATHError) -> ArraySlice<UInt8> {
        try expect(wireType, .lengthDelimited, field: field)
        return try readLengthDelimited()
    }

    mutating func readFixed(_ count: Int) throws(OATHError) {
        guard bytes.endIndex - index >= count else { throw truncated("fixed\(count * 8)") }
        index += count
    }

    /// Skips an unknown field's value.
    mutating func skip(_ wireType: WireType) throws(OATHError) {
        switch wireType {
        case .varint: _ = try readVarint()
        case .fixed64: try readFixed(8)
        case .lengthDelimited: _ = try readLengthDelimited()
        case .fixed32: try readFixed(4)
        case .startGroup, .endGroup:
            throw .invalidURI(.export(.group(account: account, wireType.rawValue)))
        }
    }
}
