import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit
import Synchronization

/// `ykterm remote`: ykterm on another machine, over SSH, with the key plugged in here. OpenSSH forwards this
/// machine's pcscd socket to a private path on the server (a 0700 directory made for the session and removed at
/// its end), and the server's ykterm is pointed at it (`PCSCLITE_CSOCK_NAME`): the key's smart-card applications
/// (OATH, PIV, OTP over CCID, Management) work there as if it were plugged in there. FIDO2 and the HID interfaces
/// stay here: a hidraw node cannot be forwarded this way.
///
/// One SSH connection carries it all (a control master: the user authenticates once): a first command makes the
/// directory and asks the server's pcsc-lite client which protocol version it speaks, which this machine's pcscd
/// must serve; then the socket is forwarded, ykterm runs, and the directory and the connection are removed.
struct RemoteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Run ykterm on a server over SSH, with the key plugged in here.",
        usage: "ykterm remote [--remote-command <PATH>] [<ssh-options> ...] <host> [-- <ykterm-command> ...]",
        discussion: """
            ssh connects to HOST (the options before HOST go to ssh: -p, -i, -J, -o ...), forwards this \
            machine's pcscd socket to a 0700 directory on the server made for the session, and runs ykterm \
            there with the forwarded socket (the TUI without a COMMAND, else the command after --). The \
            server's ykterm then uses the key on this desk: its smart-card applications (OATH, PIV, OTP over \
            CCID, Management), while connected. FIDO2 stays on this machine: HID cannot be forwarded. PINs and \
            passwords are typed on the server's prompts, through the SSH session. The directory and the \
            connection are removed at the end. The server needs ykterm (--remote-command names it) and a \
            pcsc-lite client that speaks a protocol version this pcscd serves; both are checked first.
            """)

    @Option(
        name: .customLong("remote-command"),
        help: ArgumentHelp("ykterm on the server (default: ykterm on its PATH).", valueName: "PATH"))
    var remoteCommand = "ykterm"

    /// Run on the server by `ykterm remote`: prints the protocol version its pcsc-lite client speaks.
    @Flag(name: .customLong("print-client-protocol"), help: .hidden)
    var printClientProtocol = false

    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("ssh's options, the host, then -- and the ykterm command to run there.", valueName: "args"))
    var arguments: [String] = []

    /// ssh has single-dash options only: a long option before the host is a mistake (or a secret given where none
    /// belongs), refused before anything runs, and named without the value after its "=".
    func validate() throws {
        let ssh = arguments.prefix { $0 != "--" }
        if let long = ssh.first(where: { $0.hasPrefix("--") }) {
            let name = long.split(separator: "=", maxSplits: 1).first.map(String.init) ?? long
            throw ValidationError(words("cli.remote.unknownOption", ["option": name]))
        }
    }

    func run() async throws {
        if printClientProtocol {
            try Self.printOwnClientProtocol()
            return
        }
        let (sshOptions, host, command) = try Self.split(arguments)
        let session = try RemoteSession(sshOptions: sshOptions, host: host, remoteCommand: remoteCommand)
        let status = try session.run(command)
        if status != 0 { throw ExitCode(status) }
    }

    /// The ssh options, the host (the last word before `--`) and the ykterm command after `--`.
    static func split(_ arguments: [String]) throws -> (options: [String], host: String, command: [String]) {
        let dashes = arguments.firstIndex(of: "--")
        let ssh = Array(arguments[..<(dashes ?? arguments.endIndex)])
        let command = dashes.map { Array(arguments[arguments.index(after: $0)...]) } ?? []
        guard let host = ssh.last, !host.hasPrefix("-") else {
            throw YktermError.usage(words("cli.remote.noHost"))
        }
        return (Array(ssh.dropLast()), host, command)
    }

    /// The version this ykterm's pcsc-lite client speaks, found with a stand-in pcscd in a private directory.
    static func printOwnClientProtocol() throws {
        var template = Array(((ProcessEnvironment.value("TMPDIR") ?? "/tmp") + "/ykterm-probe.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw YktermError.failed(words("cli.remote.probeFailed", ["detail": String(cString: strerror(errno))]))
        }
        let directory = String(cString: made)
        defer { rmdir(directory) }
        do {
            out(String(describing: try PCSCProtocolVersion.ofClientLibrary(directory: directory)))
        } catch {
            throw YktermError.failed(words("cli.remote.probeFailed", ["detail": "\(error)"]))
        }
    }
}

