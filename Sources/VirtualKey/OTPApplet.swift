import FoundationEssentials
import Glibc
import KeyKit

/// The OTP slots' configurations, as the virtual key stores them (nil: the slot is empty).
public struct OTPSlotsState: Codable, Sendable, Equatable {
    /// The 52 bytes written to slot 1 (CRC included).
    public var slot1: [UInt8]?
    /// The 52 bytes written to slot 2 (CRC included).
    public var slot2: [UInt8]?
    /// What slot 1 and 2 have typed so far (nil: nothing since they were written).
    public var counters1: OTPSlotCounters?
    public var counters2: OTPSlotCounters?
    /// The slot the NDEF tag serves (nil: slot 1, as on a new key).
    public var ndefSlot: Int?
    /// The last NDEF write's 56 bytes (nil: the default URI, https://my.yubico.com/yk/#).
    public var ndef: [UInt8]?

    public init(slot1: [UInt8]? = nil, slot2: [UInt8]? = nil) {
        self.slot1 = slot1
        self.slot2 = slot2
    }

    public subscript(slot: Int) -> [UInt8]? {
        get { slot == 1 ? slot1 : slot2 }
        set { if slot == 1 { slot1 = newValue } else { slot2 = newValue } }
    }

    public func configuration(_ slot: Int) -> OTPSlotConfiguration? {
        self[slot].flatMap { OTPSlotConfiguration(bytes: $0) }
    }

    /// A slot's counters; writing a slot starts them afresh.
    public func counters(_ slot: Int) -> OTPSlotCounters { (slot == 1 ? counters1 : counters2) ?? OTPSlotCounters() }

    public mutating func setCounters(_ slot: Int, _ counters: OTPSlotCounters?) {
        if slot == 1 { counters1 = counters } else { counters2 = counters }
    }

    /// The NDEF tag's slot and record prefix.
    public var ndefConfiguration: (slot: Int, configuration: OTPNDEFConfiguration) {
        let configuration =
            ndef.flatMap { OTPNDEFConfiguration(bytes: $0) } ?? (try? OTPNDEFConfiguration.uri())
            ?? OTPNDEFConfiguration(type: OTPNDEFConfiguration.uriType, payload: [])
        return (ndefSlot ?? 1, configuration)
    }
}

/// What a keyboard slot keeps between touches: a Yubico OTP slot's usage and session counters, an OATH-HOTP
/// slot's moving factor (nil: the initial one its configuration holds).
public struct OTPSlotCounters: Codable, Sendable, Equatable {
    public var usage: UInt16 = 0
    public var session: UInt8 = 0
    public var hotp: UInt32?

    public init(usage: UInt16 = 0, session: UInt8 = 0, hotp: UInt32? = nil) {
        self.usage = usage
        self.session = session
        self.hotp = hotp
    }
}

/// The OTP application's CCID interface: status on SELECT and STATUS, serial number, slot writes
/// (configure, delete, update, swap, NDEF) and HMAC-SHA1 challenge-response.
///
/// As a YubiKey does, a slot write answers with the status; a refused write (wrong access code, bad
/// CRC, an update of an empty slot or one that does not allow updates) leaves the program sequence
/// unchanged. The sequence returns to 0 when no slot is left configured. A slot with an access code takes
/// writes (configure, delete, update, NDEF) only with that code; a swap needs the codes of both slots.
final class OTPApplet: Applet {
    let aid = AID.otp
    let capabilities: Capabilities = .otp
    /// The button a slot that requires touch waits for.
    let button: SimulatedButton

    init(touchDelay: Double = 0.5) {
        button = SimulatedButton(delay: touchDelay)
    }

    typealias Ins = OTPSession.Ins
    typealias Command = OTPSession.Command

    /// Touch-level bits: slot configured, slot triggered by touch (a keyboard slot, not challenge-response).
    static func touchLevel(_ state: VirtualKeyState) -> UInt16 {
        var level: UInt16 = 0
        for slot in 1...2 {
            guard let config = state.otpSlots.configuration(slot) else { continue }
            typealias Bit = OTPSession.Status.TouchLevel
            level |= slot == 1 ? Bit.slot1Configured : Bit.slot2Configured
            if !config.isChallengeResponse { level |= slot == 1 ? Bit.slot1Touch : Bit.slot2Touch }
        }
        return level
    }

    static func status(_ state: VirtualKeyState) -> [UInt8] {
        // version, programming sequence, touch level (little-endian).
        let level = touchLevel(state)
        return state.version.bytes + [state.otpSequence, UInt8(level & 0xFF), UInt8(level >> 8)]
    }

