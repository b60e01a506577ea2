/// Applications a key can carry, as the Management application's capability bits.
public struct Capabilities: OptionSet, Hashable, Sendable, Codable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let otp = Capabilities(rawValue: 0x0001)
    public static let u2f = Capabilities(rawValue: 0x0002)
    public static let openpgp = Capabilities(rawValue: 0x0008)
    public static let piv = Capabilities(rawValue: 0x0010)
    public static let oath = Capabilities(rawValue: 0x0020)
    public static let hsmauth = Capabilities(rawValue: 0x0100)
    public static let fido2 = Capabilities(rawValue: 0x0200)

    /// In the order ykman shows them, with the names used in JSON and on screen.
    public static let named: [(Capabilities, String)] = [
        (.otp, "OTP"), (.u2f, "U2F"), (.fido2, "FIDO2"), (.oath, "OATH"),
        (.piv, "PIV"), (.openpgp, "OpenPGP"), (.hsmauth, "HSMAUTH"),
    ]

    public var names: [String] { Capabilities.named.filter { contains($0.0) }.map(\.1) }
}

/// The key's physical shape (READ CONFIG tag 0x04, low nibble).
public enum FormFactor: UInt8, Sendable, Codable {
    case unknown = 0
    case usbAKeychain = 1
    case usbANano = 2
    case usbCKeychain = 3
    case usbCNano = 4
    case usbCLightning = 5
    case usbABio = 6
    case usbCBio = 7

    /// Short identifier for JSON, and of the form factor's words in the string tables (`form-factor.<id>`).
    public var identifier: String {
        switch self {
        case .unknown: return "unknown"
        case .usbAKeychain: return "usb-a-keychain"
        case .usbANano: return "usb-a-nano"
        case .usbCKeychain: return "usb-c-keychain"
        case .usbCNano: return "usb-c-nano"
        case .usbCLightning: return "usb-c-lightning"
        case .usbABio: return "usb-a-bio"
        case .usbCBio: return "usb-c-bio"
        }
    }
}

/// What the Management application (or, without it, probing) tells about a key.
public struct DeviceInfo: Sendable, Hashable {
    public var serial: UInt32?
    public var version: Version
    public var formFactor: FormFactor
    public var isFIPS: Bool
    public var isSky: Bool
    public var supportedUSB: Capabilities
    public var enabledUSB: Capabilities
    /// nil when the key has no NFC.
    public var supportedNFC: Capabilities?
    public var enabledNFC: Capabilities?
    public var isConfigLocked: Bool
    public var partNumber: String?
    public var autoEjectTimeout: Int?
    public var challengeResponseTimeout: Int?
    public var deviceFlags: UInt8
    /// The key holds its PINs to the complexity rules of an Enhanced PIN key (READ CONFIG tag 0x16).
    public var pinComplexity: Bool

    /// The first firmware with PIN complexity (Enhanced PIN keys).
    public static let pinComplexityFirmware = Version(5, 7, 0)
    /// NFC is off until the key is next powered from USB (READ CONFIG tag 0x17; firmware 5.7 and later).
    public var nfcRestricted = false
    /// True when the information came from the Management application; false when probed.
    public var fromManagement: Bool

    public init(
        serial: UInt32? = nil, version: Version, formFactor: FormFactor = .unknown, isFIPS: Bool = false,
        isSky: Bool = false, supportedUSB: Capabilities = [], enabledUSB: Capabilities = [],
        supportedNFC: Capabilities? = nil, enabledNFC: Capabilities? = nil, isConfigLocked: Bool = false,
        partNumber: String? = nil, autoEjectTimeout: Int? = nil, challengeResponseTimeout: Int? = nil,
        deviceFlags: UInt8 = 0, pinComplexity: Bool = false, fromManagement: Bool = true
    ) {
        self.serial = serial
        self.version = version
        self.formFactor = formFactor
        self.isFIPS = isFIPS
        self.isSky = isSky
        self.supportedUSB = supportedUSB
        self.enabledUSB = enabledUSB
        self.supportedNFC = supportedNFC
        self.enabledNFC = enabledNFC
        self.isConfigLocked = isConfigLocked
        self.partNumber = partNumber
        self.autoEjectTimeout = autoEjectTimeout
        self.challengeResponseTimeout = challengeResponseTimeout
        self.deviceFlags = deviceFlags
        self.pinComplexity = pinComplexity
        self.fromManagement = fromManagement
    }

