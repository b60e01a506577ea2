import Testing
@testable import KeyKit

@Suite struct CredentialIDTests {
    @Test(arguments: [
        ("name", OATHType.totp, nil as String?, "name", 30),
        ("Issuer:name", .totp, "Issuer", "name", 30),
        ("60/Issuer:name", .totp, "Issuer", "name", 60),
        ("15/name", .totp, nil, "name", 15),
        ("60/Issuer:name", .hotp, "60/Issuer", "name", 30),
        ("a:b:c", .totp, "a", "b:c", 30),
        (":lead", .totp, nil, ":lead", 30),
        ("x/Issuer:name", .totp, "x/Issuer", "name", 30),
    ])
    func parseAndFormat(text: String, type: OATHType, issuer: String?, name: String, period: Int) {
        let id = CredentialID(bytes: Array(text.utf8), type: type)
        #expect(id.issuer == issuer)
        #expect(id.name == name)
        #expect(id.period == period)
        #expect(id.string == text)
    }

    @Test func defaultPeriodIsNotWritten() {
        #expect(CredentialID(name: "n", issuer: "I", type: .totp, period: 30).string == "I:n")
        #expect(CredentialID(name: "n", issuer: "I", type: .totp, period: 60).string == "60/I:n")
        #expect(CredentialID(name: "n", issuer: "I", type: .hotp, period: 60).string == "I:n")
    }

    @Test func lengthLimitIs64Bytes() throws {
        try CredentialID(name: String(repeating: "a", count: 62), issuer: "b", type: .totp).validate()
        #expect(throws: OATHError.self) {
            try CredentialID(name: String(repeating: "a", count: 63), issuer: "b", type: .totp).validate()
        }
        // Bytes, not characters: 22 three-byte characters are 66 bytes.
        #expect(throws: OATHError.self) {
            try CredentialID(name: String(repeating: "€", count: 22), issuer: nil, type: .totp).validate()
        }
        #expect(throws: OATHError.self) { try CredentialID(name: "", issuer: "x", type: .totp).validate() }
    }
}

@Suite struct OATHFormatTests {
    @Test func decimalCodesArePaddedAndMasked() {
        #expect(OATHSession.format(value: 0x8000_0000 | 1234, digits: 6, steam: false) == "001234")
        #expect(OATHSession.format(value: 1_284_755_224, digits: 6, steam: false) == "755224")
        #expect(OATHSession.format(value: 1_284_755_224, digits: 8, steam: false) == "84755224")
        #expect(OATHSession.format(value: 1_284_755_224, digits: 7, steam: false) == "4755224")
    }

    @Test func steamCodesUseTheSteamAlphabet() {
        // 0 → five times the first letter; 25 → the last letter then the first four.
        #expect(OATHSession.format(value: 0, digits: 5, steam: true) == "22222")
        #expect(OATHSession.format(value: 25, digits: 5, steam: true) == "Y2222")
        #expect(OATHSession.format(value: 26, digits: 5, steam: true) == "23222")
    }

    @Test func secretsAreHashedWhenLongerThanTheBlockAndPaddedTo14() {
        #expect(
            OATHSession.prepareSecret([1, 2, 3], algorithm: .sha1) == [1, 2, 3] + [UInt8](repeating: 0, count: 11))
        let long = [UInt8](repeating: 7, count: 65)
        #expect(OATHSession.prepareSecret(long, algorithm: .sha1) == Crypto.digest(.sha1, long))
        #expect(OATHSession.prepareSecret(long, algorithm: .sha512) == long)
        let longer = [UInt8](repeating: 7, count: 129)
        #expect(OATHSession.prepareSecret(longer, algorithm: .sha512) == Crypto.digest(.sha512, longer))
    }

    @Test func passwordKeyDerivation() {
        // PBKDF2-HMAC-SHA1, RFC 6070 vector 2 (2 iterations) checks the OpenSSL wrapper; the key itself
        // is PBKDF2(password, salt, 1000, 16).
        let v = Crypto.pbkdf2(
            .sha1, password: Array("password".utf8), salt: Array("salt".utf8), iterations: 2,
            length: 20)
        #expect(v.hex == "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957")
        let k = OATHSession.deriveKey(password: "password", salt: Array("salt".utf8))
        #expect(
            k
                == Crypto.pbkdf2(
                    .sha1, password: Array("password".utf8), salt: Array("salt".utf8),
                    iterations: 1000, length: 16))
        #expect(k.count == 16)
    }

    @Test func hmacMatchesRFC2202() {
        let mac = Crypto.hmac(.sha1, key: [UInt8](repeating: 0x0b, count: 20), data: Array("Hi There".utf8))
        #expect(mac.hex == "b617318655057264e28bc0b6fb378c8ef146be00")
    }

    @Test func deviceIDIsBase64OfHashedSalt() {
        let id = OATHSession.deviceID(salt: [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(id.count == 22 && !id.contains("="))
    }
}
