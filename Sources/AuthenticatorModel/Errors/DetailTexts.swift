import KeyKit

/// The words for the facts KeyKit's errors carry about bytes (an answer that cannot be read, a command that
/// cannot be encoded, an export or an OTP that does not decode): the `{detail}` of the kinds' texts.
extension ErrorExplanation {
    /// "the device information: 3 bytes, expected 5": `malformed.<problem>` with its part, `answer.<part>`.
    public static func malformationText(_ m: Malformation) -> UIText {
        UIText(m.problem.textKey, m.problem.arguments, nested: ["part": UIText("answer." + m.part.rawValue)])
    }

    /// What a status word means: `sw.<...>`.
    public static func statusText(_ sw: StatusWord) -> UIText {
        let meaning = sw.meaning
        return UIText(meaning.key, meaning.arguments)
    }

    static func apduText(_ p: APDUProblem) -> UIText {
        switch p {
        case .leOutOfRange(let le): return UIText("apdu.le-range", ["le": String(le)])
        case .dataTooLong(let n): return UIText("apdu.data-too-long", ["count": String(n)])
        case .notShort(let data, let le): return UIText("apdu.not-short", ["count": String(data), "le": String(le)])
        case .tooShort(let n): return UIText("apdu.too-short", ["count": String(n)])
        case .lengthMismatch(let declared, let following):
            return UIText("apdu.length-mismatch", ["declared": String(declared), "count": String(following)])
        case .truncatedExtendedLength: return UIText("apdu.truncated-extended-length")
        case .zeroExtendedLc: return UIText("apdu.zero-extended-lc")
        }
    }

    static func modhexText(_ e: Modhex.DecodeError) -> UIText {
        switch e {
        case .invalidCharacter(let c, let offset):
            return UIText("modhex.invalid-character", ["character": String(c), "position": String(offset + 1)])
        case .oddLength(let n): return UIText("modhex.odd-length", ["count": String(n)])
        }
    }

    static func yubicoOTPText(_ e: YubicoOTPError) -> UIText {
        switch e {
        case .keyLength(let n): return UIText("yubico-otp.key-length", ["count": String(n)])
        case .privateIDLength(let n): return UIText("yubico-otp.private-id-length", ["count": String(n)])
        case .publicIDLength(let n):
            return UIText(
                "yubico-otp.public-id-length",
                ["count": String(n), "maximum": String(YubicoOTP.maxPublicIDLength / 2)])
        case .tokenLength(let n): return UIText("yubico-otp.token-length", ["count": String(n)])
        case .otpTooShort(let n): return UIText("yubico-otp.too-short", ["count": String(n)])
        case .otpTooLong(let n): return UIText("yubico-otp.too-long", ["count": String(n)])
        case .otpOddLength(let n): return UIText("yubico-otp.odd-length", ["count": String(n)])
        case .tokenNotModhex(let m): return modhexText(m)
        case .publicIDNotModhex(let id): return UIText("yubico-otp.public-id-not-modhex", ["id": id])
        case .crcMismatch: return UIText(ErrorKind.otpCRC.textKey)
        }
    }

    static func noOTPText(_ reason: NDEFError.NoOTP) -> UIText {
        switch reason {
        case .noRecords: return UIText("ndef.no-records")
        case .emptyFile: return UIText("ndef.empty-file")
        case .invalidPattern(let p): return UIText("ndef.invalid-pattern", ["pattern": p])
        case .patternWithoutGroup(let p): return UIText("ndef.pattern-without-group", ["pattern": p])
        case .noMatch(let p, let texts):
            return UIText("ndef.no-match", ["pattern": p, "texts": texts.joined(separator: ", ")])
        case .notRecognised(let prefix): return UIText("ndef.not-recognised", ["prefix": prefix])
        }
    }

