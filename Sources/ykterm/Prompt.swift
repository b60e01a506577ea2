import FoundationEssentials
import KeyKit
#if canImport(Glibc)
import Glibc
#endif

/// Reads secrets and answers: from the terminal without echo when standard input is one, otherwise one
/// line per request from standard input, in the order the command asks for them.
final class Prompt {
    let interactive: Bool

    init() {
        interactive = isatty(STDIN_FILENO) == 1
    }

    enum PromptError: Error, CustomStringConvertible {
        case endOfInput(String)
        var description: String {
            switch self {
            case .endOfInput(let what): return words("cli.prompt.endOfInput", ["what": what])
            }
        }
    }

    /// A secret (password, PIN, key): no echo on a terminal.
    func secret(_ label: String) throws -> String {
        guard interactive else {
            guard let line = readLine(strippingNewline: true) else { throw PromptError.endOfInput(label) }
            return line
        }
        StandardStream.write(VisibleText.escaped("\(label): "), to: 2)
        var old = termios()
        let haveTerm = tcgetattr(STDIN_FILENO, &old) == 0
        if haveTerm {
            var quiet = old
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ECHONL)
            Prompt.savedTerminal = old
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        }
        defer {
            if haveTerm {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &old)
                Prompt.savedTerminal = nil
            }
        }
        guard let line = readLine(strippingNewline: true) else { throw PromptError.endOfInput(label) }
        return line
    }

    /// A new secret: asked twice on a terminal (must match; `again` labels the second time), once from
    /// standard input.
    func newSecret(_ label: String, again: String) throws -> String {
        let first = try secret(label)
        guard interactive else { return first }
        let repeated = try secret(again)
        guard first == repeated else { throw YktermError.usage(words("cli.prompt.entriesDiffer")) }
        return first
    }

    /// A line with echo.
    func line(_ label: String) throws -> String {
        if interactive { StandardStream.write(VisibleText.escaped("\(label): "), to: 2) }
        guard let line = readLine(strippingNewline: true) else { throw PromptError.endOfInput(label) }
        return line
    }

    /// Without a terminal to ask on, what loses something needs `--force`: `refusal` says so for it ("deleting a
    /// credential needs --force when standard input is not a terminal"). The one rule for every command that
    /// overwrites or deletes.
    func requireForce(_ force: Bool, otherwise refusal: String) throws {
        guard force || interactive else { throw YktermError.usage(refusal) }
    }

    /// Asks `question` before what loses something, unless `force`; a no throws `refusal` ("nothing was
    /// deleted", status 1). Pairs with `requireForce`, which makes sure there is a terminal to ask on.
    func confirmUnlessForced(_ force: Bool, _ question: String, otherwise refusal: String) throws {
        guard !force else { return }
        guard confirm(question) else { throw YktermError.failed(refusal) }
    }

    /// Asks `question` unless `force`; a no, or no terminal to ask on, throws `refusal` as a usage error (status
    /// 2), as `openpgp access set-retries` and `openpgp access kdf` have it.
    func requireConfirmation(_ force: Bool, _ question: String, otherwise refusal: String) throws {
        guard force || confirm(question) else { throw YktermError.usage(refusal) }
    }

    /// Asks `question` before a deletion, unless `force`; a no throws "nothing was deleted" (status 1).
    func confirmDeletion(_ force: Bool, _ question: String) throws {
        try confirmUnlessForced(force, question, otherwise: words("cli.prompt.nothingDeleted"))
    }

    /// Asks `question` before a reset, which needs a terminal to ask on or `force`; a no throws "nothing was
    /// reset" (status 1).
    func confirmReset(_ force: Bool, _ question: String) throws {
        try requireForce(force, otherwise: words("cli.prompt.resetNeedsForce"))
        try confirmUnlessForced(force, question, otherwise: words("cli.prompt.nothingReset"))
    }

    /// A yes/no question; only asked on a terminal (false otherwise). The answer is y or yes in every language,
    /// as the TUI's dialogs take it.
    func confirm(_ question: String) -> Bool {
        guard interactive else { return false }
        StandardStream.write(VisibleText.escaped("\(question) [y/N] "), to: 2)
        guard let answer = readLine() else { return false }
        return ["y", "yes"].contains(answer.trimmingSpaces.lowercased())
    }

    /// The terminal settings to put back if a signal ends the program while echo is off.
    // nonisolated(unsafe): read by the SIGINT/SIGTERM handler, which can take no lock. Written only on the main
    // thread, set before echo goes off and cleared after it is back on, so while echo is off it holds complete
    // settings; a signal in the middle of one of those two writes is the only window, and echo is on then.
    nonisolated(unsafe) static var savedTerminal: termios?

    /// Installs handlers that restore the terminal on SIGINT and SIGTERM while a secret is being read. A
    /// SIGINT while a FIDO request is with the key is left to the request, which cancels it first
    /// (`FIDOInterrupt`).
    ///
    /// Stop signals are held while the handler runs: the TUI, started in the background, stops itself with
    /// SIGTTIN from another thread until it is in the foreground (`CursesScreen.waitForForeground`), and such a
    /// stop between this handler's first call and its `raise` would leave the process stopped, not ended.
    static func installSignalRestore() {
        for sig in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { s in
                if s == SIGINT && FIDOInterrupt.claim() { return }
                Prompt.restoreTerminal()
                signal(s, SIG_DFL)
                raise(s)
            }
            sigemptyset(&action.sa_mask)
            for stop in [SIGTSTP, SIGTTIN, SIGTTOU] { sigaddset(&action.sa_mask, stop) }
            action.sa_flags = Int32(SA_RESTART)
            sigaction(sig, &action, nil)
        }
    }

    /// Puts back the terminal settings saved while a secret is read, if any (async-signal-safe).
    static func restoreTerminal() {
        if var t = Prompt.savedTerminal { tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) }
    }
}

/// Asks for a PIN, checking the key's rules before anything is sent; a new one twice on a terminal.
func askPIN(_ prompt: Prompt, _ label: String, minimum: Int, new: Bool) throws -> String {
    let pin = new ? try prompt.newSecret(label, again: words("cli.prompt.repeatNewPIN")) : try prompt.secret(label)
    if new {
        do {
            try PINRules.check(pin, minimum: minimum)
        } catch {
            throw YktermError.usage(words("cli.fido.pin.refusedHere", ["reason": explained(error).1]))
        }
    }
    return pin
}

/// Decodes hex given by the user; `what` names it as the subject of a sentence (`cli.otp.what.*`: "the
/// challenge"). For a secret the message does not repeat the offending character.
func decodeHex(_ text: String, what: String, secret: Bool = false) throws -> [UInt8] {
    do {
        return try Hex.decode(text)
    } catch {
        switch error {
        case .invalidCharacter(_, let offset) where secret:
            throw YktermError.usage(words("cli.otp.notHexAt", ["what": what, "position": String(offset + 1)]))
        default:
            throw YktermError.usage(words("cli.otp.notHex", ["what": what, "detail": explained(error).1]))
        }
    }
}

/// Reads a line from standard input for an argument given as `-`; `what` names it as `decodeHex` has it.
func readStandardInput(_ what: String) throws -> String {
    guard let line = readLine(strippingNewline: true) else {
        throw YktermError.usage(words("cli.otp.inputEnded", ["what": what]))
    }
    return line
}
