import FoundationEssentials
import Glibc
import Dispatch
import Synchronization

/// Errors of the OTP application's slot commands.
public enum OTPError: Error, Equatable {
    case invalidSlot(Int)
    case slotEmpty(Int)
    case notChallengeResponse(Int)
    case touchTimeout(Int)
    case challengeTooLong(Int)
    case invalidKey(Int)
    case invalidAccessCode
    case configurationRefused
    case unexpectedResponse(Malformation)
    /// A Yubico OTP public ID of this many bytes (at most 16).
    case invalidPublicID(Int)
    /// A Yubico OTP private ID of this many bytes (6 are due).
    case invalidPrivateID(Int)
    /// A Yubico OTP AES key of this many bytes (16 are due).
    case invalidAESKey(Int)
    /// A static password of this many characters (1 to 38).
    case invalidPasswordLength(Int)
    /// The password's character at this offset has no key on the layout.
    case unencodableCharacter(offset: Int, layout: ScanCodeLayout)
    /// An initial HOTP moving factor that is not a multiple of 16 from 0 to 0xFFFF0.
    case invalidMovingFactor(UInt32)
    /// An HOTP slot gives 6 or 8 digits.
    case invalidDigits(Int)
    /// An NDEF payload of this many bytes (at most 54).
    case ndefTooLong(Int)
    /// An HOTP token identifier that is not OMP, TT and MUI as `OATHTokenIdentifier` reads them.
    case invalidTokenIdentifier
    /// A token identifier whose MUI is the key's serial, from a key that does not tell it.
    case tokenIdentifierNeedsSerial

}

