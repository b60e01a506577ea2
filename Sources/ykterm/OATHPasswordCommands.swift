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
            let message = try await withOATH(options, prompt: prompt, unlock: false) { session -> String in
                let locked = await session.isLocked
                let deviceID = await session.deviceID
                switch action {
                case .forget:
                    return try store.forget(deviceID) ? "Forgot the remembered password of this key"
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
                    let password = try prompt.secret("Current password")
                    try await session.unlock(password: password)
                }
                if action == .clear {
                    try await session.removePassword()
                    _ = try? store.forget(deviceID)
                    return "Password cleared"
                }
                let new = try prompt.newSecret("New password")
                guard !new.isEmpty else { throw YktermError.usage("the new password is empty; nothing was changed") }
                let key = await session.deriveKey(password: new)
                try await session.setKey(key)
                if remember {
                    try store.remember(key, for: deviceID)
                } else {
                    _ = try? store.forget(deviceID)
                }
                return action == .set ? "Password set" : "Password changed"
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
            if !force {
                guard prompt.interactive else {
                    throw YktermError.usage("reset needs --force when standard input is not a terminal")
                }
                guard prompt.confirm("Delete every OATH account and the password on this key?") else {
                    throw YktermError.failed("nothing was reset")
                }
            }
            try await withOATH(options, prompt: prompt, unlock: false) { session in
                let old = await session.deviceID
                try await session.reset()
                _ = try? RememberedKeys().forget(old)
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
