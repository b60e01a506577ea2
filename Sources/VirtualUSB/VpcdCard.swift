import Glibc
import KeyKit
import Synchronization
import VirtualKey

/// The key's CCID interface as a card in a vpcd reader that can be inserted and pulled out: inserted,
/// it connects to the vpcd driver's port and answers with the USB ATR; pulled out, the connection closes
/// (pcscd sees the card leave) and the key power-cycles.
public final class VpcdCard: Sendable {
    public let key: VirtualKey
    public let port: UInt16
    private let log: @Sendable (String) -> Void
    private struct State: Sendable {
        var inserted = false
        var fd: Int32 = -1
        var generation = 0
        var running = false
    }
    private let state = Mutex(State())

    public init(key: VirtualKey, port: UInt16, log: @escaping @Sendable (String) -> Void) {
        self.key = key
        self.port = port
        self.log = log
    }

    /// Starts connecting (again and again until removed: pcscd may not listen yet).
    public func insert() {
        let generation = state.withLock { s -> Int in
            s.inserted = true
            s.generation += 1
            s.running = true
            return s.generation
        }
        SystemThread.start(name: "vpcd-card") { [self] in self.run(generation) }
    }

    /// Pulls the card out and waits until its connection is closed.
    public func remove() {
        state.withLock { s in
            s.inserted = false
            s.generation += 1
            if s.fd >= 0 { shutdown(s.fd, Int32(SHUT_RDWR)) }
        }
        var waited = 0
        while state.withLock({ $0.running }) && waited < 300 {
            SystemThread.sleep(0.01)
            waited += 1
        }
        key.powerCycle()
    }

    private func current(_ generation: Int) -> Bool {
        state.withLock { $0.inserted && $0.generation == generation }
    }

    private func run(_ generation: Int) {
        defer { state.withLock { if $0.generation == generation || !$0.inserted { $0.running = false } } }
        while current(generation) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let ok = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard ok else {
                close(fd)
                SystemThread.sleep(0.1)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let still = state.withLock { s -> Bool in
                guard s.inserted && s.generation == generation else { return false }
                s.fd = fd
                return true
            }
            guard still else {
                close(fd)
                return
            }
            // pcscd (re)connecting powers the CCID interface: the smart-card side alone, as on a USB key.
            key.resetSmartCard()
            serve(fd)
            state.withLock { s in if s.fd == fd { s.fd = -1 } }
            close(fd)
            if current(generation) { log("vpcd connection closed; reconnecting") }
        }
    }

    private func serve(_ fd: Int32) {
        VpcdProtocol.serve(fd) { payload in
            switch try? VpcdProtocol.message(payload) {
            case .control(.getATR)?: return .reply(VirtualKey.atr(.usb))
            case .control?: key.resetSmartCard(); return .none
            case .apdu(let command)?: return .reply(key.process(command))
            case nil: return .none
            }
        }
    }
}