/// One `ykterm remote` session: the SSH control master, the server's directory, the forward, and their removal.
struct RemoteSession {
    let sshOptions: [String]
    let host: String
    let remoteCommand: String
    /// This machine's directory for the control socket (0700), removed at the end.
    let controlDirectory: String
    var controlPath: String { controlDirectory + "/control" }

    init(sshOptions: [String], host: String, remoteCommand: String) throws {
        self.sshOptions = sshOptions
        self.host = host
        self.remoteCommand = remoteCommand
        // ssh makes the control socket under a longer name first, and a UNIX socket's path has at most 107
        // bytes: a long TMPDIR gives way to /tmp.
        var base = ProcessEnvironment.value("TMPDIR") ?? "/tmp"
        if base.isEmpty || base.utf8.count > 50 { base = "/tmp" }
        var template = Array((base + "/ykterm-remote.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw YktermError.failed(words("cli.remote.localDirectory", ["detail": String(cString: strerror(errno))]))
        }
        controlDirectory = String(cString: made)
    }

    /// ssh with the user's options and the control socket, then `arguments`.
    private func ssh(_ arguments: [String]) -> [String] {
        ["ssh"] + sshOptions + ["-o", "ControlPath=" + controlPath] + arguments
    }

    /// Runs the session; the remote ykterm's exit status.
    func run(_ command: [String]) throws -> Int32 {
        defer { removeControlDirectory() }
        let local = PCSCProtocolVersion.defaultSocket
        // Authenticate once: a control master in the background for the session's other commands.
        let master = ChildProcess.run(
            ssh(["-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-f", "-N", host]))
        guard master.status == 0 else {
            throw YktermError.failed(words("cli.remote.sshFailed", ["host": host, "status": String(master.status)]))
        }
        defer { _ = ChildProcess.run(ssh(["-O", "exit", host]), quiet: true) }
        // The server's directory, and the protocol version of its ykterm's pcsc-lite client.
        let prepare =
            #"umask 077 && t=${TMPDIR:-/tmp} && if [ ${#t} -gt 60 ]; then t=/tmp; fi && "#
            + #"d=$(mktemp -d "$t/ykterm-remote.XXXXXXXX") && echo "$d" && exec "#
            + Shell.quoted(remoteCommand) + " remote --print-client-protocol"
        let prepared = ChildProcess.run(ssh([host, Shell.script(prepare)]), captureOutput: true)
        let lines = prepared.output.split(separator: "\n").map(String.init)
        guard let directory = lines.first, directory.hasPrefix("/") else {
            throw YktermError.failed(words("cli.remote.noDirectory", ["host": host]))
        }
        defer { _ = ChildProcess.run(ssh([host, Shell.script("rm -rf " + Shell.quoted(directory))]), quiet: true) }
        guard prepared.status == 0, lines.count >= 2, let client = Self.version(lines[1]) else {
            // 127: the shell found no such command.
            let key = prepared.status == 127 ? "cli.remote.noYkterm" : "cli.remote.probeRemoteFailed"
            throw YktermError.failed(
                words(key, ["host": host, "command": remoteCommand, "status": String(prepared.status)]))
        }
        try Self.checkLocalPCSCD(local, serves: client, host: host)
        let socket = directory + "/pcscd.comm"
        let forward = ChildProcess.run(ssh(["-O", "forward", "-R", socket + ":" + local, host]))
        guard forward.status == 0 else {
            throw YktermError.failed(words("cli.remote.forwardFailed", ["host": host]))
        }
        warn(words("cli.remote.notice", ["host": host]))
        let run =
            "PCSCLITE_CSOCK_NAME=" + Shell.quoted(socket) + " exec "
            + ([remoteCommand] + command).map(Shell.quoted).joined(separator: " ")
        let terminal = isatty(STDIN_FILENO) == 1 ? ["-t"] : ["-T"]
        return ChildProcess.run(ssh(terminal + [host, Shell.script(run)]), forwardingSignals: true).status
    }

    /// The control master removes its socket as it exits, which may be after `ssh -O exit` has returned: what
    /// is still in the directory (the socket, or the name ssh made it under first) is removed here, then the
    /// directory.
    private func removeControlDirectory() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: controlDirectory)) ?? [] {
            unlink(controlDirectory + "/" + name)
        }
        rmdir(controlDirectory)
    }

    /// "4.4" as a version.
    static func version(_ text: String) -> PCSCProtocolVersion? {
        let parts = text.split(separator: ".")
        guard parts.count == 2, let major = Int32(parts[0]), let minor = Int32(parts[1]) else { return nil }
        return PCSCProtocolVersion(major: major, minor: minor)
    }

    /// This machine's pcscd must serve the server's pcsc-lite client, which talks to it through the forward.
    static func checkLocalPCSCD(_ socket: String, serves client: PCSCProtocolVersion, host: String) throws {
        let answer: (server: PCSCProtocolVersion, serves: Bool)
        do {
            answer = try PCSCProtocolVersion.ask(socket: socket, as: client)
        } catch .closed {
            throw YktermError(status: ExitStatus.noKey, message: explained(SmartCardError.accessDenied).1)
        } catch {
            throw YktermError(status: ExitStatus.noKey, message: explained(SmartCardError.serviceUnavailable).1)
        }
        guard answer.serves else {
            throw YktermError.failed(
                words(
                    "cli.remote.protocolMismatch",
                    ["host": host, "client": client.description, "server": answer.server.description]))
        }
    }
}

