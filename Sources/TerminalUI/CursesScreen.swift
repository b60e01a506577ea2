import AuthenticatorModel
import CNCursesW
import FoundationEssentials
import Glibc
import KeyKit
import Synchronization

/// The terminal, through ncursesw.
///
/// Opens `/dev/tty` (or stdin/stdout when there is none) in cbreak, no-echo, keypad mode with the alternate screen.
/// Draws with wide-character cells; `present()` sends only the changed cells. `end()` restores the terminal; so do
/// SIGTERM, SIGHUP, SIGQUIT, crash signals and `exit()`, through async-signal-safe handlers. SIGWINCH is turned into
/// a `.resize` event by `readAvailable()`, and Ctrl-C into the key `.ctrl("c")` (see `CursesConfiguration`).
///
/// Use one at a time, from one thread.
public final class CursesScreen: InteractiveScreen, RawTerminalOutput {
    public private(set) var size: ScreenSize
    public let unicode: Bool
    /// Whether colours are in use (otherwise styles show as bold, reverse, underline and dim only).
    public let colors: Bool
    /// The descriptor keyboard input arrives on: poll it for reading.
    public let inputFD: Int32
    /// A descriptor that becomes readable when a signal (resize, Ctrl-C) needs the loop's attention: poll it too.
    public var signalFD: Int32 { signalWakeup.fd }
    /// The descriptors the app loop polls for this screen: `[inputFD, signalFD]`.
    public var pollDescriptors: [Int32] { [inputFD, signalFD] }
    /// Set when the terminal went away (hang-up): the app should quit.
    public private(set) var inputClosed = false
    /// Whether `end()` has run.
    public private(set) var ended = false

    private let outputFD: Int32
    private let inputFile: UnsafeMutablePointer<FILE>
    private let outputFile: UnsafeMutablePointer<FILE>
    private let screenPointer: OpaquePointer
    private let window: UnsafeMutablePointer<WINDOW>
    private let signalWakeup: Wakeup
    private let configuration: CursesConfiguration
    private var decoder = InputDecoder()
    private var cursor: CellPosition?
    private var cursorShown: Bool?
    private var pairs: [ColorKey: Int16] = [:]
    /// The frame being drawn since `erase()`, row by row, drawn into the window by `present()`; nil outside a
    /// frame (a draw then goes straight to the window).
    private var frame: [[DrawCall]]?
    /// Every cell of the window as the last frame left it, when that frame was drawn in full on a blank window
    /// and held no wide character: the next frame then writes only the cells that differ (each second the
    /// countdowns change a few cells of each account's row, of 3,000). Nil when the window holds anything else
    /// (before the first frame, after a resize or a draw outside a frame).
    private var shown: [[DrawnCell]]?

    /// One `draw`, kept until the frame is presented.
    private struct DrawCall {
        let text: String
        let column: Int
        let style: TextStyle
        let width: Int?
    }

    /// What one cell shows.
    private struct DrawnCell: Equatable {
        let cell: TextCell
        let attributes: attr_t
        let pair: Int16
    }
    private let maximumPairs: Int
    private let defaultColors: Bool
    /// What a signal-time restore writes (see `TerminalRestore.prepare`).
    private let restoreSequence: [UInt8]

    private struct ColorKey: Hashable {
        let foreground: TerminalColor?
        let background: TerminalColor?
    }

    private static let inUse = Atomic<Bool>(false)

    /// Started in the background (`ykterm &`): stops, as job control expects of a full-screen program, until the
    /// shell brings it to the foreground, so it never draws over the shell or takes its terminal modes (ncurses
    /// would otherwise go ahead, with SIGTTOU ignored). A SIGTERM while stopped ends it with the terminal
    /// untouched. False when it cannot stop (SIGTTIN ignored) and is still in the background.
    static func waitForForeground(_ fd: Int32) -> Bool {
        while true {
            let foreground = tcgetpgrp(fd)
            if foreground == -1 || foreground == getpgrp() { return true }
            var current = sigaction()
            guard sigaction(SIGTTIN, nil, &current) == 0,
                unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
                    != unsafeBitCast(SIG_IGN, to: Int.self)
            else { return false }
            _ = kill(0, SIGTTIN)
            // The kernel drops SIGTTIN for an orphaned process group: no busy loop then.
            if tcgetpgrp(fd) != getpgrp() { SystemThread.sleep(0.1) }
        }
    }

