import CLinux
import Glibc
import KeyKit
import Synchronization

/// What signal handlers need to give the terminal back to the shell, and the flags they raise for the app loop.
///
/// A signal handler may only make async-signal-safe calls, so it cannot call `endwin`. Instead, while the screen is
/// active, this holds the terminal's settings from before ncurses took it (restored with `tcsetattr`) and the escape
/// sequences `endwin` would send (reset attributes, show the cursor, keypad off, leave the alternate screen,
/// bracketed paste off), written with `write`. Everything is set up on the main thread before the handlers are
/// installed and torn down after they are removed.
enum TerminalRestore {
    /// Whether the terminal is in curses mode and must be restored.
    static let active = Atomic<Bool>(false)
    /// The terminal's descriptor, or -1.
    static let terminalFD = Atomic<Int32>(-1)
    /// The write end of the screen's wakeup pipe (signals wake the app loop's poll), or -1.
    static let wakeFD = Atomic<Int32>(-1)
    /// SIGWINCH arrived and the size has not been read yet.
    static let resizePending = Atomic<Bool>(false)
    /// SIGINT (Ctrl-C) arrived and the app has not seen it yet.
    static let interruptPending = Atomic<Bool>(false)
    /// Whether SIGINT is delivered to the app as a Ctrl-C key (a second one before the app reads the first restores
    /// the terminal and ends the process); otherwise SIGINT restores and ends at once.
    static let interruptAsKey = Atomic<Bool>(true)
    /// Ctrl-Z (SIGTSTP) arrived: the app loop gives the terminal back and stops (`CursesScreen.suspend`), so that
    /// nothing is drawn while the process is stopped or in the background.
    static let suspendPending = Atomic<Bool>(false)
    /// Standard error as it was before the screen took the terminal, or -1 when it was not redirected.
    static let originalStderr = Atomic<Int32>(-1)
    /// The in-memory file standard error goes to while the screen is active (it was the terminal), or -1.
    static let capturedStderr = Atomic<Int32>(-1)
    /// Bytes of `sequence` in use.
    static let sequenceLength = Atomic<Int>(0)
    /// Whether `savedTermios` holds the settings to restore.
    static let hasTermios = Atomic<Bool>(false)

    static let sequenceCapacity = 512

    // The three buffers below are allocated once and never freed. They are written only on the main thread while
    // the handlers that read them are not installed (or while `active` is false, which the handlers check first),
    // so a handler never sees a partial write: that ordering, not the type system, makes them safe to share.
    /// The restore escape sequence.
    nonisolated(unsafe) static let sequence = UnsafeMutablePointer<UInt8>.allocate(capacity: sequenceCapacity)
    /// The terminal settings from before curses mode.
    nonisolated(unsafe) static let savedTermios: UnsafeMutablePointer<termios> = {
        let pointer = UnsafeMutablePointer<termios>.allocate(capacity: 1)
        pointer.initialize(to: termios())
        return pointer
    }()
    /// The signal actions in place before ours, by signal number, to chain to and to put back.
    nonisolated(unsafe) static let previousActions: UnsafeMutablePointer<sigaction> = {
        let pointer = UnsafeMutablePointer<sigaction>.allocate(capacity: Int(signalSlots))
        pointer.initialize(repeating: sigaction(), count: Int(signalSlots))
        return pointer
    }()
    static let signalSlots: Int32 = 65

