import ArgumentParser
import FoundationEssentials
import Glibc
import KeyKit

struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Print readers and keys as they arrive and leave, until interrupted.",
        discussion: "Waits on pcscd without polling. With --json, one JSON object per line.")

    @Flag(name: .long, help: "One JSON object per event (event, reader, atr).")
    var json = false

    func run() async throws {
        for await event in KeyMonitor().events() {
            var fields: [String: String]
            switch event {
            case .readerAdded(let r): fields = ["event": "reader-added", "reader": r]
            case .readerRemoved(let r): fields = ["event": "reader-removed", "reader": r]
            case .keyArrived(let d):
                fields = ["event": "key-arrived", "id": d.id, "reader": d.name, "atr": d.atr.hex]
            case .keyLeft(let id): fields = ["event": "key-left", "id": id]
            case .serviceUnavailable: fields = ["event": "pcscd-unavailable"]
            case .serviceAvailable: fields = ["event": "pcscd-available"]
            }
            if json {
                out(JSONText.compactLine(fields))
            } else {
                let event = fields.removeValue(forKey: "event") ?? ""
                let rest = fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                out(rest.isEmpty ? event : "\(event) \(rest)")
            }
        }
    }
}
