import FoundationEssentials
import Glibc
import KeyKit
import Synchronization

/// A software key with the same applications as a YubiKey, dispatching APDUs by the selected AID.
///
/// Thread-safe: every command runs under one lock, so the vpcd bridge and in-process connections may
/// share a key. With a state file, the persistent state is written after every command that changed it.
public final class VirtualKey: Sendable {
    /// An NFC-style ATR (T0 high nibble 8: a key on a contactless reader), as a YubiKey 5 NFC shows on NFC,
    /// so clients treat the vpcd reader as an NFC reader.
    public static let atr: [UInt8] = {
        let body: [UInt8] = [0x8D, 0x80, 0x01, 0x80, 0x73, 0xC0, 0x21, 0xC0] + Array("WYubiKey".utf8)
        let tck = body.reduce(0, ^)
        return [0x3B] + body + [tck]
    }()

    /// The ATR a YubiKey 5 gives on USB (its CCID interface), T0 high nibble F: clients treat the reader
    /// as the key's own USB interface.
    public static let usbATR: [UInt8] =
        [
            0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15, 0x80, 0x73, 0xC0,
            0x21, 0xC0,
        ] + Array("WYubiKey@".utf8)

    /// Which ATR the key answers with: as on an NFC reader (the default) or as a USB key.
    public enum ATRStyle: Sendable {
        case nfc, usb
    }

    public static func atr(_ style: ATRStyle) -> [UInt8] {
        style == .usb ? usbATR : atr
    }

    /// Commands received, counted by instruction (for tests and benchmarks that count APDUs).
    public struct Statistics: Sendable, Equatable {
        public var commands = 0
        public var byInstruction = [UInt8: Int]()
        public var selects = [String: Int]()
    }

    private struct Inner {
        var state: VirtualKeyState
        var applets: [any Applet]
        var selected: Int?
        var chainBuffer: [UInt8] = []
        var chainHeader: (UInt8, UInt8, UInt8)?
        var pendingResponse: [UInt8] = []
        var statistics = Statistics()
        var powered = true
        /// Counts power cycles: a request received before one is not processed after it (a key that loses
        /// power forgets what it was doing).
        var powerCycles = 0
        /// Counts resets of the smart-card interface (power cycles included): an APDU received before one is
        /// not processed after it.
        var cardResets = 0
        /// The FIDO authenticator, shared by the NFC applet and the HID handler.
        let fido: FIDOAuthenticator
        /// Makes the Yubico OTPs of the NDEF tag and `typeOTP()`.
        let otpGenerator = OTPGenerator()
        /// Set by a WRITE CONFIG with the reboot flag: the key restarts once the answer is out.
        var rebootRequested = false
    }

    private let inner: Mutex<Inner>
    private let stateFile: VirtualKeyStateFile?
    /// Serialises state-file writes; each write takes the newest state, so the last write is the newest.
    private let saveLock = Mutex(0)
    /// Simulated processing time per command, in seconds.
    public let latency: Double
    /// Seconds an OATH account that requires touch waits for its simulated touch before answering.
    public let touchDelay: Double
    /// Seconds the FIDO authenticator's simulated touch takes (0: at once).
    public let userPresenceDelay: Double
    /// Seconds after power-up during which a FIDO reset is allowed.
    public let resetWindow: Double
    /// How the key behaves where makes differ (see `VirtualKeyProfile`).
    public let profile: VirtualKeyProfile
    /// Set by `cancelFIDO()`: a FIDO request waiting for its simulated touch stops.
    private let fidoCancelled = Atomic<Bool>(false)
    /// The transport smart-card clients reach the key on (its ATR): which enabled set SELECT obeys.
    public let smartCardTransport: ATRStyle
    /// What restarts the key after a WRITE CONFIG with the reboot flag (on USB: unplug and plug in again);
    /// without one the key power-cycles.
    private let rebootHandler = Mutex<(@Sendable () -> Void)?>(nil)

