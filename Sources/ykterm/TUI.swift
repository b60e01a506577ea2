import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit
import TerminalUI
import VirtualKey

enum TUI {
    /// The demo key's OATH salt ("ykterm" and two bytes of its serial's end).
    static let demoSalt: [UInt8] = Array("ykterm".utf8) + [0x1E, 0x40]

    /// Opens the TUI on the keys `options` choose (or the virtual key) and runs it until the user quits.
    /// `aesKeys`: Yubico OTP AES keys by public ID (modhex) for the OTP tab, from the config file's
    /// `[otp.aes_keys]`.
    /// `config`: the config file's key bindings, `[colors]` and `[otp] parsers`.
    static func run(
        options: KeyChoice, colors: CursesConfiguration.ColorMode, clipboard: Clipboard,
        localize: @escaping Localize, aesKeys: [String: [UInt8]] = [:], config: Config = Config()
    ) throws {
        let backend: any KeyBackend
        var aesKeys = aesKeys
        if options.virtual {
            // The OTP credential is made up front so the OTP tab can decrypt what the demo key types.
            var keyState = VirtualKeyState.yubiKey5NFC().withDemoAccounts()
            // A stable identity: the OATH device ID comes from the salt, which a new key makes at random. A
            // fixed one keeps the demo key's pins across runs (and pins.json from gaining an entry per run).
            keyState.oath.salt = Self.demoSalt
            let token = OTPTokenState.random(serial: keyState.serial)
            keyState.otpToken = token
            aesKeys[Modhex.encode(token.publicID)] = token.aesKey
            // FIDO2: a simulated touch of a second (so "Touch your key" shows and Esc can cancel), and a reset
            // allowed at any time, since the demo key cannot be removed and inserted again.
            backend = VirtualBackend(key: VirtualKey(state: keyState, userPresenceDelay: 1, resetWindow: .infinity))
        } else {
            backend = FilteredBackend(inner: DeviceBackend(), reader: options.selector.reader)
        }
        guard isatty(STDIN_FILENO) == 1 || FileManager.default.isReadableFile(atPath: "/dev/tty") else {
            throw YktermError.usage(words("cli.tui.needsTerminal"))
        }
        let screen: CursesScreen
        do {
            screen = try CursesScreen(configuration: CursesConfiguration(colors: colors))
        } catch {
            throw YktermError.failed(words("cli.tui.cannotOpenTerminal", ["detail": "\(error)"]))
        }
        var state = AppState(
            now: Date().timeIntervalSince1970, bindings: config.keyBindings, virtualMode: options.virtual,
            preferredSerial: options.selector.serial)
        state.otp.aesKeys = aesKeys
        state.keyNames = KeyNames().all()
        state.otp.parsers = config.otp.parsers
        state.oath.allKeys = config.oath.allKeys
        state.oath.addToAllKeys = config.oath.addToAllKeys
        let app = try TerminalApp(
            screen: screen, state: state, text: localize,
            theme: screen.colors ? Theme().applying(config.colors) : .monochrome, clipboard: clipboard,
            touchSignals: config.notify.touch)
        var environment = RunnerEnvironment()
        environment.otpParsers = config.otp.parsers
        // A changes the OATH tab's view and writes it here, for the next start.
        environment.configPath = Config.defaultPath
        app.run(backend: backend, environment: environment)
    }
}

extension TUI {
    /// The TUI's words from Resources/strings/<language>.json, English for what a language lacks.
    static func localizer() -> Localize {
        let tables = StringTables.load()
        return { t in tables.text(t) }
    }
}
