import Glibc
import KeyKit
import Synchronization
import VirtualKey

/// The USB interfaces a YubiKey can have on, in the order its names list them.
public struct USBInterfaces: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let otp = USBInterfaces(rawValue: 1)
    public static let fido = USBInterfaces(rawValue: 2)
    public static let ccid = USBInterfaces(rawValue: 4)
    public static let all: USBInterfaces = [.otp, .fido, .ccid]

    /// Parses a comma list of `ccid`, `fido`, `otp`.
    public init?(parsing text: String) {
        var set = USBInterfaces()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            switch part.filter({ $0 != " " }).lowercased() {
            case "otp": set.insert(.otp)
            case "fido": set.insert(.fido)
            case "ccid": set.insert(.ccid)
            default: return nil
            }
        }
        guard !set.isEmpty else { return nil }
        self = set
    }

    /// OTP+FIDO+CCID, as the interfaces appear in a YubiKey's USB product name.
    public var names: String {
        [(USBInterfaces.otp, "OTP"), (.fido, "FIDO"), (.ccid, "CCID")].filter { contains($0.0) }.map(\.1)
            .joined(separator: "+")
    }

    /// A key with only FIDO is a Security Key.
    public var isSecurityKey: Bool { self == .fido }

    /// The USB product ID real keys use (yubikit's PID table): 0x0401...0x0407 for a YubiKey 5 by the
    /// interfaces on, 0x0120 for a Security Key.
    public var productID: UInt16 {
        if isSecurityKey { return 0x0120 }
        return 0x0400 + UInt16((contains(.otp) ? 1 : 0) | (contains(.fido) ? 2 : 0) | (contains(.ccid) ? 4 : 0))
    }

    /// The USB product string: "YubiKey OTP+FIDO+CCID", or "Security Key NFC".
    public var productName: String { isSecurityKey ? "Security Key NFC" : "YubiKey " + names }
    /// With the manufacturer: the HID device name and the CCID reader's name.
    public var deviceName: String { "Yubico " + productName }

    /// What a key made with these interfaces is on the bus while `on` of them are on: a YubiKey 4/5
    /// re-enumerates as the product of the interfaces on (product ID by yubikit's PID table, YK4_OTP 0x0401,
    /// YK4_FIDO 0x0402, YK4_OTP_FIDO 0x0403, YK4_CCID 0x0404, YK4_OTP_CCID 0x0405, YK4_FIDO_CCID 0x0406,
    /// YK4_OTP_FIDO_CCID 0x0407; the name lists them); a Security Key (FIDO alone) stays one.
    public func product(on: USBInterfaces) -> USBProduct {
        let shown = on.intersection(self)
        if isSecurityKey || shown.isEmpty { return USBProduct(id: productID, name: productName) }
        let bits = (shown.contains(.otp) ? 1 : 0) | (shown.contains(.fido) ? 2 : 0) | (shown.contains(.ccid) ? 4 : 0)
        return USBProduct(id: 0x0400 + UInt16(bits), name: "YubiKey " + shown.names)
    }
}

/// The USB identity of a plugged-in key: its product ID and product string.
public struct USBProduct: Sendable, Hashable {
    public var id: UInt16
    /// "YubiKey FIDO+CCID".
    public var name: String
    /// With the manufacturer: the HID device name and the CCID reader's name.
    public var deviceName: String { "Yubico " + name }

    public init(id: UInt16, name: String) {
        self.id = id
        self.name = name
    }
}

/// HID report descriptors as a YubiKey's interfaces have them.
public enum HIDReportDescriptors {
    /// FIDO: usage page 0xF1D0, usage 1; 64-byte input and output reports.
    public static let fido: [UInt8] = [
        0x06, 0xD0, 0xF1, 0x09, 0x01, 0xA1, 0x01,
        0x09, 0x20, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08, 0x95, 0x40, 0x81, 0x02,
        0x09, 0x21, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08, 0x95, 0x40, 0x91, 0x02,
        0xC0,
    ]
    /// The OTP keyboard: usage page 1, usage 6; boot keyboard reports and an 8-byte feature report.
    public static let otpKeyboard: [UInt8] = [
        0x05, 0x01, 0x09, 0x06, 0xA1, 0x01,
        0x05, 0x07, 0x19, 0xE0, 0x29, 0xE7, 0x15, 0x00, 0x25, 0x01, 0x75, 0x01, 0x95, 0x08, 0x81, 0x02,
        0x95, 0x01, 0x75, 0x08, 0x81, 0x01,
        0x95, 0x05, 0x75, 0x01, 0x05, 0x08, 0x19, 0x01, 0x29, 0x05, 0x91, 0x02,
        0x95, 0x01, 0x75, 0x03, 0x91, 0x01,
        0x95, 0x06, 0x75, 0x08, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x05, 0x07, 0x19, 0x00, 0x2A, 0xFF, 0x00, 0x81, 0x00,
        0x09, 0x03, 0x75, 0x08, 0x95, 0x08, 0xB1, 0x02,
        0xC0,
    ]
}

