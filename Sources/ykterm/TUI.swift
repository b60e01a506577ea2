import AuthenticatorModel
import Foundation
import KeyKit
import TerminalUI
import VirtualKey

/// The virtual key as a key source: present from the start, never leaving.
struct VirtualBackend: KeyBackend {
    static let descriptor = KeyDescriptor(transport: .virtual, name: "Virtual Key", atr: VirtualKey.atr)
    let key: VirtualKey

    func events() -> AsyncStream<KeyEvent> {
        AsyncStream { continuation in
            continuation.yield(.keyArrived(Self.descriptor))
        }
    }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        VirtualKeyConnection(key: key, name: descriptor.name)
    }
}

/// PC/SC keys, only those in readers whose name contains `reader` when one is given.
struct FilteredBackend: KeyBackend {
    let inner: PCSCBackend
    let reader: String?

    func events() -> AsyncStream<KeyEvent> {
        let events = inner.events()
        guard let reader = reader?.lowercased() else { return events }
        return AsyncStream { continuation in
            let task = Task {
                for await event in events {
                    switch event {
                    case .keyArrived(let d) where !d.name.lowercased().contains(reader): continue
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
}

enum TUI {
    /// Opens the TUI on the keys `options` choose (or the virtual key) and runs it until the user quits.
    static func run(options: KeyOptions, colors: CursesConfiguration.ColorMode, clipboard: Clipboard,
                    localize: @escaping Localize) throws {
        let backend: any KeyBackend
        if options.virtual {
            backend = VirtualBackend(key: VirtualKey(state: VirtualKeyState.yubiKey5NFC().withDemoAccounts()))
        } else {
            backend = FilteredBackend(inner: PCSCBackend(), reader: options.selector.reader)
        }
        guard isatty(STDIN_FILENO) == 1 || FileManager.default.isReadableFile(atPath: "/dev/tty") else {
            throw YktermError.usage("the TUI needs a terminal; use a subcommand (ykterm --help) in scripts")
        }
        let screen: CursesScreen
        do {
            screen = try CursesScreen(configuration: CursesConfiguration(colors: colors))
        } catch {
            throw YktermError.failed("cannot open the terminal: \(error)")
        }
        let state = AppState(now: Date().timeIntervalSince1970, virtualMode: options.virtual,
                             preferredSerial: options.selector.serial)
        let app = try TerminalApp(screen: screen, state: state, text: localize,
                                  theme: screen.colors ? Theme() : .monochrome, clipboard: clipboard)
        app.run(backend: backend, environment: RunnerEnvironment())
    }
}

extension TUI {
    /// The TUI's words from Resources/strings/<language>.json, English for what a language lacks.
    static func localizer() -> Localize {
        let tables = StringTables.load()
        return { t in t.literal ?? tables.format(t.key, t.arguments) }
    }
}

