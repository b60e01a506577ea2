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
            let line = MonitorEventJSON(event)
            if json {
                out(try JSONText.compactLine(line))
            } else {
                out(line.text)
            }
        }
    }
}

extension MonitorEventJSON {
    init(event: String, reader: String? = nil, id: String? = nil) {
        self.event = event
        self.reader = reader
        self.id = id
    }

    init(_ event: KeyEvent) {
        switch event {
        case .readerAdded(let r): self.init(event: "reader-added", reader: r)
        case .readerRemoved(let r): self.init(event: "reader-removed", reader: r)
        case .keyArrived(let d): self.init(d, event: "key-arrived")
        case .keyChanged(let d): self.init(d, event: "key-changed")
        case .keyLeft(let id): self.init(event: "key-left", id: id)
        case .serviceUnavailable: self.init(event: "pcscd-unavailable")
        case .serviceRefused: self.init(event: "pcscd-refused")
        case .serviceAvailable: self.init(event: "pcscd-available")
        }
    }

    init(_ d: KeyDescriptor, event: String) {
        self.init(event: event, reader: d.reader, id: d.id)
        name = d.name
        interfaces = d.interfaces.map(\.rawValue).joined(separator: ",")
        if d.reader != nil { atr = d.atr.hex }
        fido = d.fidoHID?.path
        otp = d.otpHID?.path
        serial = d.serial.map(String.init)
    }

    /// The event, then the other fields as key=value, sorted by key.
    var text: String {
        let rest = fields.dropFirst().compactMap { key, value in value.map { (key.stringValue, $0) } }
            .sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
        return rest.isEmpty ? event : "\(event) \(rest)"
    }
}
