/// The Management application through whichever interface reaches it: APDUs on a reader (CCID or NFC), or the
/// YubiKey commands of the FIDO or OTP HID interface. `ykterm config`, the TUI's device view and the fuzz
/// targets read and write the configuration through it.
public enum ManagementLink: Sendable {
    case card(ManagementSession)
    case fido(CTAPHIDConnection)
    case otp(OTPHIDConnection)

    /// The interface it goes through (a reader counts as CCID; who knows it is NFC says so).
    public var interface: KeyInterfaceKind {
        switch self {
        case .card: return .ccid
        case .fido: return .fido
        case .otp: return .otp
        }
    }

    /// READ CONFIG, every page.
    public func deviceInfo() async throws -> DeviceInfo {
        switch self {
        case .card(let session): return try await session.deviceInfo()
        case .fido(let hid): return try await ManagementHID.readDeviceInfo(fido: hid)
        case .otp(let hid): return try await ManagementHID.readDeviceInfo(otp: hid)
        }
    }

    /// WRITE CONFIG; the lock codes in the encoded request are wiped once it is sent.
    public func write(
        _ configuration: DeviceConfiguration, reboot: Bool = false, currentLockCode: [UInt8]? = nil,
        newLockCode: [UInt8]? = nil
    ) async throws {
        switch self {
        case .card(let session):
            try await session.writeConfiguration(
                configuration, reboot: reboot, currentLockCode: currentLockCode,
                newLockCode: newLockCode)
        case .fido, .otp:
            var data = try configuration.writeConfigData(
                reboot: reboot, currentLockCode: currentLockCode,
                newLockCode: newLockCode)
            defer { for i in data.indices { data[i] = 0 } }
            if case .fido(let hid) = self {
                try await ManagementHID.writeConfig(fido: hid, data: data)
            } else if case .otp(let hid) = self {
                try await ManagementHID.writeConfig(otp: hid, data: data)
            }
        }
    }
}
