import Glibc
import KeyKit

// The OTP, NDEF, FIDO2 and HID errors, the QR images' and the remembered-keys store's explanations.

extension OTPError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .invalidSlot(let s): return ErrorExplanation(kind: .noSuchSlot, ["slot": String(s)])
        case .slotEmpty(let s): return ErrorExplanation(kind: .slotEmpty, ["slot": String(s)])
        case .notChallengeResponse(let s): return ErrorExplanation(kind: .slotNotChallengeResponse, ["slot": String(s)])
        case .touchTimeout: return ErrorExplanation(kind: .touchTimeout)
        case .challengeTooLong(let n): return ErrorExplanation(kind: .challengeTooLong, ["bytes": String(n)])
        case .invalidKey(let n): return ErrorExplanation(kind: .hmacKeyLength, ["bytes": String(n)])
        case .invalidAccessCode: return ErrorExplanation(kind: .accessCodeLength)
        case .configurationRefused: return ErrorExplanation(kind: .slotRefused)
        case .unexpectedResponse(let m): return .malformedAnswer(m)
        case .invalidPublicID(let n): return ErrorExplanation(kind: .publicIDLength, ["bytes": String(n)])
        case .invalidPrivateID(let n): return ErrorExplanation(kind: .privateIDLength, ["bytes": String(n)])
        case .invalidAESKey(let n): return ErrorExplanation(kind: .aesKeyLength, ["bytes": String(n)])
        case .invalidPasswordLength(let n): return ErrorExplanation(kind: .staticPasswordLength, ["count": String(n)])
        case .unencodableCharacter(let offset, let layout):
            return ErrorExplanation(
                kind: .staticPasswordCharacter,
                ["position": String(offset + 1), "layout": layout.rawValue.uppercased()])
        case .invalidMovingFactor(let n): return ErrorExplanation(kind: .hotpCounter, ["counter": String(n)])
        case .invalidDigits(let n): return ErrorExplanation(kind: .hotpDigits, ["digits": String(n)])
        case .ndefTooLong(let n): return ErrorExplanation(kind: .ndefURILength, ["bytes": String(n)])
        case .invalidTokenIdentifier: return ErrorExplanation(kind: .hotpTokenIdentifier)
        case .tokenIdentifierNeedsSerial: return ErrorExplanation(kind: .hotpTokenIdentifierSerial)
        }
    }
}

extension OTPHIDError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .permissionDenied(let path): return .hidPermission(path)
        case .deviceGone(let path): return ErrorExplanation(kind: .hidGone, ["path": path])
        case .ioFailed(let call, let path, let code):
            return ErrorExplanation(
                kind: .hidFailed, ["path": path, "detail": call + ": " + String(cString: strerror(code))])
        case .malformedReport(let m): return .malformedAnswer(m)
        case .badChecksum: return ErrorExplanation(kind: .damagedAnswer)
        case .commandRejected: return ErrorExplanation(kind: .slotRefused)
        case .touchTimeout: return ErrorExplanation(kind: .touchTimeout)
        case .timeout: return ErrorExplanation(kind: .timeout)
        case .closed: return ErrorExplanation(kind: .connectionClosed)
        }
    }
}

extension NDEFError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .malformed(let m):
            return ErrorExplanation(kind: .ndefMalformed, detail: ErrorExplanation.malformationText(m))
        case .chunkedRecords: return ErrorExplanation(kind: .ndefUnsupported)
        case .noOTP(let reason): return ErrorExplanation(kind: .noOTP, detail: ErrorExplanation.noOTPText(reason))
        }
    }
}

extension YubicoOTPError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .keyLength, .privateIDLength, .publicIDLength:
            return ErrorExplanation(kind: .invalidInput, detail: ErrorExplanation.yubicoOTPText(self))
        case .tokenLength, .otpTooShort, .otpTooLong, .otpOddLength, .tokenNotModhex, .publicIDNotModhex:
            return ErrorExplanation(kind: .notYubicoOTP, detail: ErrorExplanation.yubicoOTPText(self))
        case .crcMismatch: return ErrorExplanation(kind: .otpCRC)
        }
    }
}

