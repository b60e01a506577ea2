import KeyKit

/// The machine's keys, only those with a reader or hidraw node whose name contains `reader` when one is given.
public struct FilteredBackend: KeyBackend {
    public let inner: DeviceBackend
    public let reader: String?

    public init(inner: DeviceBackend, reader: String?) {
        self.inner = inner
        self.reader = reader
    }

    public func events() -> AsyncStream<KeyEvent> {
        let events = inner.events()
        guard let reader = reader?.lowercased() else { return events }
        return AsyncStream { continuation in
            let task = Task {
                // The keys let through: a key that gains a matching interface comes in then.
                var shown = Set<String>()
                for await event in events {
                    switch event {
                    case .keyArrived(let d), .keyChanged(let d):
                        if shown.contains(d.id) {
                            continuation.yield(event)
                        } else if KeyDiscovery.matches(d, KeySelector(reader: reader)) {
                            shown.insert(d.id)
                            continuation.yield(.keyArrived(d))
                        }
                    case .keyLeft(let id):
                        if shown.remove(id) != nil { continuation.yield(event) }
                    default: continuation.yield(event)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func connect(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        try await inner.connect(key)
    }

    public func connectHeld(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        try await inner.connectHeld(key)
    }

    public func connectProbe(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        try await inner.connectProbe(key)
    }

}
