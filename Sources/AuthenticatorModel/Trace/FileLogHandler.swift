import FoundationEssentials
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, bytes, count)
    #else
    Darwin.write(fd, bytes, count)
    #endif
}

private func systemClose(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}

/// Why a log file could not be opened.
public struct LogFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public var description: String { "cannot write the trace to \(path): \(reason)" }
}

/// A file that log lines are appended to, one `write` per line, from any thread.
///
/// The file is created with mode 0600 (a trace says which accounts a key holds); an existing regular file
/// of ours that others could read is narrowed to 0600. Lines are appended, so several runs can share one file.
public final class LogFile: Sendable {
    public let path: String
    private let fd: Mutex<Int32>

    public init(path: String) throws(LogFileError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LogFileError(path: path, reason: String(cString: strerror(errno))) }
        var st = stat()
        if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_uid == getuid(), st.st_mode & 0o077 != 0 {
            _ = fchmod(fd, 0o600)
        }
        self.path = path
        self.fd = Mutex(fd)
    }

    /// Appends `line` and a newline.
    public func write(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        fd.withLock { fd in
            guard fd >= 0 else { return }
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }

    /// Closes the file; later writes are dropped.
    public func close() {
        fd.withLock { fd in
            if fd >= 0 { systemClose(fd) }
            fd = -1
        }
    }

    deinit {
        close()
    }
}

/// A swift-log handler that writes one line per message to a `LogFile`:
/// `2026-11-05T09:41:07.123Z debug ykterm.trace: message key=value ...`.
public struct FileLogHandler: LogHandler {
    public let label: String
    public let file: LogFile
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace

    public init(label: String, file: LogFile) {
        self.label = label
        self.file = file
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { $1 } }
        var line = FileLogHandler.timestamp() + " \(event.level) \(label): \(event.message)"
        for key in all.keys.sorted() {
            line += " \(key)=\(all[key]!)"
        }
        file.write(line)
    }

    /// UTC time with milliseconds, ISO 8601.
    static func timestamp(_ date: Date = Date()) -> String {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&t, &parts)
        let ms = Int((date.timeIntervalSince1970 - Double(t)) * 1000)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(msText)Z"
    }
}
