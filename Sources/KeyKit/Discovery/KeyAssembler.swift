/// A key in a PC/SC reader, as the reader reports it.
public struct FoundCard: Sendable, Hashable {
    public var reader: String
    public var atr: [UInt8]

    public init(reader: String, atr: [UInt8]) {
        self.reader = reader
        self.atr = atr
    }

    public var address: String { "pcsc:" + reader }
}

/// A HID interface, with the USB device it belongs to (the sysfs directory of the device, nil when unknown).
public struct FoundHID: Sendable, Hashable {
    public var info: HIDDeviceInfo
    public var usbDevice: String?

    public init(info: HIDDeviceInfo, usbDevice: String?) {
        self.info = info
        self.usbDevice = usbDevice
    }

    public var address: String { "hid:" + info.path }
    public var isFIDO: Bool { info.usagePage == HIDRawDevice.fidoUsagePage }
    /// A YubiKey's OTP interface: a Yubico keyboard (usage page 1, usage 6).
    public var isYubiKeyOTP: Bool { info.isYubico && info.usagePage == 1 && info.usage == 6 }
}

/// Joins the interfaces discovery found into physical keys, and keeps each key's id while its interfaces
/// come and go.
///
/// HID interfaces of one USB device (FIDO and OTP of a YubiKey) are one key by topology. A USB YubiKey's
/// CCID reader joins the Yubico HID device with the same serial; when serials are not known, the one
/// Yubico reader joins the one Yubico HID device (with more than one of either, the caller reads serials
/// first: `candidatesNeedingSerials`). A non-Yubico FIDO key, and a key on an NFC reader, stand alone.
public struct KeyAssembler: Sendable {
    /// The keys now present, in the order they arrived.
    public private(set) var keys: [KeyDescriptor] = []

    public init() {}

    /// The HID interfaces discovery cares about: FIDO (any vendor) and a YubiKey's OTP interface.
    public static func relevant(_ hid: [FoundHID]) -> [FoundHID] {
        hid.filter { $0.isFIDO || $0.isYubiKeyOTP }
    }

    /// Addresses whose serial decides how keys are joined: every Yubico candidate, when there is more than
    /// one on either side. Empty in the common case of one key.
    public static func candidatesNeedingSerials(cards: [FoundCard], hid: [FoundHID]) -> [String] {
        let readers = cards.filter { Self.readerCandidate($0) }
        let groups = Self.hidGroups(relevant(hid)).filter { Self.groupCandidate($0) }
        guard readers.count > 1 || groups.count > 1, !readers.isEmpty, !groups.isEmpty else { return [] }
        return readers.map(\.address) + groups.map { $0[0].address }
    }

    /// The keys the interfaces make. `serials` by address (a reader's, or any interface of a HID device).
    public static func group(cards: [FoundCard], hid: [FoundHID], serials: [String: UInt32] = [:]) -> [KeyDescriptor] {
        var groups = hidGroups(relevant(hid))
        func serial(of group: [FoundHID]) -> UInt32? { group.lazy.compactMap { serials[$0.address] }.first }
        var out = [KeyDescriptor]()
        var unmatchedReaders = [FoundCard]()
        for card in cards {
            var d = KeyDescriptor(transport: .pcsc(reader: card.reader), name: card.reader, atr: card.atr)
            d.serial = serials[card.address]
            guard readerCandidate(card), let s = d.serial,
                let i = groups.firstIndex(where: { groupCandidate($0) && serial(of: $0) == s })
            else {
                out.append(d)
                if readerCandidate(card) { unmatchedReaders.append(card) }
                continue
            }
            attach(groups.remove(at: i), to: &d)
            out.append(d)
        }
        // One Yubico reader and one Yubico HID device left, whose serials do not differ: the same key.
        let leftGroups = groups.indices.filter { groupCandidate(groups[$0]) }
        if unmatchedReaders.count == 1, leftGroups.count == 1 {
            let card = unmatchedReaders[0]
            let g = groups[leftGroups[0]]
            let a = serials[card.address], b = serial(of: g)
            if a == nil || b == nil || a == b, let i = out.firstIndex(where: { $0.reader == card.reader }) {
                attach(g, to: &out[i])
                if out[i].serial == nil { out[i].serial = b }
                groups.remove(at: leftGroups[0])
            }
        }
        for g in groups {
            let first = g.first(where: \.isFIDO) ?? g[0]
            var d = KeyDescriptor(
                transport: .hid(path: first.info.path),
                name: first.info.productName ?? first.info.path)
            d.fidoHID = nil
            attach(g, to: &d)
            d.serial = serial(of: g)
            out.append(d)
        }
        return out
    }

    /// Takes the keys found now; answers what changed since the last call. A key keeps its id while any
    /// of its addresses stays.
    public mutating func apply(_ found: [KeyDescriptor]) -> [KeyEvent] {
        var events = [KeyEvent]()
        var next = [KeyDescriptor]()
        var used = Set<String>()
        for var d in found {
            if let old = keys.first(where: { !used.contains($0.id) && !$0.addresses.isDisjoint(with: d.addresses) }) {
                used.insert(old.id)
                d.id = old.id
                d.transport = old.transport
                if d.serial == nil { d.serial = old.serial }
                if d != old { events.append(.keyChanged(d)) }
            } else {
                events.append(.keyArrived(d))
            }
            next.append(d)
        }
        let left = keys.filter { !used.contains($0.id) }.map { KeyEvent.keyLeft(id: $0.id) }
        // Departures first: a key that left and one that came in its reader are told apart in order.
        keys = next
        return left + events
    }

    private static func readerCandidate(_ card: FoundCard) -> Bool {
        KeyDescriptor(transport: .pcsc(reader: card.reader), name: card.reader, atr: card.atr).readerIsUSBYubiKey
    }

    private static func groupCandidate(_ group: [FoundHID]) -> Bool {
        group.contains { $0.info.isYubico }
    }

    /// HID interfaces by USB device, in path order; interfaces of unknown topology stand alone.
    static func hidGroups(_ hid: [FoundHID]) -> [[FoundHID]] {
        var groups = [[FoundHID]]()
        for h in hid.sorted(by: { $0.info.path < $1.info.path }) {
            if let usb = h.usbDevice, let i = groups.firstIndex(where: { $0[0].usbDevice == usb }) {
                groups[i].append(h)
            } else {
                groups.append([h])
            }
        }
        return groups
    }

    private static func attach(_ group: [FoundHID], to d: inout KeyDescriptor) {
        for h in group {
            if h.isFIDO, d.fidoHID == nil { d.fidoHID = h.info }
            if h.isYubiKeyOTP, d.otpHID == nil { d.otpHID = h.info }
        }
    }
}
