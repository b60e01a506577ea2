import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A HID device that moves whole reports: a FIDO key's hidraw node (`HIDRawDevice`), or the virtual key's HID side.
///
/// The calls block; `CTAPHIDConnection` makes them on its own dispatch queue, one at a time.
public protocol HIDReportDevice: AnyObject, Sendable {
    /// Writes one output report: the packet itself, without a report ID.
    func write(_ report: [UInt8]) throws
    /// Reads one input report, waiting at most `timeoutMilliseconds`; nil when none arrived in time.
    func read(timeoutMilliseconds: Int) throws -> [UInt8]?
    /// Closes the device; later reads and writes throw.
    func close()
}

/// CTAPHID (CTAP 2.1 section 11.2) over any `HIDReportDevice`: allocates a channel with CTAPHID_INIT,
/// then carries CTAP2 (CTAPHID_CBOR) and U2F (CTAPHID_MSG) messages on it.
///
/// Every device call runs on one serial dispatch queue owned by the connection, never on the Swift
/// cooperative pool, and reads wait at most `pollInterval` at a time, so a request can be cancelled,
/// the connection closed, and the time limits checked while the key waits for a touch. A connection opened
/// `inline` makes its device calls on the calling thread instead, with the same time limits and
/// cancelling: that saves two thread hand-offs per message, for a one-shot command that uses the
/// connection from one task and closes it only after its last request.
///
/// Time limits: a request may take `timeout` seconds in all; once the key says (with KEEPALIVE) that it
/// waits for a touch, up to `userPresenceTimeout` seconds from the start. When the time is up the
/// connection sends CTAPHID_CANCEL, so the key stops waiting, and throws `FIDOTransportError.timeout`.
/// A key busy with another program's channel (ERR_CHANNEL_BUSY) is asked again after a growing, randomised
/// pause (`busyRetryDelay`) for `busyRetryWindow` seconds, then the request fails with
/// `FIDOTransportError.channelBusy`.
///
/// KEEPALIVE packets are reported to `progress` when their status changes; the callback runs on the
/// connection's queue, so it should return quickly.
public final class CTAPHIDConnection: FIDOConnection {
    public let name: String
    /// The channel the key allocated for this connection.
    public let channel: UInt32
    /// The CTAPHID protocol version the key reported (2 for current keys).
    public let protocolVersion: UInt8
    /// The device version from CTAPHID_INIT (the firmware version on YubiKeys).
    public let deviceVersion: Version
    public let capabilities: CTAPHIDCapabilities
    /// False for a key whose CTAPHID_INIT answer leaves out the CBOR capability (a U2F-only key).
    public var announcesCTAP2: Bool? { capabilities.contains(.cbor) }
    /// Seconds a request may take while the key is not waiting for a touch.
    public let timeout: Double
    /// Seconds a request may take, from its start, once the key waits for a touch.
    public let userPresenceTimeout: Double
    /// Seconds to keep asking a key that is busy with another channel.
    public let busyRetryWindow: Double

    /// Longest single read, so cancel, close and the deadlines are noticed in time.
    static let pollInterval = 0.05
    /// The pause before asking a busy key again for the `attempt`th time (0 first): 20 ms doubling up to 160 ms,
    /// each between half and one and a half times that at random, so that two programs retrying in step with
    /// each other's answers fall out of step (and short enough not to lose every race to a program that
    /// retries at once).
    static func busyRetryDelay(attempt: Int) -> Double {
        let base = 0.02 * Double(1 << min(attempt, 3))
        return base * Double.random(in: 0.5...1.5)
    }
    /// How long to wait for the answer to a request cancelled at its timeout.
    static let cancelGrace = 0.25
    /// CTAPHID_INIT is answered at once by any key, even a busy one.
    static let initTimeout = 5.0

    private let device: any HIDReportDevice
    private let queue: DispatchQueue
    /// Device calls on the calling thread (see above), not on `queue`.
    public let inline: Bool
    private let state = Mutex(State())

    private struct State {
        var isOpen = true
        /// The request being exchanged on `queue` right now.
        var current: PendingCall?
        /// Whether the last exchange read its whole answer, so nothing of it can be waiting on the device.
        /// CTAPHID_INIT reads its answer whole; an exchange that fails may leave reports behind.
        var settled = true
    }

    /// What `initialize` learned from the key.
    private struct InitAnswer: Sendable {
        var channel: UInt32
        var protocolVersion: UInt8
        var deviceVersion: Version
        var capabilities: CTAPHIDCapabilities
    }

