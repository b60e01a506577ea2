/// What was wrong with an answer that cannot be read: which part of it, and how. Facts only; the words are
/// the string tables' (`answer.<part>` names the part, `malformed.<problem>` says what is wrong with it).
public struct Malformation: Equatable, Sendable {
    public var part: Part
    public var problem: Problem

    public init(_ part: Part, _ problem: Problem) {
        self.part = part
        self.problem = problem
    }

    /// The part of an answer that was wrong. The raw values are the string tables' keys (`answer.<raw>`).
    public enum Part: String, CaseIterable, Sendable {
        // Any application.
        case answer
        case statusWord = "status-word"
        // Management.
        case managementSelect = "management-select"
        case deviceInfo = "device-info"
        case formFactor = "form-factor"
        case usbApplications = "usb-applications"
        case firmwareVersion = "firmware-version"
        case serial
        // OATH.
        case oathSelect = "oath-select"
        case calculateAll = "calculate-all"
        case oathCode = "oath-code"
        case oathDigits = "oath-digits"
        // CTAP2 and U2F.
        case ctapAnswer = "ctap-answer"
        case getInfo = "get-info"
        case aaguid
        case authenticatorData = "authenticator-data"
        case attestedCredential = "attested-credential"
        case credentialID = "credential-id"
        case pinRetries = "pin-retries"
        case uvRetries = "uv-retries"
        case keyAgreement = "key-agreement"
        case pinToken = "pin-token"
        case ciphertext
        case makeCredential = "make-credential"
        case assertion
        case assertionCredential = "assertion-credential"
        case relyingPartyEntry = "relying-party-entry"
        case credentialEntry = "credential-entry"
        case credentialKey = "credential-key"
        case enrollmentStep = "enrollment-step"
        case fingerprintEntry = "fingerprint-entry"
        case u2fRegistration = "u2f-registration"
        case u2fKeyHandle = "u2f-key-handle"
        case u2fCertificate = "u2f-certificate"
        case u2fSignature = "u2f-signature"
        case u2fAuthentication = "u2f-authentication"
        // CTAPHID.
        case hidPacket = "hid-packet"
        case initNonce = "init-nonce"
        case initAnswer = "init-answer"
        case channel
        // OTP HID and the OTP application.
        case featureReport = "feature-report"
        case otpPayload = "otp-payload"
        case otpStatus = "otp-status"
        case otpAnswer = "otp-answer"
        case hmacResponse = "hmac-response"
        case slotWrite = "slot-write"
        // NDEF.
        case ndefMessage = "ndef-message"
        case ndefRecord = "ndef-record"
        case uriRecord = "uri-record"
        case textRecord = "text-record"
        case languageCode = "language-code"
        case capabilityContainer = "capability-container"
        case ndefFile = "ndef-file"
        case ndefLength = "ndef-length"
        // PIV, certificates and keys.
        case pivAnswer = "piv-answer"
        case keyAlgorithm = "key-algorithm"
        case pinPolicy = "pin-policy"
        case touchPolicy = "touch-policy"
        case keyOrigin = "key-origin"
        case signature
        case certificate
        case publicKey = "public-key"
        // OpenPGP.
        case openpgpAnswer = "openpgp-answer"
        case openpgpAID = "openpgp-aid"
        case extendedCapabilities = "extended-capabilities"
        case algorithmAttributes = "algorithm-attributes"
        case pwStatus = "pw-status"
        case fingerprints
        case generationTimes = "generation-times"
        case keyInformation = "key-information"
        case cardholderData = "cardholder-data"
        case securitySupport = "security-support"
        case kdf
        // YubiHSM Auth.
        case hsmauthSelect = "hsmauth-select"
        case hsmauthCredential = "hsmauth-credential"
        case hsmauthRetries = "hsmauth-retries"
        case hsmauthChallenge = "hsmauth-challenge"
        case sessionKeys = "session-keys"
    }

