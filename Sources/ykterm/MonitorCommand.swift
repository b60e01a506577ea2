import ArgumentParser
import FoundationEssentials
import Glibc
import KeyKit

struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Print readers and keys as they arrive and leave, until interrupted.",
        discussion: """
            A key is one entry however many interfaces it has: a USB YubiKey's CCID reader, FIDO HID and OTP HID \
            interfaces are joined, and key-changed says when one comes or goes. Waits on pcscd and on /dev \
            (inotify) without polling; HID keys are reported while pcscd is not running. With --json, one JSON \
            object per line.
            """)

    @Flag(name: .long, help: "One JSON object per event (event, id, name, interfaces, reader, atr, fido, otp).")
    var json = false

    func run() async throws {
        for await event in DeviceMonitor().events() {
            var fields: [String: String]
            switch event {
            case .readerAdded(let r): fields = ["event": "reader-added", "reader": r]
            case .readerRemoved(let r): fields = ["event": "reader-removed", "reader": r]
            case .keyArrived(let d):
                fields = MonitorCommand.fields(d, event: "key-arrived")
            case .keyChanged(let d):
                fields = MonitorCommand.fields(d, event: "key-changed")
            case .keyLeft(let id): fields = ["event": "key-left", "id": id]
            case .serviceUnavailable: fields = ["event": "pcscd-unavailable"]
            case .serviceRefused: fields = ["event": "pcscd-refused"]
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

    static func fields(_ d: KeyDescriptor, event: String) -> [String: String] {
        var f = [
            "event": event, "id": d.id, "name": d.name,
            "interfaces": d.interfaces.map(\.rawValue).joined(separator: ","),
        ]
        if let r = d.reader {
            f["reader"] = r
            f["atr"] = d.atr.hex
        }
        if let p = d.fidoHID?.path { f["fido"] = p }
        if let p = d.otpHID?.path { f["otp"] = p }
        if let s = d.serial { f["serial"] = String(s) }
        return f
    }
}
