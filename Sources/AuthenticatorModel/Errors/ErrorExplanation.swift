import Glibc
import KeyKit

/// What went wrong, as the user is told: a stable kind and its words.
///
/// This is the one place where an error becomes a message. KeyKit's errors carry facts (a status word, the
/// retries left, the reader, what was malformed); `ErrorExplanation(error)` classifies them into a kind and
/// fills the kind's text, `error.<kind>` in the string tables, with those facts. The TUI's status line and
/// dialogs show `text`; the command line prints it and exits with `kind.exit`. A tab may say something more
/// particular for a kind where it knows more (which PIN was wrong), but never words an error of its own.
public struct ErrorExplanation: Sendable, Equatable {
    public var kind: ErrorKind
    public var text: UIText

    public init(kind: ErrorKind, _ arguments: [String: String] = [:], nested: [String: UIText] = [:]) {
        self.kind = kind
        self.text = UIText(kind.textKey, arguments, nested: nested)
    }

    /// A kind whose text shows a detail that has words of its own (`{detail}`).
    init(kind: ErrorKind, detail: UIText, _ arguments: [String: String] = [:]) {
        self.init(kind: kind, arguments, nested: ["detail": detail])
    }

    /// A kind worded more particularly than its own text (the problem with an account or a URI).
    public init(kind: ErrorKind, text: UIText) {
        self.kind = kind
        self.text = text
    }

    public init(_ error: any Error) {
        self = Self.explain(error)
    }
}

/// Ctrl-C came while a request was with the key, and the key was asked to stop waiting (CTAPHID CANCEL, or
/// NFCCTAP's cancel): the command line ends after saying so.
public struct KeyRequestInterrupted: Error, Sendable {
    public init() {}
}

