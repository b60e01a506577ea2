import ArgumentParser
import AuthenticatorModel
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
            let operations = OATHOperations(options.key.choice, store: store)
            if action == .forget {
                out(try await operations.forgetRemembered() ? "Forgot the remembered password of this key"
                                                            : "No password was remembered for this key")
                return
            }
            // What the key has decides what to ask; the key is not held open while the user types.
            let hasPassword = try await operations.inspect().hasPassword
            let change: OATHOperations.PasswordChange
            switch action {
            case .set:
                guard !hasPassword else {
                    throw YktermError.failed("the key already has a password: use `ykterm oath password change`")
                }
                change = .set(new: try newPassword(prompt))
            case .change:
                guard hasPassword else {
                    throw YktermError.failed("the key has no password: use `ykterm oath password set`")
                }
                let current = SecretBytes(utf8: try prompt.secret("Current password"))
                change = .change(current: current, new: try newPassword(prompt))
            case .clear:
                guard hasPassword else {
                    out("The key has no password")
                    return
                }
                change = .clear(current: SecretBytes(utf8: try prompt.secret("Current password")))
            case .forget:
                return
            }
            switch try await operations.setPassword(change, remember: options.remember).done {
            case .cleared: out("Password cleared")
            case .set: out("Password set")
            case .changed: out("Password changed")
            }
        }

        private func newPassword(_ prompt: Prompt) throws -> SecretBytes {
            let new = SecretBytes(utf8: try prompt.newSecret("New password"))
            guard !new.isEmpty else { throw YktermError.usage("the new password is empty; nothing was changed") }
            return new
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
            try await OATHOperations(options.key.choice, store: RememberedKeys.reporting()).reset()
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