extension QRImageError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .unreadable(let path, let why):
            return ErrorExplanation(kind: .fileUnreadable, ["path": path, "detail": why])
        case .fileTooLarge(let path, let bytes):
            return ErrorExplanation(
                kind: .qrFileTooLarge,
                ["path": path, "bytes": String(bytes), "maximum": String(QRImage.maximumFileBytes >> 20)])
        case .notAnImage(let path): return ErrorExplanation(kind: .qrNotAnImage, ["path": path])
        case .damaged(let path, let format, let detail):
            return ErrorExplanation(kind: .qrImageDamaged, ["path": path, "format": format, "detail": detail])
        case .pixels(let path, let width, let height):
            return ErrorExplanation(
                kind: .qrImageTooLarge, ["path": path, "width": String(width), "height": String(height)])
        case .noCode(let path): return ErrorExplanation(kind: .qrNoCode, ["path": path])
        case .severalCodes(let path, let count):
            return ErrorExplanation(kind: .qrSeveralCodes, ["path": path, "count": String(count)])
        case .notAccountURI(let path, let text):
            return ErrorExplanation(kind: .qrNotAccount, ["path": path, "text": text])
        case .libraryMissing(let library, let package, let detail):
            return ErrorExplanation(
                kind: .qrLibraryMissing, ["library": library, "package": package, "detail": detail])
        }
    }
}

extension RememberedKeys.StoreError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .unreadable(let path, let why):
            return ErrorExplanation(kind: .fileUnreadable, ["path": path, "detail": why])
        case .unwritable(let path, let why):
            return ErrorExplanation(kind: .fileUnwritable, ["path": path, "detail": why])
        case .insecure(let path, let mode):
            return ErrorExplanation(kind: .fileInsecure, ["path": path, "mode": String(mode, radix: 8)])
        }
    }
}

extension CTAPError: ExplainableError {
    var explanation: ErrorExplanation {
        switch code {
        case CTAPError.pinInvalid:
            return ErrorExplanation(kind: .wrongPIN, ["retries": retriesLeft.map(String.init) ?? "?"])
        case CTAPError.pinBlocked: return ErrorExplanation(kind: .pinBlocked)
        case CTAPError.pinAuthBlocked: return ErrorExplanation(kind: .pinAuthBlocked)
        case CTAPError.pinNotSet: return ErrorExplanation(kind: .pinNotSet)
        case CTAPError.pinRequired: return ErrorExplanation(kind: .pinRequired)
        case CTAPError.pinPolicyViolation: return ErrorExplanation(kind: .pinPolicy)
        case CTAPError.pinAuthInvalid: return ErrorExplanation(kind: .pinTokenInvalid)
        case CTAPError.notAllowed: return ErrorExplanation(kind: .notAllowed)
        case CTAPError.userActionTimeout, CTAPError.actionTimeout: return ErrorExplanation(kind: .touchTimeout)
        case CTAPError.keepaliveCancel: return ErrorExplanation(kind: .cancelled)
        case CTAPError.noCredentials: return ErrorExplanation(kind: .noCredentials)
        case CTAPError.invalidCredential: return ErrorExplanation(kind: .unknownCredential)
        case CTAPError.keyStoreFull: return ErrorExplanation(kind: .credentialStoreFull)
        case CTAPError.fingerprintDatabaseFull: return ErrorExplanation(kind: .fingerprintStoreFull)
        case CTAPError.credentialExcluded: return ErrorExplanation(kind: .credentialExcluded)
        case CTAPError.operationDenied: return ErrorExplanation(kind: .operationDenied)
        case CTAPError.uvBlocked: return ErrorExplanation(kind: .uvBlocked)
        case CTAPError.invalidCommand: return ErrorExplanation(kind: .invalidCommand)
        default: return ErrorExplanation(kind: .ctapError, ["name": name])
        }
    }
}