    /// Room for a crash report's numbers and what standard error held.
    static let reportCapacity = 8192
    nonisolated(unsafe) static let reportBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: reportCapacity)

    /// Signals that end the process: restore, then let the previous action (default: terminate) run.
    static let terminatingSignals: [Int32] = [SIGTERM, SIGHUP, SIGQUIT]
    /// Crash signals (Swift runtime traps raise SIGILL or SIGTRAP): restore, then chain to the previous handler
    /// (the Swift backtracer, when enabled) so the crash report appears on a usable terminal.
    static let fatalSignals: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP]

    private static let installedSignals = Mutex<[Int32]>([])
    private static let atexitRegistered = Atomic<Bool>(false)

    /// Sets what a restore writes. Call with the screen not yet active.
    static func prepare(terminalFD fd: Int32, sequence bytes: [UInt8], termios saved: termios?) {
        precondition(!active.load(ordering: .sequentiallyConsistent))
        let count = min(bytes.count, sequenceCapacity)
        for index in 0..<count { sequence[index] = bytes[index] }
        sequenceLength.store(count, ordering: .sequentiallyConsistent)
        if let saved {
            savedTermios.pointee = saved
            hasTermios.store(true, ordering: .sequentiallyConsistent)
        } else {
            hasTermios.store(false, ordering: .sequentiallyConsistent)
        }
        terminalFD.store(fd, ordering: .sequentiallyConsistent)
    }

    /// Gives the terminal back: async-signal-safe, and does something only the first time after activation.
    static func restore() {
        guard active.exchange(false, ordering: .sequentiallyConsistent) else { return }
        let fd = terminalFD.load(ordering: .sequentiallyConsistent)
        guard fd >= 0 else { return }
        // From the background (started with `&`, or after Ctrl-Z and `bg`) the write and tcsetattr would stop the
        // process with SIGTTOU before the terminal is given back, and a SIGTERM then left it raw. With SIGTTOU
        // ignored for the moment, both go through (sigaction, write and tcsetattr are async-signal-safe).
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        sigemptyset(&ignore.sa_mask)
        var previous = sigaction()
        let ignored = sigaction(SIGTTOU, &ignore, &previous) == 0
        let length = sequenceLength.load(ordering: .sequentiallyConsistent)
        StandardStream.writeAll(UnsafeRawBufferPointer(start: sequence, count: length), to: fd)
        if hasTermios.load(ordering: .sequentiallyConsistent) {
            _ = tcsetattr(fd, TCSADRAIN, savedTermios)
        }
        if ignored { _ = sigaction(SIGTTOU, &previous, nil) }
    }

    // MARK: Handlers

    private static let terminatingHandler: @convention(c) (Int32) -> Void = { signal in
        TerminalRestore.restore()
        TerminalRestore.releaseStderr()
        TerminalRestore.chain(signal)
    }

    /// A crash: the terminal back to the shell first, then a report on standard error (the signal, the thread,
    /// and what the runtime or a C library wrote there while the screen was up), then the previous handler.
    private static let fatalHandler: @convention(c) (Int32) -> Void = { signal in
        TerminalRestore.restore()
        TerminalRestore.reportFatal(signal)
        TerminalRestore.releaseStderr()
        TerminalRestore.chain(signal)
    }

    /// Ctrl-Z: the loop gives the terminal back and stops the process when it reads the flag. When the loop has
    /// not taken the previous one (or the screen is not up), the process stops here, as it would by default.
    private static let suspendHandler: @convention(c) (Int32) -> Void = { _ in
        if TerminalRestore.active.load(ordering: .sequentiallyConsistent)
            && !TerminalRestore.suspendPending.exchange(true, ordering: .sequentiallyConsistent)
        {
            TerminalRestore.wake()
            return
        }
        let saved = errno
        TerminalRestore.restore()
        TerminalRestore.stopProcess()
        errno = saved
    }

    private static let interruptHandler: @convention(c) (Int32) -> Void = { signal in
        let asKey = TerminalRestore.interruptAsKey.load(ordering: .sequentiallyConsistent)
        if asKey && TerminalRestore.active.load(ordering: .sequentiallyConsistent)
            && !TerminalRestore.interruptPending.exchange(true, ordering: .sequentiallyConsistent)
        {
            TerminalRestore.wake()
            return
        }
        // Not taken as a key, or the app has not read the previous one (it may be stuck): end now.
        TerminalRestore.restore()
        TerminalRestore.chain(signal)
    }

    private static let resizeHandler: @convention(c) (Int32) -> Void = { _ in
        TerminalRestore.resizePending.store(true, ordering: .sequentiallyConsistent)
        TerminalRestore.wake()
    }

    private static let exitHandler: @convention(c) () -> Void = {
        TerminalRestore.restore()
        TerminalRestore.releaseStderr()
    }

    private static func wake() {
        let fd = wakeFD.load(ordering: .sequentiallyConsistent)
        if fd >= 0 {
            let saved = errno
            Wakeup.signal(writeFD: fd)
            errno = saved
        }
    }

    /// Stops the process as SIGTSTP's default action does and returns once it is continued, with this module's
    /// handler in place again. Async-signal-safe. The signal goes to the calling thread (`raise`), unblocked, so the
    /// stop happens before this returns.
    static func stopProcess() {
        var standard = sigaction()
        standard.__sigaction_handler.sa_handler = SIG_DFL
        sigemptyset(&standard.sa_mask)
        var ours = sigaction()
        guard sigaction(SIGTSTP, &standard, &ours) == 0 else { return }
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGTSTP)
        var previousMask = sigset_t()
        _ = pthread_sigmask(SIG_UNBLOCK, &unblock, &previousMask)
        _ = raise(SIGTSTP)
        _ = pthread_sigmask(SIG_SETMASK, &previousMask, nil)
        _ = sigaction(SIGTSTP, &ours, nil)
    }

    // MARK: Standard error while the screen is up

    /// While the screen is up, standard error — when it is the same terminal — goes to an in-memory file: a line
    /// written there (a warning, a runtime's last words before `abort`) would be drawn over by the next frame and
    /// lost with the alternate screen. `releaseStderr` puts the terminal back and shows what was written.
    static func captureStderr(terminal fd: Int32) {
        guard originalStderr.load(ordering: .sequentiallyConsistent) < 0, isatty(STDERR_FILENO) == 1 else { return }
        // The screen's terminal is /dev/tty (another device number than the pty it stands for) or standard output:
        // standard error is the same terminal when it is this session's controlling one, or the same device.
        var errorStatus = stat(), terminalStatus = stat()
        let sameDevice =
            fstat(STDERR_FILENO, &errorStatus) == 0 && fstat(fd, &terminalStatus) == 0
            && errorStatus.st_rdev == terminalStatus.st_rdev
        let session = tcgetsid(STDERR_FILENO)
        guard sameDevice || (session != -1 && session == getsid(0)) else { return }
        let memory = ykterm_memory_file("ykterm-stderr")
        guard memory >= 0 else { return }
        _ = fcntl(memory, F_SETFL, fcntl(memory, F_GETFL) | O_APPEND)
        let original = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)
        guard original >= 0, dup2(memory, STDERR_FILENO) >= 0 else {
            close(memory)
            if original >= 0 { close(original) }
            return
        }
        capturedStderr.store(memory, ordering: .sequentiallyConsistent)
        originalStderr.store(original, ordering: .sequentiallyConsistent)
    }

    /// Puts standard error back on the terminal and writes there what was written to it meanwhile (the last
    /// `reportCapacity` bytes). Async-signal-safe; does something only the first time after `captureStderr`.
    static func releaseStderr() {
        let original = originalStderr.exchange(-1, ordering: .sequentiallyConsistent)
        let memory = capturedStderr.exchange(-1, ordering: .sequentiallyConsistent)
        guard original >= 0, memory >= 0 else { return }
        _ = dup2(original, STDERR_FILENO)
        var status = stat()
        if fstat(memory, &status) == 0, status.st_size > 0 {
            let length = min(Int(status.st_size), reportCapacity)
            let count = pread(memory, reportBuffer, length, off_t(Int(status.st_size) - length))
            if count > 0 {
                if length < Int(status.st_size) { writeStatic("...\n", to: STDERR_FILENO) }
                StandardStream.writeAll(UnsafeRawBufferPointer(start: reportBuffer, count: count), to: STDERR_FILENO)
            }
        }
        close(memory)
        close(original)
    }

    /// "ykterm: fatal signal SIGABRT (6) in thread 1234 (name)" on standard error (the terminal's when it was
    /// captured). Allocates nothing.
    static func reportFatal(_ signal: Int32) {
        let original = originalStderr.load(ordering: .sequentiallyConsistent)
        let fd = original >= 0 ? original : STDERR_FILENO
        writeStatic("\nykterm: fatal signal ", to: fd)
        writeStatic(signalName(signal), to: fd)
        writeStatic(" (", to: fd)
        writeNumber(Int(signal), to: fd)
        writeStatic(") in thread ", to: fd)
        writeNumber(ykterm_thread_id(), to: fd)
        // PR_GET_NAME fills at most 16 bytes, the last a zero.
        let name = reportBuffer
        for index in 0..<17 { name[index] = 0 }
        if name.withMemoryRebound(to: CChar.self, capacity: 16, { ykterm_thread_name($0) }) == 0, name[0] != 0 {
            writeStatic(" (", to: fd)
            StandardStream.writeAll(
                UnsafeRawBufferPointer(
                    start: name, count: strlen(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self))), to: fd)
            writeStatic(")", to: fd)
        }
        if original >= 0 && capturedStderr.load(ordering: .sequentiallyConsistent) >= 0 {
            writeStatic("; what it wrote to standard error while the screen was up follows\n", to: fd)
        } else {
            writeStatic("\n", to: fd)
        }
    }

    private static func signalName(_ signal: Int32) -> StaticString {
        switch signal {
        case SIGSEGV: "SIGSEGV"
        case SIGBUS: "SIGBUS"
        case SIGILL: "SIGILL"
        case SIGFPE: "SIGFPE"
        case SIGABRT: "SIGABRT"
        case SIGTRAP: "SIGTRAP"
        default: "signal"
        }
    }

    private static func writeStatic(_ text: StaticString, to fd: Int32) {
        StandardStream.writeAll(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount), to: fd)
    }

    /// A non-negative number in decimal, through the end of `reportBuffer`.
    private static func writeNumber(_ value: Int, to fd: Int32) {
        var remaining = max(0, value)
        let end = reportBuffer + reportCapacity
        var start = end
        repeat {
            start -= 1
            start.pointee = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
        } while remaining > 0
        StandardStream.writeAll(UnsafeRawBufferPointer(start: start, count: end - start), to: fd)
    }

    /// Puts back the action that was in place before ours and delivers `signal` to it. For a fault, the signal is
    /// blocked while this handler runs, so it is delivered when the handler returns (or the faulting instruction
    /// runs again and raises it anew).
    private static func chain(_ signal: Int32) {
        _ = sigaction(signal, previousActions + Int(signal), nil)
        _ = raise(signal)
    }

    /// Installs the handlers (before ncurses starts, so ncurses leaves these signals to us; it still handles
    /// SIGTSTP itself). A terminating signal the process ignores (`nohup`) stays ignored.
    static func installHandlers() {
        // Statics are created lazily; create every one a handler touches now, never inside a handler.
        _ = sequence
        _ = savedTermios
        _ = previousActions
        _ = active.load(ordering: .sequentiallyConsistent)
        _ = terminalFD.load(ordering: .sequentiallyConsistent)
        _ = wakeFD.load(ordering: .sequentiallyConsistent)
        _ = resizePending.load(ordering: .sequentiallyConsistent)
        _ = interruptPending.load(ordering: .sequentiallyConsistent)
        _ = interruptAsKey.load(ordering: .sequentiallyConsistent)
        _ = sequenceLength.load(ordering: .sequentiallyConsistent)
        _ = hasTermios.load(ordering: .sequentiallyConsistent)
        _ = suspendPending.load(ordering: .sequentiallyConsistent)
        _ = originalStderr.load(ordering: .sequentiallyConsistent)
        _ = capturedStderr.load(ordering: .sequentiallyConsistent)
        _ = reportBuffer
        if !atexitRegistered.exchange(true, ordering: .sequentiallyConsistent) {
            atexit(exitHandler)
        }
        // Writes to a closed terminal or to a clipboard tool that exited must fail with EPIPE, not end the process.
        signal(SIGPIPE, SIG_IGN)
        installedSignals.withLock { installed in
            guard installed.isEmpty else { return }
            func install(
                _ number: Int32, _ handler: @convention(c) (Int32) -> Void, respectIgnored: Bool,
                restart: Bool
            ) {
                var previous = sigaction()
                guard sigaction(number, nil, &previous) == 0 else { return }
                if respectIgnored
                    && unsafeBitCast(previous.__sigaction_handler.sa_handler, to: Int.self)
                        == unsafeBitCast(SIG_IGN, to: Int.self)
                {
                    return
                }
                previousActions[Int(number)] = previous
                var action = sigaction()
                action.__sigaction_handler.sa_handler = handler
                sigemptyset(&action.sa_mask)
                // A stop (the loop's SIGTTIN while it waits for the foreground, on another thread) must not
                // catch the process half-way through giving the terminal back and ending: held until the
                // handler is done, when the signal it raises again (lower numbered) ends the process first.
                if number != SIGWINCH && number != SIGTSTP {
                    for stop in [SIGTSTP, SIGTTIN, SIGTTOU] { sigaddset(&action.sa_mask, stop) }
                }
                action.sa_flags = restart ? Int32(SA_RESTART) : 0
                if sigaction(number, &action, nil) == 0 { installed.append(number) }
            }
            for number in terminatingSignals {
                install(number, terminatingHandler, respectIgnored: true, restart: true)
            }
            install(SIGINT, interruptHandler, respectIgnored: true, restart: true)
            // Ours rather than ncurses' (which it installs only when SIGTSTP is at its default): ncurses' handler
            // redraws from whichever thread took the signal, beside the app loop, and after `bg` a frame could
            // reach the shell's screen before the process stopped again.
            install(SIGTSTP, suspendHandler, respectIgnored: true, restart: true)
            for number in fatalSignals {
                install(number, fatalHandler, respectIgnored: false, restart: false)
            }
            // No SA_RESTART: SIGWINCH interrupts poll and blocking reads so the loop sees the resize at once.
            install(SIGWINCH, resizeHandler, respectIgnored: false, restart: false)
        }
    }

    /// Puts back the actions that were in place before `installHandlers`.
    static func removeHandlers() {
        installedSignals.withLock { installed in
            for number in installed {
                _ = sigaction(number, previousActions + Int(number), nil)
            }
            installed.removeAll()
        }
    }
}