    /// Applications enabled on the transport the key is reached over (NFC-style readers use the NFC set).
    public func enabled(overNFC: Bool) -> Capabilities {
        overNFC ? (enabledNFC ?? enabledUSB) : enabledUSB
    }

    /// The product name as ykman gives it (yubikit's `get_name`, from the device information alone, as over NFC);
    /// nil for a key whose Management application did not describe it (a FIDO-only key, another maker's key): what
    /// such a key is called is worded by the interface.
    public var productName: String? {
        if !fromManagement { return nil }
        if version.major == 3 { return "YubiKey NEO" }
        // A key with FIDO alone and no serial is taken for a Security Key before 5.2.8 (later ones say so with
        // their sky flag): no shape in the name.
        if serial == nil, supportedUSB.isFIDOOnly, version < Version(5, 2, 8) {
            if !supportedUSB.contains(.fido2) { return "FIDO U2F Security Key" }
            return supportedNFC != nil ? "Security Key NFC" : "Security Key by Yubico"
        }
        switch version.major {
        case 0: return "YubiKey (\(version))"
        case ..<4: return "YubiKey"
        case 4:
            // The 4 series has one name whatever the shape; 4.4 is the FIPS series; a key with only OTP and U2F
            // is a YubiKey Edge.
            if isFIPS || (version >= Version(4, 4, 0) && version < Version(4, 5, 0)) {
                return "YubiKey FIPS (4 Series)"
            }
            return supportedUSB == [.otp, .u2f] ? "YubiKey Edge" : "YubiKey 4"
        default:
            if version.isPreview { return "YubiKey Preview" }
            return version >= Version(5, 1, 0) ? series5Name : "YubiKey"
        }
    }

    /// A YubiKey 5 or later key's name from its parts: the series ("Security Key", "YubiKey 5", "YubiKey" for a
    /// Bio), the plug (C, Ci), the shape or NFC (Nano, NFC, A for a USB-A keychain without NFC, Bio), then one
    /// edition (FIPS, the Bio's FIDO or Multi-protocol Edition, a Security Key's Enterprise Edition (one with a
    /// serial), Enhanced PIN).
    private var series5Name: String {
        let isBio = formFactor == .usbABio || formFactor == .usbCBio
        var parts = isSky ? ["Security Key"] : isBio ? ["YubiKey"] : ["YubiKey", "5"]
        // The plug letters follow the series without a space: 5C, 5Ci, 5A (but "YubiKey C Bio").
        func plug(_ letters: String) {
            if parts.last == "5" { parts[parts.count - 1] += letters } else { parts.append(letters) }
        }
        switch formFactor {
        case .usbCKeychain, .usbCNano, .usbCBio: plug("C")
        case .usbCLightning: plug("Ci")
        default: break
        }
        if formFactor == .usbANano || formFactor == .usbCNano {
            parts.append("Nano")
        } else if supportedNFC != nil {
            parts.append("NFC")
        } else if formFactor == .usbAKeychain {
            plug("A")
        } else if isBio {
            parts.append("Bio")
        }
        if isFIPS {
            parts.append("FIPS")
        } else if isBio {
            if supportedUSB.isFIDOOnly {
                parts.append("- FIDO Edition")
            } else if supportedUSB.contains(.piv) {
                parts.append("- Multi-protocol Edition")
            }
        } else if isSky, serial != nil {
            parts.append("- Enterprise Edition")
        } else if pinComplexity, !isSky {
            parts.append("- Enhanced PIN")
        }
        return parts.joined(separator: " ")
    }
}

