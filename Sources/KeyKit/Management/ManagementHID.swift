/// The Management application's device information over the HID interfaces of a YubiKey: the vendor
/// CTAPHID command on the FIDO interface, the READ CONFIG slot command on the OTP interface. The pages are
/// the TLVs READ CONFIG gives over CCID, parsed by the same code.
public enum ManagementHID {
    /// YubiKey vendor CTAPHID command: READ CONFIG (the page in the payload's first byte).
    public static let ctapReadConfig: UInt8 = 0x42
    /// YubiKey vendor CTAPHID command: WRITE CONFIG (the same data as over CCID).
    public static let ctapWriteConfig: UInt8 = 0x43
    /// OTP slot command: WRITE CONFIG (the same data as over CCID).
    public static let otpWriteConfig: UInt8 = 0x15

    /// Device information through the FIDO interface. Firmware before 4.1 has no READ CONFIG.
    public static func readDeviceInfo(fido: CTAPHIDConnection) async throws -> DeviceInfo {
        guard fido.deviceVersion >= ManagementSession.readConfigMinimum else {
            throw SmartCardError.deviceInfoNeedsFirmware(fido.deviceVersion)
        }
        return try await ManagementSession.readPages(defaultVersion: fido.deviceVersion) { page in
            try await fido.call(command: ctapReadConfig, payload: [page])
        }
    }

    /// Device information through the OTP interface. Before firmware 4.1 it is what the status report and
    /// the serial command tell.
    public static func readDeviceInfo(otp: OTPHIDConnection) async throws -> DeviceInfo {
        let status = try await otp.readStatus()
        guard status.version >= ManagementSession.readConfigMinimum else {
            let serial = try? await serial(otp: otp)
            return DeviceInfo(serial: serial, version: status.version)
        }
        return try await ManagementSession.readPages(defaultVersion: status.version) { page in
            guard case .data(let answer) = try await otp.send(slot: OTPHID.Command.readConfig, data: [page]) else {
                throw OTPHIDError.malformedReport(Malformation(.deviceInfo, .statusInstead))
            }
            return try OTPHID.checkedConfigResponse(answer)
        }
    }

    /// The serial number through the OTP interface (slot command 0x10).
    public static func serial(otp: OTPHIDConnection) async throws -> UInt32 {
        guard case .data(let answer) = try await otp.send(slot: OTPSession.Command.deviceSerial) else {
            throw OTPHIDError.malformedReport(Malformation(.serial, .statusInstead))
        }
        return UInt32(BigEndian.integer(try OTPHID.checkedResponse(answer, length: 4)))
    }

    /// WRITE CONFIG through the FIDO interface (`DeviceConfiguration.writeConfigData` gives `data`). A key that
    /// refuses it (a wrong or missing lock code) answers a CTAPHID error.
    public static func writeConfig(fido: CTAPHIDConnection, data: [UInt8]) async throws {
        try requireWriteConfig(fido.deviceVersion)
        do {
            _ = try await fido.call(command: ctapWriteConfig, payload: data)
        } catch FIDOTransportError.ctaphidError(let code) where code != CTAPHID.ErrorCode.channelBusy {
            throw ManagementError.configurationRefused
        }
    }

    /// WRITE CONFIG through the OTP interface; a refusal leaves the programming sequence as it was.
    public static func writeConfig(otp: OTPHIDConnection, data: [UInt8]) async throws {
        let status = try await otp.readStatus()
        try requireWriteConfig(status.version)
        do {
            _ = try await otp.send(slot: otpWriteConfig, data: data)
        } catch OTPHIDError.commandRejected {
            throw ManagementError.configurationRefused
        }
    }

    private static func requireWriteConfig(_ version: Version) throws {
        let minimum = ManagementFeature.writeConfig.minimum
        guard version >= minimum else {
            throw ManagementError.needsFirmware(.writeConfig, minimum: minimum, actual: version)
        }
    }
}
