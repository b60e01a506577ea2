import Dispatch
import Synchronization
import KeyKit

/// The key side of the OTP HID protocol: the virtual key's OTP (keyboard) interface as feature reports.
///
/// What a client writes with `setFeature` is gathered into 70-byte frames and carried out as a YubiKey
/// does; `getFeature` gives the status report, the parts of an answer, or the touch-wait flag while a slot
/// that requires touch waits for its (simulated) touch. Slot commands go to the same OTP application and
/// state as over CCID, so a slot programmed here answers there and the programming sequence is shared. The
/// serial number and READ CONFIG (the Management application's device information) are answered too.
///
/// The slot commands go to the OTP applet directly, not through the key's APDU path: what a CCID client of
/// the same key has selected stays selected, as on a USB key, whose two interfaces are separate.
public final class VirtualOTPHIDDevice: HIDFeatureReportDevice {
    public let key: VirtualKey
    private let worker: DispatchQueue
    private let state = Mutex(State())

    private struct State {
        var isOpen = true
        /// The frame being written (70 bytes).
        var frame = [UInt8](repeating: 0, count: OTPHID.frameSize)
        /// The answer's reports, the last one ending it; `next` is the one to give.
        var answer: [[UInt8]] = []
        var next = 0
        /// A command waits for its touch; its status (6 bytes) as it was when it started.
        var waitingStatus: [UInt8]?
        /// Bumped by a reset or a new frame, so an answer to an abandoned command is dropped.
        var generation = 0
    }

    /// What the device saw, for tests.
    public struct Statistics: Sendable, Equatable {
        public var frames = 0
        public var badChecksums = 0
        public var touchWaits = 0
    }
    private let stats = Mutex(Statistics())
    public var statistics: Statistics { stats.withLock { $0 } }

    public init(key: VirtualKey) {
        self.key = key
        self.worker = DispatchQueue(label: "ykterm.virtual-otp-hid")
    }

    public func setFeature(_ report: [UInt8]) throws {
        guard report.count == OTPHID.reportSize else {
            throw OTPHIDError.malformedReport(
                Malformation(.featureReport, .lengthExpected(report.count, expected: OTPHID.reportSize)))
        }
        let flags = report[7]
        let complete: (slot: UInt8, payload: [UInt8], generation: Int)? = try state.withLock { s in
            guard s.isOpen else { throw OTPHIDError.deviceGone("virtual OTP HID") }
            if flags == OTPHID.resetMarker || flags == 0x8F {
                s.answer = []
                s.next = 0
                if s.waitingStatus != nil {
                    s.waitingStatus = nil
                    s.generation += 1
                }
                return nil
            }
            guard flags & OTPHID.writeFlag != 0, s.waitingStatus == nil else { return nil }
            let part = Int(flags & OTPHID.sequenceMask)
            guard part * OTPHID.reportDataSize < OTPHID.frameSize else { return nil }
            if part == 0 {
                s.frame = [UInt8](repeating: 0, count: OTPHID.frameSize)
                s.answer = []
                s.next = 0
            }
            for i in 0..<OTPHID.reportDataSize where part * 7 + i < OTPHID.frameSize {
                s.frame[part * 7 + i] = report[i]
            }
            guard (part + 1) * OTPHID.reportDataSize >= OTPHID.frameSize else { return nil }
            s.generation += 1
            return (s.frame[64], Array(s.frame[0..<64]), s.generation)
        }
        guard let complete else { return }
        let f = state.withLock { $0.frame }
        let crc = UInt16(f[65]) | UInt16(f[66]) << 8
        guard OTPHID.crc16(complete.payload) == crc else {
            stats.withLock { $0.badChecksums += 1 }
            return
        }
        stats.withLock { $0.frames += 1 }
        if needsTouch(slot: complete.slot) {
            let status = OTPApplet.status(key.state)
            state.withLock { $0.waitingStatus = status }
            stats.withLock { $0.touchWaits += 1 }
            worker.async { [self] in
                let data = run(slot: complete.slot, payload: complete.payload)
                state.withLock { s in
                    guard s.generation == complete.generation, s.waitingStatus != nil else { return }
                    s.waitingStatus = nil
                    s.answer = Self.reports(data)
                    s.next = 0
                }
            }
            return
        }
        let data = run(slot: complete.slot, payload: complete.payload)
        state.withLock { s in
            guard s.generation == complete.generation else { return }
            s.answer = Self.reports(data)
            s.next = 0
        }
    }

    public func getFeature() throws -> [UInt8] {
        let pending: [UInt8]? = try state.withLock { s in
            guard s.isOpen else { throw OTPHIDError.deviceGone("virtual OTP HID") }
            if let waiting = s.waitingStatus { return [0] + waiting + [OTPHID.touchWaitFlag] }
            guard !s.answer.isEmpty else { return nil }
            let report = s.answer[s.next]
            s.next = min(s.next + 1, s.answer.count - 1)
            return report
        }
        if let pending { return pending }
        return [0] + OTPApplet.status(key.state) + [0]
    }

    public func close() {
        state.withLock { s in
            s.isOpen = false
            s.generation += 1
        }
    }

