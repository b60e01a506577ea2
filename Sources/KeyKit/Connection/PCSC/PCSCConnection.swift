import CPCSCLite
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
import Synchronization
#endif

/// Where a connection makes its blocking pcsc-lite calls.
public enum PCSCCalls: Sendable {
    /// On the connection's own serial queue, the calling task waiting without holding a thread: a card
    /// that never answers ends the wait with `SmartCardError.timeout`, and the program goes on with
    /// whatever else it does (the TUI, `list` probing several keys at once).
    case queued
    /// On the calling thread. This saves the hand-off to the queue and back on every call, two thread
    /// wake-ups each (0.6 ms of `oath code`'s 4.9 ms). A call that blocks the thread cannot be given up,
    /// so a card that does not answer within `PCSCConnection.transmitTimeout` makes another thread call
    /// `onTimeout` with `SmartCardError.timeout`, and `onTimeout` must end the process. Only for a
    /// one-shot command that uses one connection from one task and has nothing to do after a timeout but
    /// report it.
    case inline(onTimeout: @Sendable (SmartCardError) -> Never)
}

/// A PC/SC connection to the card in one reader.
///
/// `@unchecked Sendable`: the handles are immutable after `connect`, and the mutable fields (`isOpen`,
/// `sendProtocol`, `exchanged`) are read and written only where the pcsc-lite calls on the card handle are
/// made: on the serial `queue`, or, with `PCSCCalls.inline`, by the one task that uses the connection.
public final class PCSCConnection: SmartCardConnection, @unchecked Sendable {
    public let name: String
    public let atr: [UInt8]
    public let activeProtocol: DWORD
    /// The context the connection was made on (kept for the next by `ReaderContexts`).
    let context: PCSCContext
    private let card: SCARDHANDLE
    private let queue: DispatchQueue
    private let calls: PCSCCalls
    private var isOpen = true
    /// The protocol exchanges are sent with: `activeProtocol`, or what a reconnect before the first one chose.
    private var sendProtocol: DWORD
    /// Whether an exchange has reached the card (after that, a reset means lost state, not a retry).
    private var exchanged = false
    /// Inline exchanges that have returned; a timeout watch that finds the count unchanged fires.
    private let exchangesDone = AtomicCounter()
    /// Set when an exchange was given up; later commands fail at once.
    private let timedOut = AtomicFlag()
    /// Told, once the connection is closed, that its context is free for another connection (`ReaderContexts`).
    private let contextFreed = Mutex<(@Sendable (PCSCContext) -> Void)?>(nil)
    /// How long one exchange may take before it is given up (`transmitTimeout`, or less for a probe).
    private let exchangeTimeout: Double
    /// The connection holds a PC/SC transaction from connect to close.
    public let holdsTransaction: Bool

    /// How long to keep retrying when another program holds the card exclusively.
    public static let sharingRetryWindow: Double = 2.0

    private init(
        name: String, context: PCSCContext, card: SCARDHANDLE, protocol p: DWORD, atr: [UInt8],
        holdsTransaction: Bool, calls: PCSCCalls, exchangeTimeout: Double
    ) {
        self.holdsTransaction = holdsTransaction
        self.exchangeTimeout = exchangeTimeout
        self.calls = calls
        self.name = name
        self.context = context
        self.card = card
        self.activeProtocol = p
        self.sendProtocol = p
        self.atr = atr
        self.queue = DispatchQueue(label: "ykterm.pcsc.\(name)")
    }

