import Glibc

/// Files ykterm keeps (pins, remembered OATH keys, the virtual key's state), written so that a crash or a power
/// cut at any moment leaves either the old or the new complete file, never a mix:
/// a new file in the same directory, created with `O_EXCL | O_NOFOLLOW` and mode 0600 (a planted symlink or
/// file cannot take the data elsewhere), written whole, `fsync`ed, renamed over the old one, and the directory
/// `fsync`ed so the rename itself survives.
public enum AtomicFile {
    public struct WriteError: Error, Equatable, Sendable {
        public var path: String
        public var reason: String
    }

    /// Replaces the file at `path` with `bytes` (mode `mode`, 0600 unless said).
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(WriteError) {
        let directory = PathString.directory(of: path)
        func fail(_ what: String) -> WriteError {
            WriteError(path: path, reason: what + ": " + String(cString: strerror(errno)))
        }
        var tmp = ""
        var fd: Int32 = -1
        for attempt in 0..<100 {
            // A name no one can predict to plant a link: the clock's nanoseconds (O_EXCL refuses one that exists).
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            tmp = path + ".tmp-\(getpid())-\(attempt)-\(String(UInt(bitPattern: now.tv_nsec), radix: 36))"
            fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else { throw fail("open") }
        var written = 0
        let ok = bytes.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + written, buffer.count - written)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                written += n
            }
            return fchmod(fd, mode) == 0 && fsync(fd) == 0
        }
        let error = ok ? nil : fail("write")
        close(fd)
        if let error {
            unlink(tmp)
            throw error
        }
        guard rename(tmp, path) == 0 else {
            let error = fail("rename")
            unlink(tmp)
            throw error
        }
        let dirFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
        removeStale(of: path)
    }

    /// Removes what writes of `path` cut short by a crash left beside it: `NAME.tmp-PID-...` files of processes
    /// that no longer run (a running one may be writing its own right now).
    static func removeStale(of path: String) {
        let directory = PathString.directory(of: path)
        let prefix = String(path.split(separator: "/").last ?? "") + ".tmp-"
        guard let dir = opendir(directory.isEmpty ? "." : directory) else { return }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix(prefix),
                let pid = Int32(name.dropFirst(prefix.count).split(separator: "-").first ?? "")
            else { continue }
            // kill(pid, 0) fails with ESRCH for a process that is gone.
            if pid != getpid(), kill(pid, 0) != 0, errno == ESRCH {
                unlink((directory.isEmpty ? "" : directory + "/") + name)
            }
        }
    }

    /// Moves a file that could not be read aside to `NAME.corrupt` (replacing an older one), so ykterm can start
    /// anyway and the content is kept for a look; returns the new path, nil when it could not be moved.
    @discardableResult
    public static func setAside(_ path: String) -> String? {
        let aside = path + ".corrupt"
        return rename(path, aside) == 0 ? aside : nil
    }
}
