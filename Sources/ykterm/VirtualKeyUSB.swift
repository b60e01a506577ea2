import ArgumentParser
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import KeyKit
import VirtualKey
import VirtualUSB

// The USB server's log lines and errors stay English: diagnostics of a developer's tool, not the authenticator's words.
extension VirtualKeyCommand.Serve {
    /// `serve --usb`: the key as a USB composite device in a private mount namespace, COMMAND inside.
    func runUSB() throws {
        guard geteuid() == 0 else {
            throw YktermError.failed(
                "virtual-key serve --usb needs root (it mounts FUSE files and tmpfs in a private mount namespace)")
        }
        guard let interfaces = USBInterfaces(parsing: self.interfaces) else {
            throw YktermError.usage(
                "--interfaces must be a comma list of ccid, fido and otp, not \"\(self.interfaces)\"")
        }
        guard let hidrawMode = UInt32(self.hidrawMode, radix: 8), hidrawMode <= 0o777 else {
            throw YktermError.usage(
                "--hidraw-mode must be octal permission bits such as 0600, not \"\(self.hidrawMode)\"")
        }
        guard getenv(USBNamespace.marker) != nil else {
            throw YktermError.failed(
                "\(USBNamespace.reexecInPrivateNamespace(arguments: Array(CommandLine.arguments.dropFirst())))")
        }
        unsetenv(USBNamespace.marker)
        // This process asks the namespace's pcscd (at the standard socket) whether the card is in.
        unsetenv("PCSCLITE_CSOCK_NAME")
        let key = try makeUSBKey(securityKey: interfaces.isSecurityKey)
        let log: @Sendable (String) -> Void = { warn("virtual-key: " + $0) }
        do {
            try USBNamespace.setUpDev()
            try USBNamespace.setUpRun()
        } catch {
            throw YktermError.failed("\(error)")
        }
        // pcscd for the key's CCID interface, and for the vpcd readers of other keys served beside it.
        let pcscd = interfaces.contains(.ccid) || !vpcdReaders.isEmpty ? try namespacePCSCD(log: log) : nil
        var showReader: (@Sendable (String?) throws -> Void)?
        if let pcscd, interfaces.contains(.ccid) { showReader = { name in try pcscd.show(reader: name) } }
        let usb: VirtualUSBKey
        let control: USBControlServer
        do {
            let sysDevices = try USBNamespace.setUpSys()
            // pcscd (re)started with the reader the key has at each plug-in: named after the USB product, which
            // follows the interfaces the key's configuration leaves on.
            usb = VirtualUSBKey(
                key: key, interfaces: interfaces, vpcdPort: pcscd?.port, sysDevices: sysDevices,
                nodeMode: hidrawMode,
                makeFeatures: VirtualKeyUSB.features(key),
                showReader: showReader, log: log)
            try usb.prepareBus()
            // Without CCID the key has no reader; pcscd runs for the other keys' readers alone.
            if let pcscd, showReader == nil { try pcscd.show(reader: nil) }
            try usb.plug()
            // WRITE CONFIG with the reboot flag: the key leaves the bus once its answer is out and comes
            // back with the interfaces its enabled applications need, as the product they make.
            key.setRebootHandler {
                Blocking.run(after: 0.2, label: "ykterm.usb.restart") { usb.restart() }
            }
            control = try USBControlServer(path: USBNamespace.controlPath, key: usb)
        } catch {
            pcscd?.stop()
            throw YktermError.failed("\(error)")
        }
        var environment = [String]()
        var e = environ
        while let entry = e.pointee {
            let s = String(cString: entry)
            if !s.hasPrefix("PCSCLITE_CSOCK_NAME=") && !s.hasPrefix(USBNamespace.controlVariable + "=")
                && !s.hasPrefix("SYSTEMD_DEVICE_VERIFY_SYSFS=")
            {
                environment.append(s)
            }
            e += 1
        }
        environment += [USBNamespace.controlVariable + "=" + USBNamespace.controlPath, "SYSTEMD_DEVICE_VERIFY_SYSFS=0"]
        let argv = command.isEmpty ? [String(cString: getenv("SHELL") ?? strdup("/bin/sh"))] : command
        let product = usb.product
        warn(
            "virtual-key: \(product.deviceName) (USB \(String(format4(product.id)))) serial \(key.state.serial), "
                + "firmware \(key.state.version) plugged in; running \(argv[0])")
        let child: pid_t
        do {
            child = try USBNamespace.spawn(argv, environment: environment, quiet: false)
        } catch {
            try? usb.unplug()
            control.stop()
            pcscd?.stop()
            throw YktermError.failed("\(error)")
        }
        signal(SIGINT, SIG_IGN)
        signal(SIGQUIT, SIG_IGN)
        // A queue of their own: a signal is handled whatever the task pool is busy with (see `Blocking`).
        let signalQueue = DispatchQueue(label: "ykterm.signals")
        var sources = [DispatchSourceSignal]()
        for sig in [SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
            source.setEventHandler { kill(child, sig) }
            source.resume()
            sources.append(source)
        }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        sources.forEach { $0.cancel() }
        control.stop()
        if usb.isPlugged { try? usb.unplug() }
        pcscd?.stop()
        let code: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        throw ExitCode(code)
    }

