import CPCSCLite
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The state of one reader, as PC/SC reports it.
public struct ReaderStatus: Sendable, Equatable {
    public var name: String
    public var cardPresent: Bool
    public var exclusive: Bool
    public var inUse: Bool
    public var mute: Bool
    public var atr: [UInt8]
}

/// A PC/SC resource-manager context (a connection to pcscd).
///
/// `@unchecked Sendable`: the context handle is immutable after creation and pcsc-lite serialises
/// calls on one context internally; `SCardCancel` is documented as callable from another thread.
public final class PCSCContext: @unchecked Sendable {
    let handle: SCARDCONTEXT
    /// Set when a call made on this context was given up (a reader that did not answer): pcsc-lite holds the
    /// context's lock for the whole of a call, so every later call on it would wait behind the stuck one.
    /// Connections then make a context of their own.
    let wedged = AtomicFlag()

    /// Whether a call on this context was given up (see `wedged`).
    public var isWedged: Bool { wedged.load() }

    public init() throws {
        var ctx = SCARDCONTEXT()
        let rv = SCardEstablishContext(PCSC.scopeSystem, nil, nil, &ctx)
        try PCSC.check(rv, "SCardEstablishContext")
        handle = ctx
    }

    deinit {
        SCardReleaseContext(handle)
    }

    /// Names of the readers pcscd knows, in its order. Empty when there are none.
    public func readers() throws -> [String] {
        var length = DWORD(0)
        var rv = SCardListReaders(handle, nil, nil, &length)
        if PCSCStatus.code(rv) == PCSCStatus.noReadersAvailable { return [] }
        try PCSC.check(rv, "SCardListReaders")
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        rv = SCardListReaders(handle, nil, &buffer, &length)
        if PCSCStatus.code(rv) == PCSCStatus.noReadersAvailable { return [] }
        try PCSC.check(rv, "SCardListReaders")
        return PCSCContext.splitMultiString(buffer, length: Int(length))
    }

    static func splitMultiString(_ buffer: [CChar], length: Int) -> [String] {
        var names = [String]()
        var current = [UInt8]()
        for c in buffer.prefix(length) {
            if c == 0 {
                if current.isEmpty { break }
                names.append(String(decoding: current, as: UTF8.self))
                current.removeAll()
            } else {
                current.append(UInt8(bitPattern: c))
            }
        }
        if !current.isEmpty { names.append(String(decoding: current, as: UTF8.self)) }
        return names
    }

    /// The current state of every reader (no waiting).
    public func status() throws -> [ReaderStatus] {
        let names = try readers()
        if names.isEmpty { return [] }
        var states = ReaderStateArray(names: names)
        let rv = states.withUnsafeStates { SCardGetStatusChange(handle, 0, $0, DWORD($1)) }
        let code = PCSCStatus.code(rv)
        if code != PCSCStatus.timeout { try PCSC.check(rv, "SCardGetStatusChange") }
        return states.statuses()
    }

    /// Blocks until any reader in `states` changes or `timeout` (ms) passes; returns false on timeout.
    func waitForChange(_ states: inout ReaderStateArray, timeout: DWORD) throws -> Bool {
        let rv = states.withUnsafeStates { SCardGetStatusChange(handle, timeout, $0, DWORD($1)) }
        if PCSCStatus.code(rv) == PCSCStatus.timeout { return false }
        try PCSC.check(rv, "SCardGetStatusChange")
        return true
    }

    /// Wakes a blocked `waitForChange` (it then throws `.cancelled`).
    public func cancel() {
        SCardCancel(handle)
    }

    /// Whether pcscd answers at all.
    public static func isServiceAvailable() -> Bool {
        (try? PCSCContext()) != nil
    }
}

/// Owns the C strings and `SCARD_READERSTATE` records for `SCardGetStatusChange`.
struct ReaderStateArray {
    var names: [String]
    var current: [DWORD]
    var event: [DWORD]
    var atrs: [[UInt8]]

    init(names: [String], current: [DWORD]? = nil) {
        self.names = names
        self.current = current ?? Array(repeating: PCSCState.unaware, count: names.count)
        self.event = Array(repeating: 0, count: names.count)
        self.atrs = Array(repeating: [], count: names.count)
    }

    mutating func withUnsafeStates<R>(_ body: (UnsafeMutablePointer<SCARD_READERSTATE>, Int) -> R) -> R {
        let cStrings = names.map { strdup($0)! }
        defer { cStrings.forEach { free($0) } }
        var records = [SCARD_READERSTATE]()
        for (i, s) in cStrings.enumerated() {
            var r = SCARD_READERSTATE()
            r.szReader = UnsafePointer(s)
            r.dwCurrentState = current[i]
            records.append(r)
        }
        let result = records.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
        for i in records.indices {
            event[i] = records[i].dwEventState
            let n = min(Int(records[i].cbAtr), 33)
            atrs[i] = withUnsafeBytes(of: records[i].rgbAtr) { Array($0.prefix(n)) }
        }
        return result
    }

    func statuses() -> [ReaderStatus] {
        names.indices.map { i in
            let e = event[i]
            return ReaderStatus(
                name: names[i], cardPresent: e & PCSCState.present != 0,
                exclusive: e & PCSCState.exclusive != 0, inUse: e & PCSCState.inUse != 0,
                mute: e & PCSCState.mute != 0,
                atr: e & PCSCState.present != 0 ? atrs[i] : [])
        }
    }
}
