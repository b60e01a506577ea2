import Foundation
import KeyKit
import Testing
@testable import AuthenticatorModel

/// The one table from errors to what the user is told (`ErrorExplanation`): every kind has its words in
/// every language, and every error KeyKit raises lands on a kind whose words its facts fill.
@Suite struct ErrorExplanationTests {
    static let tables = Language.allCases.map { ($0, StringTables.load(language: $0.rawValue)) }

    @Test func everyKindHasItsTextInEveryLanguageWithTheSamePlaceholders() {
        for kind in ErrorKind.allCases where !ErrorKind.wordedByProblem.contains(kind) {
            let english = Self.tables[0].1.english[kind.textKey]
            #expect(english != nil, "\(kind.textKey) has no English text")
            for (language, tables) in Self.tables {
                let text = tables.primary[kind.textKey]
                #expect(text != nil && text?.isEmpty == false, "\(kind.textKey) has no \(language) text")
                #expect(
                    StringTables.placeholders(in: text ?? "") == StringTables.placeholders(in: english ?? ""),
                    "\(kind.textKey): \(language) and English fill different places")
            }
        }
    }

    /// A HID node's refusal is worded for the session the tests run in: at the seat, or remote (SSH).
    static let hidPermission: ErrorKind = LoginSession.isRemote() ? .hidPermissionRemote : .hidPermission

    /// At least one error of every case of every KeyKit error type.
    static let errors: [(any Error, ErrorKind)] = [
        (SmartCardError.serviceUnavailable, PCSCDaemon.isInstalled() ? .pcscdNotRunning : .pcscdNotInstalled),
        (SmartCardError.accessDenied, .pcscdRefused),
        (SmartCardError.noReaders, .noReaders),
        (SmartCardError.unknownReader("R"), .readerGone), (SmartCardError.noCard("R"), .noKeyInReader),
        (SmartCardError.cardRemoved, .keyRemoved), (SmartCardError.sharingViolation("R"), .keyHeldElsewhere),
        (SmartCardError.unresponsive, .keyUnresponsive), (SmartCardError.readerNotAnswering("R"), .readerNotAnswering),
        (SmartCardError.timeout, .timeout),
        (SmartCardError.cancelled, .cancelled),
        (SmartCardError.communication(function: "SCardTransmit", code: 0x8010_0013), .readerFailed),
        (SmartCardError.pcsc(code: 0x8010_0001, function: "SCardConnect"), .pcscFailed),
        (SmartCardError.invalidAPDU(.zeroExtendedLc), .invalidInput),
        (SmartCardError.malformedResponse(Malformation(.oathCode, .missing)), .malformedAnswer),
        (SmartCardError.status(.invalidInstruction), .refused),
        (SmartCardError.emptyResponsePart(StatusWord(rawValue: 0x61FF), after: "SEND REMAINING"), .exchangeBrokeOff),
        (SmartCardError.applicationNotAvailable("OATH"), .applicationMissing),
        (SmartCardError.closed, .connectionClosed),
        (SmartCardError.deviceInfoNeedsFirmware(Version(4, 0, 0)), .deviceInfoNeedsFirmware),
        (KeyFinderError.noKey(KeySelector(reader: "Yubi", serial: 123)), .noKeyFound),
        (KeyFinderError.ambiguous(["a", "b"]), .severalKeys),
        (KeyRouteError.notOnThisKey(.fido, [.ccid]), .interfaceMissing),
        (KeyRouteError.notOnThisKey(.oath, []), .interfaceMissing),
        (KeyRouteError.noSmartCardInterface(.hsmAuth, key: "Yubico Security Key NFC", [.fido]), .applicationNotOnKey),
        (OATHError.invalidCredential(.emptySecret), .invalidAccount),
        (OATHError.invalidURI(.export(.noAccounts)), .invalidURI),
        (OATHError.wrongPassword, .wrongPassword), (OATHError.passwordRequired, .passwordRequired),
        (
            OATHError.notSupported(feature: .rename, minimum: Version(5, 3, 1), actual: Version(5, 2, 0)),
            .renameNeedsFirmware
        ),
        (
            OATHError.notSupported(feature: .touch, minimum: Version(4, 2, 4), actual: Version(4, 2, 0)),
            .touchNeedsFirmware
        ),
        (
            OATHError.notSupported(feature: .sha512, minimum: Version(4, 3, 1), actual: Version(4, 2, 0)),
            .sha512NeedsFirmware
        ),
        (OATHError.noSpace, .noRoom), (OATHError.noSuchCredential("a"), .noSuchAccount),
        (OATHError.credentialExists("a"), .accountExists), (OATHError.keyResponseMismatch, .keyNotGenuine),
        (OATHError.touchTimeout, .touchTimeout),
        (PSKCError.notXML("line 1"), .pskcInvalid), (PSKCError.notPSKC, .pskcInvalid),
        (PSKCError.malformed("Secret"), .pskcInvalid), (PSKCError.unsupported("kw-aes128"), .pskcUnsupported),
        (PSKCError.keyNeeded, .pskcKeyNeeded), (PSKCError.keyLength(5), .pskcKeyLength),
        (PSKCError.wrongKey, .pskcWrongKey),
        (OATHOperationError.ambiguous("a", ["a1", "a2"]), .ambiguousAccount),
        (OATHOperationError.renameTargetTaken("a"), .renameTargetTaken),
        (OATHOperationError.hasPassword, .oathHasPassword), (OATHOperationError.noPassword, .oathNoPassword),
        (FIDOOperationError.pinAlreadySet, .pinAlreadySet),
        (FIDOOperationError.pinChangeUncertain(SmartCardError.cardRemoved), .keyRemoved),
        (PIVOperationError.noCertificate(.signature), .pivNoCertificate),
        (PIVOperationError.certificateNotTheSlotsKey(.authentication), .certificateNotSlotsKey),
        (PIVOperationError.managementKeyLength(.aes192, expected: 24, given: 16), .managementKeyLength),
        (PIVOperationError.needs(.pin), .pivNeedsAuthentication),
        (FIDOOperationError.pinNeeded, .pinRequired),
        (FIDOOperationError.tooManyRelyingParties(max: 1, given: 2), .tooManyRelyingParties),
        (OATHError.commandNotSupported(.rename, .functionNotSupported), .oathRenameNotSupported),
        (OATHError.commandNotSupported(.reset, .invalidInstruction), .oathResetNotSupported),
        (OATHError.commandNotSupported(.setCode, .classNotSupported), .oathPasswordNotSupported),
        (OTPError.invalidSlot(3), .noSuchSlot), (OTPError.slotEmpty(1), .slotEmpty),
        (OTPError.notChallengeResponse(2), .slotNotChallengeResponse), (OTPError.touchTimeout(2), .touchTimeout),
        (OTPError.challengeTooLong(65), .challengeTooLong), (OTPError.invalidKey(21), .hmacKeyLength),
        (OTPError.invalidAccessCode, .accessCodeLength), (OTPError.configurationRefused, .slotRefused),
        (OTPOperationError.accessCodeTooSimple, .accessCodeTooSimple),
        (OTPError.unexpectedResponse(Malformation(.hmacResponse, .length(3))), .malformedAnswer),
        (OTPError.invalidPublicID(17), .publicIDLength), (OTPError.invalidPrivateID(5), .privateIDLength),
        (OTPError.invalidAESKey(15), .aesKeyLength), (OTPError.invalidPasswordLength(39), .staticPasswordLength),
        (OTPError.unencodableCharacter(offset: 2, layout: .de), .staticPasswordCharacter),
        (OTPError.invalidMovingFactor(17), .hotpCounter), (OTPError.invalidDigits(7), .hotpDigits),
        (OTPError.ndefTooLong(60), .ndefURILength), (OTPError.invalidTokenIdentifier, .hotpTokenIdentifier),
        (OTPError.tokenIdentifierNeedsSerial, .hotpTokenIdentifierSerial),
        (OTPHIDError.permissionDenied("/dev/hidraw1"), hidPermission),
        (OTPHIDError.deviceGone("/dev/hidraw1"), .hidGone),
        (OTPHIDError.ioFailed(call: "HIDIOCGFEATURE", path: "/dev/hidraw1", errno: 5), .hidFailed),
        (OTPHIDError.malformedReport(Malformation(.featureReport, .length(3))), .malformedAnswer),
        (OTPHIDError.badChecksum, .damagedAnswer), (OTPHIDError.commandRejected, .slotRefused),
        (OTPHIDError.touchTimeout, .touchTimeout), (OTPHIDError.timeout, .timeout),
        (OTPHIDError.closed, .connectionClosed),
        (NDEFError.malformed(Malformation(.ndefMessage, .empty)), .ndefMalformed),
        (NDEFError.chunkedRecords, .ndefUnsupported),
        (NDEFError.noOTP(.noRecords), .noOTP),
        (YubicoOTPError.keyLength(3), .invalidInput), (YubicoOTPError.otpTooShort(3), .notYubicoOTP),
        (YubicoOTPError.publicIDLength(9), .invalidInput), (YubicoOTPError.privateIDLength(2), .invalidInput),
        (YubicoOTPError.tokenLength(3), .notYubicoOTP), (YubicoOTPError.otpTooLong(50), .notYubicoOTP),
        (YubicoOTPError.otpOddLength(33), .notYubicoOTP), (YubicoOTPError.publicIDNotModhex("xx"), .notYubicoOTP),
        (YubicoOTPError.tokenNotModhex(.oddLength(3)), .notYubicoOTP),
        (YubicoOTPError.crcMismatch, .otpCRC),
        (CTAPError(CTAPError.pinInvalid, retriesLeft: 3), .wrongPIN), (CTAPError(CTAPError.pinBlocked), .pinBlocked),
        (CTAPError(CTAPError.pinAuthBlocked), .pinAuthBlocked), (CTAPError(CTAPError.pinNotSet), .pinNotSet),
        (CTAPError(CTAPError.pinRequired), .pinRequired), (CTAPError(CTAPError.pinPolicyViolation), .pinPolicy),
        (CTAPError(CTAPError.pinAuthInvalid), .pinTokenInvalid), (CTAPError(CTAPError.notAllowed), .notAllowed),
        (CTAPError(CTAPError.userActionTimeout), .touchTimeout), (CTAPError(CTAPError.actionTimeout), .touchTimeout),
        (CTAPError(CTAPError.keepaliveCancel), .cancelled), (CTAPError(CTAPError.noCredentials), .noCredentials),
        (CTAPError(CTAPError.invalidCredential), .unknownCredential),
        (CTAPError(CTAPError.keyStoreFull), .credentialStoreFull),
        (CTAPError(CTAPError.credentialExcluded), .credentialExcluded),
        (CTAPError(CTAPError.operationDenied), .operationDenied), (CTAPError(CTAPError.uvBlocked), .uvBlocked),
        (CTAPError(CTAPError.invalidCommand), .invalidCommand), (CTAPError(0x55), .ctapError),
        (FIDOSessionError.malformed(Malformation(.pinToken, .length(7))), .malformedAnswer),
        (FIDOSessionError.pinTooShort(minimum: 6, count: 4), .pinTooShort),
        (FIDOSessionError.pinTooLong(bytes: 70), .pinTooLong), (FIDOSessionError.pinHasNUL, .pinHasNUL),
        (FIDOSessionError.noPINSupport, .noPINSupport),
        (FIDOSessionError.signatureInvalid(.assertion), .signatureInvalid),
        (FIDOSessionError.notSupported(.credentialManagement), .notSupported),
        (FIDOSessionError.ctap2NotSupported, .u2fOnly),
        (FIDOSessionError.noCommonPINProtocol([3]), .noCommonPINProtocol),
        (FIDOSessionError.pinChangeRequired, .pinChangeRequired),
        (FIDOSessionError.minPINLengthDecrease(current: 8, requested: 6), .minPINLengthDecrease),
        (FIDOSessionError.notSupported(.authenticatorConfig), .notSupported),
        (FIDOSessionError.notSupported(.bioEnrollment), .notSupported),
        (FIDOSessionError.fingerprintNameTooLong(maximum: 15, bytes: 20), .fingerprintNameTooLong),
        (FIDOSessionError.noSuchFingerprint(templateID: [0x01, 0x02]), .noSuchFingerprint),
        (FIDOSessionError.enrollmentCancelled, .enrollmentCancelled),
        (CTAPError(CTAPError.fingerprintDatabaseFull), .fingerprintStoreFull),
        (FIDOTransportError.timeout, .timeout), (FIDOTransportError.channelBusy, .keyBusy),
        (FIDOTransportError.invalidSequence, .damagedAnswer), (FIDOTransportError.invalidLength, .invalidInput),
        (FIDOTransportError.unexpectedCommand, .damagedAnswer),
        (FIDOTransportError.ctaphidError(CTAPHID.ErrorCode.channelBusy), .keyBusy),
        (FIDOTransportError.ctaphidError(CTAPHID.ErrorCode.invalidCommand), .invalidCommand),
        (FIDOTransportError.ctaphidError(0x7F), .damagedAnswer),
        (FIDOTransportError.deviceGone, .keyRemoved), (FIDOTransportError.closed, .connectionClosed),
        (FIDOTransportError.malformed(Malformation(.initNonce, .mismatch)), .malformedAnswer),
        (HIDDeviceError.permissionDenied("/dev/hidraw0"), hidPermission), (HIDDeviceError.notFound("p"), .hidGone),
        (HIDDeviceError.openFailed(path: "p", reason: "r"), .hidFailed), (HIDDeviceError.unavailable, .hidUnavailable),
        (Hex.DecodeError.oddLength(3), .oddHex), (Hex.DecodeError.invalidCharacter("g", offset: 3), .notHex),
        (Modhex.DecodeError.oddLength(3), .invalidInput),
        (TLV.DecodeError.missingTag(0x71), .malformedAnswer), (CBORError.tooDeep, .malformedAnswer),
        (unwritable(), .fileUnwritable),
        (RememberedKeys.StoreError.unreadable("/x", "EIO"), .fileUnreadable),
        (RememberedKeys.StoreError.unwritable("/x", "EIO"), .fileUnwritable),
        (RememberedKeys.StoreError.insecure("/x", 0o644), .fileInsecure),
        (QRImageError.unreadable(path: "/x", reason: "EIO"), .fileUnreadable),
        (QRImageError.fileTooLarge(path: "/x", bytes: 1 << 27), .qrFileTooLarge),
        (QRImageError.notAnImage(path: "/x"), .qrNotAnImage),
        (QRImageError.damaged(path: "/x", format: "PNG", detail: "IDAT"), .qrImageDamaged),
        (QRImageError.pixels(path: "/x", width: 0, height: 0), .qrImageTooLarge),
        (QRImageError.noCode(path: "/x"), .qrNoCode),
        (QRImageError.severalCodes(path: "/x", count: 2), .qrSeveralCodes),
        (QRImageError.notAccountURI(path: "/x", text: "https:"), .qrNotAccount),
        (QRImageError.libraryMissing(library: "libzbar.so.0", package: "libzbar0", detail: "x"), .qrLibraryMissing),
        (CryptoError.openssl("EVP"), .cryptoFailed), (CancellationError(), .cancelled),
        (KeyRequestInterrupted(), .interrupted),
        (CryptoError.length(expected: 32, actual: 3), .invalidInput), (CryptoError.notDER(.certificate), .invalidInput),
        (CryptoError.notDER(.subjectPublicKeyInfo), .invalidInput), (CryptoError.notDER(.pkcs8), .invalidInput),
        (CryptoError.keyType, .invalidInput), (CryptoError.notOnCurve, .invalidInput),
        (CryptoError.invalidPrivateKey, .invalidInput), (CryptoError.rsaSize(512), .invalidInput),
        (CertificateIssuer.IssueError.noIssuer, .invalidInput),
        (CertificateIssuer.IssueError.keyCannotSign(.x25519), .invalidInput),
        (CertificateIssuer.IssueError.crypto(.openssl("X509_sign")), .cryptoFailed),
        (OpenPGPError.wrongPassword(.admin, retriesLeft: 2), .openpgpWrongPassword),
        (OpenPGPError.passwordBlocked(.reset), .openpgpPasswordBlocked),
        (OpenPGPError.passwordLength(.user, count: 4, minimum: 6, maximum: 127), .openpgpPasswordLength),
        (OpenPGPError.securityConditionNotSatisfied, .openpgpNeedsAuthentication),
        (OpenPGPError.kdfUnsupported(algorithm: 0x01, hash: nil), .openpgpKDF),
        (OpenPGPError.noKey(.signature), .openpgpNoKey),
        (OpenPGPError.touchPolicyFixed(.authentication), .openpgpTouchFixed),
        (OpenPGPError.notSupported(minimum: Version(5, 2, 0), actual: Version(4, 3, 7)), .openpgpNeedsFirmware),
        (OpenPGPError.unsupportedAlgorithm, .openpgpAlgorithm),
        (OpenPGPError.conditionsNotSatisfied, .openpgpConditions),
        (OpenPGPError.malformed(Malformation(.pwStatus, .tooShort(3, minimum: 7))), .malformedAnswer),
        (OpenPGPError.status(.wrongP1P2), .refused),
        (HSMAuthError.wrongManagementKey(retriesLeft: 7), .hsmauthWrongManagementKey),
        (HSMAuthError.wrongManagementKey(retriesLeft: 0), .hsmauthManagementKeyBlocked),
        (HSMAuthError.wrongCredentialPassword(retriesLeft: 3), .hsmauthWrongPassword),
        (HSMAuthError.wrongCredentialPassword(retriesLeft: 0), .hsmauthCredentialErased),
        (HSMAuthError.labelExists, .hsmauthLabelExists), (HSMAuthError.noSpace, .hsmauthNoRoom),
        (HSMAuthError.notFound, .hsmauthNoSuchCredential), (HSMAuthError.touchRequired, .hsmauthTouch),
        (HSMAuthError.passwordRefused, .hsmauthPasswordRefused), (HSMAuthError.notAsymmetric, .hsmauthNotAsymmetric),
        (HSMAuthError.labelLength(65), .hsmauthLabelLength),
        (HSMAuthError.keyLength(expected: 16, actual: 3), .hsmauthKeyLength),
        (HSMAuthError.notSupported(minimum: Version(5, 8, 0), actual: Version(5, 7, 2)), .hsmauthNeedsFirmware),
        (HSMAuthError.malformed(Malformation(.sessionKeys, .lengthExpected(3, expected: 48))), .malformedAnswer),
        (HSMAuthError.status(.wrongP1P2), .refused),
        (OpenPGPOperationError.touchPolicyNeedsConfirmation(.signature, .fixed), .declined),
        (OpenPGPOperationError.slotHoldsKey(.signature), .declined),
        (OpenPGPError.attestationNotSigned(.signature), .attestationInvalid),
        (OpenPGPError.attestedKeyMismatch(.decryption), .attestationInvalid),
        (PIVError.wrongPIN(retriesLeft: 2), .pivWrongPIN), (PIVError.pinBlocked, .pivPINBlocked),
        (PIVError.wrongPUK(retriesLeft: 1), .pivWrongPUK), (PIVError.pukBlocked, .pivPUKBlocked),
        (PIVError.pinLength(9), .pivPINLength), (PIVError.tooSimple(puk: true), .pinTooSimple),
        (OpenPGPError.tooSimple(.reset), .pinTooSimple),
        (PIVError.managementKeyAuthenticationFailed, .managementKeyWrong),
        (PIVError.managementKeyResponseMismatch, .managementKeyNotGenuine),
        (PIVError.managementKeyLength(expected: 24, actual: 16), .managementKeyLength),
        (PIVError.notAManagementKeyAlgorithm(.eccP256), .pivAlgorithm),
        (PIVError.notASlotKeyAlgorithm(.aes128), .pivAlgorithm),
        (PIVError.securityConditionNotSatisfied, .pivNeedsAuthentication),
        (PIVError.resetConditionsNotMet, .pivResetRefused),
        (PIVError.noKeyInSlot(.signature), .noKeyInSlot),
        (PIVError.objectNotFound(PIV.ObjectID.chuid), .pivObjectMissing),
        (PIVError.noSpace, .pivNoRoom), (PIVError.incorrectParameters(.incorrectParameters), .refused),
        (
            PIVError.notSupported(feature: .ed25519, minimum: Version(5, 7, 0), actual: Version(5, 4, 3)),
            .pivNeedsFirmware
        ),
        (PIVError.unsupportedRSAExponent, .pivRSAExponent), (PIVError.privateKeyComponents, .pivPrivateKey),
        (PIVError.unsupportedCertificateInfo(7), .malformedAnswer),
        (PIVError.attestationNotSignedByDevice(.authentication), .attestationInvalid),
        (PIVError.attestedKeyMismatch(.authentication), .attestationInvalid),
        (PIVError.malformed(.version(length: 2)), .malformedAnswer), (PIVError.status(.invalidInstruction), .refused),
        (BlockCipher.Error.keyLength(expected: 24, actual: 3), .managementKeyLength),
        (BlockCipher.Error.blockLength(expected: 8, actual: 3), .malformedAnswer),
        (BlockCipher.Error.notABlockCipher(.rsa2048), .pivAlgorithm),
        (BlockCipher.Error.openssl("EVP_CipherInit_ex"), .cryptoFailed),
        (RSAPadding.Error.digestLength(expected: 32, actual: 3), .invalidInput),
        (RSAPadding.Error.modulusTooShort(bits: 256), .invalidInput),
        (RSAPadding.Error.unsupportedModulus(bits: 100), .invalidInput),
        (RSAPadding.Error.saltLength(900), .invalidInput),
        (RSAPadding.Error.openssl("RSA_padding_add_PKCS1_PSS_mgf1"), .cryptoFailed),
        (Gzip.Error.truncated, .malformedAnswer),
        (ManagementError.lockCodeLength(3), .lockCodeFormat), (ManagementError.wrongLockCode, .wrongLockCode),
        (ManagementError.configurationRefused, .configRefused),
        (ManagementError.configurationTooLarge(300), .configTooLarge),
        (
            ManagementError.needsFirmware(.writeConfig, minimum: Version(5, 0, 0), actual: Version(4, 3, 7)),
            .configNeedsFirmware
        ),
        (
            ManagementError.needsFirmware(.deviceReset, minimum: Version(5, 6, 0), actual: Version(5, 4, 3)),
            .configNeedsFirmware
        ),
        (ManagementError.resetRefused(.invalidInstruction), .deviceResetRefused),
        (ConfigProblem.unknownApplication("x"), .unknownApplication),
        (ConfigProblem.transportNotSupported(.nfc), .transportNotSupported),
        (ConfigProblem.notSupported([.oath, .piv], .nfc), .applicationNotSupported),
        (ConfigProblem.enableAndDisable(.oath), .enableAndDisable), (ConfigProblem.nothingAsked, .nothingAsked),
        (ConfigProblem.disablesAll, .disablesAll), (ConfigProblem.cutsConnection(.ccid), .cutsConnection),
        (ConfigProblem.needsForce, .needsForce), (ConfigProblem.declined, .declined),
        (ConfigProblem.lockCodeFormat, .lockCodeFormat), (ConfigProblem.lockCodeMismatch, .lockCodeMismatch),
        (ConfigProblem.notLocked, .notLocked),
        (SSHOperationError.exists(application: "ssh:work", user: "alice"), .sshKeyExists),
        (SSHOperationError.notAnSSHApplication("web:x"), .sshApplication),
        (SSHOperationError.userTooLong(String(repeating: "u", count: 40)), .sshUserTooLong),
        (PIVOperationError.noPublicKey(.authentication), .pivNoPublicKey),
        (PIVOperationError.slotHoldsKey(.signature), .pivSlotHoldsKey),
        (PIVOperationError.printedHoldsManagementKey, .pivPrintedHoldsManagementKey),
        (PIVOperationError.badSubject("x"), .certificateSubject),
        (SSHOperationError.noSuchKey("ab"), .sshNoSuchKey), (SSHOperationError.ambiguousKey("a"), .sshAmbiguousKey),
        (ConfigProblem.timeoutRange("--chalresp-timeout", maximum: 255), .timeoutRange),
    ]

    @Test func everyErrorLandsOnItsKindAndItsFactsFillTheText() {
        for (error, kind) in Self.errors {
            let explanation = ErrorExplanation(error)
            #expect(explanation.kind == kind, "\(error)")
            Self.expectWorded(explanation.text, "\(error)")
        }
        // Every kind but the catch-all is reached by some error (pcscd's two by whether it is installed, a HID
        // node's two by whether the session is remote).
        let reached = Set(Self.errors.map(\.1)).union([
            .pcscdNotRunning, .pcscdNotInstalled, .hidPermission, .hidPermissionRemote,
        ])
        #expect(Set(ErrorKind.allCases).subtracting(reached) == [.unexpected])
        #expect(PCSCDaemon.isInstalled(paths: ["/bin/sh"]) && !PCSCDaemon.isInstalled(paths: ["/nonexistent/pcscd"]))
    }

    /// `text` has words in every language, and its arguments and nested texts (themselves worded) fill all
    /// their places.
    static func expectWorded(_ text: UIText, _ what: String) {
        // A literal (what the user gave, quoted whole) is not looked up.
        if text.literal != nil { return }
        for (language, tables) in Self.tables {
            let template = tables.primary[text.key]
            #expect(template?.isEmpty == false, "\(what): no \(language) text \(text.key)")
            let filled = Set(text.arguments.keys).union(text.nested.keys)
            let missing = StringTables.placeholders(in: template ?? "").subtracting(filled)
            #expect(missing.isEmpty, "\(what) in \(language): nothing fills \(missing)")
        }
        for (name, inner) in text.nested { expectWorded(inner, what + " {" + name + "}") }
    }

    /// Every problem an account or a URI can have, worded in every language.
    @Test func everyAccountAndURIProblemIsWorded() {
        var account: [AccountProblem] = [
            .emptyName, .emptySecret, .secretCharacter("1", position: 3),
            .secretPaddingEarly(position: 2), .secretLength(9),
            .secretPaddingCount(given: 1, count: 16, needed: 0),
            .secretPaddingCount(given: 1, count: 10, needed: 6),
            .idTooLong(id: "x", bytes: 70, maximum: 64), .nameTaken("x"),
        ]
        account += AccountField.allCases.map { .field($0, "v") }
        let parts: [URIPart] = [.label, .parameterName, .parameter("issuer")]
        var uri: [URIProblem] = [
            .empty, .noScheme("x"), .noSlashes(scheme: "otpauth"), .migrationExport,
            .scheme("https", expected: "otpauth"), .missingType, .missingLabel(type: "totp"),
            .labelWithoutName("Ex:"), .missingSecret, .parameterTwice("secret"),
        ]
        uri += Self.exportProblems.map { .export($0) }
        uri += parts.map { .percentEncoding($0, "%zz") } + parts.map { .notUTF8($0) } + account.map { .account($0) }
        for p in account { Self.expectWorded(ErrorExplanation(OATHError.invalidCredential(p)).text, "\(p)") }
        for p in uri { Self.expectWorded(ErrorExplanation(OATHError.invalidURI(p)).text, "\(p)") }
    }

    @Test func theFactsAreInTheWords() {
        let tables = StringTables.load(language: "de")
        #expect(
            tables.text(ErrorExplanation(CTAPError(CTAPError.pinInvalid, retriesLeft: 3)).text)
                == "falsche PIN: noch 3 Versuche, bevor die PIN gesperrt wird")
        let english = StringTables.load(language: "en")
        #expect(
            english.text(ErrorExplanation(OATHError.commandNotSupported(.reset, .invalidInstruction)).text)
                == "This key does not support OATH reset (6D00); nothing was changed")
        #expect(
            english.text(ErrorExplanation(KeyFinderError.noKey(KeySelector(reader: "Yubi", serial: nil))).text)
                == "no key found (reader \"Yubi\"): insert a key, or see `ykterm list` and `ykterm doctor`")
        // A broken-off exchange blames the exchange, not the key.
        let brokeOff = english.text(
            ErrorExplanation(
                SmartCardError.emptyResponsePart(
                    StatusWord(rawValue: 0x61FF),
                    after: "SEND REMAINING")
            ).text)
        #expect(
            brokeOff.contains("announced more data but sent none")
                && brokeOff.contains("61FF with no data after SEND REMAINING"))
        #expect(!brokeOff.contains("supported key"))
        // No permission for a hidraw node: the udev rule, and where to find the command.
        for error: any Error in [
            OTPHIDError.permissionDenied("/dev/hidraw3"), HIDDeviceError.permissionDenied("/dev/hidraw3"),
        ] {
            let text = english.text(ErrorExplanation(error).text)
            #expect(text.contains("/dev/hidraw3") && text.contains("udev rule") && text.contains("ykterm doctor"))
        }
        #expect(
            english.text(ErrorExplanation(KeyRouteError.notOnThisKey(.oath, [.fido, .otp])).text)
                .hasPrefix("OATH needs one of these interfaces: CCID, NFC; this key has fido, otp"))
        #expect(
            english.text(
                ErrorExplanation(KeyRouteError.noSmartCardInterface(.openPGP, key: "Yubico Security Key NFC", [.fido]))
                    .text
            )
            .hasPrefix(
                "OpenPGP is not on this key: Yubico Security Key NFC has no smart-card (CCID) interface, only fido"))
        #expect(
            english.text(ErrorExplanation(Hex.DecodeError.invalidCharacter("g", offset: 3)).text)
                == "'g' at position 4 is not a hexadecimal digit")
        #expect(
            english.text(ErrorExplanation(KeyFinderError.ambiguous(["k1", "k2"])).text)
                == "several keys match; choose one with --reader or --device:\n  k1\n  k2")
    }

    @Test func whatTheCommandLineExitsWithAndWhatMeansTheKeyIsGone() {
        #expect(ErrorKind.pcscdNotRunning.exit == .noKey && ErrorKind.noKeyFound.exit == .noKey)
        #expect(ErrorKind.invalidURI.exit == .usage && ErrorKind.pinTooShort.exit == .usage)
        #expect(ErrorKind.severalKeys.exit == .usage)
        #expect(ErrorKind.wrongPIN.exit == .failed && ErrorKind.refused.exit == .failed)
        #expect(ErrorExplanation(SmartCardError.cardRemoved).kind.keyGone)
        #expect(ErrorExplanation(FIDOTransportError.deviceGone).kind.keyGone)
        #expect(!ErrorExplanation(OATHError.wrongPassword).kind.keyGone)
    }
}

