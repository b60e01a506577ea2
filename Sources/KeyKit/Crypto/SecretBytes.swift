import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Secret bytes (a PIN, a password, a derived OATH access key, an HMAC key, a PIN/UV auth token) in a buffer
/// of their own that is overwritten with zeros when the value is wiped or released.
///
/// Swift's arrays and strings may be copied by the runtime where no code can reach the copies; this type keeps
/// the one copy it owns out of that: the bytes live in memory it allocates, it hands them out only for the
/// duration of a closure, and it zeroes them before the memory goes back. Where an API needs `[UInt8]`, wipe
/// the temporary array with `SecretBytes.wipe(_:)` as soon as it has been used.
///
/// Sendable without `@unchecked`: the buffer sits in a `Mutex`, so a wipe never races a read.
public final class SecretBytes: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    private struct Storage: ~Copyable {
        var pointer: UnsafeMutableRawBufferPointer
        var count: Int
    }

    private let storage: Mutex<Storage>
    private static let pageSize = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))

    /// A copy of `bytes`. The caller's array is left as it is: prefer `init(wiping:)`.
    public init(_ bytes: some Collection<UInt8>) {
        // Pages of its own, locked in memory: mlock counts no references, so a page is never shared with
        // another secret that would unlock it when it goes.
        let page = SecretBytes.pageSize
        let size = (max(bytes.count, 1) + page - 1) / page * page
        let pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: page)
        SecretMemory.lock(pointer)
        pointer.initializeMemory(as: UInt8.self, repeating: 0)
        var i = 0
        for b in bytes {
            pointer[i] = b
            i += 1
        }
        storage = Mutex(Storage(pointer: pointer, count: i))
    }

    /// Moves `bytes` in: copies them, then overwrites the caller's array with zeros and empties it.
    public convenience init(wiping bytes: inout [UInt8]) {
        self.init(bytes)
        SecretBytes.wipe(&bytes)
    }

    /// The UTF-8 bytes of a PIN or password.
    public convenience init(utf8 text: String) {
        var bytes = Array(text.utf8)
        self.init(wiping: &bytes)
    }

    /// Empty secret bytes.
    public convenience init() {
        self.init([UInt8]())
    }

    deinit {
        wipe()
        storage.withLock {
            SecretMemory.unlock($0.pointer)
            $0.pointer.deallocate()
        }
    }

    /// The number of bytes (0 after `wipe()`).
    public var count: Int { storage.withLock { $0.count } }

    public var isEmpty: Bool { count == 0 }

    /// Lends the bytes to `body`; the pointer must not escape it.
    public func withUnsafeBytes<R: Sendable, E: Error>(
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try storage.withLock { (s: inout Storage) throws(E) -> R in
            try body(UnsafeRawBufferPointer(rebasing: s.pointer[..<s.count]))
        }
    }

    /// A copy as an array, for an API that only takes arrays. Wipe it with `SecretBytes.wipe(_:)` after use.
    public func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    /// The first `n` bytes as secret bytes of their own.
    public func prefix(_ n: Int) -> SecretBytes {
        withUnsafeBytes { raw in SecretBytes(raw.prefix(max(0, n))) }
    }

    /// Overwrites the bytes with zeros now; afterwards the value is empty.
    public func wipe() {
        storage.withLock { s in
            SecretBytes.zero(s.pointer)
            s.count = 0
        }
    }

    /// Compares in constant time (for equal lengths).
    public func constantTimeEquals(_ other: SecretBytes) -> Bool {
        let theirs = other.copyBytes()
        defer { var t = theirs; SecretBytes.wipe(&t) }
        return withUnsafeBytes { ours in
            guard ours.count == theirs.count else { return false }
            var diff: UInt8 = 0
            for i in 0..<ours.count { diff |= ours[i] ^ theirs[i] }
            return diff == 0
        }
    }

    /// Never the bytes: only how many there are, so that a secret printed by mistake shows nothing.
    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }

    /// Overwrites an array's bytes with zeros (in its own buffer when that is not shared) and empties it.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { zero($0) }
        bytes.removeAll()
    }

    /// Zeros that the optimiser may not remove (explicit_bzero writes even if the memory is never read again).
    static func zero(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Glibc)
        explicit_bzero(base, buffer.count)
        #else
        memset_s(base, buffer.count, 0, buffer.count)
        #endif
    }
}
