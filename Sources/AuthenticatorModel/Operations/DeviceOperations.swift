import KeyKit

/// Where an operation gets the key's Management application: on its reader, else over FIDO HID, else OTP HID
/// (`KeyDescriptor.openManagement`).
public protocol ManagementOpener: Sendable {
    func openManagement() async throws -> OpenedManagement
}

/// Every interface of one key: what the command line's chosen key (`SelectedKey`) and `--virtual` give the
/// operations.
public typealias KeyOpener = SmartCardOpener & FIDOOpener & OTPOpener & ManagementOpener

extension BackendKey: ManagementOpener {
    public func openManagement() async throws -> OpenedManagement {
        let backend = self.backend, key = self.key
        return try await key.openManagement(
            card: { try await backend.connect(key) }, fido: { try await backend.connectFIDO(key, observer: nil) })
    }
}

/// The device's own actions (the Management application), written once for the device view and `ykterm config`
/// and `list`: what the key tells of itself, WRITE CONFIG (applications, timeouts, lock code) and DEVICE RESET.
/// Each opens Management where `ManagementOpener` finds it, does one thing and closes it; none prints or asks.
public struct DeviceOperations: Sendable {
    public let opener: any ManagementOpener

    public init(_ opener: any ManagementOpener) {
        self.opener = opener
    }

    /// What the key tells through Management, and the interface that was (CCID, NFC, FIDO or OTP HID).
    public struct Device: Sendable, Equatable {
        public var info: DeviceInfo
        public var interface: KeyInterfaceKind
    }

    /// Opens Management, runs `body` and closes it (also when `body` threw).
    public func withManagement<T>(_ body: (OpenedManagement) async throws -> T) async throws -> T {
        try await withOpened(opener.openManagement, close: { await $0.close() }, body)
    }

    /// READ CONFIG: what the key tells of itself, and the interface that told it.
    public func device() async throws -> Device {
        try await withManagement { Device(info: try await $0.link.deviceInfo(), interface: $0.interface) }
    }

    /// READ CONFIG, for a change to come: refused (`ManagementError.needsFirmware`) on a key too old for WRITE
    /// CONFIG.
    public func configurableDevice() async throws -> Device {
        let device = try await self.device()
        let minimum = ManagementFeature.writeConfig.minimum
        guard device.info.version >= minimum else {
            throw ManagementError.needsFirmware(.writeConfig, minimum: minimum, actual: device.info.version)
        }
        return device
    }

    /// WRITE CONFIG: the applications and timeouts `configuration` sets (restarting the key when `reboot`), with
    /// the current lock code when the configuration is locked, and a new one to set (all zeros clears it).
    public func write(
        _ configuration: DeviceConfiguration, reboot: Bool = false, currentLockCode: [UInt8]? = nil,
        newLockCode: [UInt8]? = nil
    ) async throws {
        try await withManagement { management in
            try await management.link.write(
                configuration, reboot: reboot, currentLockCode: currentLockCode, newLockCode: newLockCode)
        }
    }

    /// Sets the USB mode, as ykman's `config mode` does: SET MODE on a key before firmware 5.0 (the interfaces
    /// change when it is next plugged in; `autoEject` sets the touch-eject flag, CCID-only modes), and on a
    /// YubiKey 5 the device configuration that mode stands for (its applications that the key supports over USB,
    /// both timeouts; no restart), with the current lock code when the configuration is locked.
    public func setMode(
        _ mode: USBMode, challengeResponseTimeout: UInt8, autoEject: UInt16?, currentLockCode: [UInt8]? = nil
    ) async throws {
        try await withManagement { management in
            let info = try await management.link.deviceInfo()
            if info.version >= ManagementFeature.writeConfig.minimum {
                let configuration = DeviceConfiguration(
                    enabledUSB: mode.capabilities(supported: info.supportedUSB), autoEjectTimeout: autoEject,
                    challengeResponseTimeout: challengeResponseTimeout)
                try await management.link.write(configuration, reboot: false, currentLockCode: currentLockCode)
            } else {
                try await management.link.setMode(
                    mode.setModeData(challengeResponseTimeout: challengeResponseTimeout, autoEject: autoEject))
            }
        }
    }

    /// DEVICE RESET: every application back to a new key's state (firmware 5.6 and later, over a reader). Checked
    /// first either way; unless `confirmed`, it stops there with `DeviceOperationError.resetNeedsConfirmation`, so
    /// the face asks only when the reset can be done, and calls again.
    public func reset(confirmed: Bool) async throws {
        try await withManagement { management in
            let minimum = ManagementFeature.deviceReset.minimum
            let version = try await management.link.deviceInfo().version
            guard version >= minimum else {
                throw ManagementError.needsFirmware(.deviceReset, minimum: minimum, actual: version)
            }
            // A smart-card command: a key reached over HID cannot be reset this way.
            guard case .card(let session) = management.link else {
                throw KeyRouteError.notOnThisKey(.management, [management.link.interface])
            }
            guard confirmed else { throw DeviceOperationError.resetNeedsConfirmation }
            try await session.deviceReset()
        }
    }

    /// What a key tells of itself, over the interface Management is reached on: its reader (on a connection that
    /// gives up after the probe deadline), else its FIDO or OTP HID interface.
    public static func inspect(_ key: KeyDescriptor) async throws -> KeyInfo {
        if let reader = key.reader { return try await inspect(reader: reader) }
        return try await KeyProbe.inspect(hid: key)
    }

    /// What the key in `reader` tells of itself (Management, else the applications that answer), on a probe
    /// connection closed after.
    public static func inspect(reader: String) async throws -> KeyInfo {
        try await withOpened(
            { try await PCSCConnection.connect(reader: reader, probe: true) }, close: { await $0.close() }
        ) { try await KeyProbe.inspect(connection: $0) }
    }
}

/// A question a device operation needs answered before it goes on.
public enum DeviceOperationError: Error, Sendable, Equatable {
    /// DEVICE RESET can be done on this key; the user has not yet agreed.
    case resetNeedsConfirmation
}
