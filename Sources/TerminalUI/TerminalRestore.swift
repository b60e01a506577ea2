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
        TerminalRestore.chain(signal)
    }

    private static let interruptHandler: @convention(c) (Int32) -> Void = { signal in
        let asKey = TerminalRestore.interruptAsKey.load(ordering: .sequentiallyConsistent)
        if asKey && TerminalRestore.active.load(ordering: .sequentiallyConsistent)
            && !TerminalRestore.interruptPending.exchange(true, ordering: .sequentiallyConsistent) {
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
    }

    private static func wake() {
        let fd = wakeFD.load(ordering: .sequentiallyConsistent)
        if fd >= 0 {
            let saved = errno
            Wakeup.signal(writeFD: fd)
            errno = saved
        }
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
        if !atexitRegistered.exchange(true, ordering: .sequentiallyConsistent) {
            atexit(exitHandler)
        }
        // Writes to a closed terminal or to a clipboard tool that exited must fail with EPIPE, not end the process.
        signal(SIGPIPE, SIG_IGN)
        installedSignals.withLock { installed in
            guard installed.isEmpty else { return }
            func install(_ number: Int32, _ handler: @convention(c) (Int32) -> Void, respectIgnored: Bool,
                         restart: Bool) {
                var previous = sigaction()
                guard sigaction(number, nil, &previous) == 0 else { return }
                if respectIgnored && unsafeBitCast(previous.__sigaction_handler.sa_handler, to: Int.self)
                    == unsafeBitCast(SIG_IGN, to: Int.self) {
                    return
                }
                previousActions[Int(number)] = previous
                var action = sigaction()
                action.__sigaction_handler.sa_handler = handler
                sigemptyset(&action.sa_mask)
                action.sa_flags = restart ? Int32(SA_RESTART) : 0
                if sigaction(number, &action, nil) == 0 { installed.append(number) }
            }
            for number in terminatingSignals {
                install(number, terminatingHandler, respectIgnored: true, restart: true)
            }
            install(SIGINT, interruptHandler, respectIgnored: true, restart: true)
            for number in fatalSignals {
                install(number, terminatingHandler, respectIgnored: false, restart: false)
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
