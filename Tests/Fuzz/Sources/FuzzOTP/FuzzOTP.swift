import FuzzSupport
import KeyKit

/// OTP classification, modhex and Yubico OTP splitting and decryption with a fixed key.
///
/// The first byte chooses the mode. Text mode: the rest is what a key (or a human) typed; classification
/// returns a kind, and what it calls a Yubico OTP splits into 32 modhex token characters after a public ID
/// and decrypts (the CRC may fail); what it calls HOTP has a 6 or 8 digit code; modhex decoding and encoding
/// agree. Token mode: the rest builds a token and public ID; the encrypted OTP decrypts to the same token
/// with a good CRC and is classified as a Yubico OTP as typed on every keyboard layout.
private let key: [UInt8] = Array(0x00..<0x10)

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var reader = FuzzReader(fuzzBytes(data, size))
    if reader.byte() & 1 == 0 {
        checkText(String(decoding: reader.rest(), as: UTF8.self))
    } else {
        checkToken(&reader)
    }
    return 0
}

private func checkText(_ text: String) {
    let result = OTPClassifier.classify(text)
    switch result.kind {
    case .yubicoOTP:
        guard let publicID = result.publicID, let token = result.token else {
            fuzzCheck(false, "a Yubico OTP without public ID or token: \(text)")
            return
        }
        fuzzCheck(
            token.count == YubicoOTP.tokenLength && publicID + token == result.text,
            "split \(result.text) into \(publicID) + \(token)")
        do {
            let split = try YubicoOTP.split(result.text)
            fuzzCheck(split.publicID == publicID && split.ciphertext.count == 16, "split disagrees")
            let decrypted = try YubicoOTP.decrypt(result.text, key: key)
            fuzzCheck(decrypted.token.privateID.count == 6, "a private ID of \(decrypted.token.privateID.count)")
        } catch {
            fuzzCheck(false, "a classified Yubico OTP \(result.text) does not decrypt: \(error)")
        }
    case .oathHOTP:
        let code = result.code ?? ""
        fuzzCheck(
            (code.count == 6 || code.count == 8) && code.allSatisfy { $0.isASCII && $0.isNumber },
            "HOTP code \(code)")
    case .staticPassword:
        fuzzCheck(result.publicID == nil && result.code == nil, "a static password with OTP fields")
    }
    if let bytes = try? Modhex.decode(text) {
        fuzzCheck(Modhex.isModhex(text), "decoded modhex that isModhex rejects: \(text)")
        fuzzCheck(bytes.count * 2 == text.count, "\(text.count) characters decode to \(bytes.count) bytes")
        fuzzCheck((try? Modhex.decode(Modhex.encode(bytes))) == bytes, "modhex round trip of \(text)")
    }
    if let split = try? YubicoOTP.split(text) { fuzzCheck(split.ciphertext.count == 16, "split of \(text)") }
    _ = try? YubicoOTP.decrypt(text, key: key)
    _ = YubicoOTP.serial(fromPublicID: text)
}

private func checkToken(_ reader: inout FuzzReader) {
    let token = YubicoOTPToken(
        privateID: Array((reader.take(6) + [UInt8](repeating: 0, count: 6)).prefix(6)),
        usageCounter: UInt16(reader.integer(2)), timestamp: UInt32(reader.integer(3)),
        sessionCounter: reader.byte(), random: UInt16(reader.integer(2)))
    let publicID = reader.take(Int(reader.byte() % 9))
    let otp: String
    do {
        otp = try YubicoOTP.encode(token, key: key, publicID: publicID)
    } catch {
        fuzzCheck(false, "encoding a token failed: \(error)")
        return
    }
    do {
        let decrypted = try YubicoOTP.decryptVerified(otp, key: key)
        fuzzCheck(decrypted.token == token && decrypted.publicID == Modhex.encode(publicID), "\(otp) decrypts wrong")
    } catch {
        fuzzCheck(false, "\(otp) does not decrypt: \(error)")
    }
    for layout in KeyboardLayout.allCases {
        let typed = layout.typed(otp)
        let result = OTPClassifier.classify(typed + "\r")
        fuzzCheck(result.kind == .yubicoOTP, "\(otp) typed on \(layout) as \(typed) classified \(result.kind)")
    }
    let digits = reader.byte() & 1 == 0 ? 6 : 8
    var value = reader.integer(4)
    let code = String(
        (0..<digits).map { _ -> Character in
            defer { value /= 10 }
            return Character(String(value % 10))
        })
    for layout in KeyboardLayout.allCases {
        let result = OTPClassifier.classify(layout.typed(code) + "\n")
        fuzzCheck(result.kind == .oathHOTP && result.code == code, "HOTP \(code) on \(layout): \(result)")
    }
    if publicID.count == 6, publicID[0] == 0xFF, publicID[1] == 0x00 {
        fuzzCheck(OTPClassifier.classify(otp).serial == UInt32(BigEndian.integer(publicID[2...])), "serial of \(otp)")
    }
}

@_cdecl("FuzzOTP_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
