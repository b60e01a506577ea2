import Dispatch
import KeyKit
import Synchronization

/// The authenticator side of CTAPHID, in process: a virtual FIDO key's HID interface.
///
/// `write` hands the device one output report (a 64-byte packet, shorter ones are zero padded); `read`
/// returns the reports the device sends. Like a hidraw node, the device can be opened more than once
/// (`openAnotherHandle()`): every handle receives a copy of every report, and each client keeps to its
/// own channel, as browsers and ykterm do on a real key.
///
/// The device allocates channels (CTAPHID_INIT), echoes PING, counts WINKs, reassembles requests and
/// hands CBOR and MSG requests to `handler` on a queue of its own, sending KEEPALIVE while the handler
/// runs. Like a key it processes one request at a time: another channel's request meanwhile gets
/// ERR_CHANNEL_BUSY. CTAPHID_CANCEL on the busy channel answers the CBOR request at once with
/// CTAP2_ERR_KEEPALIVE_CANCEL; the handler's late answer is dropped.
///
/// `Options` also holds faults for tests (a key that never answers, keeps sending KEEPALIVE, answers
/// with an error, or numbers its packets wrong).
public final class VirtualHIDDevice: HIDReportDevice {
    /// Runs one CBOR (0x10) or MSG (0x03) request and returns the answer (status byte + CBOR, or data + SW);
    /// an empty answer sends nothing (the key lost power meanwhile).
    /// `keepalive` sends a KEEPALIVE with that status at once, and makes it the status of the periodic ones.
    public typealias Handler =
        @Sendable (
            _ command: UInt8, _ payload: [UInt8],
            _ keepalive: @Sendable (UInt8) -> Void
        ) -> [UInt8]

    public struct Options: Sendable {
        /// The device version in the INIT answer.
        public var deviceVersion = Version(5, 7, 2)
        public var capabilities: CTAPHIDCapabilities = [.wink, .cbor, .nmsg]
        /// Seconds between KEEPALIVEs while a request is processed; nil sends only those the handler asks for.
        public var keepAliveInterval: Double? = 0.1
        /// Seconds a request's continuation packets may take before ERR_MSG_TIMEOUT.
        public var transactionTimeout = 0.5
        /// Answers the YubiKey vendor command READ CONFIG (0x42) with this page of device information (a
        /// length byte, then TLVs); nil: the command is unknown, as on a key of another maker.
        public var readConfig: (@Sendable (_ page: UInt8) -> [UInt8])?
        /// Carries out the YubiKey vendor command WRITE CONFIG (0x43); false answers ERR_OTHER (refused). Nil:
        /// the command is unknown.
        public var writeConfig: (@Sendable (_ data: [UInt8]) -> Bool)?
        /// Carries out the YubiKey vendor command SET MODE (0x40); false answers ERR_OTHER (refused). Nil: the
        /// command is unknown.
        public var setMode: (@Sendable (_ data: [UInt8]) -> Bool)?

        // Faults.
        /// CBOR and MSG requests never reach the handler; KEEPALIVE with `keepAliveStatus` goes on until
        /// the request is cancelled (CANCEL, or INIT on its channel).
        public var keepAliveForever = false
        public var keepAliveStatus = CTAPHID.KeepaliveStatus.processing
        /// The handler runs, but its answer is never sent.
        public var dropResponses = false
        /// CBOR and MSG requests are answered with this CTAPHID error.
        public var errorResponse: UInt8?
        /// This many requests (PING, CBOR, MSG) are answered with ERR_CHANNEL_BUSY before one is served.
        public var busyResponses = 0
        /// Continuation packets of answers start at sequence number 1 instead of 0.
        public var badResponseSequence = false
        /// INIT answers carry a different nonce.
        public var wrongInitNonce = false

        public init() {}
    }

    /// What the device has seen, for tests.
    public struct Statistics: Sendable, Equatable {
        public var winks = 0
        public var cancels = 0
        public var handlerCalls = 0
        public var channelsAllocated = 0
        public var errorsSent = [UInt8]()
    }