/// What a message quotes of the user's input (`UIText.excerpt`).
@Suite struct ExcerptTests {
    @Test func shortInputIsQuotedWholeAndLongInputAsItsEndsWithItsLength() throws {
        let tables = StringTables.load(language: "en")
        #expect(
            tables.text(.excerpt(String(repeating: "a", count: UIText.excerptLimit)))
                == String(repeating: "a", count: 48))
        let long = "otpauth://" + String(repeating: "x", count: 69_980) + "END-OF-INPUT"
        #expect(
            tables.text(.excerpt(long)) == "otpauth://" + String(repeating: "x", count: 22) + "…"
                + "END-OF-INPUT [70002 characters]")
        let german = StringTables.load(language: "de")
        #expect(german.text(.excerpt(long)).hasSuffix("[70002 Zeichen]"))
        // In a message: a URI without a scheme.
        let message = tables.text(ErrorExplanation(OATHError.invalidURI(.noScheme(long))).text)
        #expect(message.count < 200 && message.contains("[70002 characters]"), "\(message)")
    }
}

/// Refusals a session not at the seat meets: pcscd's polkit policy and the seat's udev rule.
@Suite struct RemoteSessionExplanationTests {
    @Test func aRefusingPcscdGetsThePolkitRuleForThisUser() {
        let e = ErrorExplanation(SmartCardError.accessDenied)
        #expect(e.kind == .pcscdRefused && e.kind.exit == .noKey)
        let rule = PCSCDaemon.polkitRule(user: "alice")
        #expect(rule.contains(#"action.id == "org.debian.pcsc-lite.access_pcsc""#))
        #expect(rule.contains(#"action.id == "org.debian.pcsc-lite.access_card""#))
        #expect(rule.contains(#"subject.user == "alice""#) && rule.contains("polkit.Result.YES"))
        // A name that would break the rule's string is escaped.
        #expect(PCSCDaemon.polkitRule(user: #"a"b\c"#).contains(#"subject.user == "a\"b\\c""#))
        let text = StringTables.load(language: "en").text(e.text)
        #expect(text.contains("polkit") && text.contains(PCSCDaemon.polkitRuleFile))
        #expect(text.contains(PCSCDaemon.polkitRule(user: PCSCDaemon.userName())))
    }

