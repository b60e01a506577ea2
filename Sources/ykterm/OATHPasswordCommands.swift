import ArgumentParser
import FoundationEssentials
import Glibc
import KeyKit

/// The OATH application's password and reset.
extension OATHCommand {
    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "password",
            abstract: "Set, change or clear the OATH password, or forget a remembered one.",
            discussion: """
            set: asks for the new password (twice on a terminal). change: the current password, then \
            the new one. clear: the current password. forget: removes the remembered access key of \
            this key (or of every key with --all) from this computer.
            """)

        enum Action: String, ExpressibleByArgument, CaseIterable {
            case set, change, clear, forget
        }

        @OptionGroup var options: OATHOptions

        @Argument(help: "set, change, clear or forget.")
        var action: Action

        @Flag(name: .long, help: "With forget: forget the keys of every device.")
        var all = false

        func run() async throws {
            let prompt = Prompt()
            let store = RememberedKeys.reporting()
            if action == .forget && all {
                try store.forgetAll()
                out("Forgot every remembered OATH password")
                return
            }
            let (action, remember) = (self.action, options.remember)
            let access = OATHAccess(store: store)
            let message = try await withOATH(options, prompt: prompt, unlock: false) { session -> String in
                let locked = await session.isLocked
                var current: SecretBytes?
                switch action {
                case .forget:
                    return try store.forget(await session.deviceID) ? "Forgot the remembered password of this key"
                        : "No password was remembered for this key"
                case .set:
                    guard !locked else {
                        throw YktermError.failed("the key already has a password: use `ykterm oath password change`")
                    }
                case .change, .clear:
                    guard locked else {
                        if action == .clear { return "The key has no password" }
                        throw YktermError.failed("the key has no password: use `ykterm oath password set`")
                    }
                    current = SecretBytes(utf8: try prompt.secret("Current password"))
                }
                var new: SecretBytes?
                if action != .clear {
                    new = SecretBytes(utf8: try prompt.newSecret("New password"))
                    guard new?.isEmpty == false else {
                        throw YktermError.usage("the new password is empty; nothing was changed")
                    }
                }
                _ = try await access.setPassword(session, current: current, new: new, remember: remember)
                switch action {
                case .clear: return "Password cleared"
                case .set: return "Password set"
                default: return "Password changed"
                }
            }
            out(message)
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Delete every account and the password (asks first, unless --force).")

        @OptionGroup var options: OATHOptions

        @Flag(name: .long, help: "Reset without asking.")
        var force = false

        func run() async throws {
            let prompt = Prompt()
            try prompt.requireForce(force, for: "reset")
            try prompt.confirmUnlessForced(force, "Delete every OATH account and the password on this key?",
                                            nothingWas: "reset")
            try await withOATH(options, prompt: prompt, unlock: false) { session in
                try await OATHAccess(store: RememberedKeys.reporting()).reset(session)
            }
            out("OATH application reset: every account and the password are gone")
        }
    }
}

extension RememberedKeys {
    /// The remembered keys, saying on standard error when the file was unreadable and moved aside.
    static func reporting() -> RememberedKeys {
        RememberedKeys { path, aside in
            warn("ykterm: \(path) could not be read (not the JSON ykterm writes); it was moved to \(aside), and "
                 + "passwords are asked for again")
        }
    }
}