    public init(
        state: VirtualKeyState = .yubiKey5NFC(), stateFile: VirtualKeyStateFile? = nil,
        latency: Double = 0, touchDelay: Double = 0.5, userPresenceDelay: Double = 0,
        resetWindow: Double = 10, profile: VirtualKeyProfile = .yubikey, smartCardTransport: ATRStyle = .nfc,
        bioSampleStatuses: [CTAP2.BioEnrollment.SampleStatus] = [],
        sensorDelays: [Double] = FIDOAuthenticator.defaultSensorDelays
    ) {
        let fido = FIDOAuthenticator(
            userPresenceDelay: userPresenceDelay, resetWindow: resetWindow, profile: profile,
            bioSampleStatuses: bioSampleStatuses, sensorDelays: sensorDelays)
        var core = Inner(state: state, applets: [], fido: fido)
        core.applets =
            (profile.hasManagement ? [ManagementApplet(profile: profile)] : [])
            + [
                OTPApplet(touchDelay: touchDelay),
                OATHApplet(touchDelay: touchDelay, refused: profile.refusedOATHInstructions),
                FIDOApplet(authenticator: fido, transport: smartCardTransport),
                NDEFApplet(generator: core.otpGenerator, ndefFile: profile.ndefFile),
                PIVApplet(touchDelay: touchDelay),
                OpenPGPApplet(touchDelay: touchDelay),
                HSMAuthApplet(touchDelay: touchDelay),
            ]
        inner = Mutex(core)
        self.stateFile = stateFile
        self.latency = latency
        self.touchDelay = touchDelay
        self.userPresenceDelay = userPresenceDelay
        self.resetWindow = resetWindow
        self.profile = profile
        self.smartCardTransport = smartCardTransport
    }

    /// Loads the state from `file` (creating it from `initial` when missing).
    public convenience init(
        stateFile file: VirtualKeyStateFile, initial: VirtualKeyState,
        latency: Double = 0, touchDelay: Double = 0.5, userPresenceDelay: Double = 0,
        resetWindow: Double = 10, profile: VirtualKeyProfile = .yubikey,
        smartCardTransport: ATRStyle = .nfc,
        bioSampleStatuses: [CTAP2.BioEnrollment.SampleStatus] = [],
        sensorDelays: [Double] = FIDOAuthenticator.defaultSensorDelays
    ) throws {
        let loaded = try file.load()
        self.init(
            state: loaded ?? initial, stateFile: file, latency: latency, touchDelay: touchDelay,
            userPresenceDelay: userPresenceDelay, resetWindow: resetWindow, profile: profile,
            smartCardTransport: smartCardTransport, bioSampleStatuses: bioSampleStatuses,
            sensorDelays: sensorDelays)
        if loaded == nil { try file.save(initial) }
    }

    public var state: VirtualKeyState { inner.withLock { $0.state } }
    public var statistics: Statistics { inner.withLock { $0.statistics } }
    public func resetStatistics() { inner.withLock { $0.statistics = Statistics() } }

    /// Power on/off or reset: every applet forgets its session, nothing is selected, and the FIDO
    /// authenticator starts afresh (new PIN token and key agreement key, wrong-PIN block lifted, reset
    /// window open again).
    public func powerCycle() {
        inner.withLock { inner in
            VirtualKey.resetSmartCard(&inner)
            inner.powerCycles += 1
            inner.fido.powerCycle()
            inner.otpGenerator.powerUp()
        }
    }

    /// The key is powered from USB (plugged in): NFC, if restricted, is on again.
    public func poweredFromUSB() {
        withInner { $0.state.nfcRestricted = false }
    }

    /// A reset of the smart-card interface alone (the reader powering the card of a USB key on and off): the
    /// applets forget their session and nothing is selected; the FIDO HID interface, another interface of the
    /// same USB device, goes on undisturbed.
    public func resetSmartCard() {
        inner.withLock { VirtualKey.resetSmartCard(&$0) }
    }

    private static func resetSmartCard(_ inner: inout Inner) {
        inner.selected = nil
        inner.chainBuffer = []
        inner.chainHeader = nil
        inner.pendingResponse = []
        inner.cardResets += 1
        for a in inner.applets { a.powerReset() }
    }

    /// One command to the OTP application from the OTP HID interface: the same applet and state as over CCID,
    /// but it leaves the smart-card side's selection alone (on a USB key the two are separate interfaces, and a
    /// CCID client's selected application must not change under it). Nil when the key has no OTP application.
    func processOTPFromHID(_ apdu: APDU) -> Response? {
        withInner { inner in
            guard inner.state.enabled(over: .usb).contains(.otp) else { return nil }
            guard let otp = inner.applets.first(where: { $0.aid == AID.otp }) else { return nil }
            return otp.process(apdu, state: &inner.state)
        }
    }

