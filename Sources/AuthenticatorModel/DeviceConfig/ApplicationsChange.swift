import KeyKit

/// The transports a key's applications are enabled on, each with its own set.
public enum ConfigTransport: String, Sendable, Equatable, CaseIterable {
    case usb, nfc

    /// Its name on screen: USB, NFC.
    public var label: String { rawValue.uppercased() }
}

/// What stands in the way of a configuration change, found before anything is sent to the key.
public enum ConfigProblem: Error, Equatable, Sendable {
    /// Not an application name (OTP, U2F, FIDO2, OATH, PIV, OpenPGP, HSMAUTH).
    case unknownApplication(String)
    /// The key has no such transport (NFC on a USB-only key), or tells nothing of it.
    case transportNotSupported(ConfigTransport)
    /// The key does not have these applications over this transport.
    case notSupported(Capabilities, ConfigTransport)
    /// The same applications both enabled and disabled.
    case enableAndDisable(Capabilities)
    /// Nothing to change was asked for.
    case nothingAsked
    /// A USB key keeps at least one application.
    case disablesAll
    /// The change turns off the interface (or, over NFC, the transport) this connection uses: --force.
    case cutsConnection(KeyInterfaceKind)
    /// The change needs a confirmation and there is no terminal to ask on: --force.
    case needsForce
    /// The user said no.
    case declined
    /// A lock code is not 32 hex digits, or is all zeros (which would clear the lock rather than set it).
    case lockCodeFormat
    /// The new lock code and its repetition differ (the device view's lock code dialog).
    case lockCodeMismatch
    /// --clear on a key whose configuration is not locked.
    case notLocked
    /// A timeout out of its range (seconds).
    case timeoutRange(String, maximum: Int)
}

/// A change of the applications enabled over one transport, checked against what the key says: what is on
/// before and after, and whether the key must restart (its USB interfaces change). The command line and the
/// device view both make their changes through it.
public struct ApplicationsChange: Sendable, Equatable {
    public var transport: ConfigTransport
    public var before: Capabilities
    public var after: Capabilities

    /// Checks `enable` and `disable` against the key's supported and enabled sets over `transport`.
    public init(
        device: DeviceInfo, transport: ConfigTransport, enable: Capabilities,
        disable: Capabilities
    ) throws(ConfigProblem) {
        let supported: Capabilities
        let enabled: Capabilities
        switch transport {
        case .usb:
            supported = device.supportedUSB
            enabled = device.enabledUSB
        case .nfc:
            guard let s = device.supportedNFC, !s.isEmpty else { throw .transportNotSupported(.nfc) }
            supported = s
            enabled = device.enabledNFC ?? []
        }
        guard device.fromManagement, !supported.isEmpty else { throw .transportNotSupported(transport) }
        let both = enable.intersection(disable)
        guard both.isEmpty else { throw .enableAndDisable(both) }
        let unsupported = enable.union(disable).subtracting(supported)
        guard unsupported.isEmpty else { throw .notSupported(unsupported, transport) }
        let after = enabled.union(enable).subtracting(disable)
        if transport == .usb && after.isEmpty { throw .disablesAll }
        self.transport = transport
        self.before = enabled
        self.after = after
    }

    public var changes: Bool { before != after }

    /// A USB key restarts when the interfaces its applications need change (ykman asks the same).
    public var needsReboot: Bool {
        transport == .usb && before.usbInterfaces != after.usbInterfaces
    }

    /// Whether the change turns off what a connection over `interface` goes through: on USB, that interface
    /// once no application on it is left; over NFC, NFC once no application is left on it.
    public func cuts(_ interface: KeyInterfaceKind) -> Bool {
        switch (transport, interface) {
        case (.nfc, .nfc): return after.isEmpty
        case (.usb, .ccid), (.usb, .fido), (.usb, .otp): return !after.usbInterfaces.contains(interface)
        default: return false
        }
    }

    /// The configuration to write.
    public var configuration: DeviceConfiguration {
        transport == .usb ? DeviceConfiguration(enabledUSB: after) : DeviceConfiguration(enabledNFC: after)
    }

    /// The words for before → after: `config.change.applications`.
    public var text: UIText {
        UIText(
            "config.change.applications",
            [
                "transport": transport.label, "before": Self.names(before),
                "after": Self.names(after),
            ])
    }

    /// Application names in ykman's order, or "-" for none.
    public static func names(_ set: Capabilities) -> String {
        set.isEmpty ? "-" : set.names.joined(separator: " ")
    }

    /// Parses application names (case-insensitive, as ykman takes them).
    public static func applications(_ names: [String]) throws(ConfigProblem) -> Capabilities {
        var set = Capabilities()
        for name in names {
            guard let c = Capabilities(name: name) else { throw .unknownApplication(name) }
            set.insert(c)
        }
        return set
    }
}

/// A lock code as the user types it: 32 hex digits (16 bytes).
public enum LockCodeText {
    /// The 16 bytes of `text`; all zeros are refused when `new` (that would clear the lock, not set one).
    public static func parse(_ text: String, new: Bool = false) throws(ConfigProblem) -> [UInt8] {
        let trimmed = text.trimmingSpaces
        guard trimmed.count == DeviceConfiguration.lockCodeLength * 2, let bytes = try? Hex.decode(trimmed) else {
            throw .lockCodeFormat
        }
        if new && bytes == DeviceConfiguration.clearedLockCode { throw .lockCodeFormat }
        return bytes
    }
}