    private let core: Core
    private let sink: OutputSink

    /// A device answering CBOR and MSG requests with `handler` (by default: CTAP1_ERR_INVALID_COMMAND for
    /// CBOR, SW 6D00 for MSG).
    public convenience init(options: Options = Options(), handler: @escaping Handler = VirtualHIDDevice.refuseAll) {
        self.init(core: Core(options: options, handler: handler))
    }

    private init(core: Core) {
        self.core = core
        self.sink = OutputSink()
        core.attach(sink)
    }

    /// Another handle on the same device, as a second program opening the hidraw node would have.
    public func openAnotherHandle() -> VirtualHIDDevice {
        VirtualHIDDevice(core: core)
    }

    public static let refuseAll: Handler = { command, _, _ in
        command == CTAPHID.Command.cbor ? [CTAPError.invalidCommand] : Response(status: .invalidInstruction).bytes
    }

    /// The options in force; changing them affects the next packets.
    public var options: Options {
        get { core.state.withLock { $0.options } }
        set { core.state.withLock { $0.options = newValue } }
    }

    public var statistics: Statistics { core.state.withLock { $0.statistics } }

    /// Called (on the device's queue) when CTAPHID_CANCEL or a resync aborts the request the handler is
    /// working on, so a handler waiting for a simulated touch can stop.
    public func setCancelHook(_ hook: (@Sendable () -> Void)?) {
        core.state.withLock { $0.onCancel = hook }
    }

    // MARK: HIDReportDevice

    public func write(_ report: [UInt8]) throws {
        guard !sink.isClosed else { throw FIDOTransportError.closed }
        guard report.count <= CTAPHID.packetSize else { throw FIDOTransportError.invalidLength }
        core.receive(report + [UInt8](repeating: 0, count: CTAPHID.packetSize - report.count))
    }

    public func read(timeoutMilliseconds: Int) throws -> [UInt8]? {
        try sink.pop(timeoutMilliseconds: timeoutMilliseconds)
    }

    public func close() {
        guard !sink.isClosed else { return }
        sink.close()
        core.detach(sink)
    }

    deinit {
        close()
    }
}

/// The reports waiting for one handle.
private final class OutputSink: Sendable {
    private let packets = Mutex<[[UInt8]]>([])
    /// Counts the packets in `packets` (plus one wake-up when closed).
    private let available = DispatchSemaphore(value: 0)
    private let closed = Atomic<Bool>(false)

    var isClosed: Bool { closed.load(ordering: .acquiring) }

    func push(_ packet: [UInt8]) {
        guard !isClosed else { return }
        packets.withLock { $0.append(packet) }
        available.signal()
    }

    func pop(timeoutMilliseconds: Int) throws -> [UInt8]? {
        guard !isClosed else { throw FIDOTransportError.closed }
        let deadline = DispatchTime.now() + .milliseconds(max(0, timeoutMilliseconds))
        guard available.wait(timeout: deadline) == .success else { return nil }
        guard !isClosed else { throw FIDOTransportError.closed }
        return packets.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    func close() {
        closed.store(true, ordering: .releasing)
        available.signal()
    }
}

/// The device state shared by all handles.
private final class Core: Sendable {
    enum Phase: Sendable {
        /// Continuation packets of a request are expected.
        case receiving(CTAPHID.Reassembler)
        /// The handler (or the keep-alive-forever fault) works on a request with this command.
        case processing(command: UInt8)
    }

    struct Busy: Sendable {
        var channel: UInt32
        var phase: Phase
        /// Identifies this transaction; timers and handler answers of older ones are dropped.
        var generation: Int
        var keepaliveStatus = CTAPHID.KeepaliveStatus.processing
    }

