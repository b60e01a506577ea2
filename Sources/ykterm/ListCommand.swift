import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit
import VirtualKey

struct ListCommand: RequestCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the keys found, one per key, with interfaces, serial, firmware, form factor and applications.",
        discussion: """
            A USB YubiKey is one device with up to three interfaces — CCID (a PC/SC reader), FIDO HID and OTP HID — \
            and is listed once, with them all ("interfaces": ["ccid", "fido", "otp"]); a key on an NFC reader has \
            ["nfc"]. Its information comes from the Management application over the first interface that has it. \
            Keys with only HID interfaces (Security Keys, keys with CCID turned off) are listed without pcscd. A HID \
            node that cannot be opened is listed with the reason and the fix, also one this user may not open on a key \
            read over its other interfaces. Exits with status 3 when no key is found.
            """)

    @OptionGroup var key: KeyOptions

    @Flag(
        name: .long,
        help:
            "Print a JSON array, one object per key (reader, interfaces, serial, version, form_factor, applications, ...)."
    )
    var json = false

    @Flag(name: .long, help: "List the PC/SC readers and whether a key is in each, without talking to the keys.")
    var readers = false

    /// One key as listed: what it told of itself, or why it could not be asked.
    struct Row {
        var key: KeyDescriptor?
        var info: KeyInfo?
        var error: Error?
    }

    /// The command line's values, as DirectCommandLine also reads them without ArgumentParser.
    var request: Request { Request(key: key.choice, json: json, readers: readers) }

    /// The work of `list`, from the values of its command line.
    struct Request: CommandRequest, Equatable, Sendable {
        var key: KeyChoice
        var json: Bool
        var readers: Bool

        func run() async throws {
            if readers { return try listReaders() }
            var rows = [Row]()
            var failures = [(reader: String, error: Error)]()
            if key.virtual {
                let connection = VirtualKeyConnection(key: VirtualKey())
                rows = [Row(info: try await KeyProbe.inspect(connection: connection))]
            } else {
                let (keys, pcscError) = await KeyDiscovery.keys(key.selector)
                if let pcscError {
                    // Without pcscd, keys with HID interfaces are still listed; its absence is said.
                    if keys.isEmpty { throw pcscError }
                    failures.append(("pcscd", pcscError))
                }
                // Each key answers in its own time: ask them all at once, list them in discovery order.
                let inspected = await withTaskGroup(of: (Int, Row).self) { group -> [Row] in
                    for (i, d) in keys.enumerated() { group.addTask { (i, await ListCommand.inspect(d)) } }
                    var rows = [Row?](repeating: nil, count: keys.count)
                    for await (i, row) in group { rows[i] = row }
                    return rows.compactMap { $0 }
                }
                for (d, found) in zip(keys, inspected) {
                    var row = found
                    if let wanted = key.selector.serial {
                        guard let serial = row.info?.device.serial ?? d.serial, serial == wanted else { continue }
                    }
                    if row.error != nil, row.info == nil { row.key = d }
                    rows.append(row)
                }
            }
            if json {
                try printJSON(rows.map(ListedKeyJSON.init))
            } else {
                for r in rows { out(ListCommand.describe(r)) }
            }
            for f in failures { warn("ykterm: \(f.reader): " + explained(f.error).1) }
            if rows.isEmpty {
                if !json { warn("ykterm: " + explained(KeyFinderError.noKey(key.selector)).1) }
                throw ExitCode(ExitStatus.noKey)
            }
        }

        private func listReaders() throws {
            let statuses = try PCSCContext().status().filter { key.selector.matches(readerName: $0.name) }
            if json {
                try printJSON(statuses.map(ReaderStatusJSON.init))
            } else {
                for s in statuses {
                    var state = words(
                        s.cardPresent
                            ? (s.mute ? "cli.list.reader.mute" : "cli.list.reader.present") : "cli.list.reader.empty")
                    if s.exclusive { state = words("cli.list.reader.exclusive", ["state": state]) }
                    out("\(s.name): " + state)
                }
            }
            if statuses.isEmpty { throw ExitCode(ExitStatus.noKey) }
        }
    }

    /// What a key tells of itself, over the interface Management is reached on: its reader, else FIDO HID.
    static func inspect(_ d: KeyDescriptor) async -> Row {
        do {
            return Row(key: d, info: try await DeviceOperations.inspect(d))
        } catch {
            return Row(key: d, error: error)
        }
    }

    /// The key's hidraw nodes this user may not open (no udev rule for them), with why and the fix. Asked with
    /// access(2), without opening them: the key's other interfaces still give its information.
    static func unopenableHID(_ d: KeyDescriptor?) -> [(path: String, problem: String)] {
        guard let d else { return [] }
        return [d.fidoHID?.path, d.otpHID?.path].compactMap { $0 }.compactMap { path in
            guard path.hasPrefix("/"), access(path, R_OK | W_OK) != 0, errno == EACCES || errno == EPERM else {
                return nil
            }
            return (path, explained(HIDDeviceError.permissionDenied(path)).1)
        }
    }

    static func describe(_ row: Row) -> String {
        let place = row.key.map(KeyDiscovery.place) ?? row.info?.reader ?? ""
        guard let k = row.info else {
            return "\(place): \(row.key?.name ?? words("cli.list.key"))\n  "
                + words("cli.list.unreadable", ["detail": describeError(row.error!)])
        }
        // The key's name, then what it is, each in the user's words: "serial 123, firmware 5.7.2, USB-A keychain, USB".
        var facts = [
            (k.device.serial ?? row.key?.serial).map { words("cli.list.serial", ["serial": "\($0)"]) }
                ?? words("cli.list.serialUnknown"),
            words("cli.list.firmware", ["version": "\(k.device.version)"]),
        ]
        if k.device.formFactor != .unknown {
            facts.append(loadedTables().text(UIText("form-factor." + k.device.formFactor.identifier)))
        }
        facts.append(k.overNFC ? "NFC" : "USB")
        var name = k.device.displayName
        if let given = KeyNames().name(of: k.device.serial ?? row.key?.serial) { name += " '\(given)'" }
        var line = "\(place): \(name), " + facts.joined(separator: ", ")
        if let d = row.key, !k.overNFC {
            line +=
                "\n  "
                + words(
                    "cli.list.interfaces",
                    ["interfaces": d.interfaces.map { $0.rawValue.uppercased() }.joined(separator: "+")])
        }
        line +=
            "\n  "
            + words(
                "cli.list.applications",
                [
                    "applications": k.applications.isEmpty
                        ? words("cli.list.noApplications")
                        : k.applications.joined(separator: " ")
                ])
        for node in unopenableHID(row.key) { line += "\n  " + node.problem }
        return line
    }

    static func describeError(_ error: Error) -> String {
        explained(error).1
    }
}