/// The kinds of failure ykterm tells apart. The raw values are stable: tests and the string tables
/// (`error.<raw value>`) use them.
public enum ErrorKind: String, CaseIterable, Sendable {
    // The way to the key: pcscd, readers, hidraw.
    case pcscdNotRunning = "pcscd-not-running"
    case pcscdNotInstalled = "pcscd-not-installed"
    case pcscdRefused = "pcscd-refused"
    case noReaders = "no-readers"
    case readerGone = "reader-gone"
    case noKeyInReader = "no-key-in-reader"
    case noKeyFound = "no-key-found"
    case severalKeys = "several-keys"
    case keyRemoved = "key-removed"
    case keyHeldElsewhere = "key-held-elsewhere"
    case keyBusy = "key-busy"
    case keyUnresponsive = "key-unresponsive"
    case readerNotAnswering = "reader-not-answering"
    case timeout
    case cancelled
    /// Ctrl-C during a request to the key, which was asked to stop waiting (the command line's FIDO requests).
    case interrupted
    case readerFailed = "reader-failed"
    case pcscFailed = "pcsc-failed"
    case hidPermission = "hid-permission"
    case hidPermissionRemote = "hid-permission-remote"
    case hidGone = "hid-gone"
    case hidFailed = "hid-failed"
    case hidUnavailable = "hid-unavailable"
    case interfaceMissing = "interface-missing"
    case applicationNotOnKey = "application-not-on-key"
    case connectionClosed = "connection-closed"
    // What the key answered.
    case refused
    case malformedAnswer = "malformed-answer"
    case damagedAnswer = "damaged-answer"
    case exchangeBrokeOff = "exchange-broke-off"
    case applicationMissing = "application-missing"
    case notSupported = "not-supported"
    case oathResetNotSupported = "oath-reset-not-supported"
    case oathPasswordNotSupported = "oath-password-not-supported"
    case oathRenameNotSupported = "oath-rename-not-supported"
    case renameNeedsFirmware = "rename-needs-firmware"
    case touchNeedsFirmware = "touch-needs-firmware"
    case sha512NeedsFirmware = "sha512-needs-firmware"
    case deviceInfoNeedsFirmware = "device-info-needs-firmware"
    case touchTimeout = "touch-timeout"
    case invalidCommand = "invalid-command"
    // OATH.
    case invalidAccount = "invalid-account"
    case invalidURI = "invalid-uri"
    // PSKC files (oath add --output, oath import).
    case pskcInvalid = "pskc-invalid"
    case pskcUnsupported = "pskc-unsupported"
    case pskcKeyNeeded = "pskc-key-needed"
    case pskcKeyLength = "pskc-key-length"
    case pskcWrongKey = "pskc-wrong-key"
    case wrongPassword = "wrong-password"
    case passwordRequired = "password-required"
    case noRoom = "no-room"
    case noSuchAccount = "no-such-account"
    case accountExists = "account-exists"
    case ambiguousAccount = "ambiguous-account"
    // A QR code's image (oath add --qr, the Add dialog's image path).
    case qrNotAnImage = "qr-not-an-image"
    case qrImageDamaged = "qr-image-damaged"
    case qrImageTooLarge = "qr-image-too-large"
    case qrFileTooLarge = "qr-file-too-large"
    case qrNoCode = "qr-no-code"
    case qrSeveralCodes = "qr-several-codes"
    case qrNotAccount = "qr-not-account"
    case qrLibraryMissing = "qr-library-missing"
    // SSH keys on the key.
    case sshKeyExists = "ssh-key-exists"
    case sshApplication = "ssh-application"
    case sshUserTooLong = "ssh-user-too-long"
    case sshNoSuchKey = "ssh-no-such-key"
    case sshAmbiguousKey = "ssh-ambiguous-key"
    case renameTargetTaken = "rename-target-taken"
    case oathHasPassword = "oath-has-password"
    case oathNoPassword = "oath-no-password"
    case pinAlreadySet = "pin-already-set"
    case keyNotGenuine = "key-not-genuine"
    // OTP.
    case noSuchSlot = "no-such-slot"
    case slotEmpty = "slot-empty"
    case slotNotChallengeResponse = "slot-not-challenge-response"
    case slotRefused = "slot-refused"
    case challengeTooLong = "challenge-too-long"
    case hmacKeyLength = "hmac-key-length"
    case accessCodeLength = "access-code-length"
    case accessCodeTooSimple = "access-code-too-simple"
    case publicIDLength = "public-id-length"
    case privateIDLength = "private-id-length"
    case aesKeyLength = "aes-key-length"
    case staticPasswordLength = "static-password-length"
    case staticPasswordCharacter = "static-password-character"
    case hotpCounter = "hotp-counter"
    case hotpDigits = "hotp-digits"
    case ndefURILength = "ndef-uri-length"
    case hotpTokenIdentifier = "hotp-token-identifier"
    case hotpTokenIdentifierSerial = "hotp-token-identifier-serial"
    case ndefMalformed = "ndef-malformed"
    case ndefUnsupported = "ndef-unsupported"
    case noOTP = "no-otp"
    case notYubicoOTP = "not-yubico-otp"
    case otpCRC = "otp-crc"
    case invalidInput = "invalid-input"
    case notHex = "not-hex"
    case oddHex = "odd-hex"
    // FIDO2.
    case wrongPIN = "wrong-pin"
    case pinBlocked = "pin-blocked"
    case pinAuthBlocked = "pin-auth-blocked"
    case pinNotSet = "pin-not-set"
    case pinRequired = "pin-required"
    case pinPolicy = "pin-policy"
    case pinTooSimple = "pin-too-simple"
    case pinChangeRequired = "pin-change-required"
    case minPINLengthDecrease = "min-pin-length-decrease"
    case tooManyRelyingParties = "too-many-relying-parties"
    case fingerprintNameTooLong = "fingerprint-name-too-long"
    case fingerprintStoreFull = "fingerprint-store-full"
    case noSuchFingerprint = "no-such-fingerprint"
    case enrollmentCancelled = "enrollment-cancelled"
    case pinTokenInvalid = "pin-token-invalid"
    case pinTooShort = "pin-too-short"
    case pinTooLong = "pin-too-long"
    case pinHasNUL = "pin-has-nul"
    case noPINSupport = "no-pin-support"
    case u2fOnly = "u2f-only"
    case noCommonPINProtocol = "no-common-pin-protocol"
    case notAllowed = "not-allowed"
    case noCredentials = "no-credentials"
    case unknownCredential = "unknown-credential"
    case credentialStoreFull = "credential-store-full"
    case credentialExcluded = "credential-excluded"
    case operationDenied = "operation-denied"
    case uvBlocked = "uv-blocked"
    case ctapError = "ctap-error"
    case signatureInvalid = "signature-invalid"
    // PIV.
    case pivWrongPIN = "piv-wrong-pin"
    case pivPINBlocked = "piv-pin-blocked"
    case pivWrongPUK = "piv-wrong-puk"
    case pivPUKBlocked = "piv-puk-blocked"
    case pivPINLength = "piv-pin-length"
    case managementKeyWrong = "management-key-wrong"
    case managementKeyNotGenuine = "management-key-not-genuine"
    case managementKeyLength = "management-key-length"
    case pivAlgorithm = "piv-algorithm"
    case pivNeedsAuthentication = "piv-needs-authentication"
    case pivResetRefused = "piv-reset-refused"
    case noKeyInSlot = "no-key-in-slot"
    case pivObjectMissing = "piv-object-missing"
    case pivNoRoom = "piv-no-room"
    case pivNeedsFirmware = "piv-needs-firmware"
    case pivRSAExponent = "piv-rsa-exponent"
    case pivPrivateKey = "piv-private-key"
    case attestationInvalid = "attestation-invalid"
    case pivNoCertificate = "piv-no-certificate"
    case pivNoPublicKey = "piv-no-public-key"
    case pivSlotHoldsKey = "piv-slot-holds-key"
    case pivPrintedHoldsManagementKey = "piv-printed-holds-management-key"
    case certificateSubject = "certificate-subject"
    case certificateNotSlotsKey = "certificate-not-slots-key"
    // OpenPGP.
    case openpgpWrongPassword = "openpgp-wrong-password"
    case openpgpPasswordBlocked = "openpgp-password-blocked"
    case openpgpPasswordLength = "openpgp-password-length"
    case openpgpNeedsAuthentication = "openpgp-needs-authentication"
    case openpgpKDF = "openpgp-kdf"
    case openpgpNoKey = "openpgp-no-key"
    case openpgpTouchFixed = "openpgp-touch-fixed"
    case openpgpNeedsFirmware = "openpgp-needs-firmware"
    case openpgpAlgorithm = "openpgp-algorithm"
    case openpgpConditions = "openpgp-conditions"
    // YubiHSM Auth.
    case hsmauthWrongManagementKey = "hsmauth-wrong-management-key"
    case hsmauthManagementKeyBlocked = "hsmauth-management-key-blocked"
    case hsmauthWrongPassword = "hsmauth-wrong-password"
    case hsmauthCredentialErased = "hsmauth-credential-erased"
    case hsmauthLabelExists = "hsmauth-label-exists"
    case hsmauthNoRoom = "hsmauth-no-room"
    case hsmauthNoSuchCredential = "hsmauth-no-such-credential"
    case hsmauthTouch = "hsmauth-touch"
    case hsmauthPasswordRefused = "hsmauth-password-refused"
    case hsmauthNotAsymmetric = "hsmauth-not-asymmetric"
    case hsmauthLabelLength = "hsmauth-label-length"
    case hsmauthKeyLength = "hsmauth-key-length"
    case hsmauthNeedsFirmware = "hsmauth-needs-firmware"
    // Device configuration (Management).
    case wrongLockCode = "wrong-lock-code"
    case configRefused = "config-refused"
    case lockCodeFormat = "lock-code-format"
    case lockCodeMismatch = "lock-code-mismatch"
    case notLocked = "not-locked"
    case configTooLarge = "config-too-large"
    case configNeedsFirmware = "config-needs-firmware"
    case deviceResetRefused = "device-reset-refused"
    case unknownApplication = "unknown-application"
    case transportNotSupported = "transport-not-supported"
    case applicationNotSupported = "application-not-supported"
    case enableAndDisable = "enable-and-disable"
    case nothingAsked = "nothing-asked"
    case disablesAll = "disables-all"
    case cutsConnection = "cuts-connection"
    case needsForce = "needs-force"
    case declined
    case timeoutRange = "timeout-range"
    // This computer.
    case fileUnwritable = "file-unwritable"
    case fileUnreadable = "file-unreadable"
    case fileInsecure = "file-insecure"
    case cryptoFailed = "crypto-failed"
    case unexpected