    /// Connects in shared mode. When another program holds the card exclusively (gpg's scdaemon does),
    /// retries for a short while and then explains.
    ///
    /// With `transaction` (the default) the connection is one PC/SC transaction from connect to close, so
    /// another program (ykman, a browser) cannot select another application between this connection's
    /// SELECT and its commands; connections are short-lived, one per operation, so the key is never held
    /// between operations. A connection that outlives an operation (the APDU console's) passes false and
    /// wraps each operation in `withTransaction`.
    ///
    /// `calls` says where this connection's pcsc-lite calls run, the connect itself included.
    ///
    /// A reader whose driver or card is stuck in pcscd never answers a connect (pcscd shows it as holding a
    /// card all the same): after `readerTimeout` the connect is given up with `SmartCardError.readerNotAnswering`,
    /// its blocked call left behind (with `PCSCCalls.inline`, `onTimeout` gets the error). `probe` makes every
    /// exchange of the connection end after `readerTimeout` too, for connections that only read what a key is
    /// and never wait for a touch (discovery, `list`, `doctor`).
    public static func connect(
        reader: String, context: PCSCContext? = nil, transaction: Bool = true,
        calls: PCSCCalls = .queued, probe: Bool = false
    ) async throws -> PCSCConnection {
        // A context a given-up call still holds would make this connect wait behind it.
        let given = context.flatMap { $0.isWedged ? nil : $0 }
        let exchangeTimeout = probe ? min(readerTimeout, transmitTimeout) : transmitTimeout
        if case .inline(let onTimeout) = calls {
            let finished = AtomicFlag()
            Blocking.after(readerTimeout) {
                if !finished.load() { onTimeout(.readerNotAnswering(reader)) }
            }
            defer { finished.store(true) }
            return try connectBlocking(
                reader: reader, context: given ?? PCSCContext(), transaction: transaction,
                calls: calls, exchangeTimeout: exchangeTimeout)
        }
        // A context of its own is made where the connect is made (outside the task pool, see `Blocking`); only
        // a context the caller gave is shared, and marked wedged when the connect is given up.
        let outcome = OneShot<Result<PCSCConnection, any Error>>()
        Blocking.run(label: "ykterm.pcsc.connect") {
            let result = Result {
                try connectBlocking(
                    reader: reader, context: given ?? PCSCContext(), transaction: transaction,
                    calls: calls, exchangeTimeout: exchangeTimeout)
            }
            // Answered after the connect was given up: nobody takes the connection; dropping it disconnects.
            _ = outcome.resolve(result)
        }
        Blocking.after(readerTimeout) {
            if outcome.resolve(.failure(SmartCardError.readerNotAnswering(reader))) { given?.wedged.store(true) }
        }
        return try await outcome.value.get()
    }

    /// How long a reader may take to answer a connect, or a probe's exchange: `YKTERM_READER_TIMEOUT` seconds,
    /// or 3 (a card's power-up takes a fraction of that; a retry while another program holds the card
    /// exclusively, `sharingRetryWindow`, fits within it).
    public static let readerTimeout: Double = {
        if let text = getenv("YKTERM_READER_TIMEOUT").map({ String(cString: $0) }), let seconds = Double(text),
            seconds > 0
        {
            return seconds
        }
        return 3
    }()

    static func connectBlocking(
        reader: String, context ctx: PCSCContext, transaction: Bool,
        calls: PCSCCalls, exchangeTimeout: Double
    ) throws -> PCSCConnection {
        var handle = SCARDHANDLE()
        var proto = DWORD(0)
        let deadline = monotonicSeconds() + sharingRetryWindow
        var delay: UInt32 = 50_000
        while true {
            let rv = SCardConnect(
                ctx.handle, reader, PCSC.shareShared, PCSC.protocolT0 | PCSC.protocolT1,
                &handle, &proto)
            // Another program holds the card exclusively (ykman does while it works), or has just unpowered or
            // reset it on leaving (pcscd powers it up again): both pass, so try again for a moment.
            let transient = [PCSCStatus.sharingViolation, PCSCStatus.unpoweredCard, PCSCStatus.resetCard]
            if transient.contains(PCSCStatus.code(rv)), monotonicSeconds() < deadline {
                usleep(delay)
                delay = min(delay * 2, 400_000)
                continue
            }
            try PCSC.check(rv, "SCardConnect", reader: reader)
            break
        }
        // Another program that disconnects with a reset (ykman does) just after our connect leaves the handle
        // reporting the reset once: nothing of ours was sent yet, so reconnect and go on.
        func afterResets(_ call: () -> LONG) -> LONG {
            retryingAfterResets(
                handle, on: [PCSCStatus.resetCard, PCSCStatus.unpoweredCard],
                reconnected: { proto = $0 }, call)
        }
        var atrBuffer = [UInt8](repeating: 0, count: 36)
        var atrLength = DWORD(atrBuffer.count)
        var state = DWORD(0)
        var p = DWORD(0)
        var nameLength = DWORD(0)
        let rv = afterResets {
            atrLength = DWORD(atrBuffer.count)
            return SCardStatus(handle, nil, &nameLength, &state, &p, &atrBuffer, &atrLength)
        }
        if let e = PCSC.error(rv, "SCardStatus", reader: reader) {
            SCardDisconnect(handle, PCSC.leaveCard)
            throw e
        }
        if transaction,
            let e = PCSC.error(afterResets { SCardBeginTransaction(handle) }, "SCardBeginTransaction", reader: reader)
        {
            SCardDisconnect(handle, PCSC.leaveCard)
            throw e
        }
        return PCSCConnection(
            name: reader, context: ctx, card: handle, protocol: proto,
            atr: Array(atrBuffer.prefix(Int(atrLength))), holdsTransaction: transaction, calls: calls,
            exchangeTimeout: exchangeTimeout)
    }

