import KeyKit
import Testing
@testable import AuthenticatorModel

/// The words for the facts KeyKit's errors carry about bytes: every part, problem, status word, export,
/// OTP and NDEF problem has them in every language, and they read as they should.
@Suite struct DetailTextTests {
    static let english = StringTables.load(language: "en")

    static func words(_ text: UIText) -> String { english.text(text) }

    @Test(
        arguments: [
            (0x9000, "success"),
            (0x6982, "security status not satisfied"),
            (0x6A82, "file or application not found"),
            (0x6D00, "instruction not supported"),
            (0x6985, "conditions of use not satisfied"),
            (0x6700, "wrong length"),
            (0x6300, "verification failed"),
            (0x6E00, "class not supported"),
            (0x6110, "16 more bytes available"),
            (0x61FF, "255 more bytes available"),
            (0x6100, "more data available (256 bytes or more)"),
            (0x6C20, "wrong Le: exact length is 32"),
            (0x63C3, "verification failed, 3 retries left"),
            (0x63C0, "verification failed, 0 retries left"),
            (0x6381, "warning, state of non-volatile memory changed"),
            (0x6A99, "wrong parameters"),
            (0x6999, "command not allowed"),
            (0x1234, "unknown status"),
        ] as [(UInt16, String)])
    func statusWordMeanings(raw: UInt16, meaning: String) {
        #expect(Self.words(ErrorExplanation.statusText(StatusWord(rawValue: raw))) == meaning)
    }

    /// Every one of the 65,536 status words has a meaning in every language.
    @Test func everyStatusWordHasAMeaningInEveryLanguage() {
        let keys = Set((0...0xFFFF).map { StatusWord(rawValue: UInt16($0)).meaning.key })
        for (language, tables) in ErrorExplanationTests.tables {
            for key in keys { #expect(tables.primary[key]?.isEmpty == false, "\(key) has no \(language) text") }
        }
    }

    @Test func aRefusalShowsTheStatusWordAndItsMeaning() {
        #expect(
            Self.words(ErrorExplanation(SmartCardError.status(.fileNotFound)).text)
                == "the key refused the command: SW=6A82 (file or application not found)")
    }

    /// One of every problem, each on a part; and every part with one problem.
    static let problems: [Malformation.Problem] = [
        .missing, .empty, .incomplete, .length(3), .fieldLength(tag: 0x02, 9), .lengthExpected(3, expected: 5),
        .tooShort(3, minimum: 37), .tooLong(70, maximum: 64), .trailing(2), .runsPast(field: "PAYLOAD"), .value("0A"),
        .notFound("E104"), .mismatch, .unexpectedTag(0x7A), .unpaired, .statusInstead, .dataInstead,
        .neverEnds(parts: 17), .notUTF8, .notUTF16, .flagMissing("MB", record: 1), .flagUnexpected("MB", record: 2),
        .notOnCurve, .wrongKeyType,
        .tlv(.truncatedTag(offset: 1)), .tlv(.tagTooLong(offset: 1)), .tlv(.truncatedLength(offset: 1)),
        .tlv(.indefiniteLength(offset: 1)), .tlv(.lengthTooLong(offset: 1)),
        .tlv(.truncatedValue(offset: 1, needed: 5, available: 2)), .tlv(.unexpectedTag(expected: 0x71, found: 0x72)),
        .tlv(.missingTag(0x71)),
        .cbor(.truncated(offset: 1)), .cbor(.trailingBytes(offset: 1)), .cbor(.reservedAdditionalInfo(offset: 1)),
        .cbor(.indefiniteLength(offset: 1)), .cbor(.tooDeep), .cbor(.tooLong(offset: 1)),
        .cbor(.invalidUTF8(offset: 1)),
        .cbor(.duplicateKey(offset: 1)), .cbor(.nonCanonical(offset: 1)), .cbor(.unsupportedSimple(30, offset: 1)),
        .notDER, .gzip(.notGzip), .gzip(.corrupt(code: -3)), .gzip(.truncated), .gzip(.tooLarge(limit: 65536)),
        .gzip(.trailing(count: 3)), .gzip(.zlib(code: -4)),
    ]