/// An open file of the FIDO node: a handle of the in-process CTAPHID device, which also answers the Management
/// application's READ CONFIG and WRITE CONFIG on the FIDO interface (vendor commands 0x42 and 0x43, yubikit's
/// CTAP_READ_CONFIG; ykman identifies a key's FIDO interface with it) as a YubiKey does.
final class FIDONodeHandle: HIDNodeHandle {
    let device: VirtualHIDDevice
    init(_ device: VirtualHIDDevice) {
        self.device = device
    }
    var hasInput: Bool { true }
    func write(_ report: [UInt8]) throws {
        try device.write(Array(report.prefix(64)))
    }
    func read(timeoutMilliseconds: Int) throws -> [UInt8]? {
        try device.read(timeoutMilliseconds: timeoutMilliseconds)
    }
    func setFeature(_ report: [UInt8]) throws { throw USBError.failed("no feature reports") }
    func getFeature() throws -> [UInt8] { throw USBError.failed("no feature reports") }
    func close() { device.close() }
}

/// Feature reports of the OTP interface, as two calls (8 bytes each, no report ID).
public struct FeatureReports: Sendable {
    public var set: @Sendable ([UInt8]) throws -> Void
    public var get: @Sendable () throws -> [UInt8]
    public var close: @Sendable () -> Void
    public init(
        set: @escaping @Sendable ([UInt8]) throws -> Void, get: @escaping @Sendable () throws -> [UInt8],
        close: @escaping @Sendable () -> Void = {}
    ) {
        self.set = set
        self.get = get
        self.close = close
    }
}

/// An open file of the OTP keyboard node: it never types; feature reports go to the key's OTP device.
final class OTPNodeHandle: HIDNodeHandle {
    let features: FeatureReports?
    init(_ features: FeatureReports?) { self.features = features }
    var hasInput: Bool { false }
    func write(_ report: [UInt8]) throws {}
    func read(timeoutMilliseconds: Int) throws -> [UInt8]? { nil }
    func setFeature(_ report: [UInt8]) throws {
        guard let features else { throw USBError.failed("no OTP device") }
        try features.set(Array((report + [UInt8](repeating: 0, count: 8)).prefix(8)))
    }
    func getFeature() throws -> [UInt8] {
        guard let features else { throw USBError.failed("no OTP device") }
        return try features.get()
    }
    func close() {}
}

/// The virtual key as a USB composite device inside a private mount namespace: hidraw nodes served
/// through FUSE, their sysfs entries under one USB device, and its CCID interface as a card in a vpcd
/// reader. `plug()` and `unplug()` do what a hand does.
public final class VirtualUSBKey: Sendable {
    public static let vendorID: UInt16 = 0x1050
    /// The tmpfs under /sys/devices that holds the USB tree (mounted by whoever sets up the namespace).
    public let sysDevices: String
    public let sysClass: String
    public let devDirectory: String
    public let key: VirtualKey
    public let interfaces: USBInterfaces
    /// The permission bits of the hidraw nodes (see `HIDNode.mode`).
    public let nodeMode: UInt32
    private let card: VpcdCard?
    private let makeFeatures: (@Sendable () -> FeatureReports?)?
    private let showReader: (@Sendable (String?) throws -> Void)?
    private let log: @Sendable (String) -> Void

    private struct Plugged: Sendable {
        var nodes: [HIDNode]
        var features: FeatureReports?
        var product: USBProduct
    }
    private struct State: Sendable {
        var plugged: Plugged?
        var devnum = 1
        var hidSequence = 0
    }
    private let state = Mutex(State())

