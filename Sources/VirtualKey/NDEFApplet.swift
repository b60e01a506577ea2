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

    public init(
        aesKey: [UInt8], publicID: [UInt8], privateID: [UInt8], usageCounter: UInt16 = 0,
        sessionCounter: UInt8 = 0
    ) {
        self.aesKey = aesKey
        self.publicID = publicID
        self.privateID = privateID
        self.usageCounter = usageCounter
        self.sessionCounter = sessionCounter
    }

    /// A random key and private ID, with the serial-based public ID (`vvcc…`).
    public static func random(serial: UInt32) -> OTPTokenState {
        OTPTokenState(
            aesKey: Crypto.random(16), publicID: YubicoOTP.publicID(serial: serial),
            privateID: Crypto.random(6))
    }
}

/// Makes Yubico OTPs as a YubiKey does: the usage counter goes up at the first OTP after power-up (the
/// session counter restarting at 0), the session counter at each later one; the timestamp is an 8 Hz timer
/// started at a random value at power-up. Also what the keyboard slots type: a Yubico OTP slot its public ID
/// and OTP, a static password slot its scan codes (as a host with the US layout reads them), an OATH-HOTP slot
/// its token identifier (if any) and code, each with the tabs and Enter its flags ask for.
final class OTPGenerator {
    private var sessionStarted = false
    /// The slots whose Yubico OTP session has started since power-up.
    private var slotSessions = Set<Int>()
    private var poweredAt = ContinuousClock.now
    private var timestampBase = UInt32.random(in: 0..<0x10000)

    func powerUp() {
        sessionStarted = false
        slotSessions = []
        poweredAt = .now
        timestampBase = UInt32.random(in: 0..<0x10000)
    }

    /// The 8 Hz timer, 24 bits.
    private var timestamp: UInt32 {
        let elapsed = ContinuousClock.now - poweredAt
        let ticks = UInt32(
            truncatingIfNeeded: elapsed.components.seconds * 8
                + Int64(elapsed.components.attoseconds / 125_000_000_000_000_000))
        return (timestampBase &+ ticks) & 0xFF_FFFF
    }

    /// What a touch of `slot` types; nil for an empty or challenge-response slot. `keyboard`: with the tabs
    /// and Enter the slot's flags add (false: the output alone, as the NDEF tag serves it).
    func output(slot: Int, keyboard: Bool, state: inout VirtualKeyState) -> String? {
        guard let config = state.otpSlots.configuration(slot) else { return nil }
        typealias Flag = OTPSlotConfiguration.TicketFlag
        let tab = { (flag: UInt8) -> String in keyboard && config.ticketFlags & flag != 0 ? "\t" : "" }
        var counters = state.otpSlots.counters(slot)
        let body: String
        switch config.kind {
        case .yubicoOTP:
            Self.advance(
                usage: &counters.usage, session: &counters.session,
                newSession: slotSessions.insert(slot).inserted)
            let token = YubicoOTPToken(
                privateID: config.uid, usageCounter: counters.usage, timestamp: timestamp,
                sessionCounter: counters.session, random: UInt16.random(in: 0...0xFFFF))
            guard let encrypted = try? Crypto.aes128ECBEncrypt(key: config.key, token.bytes) else { return nil }
            body =
                tab(Flag.tabFirst) + Modhex.encode(config.fixed) + tab(Flag.appendTab1) + Modhex.encode(encrypted)
                + tab(Flag.appendTab2)
        case .staticPassword:
            body = tab(Flag.tabFirst) + ScanCodeLayout.us.typed(config.staticScanCodes)
        case .oathHOTP:
            let counter = counters.hotp ?? config.hotpMovingFactor
            counters.hotp = counter &+ 1
            body =
                tab(Flag.tabFirst) + Self.tokenIdentifier(config) + tab(Flag.appendTab1)
                + Self.hotp(key: config.hmacKey, counter: counter, digits: config.hotpDigits)
        case .staticTicket, .hmacChallengeResponse, .yubicoChallengeResponse:
            return nil
        }
        state.otpSlots.setCounters(slot, counters)
        return body + (keyboard && config.appendsEnter ? "\n" : "")
    }