    struct State: Sendable {
        var options: VirtualHIDDevice.Options
        var statistics = VirtualHIDDevice.Statistics()
        var channels = Set<UInt32>()
        var nextChannel: UInt32 = 0x0100_0001
        var busy: Busy?
        var generation = 0
        var sinks = [ObjectIdentifier: OutputSink]()
        var onCancel: (@Sendable () -> Void)?
    }

    let state: Mutex<State>
    let handler: VirtualHIDDevice.Handler
    /// Runs handlers one at a time, like a key's single processor.
    let handlerQueue = DispatchQueue(label: "ykterm.virtual-hid.handler")
    let timerQueue = DispatchQueue(label: "ykterm.virtual-hid.timers")

    init(options: VirtualHIDDevice.Options, handler: @escaping VirtualHIDDevice.Handler) {
        state = Mutex(State(options: options))
        self.handler = handler
    }

    func attach(_ sink: OutputSink) {
        state.withLock { $0.sinks[ObjectIdentifier(sink)] = sink }
    }

    func detach(_ sink: OutputSink) {
        state.withLock { _ = $0.sinks.removeValue(forKey: ObjectIdentifier(sink)) }
    }

    // MARK: Sending

    private static func send(_ s: inout State, channel: UInt32, command: UInt8, payload: [UInt8]) {
        guard var packets = try? CTAPHID.fragment(cid: channel, command: command, payload: payload) else {
            sendError(&s, channel: channel, code: CTAPHID.ErrorCode.other)
            return
        }
        if s.options.badResponseSequence {
            for i in packets.indices.dropFirst() { packets[i][4] = UInt8(i) & 0x7F }
        }
        for packet in packets {
            for sink in s.sinks.values { sink.push(packet) }
        }
    }

    private static func sendError(_ s: inout State, channel: UInt32, code: UInt8) {
        s.statistics.errorsSent.append(code)
        send(&s, channel: channel, command: CTAPHID.Command.error, payload: [code])
    }

    // MARK: Receiving