    @Test func sshSessionsAndLogindsRemoteSessionsAreRemote() throws {
        let sessions = FileManager.default.temporaryDirectory.appendingPathComponent("ykterm-sessions-\(getpid())")
        try FileManager.default.createDirectory(at: sessions, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: sessions) }
        try "UID=1000\nREMOTE=1\nTYPE=tty\n".write(
            to: sessions.appendingPathComponent("7"), atomically: true, encoding: .utf8)
        try "UID=1000\nREMOTE=0\nSEAT=seat0\n".write(
            to: sessions.appendingPathComponent("2"), atomically: true, encoding: .utf8)
        let dir = sessions.path
        #expect(LoginSession.isRemote(environment: ["SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22"], sessions: dir))
        #expect(LoginSession.isRemote(environment: ["SSH_TTY": "/dev/pts/3"], sessions: dir))
        #expect(LoginSession.isRemote(environment: ["XDG_SESSION_ID": "7"], sessions: dir))
        #expect(!LoginSession.isRemote(environment: ["XDG_SESSION_ID": "2"], sessions: dir))
        #expect(!LoginSession.isRemote(environment: ["XDG_SESSION_ID": "../2"], sessions: dir))
        #expect(!LoginSession.isRemote(environment: ["SSH_CONNECTION": ""], sessions: dir))
    }

    @Test func aHIDNodeDeniedInARemoteSessionGetsTheGroupRule() {
        let seat = ErrorExplanation.hidPermission("/dev/hidraw3", remote: false)
        let remote = ErrorExplanation.hidPermission("/dev/hidraw3", remote: true)
        #expect(seat.kind == .hidPermission && remote.kind == .hidPermissionRemote)
        let text = StringTables.load(language: "en").text(remote.text)
        #expect(text.contains("/dev/hidraw3") && text.contains("uaccess") && text.contains("plugdev"))
    }
}

/// The error AtomicFile throws for a file it cannot write: one in a directory that cannot exist (/proc takes no
/// new entries).
private func unwritable() -> any Error {
    do {
        try AtomicFile.write([0], to: "/proc/ykterm-test/file", mode: 0o600)
    } catch {
        return error
    }
    Issue.record("AtomicFile wrote under /proc")
    return CancellationError()
}
