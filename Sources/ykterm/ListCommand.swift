import ArgumentParser
import Foundation
import KeyKit
import VirtualKey

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the keys found, with serial, firmware, form factor and enabled applications.",
        discussion: "Exits with status 3 when no key is found.")

    @OptionGroup var key: KeyOptions

    @Flag(name: .long, help: "Print a JSON array of objects (reader, serial, version, form_factor, applications, ...).")
    var json = false

    @Flag(name: .long, help: "List the PC/SC readers and whether a key is in each, without talking to the keys.")
    var readers = false

    func run() async throws {
        if readers { return try listReaders() }
        var keys = [KeyInfo]()
        var failures = [(reader: String, error: Error)]()
        if key.virtual {
            let connection = VirtualKeyConnection(key: VirtualKey())
            keys = [try await KeyProbe.inspect(connection: connection)]
        } else {
            (keys, failures) = try await KeyFinder.inspectAll(key.selector)
        }
        if json {
            try printJSON(keys.map(ListCommand.jsonObject))
        } else {
            for k in keys { out(ListCommand.describe(k)) }
        }
        for f in failures { warn("ykterm: \(f.reader): \(f.error)") }
        if keys.isEmpty {
            if !json { warn("ykterm: \(KeyFinderError.noKey(key.selector))") }
            throw ExitCode(ExitStatus.noKey)
        }
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
            "serial": k.device.serial.map { Int($0) as Any } ?? NSNull(),
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
