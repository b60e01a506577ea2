import KeyKit

/// The key a selector designates (a reader or key name, a serial, or neither when one key is plugged in), found
/// each time an operation opens it: the command line's counterpart of `BackendKey`. Each application is opened
/// on the interface that carries it (`KeyDescriptor.channels(for:)`); readers that do not answer are left out
/// and named to `silentReader`.
public struct SelectedKey: KeyOpener {
    public var selector: KeySelector
    /// Where a smart-card connection's pcsc-lite calls run.
    public var calls: PCSCCalls
    /// Told the name of each reader that did not answer in time.
    public var silentReader: (@Sendable (String) -> Void)?
    /// Told the name of the key each opening found (its product name and serial when the opening read them, else
    /// its reader or device name): what a touch notice calls it.
    public var opened: (@Sendable (String) -> Void)?

    public init(
        _ selector: KeySelector, calls: PCSCCalls = .queued, silentReader: (@Sendable (String) -> Void)? = nil,
        opened: (@Sendable (String) -> Void)? = nil
    ) {
        self.selector = selector
        self.calls = calls
        self.silentReader = silentReader
        self.opened = opened
    }

    /// A smart-card connection: one PC/SC transaction until closed, unless `transaction` is false (a connection
    /// that waits for the user between operations takes one per operation).
    public func openSmartCard(transaction: Bool) async throws -> any SmartCardConnection {
        let (connection, info) = try await KeyFinder.connect(
            selector, transaction: transaction, calls: calls, silentReader: silentReader)
        if let opened {
            let named = info.flatMap { i in i.device.productName.map { n in i.device.serial.map { "\(n) \($0)" } ?? n }
            }
            opened(named ?? connection.name)
        }
        return connection
    }

    public func openSmartCard() async throws -> any SmartCardConnection {
        try await openSmartCard(transaction: true)
    }

    public func openHeldSmartCard() async throws -> any SmartCardConnection {
        try await openSmartCard(transaction: false)
    }

    /// FIDO HID on USB, the reader on NFC; used inline (one command, one task: no thread hand-offs).
    public func openFIDO() async throws -> any FIDOConnection {
        try await KeyDiscovery.key(for: .fido, selector, silentReader: silentReader).openFIDO(inline: true)
    }

    /// The reader when the OTP application answers there, else the OTP HID interface.
    public func openOTP() async throws -> OpenedOTP {
        let key = try await KeyDiscovery.key(for: .otp, selector, silentReader: silentReader)
        opened?(key.name)
        return try await key.openOTP()
    }

    /// The Management application: on the reader, else over FIDO HID, else OTP HID.
    public func openManagement() async throws -> OpenedManagement {
        try await KeyDiscovery.key(for: .management, selector, silentReader: silentReader).openManagement()
    }
}
