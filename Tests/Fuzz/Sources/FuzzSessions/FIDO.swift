import KeyKit
import Synchronization
import VirtualKey

/// The input of the FIDO session targets: the first byte holds the transport in its low two bits and the
/// target's variant above them (an index into the target's own list, modulo its length); the device's answers
/// follow.
public struct FIDOFuzzInput: Sendable {
    public let transport: FIDOTransport
    public let answers: FuzzAnswers
    private let variant: Int

    public init(_ input: [UInt8]) {
        let options = input.first ?? 0
        transport = FIDOTransport(options: options)
        variant = Int(options >> 2)
        answers = FuzzAnswers(input.dropFirst())
    }

    /// What the first byte chooses from `choices`.
    public func variant<T>(of choices: [T]) -> T { choices[variant % choices.count] }
}

/// How a fuzzed CTAP2 session reaches its key: whole CTAP messages, CTAPHID packets (the USB HID transport,
/// `CTAPHIDConnection`), or ISO 7816 APDUs (NFCCTAP, `PCSCFIDOConnection`). The low two bits of the input's
/// first byte choose.
public enum FIDOTransport: Int, CaseIterable, Sendable, CustomStringConvertible {
    case message, ctaphid, nfc

    /// The transport an options byte names (its low two bits, modulo 3).
    public init(options: UInt8) {
        self = FIDOTransport.allCases[Int(options & 0x03) % FIDOTransport.allCases.count]
    }

    public var description: String {
        switch self {
        case .message: return "message"
        case .ctaphid: return "ctaphid"
        case .nfc: return "nfc"
        }
    }

    /// Opens a connection of this transport on a device answering from `answers`, runs `body` on it and
    /// closes it. The time limits are short: the device answers at once or never, and a keep-alive or busy
    /// answer must not make one input take seconds.
    public func withFuzzedConnection<T: Sendable>(
        _ answers: FuzzAnswers,
        _ body: @Sendable (any FIDOConnection) async throws -> T
    )
        async throws -> T
    {
        let connection: any FIDOConnection
        switch self {
        case .message:
            connection = FuzzFIDOConnection(answers: answers)
        case .ctaphid:
            connection = try await CTAPHIDConnection(
                device: FuzzHIDDevice(answers: answers), name: "fuzz",
                timeout: 1, userPresenceTimeout: 1, busyRetryWindow: 0.05)
        case .nfc:
            connection = try await PCSCFIDOConnection.open(card: FuzzSmartCard(answers: answers), timeout: 0.3)
        }
        return try await closing(connection, body)
    }

    /// Runs `body` on a connection of this transport to `key`, and logs the key's answers as a seed's.
    public func recording<T: Sendable>(
        _ key: VirtualKey,
        _ body: @Sendable (any FIDOConnection) async throws -> T
    )
        async -> (Result<T, any Error>, [FuzzAnswer])
    {
        let log: AnswerLog
        let result: Result<T, any Error>
        do {
            let connection: any FIDOConnection
            switch self {
            case .message:
                let recorder = RecordingFIDOConnection(
                    connection: try await CTAPHIDConnection(device: plainHIDDevice(key), name: "virtual"))
                log = recorder.log
                connection = recorder
            case .ctaphid:
                let device = RecordingHIDDevice(device: plainHIDDevice(key))
                log = device.log
                connection = try await CTAPHIDConnection(device: device, name: "virtual")
            case .nfc:
                let card = RecordingSmartCard(card: VirtualKeyConnection(key: key))
                log = card.log
                connection = try await PCSCFIDOConnection.open(card: card)
            }
            result = await capturing { try await closing(connection, body) }
        } catch {
            return (.failure(error), [])
        }
        return (result, log.answers)
    }

    /// The key's FIDO HID interface without periodic keep-alives, so that a recording does not depend on timing.
    private func plainHIDDevice(_ key: VirtualKey) -> VirtualHIDDevice {
        var options = key.fidoHIDOptionsWithReadConfig
        options.keepAliveInterval = nil
        return key.makeFIDOHIDDevice(options: options)
    }
}

private func closing<T: Sendable>(
    _ connection: any FIDOConnection,
    _ body: @Sendable (any FIDOConnection) async throws -> T
) async throws -> T {
    do {
        let value = try await body(connection)
        await connection.close()
        return value
    } catch {
        await connection.close()
        throw error
    }
}

/// The outcome of `body`, its error included.
public func capturing<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}

/// Whole CTAP messages: each request (CTAP2 or U2F) is answered with the next answer's bytes as they are (for
/// CTAP2 a status byte and CBOR). Kind bit 0 tells the caller first that the key waits for a touch. When the
/// answers are used up the key is gone (`FIDOTransportError.deviceGone`).
public final class FuzzFIDOConnection: FIDOConnection {
    public let answers: FuzzAnswers
    public let name = "fuzz"

    public init(answers: FuzzAnswers) {
        self.answers = answers
    }

    public func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        guard let answer = answers.next() else { throw FIDOTransportError.deviceGone }
        if answer.kind & 1 != 0 { progress?(.waitingForUserPresence) }
        return answer.bytes
    }

    public func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] {
        guard let answer = answers.next() else { throw FIDOTransportError.deviceGone }
        return answer.bytes
    }

    public func cancel() async {}
    public func close() async {}
}

/// Logs the answers of another FIDO connection in the layout `FuzzFIDOConnection` reads.
public final class RecordingFIDOConnection: FIDOConnection {
    public let connection: any FIDOConnection
    public let log = AnswerLog()
    public var name: String { connection.name }