extension Capabilities {
    /// FIDO (U2F or FIDO2) and nothing else, what a Security Key carries: applications on the FIDO HID interface
    /// alone.
    public var isFIDOOnly: Bool { usbInterfaces == [.fido] }
}

extension Version {
    /// The preview firmware ranges (5.0.x, 5.2.0-5.2.2, 5.5.0-5.5.1): a key with one is a YubiKey Preview.
    public var isPreview: Bool {
        [
            (Version(5, 0, 0), Version(5, 1, 0)), (Version(5, 2, 0), Version(5, 2, 3)),
            (Version(5, 5, 0), Version(5, 5, 2)),
        ]
        .contains { self >= $0.0 && self < $0.1 }
    }
}

/// READ CONFIG and WRITE CONFIG tags.
public enum ManagementTag {
    public static let usbSupported: UInt32 = 0x01
    public static let serial: UInt32 = 0x02
    public static let usbEnabled: UInt32 = 0x03
    public static let formFactor: UInt32 = 0x04
    public static let version: UInt32 = 0x05
    public static let autoEjectTimeout: UInt32 = 0x06
    public static let challengeResponseTimeout: UInt32 = 0x07
    public static let deviceFlags: UInt32 = 0x08
    /// Whether a lock code is set (READ CONFIG); the new lock code (WRITE CONFIG).
    public static let configLock: UInt32 = 0x0A
    /// WRITE CONFIG: the current lock code.
    public static let unlock: UInt32 = 0x0B
    /// WRITE CONFIG: restart the key afterwards (no value).
    public static let reboot: UInt32 = 0x0C
    public static let nfcSupported: UInt32 = 0x0D
    public static let nfcEnabled: UInt32 = 0x0E
    public static let moreData: UInt32 = 0x10
    public static let partNumber: UInt32 = 0x13
    /// 1 when the key enforces PIN complexity (an Enhanced PIN key).
    public static let pinComplexity: UInt32 = 0x16
    /// 1 while NFC is restricted: off until the key is next powered from USB (read and written).
    public static let nfcRestricted: UInt32 = 0x17
}

extension DeviceInfo {
    /// Parses the TLVs of all READ CONFIG pages. `defaultVersion` comes from SELECT.
    public init(tlvs: [UInt32: [UInt8]], defaultVersion: Version) throws(SmartCardError) {
        func int(_ tag: UInt32) -> Int? {
            guard let v = tlvs[tag], !v.isEmpty, v.count <= 4 else { return nil }
            return Int(BigEndian.integer(v))
        }
        for (tag, v) in tlvs where v.count > 4 && tag != ManagementTag.partNumber && tag < 0x11 {
            throw .malformedResponse(Malformation(.deviceInfo, .fieldLength(tag: tag, v.count)))
        }
        if let ffBytes = tlvs[ManagementTag.formFactor], ffBytes.count != 1 {
            throw .malformedResponse(Malformation(.formFactor, .length(ffBytes.count)))
        }
        guard let usbSupported = int(ManagementTag.usbSupported) else {
            throw .malformedResponse(Malformation(.usbApplications, .missing))
        }
        let ff = UInt8(truncatingIfNeeded: int(ManagementTag.formFactor) ?? 0)
        var version = defaultVersion
        if let v = tlvs[ManagementTag.version] {
            guard v.count == 3, let parsed = Version(bytes: v) else {
                throw .malformedResponse(Malformation(.firmwareVersion, .length(v.count)))
            }
            version = parsed
        }
        let serial = int(ManagementTag.serial).flatMap { $0 == 0 ? nil : UInt32(truncatingIfNeeded: $0) }
        var nfcSupported: Capabilities?
        var nfcEnabled: Capabilities?
        if let n = int(ManagementTag.nfcSupported) {
            nfcSupported = Capabilities(rawValue: UInt16(truncatingIfNeeded: n))
            nfcEnabled = Capabilities(rawValue: UInt16(truncatingIfNeeded: int(ManagementTag.nfcEnabled) ?? 0))
        }
        let usbEnabled = int(ManagementTag.usbEnabled) ?? usbSupported
        self.init(
            serial: serial, version: version, formFactor: FormFactor(rawValue: ff & 0x0F) ?? .unknown,
            isFIPS: ff & 0x80 != 0, isSky: ff & 0x40 != 0,
            supportedUSB: Capabilities(rawValue: UInt16(truncatingIfNeeded: usbSupported)),
            enabledUSB: Capabilities(rawValue: UInt16(truncatingIfNeeded: usbEnabled)),
            supportedNFC: nfcSupported, enabledNFC: nfcEnabled,
            isConfigLocked: (int(ManagementTag.configLock) ?? 0) == 1,
            partNumber: tlvs[ManagementTag.partNumber].map { String(decoding: $0, as: UTF8.self) },
            autoEjectTimeout: int(ManagementTag.autoEjectTimeout),
            challengeResponseTimeout: int(ManagementTag.challengeResponseTimeout),
            deviceFlags: UInt8(truncatingIfNeeded: int(ManagementTag.deviceFlags) ?? 0),
            pinComplexity: tlvs[ManagementTag.pinComplexity] == [1], fromManagement: true)
        nfcRestricted = tlvs[ManagementTag.nfcRestricted] == [1]
    }

