import FoundationEssentials
import Glibc
import KeyKit

/// What the virtual key remembers across power cycles (and, with a state file, across runs).
public struct VirtualKeyState: Codable, Sendable, Equatable {
    public var serial: UInt32
    public var version: Version
    public var formFactor: UInt8
    public var usbSupported: UInt16
    public var usbEnabled: UInt16
    public var nfcSupported: UInt16
    public var nfcEnabled: UInt16
    public var configLocked: Bool
    /// The configuration lock code (16 bytes) while one is set; WRITE CONFIG needs it then.
    public var configLockCode: [UInt8]?
    public var deviceFlags: UInt8
    /// The key enforces PIN complexity (an Enhanced PIN key, 5.7 and later): PIV, OpenPGP and FIDO2 refuse new PINs
    /// that `PINComplexity` finds too simple, and the device information says so (tag 0x16).
    public var pinComplexity = false
    /// NFC is off until the key is next powered from USB (WRITE CONFIG tag 0x17, 5.7 and later): over NFC no
    /// application answers; `VirtualKey.poweredFromUSB()` lifts it.
    public var nfcRestricted = false
    public var autoEjectTimeout: UInt16
    public var challengeResponseTimeout: UInt8
    /// OTP application programming sequence number.
    public var otpSequence: UInt8
    /// The OATH application's accounts, access key and salt.
    public var oath = OATHState()
    /// The FIDO2/U2F authenticator's PIN, credentials, counter and keys.
    public var fido = FIDOState()
    /// The OTP application's slot configurations (slot 1 and 2).
    public var otpSlots = OTPSlotsState()
    /// The Yubico OTP credential of the NDEF tag; nil until first used (then random, serial-based public ID).
    public var otpToken: OTPTokenState?
    /// The PIV application's PIN, PUK, management key, keys and data objects.
    public var piv = PIVState()
    /// The OpenPGP application's passwords, keys and data objects.
    public var openpgp = OpenPGPState()
    /// The YubiHSM Auth application's management key and credentials.
    public var hsmauth = HSMAuthState()

    /// A YubiKey 5 NFC (USB-A keychain) with every application.
    public static func yubiKey5NFC(serial: UInt32 = 28_123_456, version: Version = Version(5, 7, 2))
        -> VirtualKeyState
    {
        factoryNew(serial, version, [.otp, .u2f, .openpgp, .piv, .oath, .hsmauth, .fido2], nfc: true)
    }

    /// A YubiKey 4 (USB-A keychain): OTP, FIDO U2F, OpenPGP, PIV and OATH over USB; no NFC, no FIDO2, no
    /// YubiHSM Auth (those came with the YubiKey 5).
    public static func yubiKey4(serial: UInt32 = 4_312_345, version: Version = Version(4, 3, 7)) -> VirtualKeyState {
        factoryNew(serial, version, [.otp, .u2f, .openpgp, .piv, .oath], nfc: false)
    }

    /// A Security Key NFC (USB-A keychain, the Security Key flag in its form factor): FIDO U2F and FIDO2 alone, over
    /// USB and NFC. With a serial, as this one has, it is an Enterprise Edition.
    public static func securityKeyNFC(serial: UInt32, version: Version) -> VirtualKeyState {
        factoryNew(serial, version, [.u2f, .fido2], nfc: true, flags: 0x40)
    }

    /// A USB-A keychain key as it leaves the factory: `applications` supported and enabled over USB (and over NFC
    /// when it has NFC), `flags` (FIPS 0x80, Security Key 0x40) in its form factor byte, no lock code.
    private static func factoryNew(
        _ serial: UInt32, _ version: Version, _ applications: Capabilities, nfc: Bool, flags: UInt8 = 0
    ) -> VirtualKeyState {
        let usb = applications.rawValue
        let overNFC = nfc ? usb : 0
        return VirtualKeyState(
            serial: serial, version: version, formFactor: flags | FormFactor.usbAKeychain.rawValue,
            usbSupported: usb, usbEnabled: usb, nfcSupported: overNFC, nfcEnabled: overNFC,
            configLocked: false, deviceFlags: 0, autoEjectTimeout: 0,
            challengeResponseTimeout: 15, otpSequence: 1)
    }

    /// The key a firmware version names: a YubiKey 4 before 5.0, a YubiKey 5 NFC from then on.
    public static func forFirmware(serial: UInt32, version: Version) -> VirtualKeyState {
        version.major < 5 ? yubiKey4(serial: serial, version: version) : yubiKey5NFC(serial: serial, version: version)
    }

    public var deviceInfo: DeviceInfo {
        // A key without NFC leaves the NFC fields out of its device information (ykman then shows no NFC column).
        // The form factor byte's high bits are the FIPS (0x80) and Security Key (0x40) flags.
        var info = DeviceInfo(
            serial: serial, version: version, formFactor: FormFactor(rawValue: formFactor & 0x0F) ?? .unknown,
            isFIPS: formFactor & 0x80 != 0, isSky: formFactor & 0x40 != 0,
            supportedUSB: Capabilities(rawValue: usbSupported), enabledUSB: Capabilities(rawValue: usbEnabled),
            supportedNFC: nfcSupported == 0 ? nil : Capabilities(rawValue: nfcSupported),
            enabledNFC: nfcSupported == 0 ? nil : Capabilities(rawValue: nfcEnabled),
            isConfigLocked: configLocked, autoEjectTimeout: Int(autoEjectTimeout),
            challengeResponseTimeout: Int(challengeResponseTimeout), deviceFlags: deviceFlags,
            pinComplexity: pinComplexity)
        info.nfcRestricted = nfcRestricted
        return info
    }
}