    /// Opens a connection on `device`: sends CTAPHID_INIT with a fresh nonce on the broadcast channel and
    /// takes the channel the key allocates. The device is not closed when this fails.
    public init(
        device: any HIDReportDevice, name: String, timeout: Double = 30, userPresenceTimeout: Double = 60,
        busyRetryWindow: Double = 2, inline: Bool = false
    ) async throws {
        let queue = DispatchQueue(label: "ykterm.ctaphid.\(name)")
        let limits = Limits(
            timeout: min(timeout, CTAPHIDConnection.initTimeout),
            userPresenceTimeout: 0, busyRetryWindow: busyRetryWindow)
        let answer: InitAnswer
        if inline {
            answer = try CTAPHIDConnection.initialize(device: device, limits: limits)
        } else {
            answer = try await withCheckedThrowingContinuation { cont in
                queue.async {
                    cont.resume(with: Result { try CTAPHIDConnection.initialize(device: device, limits: limits) })
                }
            }
        }
        self.inline = inline
        self.name = name
        self.device = device
        self.queue = queue
        self.channel = answer.channel
        self.protocolVersion = answer.protocolVersion
        self.deviceVersion = answer.deviceVersion
        self.capabilities = answer.capabilities
        self.timeout = timeout
        self.userPresenceTimeout = userPresenceTimeout
        self.busyRetryWindow = busyRetryWindow
    }

    // MARK: Commands

