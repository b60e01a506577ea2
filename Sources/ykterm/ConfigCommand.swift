import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Change the key's configuration: the applications enabled over USB and NFC, the lock code, a reset.",
        discussion: """
            The Management application of a YubiKey 5 (firmware 5.0 and later) keeps one set of enabled \
            applications for USB and one for NFC; an application that is disabled is not there over that \
            transport (SELECT fails). Each command first says what changes (before → after), then asks for \
            confirmation; --force skips the question, and is needed when standard input is not a terminal. \
            While a lock code is set, every change needs it: it is asked for without echo, or read from \
            standard input (32 hex digits, one per line: the current lock code first, then a new one).

            Application names: OTP, U2F, FIDO2, OATH, PIV, OpenPGP, HSMAUTH (any case).
            """,
        subcommands: [USB.self, NFC.self, Mode.self, SetLockCode.self, Reset.self])

    /// Options of `config usb` and `config nfc`.
    struct Applications: ParsableArguments {
        @Option(name: [.long, .short], help: ArgumentHelp("Enable an application (repeatable).", valueName: "APP"))
        var enable: [String] = []

        @Option(name: [.long, .short], help: ArgumentHelp("Disable an application (repeatable).", valueName: "APP"))
        var disable: [String] = []

        @Flag(
            name: [.customLong("enable-all"), .customShort("a")],
            help: "Enable every application the key has over this transport.")
        var enableAll = false

        @Flag(name: [.long, .short], help: "Change without asking, even the interface ykterm is using.")
        var force = false
    }

    struct USB: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "usb",
            abstract: "Enable or disable applications over USB; set the auto-eject and challenge-response timeouts.",
            discussion: """
                When the USB interfaces the enabled applications need change (OTP: OTP HID; U2F, FIDO2: FIDO \
                HID; OATH, PIV, OpenPGP, HSMAUTH: CCID), the key restarts. Turning off the interface ykterm is \
                using (the CCID reader) needs --force. A key keeps at least one application over USB. A key whose \
                CCID interface is off is configured through its FIDO HID interface, else its OTP HID interface.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var apps: Applications

        @Option(
            name: .customLong("autoeject-timeout"),
            help: ArgumentHelp(
                "Seconds after which the smart card ejects itself (0: never).", valueName: "SECONDS"))
        var autoEjectTimeout: Int?

        @Option(
            name: .customLong("chalresp-timeout"),
            help: ArgumentHelp(
                "Seconds a challenge-response slot that requires touch waits for it.", valueName: "SECONDS"))
        var challengeResponseTimeout: Int?

        @Flag(
            name: .customLong("touch-eject"), inversion: .prefixedNo,
            help: "The button ejects and inserts the smart card (CCID), as config mode --touch-eject does.")
        var touchEject: Bool?

        func run() async throws {
            try await ConfigCommand.changeApplications(
                .usb, apps, keyOptions,
                Extras(autoEject: autoEjectTimeout, challengeResponse: challengeResponseTimeout, touchEject: touchEject)
            )
        }
    }

    struct NFC: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "nfc",
            abstract: "Enable or disable applications over NFC; restrict NFC until the key is next on USB power.",
            discussion: """
                With no application left over NFC the key does not answer on an NFC reader at all: over NFC \
                that needs --force. --restrict (firmware 5.7) turns NFC off until the key is next powered from \
                USB, as for sending a key by post: the applications enabled over NFC stay as they are.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var apps: Applications

        @Flag(name: [.customLong("disable-all"), .customShort("D")], help: "Disable every application over NFC.")
        var disableAll = false

        @Flag(name: [.long, .customShort("R")], help: "Turn NFC off until the key is next powered from USB (5.7).")
        var restrict = false

        func run() async throws {
            try await ConfigCommand.changeApplications(
                .nfc, apps, keyOptions, Extras(disableAll: disableAll, restrictNFC: restrict))
        }
    }

    struct Mode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mode",
            abstract:
                "Set the USB mode (the USB interfaces) as ykman's config mode does: for keys before the YubiKey 5.",
            discussion: """
                MODE is OTP, FIDO, CCID or a combination (OTP+FIDO+CCID), shortened to first letters (o+c), \
                the mode's number (0 to 6), or a change of the current mode (+CCID, -OTP, +c-o). A key before firmware 5.0 takes SET MODE and turns the interfaces on \
                when it is next plugged in; on a YubiKey 5 the mode stands for its applications over USB (OTP; \
                U2F and FIDO2; OATH, PIV, OpenPGP and HSMAUTH), written as config usb writes them (config usb \
                chooses them one by one). Asks first unless --force; a mode that is already set, or one the key \
                does not support, is refused unless --force.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @Argument(help: ArgumentHelp("The mode: OTP+FIDO+CCID, o+c, ... or 0 to 6.", valueName: "MODE"))
        var mode: String

        @Flag(name: .long, help: "The button ejects and inserts the smart card (CCID mode only).")
        var touchEject = false

        @Option(
            name: .customLong("autoeject-timeout"),
            help: ArgumentHelp(
                "Seconds after which the smart card ejects itself (implies --touch-eject).", valueName: "SECONDS"))
        var autoEjectTimeout = 0

        @Option(
            name: .customLong("chalresp-timeout"),
            help: ArgumentHelp(
                "Seconds a challenge-response slot that requires touch waits for it.", valueName: "SECONDS"))
        var challengeResponseTimeout = 0

        @Flag(name: [.long, .short], help: "Set it without asking, even when it is set already or not supported.")
        var force = false

        func run() async throws {
            guard (0...Int(UInt16.max)).contains(autoEjectTimeout) else {
                throw ConfigProblem.timeoutRange("--autoeject-timeout", maximum: Int(UInt16.max))
            }
            guard (0...Int(UInt8.max)).contains(challengeResponseTimeout) else {
                throw ConfigProblem.timeoutRange("--chalresp-timeout", maximum: Int(UInt8.max))
            }
            let prompt = Prompt()
            let operations = DeviceOperations(keyOptions.choice.opener())
            let relative = self.mode.hasPrefix("+") || self.mode.hasPrefix("-")
            // A change of the current mode needs the key's; a mode that parses on its own is checked first.
            if !relative, USBMode(parsing: self.mode) == nil {
                throw YktermError.usage(words("cli.config.mode.invalid", ["mode": self.mode]))
            }
            let info = try await operations.device().info
            guard let mode = USBMode(parsing: self.mode, current: info.enabledUSB.usbInterfaces) else {
                throw YktermError.usage(words("cli.config.mode.invalid", ["mode": self.mode]))
            }
            let touchEject = touchEject || autoEjectTimeout > 0
            if touchEject && mode.interfaces != [.ccid] {
                throw YktermError.usage(words("cli.config.mode.touchEjectCCID"))
            }
            if !force {
                if USBMode(enabled: info.enabledUSB) == mode {
                    out(words("cli.config.mode.already", ["mode": "\(mode)"]))
                    return
                }
                if !mode.interfaces.isSubset(of: info.supportedUSB.usbInterfaces) {
                    throw YktermError.failed(words("cli.config.mode.unsupported", ["mode": "\(mode)"]))
                }
                try ConfigCommand.confirm(
                    prompt, words("cli.config.mode.confirm", ["mode": "\(mode)"]), force: false)
            }
            let is5 = info.version >= ManagementFeature.writeConfig.minimum
            var current = is5 && info.isConfigLocked ? try ConfigCommand.readLockCode(prompt, new: false) : nil
            defer { current?.zero() }
            try await operations.setMode(
                mode, challengeResponseTimeout: UInt8(challengeResponseTimeout),
                autoEject: touchEject ? UInt16(autoEjectTimeout) : nil, currentLockCode: current)
            out(words(is5 ? "cli.config.mode.set5" : "cli.config.mode.set", ["mode": "\(mode)"]))
        }
    }

    struct SetLockCode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-lock-code",
            abstract: "Set, change or (--clear) remove the configuration lock code.",
            discussion: """
                The lock code is 32 hex digits (16 bytes). Once set, no configuration change is made without it. \
                The current lock code (when one is set) and then the new one are asked for without echo (the new \
                one twice), or read from standard input one per line.
                """)

        @OptionGroup var keyOptions: KeyOptions

        @Flag(name: [.long, .short], help: "Remove the lock code.")
        var clear = false

        func run() async throws {
            let prompt = Prompt()
            let tables = StringTables.load()
            let clear = self.clear
            let operations = DeviceOperations(keyOptions.choice.opener())
            let locked = try await operations.configurableDevice().info.isConfigLocked
            if clear && !locked { throw ConfigProblem.notLocked }
            // Asked while the key is not held; written on a connection of its own.
            var current = locked ? try ConfigCommand.readLockCode(prompt, new: false) : nil
            defer { current?.zero() }
            var next = clear ? DeviceConfiguration.clearedLockCode : try ConfigCommand.readLockCode(prompt, new: true)
            defer { next.zero() }
            let change =
                clear ? "config.change.lock-cleared" : locked ? "config.change.lock-changed" : "config.change.lock-set"
            out(tables.text(UIText(change)))
            try await operations.write(DeviceConfiguration(), currentLockCode: current, newLockCode: next)
            out(tables.text(UIText("config.done")))
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract:
                "Reset every application of the key at once (firmware 5.6 and later; asks first, unless --force).",
            discussion: """
                DEVICE RESET of the Management application: OATH, PIV, FIDO and the OTP slots go back to a new \
                key's state. Keys without it answer that they do not; reset each application then (ykterm oath \
                reset, ykterm piv reset, ykterm fido reset). The enabled applications and the lock code stay.
                """)

        @OptionGroup var keyOptions: KeyOptions

        @Flag(name: [.long, .short], help: "Reset without asking.")
        var force = false

        func run() async throws {
            let prompt = Prompt()
            let tables = StringTables.load()
            let force = self.force
            let operations = DeviceOperations(keyOptions.choice.opener())
            do {
                // Checked (firmware, a reader rather than HID) before anything is asked.
                try await operations.reset(confirmed: force)
            } catch DeviceOperationError.resetNeedsConfirmation {
                try ConfigCommand.confirm(prompt, tables.text(UIText("config.reset.confirm")), force: false)
                try await operations.reset(confirmed: true)
            }
            out(tables.text(UIText("config.reset.done")))
        }
    }

    // MARK: Shared

    /// What `config usb` and `config nfc` change beside the applications named.
    struct Extras {
        var autoEject: Int?
        var challengeResponse: Int?
        var touchEject: Bool?
        var disableAll = false
        var restrictNFC = false
    }

    /// `config usb` and `config nfc`: checks the change, says what changes, asks, then writes it.
    static func changeApplications(
        _ transport: ConfigTransport, _ apps: Applications, _ options: KeyOptions, _ extras: Extras
    ) async throws {
        let (autoEject, challengeResponse) = (extras.autoEject, extras.challengeResponse)
        let enable = try ApplicationsChange.applications(apps.enable)
        let disable = try ApplicationsChange.applications(apps.disable)
        if let autoEject, !(0...Int(UInt16.max)).contains(autoEject) {
            throw ConfigProblem.timeoutRange("--autoeject-timeout", maximum: Int(UInt16.max))
        }
        if let challengeResponse, !(0...Int(UInt8.max)).contains(challengeResponse) {
            throw ConfigProblem.timeoutRange("--chalresp-timeout", maximum: Int(UInt8.max))
        }
        guard
            !enable.isEmpty || !disable.isEmpty || apps.enableAll || autoEject != nil || challengeResponse != nil
                || extras.touchEject != nil || extras.disableAll || extras.restrictNFC
        else {
            throw ConfigProblem.nothingAsked
        }
        let prompt = Prompt()
        let tables = StringTables.load()
        // The key is read, the user asked while it is not held, and the change written on a connection of its own.
        let operations = DeviceOperations(options.choice.opener())
        let found = try await operations.configurableDevice()
        let device = found.info, interface = found.interface
        var enabling = enable
        if apps.enableAll {
            enabling = transport == .usb ? device.supportedUSB : device.supportedNFC ?? []
        }
        let disabling = extras.disableAll ? device.supportedNFC ?? [] : disable
        if extras.restrictNFC {
            let minimum = ManagementFeature.nfcRestriction.minimum
            guard device.version >= minimum else {
                throw ManagementError.needsFirmware(.nfcRestriction, minimum: minimum, actual: device.version)
            }
        }
        let change = try ApplicationsChange(
            device: device, transport: transport, enable: enabling, disable: disabling)
        var configuration = change.changes ? change.configuration : DeviceConfiguration()
        var lines = change.changes ? [change.text] : []
        // A timeout that changes: set, and said as before → after.
        func timeout(_ key: String, _ wanted: Int?, _ now: Int?, set: (Int) -> Void) {
            guard let wanted, wanted != now ?? 0 else { return }
            set(wanted)
            lines.append(UIText(key, ["before": String(now ?? 0), "after": String(wanted)]))
        }
        timeout("config.change.auto-eject", autoEject, device.autoEjectTimeout) {
            configuration.autoEjectTimeout = UInt16($0)
        }
        timeout("config.change.chalresp", challengeResponse, device.challengeResponseTimeout) {
            configuration.challengeResponseTimeout = UInt8($0)
        }
        if let touchEject = extras.touchEject, touchEject != (device.deviceFlags & USBMode.touchEjectFlag != 0) {
            configuration.deviceFlags =
                touchEject ? device.deviceFlags | USBMode.touchEjectFlag : device.deviceFlags & ~USBMode.touchEjectFlag
            lines.append(UIText(touchEject ? "config.change.touch-eject-on" : "config.change.touch-eject-off"))
        }
        if extras.restrictNFC {
            configuration.restrictNFC = true
            lines.append(UIText("config.change.nfc-restricted"))
        }
        guard !lines.isEmpty else {
            out(tables.text(UIText("config.nothing-changes")))
            return
        }
        let reboot = change.needsReboot
        if reboot {
            lines.append(
                UIText(
                    "config.change.reboot",
                    [
                        "before": interfaceNames(change.before),
                        "after": interfaceNames(change.after),
                    ]))
        }
        let cuts = change.cuts(interface) || (extras.restrictNFC && interface == .nfc)
        if cuts && !apps.force { throw ConfigProblem.cutsConnection(interface) }
        for line in lines { out(tables.text(line)) }
        try confirm(prompt, tables.text(UIText("config.confirm")), force: apps.force)
        var current = device.isConfigLocked ? try readLockCode(prompt, new: false) : nil
        defer { current?.zero() }
        try await operations.write(configuration, reboot: reboot, currentLockCode: current)
        out(tables.text(UIText("config.done")))
    }

    /// OTP+FIDO+CCID: the USB interfaces the applications need, in the order a YubiKey's name lists them.
    static func interfaceNames(_ apps: Capabilities) -> String {
        let on = apps.usbInterfaces
        let names = [(KeyInterfaceKind.otp, "OTP"), (.fido, "FIDO"), (.ccid, "CCID")].filter { on.contains($0.0) }.map(
            \.1)
        return names.isEmpty ? "-" : names.joined(separator: "+")
    }

    /// Asks `question` unless `force`; without a terminal to ask on, refuses.
    static func confirm(_ prompt: Prompt, _ question: String, force: Bool) throws {
        guard !force else { return }
        guard prompt.interactive else { throw ConfigProblem.needsForce }
        guard prompt.confirm(question) else { throw ConfigProblem.declined }
    }

    /// A lock code from the terminal (no echo; a new one twice) or a line of standard input.
    static func readLockCode(_ prompt: Prompt, new: Bool) throws -> [UInt8] {
        let tables = StringTables.load()
        var text =
            new
            ? try prompt.newSecret(tables.text(UIText("config.prompt.new")), again: words("cli.config.repeatLockCode"))
            : try prompt.secret(tables.text(UIText("config.prompt.current")))
        defer { text = "" }
        return try LockCodeText.parse(text, new: new)
    }
}

extension [UInt8] {
    /// Overwrites the bytes with zeros (a secret no longer needed).
    mutating func zero() {
        for i in indices { self[i] = 0 }
    }
}
