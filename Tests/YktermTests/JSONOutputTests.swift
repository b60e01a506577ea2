import KeyKit
import Testing
@testable import ykterm

/// The `--json` outputs: what JSONTree makes of a typed output, and the text JSONText writes (keys sorted,
/// two-space indent, " : "), pinned so that a renamed, dropped or retyped field fails here.
@Suite struct JSONOutputTests {
    struct Inner: Encodable {
        var label: String
        var values: [Int]
    }

    struct Sample: Encodable {
        var name: String
        var missing: String?
        var count: Int?
        var flag: Bool
        var ratio: Double
        var inner: Inner
        var list: [Inner?]

        enum CodingKeys: String, CodingKey {
            case name, missing, count, flag, ratio, inner
            case list = "the_list"
        }
    }

    static func text(_ value: JSONValue) throws -> String {
        var out = ""
        try JSONText.append(value, to: &out, indent: 0)
        return out
    }

    static func text(_ value: some Encodable) throws -> String {
        try text(JSONTree.value(of: value))
    }

    // MARK: snake_case names

    struct Snake: SnakeCaseJSON {
        var rpID: String
        var publicKeyPEM: String
        var fromManagement: Bool
        var totp2Step: Int
        var plain: Int
        var byName: [String: Int]
    }

    @Test func aSnakeCaseOutputWritesItsFieldsInSnakeCaseButNotItsDictionarysKeys() throws {
        #expect(JSONTree.snakeCased("rpID") == "rp_id")
        #expect(JSONTree.snakeCased("publicKeyPEM") == "public_key_pem")
        #expect(JSONTree.snakeCased("fidoHID") == "fido_hid")
        #expect(JSONTree.snakeCased("HIDPath") == "hid_path")
        #expect(JSONTree.snakeCased("already_snake") == "already_snake")
        let value = try JSONTree.value(
            of: Snake(
                rpID: "example.com", publicKeyPEM: "-", fromManagement: true, totp2Step: 2, plain: 1,
                byName: ["clientPin": 1]))
        #expect(
            value
                == .object([
                    "rp_id": .string("example.com"), "public_key_pem": .string("-"), "from_management": .bool(true),
                    "totp2_step": .integer(2), "plain": .integer(1), "by_name": .object(["clientPin": .integer(1)]),
                ]))
        // A type that is not a SnakeCaseJSON keeps its names, also inside one that is.
        struct Camel: Encodable { var keepMe: Int }
        struct Outer: SnakeCaseJSON { var innerValue: Camel }
        #expect(
            try JSONTree.value(of: Outer(innerValue: Camel(keepMe: 3)))
                == .object(["inner_value": .object(["keepMe": .integer(3)])]))
    }

    // MARK: The tree and the writer

    @Test func aTypedValueBecomesItsTreeAndNilIsNull() throws {
        let typed = Sample(
            name: "a \"quoted\" name", missing: nil, count: nil, flag: true, ratio: 0.5,
            inner: Inner(label: "x", values: [1, 2]), list: [Inner(label: "y", values: []), nil])
        #expect(
            try JSONTree.value(of: typed)
                == .object([
                    "name": .string("a \"quoted\" name"), "missing": .null, "count": .null, "flag": .bool(true),
                    "ratio": .double(0.5),
                    "inner": .object(["label": .string("x"), "values": .array([.integer(1), .integer(2)])]),
                    "the_list": .array([.object(["label": .string("y"), "values": .array([])]), .null]),
                ]))
        #expect(
            try Self.text(typed) == """
                {
                  "count" : null,
                  "flag" : true,
                  "inner" : {
                    "label" : "x",
                    "values" : [
                      1,
                      2
                    ]
                  },
                  "missing" : null,
                  "name" : "a \\"quoted\\" name",
                  "ratio" : 0.5,
                  "the_list" : [
                    {
                      "label" : "y",
                      "values" : []
                    },
                    null
                  ]
                }
                """)
        // An array at the top, as `oath list --json` prints.
        #expect(
            try Self.text([typed.inner])
                == "[\n  {\n    \"label\" : \"x\",\n    \"values\" : [\n      1,\n      2\n    ]\n  }\n]")
    }

    @Test func stringsAreEscapedAsJSONRequiresAndControlsAndBidiFormattingVisibly() throws {
        let s = "q\"\\\n\r\t\u{0}\u{1F}\u{7F}\u{85}\u{200E}\u{202E}\u{2066}é🔑/"
        #expect(try Self.text(.string(s)) == #""q\"\\\n\r\t\u0000\u001f\u007f\u0085\u200e\u202e\u2066é🔑/""#)
        #expect(
            try Self.text(.object([s: .null])) == "{\n  "
                + #""q\"\\\n\r\t\u0000\u001f\u007f\u0085\u200e\u202e\u2066é🔑/""#
                + " : null\n}")
    }

    @Test func emptyContainersAndNullAreWrittenInline() throws {
        let value = JSONValue.object([
            "x": .array([.object([:]), .array([]), .null]), "e": .object([:]), "a": .array([]),
        ])
        #expect(
            try Self.text(value) == """
                {
                  "a" : [],
                  "e" : {},
                  "x" : [
                    {},
                    [],
                    null
                  ]
                }
                """)
        #expect(try Self.text(JSONValue.object([:])) == "{}")
        #expect(try Self.text([String]()) == "[]")
    }

    @Test func numbersAreWrittenAsBefore() throws {
        struct Numbers: Encodable {
            var small = Int8(-5)
            var int64Min = Int64.min
            var uint64Max = UInt64.max
            var half = 0.5
            var whole = 1.0
            var negativeZero = -0.0
            var belowE15 = 999_999_999_999_999.0
            var e15 = 1e15
            var e16 = 1e16
            var fraction = 123_456_789.125
            var tiny = 1e-7
            var float = Float(0.1)
        }
        #expect(
            try Self.text(Numbers()) == """
                {
                  "belowE15" : 999999999999999,
                  "e15" : 1000000000000000.0,
                  "e16" : 1e+16,
                  "float" : 0.10000000149011612,
                  "fraction" : 123456789.125,
                  "half" : 0.5,
                  "int64Min" : -9223372036854775808,
                  "negativeZero" : 0,
                  "small" : -5,
                  "tiny" : 1e-07,
                  "uint64Max" : 18446744073709551615,
                  "whole" : 1
                }
                """)
        #expect(throws: JSONText.Unsupported.self) { try Self.text(.double(.infinity)) }
        #expect(throws: JSONText.Unsupported.self) { try Self.text([Double.nan]) }
    }

    @Test func aJSONValueInsideATypedOutputIsTakenAsItIs() throws {
        struct Holder: Encodable {
            var open: [String: JSONValue]
        }
        let open: [String: JSONValue] = ["n": .integer(Int128(UInt64.max)), "o": .object(["k": .bool(false)])]
        #expect(try JSONTree.value(of: Holder(open: open)) == .object(["open": .object(open)]))
    }

    @Test func aCompactLineHasSortedKeysAndTheSameEscapes() throws {
        #expect(try JSONText.compactLine(["b": "x\"y", "a": "\u{1}", "c": ""]) == #"{"a":"\u0001","b":"x\"y","c":""}"#)
        #expect(
            try JSONText.compactLine(MonitorEventJSON(.readerAdded("R 00")))
                == #"{"event":"reader-added","reader":"R 00"}"#)
        #expect(try JSONText.compactLine(JSONValue.array([.integer(1), .null])) == "[1,null]")
        #expect(MonitorEventJSON(.keyLeft(id: "pcsc:R")).text == "key-left id=pcsc:R")
    }

    // MARK: oath

    @Test func aCodeCarriesItsAccountsFieldsAndNullsWithoutACode() throws {
        let id = CredentialID(name: "bob", issuer: "Example", type: .hotp)
        let account = OATHAccountJSON(Credential(rawID: id.bytes, type: .hotp), digits: nil)
        let tree = try JSONTree.value(of: OATHCodeJSON(account: account, code: nil, validFrom: nil, validTo: nil))
        guard case .object(let object) = tree else { Issue.record("not an object: \(tree)"); return }
        #expect(
            Set(object.keys) == [
                "id", "issuer", "name", "type", "algorithm", "digits", "period", "touch", "code",
                "valid_from", "valid_to",
            ])
        #expect(object["code"] == .null && object["valid_to"] == .null && object["digits"] == .null)
        #expect(object["id"] == .string("Example:bob") && object["type"] == .string("hotp"))
    }

    // MARK: fido info

    /// getInfo as a YubiKey 5 NFC answers it (AAGUID 2fc0579f-8113-47ea-b116-bb5a8db9202a), with fields of later
    /// specifications and of a vendor that ykterm does not read.
    static let getInfo: CBOR = [
        1: ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE"],
        2: ["credProtect", "hmac-secret"],
        3: .bytes([0x2F, 0xC0, 0x57, 0x9F, 0x81, 0x13, 0x47, 0xEA, 0xB1, 0x16, 0xBB, 0x5A, 0x8D, 0xB9, 0x20, 0x2A]),
        4: ["rk": true, "up": true, "plat": false, "clientPin": true, "credentialMgmtPreview": true],
        5: 1200,
        6: [1],
        7: 8,
        8: 128,
        9: ["nfc", "usb"],
        10: [["alg": -7, "type": "public-key"], ["alg": -8, "type": "public-key"]],
        0x0B: 1024,
        0x0F: 32,
        0x13: ["FIDO": 1],
        0x16: ["packed", "none"],
        0x19: .bytes([0x00, 0xFF]),
        -1: .negative(UInt64.max),
        "x-vendor": .tagged(1, .float(1.5)),
    ]

    @Test func fidoInfoKeepsItsFieldsAndTheFieldsItDoesNotRead() throws {
        let info = try AuthenticatorInfo(cbor: Self.getInfo)
        #expect(
            try Self.text(FIDOInfoJSON(info, pinRetries: 8)) == """
                {
                  "aaguid" : "2fc0579f-8113-47ea-b116-bb5a8db9202a",
                  "algorithms" : [
                    -7,
                    -8
                  ],
                  "always_uv" : null,
                  "enterprise_attestation" : null,
                  "extensions" : [
                    "credProtect",
                    "hmac-secret"
                  ],
                  "fido2" : true,
                  "firmware_version" : null,
                  "force_pin_change" : false,
                  "max_msg_size" : 1200,
                  "max_rpids_for_min_pin_length" : null,
                  "min_pin_length" : 4,
                  "options" : {
                    "clientPin" : true,
                    "credentialMgmtPreview" : true,
                    "plat" : false,
                    "rk" : true,
                    "up" : true
                  },
                  "other_fields" : {
                    "-1" : "-1-18446744073709551615",
                    "0x13" : {
                      "FIDO" : 1
                    },
                    "0x16" : [
                      "packed",
                      "none"
                    ],
                    "0x19" : "00ff",
                    "0xB" : 1024,
                    "0xF" : 32,
                    "x-vendor" : {
                      "tag" : 1,
                      "value" : 1.5
                    }
                  },
                  "pin_protocols" : [
                    1
                  ],
                  "pin_retries" : 8,
                  "pin_set" : true,
                  "remaining_discoverable_credentials" : null,
                  "transports" : [
                    "nfc",
                    "usb"
                  ],
                  "versions" : [
                    "U2F_V2",
                    "FIDO_2_0",
                    "FIDO_2_1_PRE"
                  ]
                }
                """)
    }

    @Test func aU2FOnlyKeyHasTheSameFieldsEmpty() throws {
        #expect(
            try Self.text(FIDOInfoJSON.u2fOnly(version: "U2F_V2")) == """
                {
                  "aaguid" : null,
                  "algorithms" : [],
                  "always_uv" : null,
                  "enterprise_attestation" : null,
                  "extensions" : [],
                  "fido2" : false,
                  "firmware_version" : null,
                  "force_pin_change" : false,
                  "max_msg_size" : null,
                  "max_rpids_for_min_pin_length" : null,
                  "min_pin_length" : null,
                  "options" : {},
                  "other_fields" : {},
                  "pin_protocols" : [],
                  "pin_retries" : null,
                  "pin_set" : false,
                  "remaining_discoverable_credentials" : null,
                  "transports" : [],
                  "versions" : [
                    "U2F_V2"
                  ]
                }
                """)
    }

    @Test func cborValuesBecomeJSONAndWhatJSONCannotHoldBecomesText() {
        typealias Info = FIDOCommand.Info
        #expect(Info.json(.unsigned(UInt64.max)) == .integer(Int128(UInt64.max)))
        #expect(Info.json(.negative(5)) == .integer(-6))
        #expect(Info.json(.negative(UInt64(Int64.max) - 1)) == .integer(Int128(Int64.min) + 1))
        #expect(Info.json(.negative(UInt64(Int64.max))) == .string("-1-9223372036854775807"))
        #expect(Info.json(.float(.infinity)) == .string("inf") && Info.json(.float(.nan)) == .string("nan"))
        #expect(Info.json(.undefined) == .null && Info.json(.null) == .null)
        #expect(
            Info.json([.bytes([1, 2]): 3, 7: "seven", "t": .tagged(2, .bytes([0xAB]))])
                == .object([
                    "420102": .integer(3), "7": .string("seven"),
                    "t": .object(["tag": .integer(2), "value": .string("ab")]),
                ]))
    }

    // MARK: list

    static let usbKey: ListCommand.Row = {
        let reader = "Yubico YubiKey OTP+FIDO+CCID 00 00"
        let device = DeviceInfo(serial: 12_345_678, version: Version(5, 7, 2), formFactor: .usbAKeychain)
        let info = KeyInfo(
            reader: reader,
            atr: [
                0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15, 0x80, 0x73,
                0xC0, 0x21, 0xC0, 0x57, 0x59, 0x75, 0x62, 0x69, 0x4B, 0x65, 0x79, 0x40,
            ],
            device: device, applications: ["OTP", "FIDO2", "OATH", "PIV"], overNFC: false)
        let key = KeyDescriptor(
            transport: .pcsc(reader: reader), name: "YubiKey 5 NFC", atr: info.atr,
            fidoHID: HIDDeviceInfo(
                path: "/dev/hidraw3", vendorID: 0x1050, productID: 0x0407,
                productName: "YubiKey OTP+FIDO+CCID"))
        return ListCommand.Row(key: key, info: info, error: nil)
    }()

    @Test func aListedKeyHasItsInterfacesAndWhatItToldOfItself() throws {
        #expect(
            try Self.text([ListedKeyJSON(Self.usbKey)]) == """
                [
                  {
                    "applications" : [
                      "OTP",
                      "FIDO2",
                      "OATH",
                      "PIV"
                    ],
                    "atr" : "3bfd1300008131fe158073c021c057597562694b657940",
                    "config_locked" : false,
                    "fido_hid" : "/dev/hidraw3",
                    "form_factor" : "usb-a-keychain",
                    "from_management" : true,
                    "interfaces" : [
                      "ccid",
                      "fido"
                    ],
                    "key_name" : null,
                    "name" : "YubiKey 5A",
                    "otp_hid" : null,
                    "reader" : "Yubico YubiKey OTP+FIDO+CCID 00 00",
                    "serial" : 12345678,
                    "transport" : "usb",
                    "version" : "5.7.2"
                  }
                ]
                """)
    }

    @Test func aKeyThatCouldNotBeAskedHasAnErrorInsteadOfItsFields() throws {
        let reader = "ACS ACR122U PICC Interface 00 00"
        let row = ListCommand.Row(
            key: KeyDescriptor(
                transport: .pcsc(reader: reader), name: reader,
                atr: [0x3B, 0x8F, 0x80, 0x01, 0x80, 0x4F]),
            info: nil, error: SmartCardError.readerNotAnswering(reader))
        var listed = ListedKeyJSON(row)
        listed.hidErrors = ["/dev/hidraw5": "no permission"]
        let text = try Self.text(listed)
        #expect(
            text == """
                {
                  "error" : "\(ListCommand.describeError(SmartCardError.readerNotAnswering(reader)))",
                  "fido_hid" : null,
                  "hid_errors" : {
                    "/dev/hidraw5" : "no permission"
                  },
                  "interfaces" : [
                    "nfc"
                  ],
                  "key_name" : null,
                  "name" : "ACS ACR122U PICC Interface 00 00",
                  "otp_hid" : null,
                  "reader" : "ACS ACR122U PICC Interface 00 00",
                  "serial" : null
                }
                """)
    }

    @Test func aReaderHasItsStatus() throws {
        let reader = ReaderStatusJSON(
            reader: "Yubico YubiKey OTP+FIDO+CCID 00 00", keyPresent: true,
            atr: "3bfd1300008131fe158073c021c057597562694b657940", exclusive: false)
        #expect(
            try Self.text(reader) == """
                {
                  "atr" : "3bfd1300008131fe158073c021c057597562694b657940",
                  "exclusive" : false,
                  "key_present" : true,
                  "reader" : "Yubico YubiKey OTP+FIDO+CCID 00 00"
                }
                """)
    }

    // MARK: otp

    @Test func aYubicoOTPHasItsPublicIDAndTokenAndNoCode() throws {
        #expect(
            try Self.text(ClassifiedOTPJSON(OTPClassifier.classify("vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb")))
                == """
                {
                  "layout" : "us",
                  "otp" : "vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb",
                  "public_id" : "vvccccfhcbdn",
                  "raw" : "vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb",
                  "serial" : 4587819,
                  "token" : "rckkhnnbddgfuvvrjntgbhiillgnbgrb",
                  "type" : "yubico-otp"
                }
                """)
    }

    @Test func anHOTPCodeHasItsCodeAndNoToken() throws {
        #expect(
            try Self.text(ClassifiedOTPJSON(OTPClassifier.classify("ubhe28123456123456"))) == """
                {
                  "code" : "123456",
                  "layout" : "us",
                  "otp" : "ubhe28123456123456",
                  "public_id" : "ubhe28123456",
                  "raw" : "ubhe28123456123456",
                  "serial" : 28123456,
                  "type" : "oath-hotp"
                }
                """)
        #expect(
            try Self.text(ClassifiedOTPJSON(OTPClassifier.classify("hunter2"))) == """
                {
                  "layout" : "us",
                  "otp" : "hunter2",
                  "public_id" : null,
                  "raw" : "hunter2",
                  "serial" : null,
                  "type" : "static"
                }
                """)
    }

    /// The FIPS-197 AES-128 test key, and an OTP made with it by PyPI yubiotp (private ID c0ffee123456, usage
    /// counter 41, session counter 3).
    @Test func aDecryptedOTPHasItsTokensFields() throws {
        let key = try Hex.decode("2b7e151628aed2a6abf7158809cf4f3c")
        let decrypted = try YubicoOTP.decrypt("vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb", key: key)
        #expect(
            try Self.text(DecryptedOTPJSON(decrypted)) == """
                {
                  "counter" : 41,
                  "crc" : 20087,
                  "crc_ok" : true,
                  "private_id" : "c0ffee123456",
                  "public_id" : "vvccccfhcbdn",
                  "random" : 35492,
                  "serial" : 4587819,
                  "session_counter" : 3,
                  "timestamp" : 54005
                }
                """)
    }

    static let records = [
        NDEFRecord(
            tnf: NDEFRecord.tnfWellKnown, type: [0x55],
            payload: [0x04] + Array("my.yubico.com/yk/#vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb".utf8)),
        NDEFRecord(tnf: NDEFRecord.tnfWellKnown, type: [0x54], payload: [0x02] + Array("enhi".utf8)),
        NDEFRecord(tnf: 0x04, type: Array("yubico.com:x".utf8), payload: [1]),
    ]

    @Test func ndefRecordsAsJSONAndAsLines() throws {
        let rows = Self.records.map(NDEFRecordJSON.init)
        #expect(
            rows.map(\.line) == [
                "URI: https://my.yubico.com/yk/#vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb",
                "Text: hi", "Record: TNF 4, type 79756269636f2e636f6d3a78",
            ])
        #expect(
            try Self.text(OTPReadJSON(classification: nil, records: rows)) == """
                {
                  "otp" : null,
                  "records" : [
                    {
                      "type" : "uri",
                      "value" : "https://my.yubico.com/yk/#vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb"
                    },
                    {
                      "language" : "en",
                      "type" : "text",
                      "value" : "hi"
                    },
                    {
                      "record_type" : "79756269636f2e636f6d3a78",
                      "tnf" : 4,
                      "type" : "other"
                    }
                  ],
                  "type" : null
                }
                """)
    }

    @Test func aReadOTPHasItsClassificationAndTheRecords() throws {
        let otp = ClassifiedOTPJSON(OTPClassifier.classify("vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb"))
        let tree = try JSONTree.value(of: OTPReadJSON(classification: otp, records: [NDEFRecordJSON(Self.records[0])]))
        guard case .object(let object) = tree else { Issue.record("not an object: \(tree)"); return }
        #expect(Set(object.keys) == ["layout", "otp", "public_id", "raw", "records", "serial", "token", "type"])
        #expect(object["otp"] == .string("vvccccfhcbdnrckkhnnbddgfuvvrjntgbhiillgnbgrb"))
    }

    @Test func aProgrammedYubicoOTPSlot() throws {
        let programmed = OTPYubiOTPJSON(
            slot: 1, serial: nil, publicID: "vvccccfhcbdn", privateID: "c0ffee123456",
            key: "2b7e151628aed2a6abf7158809cf4f3c",
            csv: ",vvccccfhcbdn,c0ffee123456,2b7e151628aed2a6abf7158809cf4f3c,,2026-11-29T12:00:00,")
        #expect(
            try Self.text(programmed) == """
                {
                  "csv" : ",vvccccfhcbdn,c0ffee123456,2b7e151628aed2a6abf7158809cf4f3c,,2026-11-29T12:00:00,",
                  "key" : "2b7e151628aed2a6abf7158809cf4f3c",
                  "private_id" : "c0ffee123456",
                  "public_id" : "vvccccfhcbdn",
                  "serial" : null,
                  "slot" : 1
                }
                """)
    }

    // MARK: u2f

    @Test func u2fRegistrationAndSignature() throws {
        #expect(
            try Self.text(
                U2FRegistrationJSON(
                    keyHandle: "0a0b", publicKey: "04aa",
                    certificateSubject: "CN=Yubico U2F EE Serial 23925734811456")) == """
                    {
                      "certificate_subject" : "CN=Yubico U2F EE Serial 23925734811456",
                      "key_handle" : "0a0b",
                      "public_key" : "04aa"
                    }
                    """)
        #expect(
            try Self.text(U2FSignatureJSON(counter: 7, userPresence: true, signature: "3045")) == """
                {
                  "counter" : 7,
                  "signature" : "3045",
                  "user_presence" : true
                }
                """)
    }
}
