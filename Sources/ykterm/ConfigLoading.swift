import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit
import Synchronization
import TerminalUI

/// The config file as read at start-up (`Config.defaultPath`): loaded once, before any command runs, so a
/// bad file stops ykterm with exit status 2 and nothing starts half-configured.
enum LoadedConfig {
    private static let storage = Mutex<Config>(Config())

    /// The config in force (the defaults until `load` has run).
    static var current: Config { storage.withLock { $0 } }

    /// Reads the config file and makes it the one in force; its language becomes the string tables'.
    static func load(environment: [String: String] = ProcessEnvironment.current) throws {
        let config: Config
        do {
            config = try Config.load(path: Config.defaultPath(environment: environment))
        } catch {
            throw YktermError.usage(words("cli.config.invalid", ["problem": "\(error)"]))
        }
        storage.withLock { $0 = config }
        StringTables.configuredLanguage.withLock { $0 = config.ui.language }
    }
}

extension Config {
    /// The clipboard method `[ui] clipboard` names.
    var clipboardMethod: ClipboardMethod {
        ClipboardMethod(rawValue: ui.clipboard.rawValue) ?? .auto
    }

    /// The colour mode `[ui] color` names.
    var colorMode: CursesConfiguration.ColorMode {
        CursesConfiguration.ColorMode(rawValue: ui.color.rawValue) ?? .auto
    }

    /// `[otp.aes_keys]` as the OTP tab takes them.
    var aesKeyBytes: [String: [UInt8]] {
        otp.aesKeys.mapValues(\.bytes)
    }
}