    /// What was wrong with the part. Each case's string-table key is `malformed.<name>`.
    public enum Problem: Equatable, Sendable {
        /// The part is not there.
        case missing
        /// The part is there but empty.
        case empty
        /// Some of the part's fields are missing.
        case incomplete
        /// The part has `count` bytes, which is not a length it can have.
        case length(Int)
        /// The part's field `tag` has `count` bytes, which is not a length it can have.
        case fieldLength(tag: UInt32, Int)
        /// The part has `count` bytes where `expected` were due.
        case lengthExpected(Int, expected: Int)
        /// The part has `count` bytes, fewer than `minimum`.
        case tooShort(Int, minimum: Int)
        /// The part has `count` bytes, more than `maximum`.
        case tooLong(Int, maximum: Int)
        /// `count` bytes follow the end of the part.
        case trailing(Int)
        /// The part ends before the field it announces (`field`: a protocol field name, e.g. "payload").
        case runsPast(field: String)
        /// The part has a value it cannot have, shown as it came (a number, hex bytes).
        case value(String)
        /// The part, named by `value`, is not there (a file the tag lacks).
        case notFound(String)
        /// The part answers something other than what was asked.
        case mismatch
        /// The part has a tag that does not belong there.
        case unexpectedTag(UInt32)
        /// A tag-value list with a tag left without its value.
        case unpaired
        /// The key answered a status where data was due.
        case statusInstead
        /// The key answered data where only a status was due.
        case dataInstead
        /// The key announced more parts, over and over.
        case neverEnds(parts: Int)
        /// Text that is not UTF-8, or not UTF-16.
        case notUTF8
        case notUTF16
        /// A flag of the format is missing or set where it must not be (`flag`: the format's own name).
        case flagMissing(String, record: Int)
        case flagUnexpected(String, record: Int)
        /// A point that is not on the curve, or a key of another kind than the one due.
        case notOnCurve
        case wrongKeyType
        /// Not DER of what it should be (an X.509 certificate, a key).
        case notDER
        /// BER-TLV or CBOR that does not decode; a gzip stream that does not inflate.
        case tlv(TLV.DecodeError)
        case cbor(CBORError)
        case gzip(Gzip.Error)

        /// The problem's string-table key.
        public var textKey: String {
            switch self {
            case .missing: return "malformed.missing"
            case .empty: return "malformed.empty"
            case .incomplete: return "malformed.incomplete"
            case .length: return "malformed.length"
            case .fieldLength: return "malformed.field-length"
            case .lengthExpected: return "malformed.length-expected"
            case .tooShort: return "malformed.too-short"
            case .tooLong: return "malformed.too-long"
            case .trailing: return "malformed.trailing"
            case .runsPast: return "malformed.runs-past"
            case .value: return "malformed.value"
            case .notFound: return "malformed.not-found"
            case .mismatch: return "malformed.mismatch"
            case .unexpectedTag: return "malformed.unexpected-tag"
            case .unpaired: return "malformed.unpaired"
            case .statusInstead: return "malformed.status-instead"
            case .dataInstead: return "malformed.data-instead"
            case .neverEnds: return "malformed.never-ends"
            case .notUTF8: return "malformed.not-utf8"
            case .notUTF16: return "malformed.not-utf16"
            case .flagMissing: return "malformed.flag-missing"
            case .flagUnexpected: return "malformed.flag-unexpected"
            case .notOnCurve: return "malformed.not-on-curve"
            case .wrongKeyType: return "malformed.wrong-key-type"
            case .notDER: return "malformed.not-der"
            case .gzip(let e):
                switch e {
                case .notGzip: return "gzip.not-gzip"
                case .corrupt: return "gzip.corrupt"
                case .truncated: return "gzip.truncated"
                case .tooLarge: return "gzip.too-large"
                case .trailing: return "gzip.trailing"
                case .zlib: return "gzip.zlib"
                }
            case .tlv(let e): return e.textKey
            case .cbor(let e): return e.textKey
            }
        }