    /// `showReader` is called at each plug-in with the name the key's CCID reader has now (nil: none, the
    /// CCID interface is off), before the card goes in: pcscd names the reader after the USB product, so a
    /// key that comes back with other interfaces is a reader of another name (`NamespacePCSCD.show`).
    public init(
        key: VirtualKey, interfaces: USBInterfaces, vpcdPort: UInt16?,
        sysDevices: String, sysClass: String = "/sys/class/hidraw", devDirectory: String = "/dev",
        nodeMode: UInt32 = 0o666, makeFeatures: (@Sendable () -> FeatureReports?)?,
        showReader: (@Sendable (String?) throws -> Void)? = nil, log: @escaping @Sendable (String) -> Void
    ) {
        self.key = key
        self.interfaces = interfaces
        self.nodeMode = nodeMode
        self.sysDevices = sysDevices
        self.sysClass = sysClass
        self.devDirectory = devDirectory
        self.makeFeatures = makeFeatures
        self.showReader = showReader
        self.log = log
        card = interfaces.contains(.ccid) && vpcdPort != nil ? VpcdCard(key: key, port: vpcdPort!, log: log) : nil
    }

    public var isPlugged: Bool { state.withLock { $0.plugged != nil } }

    /// What the key is on the bus when plugged in now (`USBInterfaces.product(on:)` of `presentInterfaces`).
    public var product: USBProduct { interfaces.product(on: presentInterfaces) }

    /// The PCI host controller and root hub the key plugs into (once, before the first plug).
    public func prepareBus() throws {
        let hc = sysDevices + "/0000:00:14.0"
        try SysFS.directory(hc)
        try SysFS.file(
            hc + "/uevent", "DRIVER=xhci_hcd\nPCI_CLASS=C0330\nPCI_ID=8086:A36D\nPCI_SLOT_NAME=0000:00:14.0\n")
        try SysFS.link(hc + "/subsystem", "/sys/bus/pci")
        let hub = hc + "/usb1"
        try SysFS.directory(hub)
        try SysFS.file(
            hub + "/uevent",
            "MAJOR=189\nMINOR=0\nDEVNAME=bus/usb/001/001\nDEVTYPE=usb_device\n"
                + "DRIVER=usb\nPRODUCT=1d6b/2/618\nTYPE=9/0/1\nBUSNUM=001\nDEVNUM=001\n")
        for (name, value) in [
            ("idVendor", "1d6b"), ("idProduct", "0002"), ("busnum", "1"), ("devnum", "1"),
            ("manufacturer", "Linux xhci-hcd"), ("product", "xHCI Host Controller"),
            ("serial", "0000:00:14.0"), ("bDeviceClass", "09"),
        ] {
            try SysFS.file(hub + "/" + name, value + "\n")
        }
        try SysFS.link(hub + "/subsystem", "/sys/bus/usb")
    }

    /// The USB device's directory (present while plugged).
    public var usbDevicePath: String { sysDevices + "/0000:00:14.0/usb1/1-1" }