    // MARK: Commands

    /// A challenge-response slot that requires touch waits for one when the key has a touch delay.
    private func needsTouch(slot: UInt8) -> Bool {
        guard slot == OTPSession.Command.challengeHMAC1 || slot == OTPSession.Command.challengeHMAC2,
            key.touchDelay > 0
        else { return false }
        let n = slot == OTPSession.Command.challengeHMAC1 ? 1 : 2
        guard let config = key.state.otpSlots.configuration(n) else { return false }
        return config.isHMACChallengeResponse && config.requiresTouch
    }

    /// Carries out one command; its answer data (the CRC is added later), or nil when the key answers
    /// with its status.
    private func run(slot: UInt8, payload: [UInt8]) -> [UInt8]? {
        typealias Command = OTPSession.Command
        switch slot {
        case Command.deviceSerial:
            return BigEndian.bytes(UInt64(key.state.serial), count: 4)
        case OTPHID.Command.readConfig:
            return key.deviceInfoPage(payload.first ?? 0)
        case ManagementHID.otpWriteConfig:
            // The frame's payload is padded to 64 bytes: the data is its length byte and that many more.
            let length = Int(payload.first ?? 0)
            _ = key.writeConfigFromHID(Array(payload.prefix(min(length + 1, payload.count))), otpInterface: true)
        case ManagementHID.otpSetMode:
            // SET MODE's four bytes, at the start of the padded payload.
            _ = key.setModeFromHID(Array(payload.prefix(4)), otpInterface: true)
        case Command.challengeHMAC1, Command.challengeHMAC2:
            guard let r = otpApplication(p1: slot, data: payload), r.status.isSuccess, r.data.count == 20 else {
                return nil
            }
            return r.data
        case Command.config1, Command.config2, Command.update1, Command.update2:
            writeSlot(slot, payload, carrying: OTPSlotConfiguration.size)
        case Command.swap:
            // No configuration: the access code comes first.
            writeSlot(slot, payload, carrying: 0)
        case Command.ndef1, Command.ndef2:
            writeSlot(slot, payload, carrying: OTPNDEFConfiguration.size)
        default:
            break
        }
        return nil
    }

    /// A slot write: the payload's first `carried` bytes (a configuration, an NDEF record) and the access code
    /// after them go to the OTP application.
    private func writeSlot(_ slot: UInt8, _ payload: [UInt8], carrying carried: Int) {
        _ = otpApplication(p1: slot, data: Array(payload[0..<(carried + OTPSlotConfiguration.accessCodeSize)]))
    }

    /// One slot command to the key's OTP application: the same applet and state as CCID, without touching
    /// what the smart-card side has selected.
    private func otpApplication(p1: UInt8, data: [UInt8]) -> Response? {
        key.processOTPFromHID(APDU(ins: OTPSession.Ins.config, p1: p1, data: data, le: 256))
    }

    /// An answer as response reports: parts of 7 bytes flagged 0x40 | n, then a part numbered 0 that ends it.
    static func reports(_ data: [UInt8]?) -> [[UInt8]] {
        guard let data else { return [] }
        let framed = OTPHID.appendingResponseCRC(data)
        var out = [[UInt8]]()
        var offset = 0
        while offset < framed.count {
            var part = Array(framed[offset..<min(offset + 7, framed.count)])
            part += [UInt8](repeating: 0, count: 7 - part.count)
            out.append(part + [OTPHID.responsePendingFlag | UInt8(out.count)])
            offset += 7
        }
        out.append([0, 0, 0, 0, 0, 0, 0, OTPHID.responsePendingFlag])
        return out
    }
}

extension VirtualKey {
    /// The key's OTP HID interface, sharing this key's state.
    public func makeOTPHIDDevice() -> VirtualOTPHIDDevice {
        VirtualOTPHIDDevice(key: self)
    }

    /// A READ CONFIG page as the Management application gives it: a length byte, then the TLVs (page 0
    /// holds them all).
    public func deviceInfoPage(_ page: UInt8) -> [UInt8] {
        let body = page == 0 ? profile.deviceInfo(state).configTLVs().flatMap(\.encoded) : []
        return [UInt8(body.count)] + body
    }

    /// FIDO HID options as the key's own FIDO interface has them (its firmware version, WINK, and CBOR when
    /// it speaks CTAP2 and the key has FIDO2: a YubiKey 4 is U2F only), and the YubiKey vendor READ CONFIG command
    /// answered with this key's device information.
    public var fidoHIDOptionsWithReadConfig: VirtualHIDDevice.Options {
        var o = VirtualHIDDevice.Options()
        o.deviceVersion = state.version
        let fido2 = Capabilities(rawValue: state.usbSupported).contains(.fido2)
        o.capabilities = profile.speaksCTAP2 && fido2 ? [.wink, .cbor] : [.wink]
        o.readConfig = { [self] page in self.deviceInfoPage(page) }
        o.writeConfig = { [self] data in self.writeConfigFromHID(data) }
        o.setMode = { [self] data in self.setModeFromHID(data) }
        return o
    }
}