    static func featureText(_ f: FIDOSessionError.FIDOFeature) -> UIText {
        switch f {
        case .credentialManagement: return UIText("fido-feature.credential-management")
        case .updateUserInformation: return UIText("fido-feature.update-user-information")
        case .authenticatorConfig: return UIText("fido-feature.authenticator-config")
        case .setMinPINLength: return UIText("fido-feature.set-min-pin-length")
        case .alwaysUV: return UIText("fido-feature.always-uv")
        case .enterpriseAttestation: return UIText("fido-feature.enterprise-attestation")
        case .bioEnrollment: return UIText("fido-feature.bio-enrollment")
        case .attestationFormat(let format): return UIText("fido-feature.attestation-format", ["format": format])
        case .signatureAlgorithm(let number):
            return UIText("fido-feature.signature-algorithm", ["number": number.map(String.init) ?? "-"])
        }
    }

    /// What is wrong with a Google Authenticator export: `export.<problem>`, prefixed with where in it
    /// (`export.in-account`, `export.in-data`) for problems of its protocol buffer.
    static func exportText(_ p: ExportProblem) -> UIText {
        func inside(_ account: Int?, _ key: String, _ arguments: [String: String]) -> UIText {
            let place = account.map { UIText("export.in-account", ["account": String($0)]) } ?? UIText("export.in-data")
            return UIText(key, arguments, nested: ["place": place])
        }
        switch p {
        case .host(let host): return UIText("export.host", ["host": host])
        case .path(let path): return UIText("export.path", ["path": path])
        case .missingData: return UIText("export.missing-data")
        case .noAccounts: return UIText("export.no-accounts")
        case .nameNotUTF8(let n): return UIText("export.name-not-utf8", ["account": String(n)])
        case .issuerNotUTF8(let n): return UIText("export.issuer-not-utf8", ["account": String(n)])
        case .noName(let n, let label) where label.isEmpty: return UIText("export.no-name", ["account": String(n)])
        case .noName(let n, let label): return UIText("export.no-name-label", ["account": String(n), "label": label])
        case .md5(let shown): return UIText("export.md5", ["account": shown])
        case .algorithm(let shown, let v): return UIText("export.algorithm", ["account": shown, "value": String(v)])
        case .digits(let shown, let v): return UIText("export.digits", ["account": shown, "value": String(v)])
        case .type(let shown, let v): return UIText("export.type", ["account": shown, "value": String(v)])
        case .counter(let shown, let v):
            return UIText("export.counter", ["account": shown, "value": String(v), "maximum": String(UInt32.max)])
        case .emptySecret(let shown): return UIText("export.empty-secret", ["account": shown])
        case .base64Character(let c, let position):
            return UIText("export.base64-character", ["character": c, "position": String(position)])
        case .base64PaddingEarly: return UIText("export.base64-padding-early")
        case .dataEmpty: return UIText("export.data-empty")
        case .base64Length(let n): return UIText("export.base64-length", ["count": String(n)])
        case .base64Padding(let given, let count, let needed):
            return UIText(
                "export.base64-padding", ["given": String(given), "count": String(count), "needed": String(needed)])
        case .truncated(let account, let reading, let at):
            return inside(account, "export.truncated", ["reading": reading, "at": String(at)])
        case .varintTooLong(let account, let at): return inside(account, "export.varint-too-long", ["at": String(at)])
        case .fieldNumber(let account, let number, let at):
            return inside(account, "export.field-number", ["number": String(number), "at": String(at)])
        case .wireType(let account, let field, let type, let at):
            return inside(
                account, "export.wire-type", ["field": String(field), "type": String(type), "at": String(at)])
        case .fieldType(let account, let field, let found, let expected):
            return inside(account, "export.field-type", ["field": field, "found": found, "expected": expected])
        case .group(let account, let type): return inside(account, "export.group", ["type": String(type)])
        }
    }
}

