import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit
import Synchronization

/// The command line's word that the key waits for a touch: which key (when known) and what for (the command), on
/// standard error; when standard error is a terminal, also the bell and a desktop notification (OSC 777 and OSC 9,
/// as `[notify] touch` says), which reach the user's desktop from a remote shell too.
enum TouchNotice {
    /// The command running ("fido credentials delete"), set when the command line is read.
    static let command = Mutex("")
    /// The key the command's last opening found, for a notice that is not told which key.
    static let openedKey = Mutex<String?>(nil)

    @Sendable static func opened(_ name: String) {
        openedKey.withLock { $0 = name }
    }
    /// `once` has spoken in this command.
    private static let spoken = Atomic<Bool>(false)

    /// Says it (a key may ask for several touches in one command: each is said).
    static func show(key: String? = nil) {
        let tables = StringTables.load()
        let purpose = UIText("touch.for.command", ["command": command.withLock { $0 }])
        let text =
            (key ?? openedKey.withLock { $0 }).map { TouchAlert.text(key: $0, purpose: purpose) }
            ?? UIText("touch.alert.anyKey", nested: ["purpose": purpose])
        let message = tables.text(text)
        var output = message + "\n"
        if isatty(STDERR_FILENO) == 1 {
            output += TouchAlert.escapes(
                title: tables.text(UIText("touch.alert.title")), message: message,
                signals: LoadedConfig.current.notify.touch)
        }
        StandardStream.write(output, to: 2)
    }

    /// Says it once per command (a FIDO key repeats its keepalive while it waits).
    static func once(key: String?) {
        if !spoken.exchange(true, ordering: .relaxed) { show(key: key) }
    }
}
