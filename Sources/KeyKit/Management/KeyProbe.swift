/// Everything learned about a key on one connection.
public struct KeyInfo: Sendable, Hashable {
    public var reader: String
    public var atr: [UInt8]
    public var device: DeviceInfo
    /// Applications that answer (from Management, or probed by SELECT).
    public var applications: [String]
    /// True when the ATR says the key is on an NFC reader.
    public var overNFC: Bool

    public init(reader: String, atr: [UInt8], device: DeviceInfo, applications: [String], overNFC: Bool) {
        self.reader = reader
        self.atr = atr
        self.device = device
        self.applications = applications
        self.overNFC = overNFC
    }

    /// `reader`, with the serial when known: how a key is named in lists and errors.
    public var label: String {
        device.serial.map { "\(reader) (serial \($0))" } ?? reader
    }
}

/// Reads device information, falling back to probing applications on keys without Management
/// (older YubiKeys, and other vendors' keys that speak the same protocols).
extension SmartCardError {
    /// An exchange given up: the reader did not answer in time, so nothing more can be learned from it.
    var endsTheProbe: Bool {
        switch self {
        case .readerNotAnswering, .timeout: return true
        default: return false
        }
    }
}

public enum KeyProbe {
    /// ISO 7816-3: an ATR whose T0 byte has high nibble F is a USB CCID key; other ATRs are taken as
    /// keys on an NFC reader (the same rule yubikey-manager uses).
    public static func isNFC(atr: [UInt8]) -> Bool {
        guard atr.count > 1 else { return false }
        return atr[1] & 0xF0 != 0xF0
    }

    public static func inspect(connection: any SmartCardConnection) async throws -> KeyInfo {
        let nfc = isNFC(atr: connection.atr)
        do {
            let management = try await ManagementSession.make(connection: connection)
            let info = try await management.deviceInfo()
            return KeyInfo(
                reader: connection.name, atr: connection.atr, device: info,
                applications: info.enabled(overNFC: nfc).names, overNFC: nfc)
        } catch let e as SmartCardError where e.endsTheProbe {
            // A reader that stopped answering answers no other SELECT either: not a key without applications.
            throw e
        } catch {
            return try await probe(connection: connection, overNFC: nfc)
        }
    }

    /// The version from the OTP or OATH SELECT, the serial from the OTP application where readable, and
    /// the applications that answer SELECT.
    static func probe(connection: any SmartCardConnection, overNFC: Bool) async throws -> KeyInfo {
        let proto = SmartCardProtocol(connection: connection)
        var version: Version?
        var serial: UInt32?
        var caps: Capabilities = []
        var apps = [String]()
        var firstError: Error?

        func trySelect(_ aid: [UInt8], _ name: String) async -> [UInt8]? {
            do {
                return try await proto.select(aid, name: name)
            } catch let e as SmartCardError where e.isKeyGone || e == .serviceUnavailable || e.endsTheProbe {
                firstError = firstError ?? e
                return nil
            } catch {
                return nil
            }
        }

        if let otp = await trySelect(AID.otp, "OTP") {
            caps.insert(.otp)
            apps.append("OTP")
            version = Version(bytes: otp)
            let serialRequest = APDU(ins: OTPSession.Ins.config, p1: OTPSession.Command.deviceSerial, le: 256)
            if let r = try? await proto.send(serialRequest), r.status.isSuccess, r.data.count == 4 {
                serial = UInt32(BigEndian.integer(r.data))
                if serial == 0 { serial = nil }
            }
        }
        if let fido = await trySelect(AID.fido, "FIDO") {
            let text = String(decoding: fido, as: UTF8.self)
            if text.includes("FIDO_2"), !text.includes("U2F") {
                caps.insert(.fido2); apps.append("FIDO2")
            } else {
                // "U2F_V2" is what a key that speaks both answers too (YubiKeys over NFC among them):
                // getInfo tells whether it also speaks CTAP2.
                var fido2 = text.includes("FIDO_2")
                if !fido2 { fido2 = await speaksCTAP2(connection) }
                if fido2 { caps.insert(.fido2); apps.append("FIDO2") }
                caps.insert(.u2f)
                apps.append("U2F")
            }
        }
        if let oath = await trySelect(AID.oath, "OATH") {
            caps.insert(.oath)
            apps.append("OATH")
            if version == nil, let tlvs = try? TLV.parseAll(oath, mode: .simple),
                let v = tlvs.value(for: YKOATH.Tag.version)
            {
                version = Version(bytes: v)
            }
        }
        if await trySelect(AID.piv, "PIV") != nil { caps.insert(.piv); apps.append("PIV") }
        if await trySelect(AID.openpgp, "OpenPGP") != nil { caps.insert(.openpgp); apps.append("OpenPGP") }
        if await trySelect(AID.hsmauth, "HSMAUTH") != nil { caps.insert(.hsmauth); apps.append("HSMAUTH") }
        if let firstError, apps.isEmpty { throw firstError }
        let info = DeviceInfo(
            serial: serial, version: version ?? Version(0, 0, 0), supportedUSB: caps,
            enabledUSB: caps, supportedNFC: overNFC ? caps : nil, enabledNFC: overNFC ? caps : nil,
            fromManagement: false)
        return KeyInfo(
            reader: connection.name, atr: connection.atr, device: info, applications: apps,
            overNFC: overNFC)
    }

    /// Whether the FIDO application answers getInfo with a FIDO_2_x version. The connection stays open.
    static func speaksCTAP2(_ connection: any SmartCardConnection) async -> Bool {
        guard let fido = try? await PCSCFIDOConnection.open(card: connection, timeout: getInfoTimeout),
            let session = try? await CTAP2Session.make(connection: fido)
        else { return false }
        return await session.info.versions.contains { $0.hasPrefix("FIDO_2") }
    }

    /// getInfo needs no touch: a key still busy after this long is taken as U2F only.
    static let getInfoTimeout: Double = 5
}