/// Shell words for the server's login shell, which ssh hands the command to: everything runs under `sh -c`, so
/// that a fish or csh login shell sees one single-quoted word.
enum Shell {
    /// `word` as one sh word: in single quotes, each single quote closed, escaped and opened again.
    static func quoted(_ word: String) -> String {
        "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: #"'\''"#) + "'"
    }

    /// `exec sh -c '<script>'`.
    static func script(_ script: String) -> String {
        "exec sh -c " + quoted(script)
    }
}

/// A program run to its end: its exit status, and what it wrote to standard output when asked for.
enum ChildProcess {
    /// The child running now, for the signal handlers that pass SIGTERM and SIGHUP on to it.
    private static let running = Atomic<Int32>(0)

    struct Result {
        var status: Int32
        var output: String
    }

    /// Runs `argv` (looked up on PATH) with this process's standard streams, its standard output captured when
    /// `captureOutput`, its standard error sent away when `quiet`. With `forwardingSignals`, ykterm waits through
    /// the terminal's SIGINT and SIGQUIT (the child, in the same process group, gets them itself) and passes
    /// SIGTERM and SIGHUP on to the child, so that the session always ends through the clean-up after it.
    static func run(
        _ argv: [String], captureOutput: Bool = false, quiet: Bool = false, forwardingSignals: Bool = false
    ) -> Result {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeEnds: [Int32] = [-1, -1]
        if captureOutput {
            guard pipe(&pipeEnds) == 0 else { return Result(status: 127, output: "") }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
            posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
            posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        }
        if quiet {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            if !captureOutput { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with the default action for the signals ykterm handles or ignores.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let spawned = posix_spawnp(&pid, argv[0], &actions, &attributes, cArguments, environ)
        if captureOutput { close(pipeEnds[1]) }
        guard spawned == 0 else {
            if captureOutput { close(pipeEnds[0]) }
            return Result(status: 127, output: "")
        }
        var previous: [Int32: sighandler_t?] = [:]
        if forwardingSignals {
            running.store(pid, ordering: .relaxed)
            for signal in [SIGINT, SIGQUIT] { previous[signal] = Glibc.signal(signal, SIG_IGN) }
            for signal in [SIGTERM, SIGHUP] {
                previous[signal] = Glibc.signal(signal) { received in
                    let child = ChildProcess.running.load(ordering: .relaxed)
                    if child > 0 { kill(child, received) }
                }
            }
        }
        var output = [UInt8]()
        if captureOutput {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                output += buffer[..<n]
            }
            close(pipeEnds[0])
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if forwardingSignals {
            running.store(0, ordering: .relaxed)
            for (signal, handler) in previous { Glibc.signal(signal, handler ?? SIG_DFL) }
        }
        // Exited: its status; killed by a signal: 128 and the signal, as a shell says.
        let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Result(status: code, output: String(decoding: output, as: UTF8.self))
    }
}