    /// The string-table key of the kind's text.
    public var textKey: String { "error." + rawValue }

    /// Kinds always worded by their problem (`accountText`), never by `textKey`.
    public static let wordedByProblem: Set<ErrorKind> = [.invalidAccount]

    /// How the command line ends on an error of this kind.
    public enum Exit: Sendable, Equatable {
        /// 1: the operation failed.
        case failed
        /// 2: what the user gave cannot be used; nothing was sent or changed.
        case usage
        /// 3: no key to work with (pcscd, readers, keys).
        case noKey
    }

    public var exit: Exit {
        switch self {
        case .pcscdNotRunning, .pcscdNotInstalled, .pcscdRefused, .noReaders, .noKeyFound, .noKeyInReader: return .noKey
        case .severalKeys, .invalidAccount, .invalidURI, .notHex, .oddHex, .pinTooShort, .pinTooLong, .pinHasNUL,
            .invalidInput, .minPINLengthDecrease, .tooManyRelyingParties, .fingerprintNameTooLong,
            .challengeTooLong, .hmacKeyLength, .accessCodeLength, .accessCodeTooSimple, .noSuchSlot, .pivPINLength,
            .managementKeyLength,
            .pivAlgorithm, .publicIDLength, .privateIDLength, .aesKeyLength, .staticPasswordLength,
            .staticPasswordCharacter, .hotpCounter, .hotpDigits, .ndefURILength, .hotpTokenIdentifier, .lockCodeFormat,
            .lockCodeMismatch,
            .notLocked,
            .unknownApplication, .enableAndDisable, .nothingAsked, .disablesAll, .cutsConnection, .needsForce,
            .timeoutRange, .ambiguousAccount, .sshApplication, .sshUserTooLong, .sshAmbiguousKey, .certificateSubject,
            .openpgpPasswordLength, .hsmauthLabelLength, .hsmauthKeyLength, .qrNotAnImage, .qrImageDamaged,
            .qrImageTooLarge, .qrFileTooLarge, .qrNoCode, .qrSeveralCodes, .qrNotAccount, .pskcKeyLength:
            return .usage
        default: return .failed
        }
    }