    public init(configuration: CursesConfiguration = CursesConfiguration()) throws {
        guard !CursesScreen.inUse.exchange(true, ordering: .sequentiallyConsistent) else {
            throw CursesScreenError.alreadyActive
        }
        var cleanup: [() -> Void] = [{ CursesScreen.inUse.store(false, ordering: .sequentiallyConsistent) }]
        func fail(_ error: CursesScreenError) -> CursesScreenError {
            for step in cleanup.reversed() { step() }
            return error
        }
        self.configuration = configuration
        let environment = configuration.environment ?? ProcessInfo.processInfo.environment
        let locale = TerminalLocale.setUp(environment: environment)

        // The terminal: /dev/tty, so the screen works with stdout redirected; stdin and stdout when there is none.
        var input = fopen("/dev/tty", "r")
        var output = input == nil ? nil : fopen("/dev/tty", "w")
        if input == nil || output == nil {
            if let input { fclose(input) }
            input = fdopen(dup(STDIN_FILENO), "r")
            output = fdopen(dup(STDOUT_FILENO), "w")
        }
        guard let input, let output else { throw fail(.notATerminal) }
        cleanup.append {
            fclose(input); fclose(output)
        }
        guard isatty(fileno(input)) == 1, isatty(fileno(output)) == 1 else { throw fail(.notATerminal) }
        guard Self.waitForForeground(fileno(output)) else { throw fail(.background) }
        inputFile = input
        outputFile = output
        inputFD = fileno(input)
        outputFD = fileno(output)

        do {
            signalWakeup = try Wakeup()
        } catch let error as SystemCallError {
            throw fail(.system(error))
        }

        // The shell's terminal settings, for the signal-time restore.
        var shellSettings = termios()
        let haveSettings = tcgetattr(outputFD, &shellSettings) == 0

        TerminalRestore.installHandlers()
        cleanup.append { TerminalRestore.removeHandlers() }
        TerminalRestore.interruptAsKey.store(configuration.interruptAsKey, ordering: .sequentiallyConsistent)

        guard let screen = newterm(nil, output, input) else {
            let name = getenv("TERM").map { String(cString: $0) } ?? ""
            throw fail(.unknownTerminal(name))
        }
        screenPointer = screen
        _ = set_term(screen)
        guard let window = newwin(0, 0, 0, 0) else {
            endwin()
            delscreen(screen)
            throw fail(.unknownTerminal(String(cString: termname())))
        }
        self.window = window
        size = ScreenSize(rows: Int(getmaxy(window)), columns: Int(getmaxx(window)))

        cbreak()
        noecho()
        nonl()
        intrflush(window, false)
        keypad(window, true)
        meta(window, true)
        nodelay(window, true)
        leaveok(window, true)
        // No typeahead check while updating: ncurses would otherwise poll the input and flush its buffer every
        // few lines (a write per line of countdown bars, several times a second); frames are small and quick.
        typeahead(-1)
        set_escdelay(Int32(configuration.escapeDelay))
        curs_set(0)

        unicode = locale.isUTF8

        let noColor = !(environment["NO_COLOR"] ?? "").isEmpty
        let wantColors: Bool
        switch configuration.colors {
        case .never: wantColors = false
        case .always: wantColors = true
        case .auto: wantColors = !noColor
        }
        if wantColors && has_colors() {
            start_color()
            colors = true
            defaultColors = use_default_colors() == OK
            maximumPairs = Int(max(0, min(tigetnum("pairs"), 32767)))
        } else {
            colors = false
            defaultColors = false
            maximumPairs = 0
        }

        // What a signal-time restore sends: what endwin would, plus bracketed paste off.
        var restore: [UInt8] = []
        if configuration.bracketedPaste { restore += Array("\u{1B}[?2004l".utf8) }
        for capability in ["sgr0", "cnorm", "rmkx"] { restore += CursesScreen.terminfoString(capability) }
        let leaveAlternate = CursesScreen.terminfoString("rmcup")
        restore += leaveAlternate.isEmpty ? Array("\r\n".utf8) : leaveAlternate
        restoreSequence = restore
        TerminalRestore.prepare(terminalFD: outputFD, sequence: restore, termios: haveSettings ? shellSettings : nil)
        TerminalRestore.wakeFD.store(signalWakeup.writeFD, ordering: .sequentiallyConsistent)
        TerminalRestore.resizePending.store(false, ordering: .sequentiallyConsistent)
        TerminalRestore.interruptPending.store(false, ordering: .sequentiallyConsistent)
        TerminalRestore.suspendPending.store(false, ordering: .sequentiallyConsistent)
        TerminalRestore.captureStderr(terminal: outputFD)
        TerminalRestore.active.store(true, ordering: .sequentiallyConsistent)

        werase(window)
        wnoutrefresh(window)
        doupdate()
        if configuration.bracketedPaste { writeRaw(Array("\u{1B}[?2004h".utf8)) }
    }

