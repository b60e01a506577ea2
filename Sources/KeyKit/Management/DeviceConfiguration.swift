/// What WRITE CONFIG changes on a key: each field that is nil stays as the key has it.
public struct DeviceConfiguration: Sendable, Hashable {
    /// The applications enabled over USB (tag 0x03).
    public var enabledUSB: Capabilities?
    /// The applications enabled over NFC (tag 0x0E).
    public var enabledNFC: Capabilities?
    /// Seconds after which the smart card ejects itself; 0: never (tag 0x06).
    public var autoEjectTimeout: UInt16?
    /// Seconds a challenge-response slot that requires touch waits for it (tag 0x07).
    public var challengeResponseTimeout: UInt8?
    /// Device flags (tag 0x08).
    public var deviceFlags: UInt8?
    /// Turns NFC off until the key is next powered from USB (tag 0x17; firmware 5.7 and later).
    public var restrictNFC = false

    public init(
        enabledUSB: Capabilities? = nil, enabledNFC: Capabilities? = nil, autoEjectTimeout: UInt16? = nil,
        challengeResponseTimeout: UInt8? = nil, deviceFlags: UInt8? = nil
    ) {
        self.enabledUSB = enabledUSB
        self.enabledNFC = enabledNFC
        self.autoEjectTimeout = autoEjectTimeout
        self.challengeResponseTimeout = challengeResponseTimeout
        self.deviceFlags = deviceFlags
    }

    /// The lock code that clears the configuration lock when written as the new one: 16 zero bytes.
    public static let clearedLockCode = [UInt8](repeating: 0, count: lockCodeLength)
    /// A configuration lock code is 16 bytes.
    public static let lockCodeLength = 16

    /// WRITE CONFIG's data: a length byte, then the TLVs — the reboot flag, the current lock code, the
    /// settings that are not nil, and the new lock code, in that order.
    public func writeConfigData(
        reboot: Bool, currentLockCode: [UInt8]? = nil,
        newLockCode: [UInt8]? = nil
    ) throws(ManagementError) -> [UInt8] {
        for code in [currentLockCode, newLockCode] {
            if let code, code.count != Self.lockCodeLength { throw .lockCodeLength(code.count) }
        }
        var tlvs = [TLV]()
        if reboot { tlvs.append(TLV(ManagementTag.reboot, [])) }
        if let currentLockCode { tlvs.append(TLV(ManagementTag.unlock, currentLockCode)) }
        if let enabledUSB {
            tlvs.append(TLV(ManagementTag.usbEnabled, BigEndian.bytes(UInt64(enabledUSB.rawValue), count: 2)))
        }
        if let enabledNFC {
            tlvs.append(TLV(ManagementTag.nfcEnabled, BigEndian.bytes(UInt64(enabledNFC.rawValue), count: 2)))
        }
        if let autoEjectTimeout {
            tlvs.append(TLV(ManagementTag.autoEjectTimeout, BigEndian.bytes(UInt64(autoEjectTimeout), count: 2)))
        }
        if let challengeResponseTimeout {
            tlvs.append(TLV(ManagementTag.challengeResponseTimeout, [challengeResponseTimeout]))
        }
        if let deviceFlags { tlvs.append(TLV(ManagementTag.deviceFlags, [deviceFlags])) }
        if restrictNFC { tlvs.append(TLV(ManagementTag.nfcRestricted, [1])) }
        if let newLockCode { tlvs.append(TLV(ManagementTag.configLock, newLockCode)) }
        let body = tlvs.flatMap(\.encoded)
        guard body.count <= 0xFF else { throw .configurationTooLarge(body.count) }
        return [UInt8(body.count)] + body
    }
}

extension Capabilities {
    /// The USB interfaces that carry these applications (as a YubiKey turns them on): OTP on the OTP HID
    /// interface, U2F and FIDO2 on FIDO HID, OATH, PIV, OpenPGP and HSMAUTH on CCID.
    public var usbInterfaces: Set<KeyInterfaceKind> {
        var out = Set<KeyInterfaceKind>()
        if contains(.otp) { out.insert(.otp) }
        if !isDisjoint(with: [.u2f, .fido2]) { out.insert(.fido) }
        if !isDisjoint(with: Capabilities.onCCID) { out.insert(.ccid) }
        return out
    }