/// The OTP application over CCID: slot status, serial number, HMAC-SHA1 challenge-response, and slot
/// programming.
public actor OTPSession {
    /// What the OTP application reports on SELECT and after every slot write.
    public struct Status: Sendable, Equatable {
        public var version: Version
        /// Increments with every successful slot write (and returns to 0 when no slot is left configured).
        public var programSequence: UInt8
        /// The touch-level word: bit 0/1 slot 1/2 configured, bit 2/3 slot 1/2 triggered by touch.
        public var touchLevel: UInt16

        /// The bits of `touchLevel`, for this session and the virtual key's OTP application.
        public enum TouchLevel {
            public static let slot1Configured: UInt16 = 0x01
            public static let slot2Configured: UInt16 = 0x02
            public static let slot1Touch: UInt16 = 0x04
            public static let slot2Touch: UInt16 = 0x08
        }

        public var slot1Configured: Bool { touchLevel & TouchLevel.slot1Configured != 0 }
        public var slot2Configured: Bool { touchLevel & TouchLevel.slot2Configured != 0 }
        /// Slot 1 sends its OTP on a touch (a keyboard slot; challenge-response slots do not set this).
        public var slot1Touch: Bool { touchLevel & TouchLevel.slot1Touch != 0 }
        public var slot2Touch: Bool { touchLevel & TouchLevel.slot2Touch != 0 }

        public func isConfigured(slot: Int) -> Bool { slot == 1 ? slot1Configured : slot2Configured }
        public func isTouchTriggered(slot: Int) -> Bool { slot == 1 ? slot1Touch : slot2Touch }
    }

    public enum Ins {
        public static let config: UInt8 = 0x01
        public static let status: UInt8 = 0x03
    }

    /// Slot commands (P1 of INS 01).
    public enum Command {
        public static let config1: UInt8 = 0x01
        public static let config2: UInt8 = 0x03
        public static let update1: UInt8 = 0x04
        public static let update2: UInt8 = 0x05
        public static let swap: UInt8 = 0x06
        public static let ndef1: UInt8 = 0x08
        public static let ndef2: UInt8 = 0x09
        public static let deviceSerial: UInt8 = 0x10
        public static let challengeOTP1: UInt8 = 0x20
        public static let challengeOTP2: UInt8 = 0x28
        public static let challengeHMAC1: UInt8 = 0x30
        public static let challengeHMAC2: UInt8 = 0x38
    }

    /// How the session reaches the OTP application: CCID APDUs, or the OTP HID interface's slot commands.
    private enum Backend {
        case ccid(SmartCardProtocol)
        case hid(OTPHIDConnection)
    }

    private let backend: Backend
    public private(set) var status: Status

    private init(backend: Backend, status: Status) {
        self.backend = backend
        self.status = status
    }

    /// SELECTs the OTP application and reads its status.
    public static func make(connection: any SmartCardConnection) async throws -> OTPSession {
        let (proto, answer) = try await SmartCardProtocol.selecting(AID.otp, name: "OTP", on: connection)
        return OTPSession(backend: .ccid(proto), status: try Status(bytes: answer))
    }

    /// The OTP application over the key's OTP HID (keyboard) interface; reads its status report.
    public static func make(hid: OTPHIDConnection) async throws -> OTPSession {
        OTPSession(backend: .hid(hid), status: try await hid.readStatus())
    }

    /// The key's serial number; nil when the key does not reveal it.
    public func serial() async throws -> UInt32? {
        let proto: SmartCardProtocol
        switch backend {
        case .ccid(let p): proto = p
        case .hid(let hid):
            do {
                return try await ManagementHID.serial(otp: hid)
            } catch OTPHIDError.commandRejected {
                return nil
            }
        }
        let r = try await proto.send(APDU(ins: Ins.config, p1: Command.deviceSerial, le: 256))
        guard r.status.isSuccess, r.data.count == 4 else { return nil }
        return UInt32(BigEndian.integer(r.data))
    }

    /// Reads the status again.
    @discardableResult
    public func refreshStatus() async throws -> Status {
        let proto: SmartCardProtocol
        switch backend {
        case .ccid(let p): proto = p
        case .hid(let hid):
            status = try await hid.readStatus()
            return status
        }
        status = try Status(bytes: try await proto.sendChecked(APDU(ins: Ins.status, le: 256)))
        return status
    }

    private static func check(slot: Int) throws(OTPError) {
        guard slot == 1 || slot == 2 else { throw .invalidSlot(slot) }
    }

    /// How long `calculateHMAC` waits for the answer before it reports that the key is waiting for a touch:
    /// the OTP application does not tell whether a challenge-response slot needs one, and a slot that does
    /// not answers within milliseconds.
    public static let touchNoticeDelay: Double = 0.3

    /// HMAC-SHA1 challenge-response: the 20-byte response of `slot` to `challenge` (at most 64 bytes,
    /// padded as yubikey-manager does for slots that strip the padding). A slot that needs a touch answers
    /// only after it; `onWaitingForTouch` is called (once, from another thread) when no answer has come
    /// after `touchNoticeAfter` seconds, so the caller can say "Touch your key".
    public func calculateHMAC(
        slot: Int, challenge: [UInt8], touchNoticeAfter: Double = OTPSession.touchNoticeDelay,
        onWaitingForTouch: (@Sendable () -> Void)? = nil
    ) async throws -> [UInt8] {
        try Self.check(slot: slot)
        guard challenge.count <= 64 else { throw OTPError.challengeTooLong(challenge.count) }
        guard status.isConfigured(slot: slot) else { throw OTPError.slotEmpty(slot) }
        let started = Date()
        let notice = onWaitingForTouch.map { DelayedNotice(after: touchNoticeAfter, $0) }
        defer { notice?.cancel() }
        let command = slot == 1 ? Command.challengeHMAC1 : Command.challengeHMAC2
        let proto: SmartCardProtocol
        switch backend {
        case .ccid(let p): proto = p
        case .hid(let hid):
            return try await Self.hmacOverHID(
                hid, slot: slot, command: command,
                challenge: OTPSlotConfiguration.paddedHMACChallenge(challenge),
                notice: notice)
        }
        let r = try await proto.send(
            APDU(
                ins: Ins.config, p1: slot == 1 ? Command.challengeHMAC1 : Command.challengeHMAC2,
                data: OTPSlotConfiguration.paddedHMACChallenge(challenge), le: 256))
        notice?.cancel()
        if r.status.isSuccess && r.data.count == 20 { return r.data }
        // A slot with another kind of configuration refuses at once; a touch slot refuses after waiting.
        let waited = Date().timeIntervalSince(started) > 2
        if r.status.isSuccess && !r.data.isEmpty {
            throw OTPError.unexpectedResponse(Malformation(.hmacResponse, .lengthExpected(r.data.count, expected: 20)))
        }
        if r.status.isSuccess || r.status == .conditionsNotSatisfied || r.status == .securityConditionNotSatisfied
            || r.status == .incorrectParameters || r.status == .dataInvalid
        {
            throw waited ? OTPError.touchTimeout(slot) : OTPError.notChallengeResponse(slot)
        }
        throw SmartCardError.status(r.status)
    }

    /// Programs `slot` with an HMAC-SHA1 challenge-response key (1 to 20 bytes). `accessCode` is the
    /// slot's current access code, kept as its new one.
    public func programChallengeResponse(
        slot: Int, key: [UInt8], requireTouch: Bool = false,
        accessCode: [UInt8]? = nil
    ) async throws {
        try Self.check(slot: slot)
        let config = try OTPSlotConfiguration.challengeResponse(
            key: key, requireTouch: requireTouch,
            accessCode: accessCode)
        try await write(
            command: slot == 1 ? Command.config1 : Command.config2, config: config.bytes,
            accessCode: accessCode)
    }

    /// Writes `configuration` to `slot`, replacing what the slot held. `currentAccessCode` is the slot's
    /// access code now; the configuration carries the slot's new one.
    public func put(slot: Int, _ configuration: OTPSlotConfiguration, currentAccessCode: [UInt8]? = nil) async throws {
        try Self.check(slot: slot)
        try await write(
            command: slot == 1 ? Command.config1 : Command.config2, config: configuration.bytes,
            accessCode: currentAccessCode)
    }

    /// Changes the updatable flags and the access code of a programmed slot (UPDATE), keeping its secret.
    /// The key refuses when the slot is empty, was not programmed to allow updates, or has another access code.
    public func update(slot: Int, _ update: OTPSlotConfiguration, currentAccessCode: [UInt8]? = nil) async throws {
        try Self.check(slot: slot)
        try await write(
            command: slot == 1 ? Command.update1 : Command.update2, config: update.bytes,
            accessCode: currentAccessCode)
    }

    /// Swaps the two slots' configurations. `accessCode`: the slots' access code, when they have one.
    public func swapSlots(accessCode: [UInt8]? = nil) async throws {
        try await write(command: Command.swap, config: [], accessCode: accessCode)
    }

    /// Makes `slot` the one the NDEF tag serves, after the URI (or text) of `configuration`.
    public func setNDEF(slot: Int, _ configuration: OTPNDEFConfiguration, accessCode: [UInt8]? = nil) async throws {
        try Self.check(slot: slot)
        try await write(
            command: slot == 1 ? Command.ndef1 : Command.ndef2, config: configuration.bytes,
            accessCode: accessCode)
    }

    /// Empties `slot` (an all-zero configuration).
    public func deleteSlot(slot: Int, accessCode: [UInt8]? = nil) async throws {
        try Self.check(slot: slot)
        try await write(
            command: slot == 1 ? Command.config1 : Command.config2,
            config: [UInt8](repeating: 0, count: OTPSlotConfiguration.size), accessCode: accessCode)
    }

    /// Sends a slot write (configuration followed by the current access code) and checks that the program
    /// sequence moved on: by one, or back to 0 when no slot is left configured.
    public func write(command: UInt8, config: [UInt8], accessCode: [UInt8]?) async throws {
        if let accessCode, accessCode.count != OTPSlotConfiguration.accessCodeSize {
            throw OTPError.invalidAccessCode
        }
        let code = accessCode ?? [UInt8](repeating: 0, count: OTPSlotConfiguration.accessCodeSize)
        let proto: SmartCardProtocol
        switch backend {
        case .ccid(let p): proto = p
        case .hid(let hid):
            do {
                // The connection checks that the programming sequence moved on.
                let answer = try await hid.send(slot: command, data: config + code)
                guard case .status(let after) = answer else {
                    throw OTPError.unexpectedResponse(Malformation(.slotWrite, .dataInstead))
                }
                status = after
                return
            } catch OTPHIDError.commandRejected {
                throw OTPError.configurationRefused
            }
        }
        let r = try await proto.send(APDU(ins: Ins.config, p1: command, data: config + code, le: 256))
        guard r.status.isSuccess else {
            if [0x6982, 0x6985, 0x6A80, 0x6984].contains(r.status.rawValue) { throw OTPError.configurationRefused }
            throw SmartCardError.status(r.status)
        }
        let before = status.programSequence
        let after = r.data.count >= 6 ? try Status(bytes: r.data) : try await refreshStatus()
        status = after
        if after.programSequence == before &+ 1 { return }
        if after.programSequence == 0 && before > 0 && after.touchLevel & 0x1F == 0 { return }
        throw OTPError.configurationRefused
    }
}