    /// WRITE CONFIG from a HID interface (the vendor CTAPHID command, or the OTP interface's slot command):
    /// the Management application's rules, without touching what the smart-card side has selected. Over the
    /// OTP interface a change that is made bumps the programming sequence, as the key's status tells a client
    /// that its command was taken. True when the configuration was written.
    public func writeConfigFromHID(_ data: [UInt8], otpInterface: Bool = false) -> Bool {
        managementFromHID(APDU(ins: ManagementSession.Ins.writeConfig, data: data), otpInterface: otpInterface)
    }

    /// SET MODE from a HID interface (the vendor CTAPHID command 40, or the OTP interface's slot command 11), as
    /// the Management application takes it over CCID (firmware before 5.0). True when the mode was set.
    public func setModeFromHID(_ data: [UInt8], otpInterface: Bool = false) -> Bool {
        managementFromHID(
            APDU(ins: ManagementSession.Ins.setMode, p1: ManagementSession.Ins.setModeP1, data: data),
            otpInterface: otpInterface)
    }

    private func managementFromHID(_ apdu: APDU, otpInterface: Bool) -> Bool {
        var reboot = false
        let written = withInner { inner -> Bool in
            guard let management = inner.applets.first(where: { $0 is ManagementApplet }) as? ManagementApplet else {
                return false
            }
            let r = management.process(apdu, state: &inner.state)
            reboot = management.takeEffect() == .reboot
            guard r.status.isSuccess else { return false }
            if otpInterface { inner.state.otpSequence &+= 1 }
            return true
        }
        if reboot { restart() }
        return written
    }

    /// What a short touch of the key's button types (for demos and the TUI), without the Enter after it: slot
    /// 1's output when it is a keyboard slot, otherwise a Yubico OTP of the key's own credential.
    public func typeOTP() -> String {
        withInner { inner in
            inner.otpGenerator.output(slot: 1, keyboard: false, state: &inner.state)
                ?? inner.otpGenerator.next(state: &inner.state)
        }
    }

    /// What a touch of `slot` (1 short, 2 long) types on a host with the US layout, tabs and Enter included;
    /// nil when the slot is empty or answers challenges instead.
    public func touch(slot: Int) -> String? {
        withInner { $0.otpGenerator.output(slot: slot, keyboard: true, state: &$0.state) }
    }

    /// Handles one raw command APDU and returns the raw response.
    public func process(_ command: [UInt8]) -> [UInt8] {
        let received = inner.withLock { $0.cardResets }
        if latency > 0 { SystemThread.sleep(latency) }
        var reboot = false
        let response = withInner { inner in
            // Lost with the power, as on a card pulled out of its reader mid-command.
            guard inner.cardResets == received else { return Response(status: .commandAborted) }
            let r = VirtualKey.handle(command, &inner, profile: profile, transport: smartCardTransport)
            reboot = inner.rebootRequested
            inner.rebootRequested = false
            return r
        }
        if reboot { restart() }
        return response.bytes
    }

    /// Sets what restarts the key after a WRITE CONFIG with the reboot flag (called outside the key's lock,
    /// once the answer is made; it should act a moment later, when the answer is out).
    public func setRebootHandler(_ handler: (@Sendable () -> Void)?) {
        rebootHandler.withLock { $0 = handler }
    }

    private func restart() {
        if let handler = rebootHandler.withLock({ $0 }) {
            handler()
        } else {
            powerCycle()
        }
    }

    /// Runs `body` under the lock, then saves the state when it changed.
    private func withInner<R>(_ body: (inout Inner) -> R) -> R {
        var changed = false
        let result = inner.withLock { inner -> R in
            let before = inner.state
            let r = body(&inner)
            changed = inner.state != before
            return r
        }
        if changed, let stateFile {
            saveLock.withLock { _ in
                do {
                    try stateFile.save(state)
                } catch {
                    StandardStream.write("virtual key: \(error)\n", to: 2)
                }
            }
        }
        return result
    }

    // MARK: FIDO over USB HID

