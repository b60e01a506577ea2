import Glibc

// Small system helpers the modules share. They stand in for the parts of Foundation that FoundationEssentials
// leaves out (threads, locks, standard streams, path strings), so that ykterm links FoundationEssentials only:
// without CoreFoundation and ICU a run starts faster and keeps about 3 MiB less resident.

/// A mutual-exclusion lock (a pthread mutex). Where the guarded value and what is read out of it are Sendable,
/// `Synchronization.Mutex` is the simpler choice; this one lets a closure return a value of any type.
public final class ThreadLock: @unchecked Sendable {
    // @unchecked: the mutex is the synchronisation; it lives at a fixed heap address for the object's lifetime.
    fileprivate let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    @discardableResult
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A lock with a condition to wait on (a pthread mutex and condition variable on the monotonic clock).
public final class ThreadCondition: @unchecked Sendable {
    // @unchecked: the lock and the condition variable are the synchronisation; both live at fixed heap addresses.
    private let mutex = ThreadLock()
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    public func lock() { mutex.lock() }
    public func unlock() { mutex.unlock() }
    /// Wakes every thread waiting. Call with the lock held.
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// The monotonic clock's time in seconds, for `wait(untilMonotonic:)` deadlines.
    public static func monotonicNow() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Waits (the lock held, released while waiting) until woken or the deadline passes; false on the deadline.
    public func wait(untilMonotonic deadline: Double) -> Bool {
        let whole = deadline.rounded(.down)
        var until = timespec(tv_sec: Int(whole), tv_nsec: Int((deadline - whole) * 1e9))
        return pthread_cond_timedwait(condition, mutex.mutex, &until) != ETIMEDOUT
    }
}

public enum SystemThread {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Runs `body` on a new detached thread named `name` (at most 15 bytes show in `ps`). Returns false when no
    /// thread could be created.
    ///
    /// The thread blocks every signal but the faults an instruction raises (as libdispatch's workers do), so
    /// that signals sent to the process (SIGTERM, SIGINT, SIGTSTP, SIGWINCH) are taken by the threads that
    /// expect them: a terminating signal handled on a helper thread while the TUI's loop stops the process
    /// (`waitForForeground`) would leave it stopped half-way through the handler.
    @discardableResult
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        // The new thread inherits the creator's mask: block around pthread_create, then put the creator's back.
        var blocked = sigset_t()
        sigfillset(&blocked)
        for fault in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGSYS] { sigdelset(&blocked, fault) }
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let created = pthread_create(
            &thread, nil,
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                body.run()
                return nil
            }, context)
        guard created == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        _ = setThreadName(thread, String(name.utf8.prefix(15)) ?? "ykterm")
        pthread_detach(thread)
        return true
    }

    /// glibc's `pthread_setname_np`, which Swift's Glibc module leaves out (it sits behind `_GNU_SOURCE`).
    private static func setThreadName(_ thread: pthread_t, _ name: String) -> Int32 {
        typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_setname_np") else { return -1 }
        return unsafeBitCast(symbol, to: SetName.self)(thread, name)
    }

    /// Blocks the calling thread for `seconds` (resumed after signals until the time is up).
    public static func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        let whole = seconds.rounded(.down)
        var request = timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

public enum StandardStream {
    /// Writes all of `text` to the descriptor (standard output 1, standard error 2), retrying short writes.
    public static func write(_ text: String, to fd: Int32) {
        var text = text
        text.withUTF8 { _ = writeAll(UnsafeRawBufferPointer($0), to: fd) }
    }

    /// Writes all of `bytes` to any descriptor, retrying short writes and EINTR; false when it stopped early
    /// (the reader went away, the descriptor failed). Allocates nothing: safe in a signal handler.
    @discardableResult
    public static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}

/// The process environment, read from `environ`. It stands in for FoundationEssentials' `ProcessInfo.environment`,
/// which finds each entry's `=` by comparing Characters (grapheme breaking over every byte of the environment) and
/// took about 50 µs a call, several times in every command; this compares bytes. Entries without `=` are skipped,
/// and of two entries with one name the later wins, as there.
public enum ProcessEnvironment {
    public static var current: [String: String] {
        let start: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard var entry = start else { return [:] }
        // Room for every variable at once: growing the dictionary as it fills moved it 18 times, 70% of the
        // cost of a call (callgrind, a CI-sized environment).
        var count = 0
        while entry[count] != nil { count += 1 }
        var result = [String: String](minimumCapacity: count)
        while let cString = entry.pointee {
            let length = strlen(cString)
            cString.withMemoryRebound(to: UInt8.self, capacity: length) { first in
                let bytes = UnsafeBufferPointer(start: first, count: length)
                if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
                    result[String(decoding: bytes[..<equals], as: UTF8.self)] =
                        String(decoding: bytes[(equals + 1)...], as: UTF8.self)
                }
            }
            entry += 1
        }
        return result
    }

    /// One variable's value, or nil when it is not set.
    public static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

public enum PathString {
    /// The directory part of a path, as `dirname` gives it without touching the string it is given:
    /// `/a/b` → `/a`, `/a` → `/`, `a` → `.`, `a/b/` → `a`.
    public static func directory(of path: String) -> String {
        var text = Substring(path)
        while text.count > 1, text.hasSuffix("/") { text = text.dropLast() }
        guard let slash = text.lastIndex(of: "/") else { return "." }
        var directory = text[..<slash]
        while directory.count > 1, directory.hasSuffix("/") { directory = directory.dropLast() }
        return directory.isEmpty ? "/" : String(directory)
    }