    deinit {
        end()
    }

    /// Gives the terminal back to the shell. Safe to call more than once.
    public func end() {
        guard !ended else { return }
        ended = true
        TerminalRestore.active.store(false, ordering: .sequentiallyConsistent)
        TerminalRestore.wakeFD.store(-1, ordering: .sequentiallyConsistent)
        if configuration.bracketedPaste { writeRaw(Array("\u{1B}[?2004l".utf8)) }
        curs_set(1)
        endwin()
        TerminalRestore.releaseStderr()
        TerminalRestore.removeHandlers()
        TerminalRestore.terminalFD.store(-1, ordering: .sequentiallyConsistent)
        delwin(window)
        delscreen(screenPointer)
        fclose(inputFile)
        fclose(outputFile)
        CursesScreen.inUse.store(false, ordering: .sequentiallyConsistent)
    }

    // MARK: Screen

    public func erase() {
        guard !ended else { return }
        frame = Array(repeating: [], count: size.rows)
    }

    public func draw(_ text: String, row: Int, column: Int, style: TextStyle, width: Int?) {
        guard !ended, row >= 0, row < size.rows else { return }
        if frame != nil {
            frame?[row].append(DrawCall(text: text, column: column, style: style, width: width))
        } else {
            shown = nil
            let (attributes, pair) = attributesAndPair(for: style)
            for placement in placements(text, column: column, width: width) {
                write(
                    DrawnCell(cell: placement.cell, attributes: attributes, pair: pair), row: row,
                    column: placement.column)
            }
        }
    }

    /// Draws the frame into the window: the cells that differ from the last frame's, or, when those are not
    /// known or the frame holds a wide character, every cell on a blank window.
    private func drawFrame(_ rows: [[DrawCall]]) {
        let blank = DrawnCell(cell: CellLayout.space, attributes: 0, pair: 0)
        var cells = Array(repeating: Array(repeating: blank, count: size.columns), count: size.rows)
        var wide = false
        for (row, calls) in rows.enumerated() {
            for call in calls {
                let (attributes, pair) = attributesAndPair(for: call.style)
                if CellWidth.isPrintableASCII(call.text) {
                    // One cell per byte, clipped as CellLayout clips it (most of a frame: padding, codes, names).
                    var limit = size.columns
                    if let width = call.width { limit = min(limit, call.column + max(0, width)) }
                    var column = call.column
                    for byte in call.text.utf8 {
                        guard column < limit else { break }
                        if column >= 0 {
                            cells[row][column] = DrawnCell(
                                cell: TextCell(ascii: byte), attributes: attributes, pair: pair)
                        }
                        column += 1
                    }
                    continue
                }
                for placement in placements(call.text, column: call.column, width: call.width) {
                    if placement.cell.width != 1 { wide = true }
                    cells[row][placement.column] = DrawnCell(cell: placement.cell, attributes: attributes, pair: pair)
                }
            }
        }
        if !wide, let shown, shown.count == cells.count, shown.first?.count == cells.first?.count {
            for row in cells.indices {
                for column in cells[row].indices where cells[row][column] != shown[row][column] {
                    write(cells[row][column], row: row, column: column)
                }
            }
        } else {
            // A wide character covers two cells and takes part of its neighbours when drawn over: drawn in full,
            // in the order of the calls, as ncurses resolves that.
            werase(window)
            for (row, calls) in rows.enumerated() {
                for call in calls {
                    let (attributes, pair) = attributesAndPair(for: call.style)
                    for placement in placements(call.text, column: call.column, width: call.width) {
                        write(
                            DrawnCell(cell: placement.cell, attributes: attributes, pair: pair), row: row,
                            column: placement.column)
                    }
                }
            }
        }
        shown = wide ? nil : cells
    }

