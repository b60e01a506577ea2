import KeyKit
import Testing

// Vectors: yubikey-manager's `YubiOtpSlotConfiguration`, `StaticPasswordSlotConfiguration`,
// `HotpSlotConfiguration`, `UpdateConfiguration` (`get_config(access_code)`), `_build_ndef_config` and
// `ykman.scancodes.encode` (yubikit 5.x), computed with it once.
private func hexBytes(_ text: String) -> [UInt8] { (try? Hex.decode(text)) ?? [] }

@Suite("OTP: keyboard slot configurations")
struct OTPKeyboardSlotTests {
    static let publicID = hexBytes("ff0001ad2140")
    static let privateID = hexBytes("c0ffee123456")
    static let aesKey = hexBytes("2b7e151628aed2a6abf7158809cf4f3c")

    @Test func yubicoOTPMatchesYubikeyManager() throws {
        let c = try OTPSlotConfiguration.yubicoOTP(publicID: Self.publicID, privateID: Self.privateID, key: Self.aesKey)
        #expect(
            c.bytes
                == hexBytes(
                    "ff0001ad214000000000000000000000c0ffee1234562b7e151628aed2a6abf7158809cf4f3c"
                        + "000000000000063420000000924d"))
        #expect(c.kind == .yubicoOTP && c.appendsEnter && !c.isChallengeResponse)
        let coded = try OTPSlotConfiguration.yubicoOTP(
            publicID: Self.publicID, privateID: Self.privateID, key: Self.aesKey,
            appendEnter: false, accessCode: hexBytes("0102030405a6"))
        #expect(
            coded.bytes
                == hexBytes(
                    "ff0001ad214000000000000000000000c0ffee1234562b7e151628aed2a6abf7158809cf4f3c"
                        + "0102030405a6063400000000088d"))
        let parsed = try #require(OTPSlotConfiguration(bytes: coded.bytes))
        #expect(parsed.fixed == Self.publicID && parsed.hasAccessCode && !parsed.appendsEnter)
        #expect(throws: OTPError.invalidPrivateID(5)) {
            try OTPSlotConfiguration.yubicoOTP(publicID: [], privateID: [1, 2, 3, 4, 5], key: Self.aesKey)
        }
        #expect(throws: OTPError.invalidAESKey(15)) {
            try OTPSlotConfiguration.yubicoOTP(
                publicID: [], privateID: Self.privateID, key: Array(Self.aesKey.prefix(15)))
        }
        #expect(throws: OTPError.invalidPublicID(17)) {
            try OTPSlotConfiguration.yubicoOTP(
                publicID: [UInt8](repeating: 1, count: 17), privateID: Self.privateID,
                key: Self.aesKey)
        }
    }

    @Test func staticPasswordMatchesYubikeyManager() throws {
        let codes = try ScanCodeLayout.us.encode("Tr0ub4dor&3!").get()
        #expect(codes == hexBytes("971527180521071215a4209e"))
        let c = try OTPSlotConfiguration.staticPassword(scanCodes: codes)
        #expect(
            c.bytes
                == hexBytes(
                    "971527180521071215a4209e00000000" + String(repeating: "00", count: 22)
                        + "000000000000103420020000e57d"))
        #expect(c.kind == .staticPassword && c.staticScanCodes == codes)
        #expect(ScanCodeLayout.us.typed(c.staticScanCodes) == "Tr0ub4dor&3!")
        let longest = [UInt8](repeating: 0x04, count: 38)
        #expect(try OTPSlotConfiguration.staticPassword(scanCodes: longest).staticScanCodes == longest)
        #expect(throws: OTPError.invalidPasswordLength(39)) {
            try OTPSlotConfiguration.staticPassword(scanCodes: longest + [0x04])
        }
        #expect(throws: OTPError.invalidPasswordLength(0)) { try OTPSlotConfiguration.staticPassword(scanCodes: []) }
    }

    @Test func hotpMatchesYubikeyManager() throws {
        let c = try OTPSlotConfiguration.oathHOTP(
            secret: Array("12345678901234567890".utf8), digits: 8, movingFactor: 32)
        #expect(
            c.bytes
                == hexBytes(
                    "0000000000000000000000000000000037383930000231323334353637383930313233343536"
                        + "000000000000003460420000948f"))
        #expect(c.kind == .oathHOTP && c.hotpDigits == 8 && c.hotpMovingFactor == 32)
        #expect(c.hmacKey == Array("12345678901234567890".utf8))
        let six = try OTPSlotConfiguration.oathHOTP(secret: [1, 2, 3, 4, 5])
        #expect(
            six.bytes
                == hexBytes(
                    "00000000000000000000000000000000000000000000010203040500000000000000000000000000"
                        + "000000000034604000008033"))
        #expect(six.hotpDigits == 6 && six.hotpMovingFactor == 0)
        #expect(throws: OTPError.invalidMovingFactor(17)) {
            try OTPSlotConfiguration.oathHOTP(secret: [1], movingFactor: 17)
        }
        #expect(throws: OTPError.invalidMovingFactor(0x100000)) {
            try OTPSlotConfiguration.oathHOTP(secret: [1], movingFactor: 0x100000)
        }
        #expect(try OTPSlotConfiguration.oathHOTP(secret: [1], movingFactor: 0xFFFF0).hotpMovingFactor == 0xFFFF0)
        #expect(throws: OTPError.invalidDigits(7)) { try OTPSlotConfiguration.oathHOTP(secret: [1], digits: 7) }
    }

    /// ykman's `otp hotp --identifier` forms, and the slot yubikit writes for each (HotpSlotConfiguration with
    /// digits8, imf(32) and token_id as ykman's parse_modhex_or_bcd leaves it).
    @Test func hotpTokenIdentifierMatchesYubikeyManager() throws {
        let secret = Array("12345678901234567890".utf8)
        let body = "0000000000000000000037383930000231323334353637383930313233343536000000000000063460"
        let cases: [(String, UInt32?, String, Int, String)] = [
            ("ubhe12345678", nil, "e16312345678", 2, "42000039ae"),
            ("-", 28_123_456, "e16328123456", 2, "420000abdd"),
            ("vvcc", 123, "ff0000000123", 2, "420000008d"),
            ("cccccccccccb", nil, "000000000001", 6, "520000c024"),
            ("ub1212345678", nil, "e11212345678", 1, "1200006a8c"),
            ("123412345678", nil, "123412345678", 0, "020000cf62"),
        ]
        for (text, serial, fixed, modhexBytes, tail) in cases {
            let id = try OATHTokenIdentifier(text, serial: serial)
            #expect(id.fixed == hexBytes(fixed) && id.modhexBytes == modhexBytes, "\(text)")
            let c = try OTPSlotConfiguration.oathHOTP(secret: secret, digits: 8, movingFactor: 32, tokenIdentifier: id)
            #expect(c.bytes == hexBytes(fixed + body + tail), "\(text)")
        }
        #expect(try OATHTokenIdentifier("ubhe12345678", serial: nil).typed == "ubhe12345678")
        #expect(try OATHTokenIdentifier("cccccccccccb", serial: nil).typed == "cccccccccccb")
        #expect(try OATHTokenIdentifier("ub1212345678", serial: nil).typed == "ub1212345678")
        #expect(try OATHTokenIdentifier("-", serial: 7).typed == "ubhe00000007")
        #expect(OATHTokenIdentifier.needsSerial("-") && OATHTokenIdentifier.needsSerial("ubhe"))
        #expect(!OATHTokenIdentifier.needsSerial("12345678") && !OATHTokenIdentifier.needsSerial("ubhe12345678"))
        #expect(throws: OTPError.tokenIdentifierNeedsSerial) { try OATHTokenIdentifier("-", serial: nil) }
        // Wrong lengths, parts neither modhex nor decimal, odd digit counts, modhex after a decimal part.
        for bad in [
            "", "ubh", "ubhe1", "ubhe1234567", "ubhe1234567890", "xxhe12345678", "ubhe1234567a", "12he12345678",
            "1212cccccccc", "ubhe12345678 ",
        ] {
            #expect(throws: OTPError.invalidTokenIdentifier, "\(bad)") { try OATHTokenIdentifier(bad, serial: 1) }
        }
    }

    @Test func updateMatchesYubikeyManagerAndKeepsTheSecret() throws {
        let settings = OTPSlotConfiguration.Settings(appendEnter: false, pacing: .ms20, useNumericKeypad: true)
        let u = try OTPSlotConfiguration.update(settings, accessCode: hexBytes("a0b0c0d0e0f0"))
        #expect(u.bytes == hexBytes(String(repeating: "00", count: 38) + "a0b0c0d0e0f0103c000400009ee8"))
        #expect(u.isValidUpdate)
        let slot = try OTPSlotConfiguration.yubicoOTP(
            publicID: Self.publicID, privateID: Self.privateID, key: Self.aesKey)
        let updated = slot.applying(update: u)
        #expect(updated.fixed == slot.fixed && updated.uid == slot.uid && updated.key == slot.key)
        #expect(!updated.appendsEnter && updated.accessCode == hexBytes("a0b0c0d0e0f0"))
        #expect(OTPSlotConfiguration.Pacing(flags: updated.configFlags) == .ms20)
        #expect(!(try OTPSlotConfiguration.oathHOTP(secret: [1])).isValidUpdate)
        for pacing in OTPSlotConfiguration.Pacing.allCases {
            let p = try OTPSlotConfiguration.update(.init(pacing: pacing))
            #expect(OTPSlotConfiguration.Pacing(flags: p.configFlags) == pacing)
        }
    }

    @Test func ndefMatchesYubikeyManager() throws {
        let standard = try OTPNDEFConfiguration.uri()
        #expect(
            standard.bytes
                == hexBytes("1355046d792e79756269636f2e636f6d2f796b2f23" + String(repeating: "00", count: 35)))
        #expect(
            try OTPNDEFConfiguration.uri("https://example.org/otp/").bytes
                == hexBytes("1155046578616d706c652e6f72672f6f74702f" + String(repeating: "00", count: 37)))
        #expect(OTPNDEFConfiguration(bytes: standard.bytes) == standard)
        #expect(try standard.record(output: "abc").content() == .uri("https://my.yubico.com/yk/#abc"))
        #expect(throws: OTPError.ndefTooLong(55)) {
            try OTPNDEFConfiguration.uri("https://" + String(repeating: "x", count: 54))
        }
    }

    /// yubikit's _build_ndef_config(value, NDEF_TYPE.TEXT): a UTF-8 text record in English, 51 bytes of text at most.
    @Test func ndefTextMatchesYubikeyManager() throws {
        let prefixed = try OTPNDEFConfiguration.text("OTP: ")
        #expect(prefixed.bytes == hexBytes("085402656e4f54503a20" + String(repeating: "00", count: 46)))
        #expect(try OTPNDEFConfiguration.text().bytes == hexBytes("035402656e" + String(repeating: "00", count: 51)))
        #expect(OTPNDEFConfiguration(bytes: prefixed.bytes) == prefixed)
        #expect(try prefixed.record(output: "abc").content() == .text("OTP: abc", language: "en", utf16: false))
        #expect(try OTPNDEFConfiguration.text(String(repeating: "x", count: 51)).bytes.count == 56)
        #expect(throws: OTPError.ndefTooLong(55)) { try OTPNDEFConfiguration.text(String(repeating: "x", count: 52)) }
    }
}