extension OTPSession {
    /// HMAC-SHA1 over HID: the key says when it waits for a touch, so the notice goes out at once then.
    fileprivate static func hmacOverHID(
        _ hid: OTPHIDConnection, slot: Int, command: UInt8, challenge: [UInt8],
        notice: DelayedNotice?
    ) async throws -> [UInt8] {
        let answer: OTPHIDAnswer
        do {
            answer = try await hid.send(slot: command, data: challenge) { progress in
                if progress == .waitingForUserPresence { notice?.fireNow() }
            }
        } catch OTPHIDError.commandRejected {
            throw OTPError.notChallengeResponse(slot)
        } catch OTPHIDError.touchTimeout {
            throw OTPError.touchTimeout(slot)
        }
        guard case .data(let data) = answer else { throw OTPError.notChallengeResponse(slot) }
        // A short answer is malformed, a wrong checksum damaged: OTPHIDError says which.
        return try OTPHID.checkedResponse(data, length: 20)
    }
}

/// Calls an action after a delay unless cancelled first; the action runs at most once.
final class DelayedNotice: Sendable {
    private enum State { case pending, fired, cancelled }
    private let state = Mutex(State.pending)

    private let action: @Sendable () -> Void

    init(after seconds: Double, _ action: @escaping @Sendable () -> Void) {
        self.action = action
        Blocking.after(seconds) { [self] in
            let fire = state.withLock { s -> Bool in
                guard s == .pending else { return false }
                s = .fired
                return true
            }
            if fire { action() }
        }
    }

    /// Runs the action now unless it ran or was cancelled.
    func fireNow() {
        let fire = state.withLock { s -> Bool in
            guard s == .pending else { return false }
            s = .fired
            return true
        }
        if fire { action() }
    }

    /// Stops the action from running if it has not started; harmless after it ran.
    func cancel() {
        state.withLock { s in if s == .pending { s = .cancelled } }
    }
}

extension OTPSession.Status {
    /// Parses version (3), program sequence (1), touch level (2, little-endian).
    public init(bytes: [UInt8]) throws(OTPError) {
        guard bytes.count >= 6, let v = Version(bytes: bytes) else {
            throw .unexpectedResponse(Malformation(.otpStatus, .lengthExpected(bytes.count, expected: 6)))
        }
        self.init(version: v, programSequence: bytes[3], touchLevel: UInt16(bytes[4]) | UInt16(bytes[5]) << 8)
    }
}