    /// Plugs the key in as the product of the interfaces its configuration leaves on: sysfs entries first,
    /// then the /dev nodes with their FUSE files, then the reader of that name and the card.
    public func plug() throws {
        let (devnum, sequence) = try state.withLock { s -> (Int, Int) in
            guard s.plugged == nil else { throw USBError.failed("the key is already plugged in") }
            s.devnum += 1
            s.hidSequence += interfaces.subtracting(.ccid).isEmpty ? 0 : 1
            return (s.devnum, s.hidSequence)
        }
        // USB power: a restricted NFC is on again.
        key.poweredFromUSB()
        let present = presentInterfaces
        let product = interfaces.product(on: present)
        let pid = product.id
        let pidHex = hex4(pid)
        let version = key.state.version
        let bcd = "\(version.major)\(version.minor)\(version.patch)"
        let dev = usbDevicePath
        try SysFS.directory(dev)
        var hidInterfaces: [(USBInterfaces, [UInt8])] = []
        if present.contains(.otp) { hidInterfaces.append((.otp, HIDReportDescriptors.otpKeyboard)) }
        if present.contains(.fido) { hidInterfaces.append((.fido, HIDReportDescriptors.fido)) }
        let count = hidInterfaces.count + (present.contains(.ccid) ? 1 : 0)
        try SysFS.file(
            dev + "/uevent",
            "MAJOR=189\nMINOR=\(devnum - 1)\nDEVNAME=bus/usb/001/\(pad3(devnum))\n"
                + "DEVTYPE=usb_device\nDRIVER=usb\nPRODUCT=1050/\(String(pid, radix: 16))/\(bcd)\n"
                + "TYPE=0/0/0\nBUSNUM=001\nDEVNUM=\(pad3(devnum))\n")
        for (name, value) in [
            ("idVendor", "1050"), ("idProduct", pidHex), ("bcdDevice", pad4(bcd)),
            ("manufacturer", "Yubico"), ("product", product.name),
            ("busnum", "1"), ("devnum", String(devnum)), ("speed", "12"),
            ("bNumInterfaces", " \(count)"), ("bDeviceClass", "00"), ("devpath", "1"),
        ] {
            try SysFS.file(dev + "/" + name, value + "\n")
        }
        try SysFS.link(dev + "/subsystem", "/sys/bus/usb")

        var nodes = [HIDNode]()
        let features = present.contains(.otp) ? makeFeatures?() : nil
        var fidoBase: VirtualHIDDevice?
        do {
            var hidrawPaths = [(String, String, HIDNodeIdentity, USBInterfaces)]()
            for (number, (kind, descriptor)) in hidInterfaces.enumerated() {
                let intf = dev + "/1-1:1.\(number)"
                try SysFS.directory(intf)
                let protocolNumbers = kind == .otp ? "3/1/1" : "3/0/0"
                try SysFS.file(
                    intf + "/uevent",
                    "DEVTYPE=usb_interface\nDRIVER=usbhid\n"
                        + "PRODUCT=1050/\(String(pid, radix: 16))/\(bcd)\nTYPE=0/0/0\nINTERFACE=\(protocolNumbers)\n"
                        + "MODALIAS=usb:v1050p\(pidHex.uppercased())d\(pad4(bcd))dc00dsc00dp00ic03isc\(kind == .otp ? "01" : "00")ip\(kind == .otp ? "01" : "00")in\(pad2(number))\n"
                )
                for (name, value) in [
                    ("bInterfaceNumber", pad2(number)), ("bInterfaceClass", "03"),
                    ("bInterfaceSubClass", kind == .otp ? "01" : "00"),
                    ("bInterfaceProtocol", kind == .otp ? "01" : "00"), ("bAlternateSetting", " 0"),
                ] {
                    try SysFS.file(intf + "/" + name, value + "\n")
                }
                try SysFS.link(intf + "/subsystem", "/sys/bus/usb")
                let hidName =
                    "0003:1050:\(pidHex.uppercased()).\(hex4(UInt16(truncatingIfNeeded: sequence * 4 + number)).uppercased())"
                let hid = intf + "/" + hidName
                let phys = "usb-0000:00:14.0-1/input\(number)"
                try SysFS.directory(hid)
                try SysFS.file(
                    hid + "/uevent",
                    "DRIVER=hid-generic\nHID_ID=0003:00001050:0000\(pidHex.uppercased())\n"
                        + "HID_NAME=\(product.deviceName)\nHID_PHYS=\(phys)\nHID_UNIQ=\n"
                        + "MODALIAS=hid:b0003g0001v00001050p0000\(pidHex.uppercased())\n")
                try SysFS.bytes(hid + "/report_descriptor", descriptor)
                try SysFS.link(hid + "/subsystem", "/sys/bus/hid")
                try SysFS.directory(hid + "/hidraw")
                let node = "hidraw\(number)"
                let raw = hid + "/hidraw/" + node
                try SysFS.directory(raw)
                try SysFS.file(raw + "/uevent", "MAJOR=243\nMINOR=\(number)\nDEVNAME=\(node)\n")
                try SysFS.file(raw + "/dev", "243:\(number)\n")
                try SysFS.link(raw + "/subsystem", "/sys/class/hidraw")
                try SysFS.link(raw + "/device", "../../../" + hidName)
                try SysFS.link(sysClass + "/" + node, raw)
                let identity = HIDNodeIdentity(
                    vendor: Self.vendorID, product: pid, name: product.deviceName,
                    phys: phys, reportDescriptor: descriptor)
                hidrawPaths.append((devDirectory + "/" + node, node, identity, kind))
            }
            for (path, _, identity, kind) in hidrawPaths {
                let node: HIDNode
                if kind == .fido {
                    let base = key.makeFIDOHIDDevice()
                    // Only the handles opened from it receive reports.
                    base.close()
                    fidoBase = base
                    node = try HIDNode(path: path, identity: identity, mode: nodeMode, log: log) {
                        FIDONodeHandle(base.openAnotherHandle())
                    }
                } else {
                    node = try HIDNode(path: path, identity: identity, mode: nodeMode, log: log) {
                        OTPNodeHandle(features)
                    }
                }
                nodes.append(node)
            }
        } catch {
            for n in nodes { n.remove() }
            features?.close()
            removeSysEntries()
            state.withLock { $0.plugged = nil }
            throw error
        }
        _ = fidoBase
        state.withLock { $0.plugged = Plugged(nodes: nodes, features: features, product: product) }
        if let card {
            do {
                try showReader?(present.contains(.ccid) ? product.deviceName : nil)
            } catch {
                log("the CCID reader: \(error)")
            }
            if present.contains(.ccid) {
                card.insert()
                waitForCard(present: true, reader: product.deviceName)
            }
        }
    }

