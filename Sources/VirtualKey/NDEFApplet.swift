import FoundationEssentials
import Glibc
import KeyKit

/// The Yubico OTP credential behind the virtual key's NDEF tag (and `VirtualKey.typeOTP()`).
public struct OTPTokenState: Codable, Sendable, Equatable {
    public var aesKey: [UInt8]
    public var publicID: [UInt8]
    public var privateID: [UInt8]
    /// Non-volatile usage counter (15 bits): one more at the first OTP after each power-up.
    public var usageCounter: UInt16
    /// OTPs since power-up (wraps into the usage counter).
    public var sessionCounter: UInt8

    public init(aesKey: [UInt8], publicID: [UInt8], privateID: [UInt8], usageCounter: UInt16 = 0,
                sessionCounter: UInt8 = 0) {
        self.aesKey = aesKey
        self.publicID = publicID
        self.privateID = privateID
        self.usageCounter = usageCounter
        self.sessionCounter = sessionCounter
    }

    /// A random key and private ID, with the serial-based public ID (`vvcc…`).
    public static func random(serial: UInt32) -> OTPTokenState {
        OTPTokenState(aesKey: Crypto.random(16), publicID: YubicoOTP.publicID(serial: serial),
                      privateID: Crypto.random(6))
    }
}

/// Makes Yubico OTPs as a YubiKey does: the usage counter goes up at the first OTP after power-up (the
/// session counter restarting at 0), the session counter at each later one; the timestamp is an 8 Hz timer
/// started at a random value at power-up.
final class OTPGenerator {
    private var sessionStarted = false
    private var poweredAt = ContinuousClock.now
    private var timestampBase = UInt32.random(in: 0..<0x10000)

    func powerUp() {
        sessionStarted = false
        poweredAt = .now
        timestampBase = UInt32.random(in: 0..<0x10000)
    }

    func next(state: inout VirtualKeyState) -> String {
        var token = state.otpToken ?? OTPTokenState.random(serial: state.serial)
        if !sessionStarted {
            sessionStarted = true
            token.usageCounter = min(token.usageCounter + 1, 0x7FFF)
            token.sessionCounter = 0
        } else if token.sessionCounter == 0xFF {
            token.usageCounter = min(token.usageCounter + 1, 0x7FFF)
            token.sessionCounter = 0
        } else {
            token.sessionCounter += 1
        }
        let elapsed = ContinuousClock.now - poweredAt
        let ticks = UInt32(truncatingIfNeeded: elapsed.components.seconds * 8
                           + Int64(elapsed.components.attoseconds / 125_000_000_000_000_000))
        let t = YubicoOTPToken(privateID: token.privateID, usageCounter: token.usageCounter,
                               timestamp: (timestampBase &+ ticks) & 0xFF_FFFF, sessionCounter: token.sessionCounter,
                               random: UInt16.random(in: 0...0xFFFF))
        state.otpToken = token
        return (try? YubicoOTP.encode(t, key: token.aesKey, publicID: token.publicID)) ?? ""
    }
}

/// An NFC Forum Type 4 tag (NDEF application): a capability container (file E103) and an NDEF file (E104,
/// or another the profile names; the capability container says which) whose URI record is `https://my.yubico.com/yk/#<OTP>`. Each SELECT of the NDEF file makes a fresh OTP,
/// which the READ BINARY commands that follow (length, then message) all see.
final class NDEFApplet: Applet {
    let aid = AID.ndef
    let generator: OTPGenerator
    static let ccFile: [UInt8] = [0xE1, 0x03]
    static let ndefFileSize = 0x0400
    /// The NDEF file's identifier.
    let ndefFile: [UInt8]

    private enum File { case cc, ndef }
    private var selectedFile: File?
    private var ndefContent: [UInt8] = []

    init(generator: OTPGenerator, ndefFile: [UInt8] = [0xE1, 0x04]) {
        self.generator = generator
        self.ndefFile = ndefFile
    }

    var capabilityContainer: [UInt8] {
        [0x00, 0x0F, 0x20, 0x00, 0x7F, 0x00, 0x7F,
         0x04, 0x06] + ndefFile + [UInt8(Self.ndefFileSize >> 8), UInt8(Self.ndefFileSize & 0xFF), 0x00, 0xFF]
    }

    func powerReset() {
        selectedFile = nil
        ndefContent = []
    }

    func select(state: inout VirtualKeyState) -> Response {
        selectedFile = nil
        return Response(status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        switch apdu.ins {
        case 0xA4: // SELECT by file identifier
            guard apdu.p1 == 0x00 else { return Response(status: .wrongP1P2) }
            switch apdu.data {
            case NDEFApplet.ccFile:
                selectedFile = .cc
            case ndefFile:
                selectedFile = .ndef
                let otp = generator.next(state: &state)
                let message = NDEFMessage.encode([.uri(NDEFOTP.defaultURIPrefix + otp)])
                ndefContent = BigEndian.bytes(UInt64(message.count), count: 2) + message
            default:
                selectedFile = nil
                return Response(status: .fileNotFound)
            }
            return Response(status: .ok)
        case 0xB0: // READ BINARY
            let content: [UInt8]
            switch selectedFile {
            case .cc: content = capabilityContainer
            case .ndef: content = ndefContent
            case nil: return Response(status: .conditionsNotSatisfied)
            }
            let offset = Int(apdu.p1) << 8 | Int(apdu.p2)
            guard offset <= content.count else { return Response(status: .wrongP1P2) }
            let n = min(apdu.le ?? 256, content.count - offset)
            return Response(data: Array(content[offset..<(offset + n)]), status: .ok)
        case 0xD6: // UPDATE BINARY: the tag is read-only
            return Response(status: .securityConditionNotSatisfied)
        default:
            return Response(status: .invalidInstruction)
        }
    }
}