    /// The applications whose presence keeps a USB key's CCID interface on.
    public static let onCCID: Capabilities = [.oath, .piv, .openpgp, .hsmauth]

    /// Every application this type names.
    public static let all: Capabilities = Capabilities(named.map(\.0))

    /// The application called `name` as ykman spells it (OTP, U2F, FIDO2, OATH, PIV, OpenPGP, HSMAUTH), in
    /// any case; nil for another word.
    public init?(name: String) {
        guard let found = Capabilities.named.first(where: { $0.1.lowercased() == name.lowercased() }) else {
            return nil
        }
        self = found.0
    }
}

/// What the Management application refused or what stood in the way of changing a key's configuration.
public enum ManagementError: Error, Equatable, Sendable {
    /// A lock code is not 16 bytes.
    case lockCodeLength(Int)
    /// WRITE CONFIG was answered 63C0: the configuration is locked and the lock code given was wrong, or
    /// none was given.
    case wrongLockCode
    /// The configuration would not fit in one WRITE CONFIG (its TLVs' length).
    case configurationTooLarge(Int)
    /// The firmware (actual) is older than the command needs (minimum).
    case needsFirmware(ManagementFeature, minimum: Version, actual: Version)
    /// WRITE CONFIG over a HID interface was refused (that interface says no more than that: a wrong or
    /// missing lock code, or a setting the key does not take).
    case configurationRefused
    /// DEVICE RESET was refused (6985 or 6D00): the key does not do a whole-device reset, or not now.
    case resetRefused(StatusWord)
}

/// Management commands that need a firmware of a certain age.
public enum ManagementFeature: String, Sendable, Equatable {
    /// WRITE CONFIG (firmware 5.0).
    case writeConfig = "write-config"
    /// DEVICE RESET (firmware 5.6).
    case deviceReset = "device-reset"
    /// NFC off until the next USB power-up (firmware 5.7).
    case nfcRestriction = "nfc-restriction"

    public var minimum: Version {
        switch self {
        case .writeConfig: return Version(5, 0, 0)
        case .deviceReset: return Version(5, 6, 0)
        case .nfcRestriction: return Version(5, 7, 0)
        }
    }
}

extension ManagementSession {
    /// WRITE CONFIG: changes the settings in `configuration` that are not nil, with the current lock code
    /// when the configuration is locked, and sets (or with `DeviceConfiguration.clearedLockCode` clears) the
    /// lock code when `newLockCode` is given. With `reboot` the key restarts afterwards, as it must when its
    /// USB interfaces change: the connection is gone then.
    public func writeConfiguration(
        _ configuration: DeviceConfiguration, reboot: Bool = false,
        currentLockCode: [UInt8]? = nil, newLockCode: [UInt8]? = nil
    ) async throws {
        let minimum = ManagementFeature.writeConfig.minimum
        guard version >= minimum else {
            throw ManagementError.needsFirmware(.writeConfig, minimum: minimum, actual: version)
        }
        let data = try configuration.writeConfigData(
            reboot: reboot, currentLockCode: currentLockCode,
            newLockCode: newLockCode)
        do {
            _ = try await send(APDU(ins: Ins.writeConfig, data: data))
        } catch SmartCardError.status(let sw) where sw == .verifyFailNoRetry {
            throw ManagementError.wrongLockCode
        }
    }

    /// DEVICE RESET: every application back to its factory state (firmware 5.6 and later, on keys that have it).
    public func deviceReset() async throws {
        let minimum = ManagementFeature.deviceReset.minimum
        guard version >= minimum else {
            throw ManagementError.needsFirmware(.deviceReset, minimum: minimum, actual: version)
        }
        do {
            _ = try await send(APDU(ins: Ins.deviceReset))
        } catch SmartCardError.status(let sw) where sw == .conditionsNotSatisfied || sw == .invalidInstruction {
            throw ManagementError.resetRefused(sw)
        }
    }
}
