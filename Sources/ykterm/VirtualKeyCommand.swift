import ArgumentParser
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import KeyKit
import VirtualKey

// The server's "virtual-key: …" log lines stay English: diagnostics of a developer's tool, not the authenticator's words.
struct VirtualKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "virtual-key",
        abstract: "The built-in virtual key: a software key with the same applications.",
        subcommands: [Serve.self, USB.self])

    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Serve the virtual key to pcscd through the vsmartcard vpcd driver.",
            discussion: """
                pcscd's vpcd driver (Debian package vsmartcard-vpcd) listens on 127.0.0.1:35963 for its \
                first reader ("Virtual PCD 00 00") and 35964 for the second. The virtual key connects \
                there and appears to every PC/SC client as a YubiKey 5 NFC on an NFC reader. When pcscd \
                restarts, the key reconnects by itself. SIGINT or SIGTERM stops it. With --state, what \
                the key stores is kept in FILE (JSON, mode 0600) and loaded on the next start.

                With --usb (root only) the key is a USB composite YubiKey instead, and COMMAND (default: \
                $SHELL) runs in a private mount namespace where it is plugged in: its CCID interface is a \
                card in the reader "Yubico YubiKey OTP+FIDO+CCID 00 00" of a private pcscd at the standard \
                socket, its FIDO and OTP interfaces are /dev/hidrawN nodes (served through FUSE) with \
                sysfs entries under one USB device (vendor 1050, product 0407 for all three interfaces). \
                --interfaces picks the interfaces (a comma list of ccid, fido, otp; fido alone is a \
                Security Key NFC, with FIDO U2F and FIDO2 alone and no pcscd). `ykterm virtual-key usb unplug` and `usb plug`, run inside, \
                pull the key out and put it back (through the socket in $YKTERM_USB_CONTROL). Every \
                interface shares one key state. When `config usb` changes which interfaces the enabled \
                applications need, the key comes back, as a YubiKey 5 does, as the product of the interfaces \
                left on: product ID 0401 to 0407 and the reader named after it ("Yubico YubiKey FIDO+CCID \
                00 00" with OTP off; pcscd is started again for it). The command exits with COMMAND's status, \
                having stopped pcscd and unmounted everything. --vpcd, --fault and --log-apdus do not apply.
                """)

        @Flag(name: .long, help: "Serve the key as a USB key to COMMAND in a private mount namespace (root).")
        var usb = false

        @Option(name: .long, help: ArgumentHelp("With --usb: the USB interfaces that are on.", valueName: "LIST"))
        var interfaces: String = "otp,fido,ccid"

        @Option(
            name: .customLong("hidraw-mode"),
            help: ArgumentHelp(
                "With --usb: the permission bits of the hidraw nodes, owned by root (0600: as without a udev rule, "
                    + "only root may open them).", valueName: "MODE"))
        var hidrawMode: String = "0666"

        @Option(
            name: .customLong("vpcd-readers"),
            help: ArgumentHelp(
                "With --usb: the namespace's pcscd also has vpcd's two readers at PORT and PORT+1, for more keys "
                    + "served there with --vpcd 127.0.0.1:PORT (repeatable).", valueName: "PORT"))
        var vpcdReaders: [UInt16] = []

        @Argument(
            parsing: .postTerminator,
            help: ArgumentHelp(
                "With --usb: the command to run (default: $SHELL).",
                valueName: "COMMAND"))
        var command: [String] = []

        @Option(name: .long, help: ArgumentHelp("Where pcscd's vpcd driver listens.", valueName: "HOST:PORT"))
        var vpcd: String = "127.0.0.1:35963"

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Keep the key's state in FILE (JSON, mode 0600).",
                valueName: "FILE"))
        var state: String?

        @Option(name: .long, help: "Serial number of a new key (ignored when --state names an existing file).")
        var serial: UInt32 = 28_123_456

        @Option(name: .long, help: ArgumentHelp("Firmware version of a new key.", valueName: "X.Y.Z"))
        var firmware: String = "5.7.2"

        @Option(name: .long, help: ArgumentHelp("Simulated processing time per command.", valueName: "MS"))
        var latency: UInt = 0

        @Option(
            name: .long,
            help: ArgumentHelp(
                "How long a touch takes to arrive for accounts that need one.",
                valueName: "MS"))
        var touchDelay: UInt = 500

        @Flag(
            name: .long,
            help: "Load a new key with demo OATH accounts (TOTP 30/60 s, HOTP, touch, SHA-256, 8 digits, Steam).")
        var demoAccounts = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "AES-128 key of a new key's Yubico OTP credential (NDEF tag). Default: random.", valueName: "HEX"))
        var otpAesKey: String?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Public ID of a new key's Yubico OTP credential. Default: from the serial (vvcc...).",
                valueName: "MODHEX"))
        var otpPublicId: String?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Private ID (6 bytes) of a new key's Yubico OTP credential. Default: random.", valueName: "HEX"))
        var otpPrivateId: String?

        /// The Yubico OTP credential the options ask for, or nil when none is given.
        func otpToken(serial: UInt32) throws -> OTPTokenState? {
            guard otpAesKey != nil || otpPublicId != nil || otpPrivateId != nil else { return nil }
            var token = OTPTokenState.random(serial: serial)
            if let otpAesKey {
                guard let k = try? Hex.decode(otpAesKey), k.count == 16 else {
                    throw ValidationError(words("cli.option.hexDigits", ["option": "--otp-aes-key", "count": "32"]))
                }
                token.aesKey = k
            }
            if let otpPublicId {
                guard let p = try? Modhex.decode(otpPublicId), p.count <= 8 else {
                    throw ValidationError(words("cli.virtual.publicID"))
                }
                token.publicID = p
            }
            if let otpPrivateId {
                guard let p = try? Hex.decode(otpPrivateId), p.count == 6 else {
                    throw ValidationError(words("cli.option.hexDigits", ["option": "--otp-private-id", "count": "12"]))
                }
                token.privateID = p
            }
            return token
        }

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Load a new key with N generated TOTP accounts (Issuer NN:user-NNNN@example.com), beyond what any "
                    + "hardware holds; for benchmarks. Their secrets follow a published pattern and protect nothing.",
                valueName: "N"))
        var accounts: Int?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "How the key behaves where keys of different makes differ: "
                    + VirtualKeyProfile.allCases.map { "\($0.name): \($0.summary)" }.joined(separator: "; ") + ".",
                valueName: "NAME"))
        var profile: String = VirtualKeyProfile.yubikey.name

        @Flag(
            name: .customLong("pin-complexity"),
            help: ArgumentHelp(
                "Make a new key an Enhanced PIN key (firmware 5.7 and later): it enforces PIN complexity, refusing "
                    + "new PIV, OpenPGP and FIDO2 PINs with fewer than two different characters or among the most "
                    + "common."))
        var pinComplexity = false

        /// A new key's state as the options make it: a Security Key NFC (`securityKey`, firmware 5.0 and later) or the
        /// key its firmware names, with the accounts, the Yubico OTP credential and the PIN complexity asked for.
        func newKeyState(securityKey: Bool = false) throws -> VirtualKeyState {
            let version = Version(parsing: firmware)!
            var state =
                securityKey && version.major >= 5
                ? VirtualKeyState.securityKeyNFC(serial: serial, version: version)
                : VirtualKeyState.forFirmware(serial: serial, version: version)
            if demoAccounts { state = state.withDemoAccounts() }
            if let accounts { state = state.withGeneratedAccounts(accounts) }
            state.otpToken = try otpToken(serial: serial)
            state.pinComplexity = pinComplexity
            return state
        }

        @Flag(
            name: .long,
            help: "A YubiKey Bio: fingerprint enrollment with a simulated sensor (the yubikey-bio profile).")
        var bio = false

        @Option(
            name: .customLong("bio-samples"),
            help: ArgumentHelp(
                "With --bio: the statuses of the first fingerprint samples, in order (then good ones), one of "
                    + CTAP2.BioEnrollment.SampleStatus.known.compactMap(\.name).joined(separator: ", ") + ".",
                valueName: "LIST"))
        var bioSamples: String?

        @Option(
            name: .customLong("bio-sensor-delay"),
            help: ArgumentHelp(
                "With --bio: how long the simulated sensor takes for each sample, after the finger came (default "
                    + "200); a list gives the samples' times in order, the last for every sample after (a capture "
                    + "cancelled takes none).",
                valueName: "MS[,MS...]"))
        var bioSensorDelay: String?

        /// `--bio-sensor-delay` in seconds.
        func sensorDelays() throws -> [Double] {
            guard let bioSensorDelay else { return FIDOAuthenticator.defaultSensorDelays }
            guard try keyProfile().hasBioEnrollment else {
                throw ValidationError(words("cli.option.needs", ["option": "--bio-sensor-delay", "other": "--bio"]))
            }
            return try bioSensorDelay.split(separator: ",", omittingEmptySubsequences: false).map { part in
                guard let ms = UInt32(String(part.filter { $0 != " " })) else {
                    throw ValidationError(words("cli.virtual.sensorDelay", ["value": String(part)]))
                }
                return Double(ms) / 1000
            }
        }

        func keyProfile() throws -> VirtualKeyProfile {
            let named: VirtualKeyProfile
            do { named = try VirtualKeyProfile(named: profile) } catch { throw ValidationError(error.description) }
            guard bio else { return named }
            guard named == .yubikey || named == .yubikeyBio else {
                throw ValidationError(words("cli.virtual.bioProfile", ["profile": "\(named)"]))
            }
            return .yubikeyBio
        }

        /// `--bio-samples` as statuses.
        func sampleStatuses() throws -> [CTAP2.BioEnrollment.SampleStatus] {
            guard let bioSamples else { return [] }
            guard try keyProfile().hasBioEnrollment else {
                throw ValidationError(words("cli.option.needs", ["option": "--bio-samples", "other": "--bio"]))
            }
            return try bioSamples.split(separator: ",").map { name in
                guard let s = CTAP2.BioEnrollment.SampleStatus(name: String(name)) else {
                    throw ValidationError(words("cli.virtual.sampleStatus", ["value": String(name)]))
                }
                return s
            }
        }

        @Flag(
            name: .customLong("log-apdus"),
            help: "Log the header (CLA INS P1 P2, data length) of every command APDU, to count exchanges.")
        var logAPDUs = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Inject a fault, for testing clients (repeatable): ACTION@TRIGGER, ACTION one of remove-before, "
                    + "remove-after, truncate, garbage, status=XXXX, hang, keepalive; TRIGGER ins=XX[.P1], ctap=XX[.YY] or nth=N.",
                valueName: "FAULT"))
        var fault: [String] = []

        func faultRules() throws -> [FaultRule] {
            try fault.map { text in
                do { return try FaultRule(parsing: text) } catch let e as FaultRule.ParseError {
                    throw ValidationError(e.description)
                }
            }
        }

        func validate() throws {
            _ = try faultRules()
            _ = try keyProfile()
            _ = try sampleStatuses()
            if let accounts, !(0...100_000).contains(accounts) {
                throw ValidationError(
                    words(
                        "cli.option.range",
                        [
                            "option": "--accounts", "low": "0", "high": "100000",
                            "value": String(accounts),
                        ]))
            }
            _ = try otpToken(serial: serial)
            guard VpcdBridge.parseEndpoint(vpcd) != nil else {
                throw ValidationError(words("cli.virtual.vpcd", ["value": vpcd]))
            }
            guard let version = Version(parsing: firmware) else {
                throw ValidationError(words("cli.virtual.firmware", ["value": firmware]))
            }
            if pinComplexity, version < DeviceInfo.pinComplexityFirmware {
                throw ValidationError(
                    words("cli.virtual.pinComplexity", ["firmware": DeviceInfo.pinComplexityFirmware.description]))
            }
        }

        func run() throws {
            if usb { return try runUSB() }
            guard command.isEmpty else {
                throw ValidationError(words("cli.option.onlyWith", ["option": "COMMAND", "other": "--usb"]))
            }
            let (host, port) = VpcdBridge.parseEndpoint(vpcd)!
            let initial = try newKeyState()
            let touch = Double(touchDelay) / 1000
            let key: VirtualKey
            do {
                if let state {
                    key = try VirtualKey(
                        stateFile: VirtualKeyStateFile(path: state), initial: initial,
                        latency: Double(latency) / 1000, touchDelay: touch, profile: keyProfile(),
                        bioSampleStatuses: sampleStatuses(), sensorDelays: sensorDelays())
                } else {
                    key = VirtualKey(
                        state: initial, latency: Double(latency) / 1000, touchDelay: touch,
                        profile: try keyProfile(), bioSampleStatuses: try sampleStatuses(),
                        sensorDelays: try sensorDelays())
                }
            } catch {
                throw YktermError.failed("\(error)")
            }
            let rules = try faultRules()
            let bridge = VpcdBridge(
                key: key, host: host, port: port,
                faults: rules.isEmpty ? nil : FaultInjector(rules), logAPDUs: logAPDUs
            ) { warn("virtual-key: " + $0) }
            // A queue of their own: a signal is handled whatever the task pool is busy with (see `Blocking`).
            let signalQueue = DispatchQueue(label: "ykterm.signals")
            var sources = [DispatchSourceSignal]()
            for sig in [SIGINT, SIGTERM, SIGHUP] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
                source.setEventHandler {
                    bridge.stop()
                    // A command still inside its simulated latency would hold the exit back; the state is
                    // already saved after every command (atomically), so leaving now loses nothing.
                    Blocking.after(0.3) {
                        warn("virtual-key: stopped")
                        Glibc.exit(0)
                    }
                }
                source.resume()
                sources.append(source)
            }
            warn(
                "virtual-key: serving serial \(key.state.serial), firmware \(key.state.version)"
                    + (key.profile == .yubikey ? "" : ", profile \(key.profile)")
                    + (state.map { ", state in \($0)" } ?? ""))
            bridge.run()
            sources.forEach { $0.cancel() }
            warn("virtual-key: stopped")
        }
    }
}
