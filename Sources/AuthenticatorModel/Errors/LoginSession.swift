import FoundationEssentials
import KeyKit

/// Where the user's session is: at the seat (the console or the desktop), or remote (SSH). udev's `uaccess`
/// tag gives hidraw nodes to the user at the seat only, and polkit-built pcscd lets only that user in by
/// default, so the advice ykterm gives for a refusal depends on it.
public enum LoginSession {
    /// The group ykterm's group rule (`70-ykterm-fido-group.rules`) gives the keys' HID nodes to.
    public static let udevGroup = "plugdev"

    /// A session reached over SSH (`SSH_CONNECTION`, `SSH_CLIENT` or `SSH_TTY` set), or one that logind records
    /// as remote (`REMOTE=1` in `/run/systemd/sessions/$XDG_SESSION_ID`).
    public static func isRemote(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        sessions: String = "/run/systemd/sessions"
    ) -> Bool {
        if ["SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"].contains(where: { !(environment[$0] ?? "").isEmpty }) {
            return true
        }
        guard let id = environment["XDG_SESSION_ID"], !id.isEmpty, !id.contains("/"),
            let record = try? String(contentsOfFile: sessions + "/" + id, encoding: .utf8)
        else { return false }
        return record.split(separator: "\n").contains("REMOTE=1")
    }
}
