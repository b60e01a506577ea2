import FoundationEssentials
import Glibc
import KeyKit
import Synchronization

/// The vsmartcard vpcd protocol, as the virtual card speaks it to pcscd's vpcd driver: the driver listens
/// on a TCP port (35963 for the first reader), the card connects, and every message in either direction is
/// a 2-byte big-endian length followed by that many bytes. A one-byte message from the driver is a control
/// code; anything longer is a command APDU, answered with the response APDU.
public enum VpcdProtocol {
    public enum Control: UInt8, Sendable {
        case powerOff = 0
        case powerOn = 1
        case reset = 2
        case getATR = 4
    }

    public enum Message: Equatable, Sendable {
        case control(Control)
        case apdu([UInt8])
    }

    public enum FramingError: Error, Equatable, CustomStringConvertible {
        case tooLong(Int)
        case unknownControl(UInt8)
        case empty

        public var description: String {
            switch self {
            case .tooLong(let n): return "vpcd: message of \(n) bytes exceeds 65535"
            case .unknownControl(let c): return "vpcd: unknown control code \(c)"
            case .empty: return "vpcd: empty message"
            }
        }
    }

    /// Frames a payload.
    public static func frame(_ payload: [UInt8]) throws(FramingError) -> [UInt8] {
        guard payload.count <= 0xFFFF else { throw .tooLong(payload.count) }
        return [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    }

    /// Interprets one received payload.
    public static func message(_ payload: [UInt8]) throws(FramingError) -> Message {
        switch payload.count {
        case 0: throw .empty
        case 1:
            guard let c = Control(rawValue: payload[0]) else { throw .unknownControl(payload[0]) }
            return .control(c)
        default: return .apdu(payload)
        }
    }

    /// Splits a byte stream into complete payloads; returns them and how many bytes were consumed.
    public static func deframe(_ buffer: [UInt8]) -> (payloads: [[UInt8]], consumed: Int) {
        var out = [[UInt8]]()
        var i = 0
        while buffer.count - i >= 2 {
            let n = Int(buffer[i]) << 8 | Int(buffer[i + 1])
            guard buffer.count - i - 2 >= n else { break }
            out.append(Array(buffer[(i + 2)..<(i + 2 + n)]))
            i += 2 + n
        }
        return (out, i)
    }

    /// What a card does with one message from vpcd.
    public enum Answer: Sendable {
        /// Send these bytes back.
        case reply([UInt8])
        /// Nothing to send (a control message that wants no answer).
        case none
        /// End the connection (a fault that "removes" the key or never answers).
        case close
    }

    /// The card side of one vpcd connection: reads framed messages from `fd` until vpcd closes it (or
    /// `keepGoing` says stop, checked after each read), hands each message's payload to `answer`, and sends
    /// back what it gives.
    public static func serve(_ fd: Int32, keepGoing: () -> Bool = { true }, answer: ([UInt8]) -> Answer) {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while keepGoing() {
            let n = recv(fd, &chunk, chunk.count, 0)
            // vpcd writes a message's length and its bytes separately; with Nagle on its side, the second
            // write waits for our ACK, which Linux delays by up to 40 ms. Acknowledge at once instead (the
            // option resets itself, so set it after every read).
            var quick: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_QUICKACK, &quick, socklen_t(MemoryLayout<Int32>.size))
            if n <= 0 {
                if n < 0 && errno == EINTR { continue }
                return
            }
            buffer += chunk[..<n]
            let (payloads, consumed) = deframe(buffer)
            buffer.removeFirst(consumed)
            for payload in payloads {
                switch answer(payload) {
                case .none: continue
                case .close: return
                case .reply(let reply):
                    guard let framed = try? frame(reply), sendAll(fd, framed) else { return }
                }
            }
        }
    }

    /// Writes all of `bytes` to the socket; false when the connection failed.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            off += n
        }
        return true
    }
}

/// Connects a `VirtualKey` to pcscd's vpcd driver and serves it until stopped, reconnecting whenever the
/// driver goes away (pcscd restarted) and comes back.
public final class VpcdBridge: Sendable {
    public let key: VirtualKey
    public let host: String
    public let port: UInt16
    public let retryInterval: Double
    private let log: @Sendable (String) -> Void
    private let stopped = Atomic<Bool>(false)
    private let socketFD = Mutex<Int32>(-1)

    /// Faults to inject (tests only); nil for a well-behaved key.
    public let faults: FaultInjector?
    /// How long a "removed" key stays away before it is back in the reader.
    public let removedFor: Double

    /// Log the header of every command APDU (`apdu CLA INS P1 P2 +LEN`), for counting exchanges.
    public let logAPDUs: Bool

