import KeyKit

/// The Management application: the version on SELECT, device information with READ CONFIG, the device
/// configuration with WRITE CONFIG (under the lock code's rules) and DEVICE RESET.
final class ManagementApplet: Applet {
    let aid = AID.management
    let profile: VirtualKeyProfile
    /// What the last command asks of the key as a whole once it is answered; `VirtualKey` takes it.
    private(set) var effect: Effect?

    /// What a Management command does beyond the state: restart the key, or reset its applications' sessions.
    enum Effect: Equatable {
        /// WRITE CONFIG with the reboot flag, or SET MODE: the key restarts (on USB it leaves the bus and comes
        /// back with the interfaces its enabled applications need).
        case reboot
        /// DEVICE RESET: every application forgets its session (the state is already a new key's).
        case reset
    }

    init(profile: VirtualKeyProfile) {
        self.profile = profile
    }

    /// The effect of the last command, once.
    func takeEffect() -> Effect? {
        defer { effect = nil }
        return effect
    }

    func select(state: inout VirtualKeyState) -> Response {
        Response(data: Array(state.version.description.utf8), status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        switch apdu.ins {
        case ManagementSession.Ins.readConfig:
            guard apdu.p1 == 0 else { return Response(data: [0], status: .ok) }
            let body = profile.deviceInfo(state).configTLVs().flatMap(\.encoded)
            return Response(data: [UInt8(body.count)] + body, status: .ok)
        case ManagementSession.Ins.writeConfig:
            return writeConfig(apdu.data, state: &state)
        case ManagementSession.Ins.setMode:
            return setMode(apdu, state: &state)
        case ManagementSession.Ins.deviceReset:
            guard state.version >= ManagementFeature.deviceReset.minimum else {
                return Response(status: .invalidInstruction)
            }
            guard apdu.p1 == 0, apdu.p2 == 0 else { return Response(status: .wrongP1P2) }
            Self.reset(&state)
            effect = .reset
            return Response(status: .ok)
        default:
            return Response(status: .invalidInstruction)
        }
    }

    /// WRITE CONFIG as a YubiKey 5 takes it. While a lock code is set, nothing changes without it (63C0 for a
    /// wrong or missing one). A new lock code of 16 zero bytes clears the lock. The USB set keeps at least
    /// one application; bits of applications the transport does not support are dropped.
    private func writeConfig(_ data: [UInt8], state: inout VirtualKeyState) -> Response {
        guard state.version >= ManagementFeature.writeConfig.minimum else {
            return Response(status: .invalidInstruction)
        }
        guard let length = data.first, Int(length) == data.count - 1 else { return Response(status: .wrongLength) }
        guard let tlvs = try? TLV.parseAll(Array(data.dropFirst()), mode: .simple) else {
            return Response(status: .incorrectParameters)
        }
        let fields = tlvs.dictionary
        if state.configLocked {
            guard let stored = state.configLockCode, fields[ManagementTag.unlock] == stored else {
                return Response(status: .verifyFailNoRetry)
            }
        }
        var next = state
        func capabilities(_ tag: UInt32, supported: UInt16) -> UInt16?? {
            guard let v = fields[tag] else { return .some(nil) }
            guard v.count == 2 else { return nil }
            return .some(UInt16(BigEndian.integer(v)) & supported)
        }
        guard let usb = capabilities(ManagementTag.usbEnabled, supported: state.usbSupported),
            let nfc = capabilities(ManagementTag.nfcEnabled, supported: state.nfcSupported)
        else {
            return Response(status: .incorrectParameters)
        }
        if let usb {
            guard usb != 0 else { return Response(status: .incorrectParameters) }
            next.usbEnabled = usb
        }
        if let nfc { next.nfcEnabled = nfc }
        if let v = fields[ManagementTag.autoEjectTimeout] {
            guard v.count == 2 else { return Response(status: .incorrectParameters) }
            next.autoEjectTimeout = UInt16(BigEndian.integer(v))
        }
        if let v = fields[ManagementTag.challengeResponseTimeout] {
            guard v.count == 1 else { return Response(status: .incorrectParameters) }
            next.challengeResponseTimeout = v[0]
        }
        if let v = fields[ManagementTag.deviceFlags] {
            guard v.count == 1 else { return Response(status: .incorrectParameters) }
            next.deviceFlags = v[0]
        }
        if let v = fields[ManagementTag.nfcRestricted] {
            guard state.version >= ManagementFeature.nfcRestriction.minimum, state.nfcSupported != 0, v == [1] else {
                return Response(status: .incorrectParameters)
            }
            next.nfcRestricted = true
        }
        if let code = fields[ManagementTag.configLock] {
            guard code.count == DeviceConfiguration.lockCodeLength else {
                return Response(status: .incorrectParameters)
            }
            let clears = code == DeviceConfiguration.clearedLockCode
            next.configLockCode = clears ? nil : code
            next.configLocked = !clears
        }
        state = next
        if fields[ManagementTag.reboot] != nil { effect = .reboot }
        return Response(status: .ok)
    }

    /// SET MODE as a YubiKey 4 takes it (a YubiKey 5 answers 6D00: ykman writes the device configuration
    /// there): the mode's number (touch-eject flag 80), the challenge-response timeout and the auto-eject timeout
    /// (little-endian). The USB applications become the mode's, of those the key supports, and the key restarts
    /// once the answer is out, as a YubiKey 4 does: on USB it re-enumerates with the mode's interfaces.
    private func setMode(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        guard state.version < ManagementFeature.writeConfig.minimum else {
            return Response(status: .invalidInstruction)
        }
        guard apdu.p1 == ManagementSession.Ins.setModeP1, apdu.p2 == 0 else { return Response(status: .wrongP1P2) }
        let data = apdu.data
        guard (1...4).contains(data.count), let mode = USBMode(code: data[0]) else {
            return Response(status: .incorrectParameters)
        }
        let usb = mode.capabilities(supported: Capabilities(rawValue: state.usbSupported))
        guard !usb.isEmpty else { return Response(status: .incorrectParameters) }
        state.usbEnabled = usb.rawValue
        let eject = data[0] & USBMode.touchEjectFlag != 0
        state.deviceFlags =
            eject ? state.deviceFlags | USBMode.touchEjectFlag : state.deviceFlags & ~USBMode.touchEjectFlag
        if data.count > 1 { state.challengeResponseTimeout = data[1] }
        if data.count > 3 { state.autoEjectTimeout = UInt16(data[2]) | UInt16(data[3]) << 8 }
        effect = .reboot
        return Response(status: .ok)
    }

    /// DEVICE RESET: OATH, PIV, OpenPGP, FIDO and the OTP slots as on a new key (attestation keys stay); the device
    /// configuration and its lock stay as they are.
    static func reset(_ state: inout VirtualKeyState) {
        state.oath = OATHState(salt: Crypto.random(8))
        state.piv = state.piv.afterReset()
        state.openpgp = OpenPGPState()
        state.fido = FIDOState(
            wrapEncryptionKey: Crypto.random(32), wrapMACKey: Crypto.random(32),
            attestationKey: state.fido.attestationKey,
            attestationCertificate: state.fido.attestationCertificate)
        state.otpSlots = OTPSlotsState()
    }
}