/// OpenPGP's errors.
extension OpenPGPError: ExplainableError {
    var explanation: ErrorExplanation {
        func named(_ p: OpenPGP.Password) -> [String: UIText] { ["password": UIText("openpgp.password." + p.textName)] }
        switch self {
        case .wrongPassword(let p, let n):
            return ErrorExplanation(kind: .openpgpWrongPassword, ["retries": String(n)], nested: named(p))
        case .passwordBlocked(let p): return ErrorExplanation(kind: .openpgpPasswordBlocked, nested: named(p))
        case .passwordLength(let p, let count, let minimum, let maximum):
            return ErrorExplanation(
                kind: .openpgpPasswordLength,
                ["count": String(count), "minimum": String(minimum), "maximum": String(maximum)], nested: named(p))
        case .securityConditionNotSatisfied: return ErrorExplanation(kind: .openpgpNeedsAuthentication)
        case .kdfUnsupported(let algorithm, let hash):
            return ErrorExplanation(
                kind: .openpgpKDF,
                [
                    "algorithm": Hex.encode([algorithm], uppercase: true),
                    "hash": hash.map { Hex.encode([$0], uppercase: true) } ?? "-",
                ])
        case .noKey(let slot): return ErrorExplanation(kind: .openpgpNoKey, ["slot": slot.name.uppercased()])
        case .touchPolicyFixed(let slot):
            return ErrorExplanation(kind: .openpgpTouchFixed, ["slot": slot.name.uppercased()])
        case .notSupported(let minimum, let actual):
            return ErrorExplanation(
                kind: .openpgpNeedsFirmware, ["minimum": minimum.description, "actual": actual.description])
        case .unsupportedAlgorithm: return ErrorExplanation(kind: .openpgpAlgorithm)
        case .conditionsNotSatisfied: return ErrorExplanation(kind: .openpgpConditions)
        case .tooSimple(let p): return ErrorExplanation(kind: .pinTooSimple, nested: named(p))
        case .attestationNotSigned(let slot):
            return ErrorExplanation(
                kind: .attestationInvalid, ["slot": slot.name], nested: ["why": UIText("attestation.not-signed")])
        case .attestedKeyMismatch(let slot):
            return ErrorExplanation(
                kind: .attestationInvalid, ["slot": slot.name], nested: ["why": UIText("attestation.other-key")])
        case .malformed(let m): return .malformedAnswer(m)
        case .status(let sw): return .refused(sw)
        }
    }
}

/// YubiHSM Auth's errors.
extension HSMAuthError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .wrongManagementKey(0): return ErrorExplanation(kind: .hsmauthManagementKeyBlocked)
        case .wrongManagementKey(let n):
            return ErrorExplanation(kind: .hsmauthWrongManagementKey, ["retries": String(n)])
        case .wrongCredentialPassword(0): return ErrorExplanation(kind: .hsmauthCredentialErased)
        case .wrongCredentialPassword(let n):
            return ErrorExplanation(kind: .hsmauthWrongPassword, ["retries": String(n)])
        case .labelExists: return ErrorExplanation(kind: .hsmauthLabelExists)
        case .noSpace: return ErrorExplanation(kind: .hsmauthNoRoom, ["max": String(HSMAuth.maxCredentials)])
        case .notFound: return ErrorExplanation(kind: .hsmauthNoSuchCredential)
        case .touchRequired: return ErrorExplanation(kind: .hsmauthTouch)
        case .passwordRefused: return ErrorExplanation(kind: .hsmauthPasswordRefused)
        case .notAsymmetric: return ErrorExplanation(kind: .hsmauthNotAsymmetric)
        case .labelLength(let n): return ErrorExplanation(kind: .hsmauthLabelLength, ["count": String(n)])
        case .keyLength(let expected, let actual):
            return ErrorExplanation(kind: .hsmauthKeyLength, ["expected": String(expected), "count": String(actual)])
        case .notSupported(let minimum, let actual):
            return ErrorExplanation(
                kind: .hsmauthNeedsFirmware, ["minimum": minimum.description, "actual": actual.description])
        case .malformed(let m): return .malformedAnswer(m)
        case .status(let sw): return .refused(sw)
        }
    }
}