    func select(state: inout VirtualKeyState) -> Response {
        Response(data: OTPApplet.status(state), status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        switch apdu.ins {
        case Ins.status:
            return Response(data: OTPApplet.status(state), status: .ok)
        case Ins.config:
            switch apdu.p1 {
            case Command.deviceSerial:
                return Response(data: BigEndian.bytes(UInt64(state.serial), count: 4), status: .ok)
            case Command.config1, Command.config2:
                return configure(slot: apdu.p1 == Command.config1 ? 1 : 2, apdu.data, &state)
            case Command.update1, Command.update2:
                return update(slot: apdu.p1 == Command.update1 ? 1 : 2, apdu.data, &state)
            case Command.swap:
                return swap(apdu.data, &state)
            case Command.ndef1, Command.ndef2:
                return setNDEF(slot: apdu.p1 == Command.ndef1 ? 1 : 2, apdu.data, &state)
            case Command.challengeHMAC1, Command.challengeHMAC2:
                return challengeHMAC(slot: apdu.p1 == Command.challengeHMAC1 ? 1 : 2, apdu.data, state)
            default:
                return Response(status: .incorrectParameters)
            }
        default:
            return Response(status: .invalidInstruction)
        }
    }

    private static let size = OTPSlotConfiguration.size
    private static let codeSize = OTPSlotConfiguration.accessCodeSize

    /// The access code the command gives must match the slot's, when it has one.
    private static func accessAllowed(slot: Int, given: [UInt8], _ state: VirtualKeyState) -> Bool {
        guard let current = state.otpSlots.configuration(slot), current.hasAccessCode else { return true }
        return given == current.accessCode
    }

    /// A write took effect: the sequence moves on, or back to 0 when every slot is empty.
    private static func written(_ state: inout VirtualKeyState) -> Response {
        if state.otpSlots.slot1 == nil && state.otpSlots.slot2 == nil {
            state.otpSequence = 0
        } else {
            state.otpSequence = state.otpSequence &+ 1
        }
        return Response(data: status(state), status: .ok)
    }

    private func configure(slot: Int, _ data: [UInt8], _ state: inout VirtualKeyState) -> Response {
        guard data.count == Self.size || data.count == Self.size + Self.codeSize else {
            return Response(status: .wrongLength)
        }
        let config = Array(data[..<Self.size])
        let given = data.count > Self.size ? Array(data[Self.size...]) : [UInt8](repeating: 0, count: Self.codeSize)
        guard Self.accessAllowed(slot: slot, given: given, state) else {
            return Response(data: Self.status(state), status: .ok)
        }
        if config.allSatisfy({ $0 == 0 }) {
            state.otpSlots[slot] = nil
            state.otpSlots.setCounters(slot, nil)
            return Self.written(&state)
        }
        guard OTPSlotConfiguration(bytes: config) != nil else {
            return Response(data: Self.status(state), status: .ok)
        }
        state.otpSlots[slot] = config
        state.otpSlots.setCounters(slot, nil)
        return Self.written(&state)
    }

    /// UPDATE: new updatable flags and access code for a programmed slot that allows updates.
    private func update(slot: Int, _ data: [UInt8], _ state: inout VirtualKeyState) -> Response {
        guard data.count == Self.size || data.count == Self.size + Self.codeSize else {
            return Response(status: .wrongLength)
        }
        let given = data.count > Self.size ? Array(data[Self.size...]) : [UInt8](repeating: 0, count: Self.codeSize)
        guard let current = state.otpSlots.configuration(slot),
            current.extFlags & OTPSlotConfiguration.ExtFlag.allowUpdate != 0,
            Self.accessAllowed(slot: slot, given: given, state),
            let update = OTPSlotConfiguration(bytes: Array(data[..<Self.size])), update.isValidUpdate
        else {
            return Response(data: Self.status(state), status: .ok)
        }
        state.otpSlots[slot] = current.applying(update: update).bytes
        return Self.written(&state)
    }

    /// NDEF 1/2: the tag serves this slot, after the record prefix given.
    private func setNDEF(slot: Int, _ data: [UInt8], _ state: inout VirtualKeyState) -> Response {
        let size = OTPNDEFConfiguration.size
        guard data.count == size || data.count == size + Self.codeSize else { return Response(status: .wrongLength) }
        let given = data.count > size ? Array(data[size...]) : [UInt8](repeating: 0, count: Self.codeSize)
        guard Self.accessAllowed(slot: slot, given: given, state),
            OTPNDEFConfiguration(bytes: Array(data[..<size])) != nil
        else {
            return Response(data: Self.status(state), status: .ok)
        }
        state.otpSlots.ndefSlot = slot
        state.otpSlots.ndef = Array(data[..<size])
        return Self.written(&state)
    }

    private func swap(_ data: [UInt8], _ state: inout VirtualKeyState) -> Response {
        let given =
            data.count >= Self.codeSize
            ? Array(data.suffix(Self.codeSize)) : [UInt8](repeating: 0, count: Self.codeSize)
        guard Self.accessAllowed(slot: 1, given: given, state), Self.accessAllowed(slot: 2, given: given, state) else {
            return Response(data: Self.status(state), status: .ok)
        }
        let one = state.otpSlots.slot1
        state.otpSlots.slot1 = state.otpSlots.slot2
        state.otpSlots.slot2 = one
        let counters = state.otpSlots.counters1
        state.otpSlots.counters1 = state.otpSlots.counters2
        state.otpSlots.counters2 = counters
        return Self.written(&state)
    }

    private func challengeHMAC(slot: Int, _ data: [UInt8], _ state: VirtualKeyState) -> Response {
        guard let config = state.otpSlots.configuration(slot), config.isHMACChallengeResponse else {
            return Response(status: .conditionsNotSatisfied)
        }
        guard data.count <= 64 else { return Response(status: .wrongLength) }
        var challenge = data
        if config.configFlags & OTPSlotConfiguration.ConfigFlag.hmacLessThan64 != 0 {
            challenge = OTPSlotConfiguration.strippedHMACChallenge(challenge)
        }
        if config.requiresTouch { button.touch() }
        return Response(data: Crypto.hmac(.sha1, key: config.hmacKey, data: challenge), status: .ok)
    }
}