    /// The key went away during the operation (the key monitor says when it is back).
    public var keyGone: Bool {
        switch self {
        case .keyRemoved, .readerGone, .noKeyInReader, .keyUnresponsive, .readerFailed, .hidGone, .connectionClosed:
            return true
        default: return false
        }
    }
}

/// An error that says itself what went wrong: KeyKit's errors and ykterm's own, each classified and worded in
/// its extension here.
protocol ExplainableError: Error {
    var explanation: ErrorExplanation { get }
}

extension ErrorExplanation {
    /// An answer that cannot be read, and what is wrong with which part of it.
    static func malformedAnswer(_ m: Malformation) -> ErrorExplanation {
        ErrorExplanation(kind: .malformedAnswer, detail: malformationText(m))
    }

    /// A status word the key refused a command with, and what it means.
    static func refused(_ sw: StatusWord) -> ErrorExplanation {
        ErrorExplanation(kind: .refused, ["status": sw.hexString], nested: ["meaning": statusText(sw)])
    }

    static func explain(_ error: any Error) -> ErrorExplanation {
        if let e = error as? any ExplainableError { return e.explanation }
        switch error {
        case let e as EveryKeyError:
            switch e {
            case .notPluggedIn(let serial, let name?):
                return ErrorExplanation(
                    kind: .noKeyFound,
                    nested: ["which": UIText("error.which.named", ["serial": String(serial), "name": name])])
            case .notPluggedIn(let serial, nil):
                return ErrorExplanation(
                    kind: .noKeyFound, nested: ["which": UIText("error.which.serial", ["serial": String(serial)])])
            case .noKeys: return ErrorExplanation(kind: .noKeyFound, ["which": ""])
            }
        case let e as FIDOOperationError:
            switch e {
            case .pinAlreadySet: return ErrorExplanation(kind: .pinAlreadySet)
            case .pinChangeUncertain(let cause): return explain(cause)
            case .pinNeeded: return ErrorExplanation(kind: .pinRequired)
            case .tooManyRelyingParties(let max, let given):
                return ErrorExplanation(kind: .tooManyRelyingParties, ["max": String(max), "count": String(given)])
            }
        case OTPOperationError.accessCodeTooSimple: return ErrorExplanation(kind: .accessCodeTooSimple)
        // The command line asks before a fixed touch policy; an answer it did not give changed nothing.
        case is OpenPGPOperationError: return ErrorExplanation(kind: .declined)
        case let e as Gzip.Error: return .malformedAnswer(Malformation(.certificate, .gzip(e)))
        case let e as Hex.DecodeError:
            switch e {
            case .invalidCharacter(let c, let offset):
                return ErrorExplanation(kind: .notHex, ["character": String(c), "position": String(offset + 1)])
            case .oddLength(let n): return ErrorExplanation(kind: .oddHex, ["count": String(n)])
            }
        case let e as Modhex.DecodeError: return ErrorExplanation(kind: .invalidInput, detail: modhexText(e))
        case let e as TLV.DecodeError: return .malformedAnswer(Malformation(.answer, .tlv(e)))
        case let e as CBORError: return .malformedAnswer(Malformation(.answer, .cbor(e)))
        case let e as AtomicFile.WriteError:
            return ErrorExplanation(kind: .fileUnwritable, ["path": e.path, "detail": e.reason])
        case let e as CertificateIssuer.IssueError:
            switch e {
            case .crypto(let c): return c.explanation
            case .keyCannotSign: return CryptoError.keyType.explanation
            case .noIssuer: return ErrorExplanation(kind: .invalidInput, detail: UIText("crypto.no-issuer"))
            }
        case is CancellationError: return ErrorExplanation(kind: .cancelled)
        case is KeyRequestInterrupted: return ErrorExplanation(kind: .interrupted)
        default: return ErrorExplanation(kind: .unexpected, ["detail": String(describing: error)])
        }
    }
}

