import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit
import VirtualKey

/// The key a command uses, as --reader, --device and --virtual chose it: what KeyOptions holds once
/// parsed, and what DirectCommandLine reads without ArgumentParser.
struct KeyChoice: Equatable, Sendable {
    var reader: String?
    var device: UInt32?
    var virtual = false

    /// Refuses a YKTERM_DEVICE that is neither a serial number nor a key's name, unless --device is given.
    static func validate(device: UInt32?) throws {
        if let env = ProcessEnvironment.value("YKTERM_DEVICE"), device == nil, !env.isEmpty,
            UInt32(env) == nil, KeyNames().serial(named: env) == nil
        {
            throw ValidationError(words("cli.device-variable", ["value": env]))
        }
    }

    /// The serial a `--device` value designates: a serial number, or the name a key was given (`ykterm key name`).
    static func serial(device: String) throws -> UInt32 {
        do {
            return try KeyNames().serial(for: device)
        } catch {
            throw ValidationError(loadedTables().text(error.text))
        }
    }

    /// The key to use: --reader and --device, else YKTERM_READER and YKTERM_DEVICE, else the config file's
    /// `[key]` (used only when neither options nor environment name a key).
    var selector: KeySelector {
        selector(environment: ProcessEnvironment.current, config: LoadedConfig.current)
    }

    func selector(environment env: [String: String], config: Config) -> KeySelector {
        let reader = reader ?? env["YKTERM_READER"].flatMap { $0.isEmpty ? nil : $0 }
        let serial = device ?? env["YKTERM_DEVICE"].flatMap { UInt32($0) ?? KeyNames().serial(named: $0) }
        if reader == nil && serial == nil {
            return KeySelector(reader: config.key.reader, serial: config.key.serial)
        }
        return KeySelector(reader: reader, serial: serial)
    }

    /// The chosen key as operations open it: the key the selector designates (`SelectedKey`), its pcsc-lite
    /// calls made where `calls` says (`KeyChoice.inlineCalls` for a one-shot command).
    func selected(calls: PCSCCalls = .queued) -> SelectedKey {
        SelectedKey(selector, calls: calls, silentReader: warnSilentReader, opened: TouchNotice.opened)
    }

    /// The chosen key's interfaces as the operations open them: the built-in virtual key, or the key the selector
    /// designates (`selected`). One OATH, PIV or other smart-card command is one task with one connection, so its
    /// pcsc-lite calls are made inline by default (`KeyChoice.inlineCalls`).
    func opener(calls: PCSCCalls = KeyChoice.inlineCalls) -> any KeyOpener {
        virtual ? VirtualKeyChoice() : selected(calls: calls)
    }

    /// For a command that uses one connection from one task and has nothing to do after a key fails to
    /// answer but report it: pcsc-lite calls on the command's own thread (`PCSCCalls.inline`), and a key that
    /// does not answer in time ends the command with the message and exit status any other timeout gets.
    /// A traced command (`--verbose`, `YKTERM_LOG`) keeps queued calls, so that its trace records the
    /// exchange that timed out.
    static var inlineCalls: PCSCCalls {
        guard WireTrace.observer == nil else { return .queued }
        return .inline { error in _exit(Ykterm.report(error)) }
    }
}

/// How a command chooses its key; shared by every command that talks to one. `oath add` takes several keys in
/// --device (`A,B`); the others refuse a list (`Ykterm.refuseDeviceList`: ArgumentParser fills the top command's
/// options and the subcommand's from the same words, so one type serves both).
struct KeyOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Use the key whose reader name, hidraw path (/dev/hidraw3) or HID product name contains NAME (case-insensitive). Default: $YKTERM_READER, else the config file.",
            valueName: "NAME"))
    var reader: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Use the key with this serial number, or the name given it with ykterm key name. Default: $YKTERM_DEVICE, else the config file.",
            valueName: "SERIAL|NAME"))
    var device: String?

    @Flag(name: .long, help: "Use the built-in virtual key, loaded with demo accounts (changes are not kept).")
    var virtual = false

    /// --all-keys works on every key plugged in: refused beside --device or --virtual, which name keys.
    func refuse(allKeys: Bool) throws {
        if allKeys && (device != nil || virtual) {
            throw ValidationError(words("cli.oath.allKeysAndDevice"))
        }
    }

    /// The keys --device names, in its order.
    var devices: [String] {
        device.map { $0.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpaces } }
            ?? []
    }

    func validate() throws {
        let serials = try devices.map(KeyChoice.serial(device:))
        try KeyChoice.validate(device: serials.first)
    }

    /// The key chosen (the first of a list).
    var choice: KeyChoice {
        KeyChoice(reader: reader, device: devices.first.flatMap { try? KeyChoice.serial(device: $0) }, virtual: virtual)
    }

    var selector: KeySelector { choice.selector }
}

/// `--format pem|der` of the commands that write a public key.
struct PEMOrDER: ParsableArguments {
    @Option(name: [.short, .long], help: ArgumentHelp("pem or der.", valueName: "FORMAT")) var format = "pem"

    /// Whether DER was asked for.
    var der: Bool { format.lowercased() == "der" }

    /// Writes a public key (its SubjectPublicKeyInfo) in the format asked for, DER as it is or PEM text, to
    /// `path` (standard output when nil or "-").
    func write(publicKey spki: [UInt8], to path: String?) throws {
        try PIVFiles.write(der ? spki : Array(PEM.encode(spki, label: PEM.publicKey).utf8), to: path)
    }

    func validate() throws {
        guard ["pem", "der"].contains(format.lowercased()) else {
            throw ValidationError(
                words("cli.option.oneOf", ["option": "--format", "allowed": oneOf(["pem", "der"]), "value": format]))
        }
    }
}