    /// Makes `call` on `card`; while it answers one of `transient` (another program reset or unpowered the
    /// card before anything of ours reached it), reconnects, leaving the card as it is, and makes it again, up
    /// to five times. `reconnected` gets the protocol each reconnect chose. A failed reconnect's status is
    /// returned as the call's.
    private static func retryingAfterResets(
        _ card: SCARDHANDLE, on transient: [UInt32],
        reconnected: (DWORD) -> Void, _ call: () -> LONG
    ) -> LONG {
        var rv = call()
        var reconnects = 0
        while reconnects < 5, transient.contains(PCSCStatus.code(rv)) {
            reconnects += 1
            var chosen = DWORD(0)
            let status = SCardReconnect(
                card, PCSC.shareShared, PCSC.protocolT0 | PCSC.protocolT1, PCSC.leaveCard,
                &chosen)
            guard status == SCARD_S_SUCCESS else { return status }
            reconnected(chosen)
            rv = call()
        }
        return rv
    }

    /// Runs `work` where this connection makes its calls: on its queue, or here with `PCSCCalls.inline`.
    private func onCallThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        if case .inline = calls { return try work() }
        return try await withCheckedThrowingContinuation { cont in
            queue.async { cont.resume(with: Result { try work() }) }
        }
    }

    /// How long one exchange may take before it is given up: `YKTERM_CARD_TIMEOUT` seconds, or 30 (longer
    /// than any touch a key waits for; FIDO over PC/SC answers every 100 ms while it waits).
    public static let transmitTimeout: Double = configuredTimeout ?? 30

    /// `YKTERM_CARD_TIMEOUT` when it holds a positive number of seconds.
    public static let configuredTimeout: Double? = {
        if let text = getenv("YKTERM_CARD_TIMEOUT").map({ String(cString: $0) }), let seconds = Double(text),
            seconds > 0
        {
            return seconds
        }
        return nil
    }()

    /// Sends one APDU. A card that never answers ends the wait after `transmitTimeout` with
    /// `SmartCardError.timeout`; the connection is then closed to new commands (the blocked exchange is
    /// left to pcscd, which ends it when the reader gives up or the card goes). With `PCSCCalls.inline` the
    /// exchange is made on the calling thread, and the timeout goes to the connection's `onTimeout`.
    public func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        if case .inline(let onTimeout) = calls { return try transmitInline(command, onTimeout: onTimeout) }
        return try await transmitQueued(command)
    }

    /// A function of its own, so that an inline exchange never makes the metadata of `OneShot` (its
    /// `CheckedContinuation<_, Never>` is the process's first use of `Never: Error`, a scan of every
    /// conformance record in the binary): an async function makes its frame's types when it starts.
    private func transmitQueued(_ command: [UInt8]) async throws -> [UInt8] {
        // The queue is still blocked in the exchange that was given up: a command queued behind it would wait
        // out a timeout of its own.
        guard !timedOut.load() else { throw SmartCardError.closed }
        let outcome = OneShot<Result<[UInt8], any Error>>()
        queue.async {
            outcome.resolve(Result { try self.transmitBlocking(command) })
        }
        let probe = exchangeTimeout < Self.transmitTimeout
        let name = self.name
        Blocking.after(exchangeTimeout) {
            outcome.resolve(.failure(probe ? SmartCardError.readerNotAnswering(name) : SmartCardError.timeout))
        }
        let result = await outcome.value
        switch result {
        case .failure(SmartCardError.timeout), .failure(SmartCardError.readerNotAnswering):
            timedOut.store(true)
            // The exchange still holds the context's lock in pcsc-lite (and a call that waits for it there holds
            // the lock of every context of the process): no other connection may use it.
            context.wedged.store(true)
        default: break
        }
        return try result.get()
    }

    private func transmitInline(
        _ command: [UInt8],
        onTimeout: @escaping @Sendable (SmartCardError) -> Never
    ) throws -> [UInt8] {
        let done = exchangesDone
        let before = done.value
        let probe = exchangeTimeout < Self.transmitTimeout
        let name = self.name
        Blocking.after(exchangeTimeout) {
            if done.value == before { onTimeout(probe ? .readerNotAnswering(name) : .timeout) }
        }
        defer { done.increment() }
        return try transmitBlocking(command)
    }

    private func transmitBlocking(_ command: [UInt8]) throws -> [UInt8] {
        guard isOpen, !timedOut.load() else { throw SmartCardError.closed }
        var receive: [UInt8] = []
        let rv: LONG
        if exchanged {
            (rv, receive) = send(command)
        } else {
            // Before anything of ours reached the card, another program reset or unpowered it (ykman does as
            // it leaves; pcscd powers the card up again, its protocol not yet chosen, and answers
            // PROTO_MISMATCH): nothing is lost, so reconnect and send again.
            rv = Self.retryingAfterResets(
                card, on: [PCSCStatus.resetCard, PCSCStatus.unpoweredCard, PCSCStatus.protoMismatch],
                reconnected: { sendProtocol = $0 }
            ) {
                let sent = send(command)
                receive = sent.1
                return sent.0
            }
            exchanged = true
        }
        // An exchange that could not complete means, in practice, a key pulled out mid-command.
        if PCSCStatus.code(rv) == PCSCStatus.notTransacted { throw SmartCardError.cardRemoved }
        try PCSC.check(rv, "SCardTransmit", reader: name)
        // A card that vanishes mid-command can leave the driver reporting success with no bytes.
        guard receive.count >= 2 else { throw SmartCardError.cardRemoved }
        return receive
    }

    /// One SCardTransmit: the status, and the answer's bytes when it succeeded.
    private func send(_ command: [UInt8]) -> (LONG, [UInt8]) {
        var pci = SCARD_IO_REQUEST(dwProtocol: sendProtocol, cbPciLength: DWORD(MemoryLayout<SCARD_IO_REQUEST>.size))
        // Room for the longest answer, left uninitialised (zeroing 64 KiB per APDU was 10% of `oath code`'s
        // instructions); the answer is the bytes the driver wrote.
        var receiveLength = DWORD(65_548)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(receiveLength)) { buffer in
            let rv = SCardTransmit(card, &pci, command, DWORD(command.count), nil, buffer.baseAddress, &receiveLength)
            return (rv, rv == SCARD_S_SUCCESS ? Array(buffer.prefix(Int(receiveLength))) : [])
        }
    }

    public func withTransaction<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await onCallThread {
            guard self.isOpen else { throw SmartCardError.closed }
            try PCSC.check(SCardBeginTransaction(self.card), "SCardBeginTransaction", reader: self.name)
        }
        do {
            let result = try await body()
            await endTransaction()
            return result
        } catch {
            await endTransaction()
            throw error
        }
    }

    /// Ends the transaction, unless an exchange timed out: its call still blocks the queue, and pcscd ends
    /// the transaction itself when the process goes.
    private func endTransaction() async {
        guard !timedOut.load() else { return }
        try? await onCallThread { _ = SCardEndTransaction(self.card, PCSC.leaveCard) }
    }

    public func close() async {
        // After a timeout the queue is still blocked in SCardTransmit; waiting for it would hang the close.
        // pcscd releases the card handle when the blocked call returns or the process exits.
        guard !timedOut.load() else { return }
        let closed =
            (try? await onCallThread { () -> Bool in
                guard self.isOpen else { return false }
                self.isOpen = false
                if self.holdsTransaction { _ = SCardEndTransaction(self.card, PCSC.leaveCard) }
                SCardDisconnect(self.card, PCSC.leaveCard)
                return true
            }) ?? false
        if closed, !context.isWedged, let freed = contextFreed.withLock({ $0.take() }) { freed(context) }
    }

    /// `freed` gets the connection's context when the connection is closed, unless a call on it was given up.
    func whenClosed(_ freed: @escaping @Sendable (PCSCContext) -> Void) {
        contextFreed.withLock { $0 = freed }
    }

    deinit {
        if isOpen { SCardDisconnect(card, PCSC.leaveCard) }
    }
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// A flag shared between threads.
final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    func store(_ v: Bool) { value.store(v, ordering: .sequentiallyConsistent) }
    func load() -> Bool { value.load(ordering: .sequentiallyConsistent) }
}

/// A count shared between threads.
final class AtomicCounter: Sendable {
    private let count = Atomic<UInt64>(0)

    var value: UInt64 { count.load(ordering: .acquiring) }
    func increment() { count.wrappingAdd(1, ordering: .releasing) }
}

/// A value set once by whichever of several racing parties comes first, awaited by one task.
final class OneShot<T: Sendable>: Sendable {
    private let state = Mutex<(result: T?, waiter: CheckedContinuation<T, Never>?)>((nil, nil))

    /// Keeps `value` when it is the first; returns whether it was.
    @discardableResult
    func resolve(_ value: T) -> Bool {
        // Only the first value is kept; the task already waiting (if any) gets it.
        let (first, waiter) = state.withLock { state -> (Bool, CheckedContinuation<T, Never>?) in
            guard state.result == nil else { return (false, nil) }
            state.result = value
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume(returning: value)
        return first
    }

    var value: T {
        get async {
            await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
                let ready: T? = state.withLock { state in
                    if let result = state.result { return result }
                    state.waiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        }
    }
}