// PIV's errors and the crypto ones PIV meets.

extension PIVError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .wrongPIN(let n): return ErrorExplanation(kind: .pivWrongPIN, ["retries": String(n)])
        case .pinBlocked: return ErrorExplanation(kind: .pivPINBlocked)
        case .wrongPUK(let n): return ErrorExplanation(kind: .pivWrongPUK, ["retries": String(n)])
        case .pukBlocked: return ErrorExplanation(kind: .pivPUKBlocked)
        case .pinLength(let n): return ErrorExplanation(kind: .pivPINLength, ["count": String(n)])
        case .tooSimple(let puk):
            return ErrorExplanation(
                kind: .pinTooSimple, nested: ["password": UIText(puk ? "piv.secret.puk" : "piv.secret.pin")])
        case .managementKeyAuthenticationFailed: return ErrorExplanation(kind: .managementKeyWrong)
        case .managementKeyResponseMismatch: return ErrorExplanation(kind: .managementKeyNotGenuine)
        case .managementKeyLength(let expected, let actual):
            return ErrorExplanation(
                kind: .managementKeyLength, ["expected": String(expected), "count": String(actual)])
        case .notAManagementKeyAlgorithm(let a), .notASlotKeyAlgorithm(let a):
            return ErrorExplanation(kind: .pivAlgorithm, ["algorithm": a.description])
        case .securityConditionNotSatisfied: return ErrorExplanation(kind: .pivNeedsAuthentication)
        case .resetConditionsNotMet: return ErrorExplanation(kind: .pivResetRefused)
        case .noKeyInSlot(let slot): return ErrorExplanation(kind: .noKeyInSlot, ["slot": slot.description])
        case .objectNotFound(let id):
            return ErrorExplanation(kind: .pivObjectMissing, ["object": Hex.encode(id, uppercase: true)])
        case .noSpace: return ErrorExplanation(kind: .pivNoRoom)
        case .incorrectParameters(let sw), .status(let sw): return .refused(sw)
        case .notSupported(let feature, let minimum, let actual):
            return ErrorExplanation(
                kind: .pivNeedsFirmware, ["minimum": minimum.description, "actual": actual.description],
                nested: ["feature": UIText("piv-feature." + feature.textName)])
        case .unsupportedRSAExponent: return ErrorExplanation(kind: .pivRSAExponent)
        case .privateKeyComponents: return ErrorExplanation(kind: .pivPrivateKey)
        case .unsupportedCertificateInfo(let b):
            return ErrorExplanation(
                kind: .malformedAnswer,
                detail: ErrorExplanation.malformationText(
                    Malformation(.certificate, .value(Hex.encode([b], uppercase: true)))))
        case .attestationNotSignedByDevice(let slot):
            return ErrorExplanation(
                kind: .attestationInvalid, ["slot": slot.description],
                nested: ["why": UIText("attestation.not-signed")])
        case .attestedKeyMismatch(let slot):
            return ErrorExplanation(
                kind: .attestationInvalid, ["slot": slot.description],
                nested: ["why": UIText("attestation.other-key")])
        case .malformed(let m):
            return .malformedAnswer(ErrorExplanation.malformation(m))
        }
    }
}

