import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit
import TerminalUI
import VirtualKey

/// The virtual key as a key source: present from the start, never leaving, shaped as a USB YubiKey with its
/// three interfaces (CCID, FIDO HID, OTP HID), so each tab reaches it as it would reach a real key.
struct VirtualBackend: KeyBackend {
    /// The ATR a USB YubiKey's CCID interface gives.
    static let usbATR: [UInt8] = [
        0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15, 0x80, 0x73, 0xC0, 0x21,
        0xC0, 0x57, 0x59, 0x75, 0x62, 0x69, 0x4B, 0x65, 0x79, 0x40,
    ]
    static let descriptor: KeyDescriptor = {
        var d = KeyDescriptor(transport: .virtual, name: "Virtual Key", atr: usbATR)
        d.fidoHID = HIDDeviceInfo(
            path: "virtual:fido", vendorID: HIDDeviceInfo.yubicoVendorID, productID: 0x0407,
            productName: "Virtual Key")
        d.otpHID = HIDDeviceInfo(
            path: "virtual:otp", vendorID: HIDDeviceInfo.yubicoVendorID, productID: 0x0407,
            productName: "Virtual Key")
        return d
    }()
    let key: VirtualKey

    func events() -> AsyncStream<KeyEvent> {
        AsyncStream { continuation in
            continuation.yield(.keyArrived(Self.descriptor))
        }
    }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        USBCardConnection(inner: VirtualKeyConnection(key: key, name: descriptor.name))
    }

    /// FIDO over the virtual key's HID interface (CTAPHID), as on a USB key.
    func connectFIDO(_ descriptor: KeyDescriptor, observer: (@Sendable (APDUExchange) -> Void)?) async throws
        -> any FIDOConnection
    {
        try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "Virtual Key (FIDO HID)")
    }

    /// A touch of the virtual key's button: the Yubico OTP of its NDEF credential, as a real key would type it.
    func touchForOTP() -> String? {
        key.typeOTP()
    }
}

/// The built-in virtual key as the command line's `--virtual` opens it: a fresh key loaded with the demo
/// accounts for each opening (changes are not kept), its FIDO interface over CTAPHID with a 0.2 s touch.
struct VirtualKeyChoice: SmartCardOpener, FIDOOpener, OTPOpener {
    private static var state: VirtualKeyState { VirtualKeyState.yubiKey5NFC().withDemoAccounts() }

    func openSmartCard() async throws -> any SmartCardConnection {
        VirtualKeyConnection(key: VirtualKey(state: Self.state))
    }

    func openFIDO() async throws -> any FIDOConnection {
        try await CTAPHIDConnection(
            device: VirtualKey(state: Self.state, touchDelay: 0.2).makeFIDOHIDDevice(),
            name: "Virtual Key (HID)")
    }

    /// Through its smart-card interface, where the OTP application answers.
    func openOTP() async throws -> OpenedOTP {
        try await VirtualBackend.descriptor.openOTP(card: openSmartCard)
    }

    func openManagement() async throws -> OpenedManagement {
        try await OpenedManagement.card(try await openSmartCard())
    }
}

/// The virtual key's CCID interface as a USB key's: the ATR a USB YubiKey gives.
final class USBCardConnection: SmartCardConnection {
    let inner: VirtualKeyConnection
    var atr: [UInt8] { VirtualBackend.usbATR }

    init(inner: VirtualKeyConnection) {
        self.inner = inner
    }
    var name: String { inner.name }

    func transmit(_ command: [UInt8]) async throws -> [UInt8] { try await inner.transmit(command) }
    func close() async { await inner.close() }
}

/// The machine's keys, only those with a reader or hidraw node whose name contains `reader` when one is given.
struct FilteredBackend: KeyBackend {
    let inner: DeviceBackend
    let reader: String?

    func events() -> AsyncStream<KeyEvent> {
        let events = inner.events()
        guard let reader = reader?.lowercased() else { return events }
        return AsyncStream { continuation in
            let task = Task {
                // The keys let through: a key that gains a matching interface comes in then.
                var shown = Set<String>()
                for await event in events {
                    switch event {
                    case .keyArrived(let d), .keyChanged(let d):
                        if shown.contains(d.id) {
                            continuation.yield(event)
                        } else if KeyDiscovery.matches(d, KeySelector(reader: reader)) {
                            shown.insert(d.id)
                            continuation.yield(.keyArrived(d))
                        }
                    case .keyLeft(let id):
                        if shown.remove(id) != nil { continuation.yield(event) }
                    default: continuation.yield(event)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func connect(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        try await inner.connect(key)
    }

    func connectHeld(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        try await inner.connectHeld(key)
    }

    func connectProbe(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        try await inner.connectProbe(key)
    }

}

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
        state.otp.parsers = config.otp.parsers
        let app = try TerminalApp(
            screen: screen, state: state, text: localize,
            theme: screen.colors ? Theme().applying(config.colors) : .monochrome, clipboard: clipboard)
        var environment = RunnerEnvironment()
        environment.otpParsers = config.otp.parsers
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