extension FIDOSessionError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .malformed(let m): return .malformedAnswer(m)
        case .pinTooShort(let minimum, let count):
            return ErrorExplanation(kind: .pinTooShort, ["minimum": String(minimum), "count": String(count)])
        case .pinTooLong(let bytes): return ErrorExplanation(kind: .pinTooLong, ["bytes": String(bytes)])
        case .pinHasNUL: return ErrorExplanation(kind: .pinHasNUL)
        case .noPINSupport: return ErrorExplanation(kind: .noPINSupport)
        case .signatureInvalid(let check):
            return ErrorExplanation(kind: .signatureInvalid, detail: UIText("signature." + check.rawValue))
        case .notSupported(let feature):
            return ErrorExplanation(
                kind: .notSupported, ["status": "-"], nested: ["what": ErrorExplanation.featureText(feature)])
        case .ctap2NotSupported: return ErrorExplanation(kind: .u2fOnly)
        case .noCommonPINProtocol(let offered):
            return ErrorExplanation(
                kind: .noCommonPINProtocol, ["offered": offered.map(String.init).joined(separator: ", ")])
        case .pinChangeRequired: return ErrorExplanation(kind: .pinChangeRequired)
        case .minPINLengthDecrease(let current, let requested):
            return ErrorExplanation(
                kind: .minPINLengthDecrease,
                [
                    "current": String(current),
                    "requested": String(requested),
                ])
        case .noSuchFingerprint(let id): return ErrorExplanation(kind: .noSuchFingerprint, ["id": id.hex])
        case .enrollmentCancelled: return ErrorExplanation(kind: .enrollmentCancelled)
        case .fingerprintNameTooLong(let maximum, let bytes):
            return ErrorExplanation(
                kind: .fingerprintNameTooLong, ["maximum": String(maximum), "bytes": String(bytes)])
        }
    }
}

extension FIDOTransportError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .timeout: return ErrorExplanation(kind: .timeout)
        case .channelBusy: return ErrorExplanation(kind: .keyBusy)
        case .invalidSequence, .unexpectedCommand: return ErrorExplanation(kind: .damagedAnswer)
        case .invalidLength: return ErrorExplanation(kind: .invalidInput, detail: UIText("hid.message-too-long"))
        case .ctaphidError(let code):
            switch code {
            case CTAPHID.ErrorCode.channelBusy, CTAPHID.ErrorCode.lockRequired: return ErrorExplanation(kind: .keyBusy)
            case CTAPHID.ErrorCode.invalidCommand: return ErrorExplanation(kind: .invalidCommand)
            default: return ErrorExplanation(kind: .damagedAnswer)
            }
        case .deviceGone: return ErrorExplanation(kind: .keyRemoved)
        case .closed: return ErrorExplanation(kind: .connectionClosed)
        case .malformed(let m): return .malformedAnswer(m)
        }
    }
}

extension HIDDeviceError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .permissionDenied(let path): return .hidPermission(path)
        case .notFound(let path): return ErrorExplanation(kind: .hidGone, ["path": path])
        case .openFailed(let path, let reason):
            return ErrorExplanation(kind: .hidFailed, ["path": path, "detail": reason ?? "open"])
        case .unavailable: return ErrorExplanation(kind: .hidUnavailable)
        }
    }
}

extension ErrorExplanation {
    /// A HID node this user may not open: the seat rule's advice, or, from a session not at the seat (which
    /// uaccess does not cover), the group rule's.
    static func hidPermission(_ path: String, remote: Bool = LoginSession.isRemote()) -> ErrorExplanation {
        remote
            ? ErrorExplanation(kind: .hidPermissionRemote, ["path": path, "group": LoginSession.udevGroup])
            : ErrorExplanation(kind: .hidPermission, ["path": path])
    }
}
