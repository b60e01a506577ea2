/// The Management application's device information over the HID interfaces of a YubiKey: the vendor
/// CTAPHID command on the FIDO interface, the READ CONFIG slot command on the OTP interface. The pages are
/// the TLVs READ CONFIG gives over CCID, parsed by the same code.
public enum ManagementHID {
    /// YubiKey vendor CTAPHID command: READ CONFIG (the page in the payload's first byte).
    public static let ctapReadConfig: UInt8 = 0x42

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
}
