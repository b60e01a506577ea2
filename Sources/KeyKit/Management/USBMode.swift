/// A USB mode: the USB interfaces a YubiKey before firmware 5.0 turns on (SET MODE), as ykman's `config mode`
/// names them: OTP, FIDO, CCID or a combination (OTP+FIDO+CCID), shortened to their first letters (o+f+c), the
/// mode's number (0 to 6), or a change of the current mode (+CCID, -OTP, +c-o).
public struct USBMode: Sendable, Equatable, CustomStringConvertible {
    public let interfaces: Set<KeyInterfaceKind>

    /// The modes by number, as SET MODE takes them (its first byte's low three bits).
    public static let modes: [Set<KeyInterfaceKind>] = [
        [.otp], [.ccid], [.otp, .ccid], [.fido], [.otp, .fido], [.fido, .ccid], [.otp, .fido, .ccid],
    ]

    /// SET MODE's flag for a CCID-only mode: the button ejects and inserts the smart card.
    public static let touchEjectFlag: UInt8 = 0x80

    /// A mode of these interfaces (OTP, FIDO and CCID; at least one).
    public init?(_ interfaces: Set<KeyInterfaceKind>) {
        guard Self.modes.contains(interfaces) else { return nil }
        self.interfaces = interfaces
    }

    /// The mode of number `code` (its low three bits).
    public init?(code: UInt8) {
        let index = Int(code & 0x07)
        guard index < Self.modes.count else { return nil }
        interfaces = Self.modes[index]
    }

    /// The mode `text` names: its number, or interface names joined by "+", each a whole name or its start (any
    /// case): "OTP+FIDO+CCID", "o+c", "ccid", "6".
    public init?(parsing text: String, current: Set<KeyInterfaceKind> = []) {
        if let first = text.first, first == "+" || first == "-" {
            // Relative to the current interfaces, as ykman takes "+CCID-OTP": each name added or taken away.
            var interfaces = current
            var adding = true
            var name = ""
            func apply() -> Bool {
                guard !name.isEmpty else { return true }
                guard let kind = Self.interface(named: name) else { return false }
                if adding { interfaces.insert(kind) } else { interfaces.remove(kind) }
                name = ""
                return true
            }
            for c in text.uppercased() {
                if c == "+" || c == "-" {
                    guard apply() else { return nil }
                    adding = c == "+"
                } else {
                    name.append(c)
                }
            }
            guard apply() else { return nil }
            self.init(interfaces)
            return
        }
        if let number = UInt8(text) {
            guard number < Self.modes.count else { return nil }
            self.init(code: number)
            return
        }
        var interfaces = Set<KeyInterfaceKind>()
        for part in text.uppercased().split(separator: "+") {
            guard let kind = Self.interface(named: String(part)) else { return nil }
            interfaces.insert(kind)
        }
        self.init(interfaces)
    }

    /// The interface `name` (upper case) names: OTP, FIDO or CCID, or the start of one.
    static func interface(named name: String) -> KeyInterfaceKind? {
        let names: [(String, KeyInterfaceKind)] = [("OTP", .otp), ("FIDO", .fido), ("CCID", .ccid)]
        return names.first(where: { !name.isEmpty && $0.0.hasPrefix(name) })?.1
    }

    /// Its number.
    public var code: UInt8 { UInt8(Self.modes.firstIndex(of: interfaces) ?? 0) }

    /// OTP+FIDO+CCID, in that order.
    public var description: String {
        [(KeyInterfaceKind.otp, "OTP"), (.fido, "FIDO"), (.ccid, "CCID")].filter { interfaces.contains($0.0) }.map(
            \.1
        ).joined(separator: "+")
    }

    /// SET MODE's data: the mode's number (with the touch-eject flag when `autoEject` is given: CCID only), the
    /// challenge-response timeout and the auto-eject timeout (little-endian).
    public func setModeData(challengeResponseTimeout: UInt8, autoEject: UInt16?) -> [UInt8] {
        let eject = autoEject ?? 0
        return [
            code | (autoEject != nil ? Self.touchEjectFlag : 0), challengeResponseTimeout, UInt8(eject & 0xFF),
            UInt8(eject >> 8),
        ]
    }

    /// The applications a YubiKey 5 enables over USB for this mode (as ykman translates a mode into a device
    /// configuration), of those it `supported`: OTP; U2F and FIDO2; OATH, PIV, OpenPGP and HSMAUTH.
    public func capabilities(supported: Capabilities) -> Capabilities {
        var out: Capabilities = []
        if interfaces.contains(.otp) { out.formUnion(.otp) }
        if interfaces.contains(.fido) { out.formUnion([.u2f, .fido2]) }
        if interfaces.contains(.ccid) { out.formUnion(Capabilities.onCCID) }
        return out.intersection(supported)
    }

    /// The mode of the USB applications `enabled` (nil when their interfaces are none).
    public init?(enabled: Capabilities) {
        self.init(enabled.usbInterfaces)
    }
}

extension ManagementSession {
    /// SET MODE over CCID (firmware before 5.0): INS 16, P1 11, `USBMode.setModeData`.
    public func setMode(_ data: [UInt8]) async throws {
        _ = try await send(APDU(ins: Ins.setMode, p1: Ins.setModeP1, data: data))
    }
}

extension ManagementHID {
    /// YubiKey vendor CTAPHID command: SET MODE (firmware before 5.0).
    public static let ctapSetMode: UInt8 = 0x40
    /// OTP slot command: SET MODE (the device configuration slot).
    public static let otpSetMode: UInt8 = 0x11
}

extension ManagementLink {
    /// SET MODE (firmware before 5.0): the USB interfaces after the key is next plugged in, the touch-eject flag
    /// and the two timeouts. Over OTP HID a key whose slots are both empty answers as if it had refused (its
    /// programming sequence stays 0): that counts as done.
    public func setMode(_ data: [UInt8]) async throws {
        switch self {
        case .card(let session): try await session.setMode(data)
        case .fido(let hid):
            do {
                _ = try await hid.call(command: ManagementHID.ctapSetMode, payload: data)
            } catch FIDOTransportError.ctaphidError(let code) where code != CTAPHID.ErrorCode.channelBusy {
                throw ManagementError.configurationRefused
            }
        case .otp(let hid):
            let empty = try await hid.readStatus().programSequence == 0
            do {
                _ = try await hid.send(slot: ManagementHID.otpSetMode, data: data)
            } catch OTPHIDError.commandRejected {
                if !empty { throw ManagementError.configurationRefused }
            }
        }
    }
}