extension SmartCardError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .serviceUnavailable:
            return ErrorExplanation(kind: PCSCDaemon.isInstalled() ? .pcscdNotRunning : .pcscdNotInstalled)
        case .accessDenied:
            let user = PCSCDaemon.userName()
            return ErrorExplanation(
                kind: .pcscdRefused,
                ["user": user, "file": PCSCDaemon.polkitRuleFile, "rule": PCSCDaemon.polkitRule(user: user)])
        case .noReaders: return ErrorExplanation(kind: .noReaders)
        case .unknownReader(let r): return ErrorExplanation(kind: .readerGone, ["reader": r])
        case .noCard(let r): return ErrorExplanation(kind: .noKeyInReader, ["reader": r])
        case .cardRemoved: return ErrorExplanation(kind: .keyRemoved)
        case .sharingViolation(let r): return ErrorExplanation(kind: .keyHeldElsewhere, ["reader": r])
        case .unresponsive: return ErrorExplanation(kind: .keyUnresponsive)
        case .readerNotAnswering(let r):
            let seconds = PCSCConnection.readerTimeout
            let text = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
            return ErrorExplanation(kind: .readerNotAnswering, ["reader": r, "seconds": text])
        case .timeout: return ErrorExplanation(kind: .timeout)
        case .cancelled: return ErrorExplanation(kind: .cancelled)
        case .communication(let function, let code):
            return ErrorExplanation(
                kind: .readerFailed,
                ["function": function, "code": "0x" + String(code, radix: 16, uppercase: true)])
        case .pcsc(let code, let function):
            return ErrorExplanation(
                kind: .pcscFailed,
                ["function": function, "code": "0x" + String(code, radix: 16, uppercase: true)])
        case .invalidAPDU(let problem):
            return ErrorExplanation(kind: .invalidInput, detail: ErrorExplanation.apduText(problem))
        case .malformedResponse(let m): return .malformedAnswer(m)
        case .status(let sw): return .refused(sw)
        case .emptyResponsePart(let sw, let fetch):
            return ErrorExplanation(kind: .exchangeBrokeOff, ["status": sw.hexString, "fetch": fetch])
        case .applicationNotAvailable(let name):
            return ErrorExplanation(kind: .applicationMissing, ["application": name])
        case .closed: return ErrorExplanation(kind: .connectionClosed)
        case .deviceInfoNeedsFirmware(let version):
            return ErrorExplanation(
                kind: .deviceInfoNeedsFirmware,
                [
                    "actual": version.description,
                    "minimum": ManagementSession.readConfigMinimum.description,
                ])
        }
    }
}