    func receive(_ packet: [UInt8]) {
        state.withLock { s in
            guard let cid = CTAPHID.channel(of: packet) else { return }
            guard let command = CTAPHID.command(of: packet) else {
                continuation(&s, cid: cid, packet: packet)
                return
            }
            switch command {
            case CTAPHID.Command.initialize:
                initialize(&s, cid: cid, packet: packet)
                return
            case CTAPHID.Command.cancel:
                cancel(&s, cid: cid)
                return
            default:
                break
            }
            guard cid != CTAPHID.broadcastCID, cid != CTAPHID.reservedCID, s.channels.contains(cid) else {
                Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.invalidChannel)
                return
            }
            if let busy = s.busy {
                if busy.channel == cid, case .receiving = busy.phase {
                    // A new request before the last one arrived whole.
                    s.busy = nil
                    Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.invalidSequence)
                } else {
                    Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.channelBusy)
                }
                return
            }
            if s.options.busyResponses > 0,
                [CTAPHID.Command.ping, CTAPHID.Command.cbor, CTAPHID.Command.msg].contains(command)
            {
                s.options.busyResponses -= 1
                Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.channelBusy)
                return
            }
            var reassembler = CTAPHID.Reassembler(channel: cid)
            do {
                if let message = try reassembler.add(packet) {
                    dispatch(&s, cid: cid, message: message)
                } else {
                    s.generation += 1
                    s.busy = Busy(channel: cid, phase: .receiving(reassembler), generation: s.generation)
                    scheduleTransactionTimeout(generation: s.generation, after: s.options.transactionTimeout)
                }
            } catch {
                Self.sendError(&s, channel: cid, code: Self.code(for: error))
            }
        }
    }

    private static func code(for error: any Error) -> UInt8 {
        switch error as? FIDOTransportError {
        case .invalidLength: return CTAPHID.ErrorCode.invalidLength
        case .invalidSequence: return CTAPHID.ErrorCode.invalidSequence
        default: return CTAPHID.ErrorCode.other
        }
    }

    private func continuation(_ s: inout State, cid: UInt32, packet: [UInt8]) {
        // A continuation packet outside a transaction of its channel is ignored, as keys do.
        guard var busy = s.busy, busy.channel == cid, case .receiving(var reassembler) = busy.phase else { return }
        do {
            if let message = try reassembler.add(packet) {
                s.busy = nil
                dispatch(&s, cid: cid, message: message)
            } else {
                busy.phase = .receiving(reassembler)
                s.busy = busy
            }
        } catch {
            s.busy = nil
            Self.sendError(&s, channel: cid, code: Self.code(for: error))
        }
    }

    private func initialize(_ s: inout State, cid: UInt32, packet: [UInt8]) {
        let length = Int(packet[5]) << 8 | Int(packet[6])
        guard length == CTAPHID.nonceSize else {
            Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.invalidLength)
            return
        }
        var nonce = Array(packet[7..<(7 + CTAPHID.nonceSize)])
        let allocated: UInt32
        if cid == CTAPHID.broadcastCID {
            var next = s.nextChannel
            while next == CTAPHID.reservedCID || next == CTAPHID.broadcastCID || s.channels.contains(next) {
                next &+= 1
            }
            s.nextChannel = next &+ 1
            s.channels.insert(next)
            s.statistics.channelsAllocated += 1
            allocated = next
        } else if s.channels.contains(cid) {
            // Resynchronisation: the channel's transaction, if any, is abandoned.
            if s.busy?.channel == cid { abandon(&s) }
            allocated = cid
        } else {
            Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.invalidChannel)
            return
        }
        if s.options.wrongInitNonce { nonce[0] ^= 0xFF }
        let version = s.options.deviceVersion.bytes
        let answer =
            nonce + CTAPHID.bytes(of: allocated) + [CTAPHID.protocolVersion] + version
            + [s.options.capabilities.rawValue]
        Self.send(&s, channel: cid, command: CTAPHID.Command.initialize, payload: answer)
    }

    private func cancel(_ s: inout State, cid: UInt32) {
        // CANCEL has no answer of its own; outside a request of its channel it is ignored.
        guard let busy = s.busy, busy.channel == cid else { return }
        s.statistics.cancels += 1
        abandon(&s)
        if case .processing(let command) = busy.phase, command == CTAPHID.Command.cbor, !s.options.dropResponses {
            Self.send(&s, channel: cid, command: CTAPHID.Command.cbor, payload: [CTAPError.keepaliveCancel])
        }
    }

    /// Abandons the current transaction: its timers stop and the handler's answer will be dropped.
    private func abandon(_ s: inout State) {
        let wasProcessing: Bool
        if case .processing = s.busy?.phase { wasProcessing = true } else { wasProcessing = false }
        s.busy = nil
        s.generation += 1
        // Not on handlerQueue: the handler this hook should stop may be blocking it.
        if wasProcessing, let hook = s.onCancel { Blocking.run(label: "ykterm.virtual-hid.cancel") { hook() } }
    }

    // MARK: Processing

    private func dispatch(_ s: inout State, cid: UInt32, message: CTAPHID.Message) {
        let payload = message.payload
        switch message.command {
        case CTAPHID.Command.ping:
            Self.send(&s, channel: cid, command: CTAPHID.Command.ping, payload: payload)
        case CTAPHID.Command.wink where s.options.capabilities.contains(.wink):
            guard payload.isEmpty else {
                Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.invalidLength)
                return
            }
            s.statistics.winks += 1
            Self.send(&s, channel: cid, command: CTAPHID.Command.wink, payload: [])
        case CTAPHID.Command.cbor where s.options.capabilities.contains(.cbor):
            guard !payload.isEmpty else {
                Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.invalidLength)
                return
            }
            process(&s, cid: cid, command: message.command, payload: payload)
        case CTAPHID.Command.msg where !s.options.capabilities.contains(.nmsg):
            process(&s, cid: cid, command: message.command, payload: payload)
        case ManagementHID.ctapReadConfig where s.options.readConfig != nil:
            let page = payload.first ?? 0
            Self.send(&s, channel: cid, command: message.command, payload: s.options.readConfig?(page) ?? [0])
        case ManagementHID.ctapWriteConfig where s.options.writeConfig != nil:
            if s.options.writeConfig?(payload) == true {
                Self.send(&s, channel: cid, command: message.command, payload: [])
            } else {
                Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.other)
            }
        case ManagementHID.ctapSetMode where s.options.setMode != nil:
            if s.options.setMode?(payload) == true {
                Self.send(&s, channel: cid, command: message.command, payload: [])
            } else {
                Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.other)
            }
        default:
            Self.sendError(&s, channel: cid, code: CTAPHID.ErrorCode.invalidCommand)
        }
    }

    private func process(_ s: inout State, cid: UInt32, command: UInt8, payload: [UInt8]) {
        if let code = s.options.errorResponse {
            Self.sendError(&s, channel: cid, code: code)
            return
        }
        s.generation += 1
        let generation = s.generation
        s.busy = Busy(channel: cid, phase: .processing(command: command), generation: generation)
        if s.options.keepAliveForever {
            let status = s.options.keepAliveStatus
            s.busy?.keepaliveStatus = status
            Self.send(&s, channel: cid, command: CTAPHID.Command.keepalive, payload: [status])
            scheduleKeepalive(generation: generation, after: s.options.keepAliveInterval ?? 0.1)
            return
        }
        if let interval = s.options.keepAliveInterval { scheduleKeepalive(generation: generation, after: interval) }
        s.statistics.handlerCalls += 1
        let handler = self.handler
        handlerQueue.async { [weak self] in
            let keepalive: @Sendable (UInt8) -> Void = { [weak self] status in
                self?.handlerKeepalive(generation: generation, status: status)
            }
            let answer = handler(command, payload, keepalive)
            self?.finish(generation: generation, command: command, answer: answer)
        }
    }

    private func handlerKeepalive(generation: Int, status: UInt8) {
        state.withLock { s in
            guard let busy = s.busy, busy.generation == generation else { return }
            s.busy?.keepaliveStatus = status
            Self.send(&s, channel: busy.channel, command: CTAPHID.Command.keepalive, payload: [status])
        }
    }

    private func finish(generation: Int, command: UInt8, answer: [UInt8]) {
        state.withLock { s in
            guard let busy = s.busy, busy.generation == generation else { return }  // cancelled meanwhile
            s.busy = nil
            // An empty answer: the key lost power while it worked (a real answer has at least its status).
            guard !s.options.dropResponses, !answer.isEmpty else { return }
            Self.send(&s, channel: busy.channel, command: command, payload: answer)
        }
    }

    private func scheduleKeepalive(generation: Int, after interval: Double) {
        timerQueue.asyncAfter(deadline: .now() + max(interval, 0.005)) { [weak self] in
            guard let self else { return }
            let again: Double? = self.state.withLock { s in
                guard let busy = s.busy, busy.generation == generation, case .processing = busy.phase else {
                    return nil
                }
                Self.send(
                    &s, channel: busy.channel, command: CTAPHID.Command.keepalive,
                    payload: [busy.keepaliveStatus])
                return s.options.keepAliveInterval ?? (s.options.keepAliveForever ? 0.1 : nil)
            }
            if let again { self.scheduleKeepalive(generation: generation, after: again) }
        }
    }

    private func scheduleTransactionTimeout(generation: Int, after seconds: Double) {
        timerQueue.asyncAfter(deadline: .now() + seconds) { [weak self] in
            self?.state.withLock { s in
                guard let busy = s.busy, busy.generation == generation, case .receiving = busy.phase else { return }
                s.busy = nil
                Self.sendError(&s, channel: busy.channel, code: CTAPHID.ErrorCode.messageTimeout)
            }
        }
    }
}
