import Glibc
import Testing
@testable import KeyKit

@Suite("Files replaced atomically")
struct AtomicFileTests {
    static func directory() -> String {
        var template = Array((String(cString: getenv("TMPDIR") ?? strdup("/tmp")) + "/atomic-XXXXXX").utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    static func read(_ path: String) -> String? {
        guard let f = fopen(path, "r") else { return nil }
        defer { fclose(f) }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, f)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func entries(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names = [String]()
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    @Test func replacesTheFileWholeWithMode600AndLeavesNoTemporaryFile() throws {
        let dir = Self.directory()
        defer { rmdir(dir) }
        let path = dir + "/pins.json"
        defer { unlink(path) }
        let old = umask(0)
        defer { umask(old) }
        try AtomicFile.write(Array("first".utf8), to: path)
        try AtomicFile.write(Array("second".utf8), to: path)
        #expect(Self.read(path) == "second")
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(Self.entries(dir) == ["pins.json"])
    }

    @Test func whatACrashedWriteLeftIsClearedByTheNextAndARunningWritersFileIsNot() throws {
        let dir = Self.directory()
        let path = dir + "/pins.json"
        // A process that is gone (pid 0x7FFFFFF0 is above any pid_max) and this one, each with a file left.
        let stale = path + ".tmp-2147483632-0-abc"
        let ours = path + ".tmp-\(getpid())-7-xyz"
        let other = dir + "/other.json.tmp-2147483632-0-abc"
        for f in [stale, ours, other] { close(open(f, O_CREAT | O_WRONLY, 0o600)) }
        defer { for f in [path, ours, other] { unlink(f) }; rmdir(dir) }
        try AtomicFile.write(Array("{}".utf8), to: path)
        #expect(
            Self.entries(dir).sorted()
                == [
                    "other.json.tmp-2147483632-0-abc", "pins.json",
                    "pins.json.tmp-\(getpid())-7-xyz",
                ].sorted())
    }

    @Test func aPlantedSymlinkIsReplacedNotFollowed() throws {
        let dir = Self.directory()
        let target = dir + "/elsewhere"
        let path = dir + "/oath-keys.json"
        defer { unlink(path); unlink(target); rmdir(dir) }
        try AtomicFile.write(Array("untouched".utf8), to: target)
        #expect(symlink(target, path) == 0)
        try AtomicFile.write(Array("secret".utf8), to: path)
        // The link itself was replaced by the file; what it pointed at is as it was.
        var st = stat()
        #expect(lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG)
        #expect(Self.read(path) == "secret" && Self.read(target) == "untouched")
    }

    @Test func aDirectoryThatCannotBeWrittenIsAClearError() {
        #expect(throws: AtomicFile.WriteError.self) {
            try AtomicFile.write([1], to: "/proc/ykterm-no-such-dir/file")
        }
    }

    @Test func unreadableRememberedKeysAreSetAsideAndStartAfresh() throws {
        let dir = Self.directory()
        let path = dir + "/oath-keys.json"
        defer { unlink(path); unlink(path + ".corrupt"); rmdir(dir) }
        try AtomicFile.write(Array("{\"dev\": \"00".utf8), to: path)  // cut short
        let store = RememberedKeys(path: path)
        #expect(try store.key(for: "dev") == nil)
        #expect(Self.read(path + ".corrupt") == "{\"dev\": \"00")
        try store.remember([1, 2, 3], for: "dev")
        #expect(try store.key(for: "dev") == [1, 2, 3])
    }
}