extension KeyFinderError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .noKey(let selector):
            let which: UIText
            switch (selector.reader, selector.serial) {
            case (nil, nil): return ErrorExplanation(kind: .noKeyFound, ["which": ""])
            case (let r?, nil): which = UIText("error.which.reader", ["reader": r])
            case (nil, let n?): which = UIText("error.which.serial", ["serial": String(n)])
            case (let r?, let n?): which = UIText("error.which.reader-serial", ["reader": r, "serial": String(n)])
            }
            return ErrorExplanation(kind: .noKeyFound, nested: ["which": which])
        case .ambiguous(let labels):
            return ErrorExplanation(kind: .severalKeys, ["keys": labels.map { "\n  " + $0 }.joined()])
        }
    }
}

extension KeyRouteError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .notOnThisKey(let application, let interfaces):
            let has = interfaces.map(\.rawValue).joined(separator: ", ")
            let needs: String
            switch application {
            case .fido: needs = "FIDO HID, NFC"
            case .otp: needs = "CCID, OTP HID, NFC"
            default: needs = "CCID, NFC"
            }
            return ErrorExplanation(
                kind: .interfaceMissing, ["needs": needs, "has": has.isEmpty ? "-" : has],
                nested: ["application": UIText("application." + application.rawValue)])
        case .noSmartCardInterface(let application, let key, let interfaces):
            let has = interfaces.map(\.rawValue).joined(separator: ", ")
            return ErrorExplanation(
                kind: .applicationNotOnKey, ["key": key, "has": has.isEmpty ? "-" : has],
                nested: ["application": UIText("application." + application.rawValue)])
        }
    }
}

extension PIVOperationError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        // An answer the command line did not give (it asks each question once).
        case .needs: return ErrorExplanation(kind: .pivNeedsAuthentication)
        case .noCertificate(let slot): return ErrorExplanation(kind: .pivNoCertificate, ["slot": slot.description])
        case .noPublicKey(let slot): return ErrorExplanation(kind: .pivNoPublicKey, ["slot": slot.description])
        case .badSubject(let text): return ErrorExplanation(kind: .certificateSubject, ["subject": text])
        case .certificateNotTheSlotsKey(let slot):
            return ErrorExplanation(kind: .certificateNotSlotsKey, ["slot": slot.description])
        case .managementKeyLength(_, let expected, let given):
            return ErrorExplanation(kind: .managementKeyLength, ["expected": String(expected), "count": String(given)])
        case .slotHoldsKey(let slot): return ErrorExplanation(kind: .pivSlotHoldsKey, ["slot": slot.description])
        case .printedHoldsManagementKey: return ErrorExplanation(kind: .pivPrintedHoldsManagementKey)
        }
    }
}

