/// Where a key's first interface is reached; it names the key (`KeyDescriptor.id`).
public enum KeyTransport: Sendable, Hashable, Codable {
    /// A key in a PC/SC reader (USB CCID, or an NFC reader).
    case pcsc(reader: String)
    /// A HID interface (hidraw path): FIDO, or the OTP keyboard interface.
    case hid(path: String)
    /// The in-process virtual key.
    case virtual
}

/// The interfaces a key can have. A USB YubiKey has up to three (CCID, FIDO HID, OTP HID); a Security Key
/// only FIDO HID; a key on an NFC reader is reached through the reader alone.
public enum KeyInterfaceKind: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case ccid, fido, otp, nfc

    public static func < (a: KeyInterfaceKind, b: KeyInterfaceKind) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// One physical key, as discovery sees it before any session is opened on it: the set of its interfaces.
public struct KeyDescriptor: Sendable, Hashable, Identifiable {
    /// Stable for as long as the key stays, even while interfaces come and go: "pcsc:<reader>",
    /// "hid:<path>" or "virtual", after the interface it was first seen on.
    public var id: String
    public var transport: KeyTransport
    /// Reader or product name.
    public var name: String
    /// ATR of the card in `reader`.
    public var atr: [UInt8]
    /// The key's PC/SC reader: its CCID interface on USB, or the NFC reader it lies on.
    public var reader: String?
    /// The FIDO HID interface (usage page 0xF1D0).
    public var fidoHID: HIDDeviceInfo?
    /// The OTP HID (keyboard) interface of a YubiKey.
    public var otpHID: HIDDeviceInfo?
    /// The serial number, when discovery had to read it to tell keys apart.
    public var serial: UInt32?

    public init(
        transport: KeyTransport, name: String, atr: [UInt8] = [], fidoHID: HIDDeviceInfo? = nil,
        otpHID: HIDDeviceInfo? = nil
    ) {
        self.transport = transport
        self.name = name
        self.atr = atr
        self.fidoHID = fidoHID
        self.otpHID = otpHID
        switch transport {
        case .pcsc(let reader):
            id = "pcsc:" + reader
            self.reader = reader
        case .hid(let path):
            id = "hid:" + path
            if fidoHID == nil && otpHID?.path != path {
                self.fidoHID = HIDDeviceInfo(path: path, vendorID: 0, productID: 0, productName: name)
            }
        case .virtual:
            // Reached through the backend that made it; without HID interfaces, as a card.
            id = "virtual"
            reader = name
        }
    }

    /// True for the in-process virtual key.
    public var isVirtual: Bool { transport == .virtual }

    /// True when the key lies on an NFC reader (its ATR says so).
    public var overNFC: Bool { reader != nil && KeyProbe.isNFC(atr: atr) }

    /// True when `reader` is a USB YubiKey's own CCID interface (named so by the key, with a USB ATR).
    public var readerIsUSBYubiKey: Bool {
        guard let reader, !overNFC else { return false }
        return reader.lowercased().includes("yubikey")
    }

    /// The interfaces, in the order ykman names them: ccid, fido, otp (or nfc).
    public var interfaces: [KeyInterfaceKind] {
        var out = [KeyInterfaceKind]()
        if reader != nil { out.append(overNFC ? .nfc : .ccid) }
        if fidoHID != nil { out.append(.fido) }
        if otpHID != nil { out.append(.otp) }
        return out.sorted()
    }

    /// Every address the key is reached at (reader name, hidraw paths): two descriptors that share one
    /// are the same key.
    public var addresses: Set<String> {
        var out = Set<String>()
        if let reader { out.insert("pcsc:" + reader) }
        if let p = fidoHID?.path { out.insert("hid:" + p) }
        if let p = otpHID?.path { out.insert("hid:" + p) }
        if isVirtual { out.insert("virtual") }
        return out
    }
}

/// What the monitor reports.
public enum KeyEvent: Sendable, Equatable {
    case readerAdded(String)
    case readerRemoved(String)
    case keyArrived(KeyDescriptor)
    /// A key that stays gained or lost an interface (same `id`).
    case keyChanged(KeyDescriptor)
    case keyLeft(id: String)
    /// pcscd went away; the monitor waits for it to come back. HID interfaces keep working.
    case serviceUnavailable
    /// pcscd is there but refuses this process (`SmartCardError.accessDenied`: polkit); the monitor tries again
    /// now and then, for a rule added meanwhile. HID interfaces keep working.
    case serviceRefused
    /// pcscd is reachable (again).
    case serviceAvailable
}
