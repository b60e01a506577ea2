import FoundationEssentials
import KeyKit
import Glibc

/// How copied text reaches the user's clipboard.
public enum ClipboardMethod: String, Sendable, CaseIterable {
    /// OSC 52 through the terminal (works over SSH), plus `wl-copy` under Wayland and `xclip` under X11.
    case auto
    /// Only OSC 52.
    case osc52
    /// Only `wl-copy`.
    case wlCopy = "wl-copy"
    /// Only `xclip -selection clipboard`.
    case xclip
    /// Copying is off.
    case none
}

/// A local program that takes text on stdin and puts it on the clipboard.
public struct ClipboardTool: Hashable, Sendable {
    public var name: String
    public var arguments: [String]

    public init(name: String, arguments: [String]) {
        self.name = name
        self.arguments = arguments
    }

    public static let wlCopy = ClipboardTool(name: "wl-copy", arguments: [])
    public static let xclip = ClipboardTool(name: "xclip", arguments: ["-selection", "clipboard"])
}

/// What a copy did.
public struct ClipboardOutcome: Hashable, Sendable {
    /// Whether an OSC 52 sequence was written to the terminal (the terminal may still ignore it).
    public var sentToTerminal: Bool
    /// Local tools that ran and exited with status 0.
    public var succeeded: [String]
    /// Local tools that were not found, failed or timed out.
    public var failed: [String]

    public init(sentToTerminal: Bool = false, succeeded: [String] = [], failed: [String] = []) {
        self.sentToTerminal = sentToTerminal
        self.succeeded = succeeded
        self.failed = failed
    }

    /// Whether the text went anywhere at all.
    public var copied: Bool { sentToTerminal || !succeeded.isEmpty }
}

/// Copies text to the user's clipboard.
///
/// OSC 52 (`ESC ] 52 ; c ; BASE64 BEL`) asks the terminal itself to set its clipboard, so it works over SSH. Under
/// tmux (`TMUX` set) and GNU screen (`STY` set, or `TERM` starting with `screen` outside tmux) the plain sequence is
/// followed by the same sequence wrapped for the multiplexer's passthrough, so it works whichever way the
/// multiplexer is set up (tmux `set-clipboard on`, or `allow-passthrough on`); a terminal that receives both sets the
/// same text twice. Local tools get the text on stdin, never in their arguments.
public struct Clipboard: Sendable {
    public var method: ClipboardMethod
    public var environment: [String: String]
    /// How long a local tool may take before it is stopped.
    public var toolTimeout: Duration

    public init(
        method: ClipboardMethod = .auto,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        toolTimeout: Duration = .seconds(2)
    ) {
        self.method = method
        self.environment = environment
        self.toolTimeout = toolTimeout
    }

    /// The most text OSC 52 carries (many terminals refuse longer sequences).
    public static let maximumOSC52Bytes = 74_994

    // MARK: OSC 52

    /// Whether the method sends OSC 52.
    public var usesTerminal: Bool { method == .auto || method == .osc52 }

    /// The bytes to write to the terminal for `text`, or nil when the method does not use OSC 52 or the text is
    /// too long for it.
    public func terminalSequence(for text: String) -> [UInt8]? {
        guard usesTerminal else { return nil }
        return Clipboard.osc52Sequence(for: text, environment: environment)
    }

