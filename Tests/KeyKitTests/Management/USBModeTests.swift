import KeyKit
import Testing

/// USB modes as ykman's `config mode` names them, and SET MODE's data as yubikit packs it (`<BBH`: the mode's
/// number with the touch-eject flag, the challenge-response timeout, the auto-eject timeout little-endian).
@Suite struct USBModeTests {
    @Test func modesAreParsedAsYkmanParsesThem() {
        #expect(USBMode(parsing: "OTP+FIDO+CCID")?.code == 6)
        #expect(USBMode(parsing: "o+f+c")?.code == 6)
        #expect(USBMode(parsing: "ccid")?.code == 1)
        #expect(USBMode(parsing: "F+C")?.code == 5)
        #expect(USBMode(parsing: "OTP+CCID")?.interfaces == [.otp, .ccid])
        #expect(USBMode(parsing: "4")?.description == "OTP+FIDO")
        #expect(USBMode(parsing: "c+o")?.description == "OTP+CCID")
        for bad in ["", "7", "NFC", "OTP+X", "+"] { #expect(USBMode(parsing: bad) == nil, "\(bad)") }
        #expect(USBMode(code: 0x86)?.code == 6)
        // Relative to the current interfaces, as ykman's "+CCID" and "-OTP".
        #expect(USBMode(parsing: "+CCID", current: [.otp])?.interfaces == [.otp, .ccid])
        #expect(USBMode(parsing: "-o+f", current: [.otp, .ccid])?.interfaces == [.fido, .ccid])
        #expect(USBMode(parsing: "-OTP", current: [.otp]) == nil)
        #expect(USBMode(parsing: "+NFC", current: [.otp]) == nil)
    }

    @Test func setModeDataIsLittleEndianWithTheEjectFlag() {
        let ccid = USBMode(parsing: "CCID")!
        #expect(ccid.setModeData(challengeResponseTimeout: 15, autoEject: 300) == [0x81, 15, 0x2C, 0x01])
        #expect(ccid.setModeData(challengeResponseTimeout: 0, autoEject: 0) == [0x81, 0, 0, 0])
        #expect(USBMode(parsing: "o+f")!.setModeData(challengeResponseTimeout: 20, autoEject: nil) == [0x04, 20, 0, 0])
    }

    @Test func aYubiKey5sApplicationsForAMode() {
        let all = Capabilities.all
        #expect(USBMode(parsing: "o+f")!.capabilities(supported: all) == [.otp, .u2f, .fido2])
        #expect(USBMode(parsing: "c")!.capabilities(supported: all) == [.oath, .piv, .openpgp, .hsmauth])
        #expect(USBMode(parsing: "c")!.capabilities(supported: [.piv, .otp]) == [.piv])
        #expect(USBMode(enabled: [.otp, .piv]) == USBMode(parsing: "o+c"))
        #expect(USBMode(enabled: []) == nil)
    }
}