extension SSHOperationError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .exists(let application, let user):
            return ErrorExplanation(kind: .sshKeyExists, ["application": application, "user": user ?? "-"])
        case .notAnSSHApplication(let a): return ErrorExplanation(kind: .sshApplication, ["application": a])
        case .userTooLong(let u): return ErrorExplanation(kind: .sshUserTooLong, ["user": u])
        case .noSuchKey(let id): return ErrorExplanation(kind: .sshNoSuchKey, ["id": id])
        case .ambiguousKey(let id): return ErrorExplanation(kind: .sshAmbiguousKey, ["id": id])
        }
    }
}

extension OATHOperationError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .ambiguous(let query, let matches):
            return ErrorExplanation(
                kind: .ambiguousAccount,
                ["query": query, "accounts": matches.map { "  " + $0 }.joined(separator: "\n")])
        case .renameTargetTaken(let id): return ErrorExplanation(kind: .renameTargetTaken, ["account": id])
        case .hasPassword: return ErrorExplanation(kind: .oathHasPassword)
        case .noPassword: return ErrorExplanation(kind: .oathNoPassword)
        }
    }
}

extension PSKCError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .notXML(let reason): return ErrorExplanation(kind: .pskcInvalid, ["detail": reason])
        case .notPSKC: return ErrorExplanation(kind: .pskcInvalid, ["detail": "KeyContainer"])
        case .malformed(let element): return ErrorExplanation(kind: .pskcInvalid, ["detail": element])
        case .unsupported(let what): return ErrorExplanation(kind: .pskcUnsupported, ["what": what])
        case .keyNeeded: return ErrorExplanation(kind: .pskcKeyNeeded)
        case .keyLength(let length): return ErrorExplanation(kind: .pskcKeyLength, ["length": String(length)])
        case .wrongKey: return ErrorExplanation(kind: .pskcWrongKey)
        }
    }
}

extension OATHError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .invalidCredential(let problem):
            return ErrorExplanation(kind: .invalidAccount, text: ErrorExplanation.accountText(problem))
        case .invalidURI(let problem):
            return ErrorExplanation(kind: .invalidURI, text: ErrorExplanation.uriText(problem))
        case .wrongPassword: return ErrorExplanation(kind: .wrongPassword)
        case .passwordRequired: return ErrorExplanation(kind: .passwordRequired)
        case .notSupported(let feature, let minimum, let actual):
            let kind: ErrorKind
            switch feature {
            case .rename: kind = .renameNeedsFirmware
            case .touch: kind = .touchNeedsFirmware
            case .sha512: kind = .sha512NeedsFirmware
            }
            return ErrorExplanation(kind: kind, ["minimum": minimum.description, "actual": actual.description])
        case .noSpace: return ErrorExplanation(kind: .noRoom)
        case .noSuchCredential(let id): return ErrorExplanation(kind: .noSuchAccount, ["account": id])
        case .credentialExists(let id): return ErrorExplanation(kind: .accountExists, ["account": id])
        case .keyResponseMismatch: return ErrorExplanation(kind: .keyNotGenuine)
        case .touchTimeout: return ErrorExplanation(kind: .touchTimeout)
        case .commandNotSupported(let command, let sw):
            let kind: ErrorKind
            switch command {
            case .reset: kind = .oathResetNotSupported
            case .setCode: kind = .oathPasswordNotSupported
            case .rename: kind = .oathRenameNotSupported
            }
            return ErrorExplanation(kind: kind, ["status": sw.hexString])
        }
    }
}

extension ErrorExplanation {
    /// The words for what is wrong with an account's fields: `account.<problem>`.
    public static func accountText(_ problem: AccountProblem) -> UIText {
        switch problem {
        case .emptyName: return UIText("account.empty-name")
        case .emptySecret: return UIText("account.empty-secret")
        case .field(let field, let value):
            return UIText("account.field." + field.rawValue, ["value": value])
        case .secretCharacter(let character, let position):
            return UIText("account.secret-character", ["character": character, "position": String(position)])
        case .secretPaddingEarly(let position):
            return UIText("account.secret-padding-early", ["position": String(position)])
        case .secretLength(let count): return UIText("account.secret-length", ["count": String(count)])
        case .secretPaddingCount(let given, let count, 0):
            return UIText("account.secret-padding-none", ["given": String(given), "count": String(count)])
        case .secretPaddingCount(let given, let count, let needed):
            return UIText(
                "account.secret-padding-count",
                ["given": String(given), "count": String(count), "needed": String(needed)])
        case .idTooLong(let id, let bytes, let maximum):
            return UIText("account.id-too-long", ["id": id, "bytes": String(bytes), "maximum": String(maximum)])
        case .nameTaken(let id): return UIText("account.name-taken", ["id": id])
        }
    }