    public init(
        key: VirtualKey, host: String, port: UInt16, retryInterval: Double = 0.5,
        faults: FaultInjector? = nil, removedFor: Double = 2.0, logAPDUs: Bool = false,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.key = key
        self.logAPDUs = logAPDUs
        self.faults = faults
        self.removedFor = removedFor
        self.host = host
        self.port = port
        self.retryInterval = retryInterval
        self.log = log
    }

    /// Parses `HOST:PORT`.
    public static func parseEndpoint(_ text: String) -> (String, UInt16)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let host = String(text[..<colon])
        guard !host.isEmpty, let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        return (host, port)
    }

    /// Makes `run` return (from any thread or a signal-handling task).
    public func stop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        socketFD.withLock { fd in
            if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Serves until `stop()`. Blocks the calling thread.
    public func run() {
        var announcedWaiting = false
        while !stopped.load(ordering: .sequentiallyConsistent) {
            guard let fd = connectSocket() else {
                if !announcedWaiting {
                    log("waiting for pcscd's vpcd driver on \(host):\(port)")
                    announcedWaiting = true
                }
                SystemThread.sleep(retryInterval)
                continue
            }
            announcedWaiting = false
            socketFD.withLock { $0 = fd }
            log("connected to vpcd at \(host):\(port)")
            key.powerCycle()
            serve(fd)
            socketFD.withLock {
                $0 = -1
                close(fd)
            }
            key.powerCycle()
            if !stopped.load(ordering: .sequentiallyConsistent) {
                log("vpcd connection closed; reconnecting")
            }
        }
    }

    private func connectSocket() -> Int32? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(result) }
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            if fd >= 0 {
                if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return fd
                }
                close(fd)
            }
            ai = a.pointee.ai_next
        }
        return nil
    }

    private func serve(_ fd: Int32) {
        VpcdProtocol.serve(fd, keepGoing: { !stopped.load(ordering: .sequentiallyConsistent) }) { payload in
            if let faults, case .apdu(let command)? = try? VpcdProtocol.message(payload),
                let (action, rule) = faults.action(for: command)
            {
                log("fault: \(rule)")
                return faulty(action, command, fd).map(VpcdProtocol.Answer.reply) ?? .close
            }
            return handle(payload).map(VpcdProtocol.Answer.reply) ?? .none
        }
    }

    /// The answer a fault gives to `command`, or nil when the connection ends (the key is "removed", or
    /// never answers); a removed key stays away for `removedFor` seconds.
    private func faulty(_ action: FaultRule.Action, _ command: [UInt8], _ fd: Int32) -> [UInt8]? {
        switch action {
        case .removeBefore, .removeAfter:
            if action == .removeAfter { _ = key.process(command) }
            shutdown(fd, Int32(SHUT_RDWR))
            SystemThread.sleep(removedFor)
            return nil
        case .truncate:
            let answer = key.process(command)
            let data = answer.dropLast(2)
            return Array(data.prefix(data.count / 2)) + answer.suffix(2)
        case .garbage:
            let answer = key.process(command)
            return (0..<max(0, answer.count - 2)).map { _ in UInt8.random(in: 0...255) } + [0x90, 0x00]
        case .status(let sw):
            return [UInt8(sw >> 8), UInt8(sw & 0xFF)]
        case .hang:
            // Silence until the client side gives up and closes, or the key is stopped (at most a minute).
            let deadline = Date().addingTimeInterval(60)
            var probe = [UInt8](repeating: 0, count: 1)
            while !stopped.load(ordering: .sequentiallyConsistent) && Date() < deadline {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&p, 1, 200) > 0 {
                    if recv(fd, &probe, 1, Int32(MSG_PEEK)) <= 0 { break }
                    SystemThread.sleep(0.2)
                }
            }
            return nil
        case .keepalive:
            // Processing (not waiting for a touch).
            return Response(data: [CTAPHID.KeepaliveStatus.processing], status: NFCCTAP.statusUpdate).bytes
        case .keepaliveCancelled:
            return Response(data: [CTAPError.keepaliveCancel], status: .ok).bytes
        }
    }

    private func handle(_ payload: [UInt8]) -> [UInt8]? {
        let message: VpcdProtocol.Message
        do {
            message = try VpcdProtocol.message(payload)
        } catch {
            log("\(error)")
            return nil
        }
        switch message {
        case .control(.powerOff), .control(.powerOn), .control(.reset):
            key.powerCycle()
            return nil
        case .control(.getATR):
            return VirtualKey.atr
        case .apdu(let command):
            if logAPDUs {
                // The header only: the data may hold secrets.
                log(
                    "apdu " + command.prefix(4).map { Hex.encode([$0], uppercase: true) }.joined(separator: " ")
                        + " +\(max(0, command.count - 4))")
            }
            return key.process(command)
        }
    }

}
