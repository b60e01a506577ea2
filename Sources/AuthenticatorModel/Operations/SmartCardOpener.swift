import KeyKit

/// Where an operation gets the key's smart-card interface (CCID on USB, or its NFC reader): the TUI's backend
/// and the key it shows, or the key the command line chose. Operations open it through `withSmartCard`, the one
/// place that closes it again.
public protocol SmartCardOpener: Sendable {
    /// A connection for one operation: on PC/SC one transaction, so no other program's command comes between.
    func openSmartCard() async throws -> any SmartCardConnection
    /// A connection kept while the user works between operations (the APDU console): no transaction while it is
    /// open, so other programs keep using the key; each operation takes one of its own.
    func openHeldSmartCard() async throws -> any SmartCardConnection
}

extension SmartCardOpener {
    /// Where holding and not holding are the same (the virtual key, which no other program shares).
    public func openHeldSmartCard() async throws -> any SmartCardConnection {
        try await openSmartCard()
    }
}

/// Opens `opener`'s interface, runs `body` on it and closes it, whether `body` returned or threw.
public func withSmartCard<T>(
    _ opener: any SmartCardOpener,
    _ body: (any SmartCardConnection) async throws -> T
) async throws -> T {
    try await withOpened(opener.openSmartCard, close: { await $0.close() }, body)
}

/// Runs `body` on what `open` opened, then `close`s it, whether `body` returned or threw: the one place every
/// operation's interface (a connection, a session on it) is closed.
public func withOpened<Opened, T>(
    _ open: () async throws -> Opened, close: (Opened) async -> Void,
    _ body: (Opened) async throws -> T
) async throws -> T {
    let opened = try await open()
    do {
        let result = try await body(opened)
        await close(opened)
        return result
    } catch {
        await close(opened)
        throw error
    }
}

/// Where an operation gets the key's FIDO interface: CTAPHID on the FIDO HID interface on USB, CTAP over the
/// reader on NFC (`KeyDescriptor.channels(for: .fido)`).
public protocol FIDOOpener: Sendable {
    func openFIDO() async throws -> any FIDOConnection
}

/// A key the TUI shows, reached through its backend (with the runner's trace observer, when it has one).
public struct BackendKey: SmartCardOpener, FIDOOpener {
    public let backend: any KeyBackend
    public let key: KeyDescriptor
    public let observer: (@Sendable (APDUExchange) -> Void)?

    public init(_ backend: any KeyBackend, _ key: KeyDescriptor, observer: (@Sendable (APDUExchange) -> Void)? = nil) {
        self.backend = backend
        self.key = key
        self.observer = observer
    }

    public func openSmartCard() async throws -> any SmartCardConnection {
        try await backend.connect(key)
    }

    public func openHeldSmartCard() async throws -> any SmartCardConnection {
        try await backend.connectHeld(key)
    }

    public func openFIDO() async throws -> any FIDOConnection {
        try await backend.connectFIDO(key, observer: observer)
    }
}

/// A FIDO interface with something put around each connection it opens: the command line's Ctrl-C handling
/// (`InterruptibleFIDOConnection`).
public struct WrappedFIDOOpener: FIDOOpener {
    public let inner: any FIDOOpener
    public let wrap: @Sendable (any FIDOConnection) -> any FIDOConnection

    public init(_ inner: any FIDOOpener, wrap: @escaping @Sendable (any FIDOConnection) -> any FIDOConnection) {
        self.inner = inner
        self.wrap = wrap
    }

    public func openFIDO() async throws -> any FIDOConnection {
        wrap(try await inner.openFIDO())
    }
}