extension VirtualKeyState {
    enum CodingKeys: String, CodingKey {
        case serial, version, formFactor, usbSupported, usbEnabled, nfcSupported, nfcEnabled, configLocked,
            configLockCode, deviceFlags, pinComplexity, nfcRestricted, autoEjectTimeout, challengeResponseTimeout,
            otpSequence, oath,
            fido,
            otpSlots, otpToken, piv, openpgp, hsmauth
    }

    // Fields added after the first release are optional in the file, so older state files still load.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        serial = try c.decode(UInt32.self, forKey: .serial)
        version = try c.decode(Version.self, forKey: .version)
        formFactor = try c.decode(UInt8.self, forKey: .formFactor)
        usbSupported = try c.decode(UInt16.self, forKey: .usbSupported)
        usbEnabled = try c.decode(UInt16.self, forKey: .usbEnabled)
        nfcSupported = try c.decode(UInt16.self, forKey: .nfcSupported)
        nfcEnabled = try c.decode(UInt16.self, forKey: .nfcEnabled)
        configLocked = try c.decode(Bool.self, forKey: .configLocked)
        configLockCode =
            try c.contains(.configLockCode) && !c.decodeNil(forKey: .configLockCode)
            ? decodeHex(c, .configLockCode) : nil
        deviceFlags = try c.decode(UInt8.self, forKey: .deviceFlags)
        pinComplexity = try c.decodeIfPresent(Bool.self, forKey: .pinComplexity) ?? false
        nfcRestricted = try c.decodeIfPresent(Bool.self, forKey: .nfcRestricted) ?? false
        autoEjectTimeout = try c.decode(UInt16.self, forKey: .autoEjectTimeout)
        challengeResponseTimeout = try c.decode(UInt8.self, forKey: .challengeResponseTimeout)
        otpSequence = try c.decode(UInt8.self, forKey: .otpSequence)
        oath = try c.decodeIfPresent(OATHState.self, forKey: .oath) ?? OATHState()
        fido = try c.decodeIfPresent(FIDOState.self, forKey: .fido) ?? FIDOState()
        otpSlots = try c.decodeIfPresent(OTPSlotsState.self, forKey: .otpSlots) ?? OTPSlotsState()
        otpToken = try c.decodeIfPresent(OTPTokenState.self, forKey: .otpToken)
        piv = try c.decodeIfPresent(PIVState.self, forKey: .piv) ?? PIVState()
        openpgp = try c.decodeIfPresent(OpenPGPState.self, forKey: .openpgp) ?? OpenPGPState()
        hsmauth = try c.decodeIfPresent(HSMAuthState.self, forKey: .hsmauth) ?? HSMAuthState()
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(serial, forKey: .serial)
        try c.encode(version, forKey: .version)
        try c.encode(formFactor, forKey: .formFactor)
        try c.encode(usbSupported, forKey: .usbSupported)
        try c.encode(usbEnabled, forKey: .usbEnabled)
        try c.encode(nfcSupported, forKey: .nfcSupported)
        try c.encode(nfcEnabled, forKey: .nfcEnabled)
        try c.encode(configLocked, forKey: .configLocked)
        try c.encodeIfPresent(configLockCode.map { Hex.encode($0) }, forKey: .configLockCode)
        try c.encode(deviceFlags, forKey: .deviceFlags)
        try c.encode(pinComplexity, forKey: .pinComplexity)
        try c.encode(nfcRestricted, forKey: .nfcRestricted)
        try c.encode(autoEjectTimeout, forKey: .autoEjectTimeout)
        try c.encode(challengeResponseTimeout, forKey: .challengeResponseTimeout)
        try c.encode(otpSequence, forKey: .otpSequence)
        try c.encode(oath, forKey: .oath)
        try c.encode(fido, forKey: .fido)
        try c.encode(otpSlots, forKey: .otpSlots)
        try c.encodeIfPresent(otpToken, forKey: .otpToken)
        try c.encode(piv, forKey: .piv)
        try c.encode(openpgp, forKey: .openpgp)
        try c.encode(hsmauth, forKey: .hsmauth)
    }

    /// The applications enabled over the transport a smart-card client reaches the key on. A key without NFC (a
    /// YubiKey 4) behind the vpcd reader is still the USB key it is: its USB set counts, as clients read it when
    /// the device information has no NFC part.
    public func enabled(over transport: VirtualKey.ATRStyle) -> Capabilities {
        Capabilities(rawValue: transport == .usb || nfcSupported == 0 ? usbEnabled : nfcEnabled)
    }
}

/// Reads and writes the state file: JSON, mode 0600, replaced atomically.
public struct VirtualKeyStateFile: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    public enum FileError: Error, CustomStringConvertible {
        case unreadable(String, String)
        case unwritable(String, String)

        public var description: String {
            switch self {
            case .unreadable(let p, let why): return "cannot read the virtual key's state file \(p): \(why)"
            case .unwritable(let p, let why): return "cannot write the virtual key's state file \(p): \(why)"
            }
        }
    }

    /// nil when the file does not exist yet.
    public func load() throws -> VirtualKeyState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return try JSONDecoder().decode(VirtualKeyState.self, from: data)
        } catch {
            throw FileError.unreadable(path, "\(error)")
        }
    }

    public func save(_ state: VirtualKeyState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do { data = try encoder.encode(state) } catch { throw FileError.unwritable(path, "\(error)") }
        do {
            try AtomicFile.write(Array(data), to: path)
        } catch {
            throw FileError.unwritable(path, error.reason)
        }
    }
}