extension ErrorExplanation {
    /// A PIV answer's problem as a part and what is wrong with it.
    static func malformation(_ m: PIVMalformation) -> Malformation {
        func hex(_ b: UInt8) -> String { Hex.encode([b], uppercase: true) }
        switch m {
        case .tlv(let e): return Malformation(.pivAnswer, .tlv(e))
        case .missingTag(let t): return Malformation(.pivAnswer, .tlv(.missingTag(t)))
        case .fieldLength(let tag, let length): return Malformation(.pivAnswer, .fieldLength(tag: tag, length))
        case .version(let n): return Malformation(.firmwareVersion, .length(n))
        case .serial(let n): return Malformation(.serial, .length(n))
        case .unknownAlgorithm(let b): return Malformation(.keyAlgorithm, .value(hex(b)))
        case .unknownPINPolicy(let b): return Malformation(.pinPolicy, .value(hex(b)))
        case .unknownTouchPolicy(let b): return Malformation(.touchPolicy, .value(hex(b)))
        case .unknownOrigin(let b): return Malformation(.keyOrigin, .value(hex(b)))
        case .publicKey(let a): return Malformation(.publicKey, .value(a.description))
        case .certificate: return Malformation(.certificate, .notDER)
        case .gzip(let e): return Malformation(.certificate, .gzip(e))
        case .resultLength(let expected, let actual):
            return Malformation(.signature, .lengthExpected(actual, expected: expected))
        }
    }
}

extension CryptoError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .openssl(let what): return ErrorExplanation(kind: .cryptoFailed, ["detail": what])
        case .length(let expected, let actual):
            return ErrorExplanation(
                kind: .invalidInput,
                detail: UIText("crypto.length", ["expected": String(expected), "count": String(actual)]))
        case .notDER(let structure):
            return ErrorExplanation(kind: .invalidInput, detail: UIText("crypto.not-der." + structure.rawValue))
        case .keyType: return ErrorExplanation(kind: .invalidInput, detail: UIText("crypto.key-type"))
        case .notOnCurve: return ErrorExplanation(kind: .invalidInput, detail: UIText("crypto.not-on-curve"))
        case .invalidPrivateKey:
            return ErrorExplanation(kind: .invalidInput, detail: UIText("crypto.invalid-private-key"))
        case .rsaSize(let bits):
            return ErrorExplanation(kind: .invalidInput, detail: UIText("crypto.rsa-size", ["bits": String(bits)]))
        }
    }
}

extension BlockCipher.Error: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .keyLength(let expected, let actual):
            return ErrorExplanation(
                kind: .managementKeyLength, ["expected": String(expected), "count": String(actual)])
        case .blockLength(let expected, let actual):
            return ErrorExplanation(
                kind: .malformedAnswer,
                detail: ErrorExplanation.malformationText(
                    Malformation(.pivAnswer, .lengthExpected(actual, expected: expected))))
        case .notABlockCipher(let a): return ErrorExplanation(kind: .pivAlgorithm, ["algorithm": a.description])
        case .openssl(let function): return ErrorExplanation(kind: .cryptoFailed, ["detail": function])
        }
    }
}

extension RSAPadding.Error: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .digestLength(let expected, let actual):
            return ErrorExplanation(
                kind: .invalidInput,
                detail: UIText(
                    "rsa.digest-length",
                    ["expected": String(expected), "count": String(actual)]))
        case .modulusTooShort(let bits), .unsupportedModulus(let bits):
            return ErrorExplanation(kind: .invalidInput, detail: UIText("rsa.modulus", ["bits": String(bits)]))
        case .saltLength(let n):
            return ErrorExplanation(kind: .invalidInput, detail: UIText("rsa.salt-length", ["count": String(n)]))
        case .openssl(let function): return ErrorExplanation(kind: .cryptoFailed, ["detail": function])
        }
    }
}

extension PIVFeature {
    /// The feature's name in the string tables (`piv-feature.<name>`).
    var textName: String {
        switch self {
        case .metadata: return "metadata"
        case .aesManagementKey: return "aes-management-key"
        case .serial: return "serial"
        case .attestation: return "attestation"
        case .p384: return "p384"
        case .policies: return "policies"
        case .cachedTouch: return "cached-touch"
        case .moveKey: return "move-key"
        case .rsa3072And4096: return "rsa-3072-4096"
        case .ed25519: return "ed25519"
        case .x25519: return "x25519"
        }
    }
}