extension DeviceInfo {
    /// The product name, or for a key that has none what it is, in the user's language.
    var displayName: String { productName ?? StringTables.load().text(UIText(unnamedKey.key)) }
}

extension ListedKeyJSON {
    init(_ row: ListCommand.Row) {
        let d = row.key
        reader = d.map(KeyDiscovery.place) ?? row.info?.reader ?? ""
        name = row.info?.device.productName ?? d?.name ?? ""
        serial = (row.info?.device.serial ?? d?.serial).map { Int($0) }
        keyName = KeyNames().name(of: (row.info?.device.serial ?? d?.serial))
        interfaces = d.map { $0.interfaces.map(\.rawValue) } ?? [(row.info?.overNFC ?? false) ? "nfc" : "ccid"]
        fidoHID = d?.fidoHID?.path
        otpHID = d?.otpHID?.path
        device = row.info.map { k in
            Device(
                version: k.device.version.description, formFactor: k.device.formFactor.identifier,
                applications: k.applications, transport: k.overNFC ? "nfc" : "usb", atr: k.atr.hex,
                configLocked: k.device.isConfigLocked, fromManagement: k.device.fromManagement)
        }
        error = row.error.map(ListCommand.describeError)
        hidErrors = Dictionary(
            ListCommand.unopenableHID(d).map { ($0.path, $0.problem) },
            uniquingKeysWith: { first, _ in first })
    }
}

extension ReaderStatusJSON {
    init(_ status: ReaderStatus) {
        self.init(
            reader: status.name, keyPresent: status.cardPresent && !status.mute, atr: status.atr.hex,
            exclusive: status.exclusive)
    }
}