    /// Where the cells of `text` land on this screen.
    private func placements(_ text: String, column: Int, width: Int?) -> [CellPlacement] {
        let unicode = self.unicode
        // Outside UTF-8, text from keys and files (account names) is folded as the string tables are.
        let text = unicode ? text : ASCIIFallback.fold(text)
        return CellLayout.place(
            text, column: column, width: width, screenColumns: size.columns,
            representable: { cell in
                if cell.isASCII { return true }
                // Outside a UTF-8 locale, show what the locale's character set has and `?` for the rest.
                guard !unicode else { return true }
                guard (CWidth.processLocaleWidth(cell.base.value) ?? -1) > 0 else { return false }
                return cell.combining.allSatisfy { CWidth.processLocaleWidth($0.value) == 0 }
            })
    }

    /// Writes one cell into the window.
    private func write(_ drawn: DrawnCell, row: Int, column: Int) {
        var cell = cchar_t()
        // The base character, up to four combining ones, and the terminating zero setcchar expects.
        var characters: (wchar_t, wchar_t, wchar_t, wchar_t, wchar_t, wchar_t) = (0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &characters) { raw in
            let wide = raw.bindMemory(to: wchar_t.self)
            wide[0] = wchar_t(bitPattern: drawn.cell.base.value)
            for index in 1..<wide.count {
                wide[index] =
                    index <= drawn.cell.combining.count ? wchar_t(bitPattern: drawn.cell.combining[index - 1].value) : 0
            }
            guard setcchar(&cell, wide.baseAddress, drawn.attributes, drawn.pair, nil) == OK else { return }
            // ERR at the bottom-right corner only means the cursor could not move on; the cell is written.
            _ = mvwadd_wch(window, Int32(row), Int32(column), &cell)
        }
    }

    public func setCursor(row: Int, column: Int) {
        cursor = CellPosition.on(size, row: row, column: column)
    }

    public func hideCursor() {
        cursor = nil
    }

    public func present() {
        guard !ended else { return }
        if let rows = frame {
            frame = nil
            drawFrame(rows)
        }
        if let cursor {
            leaveok(window, false)
            wmove(window, Int32(cursor.row), Int32(cursor.column))
        } else {
            leaveok(window, true)
        }
        let show = cursor != nil
        if cursorShown != show {
            curs_set(show ? 1 : 0)
            cursorShown = show
        }
        wnoutrefresh(window)
        doupdate()
    }

    /// Writes bytes straight to the terminal, past ncurses (OSC 52). Call after `present()`.
    public func writeRaw(_ bytes: [UInt8]) {
        guard !ended else { return }
        fflush(outputFile)
        bytes.withUnsafeBytes { _ = StandardStream.writeAll($0, to: outputFD) }
    }

    // MARK: Input

    /// Everything the terminal has sent, decoded, without waiting (beyond ncurses' ESC delay when an ESC arrived
    /// alone); also picks up a resize or Ctrl-C that a signal reported. Call when `poll` says `inputFD` or `signalFD`
    /// is readable, or was interrupted.
    public func readAvailable() -> [InputEvent] {
        guard !ended else { return [] }
        var events: [InputEvent] = []
        signalWakeup.drain()
        if TerminalRestore.suspendPending.load(ordering: .sequentiallyConsistent) {
            suspend()
            events.append(.resize(size))
        }
        if TerminalRestore.resizePending.exchange(false, ordering: .sequentiallyConsistent) {
            applyTerminalSize()
            events.append(.resize(size))
        }
        if TerminalRestore.interruptPending.exchange(false, ordering: .sequentiallyConsistent) {
            events.append(.keyPress(.ctrl("c")))
        }
        var batch: [RawInput] = []
        while batch.count < 4096 {
            var value: wint_t = 0
            let status = wget_wch(window, &value)
            guard let raw = RawInput(status: status, value: value) else { break }
            if raw == .keyCode(KEY_RESIZE) { applyTerminalSize() }
            batch.append(raw)
        }
        for event in decoder.decode(batch, size: size) {
            if case .resize = event, events.contains(where: { if case .resize = $0 { true } else { false } }) {
                continue
            }
            events.append(event)
        }
        if batch.isEmpty, let result = try? Poller.poll(fds: [inputFD], timeoutMilliseconds: 0),
            result.hungUp.contains(inputFD)
        {
            inputClosed = true
        }
        return events
    }

