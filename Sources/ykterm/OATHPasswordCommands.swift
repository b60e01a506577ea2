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
            abstract: "Set, change or clear the OATH password, or remember or forget it on this computer.",
            discussion: """
                set: asks for the new password (twice on a terminal). change: the current password, then \
                the new one. clear: the current password. remember: asks for the password and keeps the \
                access key it gives on this computer, so that later commands need no password. forget: \
                removes the remembered access key of this key (or of every key with --all) from this \
                computer.
                """)

        enum Action: String, ExpressibleByArgument, CaseIterable {
            case set, change, clear, remember, forget
        }

        @OptionGroup var options: OATHOptions

        @Argument(help: "set, change, clear, remember or forget.")
        var action: Action

        @Flag(name: .long, help: "With forget: forget the keys of every device.")
        var all = false

        func run() async throws {
            let prompt = Prompt()
            let store = RememberedKeys.reporting()
            if action == .forget && all {
                try store.forgetAll()
                out(words("cli.oath.forgotAll"))
                return
            }
            let operations = OATHOperations(options.key.opener(for: .oath), store: store)
            if action == .forget {
                out(words(try await operations.forgetRemembered() ? "cli.oath.forgot" : "cli.oath.nothingRemembered"))
                return
            }
            // What the key has decides what to ask; the key is not held open while the user types.
            let hasPassword = try await operations.inspect().hasPassword
            if action == .remember {
                guard hasPassword else { throw YktermError.failed(words("cli.oath.nothingToRemember")) }
                let password = SecretBytes(utf8: try prompt.secret(words("oath.unlock.password")))
                _ = try await operations.remember(password: password)
                out(words("cli.oath.remembered"))
                return
            }
            let change: OATHOperations.PasswordChange
            switch action {
            case .set:
                guard !hasPassword else {
                    throw YktermError.failed(words("cli.oath.hasPassword"))
                }
                change = .set(new: try newPassword(prompt))
            case .change:
                guard hasPassword else {
                    throw YktermError.failed(words("cli.oath.noPassword"))
                }
                let current = SecretBytes(utf8: try prompt.secret(words("oath.password.current")))
                change = .change(current: current, new: try newPassword(prompt))
            case .clear:
                guard hasPassword else {
                    out(words("cli.oath.hasNoPassword"))
                    return
                }
                change = .clear(current: SecretBytes(utf8: try prompt.secret(words("oath.password.current"))))
            case .forget, .remember:
                return
            }
            switch try await operations.setPassword(change, remember: options.remember).done {
            case .cleared: out(words("oath.passwordRemoved"))
            case .set: out(words("oath.passwordSet"))
            case .changed: out(words("oath.passwordChanged"))
            }
        }

        private func newPassword(_ prompt: Prompt) throws -> SecretBytes {
            let new = SecretBytes(
                utf8: try prompt.newSecret(words("oath.password.new"), again: words("cli.oath.repeatPassword")))
            guard !new.isEmpty else { throw YktermError.usage(words("cli.oath.emptyPassword")) }
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
            try prompt.confirmReset(force, words("cli.oath.resetQuestion"))
            try await OATHOperations(options.key.opener(for: .oath), store: RememberedKeys.reporting()).reset()
            out(words("cli.oath.resetDone"))
        }
    }
}

extension RememberedKeys {
    /// The remembered keys, saying on standard error when the file was unreadable and moved aside.
    static func reporting() -> RememberedKeys {
        RememberedKeys { path, aside in
            warn("ykterm: " + words("cli.oath.storeSetAside", ["path": path, "aside": aside]))
        }
    }
}