    /// The path with `.` and `..` components and repeated slashes resolved as text (no file system access);
    /// `..` at the root stays at the root.
    public static func normalized(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var parts = [Substring]()
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == "..", let last = parts.last, last != ".." {
                parts.removeLast()
            } else if part == "..", absolute {
                continue
            } else {
                parts.append(part)
            }
        }
        let joined = parts.joined(separator: "/")
        return absolute ? "/" + joined : (joined.isEmpty ? "." : joined)
    }

    /// `path` with a leading `~` (alone, or before `/`) replaced by the home directory: HOME when it is set and not
    /// empty, else the password database's.
    public static func expandingHome(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = ProcessEnvironment.value("HOME").flatMap { $0.isEmpty ? nil : $0 } ?? homeDirectory()
        return home + path.dropFirst()
    }

    /// The user's home directory from the password database (for when HOME is unset), or `/`.
    public static func homeDirectory() -> String {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return "/" }
        return String(cString: directory)
    }

    /// The running executable's path (`/proc/self/exe`), or nil.
    public static func executable() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension StringProtocol {
    /// Whether `part` occurs in the text, byte for byte in UTF-8 (so code point for code point, as Python's `in`
    /// compares). `String.contains` with a string compares Characters through _StringProcessing, whose searcher
    /// builds a `[Character: Int]` table: its first use in a process costs the Swift runtime's lookup of
    /// `Character: Hashable`, a scan of every conformance record in the binary (330,000 instructions), and
    /// every command that looks for its key matched a reader's name that way. An empty `part` is not found,
    /// as with `contains`.
    public func includes(_ part: some StringProtocol) -> Bool {
        let needle = Array(part.utf8)
        guard let first = needle.first else { return false }
        let text = Array(utf8)
        guard text.count >= needle.count else { return false }
        for start in 0...(text.count - needle.count) where text[start] == first {
            if text[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }

    /// The text without leading and trailing spaces and tabs (other horizontal white space too), newlines kept.
    public var trimmingSpaces: String { trimmed { $0.isWhitespace && !$0.isNewline } }

    /// The text without leading and trailing white space, newlines included.
    public var trimmingWhitespace: String { trimmed { $0.isWhitespace } }

    private func trimmed(_ drop: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !drop($0) }), let last = lastIndex(where: { !drop($0) }) else {
            return ""
        }
        return String(self[first...last])
    }

    /// The decimal digits of `value`, left-padded with zeros to `width`.
    public static func zeroPadded(_ value: Int, width: Int) -> String {
        let digits = String(value.magnitude)
        let padding = String(repeating: "0", count: Swift.max(0, width - digits.count))
        return (value < 0 ? "-" : "") + padding + digits
    }
}

/// Regular expressions as users write them (`otp read --pattern`, `[otp] parsers`), compiled with Swift's
/// engine (the ICU/PCRE syntax: `\\d`, `[a-z]{32}`, `(?:…)`, `(?<name>…)`, lazy quantifiers).
public enum UserPattern {
    /// The compiled expression, or nil when it is not valid.
    public static func compile(_ pattern: String) -> Regex<AnyRegexOutput>? {
        try? Regex(pattern)
    }

    /// How many capture groups the pattern has: each `(` that is not escaped, not inside a `[…]` class and not
    /// a non-capturing `(?…)` group (named groups `(?<name>…)`, `(?'name'…)` and `(?P<name>…)` do capture).
    public static func captureGroups(in pattern: String) -> Int {
        let characters = Array(pattern)
        var count = 0
        var index = 0
        var inClass = false
        var quoted = false
        while index < characters.count {
            let c = characters[index]
            if quoted {
                if c == "\\", index + 1 < characters.count, characters[index + 1] == "E" { quoted = false; index += 1 }
            } else if c == "\\" {
                if index + 1 < characters.count, characters[index + 1] == "Q" { quoted = true }
                index += 1
            } else if inClass {
                if c == "]" { inClass = false }
            } else if c == "[" {
                inClass = true
                // A `]` right after `[` or `[^` is a member, not the end.
                if index + 1 < characters.count, characters[index + 1] == "^" { index += 1 }
                if index + 1 < characters.count, characters[index + 1] == "]" { index += 1 }
            } else if c == "(" {
                if index + 1 < characters.count, characters[index + 1] == "?" {
                    let rest = characters.dropFirst(index + 2).prefix(2)
                    let named =
                        rest.first == "'" || rest.first == "P"
                        || (rest.first == "<" && rest.dropFirst().first != "=" && rest.dropFirst().first != "!")
                    if named { count += 1 }
                } else if index + 1 < characters.count, characters[index + 1] == "*" {
                    // `(*VERB)` controls are not groups.
                } else {
                    count += 1
                }
            }
            index += 1
        }
        return count
    }

    /// The text of the first capture group in the first match in `text`, or nil.
    public static func firstCapture(of regex: Regex<AnyRegexOutput>, in text: String) -> String? {
        guard let match = try? regex.firstMatch(in: text), match.output.count > 1,
            let captured = match.output[1].substring
        else { return nil }
        return String(captured)
    }
}