    /// Ctrl-Z, from the loop's thread: gives the terminal back as `endwin` does, stops the process, and once it is
    /// continued waits (stopped) until it is in the foreground again before it takes the terminal back. Nothing is
    /// drawn in between, so after `bg` no frame reaches the shell's screen; a SIGTERM meanwhile ends the process
    /// with the terminal as the shell left it.
    private func suspend() {
        if TerminalRestore.active.exchange(false, ordering: .sequentiallyConsistent) {
            // Sent from elsewhere (`kill -TSTP`) it may find the process in the background: endwin's tcsetattr
            // would stop it with SIGTTOU half-way, so SIGTTOU is held for this thread meanwhile, as ncurses does.
            Self.withTerminalOutputSignalBlocked {
                if configuration.bracketedPaste { writeRaw(Array("\u{1B}[?2004l".utf8)) }
                endwin()
            }
        }
        TerminalRestore.suspendPending.store(false, ordering: .sequentiallyConsistent)
        TerminalRestore.stopProcess()
        _ = Self.waitForForeground(outputFD)
        // The shell's settings as they are now (the user may have changed them meanwhile), for the next restore.
        def_shell_mode()
        var shellSettings = termios()
        let haveSettings = tcgetattr(outputFD, &shellSettings) == 0
        TerminalRestore.prepare(
            terminalFD: outputFD, sequence: restoreSequence,
            termios: haveSettings ? shellSettings : nil)
        TerminalRestore.active.store(true, ordering: .sequentiallyConsistent)
        // The next doupdate puts the program's modes back and repaints everything (ncurses' way back from endwin).
        if configuration.bracketedPaste { writeRaw(Array("\u{1B}[?2004h".utf8)) }
        cursorShown = nil
        applyTerminalSize()
    }

    private static func withTerminalOutputSignalBlocked(_ body: () -> Void) {
        var block = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGTTOU)
        var previous = sigset_t()
        _ = pthread_sigmask(SIG_BLOCK, &block, &previous)
        body()
        _ = pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// Takes the terminal's current size (TIOCGWINSZ) into ncurses and this screen; the next `present()` repaints
    /// everything, so nothing of the old layout is left behind.
    private func applyTerminalSize() {
        var windowSize = winsize()
        if ioctl(outputFD, UInt(TIOCGWINSZ), &windowSize) == 0, windowSize.ws_row > 0, windowSize.ws_col > 0 {
            _ = resize_term(Int32(windowSize.ws_row), Int32(windowSize.ws_col))
            _ = wresize(window, Int32(windowSize.ws_row), Int32(windowSize.ws_col))
        }
        size = ScreenSize(rows: Int(getmaxy(window)), columns: Int(getmaxx(window)))
        werase(window)
        frame = nil
        shown = nil
        clearok(window, true)
    }

    // MARK: Styles

    static let attributeUnderline: attr_t = 1 << 17
    static let attributeReverse: attr_t = 1 << 18
    static let attributeDim: attr_t = 1 << 20
    static let attributeBold: attr_t = 1 << 21

    private func attributesAndPair(for style: TextStyle) -> (attr_t, Int16) {
        var attributes: attr_t = 0
        if style.bold { attributes |= CursesScreen.attributeBold }
        if style.dim { attributes |= CursesScreen.attributeDim }
        if style.reverse { attributes |= CursesScreen.attributeReverse }
        if style.underline { attributes |= CursesScreen.attributeUnderline }
        guard colors else {
            // Monochrome: a coloured background (a highlight) shows as reverse video.
            if style.background != nil { attributes |= CursesScreen.attributeReverse }
            return (attributes, 0)
        }
        return (attributes, pair(foreground: style.foreground, background: style.background))
    }

    /// The colour pair for the colours, allocated on first use; pair 0 (the terminal's defaults) when the terminal
    /// has run out of pairs.
    private func pair(foreground: TerminalColor?, background: TerminalColor?) -> Int16 {
        if foreground == nil && background == nil { return 0 }
        let key = ColorKey(foreground: foreground, background: background)
        if let existing = pairs[key] { return existing }
        let number = pairs.count + 1
        guard number < maximumPairs else { return 0 }
        // Without default-colour support, "default" means white on black.
        let fallbackForeground = defaultColors ? -1 : Int16(COLOR_WHITE)
        let fallbackBackground = defaultColors ? -1 : Int16(COLOR_BLACK)
        let fg = foreground.map { Int16($0.rawValue) } ?? fallbackForeground
        let bg = background.map { Int16($0.rawValue) } ?? fallbackBackground
        guard init_pair(Int16(number), fg, bg) == OK else { return 0 }
        pairs[key] = Int16(number)
        return Int16(number)
    }

    private static func terminfoString(_ name: String) -> [UInt8] {
        guard let pointer = tigetstr(name), Int(bitPattern: pointer) != -1 else { return [] }
        return Array(String(cString: pointer).utf8)
    }
}
