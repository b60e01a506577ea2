extension KeyProbe {
    /// What a key reached over HID alone tells of itself: its Management device information over the FIDO
    /// interface (vendor READ CONFIG) or the OTP interface, else what CTAPHID INIT and getInfo say.
    public static func inspect(hid key: KeyDescriptor) async throws -> KeyInfo {
        if let fidoHID = key.fidoHID {
            let fido = try await CTAPHIDConnection.open(fidoHID)
            defer { Task { await fido.close() } }
            if fidoHID.isYubico, let device = try? await ManagementHID.readDeviceInfo(fido: fido) {
                return KeyInfo(reader: key.name, atr: [], device: device, applications: device.enabled(overNFC: false).names,
                               overNFC: false)
            }
            return await inspect(fido: fido, name: key.name)
        }
        guard let otpHID = key.otpHID else { throw KeyRouteError.notOnThisKey(.management, key.interfaces) }
        let otp = try await OTPHIDConnection.open(path: otpHID.path, name: key.name)
        defer { Task { await otp.close() } }
        let device = try await ManagementHID.readDeviceInfo(otp: otp)
        let apps = device.fromManagement ? device.enabled(overNFC: false).names : ["OTP"]
        return KeyInfo(reader: key.name, atr: [], device: device, applications: apps, overNFC: false)
    }

    /// What a key's FIDO interface tells of it, for a key reached over HID alone: the firmware from
    /// CTAPHID INIT, FIDO2 from getInfo, U2F from the CTAPHID capabilities. The connection stays open.
    public static func inspect(fido connection: any FIDOConnection, name: String) async -> KeyInfo {
        var caps: Capabilities = []
        var version = Version(0, 0, 0)
        if let hid = connection as? CTAPHIDConnection {
            version = hid.deviceVersion
            if !hid.capabilities.contains(.nmsg) { caps.insert(.u2f) }
        } else {
            caps.insert(.u2f)
        }
        if let session = try? await CTAP2Session.make(connection: connection) {
            let info = await session.info
            if info.versions.contains(where: { $0.hasPrefix("FIDO_2") }) { caps.insert(.fido2) }
            if info.versions.contains("U2F_V2") { caps.insert(.u2f) }
            if let fw = info.firmware { version = fw }
        }
        let device = DeviceInfo(version: version, supportedUSB: caps, enabledUSB: caps, fromManagement: false)
        return KeyInfo(reader: name, atr: [], device: device, applications: caps.names, overNFC: false)
    }
}