        /// The facts the problem's text shows.
        public var arguments: [String: String] {
            switch self {
            case .missing, .empty, .incomplete, .mismatch, .unpaired, .statusInstead, .dataInstead, .notUTF8, .notUTF16,
                .notOnCurve, .wrongKeyType, .notDER:
                return [:]
            case .length(let n), .trailing(let n): return ["count": String(n)]
            case .fieldLength(let t, let n): return ["tag": String(t, radix: 16, uppercase: true), "count": String(n)]
            case .lengthExpected(let n, let e): return ["count": String(n), "expected": String(e)]
            case .tooShort(let n, let m): return ["count": String(n), "minimum": String(m)]
            case .tooLong(let n, let m): return ["count": String(n), "maximum": String(m)]
            case .runsPast(let field): return ["field": field]
            case .value(let v), .notFound(let v): return ["value": v]
            case .unexpectedTag(let t): return ["tag": String(t, radix: 16, uppercase: true)]
            case .neverEnds(let n): return ["count": String(n)]
            case .flagMissing(let f, let r), .flagUnexpected(let f, let r): return ["flag": f, "record": String(r)]
            case .tlv(let e): return e.arguments
            case .cbor(let e): return e.arguments
            case .gzip(let e):
                switch e {
                case .notGzip, .truncated: return [:]
                case .corrupt(let code), .zlib(let code): return ["code": String(code)]
                case .tooLarge(let limit): return ["maximum": String(limit)]
                case .trailing(let n): return ["count": String(n)]
                }
            }
        }
    }
}

extension TLV.DecodeError {
    /// The string-table key of the decoding problem (`tlv.<case>`).
    public var textKey: String {
        switch self {
        case .truncatedTag: return "tlv.truncated-tag"
        case .tagTooLong: return "tlv.tag-too-long"
        case .truncatedLength: return "tlv.truncated-length"
        case .indefiniteLength: return "tlv.indefinite-length"
        case .lengthTooLong: return "tlv.length-too-long"
        case .truncatedValue: return "tlv.truncated-value"
        case .unexpectedTag: return "tlv.unexpected-tag"
        case .missingTag: return "tlv.missing-tag"
        }
    }

    public var arguments: [String: String] {
        func hex(_ t: UInt32) -> String { String(t, radix: 16, uppercase: true) }
        switch self {
        case .truncatedTag(let o), .tagTooLong(let o), .truncatedLength(let o), .indefiniteLength(let o),
            .lengthTooLong(let o):
            return ["offset": String(o)]
        case .truncatedValue(let o, let n, let a):
            return ["offset": String(o), "needed": String(n), "available": String(a)]
        case .unexpectedTag(let e, let f): return ["expected": hex(e), "found": hex(f)]
        case .missingTag(let t): return ["tag": hex(t)]
        }
    }
}

extension CBORError {
    /// The string-table key of the decoding problem (`cbor.<case>`).
    public var textKey: String {
        switch self {
        case .truncated: return "cbor.truncated"
        case .trailingBytes: return "cbor.trailing-bytes"
        case .reservedAdditionalInfo: return "cbor.reserved-length"
        case .indefiniteLength: return "cbor.indefinite-length"
        case .tooDeep: return "cbor.too-deep"
        case .tooLong: return "cbor.too-long"
        case .invalidUTF8: return "cbor.invalid-utf8"
        case .duplicateKey: return "cbor.duplicate-key"
        case .nonCanonical: return "cbor.non-canonical"
        case .unsupportedSimple: return "cbor.unsupported-simple"
        }
    }

    public var arguments: [String: String] {
        switch self {
        case .truncated(let o), .trailingBytes(let o), .reservedAdditionalInfo(let o), .indefiniteLength(let o),
            .tooLong(let o), .invalidUTF8(let o), .duplicateKey(let o), .nonCanonical(let o):
            return ["offset": String(o)]
        case .tooDeep: return [:]
        case .unsupportedSimple(let v, let o): return ["value": String(v), "offset": String(o)]
        }
    }
}
