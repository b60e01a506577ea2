import CLinux
import Glibc

/// Keeps secrets out of places they could leak from: the process is made not dumpable (no core file, and no
/// ptrace or /proc/PID/mem by another process of the same user that is not root), and secret buffers are
/// locked in memory where RLIMIT_MEMLOCK allows, so they are not written to swap.
public enum SecretMemory {
    /// Makes the process not dumpable and sets its core size limit to 0. Every ykterm command may hold a
    /// PIN, password, PIN token or OATH key at some point, so the entry point calls this before anything else.
    /// Idempotent.
    ///
    /// The Swift runtime's crash reporter is turned off too: it prints the registers and the memory they point
    /// at, where a PIN token or OATH key may be. A crash then ends the process as the kernel does, without a
    /// core (the terminal is still restored first by the TUI's handlers, which chain to the default action).
    public static func protectProcess() {
        _ = ykterm_set_dumpable(0)
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none)
        for sig in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP] {
            signal(sig, SIG_DFL)
        }
    }

    /// True when the process may be dumped (or traced by its user).
    public static var isDumpable: Bool { ykterm_get_dumpable() != 0 }

    /// Locks `pointer` in memory; false when the limit does not allow it (the secret is still zeroed after
    /// use, only not kept out of swap).
    @discardableResult
    static func lock(_ pointer: UnsafeMutableRawBufferPointer) -> Bool {
        guard let base = pointer.baseAddress, pointer.count > 0 else { return false }
        return mlock(base, pointer.count) == 0
    }

    static func unlock(_ pointer: UnsafeMutableRawBufferPointer) {
        guard let base = pointer.baseAddress, pointer.count > 0 else { return }
        _ = munlock(base, pointer.count)
    }
}
