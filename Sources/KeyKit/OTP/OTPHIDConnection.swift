import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a command over the OTP HID interface returned.
public enum OTPHIDAnswer: Sendable, Equatable {
    /// Response data (with the key's CRC at the place the command defines).
    case data([UInt8])
    /// The status after a configuration write that the key took (the programming sequence moved on).
    case status(OTPSession.Status)
}

/// The OTP HID protocol over any `HIDFeatureReportDevice`.
///
/// Every device call runs on the connection's own serial dispatch queue, never on the Swift cooperative
/// pool. A command may take `timeout` seconds while the key works, `touchTimeout` seconds once it says it
/// waits for a touch (a YubiKey gives up after about 15 s). `cancel()` or cancelling the awaiting task
/// stops the wait and tells the key to drop the command.
public final class OTPHIDConnection: Sendable {
    public let name: String
    public let timeout: Double
    public let touchTimeout: Double
    /// Seconds to wait for the key to take a written part.
    static let writeReadyTimeout = 1.0

    private let device: any HIDFeatureReportDevice
    private let queue: DispatchQueue
    private let isOpen = Atomic<Bool>(true)
    private let cancelRequested = Atomic<Bool>(false)

    public init(
        device: any HIDFeatureReportDevice, name: String = "OTP HID", timeout: Double = 1,
        touchTimeout: Double = 15
    ) {
        self.device = device
        self.name = name
        self.timeout = timeout
        self.touchTimeout = touchTimeout
        self.queue = DispatchQueue(label: "ykterm.otphid.\(name)")
    }

    /// Opens the hidraw node at `path`.
    public static func open(path: String, name: String? = nil) async throws -> OTPHIDConnection {
        let device = try await Blocking.value(label: "ykterm.hid.open") { try HIDRawFeatureDevice(path: path) }
        return OTPHIDConnection(device: device, name: name ?? path)
    }

    /// Reads the status report: firmware version, programming sequence, touch level.
    public func readStatus() async throws -> OTPSession.Status {
        try await onQueue { device in try OTPHID.status(report: try device.getFeature()) }
    }

    /// Sends `data` (at most 64 bytes) to `slot` and waits for the answer. `progress` hears `.processing`
    /// and `.waitingForUserPresence` (once each, on the connection's queue).
    public func send(
        slot: UInt8, data: [UInt8] = [],
        progress: (@Sendable (FIDOProgress) -> Void)? = nil
    ) async throws -> OTPHIDAnswer {
        let frame = try OTPHID.frame(slot: slot, data: data)
        cancelRequested.store(false, ordering: .sequentiallyConsistent)
        let limits = (timeout, touchTimeout)
        return try await withTaskCancellationHandler {
            try await onQueue { device in
                try OTPHIDConnection.transceive(
                    device: device, frame: frame, timeout: limits.0,
                    touchTimeout: limits.1, progress: progress,
                    stop: { [self] in
                        cancelRequested.load(ordering: .sequentiallyConsistent)
                            || !isOpen.load(ordering: .sequentiallyConsistent)
                    })
            }
        } onCancel: {
            self.cancelRequested.store(true, ordering: .sequentiallyConsistent)
        }
    }

    /// Stops the command in progress (it throws `CancellationError`).
    public func cancel() {
        cancelRequested.store(true, ordering: .sequentiallyConsistent)
    }

    public func close() async {
        guard isOpen.exchange(false, ordering: .sequentiallyConsistent) else { return }
        await withCheckedContinuation { (cont: CheckedContinuation<Void, Never>) in
            queue.async {
                self.device.close()
                cont.resume()
            }
        }
    }

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable (any HIDFeatureReportDevice) throws -> T)
        async throws -> T
    {
        guard isOpen.load(ordering: .sequentiallyConsistent) else { throw OTPHIDError.closed }
        let device = self.device
        return try await withCheckedThrowingContinuation { cont in
            queue.async {
                guard self.isOpen.load(ordering: .sequentiallyConsistent) else {
                    return cont.resume(throwing: OTPHIDError.closed)
                }
                cont.resume(with: Result { try body(device) })
            }
        }
    }

    // MARK: Blocking protocol (on the queue)

    /// Writes the frame, then reads status or response reports until the answer is complete.
    static func transceive(
        device: any HIDFeatureReportDevice, frame: [UInt8], timeout: Double,
        touchTimeout: Double, progress: (@Sendable (FIDOProgress) -> Void)?,
        stop: () -> Bool
    ) throws -> OTPHIDAnswer {
        let before = try OTPHID.status(report: try device.getFeature())
        for report in OTPHID.reports(frame: frame) {
            try awaitReadyToWrite(device, stop: stop)
            try device.setFeature(report)
        }
        let start = monotonicSeconds()
        var deadline = start + timeout
        var reader = OTPHID.ResponseReader()
        var waitedForTouch = false
        var reportedProcessing = false
        while true {
            if stop() {
                try? resetState(device)
                throw CancellationError()
            }
            guard monotonicSeconds() < deadline else {
                try? resetState(device)
                throw waitedForTouch ? OTPHIDError.touchTimeout : OTPHIDError.timeout
            }
            switch try OTPHID.classify(report: try device.getFeature()) {
            case .response(let sequence, let part):
                if let whole = try reader.add(sequence: sequence, part: part) {
                    try resetState(device)
                    return .data(whole)
                }
            case .status(let after):
                guard reader.isEmpty else { throw OTPHIDError.malformedReport(Malformation(.otpAnswer, .incomplete)) }
                if after.programSequence == before.programSequence &+ 1
                    || (after.programSequence == 0 && after.touchLevel & 0x1F == 0)
                {
                    return .status(after)
                }
                throw waitedForTouch ? OTPHIDError.touchTimeout : OTPHIDError.commandRejected
            case .busy(let touch):
                if touch {
                    if !waitedForTouch { progress?(.waitingForUserPresence) }
                    waitedForTouch = true
                    deadline = max(deadline, start + touchTimeout)
                    usleep(100_000)
                } else {
                    if !reportedProcessing { progress?(.processing) }
                    reportedProcessing = true
                    usleep(20_000)
                }
            }
        }
    }

    /// Waits until the key cleared the write flag of the last part (about a second at most).
    static func awaitReadyToWrite(_ device: any HIDFeatureReportDevice, stop: () -> Bool) throws {
        let end = monotonicSeconds() + writeReadyTimeout
        while true {
            let report = try device.getFeature()
            guard report.count == OTPHID.reportSize else {
                throw OTPHIDError.malformedReport(
                    Malformation(.featureReport, .lengthExpected(report.count, expected: OTPHID.reportSize)))
            }
            if report[7] & OTPHID.writeFlag == 0 { return }
            if stop() { throw CancellationError() }
            guard monotonicSeconds() < end else { throw OTPHIDError.timeout }
            usleep(10_000)
        }
    }

    /// Tells the key to drop the answer it is sending (or the command it waits on).
    static func resetState(_ device: any HIDFeatureReportDevice) throws {
        try device.setFeature([0, 0, 0, 0, 0, 0, 0, OTPHID.resetMarker])
    }
}