    /// The namespace's pcscd for a key with a CCID interface (started at the first plug-in).
    private func namespacePCSCD(log: @Sendable (String) -> Void) throws -> NamespacePCSCD {
        guard let port = USBNamespace.freePortPair() else { throw YktermError.failed("no free port for vpcd") }
        let driver = USBNamespace.readerDriver()
        if !driver.oneSlot {
            log("\(USBNamespace.oneSlotDriverName) is not next to ykterm: pcscd shows a second, empty reader")
        }
        return NamespacePCSCD(
            port: port, directory: USBNamespace.runDirectory + "/reader.conf.d", driver: driver.path,
            environment: [
                "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                "YKTERM_IFD_DRIVER=" + USBNamespace.vpcdDriver,
            ], moreVpcdPorts: vpcdReaders)
    }

    private func format4(_ v: UInt16) -> String {
        let s = String(v, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    /// The key as `serve` makes it (state file, serial, firmware, demo accounts, profile); a new key with FIDO alone
    /// (5.0 and later) is a Security Key NFC, whose Management application says so.
    private func makeUSBKey(securityKey: Bool) throws -> VirtualKey {
        let initial = try newKeyState(securityKey: securityKey)
        let touch = Double(touchDelay) / 1000
        do {
            if let state {
                return try VirtualKey(
                    stateFile: VirtualKeyStateFile(path: state), initial: initial,
                    latency: Double(latency) / 1000, touchDelay: touch, profile: keyProfile(),
                    smartCardTransport: .usb, bioSampleStatuses: sampleStatuses(),
                    sensorDelays: sensorDelays())
            }
            return VirtualKey(
                state: initial, latency: Double(latency) / 1000, touchDelay: touch, profile: try keyProfile(),
                smartCardTransport: .usb, bioSampleStatuses: try sampleStatuses(),
                sensorDelays: try sensorDelays())
        } catch {
            throw YktermError.failed("\(error)")
        }
    }
}

enum VirtualKeyUSB {
    /// The OTP interface's feature reports, from the key's OTP HID device.
    static func features(_ key: VirtualKey) -> (@Sendable () -> FeatureReports?)? {
        {
            // One OTP device per plug-in, shared by every open file of the node (as the key's one interface).
            let device = key.makeOTPHIDDevice()
            return FeatureReports(
                set: { try device.setFeature($0) }, get: { try device.getFeature() },
                close: { device.close() })
        }
    }
}

extension VirtualKeyCommand {
    struct USB: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "usb",
            abstract: "Plug or unplug the virtual USB key (inside `virtual-key serve --usb`).",
            subcommands: [Plug.self, Unplug.self])

        struct Plug: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "plug",
                abstract: "Plug the virtual key back in: sysfs entries, then hidraw nodes, then the card in its reader."
            )
            func run() throws { try USB.send("plug") }
        }

        struct Unplug: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "unplug",
                abstract:
                    "Pull the virtual key out: the card leaves its reader, open HID files fail, the hidraw nodes go.")
            func run() throws { try USB.send("unplug") }
        }

        static func send(_ command: String) throws {
            guard let path = getenv(USBNamespace.controlVariable).map({ String(cString: $0) }), !path.isEmpty else {
                throw YktermError.failed(
                    "\(USBNamespace.controlVariable) is not set: run this inside `ykterm virtual-key serve --usb`")
            }
            let answer: String?
            do {
                answer = try USBControl.send(command, path: path)
            } catch {
                throw YktermError.failed("\(error)")
            }
            if let answer { throw YktermError.failed(answer) }
        }
    }
}