    /// The OSC 52 bytes for `text` as this environment needs them (plain, then wrapped for tmux or screen).
    public static func osc52Sequence(for text: String, environment: [String: String]) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumOSC52Bytes else { return nil }
        let plain = osc52(bytes)
        switch Multiplexer.detect(environment) {
        case .none: return plain
        case .tmux: return plain + wrapForTmux(plain)
        case .screen: return plain + wrapForScreen(plain)
        }
    }

    /// `ESC ] 52 ; c ; BASE64 BEL`.
    public static func osc52(_ bytes: [UInt8]) -> [UInt8] {
        let encoded = Data(bytes).base64EncodedString()
        return [0x1B] + Array("]52;c;".utf8) + Array(encoded.utf8) + [0x07]
    }

    /// tmux passthrough: `ESC P tmux; <sequence with each ESC doubled> ESC \`.
    public static func wrapForTmux(_ sequence: [UInt8]) -> [UInt8] {
        var result: [UInt8] = [0x1B] + Array("Ptmux;".utf8)
        for byte in sequence {
            if byte == 0x1B { result.append(0x1B) }
            result.append(byte)
        }
        result += [0x1B, 0x5C]
        return result
    }

    /// GNU screen passthrough: the sequence cut into pieces of at most 76 bytes (screen limits a DCS string), each
    /// as `ESC P <piece> ESC \`.
    public static func wrapForScreen(_ sequence: [UInt8], pieceLength: Int = 76) -> [UInt8] {
        var result: [UInt8] = []
        var start = 0
        while start < sequence.count {
            let end = min(sequence.count, start + pieceLength)
            result += [0x1B, 0x50] + sequence[start..<end] + [0x1B, 0x5C]
            start = end
        }
        return result
    }

    enum Multiplexer: Equatable {
        case none, tmux, screen

        static func detect(_ environment: [String: String]) -> Multiplexer {
            if let tmux = environment["TMUX"], !tmux.isEmpty { return .tmux }
            if let sty = environment["STY"], !sty.isEmpty { return .screen }
            let term = environment["TERM"] ?? ""
            if term.hasPrefix("screen") && !term.hasPrefix("tmux") { return .screen }
            return .none
        }
    }

    // MARK: Local tools

    /// The local tools the method and the environment call for, in order.
    public var localTools: [ClipboardTool] {
        let wayland = !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
        let x11 = !(environment["DISPLAY"] ?? "").isEmpty
        switch method {
        case .auto:
            var tools: [ClipboardTool] = []
            if wayland { tools.append(.wlCopy) }
            if x11 { tools.append(.xclip) }
            return tools
        case .wlCopy: return [.wlCopy]
        case .xclip: return [.xclip]
        case .osc52, .none: return []
        }
    }

    /// Where `name` is on `PATH`, or nil.
    public func executablePath(_ name: String) -> String? {
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    // MARK: Copying

    /// Copies `text`: writes the OSC 52 sequence to `terminal` (call this after the screen's `present()`), then runs
    /// the local tools without blocking the caller's thread.
    public func copy(_ text: String, terminal: (any RawTerminalOutput)?) async -> ClipboardOutcome {
        var outcome = ClipboardOutcome()
        if let terminal, let sequence = terminalSequence(for: text) {
            terminal.writeRaw(sequence)
            outcome.sentToTerminal = true
        }
        let local = await copyWithLocalTools(text)
        outcome.succeeded = local.succeeded
        outcome.failed = local.failed
        return outcome
    }

    /// Runs the local tools for `text` (each with the text on stdin); the terminal is not touched.
    public func copyWithLocalTools(_ text: String) async -> ClipboardOutcome {
        var outcome = ClipboardOutcome()
        for tool in localTools {
            if await run(tool, input: Data(text.utf8)) {
                outcome.succeeded.append(tool.name)
            } else {
                outcome.failed.append(tool.name)
            }
        }
        return outcome
    }

    /// A tool that exits without reading its stdin must make our write fail with EPIPE, not end the process with
    /// SIGPIPE. Done once, on first use (CursesScreen does the same when it starts).
    private static let brokenPipesIgnored: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    static func ignoreBrokenPipes() {
        _ = brokenPipesIgnored
    }

    /// Runs `tool` with `input` on stdin; true when it exits with status 0 within the timeout.
    func run(_ tool: ClipboardTool, input: Data) async -> Bool {
        guard let path = executablePath(tool.name) else { return false }
        Clipboard.ignoreBrokenPipes()
        guard
            let pid = Clipboard.spawn(
                path: path, arguments: tool.arguments, environment: environment,
                input: input)
        else { return false }
        let finished = AsyncStream<Int32>.makeStream()
        let waiter = SystemThread.start(name: "ykterm.clip") {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            // Exited normally: the status byte; killed by a signal: not a success.
            let exited = status & 0x7F == 0
            finished.continuation.yield(exited ? (status >> 8) & 0xFF : -1)
            finished.continuation.finish()
        }
        if !waiter {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            return false
        }
        let timeout = toolTimeout
        let timer = Task {
            try await Task.sleep(for: timeout)
            // SIGKILL: the tool has had its time.
            kill(pid, SIGKILL)
        }
        var status: Int32 = -1
        for await value in finished.stream { status = value }
        timer.cancel()
        return status == 0
    }

    /// Starts `path` with `arguments` and `environment`, `input` on its stdin and /dev/null for stdout and stderr,
    /// with default signal handling and nothing else of ours open (the tools may stay in the background serving
    /// the selection: they must not hold the terminal or the key's connections). Returns its process ID.
    static func spawn(path: String, arguments: [String], environment: [String: String], input: Data) -> pid_t? {
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { return nil }
        let (readEnd, writeEnd) = (pipeFDs[0], pipeFDs[1])
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        defer { close(readEnd) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, readEnd, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        closeFrom(3, actions: &actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid = pid_t()
        guard posix_spawn(&pid, path, &actions, &attributes, argv, envp) == 0 else {
            close(writeEnd)
            return nil
        }
        // When the tool closes its stdin early (EPIPE), its exit status tells the rest.
        input.withUnsafeBytes { _ = StandardStream.writeAll($0, to: writeEnd) }
        close(writeEnd)
        return pid
    }

    /// Adds "close every descriptor from `first` on" to the spawn (glibc's posix_spawn_file_actions_addclosefrom_np,
    /// looked up by name: Swift's Glibc module does not declare it). Without it, descriptors above `first` that are
    /// open now are closed one by one.
    private static func closeFrom(_ first: Int32, actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, first)
            return
        }
        for fd in first..<Int32(min(4096, sysconf(Int32(_SC_OPEN_MAX)))) where fcntl(fd, F_GETFD) >= 0 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }
}
