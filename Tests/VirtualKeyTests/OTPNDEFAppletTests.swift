import Foundation
import KeyKit
import Testing
import VirtualKey

@Suite("OTP: virtual key NDEF tag")
struct OTPNDEFAppletTests {
    private static let token = OTPTokenState(
        aesKey: Array(0..<16), publicID: [0xFF, 0x00, 0x01, 0xAD, 0x21, 0x40],
        privateID: [1, 2, 3, 4, 5, 6], usageCounter: 10)

    private func key() -> VirtualKey {
        var state = VirtualKeyState.yubiKey5NFC()
        state.otpToken = OTPNDEFAppletTests.token
        return VirtualKey(state: state)
    }

    private func readOTP(_ key: VirtualKey) async throws -> (String, DecryptedOTP) {
        let records = try await NDEFSession(connection: VirtualKeyConnection(key: key)).read()
        let otp = try NDEFOTP.extract(from: records)
        guard case .uri(let uri) = try records[0].content() else {
            throw NDEFError.malformed(Malformation(.uriRecord, .missing))
        }
        return (uri, try YubicoOTP.decryptVerified(otp, key: OTPNDEFAppletTests.token.aesKey))
    }

    @Test func readsFreshOTPs() async throws {
        let key = key()
        let (uri, first) = try await readOTP(key)
        #expect(uri.hasPrefix("https://my.yubico.com/yk/#vvcc"))
        #expect(first.publicID == Modhex.encode(OTPNDEFAppletTests.token.publicID))
        #expect(first.token.privateID == [1, 2, 3, 4, 5, 6])
        #expect(first.token.usageCounter == 11)
        #expect(first.token.sessionCounter == 0)
        let (_, second) = try await readOTP(key)
        #expect(second.token.usageCounter == 11 && second.token.sessionCounter == 1)
        let typed = try YubicoOTP.decryptVerified(key.typeOTP(), key: OTPNDEFAppletTests.token.aesKey)
        #expect(typed.token.sessionCounter == 2)
        key.powerCycle()
        let (_, third) = try await readOTP(key)
        #expect(third.token.usageCounter == 12 && third.token.sessionCounter == 0)
        #expect(key.state.otpToken?.usageCounter == 12)
    }

    @Test func newKeyGetsARandomCredentialWithSerialPublicID() throws {
        let key = VirtualKey()
        #expect(key.state.otpToken == nil)
        let otp = key.typeOTP()
        let token = try #require(key.state.otpToken)
        let d = try YubicoOTP.decryptVerified(otp, key: token.aesKey)
        #expect(YubicoOTP.serial(fromPublicID: d.publicID) == key.state.serial)
    }

    @Test func stateFileWithoutTheFieldLoads() throws {
        var state = VirtualKeyState.yubiKey5NFC()
        state.otpToken = OTPNDEFAppletTests.token
        let data = try JSONEncoder().encode(state)
        let decoded = try JSONDecoder().decode(VirtualKeyState.self, from: data)
        #expect(decoded.otpToken == OTPNDEFAppletTests.token)
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        object["otpToken"] = nil
        let old = try JSONSerialization.data(withJSONObject: object)
        #expect(try JSONDecoder().decode(VirtualKeyState.self, from: old).otpToken == nil)
    }

    @Test func tagCommands() {
        let key = key()
        #expect(key.process(try! APDU.select(aid: AID.ndef).encoded()) == [0x90, 0x00])
        #expect(key.process([0x00, 0xB0, 0x00, 0x00, 0x02]) == [0x69, 0x85])  // nothing selected
        #expect(key.process([0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x05]) == [0x6A, 0x82])
        #expect(key.process([0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x03]) == [0x90, 0x00])
        let cc = key.process([0x00, 0xB0, 0x00, 0x00, 0x0F])
        #expect(cc.count == 17 && Array(cc[9..<11]) == [0xE1, 0x04])
        #expect(key.process([0x00, 0xB0, 0x01, 0x00, 0x02]) == [0x6B, 0x00])  // past the end
        #expect(key.process([0x00, 0xD6, 0x00, 0x00, 0x01, 0x00]) == [0x69, 0x82])
    }
}
