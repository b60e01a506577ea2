import FoundationEssentials
import KeyKit

/// What to say when pcscd cannot be reached: whether it is installed decides what to do next. `doctor` and
/// every command that fails for want of pcscd (`list` among them) say the same.
enum PCSCDaemon {
    /// Where distributions install pcscd.
    static let paths = ["/usr/sbin/pcscd", "/usr/bin/pcscd", "/usr/local/sbin/pcscd"]

    static func isInstalled(paths: [String] = PCSCDaemon.paths) -> Bool {
        paths.contains { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Why pcscd is not reachable and what to do, after "pcscd: not reachable: ".
    static func unreachableAdvice(installed: Bool = PCSCDaemon.isInstalled()) -> String {
        installed
            ? "it is installed but not running. Start it: sudo systemctl enable --now pcscd.socket"
            : "not installed. Install and start it: sudo apt-get install pcscd libccid; "
                + "sudo systemctl enable --now pcscd.socket"
    }

    /// The one-line error for `SmartCardError.serviceUnavailable`, with the advice that fits this machine.
    static func unreachableMessage() -> String {
        "pcscd is not reachable: " + unreachableAdvice()
    }

    /// `error` as a command reports it: pcscd's absence with the advice above, anything else as it is.
    static func describe(_ error: any Error) -> String {
        if let e = error as? SmartCardError, e == .serviceUnavailable { return unreachableMessage() }
        return "\(error)"
    }
}
