import FoundationEssentials
import Glibc
import KeyKit

/// The APDU console's one connection, kept from the first command until the key leaves, another key is
/// selected, or the runner goes (the connection's own deinit disconnects; pcscd also drops it when the
/// process ends). Unlike the other tabs' short-lived connections it outlives a command, so a SELECT holds for
/// the commands after it. The runner performs key commands one at a time, so only one command uses it at
/// once; the lock guards the hand-over between the runner's tasks.
public final class APDUConsole: Sendable {
    private let held = LockedValue<(keyID: String, connection: any SmartCardConnection)?>(nil)

    public init() {}

    /// The connection for `key`, opening one (and closing one to another key) when needed.
    func connection(for key: KeyDescriptor, backend: any KeyBackend) async throws -> any SmartCardConnection {
        let current = held.withLock { $0 }
        if let current, current.keyID == key.id { return current.connection }
        await close()
        let connection = try await BackendKey(backend, key).openHeldSmartCard()
        held.withLock { $0 = (key.id, connection) }
        return connection
    }

    var isOpen: Bool { held.withLock { $0 != nil } }

    func close() async {
        let current = held.withLock { value -> (keyID: String, connection: any SmartCardConnection)? in
            defer { value = nil }
            return value
        }
        if let current { await current.connection.close() }
    }
}

/// Performs the APDU tab's commands.
struct APDUTabWork: TabWork {
    let work: KeyWork
    var console: APDUConsole { work.apduConsole }

    func perform(_ command: APDUTabCommand) async {
        switch command {
        case .send(let key, let bytes, let remaining, let id):
            await send(key, bytes, remaining: remaining, id: id)
        case .close:
            await console.close()
        case .save(let path, let content, let overwrite):
            post(.apdu(Self.save(path: path, content, overwrite: overwrite)))
        }
    }

    /// Sends the bytes as typed and gathers the answer (6Cxx re-sent with the right Le, 61xx followed with
    /// `remaining`), reporting every raw exchange. On a failure the connection is dropped: the next command
    /// opens a fresh one.
    private func send(_ key: KeyDescriptor, _ bytes: [UInt8], remaining: UInt8, id: Int) async {
        do {
            let connection = try await console.connection(for: key, backend: backend)
            // One transaction per command (with its GET RESPONSE or SEND REMAINING parts); none between commands,
            // so other programs keep using the key while the console is open.
            let answer = try await APDUOperations.Console(connection, perCommand: true).send(
                bytes, chaining: .follow(remaining: remaining), observer: environment.observer)
            post(.apdu(.answered(keyID: key.id, id: id, exchanges: answer.exchanges, response: answer.response)))
        } catch {
            await console.close()
            let explanation = ErrorExplanation(error)
            post(.apdu(.failed(keyID: key.id, id: id, message: explanation.text, keyGone: explanation.kind.keyGone)))
        }
    }

    /// Writes a transcript or the history with mode 0600; an existing file only when `overwrite` (the user
    /// confirmed). `~/` is the home directory.
    static func save(
        path: String, _ content: APDUSaveContent, overwrite: Bool,
        tables: @autoclosure () -> StringTables = StringTables.load()
    ) -> APDUTabMsg {
        let kind: APDUSaveKind
        let text: String
        switch content {
        case .transcript(let lines):
            kind = .transcript
            let t = tables()
            text =
                lines.map { line in
                    var s = t.text(line.text)
                    if let suffix = line.suffix { s += "  " + t.text(suffix) }
                    return s
                }.joined(separator: "\n") + "\n"
        case .history(let commands):
            kind = .history
            text = commands.joined(separator: "\n") + "\n"
        }
        let full = PathString.expandingHome(path)
        var flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW
        if !overwrite { flags |= O_EXCL }
        let fd = open(full, flags, 0o600)
        if fd < 0 {
            let code = errno
            return .saveFailed(
                kind, path: path,
                message: UIText("apdu.save.failed", ["path": path, "why": String(cString: strerror(code))]),
                exists: code == EEXIST)
        }
        defer { close(fd) }
        // An overwritten file keeps its inode: make it private too.
        _ = fchmod(fd, 0o600)
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                return .saveFailed(
                    kind, path: path,
                    message: UIText("apdu.save.failed", ["path": path, "why": String(cString: strerror(code))]),
                    exists: false)
            }
            written += n
        }
        return .saved(kind, path: path)
    }
}