    /// The handler for a `VirtualHIDDevice` that makes it this key's FIDO interface: CBOR requests go to
    /// the same authenticator (and state) as the NFC applet, MSG requests are U2F APDUs. While a request
    /// waits for its simulated touch the device is told to send KEEPALIVE "user presence needed".
    public func fidoHIDHandler() -> VirtualHIDDevice.Handler {
        { [self] command, payload, keepalive in
            self.processFIDO(command: command, payload: payload, keepalive: keepalive)
        }
    }

    /// A `VirtualHIDDevice` wired to this key's FIDO authenticator, CTAPHID_CANCEL included. Without
    /// `options` the device reports the key's firmware version and, as a YubiKey with U2F does, CBOR, WINK
    /// and MSG (no NMSG).
    public func makeFIDOHIDDevice(options: VirtualHIDDevice.Options? = nil) -> VirtualHIDDevice {
        // By default as a YubiKey's FIDO interface: its firmware, WINK and CBOR, and the vendor READ CONFIG.
        let options = options ?? fidoHIDOptionsWithReadConfig
        let device = VirtualHIDDevice(options: options, handler: fidoHIDHandler())
        device.setCancelHook { [self] in self.cancelFIDO() }
        return device
    }

    /// Stops a FIDO request that waits for its simulated touch (CTAPHID_CANCEL): it ends with
    /// CTAP2_ERR_KEEPALIVE_CANCEL.
    public func cancelFIDO() {
        fidoCancelled.store(true, ordering: .sequentiallyConsistent)
    }

    private func processFIDO(command: UInt8, payload: [UInt8], keepalive: @Sendable (UInt8) -> Void) -> [UInt8] {
        let received = inner.withLock { $0.powerCycles }
        if latency > 0 { SystemThread.sleep(latency) }
        switch command {
        case CTAPHID.Command.cbor:
            // FIDO HID is a USB interface: CTAP2 answers only while FIDO2 is enabled over USB.
            guard state.enabled(over: .usb).contains(.fido2) else { return [CTAPError.invalidCommand] }
            fidoCancelled.store(false, ordering: .sequentiallyConsistent)
            return withInner { inner in
                // Pulled out (or reset) while it was working on this request: the request is lost with the power.
                guard inner.powerCycles == received else { return [] }
                return inner.fido.processCTAP2(payload, state: &inner.state, keepalive: keepalive) {
                    self.fidoCancelled.load(ordering: .sequentiallyConsistent)
                }
            }
        case CTAPHID.Command.msg:
            guard let apdu = try? APDU(parsing: payload) else { return Response(status: .wrongLength).bytes }
            guard state.enabled(over: .usb).contains(.u2f) else { return Response(status: .invalidInstruction).bytes }
            let response: Response? = withInner { inner in
                guard inner.powerCycles == received else { return nil }
                return inner.fido.processU2F(apdu, state: &inner.state)
            }
            return response?.bytes ?? []
        default:
            return [CTAPError.invalidCommand]
        }
    }