    public func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        try await WireTrace.ctaphid(connection: name, command: CTAPHID.Command.cbor, request: request) {
            try await call(CTAPHID.Command.cbor, request, progress: progress)
        }
    }

    public func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] {
        try await WireTrace.ctaphid(connection: name, command: CTAPHID.Command.msg, request: apdu) {
            try await call(CTAPHID.Command.msg, apdu, progress: nil)
        }
    }

    /// CTAPHID_PING: the key echoes `data` (up to 7609 bytes).
    public func ping(_ data: [UInt8]) async throws -> [UInt8] {
        try await call(CTAPHID.Command.ping, data, progress: nil)
    }

    /// Any CTAPHID command on this connection's channel (a vendor command, 0x40 to 0x7F, without the
    /// initialisation bit), and its answer's payload. A CTAPHID error answer throws.
    public func call(command: UInt8, payload: [UInt8]) async throws -> [UInt8] {
        try await call(command & 0x7F, payload, progress: nil)
    }

    /// CTAPHID_WINK: the key blinks (when `capabilities` contains `.wink`).
    public func wink() async throws {
        _ = try await call(CTAPHID.Command.wink, [], progress: nil)
    }

    /// Sends CTAPHID_CANCEL for the request in progress, if any; the key then answers that request with
    /// CTAP2_ERR_KEEPALIVE_CANCEL (0x2D), which `sendCBOR` returns as its status byte. Requests that have
    /// not started yet are not affected. Cancelling the task that awaits `sendCBOR` does the same.
    public func cancel() async {
        requestCancel()
    }

    public func requestCancel() {
        state.withLock { $0.current }?.requestCancel()
    }

    public func close() async {
        let wasOpen = state.withLock { s in
            defer { s.isOpen = false }
            return s.isOpen
        }
        guard wasOpen else { return }
        if inline { return device.close() }
        // A throwing continuation that never throws: a `CheckedContinuation<Void, Never>` would be the
        // process's first use of `Never: Error`, a scan of every conformance record in the binary.
        try? await withCheckedThrowingContinuation { (cont: CheckedContinuation<Void, any Error>) in
            queue.async {
                self.device.close()
                cont.resume()
            }
        }
    }

    // MARK: Exchange

    private func call(
        _ command: UInt8, _ payload: [UInt8],
        progress: (@Sendable (FIDOProgress) -> Void)?
    ) async throws -> [UInt8] {
        guard state.withLock({ $0.isOpen }) else { throw FIDOTransportError.closed }
        let packets = try CTAPHID.fragment(cid: channel, command: command, payload: payload)
        let pending = PendingCall()
        let limits = Limits(
            timeout: timeout, userPresenceTimeout: userPresenceTimeout,
            busyRetryWindow: busyRetryWindow)
        if inline {
            return try await withTaskCancellationHandler {
                try self.perform(
                    command: command, packets: packets, pending: pending, limits: limits,
                    progress: progress)
            } onCancel: {
                pending.requestCancel()
            }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { cont in
                queue.async {
                    cont.resume(
                        with: Result {
                            try self.perform(
                                command: command, packets: packets, pending: pending, limits: limits,
                                progress: progress)
                        })
                }
            }
        } onCancel: {
            pending.requestCancel()
        }
    }

    private func perform(
        command: UInt8, packets: [[UInt8]], pending: PendingCall, limits: Limits,
        progress: (@Sendable (FIDOProgress) -> Void)?
    ) throws -> [UInt8] {
        let settled = try state.withLock { s in
            guard s.isOpen else { throw FIDOTransportError.closed }
            s.current = pending
            defer { s.settled = false }
            return s.settled
        }
        defer { state.withLock { $0.current = nil } }
        let answer = try CTAPHIDConnection.exchange(
            device: device, channel: channel, command: command, packets: packets, limits: limits, pending: pending,
            drainFirst: !settled, isOpen: { self.state.withLock { $0.isOpen } }, progress: progress,
            accept: { _ in true })
        state.withLock { $0.settled = true }
        return answer
    }

    private static func initialize(device: any HIDReportDevice, limits: Limits) throws -> InitAnswer {
        // One getrandom for the eight bytes (a generator's next() per byte was eight system calls).
        let nonce = Crypto.random(CTAPHID.nonceSize)
        let packets = try CTAPHID.fragment(
            cid: CTAPHID.broadcastCID, command: CTAPHID.Command.initialize,
            payload: nonce)
        var seenOther = false
        let expected = nonce
        let payload: [UInt8]
        do {
            payload = try exchange(
                device: device, channel: CTAPHID.broadcastCID, command: CTAPHID.Command.initialize,
                packets: packets, limits: limits, pending: PendingCall(), drainFirst: true, isOpen: { true },
                progress: nil,
                accept: { answer in
                    // Other programs' INIT answers share the broadcast channel; only ours carries our nonce.
                    if answer.count >= CTAPHID.nonceSize, Array(answer.prefix(CTAPHID.nonceSize)) == expected {
                        return true
                    }
                    seenOther = true
                    return false
                })
        } catch FIDOTransportError.timeout where seenOther {
            throw FIDOTransportError.malformed(Malformation(.initNonce, .mismatch))
        }
        guard payload.count >= CTAPHID.initResponseSize else {
            throw FIDOTransportError.malformed(
                Malformation(.initAnswer, .tooShort(payload.count, minimum: CTAPHID.initResponseSize)))
        }
        let cid = CTAPHID.channel(of: Array(payload[8..<12])) ?? 0
        guard cid != CTAPHID.broadcastCID, cid != CTAPHID.reservedCID else {
            throw FIDOTransportError.malformed(Malformation(.channel, .value(String(cid, radix: 16, uppercase: true))))
        }
        return InitAnswer(
            channel: cid, protocolVersion: payload[12],
            deviceVersion: Version(Int(payload[13]), Int(payload[14]), Int(payload[15])),
            capabilities: CTAPHIDCapabilities(rawValue: payload[16]))
    }

    struct Limits: Sendable {
        var timeout: Double
        var userPresenceTimeout: Double
        var busyRetryWindow: Double
    }

    /// Sends `packets` and waits for the answer with the same command; blocks. Retries on
    /// ERR_CHANNEL_BUSY within the busy window. `accept` may turn down an answer (then the wait goes on).
    ///
    /// With `drainFirst`, reports already waiting are read away before the request goes out: what is left
    /// of an earlier exchange that failed (a late answer after a timeout or cancel, the rest of a message
    /// that broke off). After an exchange that read its whole answer nothing of ours can be waiting (other
    /// programs' channels are ignored as they come), and the drain is left out: on a FUSE-served node
    /// each empty read is a round trip to the server.
    private static func exchange(
        device: any HIDReportDevice, channel: UInt32, command: UInt8, packets: [[UInt8]],
        limits: Limits, pending: PendingCall, drainFirst: Bool, isOpen: () -> Bool,
        progress: (@Sendable (FIDOProgress) -> Void)?,
        accept: ([UInt8]) -> Bool
    ) throws -> [UInt8] {
        let start = monotonicSeconds()
        let busyDeadline = start + limits.busyRetryWindow
        var busyAnswers = 0
        while true {
            guard isOpen() else { throw FIDOTransportError.closed }
            // Nothing has reached the key yet, so there is nothing to cancel there.
            if pending.isCancelRequested { throw CancellationError() }
            if drainFirst { drainStaleReports(device) }
            for packet in packets { try device.write(packet) }
            do {
                return try receive(
                    device: device, channel: channel, command: command, start: start, limits: limits,
                    pending: pending, isOpen: isOpen, progress: progress, accept: accept)
            } catch FIDOTransportError.ctaphidError(CTAPHID.ErrorCode.channelBusy) {
                let delay = busyRetryDelay(attempt: busyAnswers)
                busyAnswers += 1
                guard monotonicSeconds() + delay <= busyDeadline else {
                    throw FIDOTransportError.channelBusy
                }
                usleep(UInt32(delay * 1_000_000))
            }
        }
    }

    private static func receive(
        device: any HIDReportDevice, channel: UInt32, command: UInt8, start: Double,
        limits: Limits, pending: PendingCall, isOpen: () -> Bool,
        progress: (@Sendable (FIDOProgress) -> Void)?,
        accept: ([UInt8]) -> Bool
    ) throws -> [UInt8] {
        var reassembler = CTAPHID.Reassembler(channel: channel)
        var deadline = start + limits.timeout
        var cancelSent = false
        var lastStatus: UInt8?
        func sendCancel() throws {
            guard !cancelSent else { return }
            cancelSent = true
            try device.write(try CTAPHID.fragment(cid: channel, command: CTAPHID.Command.cancel, payload: [])[0])
        }
        while true {
            guard isOpen() else {
                try? sendCancel()
                throw FIDOTransportError.closed
            }
            if pending.isCancelRequested { try sendCancel() }
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else {
                // Tell the key to stop waiting for a touch nobody will give. It then answers the request
                // with CTAP2_ERR_KEEPALIVE_CANCEL: take that answer away now, so it is not mistaken for
                // the answer to the next request.
                if command == CTAPHID.Command.cbor, (try? sendCancel()) != nil {
                    discardAnswer(device: device, channel: channel, command: command, within: cancelGrace)
                }
                throw FIDOTransportError.timeout
            }
            let wait = Int((min(remaining, pollInterval) * 1000).rounded(.up))
            guard let packet = try device.read(timeoutMilliseconds: max(1, wait)) else { continue }
            guard let message = try reassembler.add(packet) else { continue }
            switch message.command {
            case command:
                if accept(message.payload) { return message.payload }
            case CTAPHID.Command.keepalive:
                guard let status = message.payload.first else { continue }
                if status == CTAPHID.KeepaliveStatus.userPresenceNeeded {
                    deadline = max(deadline, start + limits.userPresenceTimeout)
                }
                guard status != lastStatus else { continue }
                lastStatus = status
                switch status {
                case CTAPHID.KeepaliveStatus.processing: progress?(.processing)
                case CTAPHID.KeepaliveStatus.userPresenceNeeded: progress?(.waitingForUserPresence)
                default: break  // a status from a later specification: keep waiting
                }
            case CTAPHID.Command.error:
                throw FIDOTransportError.ctaphidError(message.payload.first ?? CTAPHID.ErrorCode.other)
            default:
                throw FIDOTransportError.unexpectedCommand
            }
        }
    }

    /// Reads until the answer (or an error) to `command` on `channel` arrives, at most `seconds`.
    private static func discardAnswer(
        device: any HIDReportDevice, channel: UInt32, command: UInt8,
        within seconds: Double
    ) {
        var reassembler = CTAPHID.Reassembler(channel: channel)
        let end = monotonicSeconds() + seconds
        while monotonicSeconds() < end {
            guard let packet = try? device.read(timeoutMilliseconds: 20) else { continue }
            guard let message = try? reassembler.add(packet) else { continue }
            if message.command == command || message.command == CTAPHID.Command.error { return }
        }
    }

    /// Reads away reports left over from an earlier request that timed out or was cancelled, so they
    /// are not taken for the next answer.
    private static func drainStaleReports(_ device: any HIDReportDevice) {
        for _ in 0..<256 {
            guard (try? device.read(timeoutMilliseconds: 0)) != nil else { return }
        }
    }
}

/// One request's cancel flag, shared by `cancel()`, the task's cancellation handler and the queue.
private final class PendingCall: Sendable {
    private let cancelled = Atomic<Bool>(false)

    func requestCancel() { cancelled.store(true, ordering: .relaxed) }
    var isCancelRequested: Bool { cancelled.load(ordering: .relaxed) }
}