    public init(connection: any FIDOConnection) {
        self.connection = connection
    }

    public func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        let answer = try await connection.sendCBOR(request, progress: progress)
        log.append(FuzzAnswer(answer))
        return answer
    }

    public func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] {
        let answer = try await connection.sendU2F(apdu)
        log.append(FuzzAnswer(answer))
        return answer
    }

    public func cancel() async { await connection.cancel() }
    public func close() async { await connection.close() }
}

/// A FIDO HID device whose input reports come from the fuzzer's answers.
///
/// Reports are given on demand: a read that finds none waiting takes the next answer and queues its packets
/// (a read that may not wait, as `CTAPHIDConnection` makes to drop stale reports, finds nothing instead). An
/// answer of even kind is a message, its first byte the command and the rest the payload, cut into packets on
/// the channel of the last request; the answer to CTAPHID_INIT starts with the request's nonce, as a key echoes
/// it (the answer holds what follows the nonce). An answer of odd kind is raw packets of up to 64 bytes, as
/// they are. When the answers are used up the device is gone (`FIDOTransportError.deviceGone`).
public final class FuzzHIDDevice: HIDReportDevice {
    private struct State {
        var isOpen = true
        var queue: [[UInt8]] = []
        /// The channel, command and (for INIT) nonce of the last request written.
        var channel = CTAPHID.broadcastCID
        var command: UInt8 = 0
        var nonce: [UInt8] = []
    }

    public let answers: FuzzAnswers
    private let state = Mutex(State())

    public init(answers: FuzzAnswers) {
        self.answers = answers
    }

    public func write(_ report: [UInt8]) throws {
        try state.withLock { s in
            guard s.isOpen else { throw FIDOTransportError.closed }
            guard let channel = CTAPHID.channel(of: report), let command = CTAPHID.command(of: report) else { return }
            s.channel = channel
            s.command = command
            if command == CTAPHID.Command.initialize {
                s.nonce = Array(report.dropFirst(CTAPHID.initHeaderSize).prefix(CTAPHID.nonceSize))
            }
        }
    }

    public func read(timeoutMilliseconds: Int) throws -> [UInt8]? {
        try state.withLock { s in
            guard s.isOpen else { throw FIDOTransportError.closed }
            if s.queue.isEmpty {
                guard timeoutMilliseconds > 0 else { return nil }
                guard let answer = answers.next() else { throw FIDOTransportError.deviceGone }
                s.queue = FuzzHIDDevice.packets(answer, channel: s.channel, request: s.command, nonce: s.nonce)
            }
            return s.queue.isEmpty ? nil : s.queue.removeFirst()
        }
    }

    public func close() {
        state.withLock { $0.isOpen = false }
    }

    static func packets(_ answer: FuzzAnswer, channel: UInt32, request: UInt8, nonce: [UInt8]) -> [[UInt8]] {
        if answer.kind & 1 == 0, let first = answer.bytes.first {
            let command = first & 0x7F
            var payload = Array(answer.bytes.dropFirst())
            if command == CTAPHID.Command.initialize && request == CTAPHID.Command.initialize {
                payload = nonce + payload
            }
            if let packets = try? CTAPHID.fragment(cid: channel, command: command, payload: payload) {
                return packets
            }
        }
        return stride(from: 0, to: answer.bytes.count, by: CTAPHID.packetSize).map {
            Array(answer.bytes[$0..<min($0 + CTAPHID.packetSize, answer.bytes.count)])
        }
    }
}

/// Passes reports to a real HID device (the virtual key's) and logs the messages it answers, in the layout
/// `FuzzHIDDevice` reads: each as a message answer, an INIT answer without the nonce.
public final class RecordingHIDDevice: HIDReportDevice {
    private struct State {
        var reassembler: CTAPHID.Reassembler?
    }

    public let device: any HIDReportDevice
    public let log = AnswerLog()
    private let state = Mutex(State())

    public init(device: any HIDReportDevice) {
        self.device = device
    }

    public func write(_ report: [UInt8]) throws {
        try device.write(report)
        guard let channel = CTAPHID.channel(of: report), CTAPHID.command(of: report) != nil else { return }
        state.withLock { $0.reassembler = CTAPHID.Reassembler(channel: channel) }
    }

    public func read(timeoutMilliseconds: Int) throws -> [UInt8]? {
        guard let packet = try device.read(timeoutMilliseconds: timeoutMilliseconds) else { return nil }
        let message: CTAPHID.Message? = state.withLock { s in
            guard var r = s.reassembler else { return nil }
            defer { s.reassembler = r }
            return try? r.add(packet)
        }
        if let message {
            let payload =
                message.command == CTAPHID.Command.initialize
                ? Array(message.payload.dropFirst(CTAPHID.nonceSize)) : message.payload
            log.append(FuzzAnswer(kind: 0, [message.command] + payload))
        }
        return packet
    }

    public func close() {
        device.close()
    }
}

extension FIDOTransport {
    /// A seed named `name` and this transport: `body` against `key` over this transport with its answers
    /// recorded, laid out as FIDOFuzzInput reads it with `variant` in the first byte.
    public func seed(
        _ name: String, variant: UInt8 = 0, key: VirtualKey,
        _ body: @Sendable (any FIDOConnection) async throws -> String
    ) async -> Seed {
        let (result, answers) = await recording(key, body)
        return Seed(
            name: "\(name)-\(self)", input: [UInt8(rawValue) | variant << 2] + FuzzAnswers.encode(answers),
            outcome: describeOutcome(result))
    }
}