    @Test func everyPIVAnswerProblemAndFeatureIsWorded() {
        let problems: [PIVMalformation] = [
            .tlv(.truncatedTag(offset: 0)), .missingTag(0x7C), .fieldLength(tag: 0x06, length: 1), .version(length: 2),
            .serial(length: 3), .unknownAlgorithm(0x99), .unknownPINPolicy(9), .unknownTouchPolicy(9),
            .unknownOrigin(9),
            .publicKey(.eccP256), .certificate, .gzip(.truncated), .resultLength(expected: 64, actual: 3),
        ]
        for p in problems { ErrorExplanationTests.expectWorded(ErrorExplanation(PIVError.malformed(p)).text, "\(p)") }
        for f in PIVFeature.allCases {
            let e = PIVError.notSupported(feature: f, minimum: f.minimum, actual: Version(4, 0, 0))
            ErrorExplanationTests.expectWorded(ErrorExplanation(e).text, "\(f)")
        }
        #expect(
            Self.words(ErrorExplanation(PIVError.wrongPIN(retriesLeft: 2)).text)
                == "wrong PIN: 2 tries left before the PIN is blocked")
        #expect(
            Self.words(
                ErrorExplanation(
                    PIVError.notSupported(
                        feature: .ed25519, minimum: Version(5, 7, 0),
                        actual: Version(5, 4, 3))
                ).text)
                == "Ed25519 needs firmware 5.7.0 or later; this key has 5.4.3")
    }

    @Test func everyPartAndProblemIsWorded() {
        for problem in Self.problems {
            ErrorExplanationTests.expectWorded(
                ErrorExplanation.malformationText(Malformation(.answer, problem)), "\(problem)")
        }
        for part in Malformation.Part.allCases {
            ErrorExplanationTests.expectWorded(
                ErrorExplanation.malformationText(Malformation(part, .missing)), "\(part)")
        }
    }

    @Test func aMalformedAnswerSaysWhichPartAndWhat() {
        let error = SmartCardError.malformedResponse(Malformation(.oathCode, .lengthExpected(4, expected: 5)))
        #expect(
            Self.words(ErrorExplanation(error).text)
                == "the key answered something unexpected (the OATH code: 4 bytes, expected 5): it may not be a supported key"
        )
        let german = StringTables.load(language: "de")
        #expect(german.text(ErrorExplanation(error).text).contains("der OATH-Code: 4 Bytes statt 5"))
        let cbor = FIDOSessionError.malformed(Malformation(.ctapAnswer, .cbor(.duplicateKey(offset: 7))))
        #expect(
            Self.words(ErrorExplanation(cbor).text).contains("the CTAP2 answer: duplicate CBOR map key at offset 7"))
    }

    @Test func everyOtherDetailIsWorded() {
        let apdu: [APDUProblem] = [
            .leOutOfRange(0), .dataTooLong(70_000), .notShort(data: 300, le: 0), .tooShort(2),
            .lengthMismatch(declared: 4, following: 2), .truncatedExtendedLength, .zeroExtendedLc,
        ]
        for p in apdu {
            ErrorExplanationTests.expectWorded(ErrorExplanation(SmartCardError.invalidAPDU(p)).text, "\(p)")
        }
        let otp: [YubicoOTPError] = [
            .keyLength(3), .privateIDLength(2), .publicIDLength(9), .tokenLength(3),
            .otpTooShort(3), .otpTooLong(50), .otpOddLength(33), .tokenNotModhex(.oddLength(3)),
            .tokenNotModhex(.invalidCharacter("x", offset: 2)), .publicIDNotModhex("xx"),
            .crcMismatch,
        ]
        for e in otp { ErrorExplanationTests.expectWorded(ErrorExplanation(e).text, "\(e)") }
        let noOTP: [NDEFError.NoOTP] = [
            .noRecords, .emptyFile, .invalidPattern("("), .patternWithoutGroup("x"),
            .noMatch(pattern: "(x)", texts: ["a", "b"]), .notRecognised(prefix: "https://"),
        ]
        for r in noOTP { ErrorExplanationTests.expectWorded(ErrorExplanation(NDEFError.noOTP(r)).text, "\(r)") }
        for check in FIDOSessionError.SignatureCheck.allCases {
            ErrorExplanationTests.expectWorded(
                ErrorExplanation(FIDOSessionError.signatureInvalid(check)).text, "\(check)")
        }
        let features: [FIDOSessionError.FIDOFeature] = [
            .credentialManagement, .attestationFormat("tpm"),
            .signatureAlgorithm(-257), .signatureAlgorithm(nil),
            .updateUserInformation, .authenticatorConfig, .setMinPINLength,
            .alwaysUV, .enterpriseAttestation, .bioEnrollment,
        ]
        for f in features {
            ErrorExplanationTests.expectWorded(ErrorExplanation(FIDOSessionError.notSupported(f)).text, "\(f)")
        }
        for a in KeyApplication.allCases {
            ErrorExplanationTests.expectWorded(ErrorExplanation(KeyRouteError.notOnThisKey(a, [.fido])).text, "\(a)")
        }
        #expect(
            Self.words(ErrorExplanation(YubicoOTPError.otpTooShort(12)).text)
                == "not a Yubico OTP: 12 characters; a Yubico OTP has 32 to 48 modhex characters")
        #expect(
            Self.words(ErrorExplanation(Modhex.DecodeError.invalidCharacter("a", offset: 0)).text)
                == "'a' at position 1 is not a modhex character (cbdefghijklnrtuv)")
    }
}

extension ErrorExplanationTests {
    /// One of every problem a Google Authenticator export can have.
    static let exportProblems: [ExportProblem] = [
        .host("online"), .path("x"), .missingData, .noAccounts, .nameNotUTF8(account: 1), .issuerNotUTF8(account: 1),
        .noName(account: 2, label: ""), .noName(account: 2, label: "Ex:"), .md5(shown: "Ex:a"),
        .algorithm(shown: "Ex:a", 9), .digits(shown: "Ex:a", 9),
        .type(shown: "Ex:a", 9), .counter(shown: "Ex:a", -1), .emptySecret(shown: "Ex:a"),
        .base64Character("!", position: 3), .base64PaddingEarly, .dataEmpty, .base64Length(5),
        .base64Padding(given: 1, count: 6, needed: 2), .truncated(account: nil, reading: "varint", at: 3),
        .truncated(account: 2, reading: "varint", at: 3), .varintTooLong(account: nil, at: 0),
        .fieldNumber(account: 1, 0, at: 0), .wireType(account: 1, field: 3, 6, at: 0),
        .fieldType(account: 1, field: "secret", found: "varint", expected: "length-delimited"),
        .group(account: nil, 3),
    ]
}