    private static func handle(
        _ bytes: [UInt8], _ inner: inout Inner, profile: VirtualKeyProfile,
        transport: ATRStyle
    ) -> Response {
        let apdu: APDU
        do {
            apdu = try APDU(parsing: bytes)
        } catch {
            return Response(status: .wrongLength)
        }
        inner.statistics.commands += 1
        inner.statistics.byInstruction[apdu.ins, default: 0] += 1

        // Rest of a long answer.
        if let sel = inner.selected, !inner.pendingResponse.isEmpty,
            apdu.ins == inner.applets[sel].remainingInstruction
        {
            if apdu.le == nil && profile.withholdsDataWithoutLe {
                // No Le, no data: the same announcement again, and nothing fetched.
                return Response(status: remaining(inner.pendingResponse.count))
            }
            return nextChunk(&inner, le: apdu.le)
        }
        inner.pendingResponse = []

        // Command chaining: gather data while CLA has bit 0x10.
        var command = apdu
        if apdu.cla & 0x10 != 0 {
            if let h = inner.chainHeader, h != (apdu.ins, apdu.p1, apdu.p2) {
                inner.chainBuffer = []
            }
            inner.chainHeader = (apdu.ins, apdu.p1, apdu.p2)
            inner.chainBuffer += apdu.data
            guard inner.chainBuffer.count <= 65_535 else {
                inner.chainBuffer = []
                inner.chainHeader = nil
                return Response(status: .wrongLength)
            }
            return Response(status: .ok)
        }
        if let h = inner.chainHeader {
            inner.chainHeader = nil
            let data = inner.chainBuffer
            inner.chainBuffer = []
            guard h == (apdu.ins, apdu.p1, apdu.p2) else { return Response(status: StatusWord(rawValue: 0x6883)) }
            command.data = data + apdu.data
        }
        command.cla &= ~0x10

        let response: Response
        if command.ins == 0xA4 && command.p1 == 0x04 {
            guard let index = inner.applets.firstIndex(where: { aidMatches(command.data, $0.aid) }) else {
                inner.selected = nil
                return Response(status: .fileNotFound)
            }
            // An application disabled over this transport is not there (as on a YubiKey); with NFC restricted,
            // none is there over NFC.
            let needs = inner.applets[index].capabilities
            let restricted = transport == .nfc && inner.state.nfcRestricted
            guard !restricted, needs.isEmpty || !needs.isDisjoint(with: inner.state.enabled(over: transport)) else {
                inner.selected = nil
                return Response(status: .fileNotFound)
            }
            inner.statistics.selects[command.data.hex, default: 0] += 1
            if inner.selected != index { inner.applets[index].powerReset() }
            inner.selected = index
            response = inner.applets[index].select(state: &inner.state)
        } else if let sel = inner.selected {
            response = inner.applets[sel].process(command, state: &inner.state)
            if let management = inner.applets[sel] as? ManagementApplet, let effect = management.takeEffect() {
                switch effect {
                case .reboot: inner.rebootRequested = true
                case .reset:
                    for (i, a) in inner.applets.enumerated() where i != sel { a.powerReset() }
                    inner.fido.powerCycle()
                }
            }
        } else {
            return Response(status: .conditionsNotSatisfied)
        }
        if command.le == nil && profile.withholdsDataWithoutLe {
            return withhold(response, &inner)
        }
        return split(response, &inner, le: command.le)
    }

    /// A command without Le gets no data: the whole answer waits, announced with 61xx, for a fetch that
    /// carries Le. Answers without data (and refusals) go out as they are.
    private static func withhold(_ response: Response, _ inner: inout Inner) -> Response {
        guard !response.data.isEmpty, response.status.isSuccess || response.status.isMoreDataAvailable else {
            return response
        }
        inner.pendingResponse = response.data
        return Response(status: remaining(inner.pendingResponse.count))
    }

    /// A SELECT names an application by its whole AID, or by a longer AID that starts with it.
    private static func aidMatches(_ requested: [UInt8], _ aid: [UInt8]) -> Bool {
        requested.count >= 5 && requested.starts(with: aid)
    }

    /// Answers longer than one response (256 bytes, or less when Le asks less) go out in parts, each
    /// announcing what is left with 61xx.
    private static func split(_ response: Response, _ inner: inout Inner, le: Int?) -> Response {
        let max = min(le ?? 256, 256)
        guard response.data.count > max, response.status.isSuccess || response.status.isMoreDataAvailable else {
            return response
        }
        inner.pendingResponse = Array(response.data[max...])
        return Response(data: Array(response.data[..<max]), status: remaining(inner.pendingResponse.count))
    }

    private static func nextChunk(_ inner: inout Inner, le: Int?) -> Response {
        let max = min(le ?? 256, 256)
        let n = min(max, inner.pendingResponse.count)
        let chunk = Array(inner.pendingResponse[..<n])
        inner.pendingResponse.removeFirst(n)
        if inner.pendingResponse.isEmpty { return Response(data: chunk, status: .ok) }
        return Response(data: chunk, status: remaining(inner.pendingResponse.count))
    }

    private static func remaining(_ count: Int) -> StatusWord {
        StatusWord(sw1: 0x61, sw2: count >= 256 ? 0 : UInt8(count))
    }
}

/// The virtual key as a `SmartCardConnection`, in the same process.
public final class VirtualKeyConnection: SmartCardConnection {
    public let key: VirtualKey
    public let name: String
    public var atr: [UInt8] { VirtualKey.atr }
    private let open = Mutex(true)

    public init(key: VirtualKey, name: String = "Virtual Key") {
        self.key = key
        self.name = name
    }

    public func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        guard open.withLock({ $0 }) else { throw SmartCardError.closed }
        return key.process(command)
    }

    public func close() async {
        open.withLock { $0 = false }
    }
}