    /// The words for what is wrong with a URI: `uri.<problem>`, or the account's problem as such.
    public static func uriText(_ problem: URIProblem) -> UIText {
        func part(
            _ p: URIPart, _ label: String, _ parameterName: String, _ parameter: String,
            _ arguments: [String: String]
        ) -> UIText {
            switch p {
            case .label: return UIText(label, arguments)
            case .parameterName: return UIText(parameterName, arguments)
            case .parameter(let name): return UIText(parameter, arguments.merging(["name": name]) { a, _ in a })
            }
        }
        switch problem {
        case .empty: return UIText("uri.empty")
        case .noScheme(let text): return UIText("uri.no-scheme", nested: ["text": .excerpt(text)])
        case .noSlashes(let scheme): return UIText("uri.no-slashes", ["scheme": scheme])
        case .migrationExport: return UIText("uri.migration-export")
        case .scheme(let scheme, let expected): return UIText("uri.scheme", ["scheme": scheme, "expected": expected])
        case .missingType: return UIText("uri.missing-type")
        case .missingLabel(let type): return UIText("uri.missing-label", ["type": type])
        case .labelWithoutName(let label): return UIText("uri.label-without-name", nested: ["label": .excerpt(label)])
        case .missingSecret: return UIText("uri.missing-secret")
        case .percentEncoding(let p, let text):
            return part(
                p, "uri.percent-encoding.label", "uri.percent-encoding.parameter-name",
                "uri.percent-encoding.parameter",
                ["text": text])
        case .notUTF8(let p):
            return part(p, "uri.not-utf8.label", "uri.not-utf8.parameter-name", "uri.not-utf8.parameter", [:])
        case .parameterTwice(let name): return UIText("uri.parameter-twice", ["name": name])
        case .account(let problem): return accountText(problem)
        case .export(let problem): return UIText(ErrorKind.invalidURI.textKey, nested: ["detail": exportText(problem)])
        }
    }
}

/// Whether pcscd is installed decides what to do when it cannot be reached.
public enum PCSCDaemon {
    /// Where distributions install pcscd.
    public static let paths = ["/usr/sbin/pcscd", "/usr/bin/pcscd", "/usr/local/sbin/pcscd"]

    public static func isInstalled(paths: [String] = PCSCDaemon.paths) -> Bool {
        paths.contains { access($0, X_OK) == 0 }
    }

    /// Where a rule that lets a user at pcscd goes.
    public static let polkitRuleFile = "/etc/polkit-1/rules.d/50-ykterm-pcscd.rules"

    /// A polkit rule that lets `user` use pcscd and the cards in its readers from any session (pcsc-lite's two
    /// actions: `access_pcsc` to talk to pcscd, `access_card` to use a card).
    public static func polkitRule(user: String) -> String {
        let quoted = String(user.flatMap { $0 == "\\" || $0 == "\"" ? ["\\", $0] : [$0] })
        return """
            polkit.addRule(function(action, subject) {
                if ((action.id == "org.debian.pcsc-lite.access_pcsc" ||
                     action.id == "org.debian.pcsc-lite.access_card") && subject.user == "\(quoted)") {
                    return polkit.Result.YES;
                }
            });
            """
    }

    /// This process's user name (from the password database; the numeric ID when it has none).
    public static func userName() -> String {
        guard let entry = getpwuid(getuid()), let name = entry.pointee.pw_name else { return String(getuid()) }
        return String(cString: name)
    }
}