    /// The TLVs a key would answer READ CONFIG with (the virtual key uses this), without paging.
    public func configTLVs() -> [TLV] {
        var out = [TLV]()
        out.append(TLV(ManagementTag.usbSupported, BigEndian.bytes(UInt64(supportedUSB.rawValue), count: 2)))
        if let serial { out.append(TLV(ManagementTag.serial, BigEndian.bytes(UInt64(serial), count: 4))) }
        out.append(TLV(ManagementTag.usbEnabled, BigEndian.bytes(UInt64(enabledUSB.rawValue), count: 2)))
        out.append(
            TLV(
                ManagementTag.formFactor,
                [formFactor.rawValue | (isFIPS ? 0x80 : 0) | (isSky ? 0x40 : 0)]))
        out.append(TLV(ManagementTag.version, version.bytes))
        out.append(TLV(ManagementTag.autoEjectTimeout, BigEndian.bytes(UInt64(autoEjectTimeout ?? 0), count: 2)))
        out.append(TLV(ManagementTag.challengeResponseTimeout, [UInt8(challengeResponseTimeout ?? 15)]))
        out.append(TLV(ManagementTag.deviceFlags, [deviceFlags]))
        out.append(TLV(ManagementTag.configLock, [isConfigLocked ? 1 : 0]))
        if let supportedNFC {
            out.append(TLV(ManagementTag.nfcSupported, BigEndian.bytes(UInt64(supportedNFC.rawValue), count: 2)))
            out.append(
                TLV(
                    ManagementTag.nfcEnabled,
                    BigEndian.bytes(UInt64((enabledNFC ?? []).rawValue), count: 2)))
        }
        if let partNumber { out.append(TLV(ManagementTag.partNumber, Array(partNumber.utf8))) }
        if pinComplexity { out.append(TLV(ManagementTag.pinComplexity, [1])) }
        if nfcRestricted { out.append(TLV(ManagementTag.nfcRestricted, [1])) }
        return out
    }
}

extension DeviceInfo {
    /// What a key without a product name is: one that answers YubiKey applications with a version
    /// (`compatible`), or one that only has FIDO (`securityKey`). Its `key` names its text in the string tables.
    public enum UnnamedKey: String, Sendable {
        case compatible
        case securityKey = "security-key"

        public var key: String { "device.unnamed." + rawValue }
    }

    public var unnamedKey: UnnamedKey { version.major > 0 ? .compatible : .securityKey }
}