    /// The interfaces on at plug-in: those the key was made with that its applications enabled over USB
    /// need, as a YubiKey turns an interface off when no application on it is enabled (OTP: OTP HID; U2F,
    /// FIDO2: FIDO HID; OATH, PIV, OpenPGP, HSMAUTH: CCID).
    public var presentInterfaces: USBInterfaces {
        let needed = Capabilities(rawValue: key.state.usbEnabled).usbInterfaces
        var out = USBInterfaces()
        if needed.contains(.otp) { out.insert(.otp) }
        if needed.contains(.fido) { out.insert(.fido) }
        if needed.contains(.ccid) { out.insert(.ccid) }
        return interfaces.intersection(out)
    }

    /// Unplugs and plugs the key in again, as a YubiKey restarting after its configuration changed.
    public func restart() {
        do {
            try unplug()
            try plug()
        } catch {
            log("restart: \(error)")
        }
    }

    /// Waits (at most 5 s) until pcscd shows the card in (or out of) the key's reader (out: or no such
    /// reader), so that a client started after `plug` or `unplug` finds the key as it is.
    private func waitForCard(present: Bool, reader: String) {
        for _ in 0..<100 {
            if let context = try? PCSCContext(), let status = try? context.status(),
                (status.first(where: { $0.name.hasPrefix(reader) })?.cardPresent ?? false) == present
            {
                return
            }
            SystemThread.sleep(0.05)
        }
        log("pcscd did not see the card \(present ? "arrive" : "leave") within 5 s")
    }

    /// Pulls the key out: the card leaves the reader, held reads fail with ENODEV, the sysfs entries go,
    /// then each node is unmounted and its /dev file removed; the key power-cycles.
    public func unplug() throws {
        let plugged = try state.withLock { s -> Plugged in
            guard let p = s.plugged else { throw USBError.failed("the key is not plugged in") }
            s.plugged = nil
            return p
        }
        if let card {
            card.remove()
            waitForCard(present: false, reader: plugged.product.deviceName)
        } else {
            key.powerCycle()
        }
        for node in plugged.nodes { node.disconnect() }
        removeSysEntries()
        for node in plugged.nodes { node.remove() }
        plugged.features?.close()
    }

    private func removeSysEntries() {
        if let entries = try? SysFS.list(sysClass) {
            for e in entries { unlink(sysClass + "/" + e) }
        }
        SysFS.removeTree(usbDevicePath)
    }

    private func hex4(_ v: UInt16) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }
    private func pad2(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    private func pad3(_ n: Int) -> String { String(repeating: "0", count: max(0, 3 - String(n).count)) + String(n) }
    private func pad4(_ s: String) -> String { String(repeating: "0", count: max(0, 4 - s.count)) + s }
}

/// Writing a sysfs-like tree on a tmpfs.
enum SysFS {
    static func directory(_ path: String) throws {
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw USBError.system("mkdir \(path)", errno) }
    }

    static func file(_ path: String, _ text: String) throws {
        try bytes(path, Array(text.utf8))
    }

    static func bytes(_ path: String, _ data: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o444)
        guard fd >= 0 else { throw USBError.system("create \(path)", errno) }
        defer { close(fd) }
        let n = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard n == data.count else { throw USBError.system("write \(path)", errno) }
    }

    static func link(_ path: String, _ target: String) throws {
        unlink(path)
        if symlink(target, path) != 0 { throw USBError.system("symlink \(path)", errno) }
    }

    static func list(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw USBError.system("opendir \(path)", errno) }
        defer { closedir(dir) }
        var out = [String]()
        while let e = readdir(dir) {
            let name = withUnsafePointer(to: e.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { out.append(name) }
        }
        return out
    }

    /// Removes a directory tree (symlinks are removed, never followed).
    static func removeTree(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if st.st_mode & S_IFMT == S_IFDIR {
            for e in (try? list(path)) ?? [] { removeTree(path + "/" + e) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