    /// A Yubico OTP's counters for one more OTP: the first since power-up (`newSession`) and the one after
    /// session counter FF move the usage counter on (it stops at 7FFF) and start the session counter at 0; any
    /// other moves the session counter on.
    static func advance(usage: inout UInt16, session: inout UInt8, newSession: Bool) {
        if newSession || session == 0xFF {
            usage = min(usage + 1, 0x7FFF)
            session = 0
        } else {
            session += 1
        }
    }

    /// An HOTP slot's token identifier: its first bytes in modhex as the flags say, the rest as hex digits
    /// (a decimal MUI is stored as BCD).
    static func tokenIdentifier(_ config: OTPSlotConfiguration) -> String {
        typealias Flag = OTPSlotConfiguration.ConfigFlag
        let modhexBytes: Int
        switch config.configFlags & Flag.oathFixedModhex {
        case Flag.oathFixedModhex: modhexBytes = config.fixed.count
        case Flag.oathFixedModhex2: modhexBytes = 2
        case Flag.oathFixedModhex1: modhexBytes = 1
        default: modhexBytes = 0
        }
        return Modhex.encode(config.fixed.prefix(modhexBytes)) + Array(config.fixed.dropFirst(modhexBytes)).hex
    }

    /// RFC 4226: HMAC-SHA1 of the 8-byte counter, dynamically truncated to `digits` decimal digits.
    static func hotp(key: [UInt8], counter: UInt32, digits: Int) -> String {
        let mac = Crypto.hmac(.sha1, key: key, data: BigEndian.bytes(UInt64(counter), count: 8))
        let offset = Int(mac[19] & 0x0F)
        let value =
            (UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
                | UInt32(mac[offset + 3])) % (digits == 8 ? 100_000_000 : 1_000_000)
        let text = String(value)
        return String(repeating: "0", count: digits - text.count) + text
    }

    func next(state: inout VirtualKeyState) -> String {
        var token = state.otpToken ?? OTPTokenState.random(serial: state.serial)
        Self.advance(usage: &token.usageCounter, session: &token.sessionCounter, newSession: !sessionStarted)
        sessionStarted = true
        let t = YubicoOTPToken(
            privateID: token.privateID, usageCounter: token.usageCounter,
            timestamp: timestamp, sessionCounter: token.sessionCounter,
            random: UInt16.random(in: 0...0xFFFF))
        state.otpToken = token
        return (try? YubicoOTP.encode(t, key: token.aesKey, publicID: token.publicID)) ?? ""
    }
}

/// An NFC Forum Type 4 tag (NDEF application): a capability container (file E103) and an NDEF file (E104,
/// or another the profile names; the capability container says which) whose record is the NDEF prefix
/// (`https://my.yubico.com/yk/#` unless an NDEF write set another) followed by what the NDEF slot types (its
/// Yubico OTP, static password or HOTP code). When that slot types nothing (empty, challenge-response), the
/// key's own Yubico OTP credential (`VirtualKeyState.otpToken`) stands in. Each SELECT of the NDEF file makes
/// a fresh output, which the READ BINARY commands that follow (length, then message) all see.
final class NDEFApplet: Applet {
    let aid = AID.ndef
    /// The NDEF tag types the OTP application's OTPs: it goes with OTP.
    let capabilities: Capabilities = .otp
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
        [
            0x00, 0x0F, 0x20, 0x00, 0x7F, 0x00, 0x7F,
            0x04, 0x06,
        ] + ndefFile + [UInt8(Self.ndefFileSize >> 8), UInt8(Self.ndefFileSize & 0xFF), 0x00, 0xFF]
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
        case 0xA4:  // SELECT by file identifier
            guard apdu.p1 == 0x00 else { return Response(status: .wrongP1P2) }
            switch apdu.data {
            case NDEFApplet.ccFile:
                selectedFile = .cc
            case ndefFile:
                selectedFile = .ndef
                let (slot, configuration) = state.otpSlots.ndefConfiguration
                let output =
                    generator.output(slot: slot, keyboard: false, state: &state)
                    ?? generator.next(state: &state)
                let message = NDEFMessage.encode([configuration.record(output: output)])
                ndefContent = BigEndian.bytes(UInt64(message.count), count: 2) + message
            default:
                selectedFile = nil
                return Response(status: .fileNotFound)
            }
            return Response(status: .ok)
        case 0xB0:  // READ BINARY
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
        case 0xD6:  // UPDATE BINARY: the tag is read-only
            return Response(status: .securityConditionNotSatisfied)
        default:
            return Response(status: .invalidInstruction)
        }
    }
}
