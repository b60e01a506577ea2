import ArgumentParser
import FoundationEssentials
import Glibc
import KeyKit
import VirtualKey

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the keys found, with serial, firmware, form factor and enabled applications.",
        discussion: """
        Keys on PC/SC (USB CCID and NFC readers) are listed with their device information; FIDO HID devices \
        (a USB key's FIDO interface) with their hidraw path, firmware and FIDO applications. Exits with \
        status 3 when no key is found.
        """)

    @OptionGroup var key: KeyOptions

    @Flag(name: .long, help: "Print a JSON array of objects (reader, serial, version, form_factor, applications, ...).")
    var json = false

    @Flag(name: .long, help: "List the PC/SC readers and whether a key is in each, without talking to the keys.")
    var readers = false

    func run() async throws {
        if readers { return try listReaders() }
        var keys = [KeyInfo]()
        var failures = [(reader: String, error: Error)]()
        var hid = [[String: Any]]()
        if key.virtual {
            let connection = VirtualKeyConnection(key: VirtualKey())
            keys = [try await KeyProbe.inspect(connection: connection)]
        } else {
            (hid, failures) = await ListCommand.hidKeys(key.selector)
            do {
                let (found, failed) = try await KeyFinder.inspectAll(key.selector)
                keys = found
                failures += failed
            } catch let e as SmartCardError where !hid.isEmpty {
                // pcscd missing is not fatal when FIDO keys answer over HID.
                failures.append(("pcscd", e))
            }
        }
        if json {
            try printJSON(keys.map(ListCommand.jsonObject) + hid)
        } else {
            for k in keys { out(ListCommand.describe(k)) }
            for h in hid {
                out("\(h["reader"]!): \(h["name"]!), FIDO HID, firmware \(h["version"]!)\n  applications: "
                    + ((h["applications"] as? [String]) ?? []).joined(separator: " "))
            }
        }
        for f in failures { warn("ykterm: \(f.reader): " + PCSCDaemon.describe(f.error)) }
        if keys.isEmpty && hid.isEmpty {
            if !json { warn("ykterm: \(KeyFinderError.noKey(key.selector))") }
            throw ExitCode(ExitStatus.noKey)
        }
    }

    /// FIDO HID devices (USB keys' FIDO interface), with what CTAPHID INIT and getInfo tell.
    static func hidKeys(_ selector: KeySelector) async -> ([[String: Any]], [(reader: String, error: Error)]) {
        var out = [[String: Any]]()
        var failures = [(reader: String, error: Error)]()
        for d in HIDAPIDevice.enumerateFIDO() {
            let name = d.productName ?? "FIDO key"
            guard selector.matches(readerName: d.path) || selector.matches(readerName: name) else { continue }
            let serial = d.serialNumber.flatMap { UInt32($0) }
            if let wanted = selector.serial, serial != wanted { continue }
            do {
                let connection = try await CTAPHIDConnection.open(d)
                var apps = connection.capabilities.contains(.nmsg) ? [String]() : ["U2F"]
                if connection.capabilities.contains(.cbor),
                   let session = try? await CTAP2Session.make(connection: connection) {
                    let info = await session.info
                    if info.versions.contains(where: { $0.hasPrefix("FIDO_2") }) { apps.insert("FIDO2", at: 0) }
                }
                await connection.close()
                out.append(["reader": d.path, "name": name, "serial": serial.map { Int($0) as Any } ?? JSONNull(),
                            "version": connection.deviceVersion.description, "form_factor": "unknown",
                            "applications": apps, "transport": "hid", "vendor_id": Int(d.vendorID),
                            "product_id": Int(d.productID)])
            } catch {
                failures.append((d.path, error))
            }
        }
        return (out, failures)
    }

    private func listReaders() throws {
        let statuses = try PCSCContext().status().filter { key.selector.matches(readerName: $0.name) }
        if json {
            try printJSON(statuses.map { ["reader": $0.name, "key_present": $0.cardPresent && !$0.mute,
                                          "atr": $0.atr.hex, "exclusive": $0.exclusive] as [String: Any] })
        } else {
            for s in statuses {
                out("\(s.name): " + (s.cardPresent ? (s.mute ? "key does not answer" : "key present") : "empty")
                    + (s.exclusive ? " (held exclusively by another program)" : ""))
            }
        }
        if statuses.isEmpty { throw ExitCode(ExitStatus.noKey) }
    }

    static func jsonObject(_ k: KeyInfo) -> [String: Any] {
        [
            "reader": k.reader,
            "name": k.device.productName,
            "serial": k.device.serial.map { Int($0) as Any } ?? JSONNull(),
            "version": k.device.version.description,
            "form_factor": k.device.formFactor.identifier,
            "applications": k.applications,
            "transport": k.overNFC ? "nfc" : "usb",
            "atr": k.atr.hex,
            "config_locked": k.device.isConfigLocked,
            "from_management": k.device.fromManagement,
        ]
    }

    static func describe(_ k: KeyInfo) -> String {
        var line = "\(k.reader): \(k.device.productName)"
        line += k.device.serial.map { ", serial \($0)" } ?? ", serial unknown"
        line += ", firmware \(k.device.version)"
        if k.device.formFactor != .unknown { line += ", \(k.device.formFactor)" }
        line += k.overNFC ? ", NFC" : ", USB"
        line += "\n  applications: " + (k.applications.isEmpty ? "none found" : k.applications.joined(separator: " "))
        return line
    }
}
