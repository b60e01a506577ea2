extension KeyProbe {
    /// What a key reached over HID alone tells of itself: its Management device information over the FIDO
    /// interface (vendor READ CONFIG) or the OTP interface, else what CTAPHID INIT and getInfo say.
    public static func inspect(hid key: KeyDescriptor) async throws -> KeyInfo {
        // The HID interfaces that carry Management, in the order `channels(for:)` gives them.
        let hidChannel = key.channels(for: .management).first { $0 == .fidoHID || $0 == .otpHID }
        if hidChannel == .fidoHID {
            let fido = try await key.openFIDO()
            let info = await inspect(fido: fido, name: key.name)
            await fido.close()
            return info
        }
        guard hidChannel == .otpHID, let otpHID = key.otpHID else {
            throw KeyRouteError.notOnThisKey(.management, key.interfaces)
        }
        let otp = try await OTPHIDConnection.open(path: otpHID.path, name: key.name)
        do {
            let device = try await ManagementHID.readDeviceInfo(otp: otp)
            await otp.close()
            let apps = device.fromManagement ? device.enabled(overNFC: false).names : ["OTP"]
            return KeyInfo(reader: key.name, atr: [], device: device, applications: apps, overNFC: false)
        } catch {
            await otp.close()
            throw error
        }
    }

    /// What a key's FIDO interface tells of it, for a key reached over HID alone: the Management device
    /// information through the YubiKey vendor command when the key answers it, else the firmware from
    /// CTAPHID INIT, FIDO2 from getInfo and U2F from the CTAPHID capabilities. The connection stays open.
    public static func inspect(fido connection: any FIDOConnection, name: String) async -> KeyInfo {
        if let hid = connection as? CTAPHIDConnection, let device = try? await ManagementHID.readDeviceInfo(fido: hid) {
            return KeyInfo(
                reader: name, atr: [], device: device, applications: device.enabled(overNFC: false).names,
                overNFC: false)
        }
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
            if info.versions.contains(U2F.version) { caps.insert(.u2f) }
            if let fw = info.firmware { version = fw }
        }
        let device = DeviceInfo(version: version, supportedUSB: caps, enabledUSB: caps, fromManagement: false)
        return KeyInfo(reader: name, atr: [], device: device, applications: caps.names, overNFC: false)
    }
}