@Suite("OTP: scan codes")
struct ScanCodeLayoutTests {
    @Test func layoutsMatchYubikeyManager() throws {
        #expect(
            try ScanCodeLayout.us.encode("Tr0ub4dor&3!{}|\\~`'\";:<>?/").get()
                == hexBytes("971527180521071215a4209eafb0b232b53534b433b3b6b7b838"))
        #expect(
            try ScanCodeLayout.de.encode("Zy#'<>ßüÖ;:_-!\"§$%&/()=+*").get()
                == hexBytes("9c1d32b264e42d2fb3b6b7b8389e9fa0a1a2a3a4a5a6a730b0"))
        #expect(
            try ScanCodeLayout.fr.encode("azqwm,&é\"'(-è_çà)=$£*µù%;.:/!§<AZQWM0123456789").get()
                == hexBytes(
                    "141a041d33101e1f20212223242526272d2e30b031b134b436b637b738b864949a849db3a79e9fa0a1a2a3a4a5a6"))
    }

    @Test func dvorakTypesWhatTheLayoutTableSays() throws {
        // The keys KeyboardLayout.dvorak maps: a US key's scan code types its Dvorak character.
        let text = "',.pyfgcrl/=aoeuidhtns-;qjkxbmwvz[]"
        let codes = try ScanCodeLayout.dvorak.encode(text).get()
        #expect(ScanCodeLayout.us.typed(codes) == "qwertyuiop[]asdfghjkl;'zxcvbnm,./-=")
        #expect(ScanCodeLayout.dvorak.typed(codes) == text)
        #expect(KeyboardLayout.dvorak.typed(ScanCodeLayout.us.typed(codes)) == text)
    }

    @Test func modhexAndUnencodable() {
        #expect(ScanCodeLayout.modhex.passwordCharacters == Array("BCDEFGHIJKLNRTUVbcdefghijklnrtuv"))
        #expect(ScanCodeLayout.modhex.encode("cbX") == .failure(.init(offset: 2)))
        #expect(ScanCodeLayout.de.encode("a^") == .failure(.init(offset: 1)))  // a dead key
        for layout in ScanCodeLayout.allCases {
            #expect(!layout.passwordCharacters.contains(" ") && !layout.passwordCharacters.contains("\t"))
            let password = layout.generatePassword(length: 38)
            #expect(password.count == 38)
            let codes = try? layout.encode(password).get()
            #expect(codes.map { layout.typed($0) } == password, "\(layout)")
        }
    }
}
