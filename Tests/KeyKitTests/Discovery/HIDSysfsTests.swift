import Foundation
import Testing
@testable import KeyKit

/// The FIDO HID report descriptor of the CTAP specification (CTAPHID, "HID report descriptor and device
/// discovery"): usage page 0xF1D0, usage 1, 64-byte input and output reports.
private let fidoDescriptor: [UInt8] = [
    0x06, 0xD0, 0xF1, 0x09, 0x01, 0xA1, 0x01, 0x09, 0x20, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08, 0x95, 0x40,
    0x81, 0x02, 0x09, 0x21, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08, 0x95, 0x40, 0x91, 0x02, 0xC0,
]

/// A boot keyboard (HID 1.11 appendix B.1, as a YubiKey's OTP interface reports it, with its feature report):
/// generic desktop page, usage 6.
private let keyboardDescriptor: [UInt8] = [
    0x05, 0x01, 0x09, 0x06, 0xA1, 0x01, 0x05, 0x07, 0x19, 0xE0, 0x29, 0xE7, 0x15, 0x00, 0x25, 0x01, 0x75, 0x01,
    0x95, 0x08, 0x81, 0x02, 0x95, 0x01, 0x75, 0x08, 0x81, 0x01, 0x95, 0x05, 0x75, 0x01, 0x05, 0x08, 0x19, 0x01,
    0x29, 0x05, 0x91, 0x02, 0x95, 0x01, 0x75, 0x03, 0x91, 0x01, 0x95, 0x06, 0x75, 0x08, 0x15, 0x00, 0x25, 0x65,
    0x05, 0x07, 0x19, 0x00, 0x29, 0x65, 0x81, 0x00, 0x09, 0x03, 0x75, 0x08, 0x95, 0x08, 0xB1, 0x02, 0xC0,
]

/// A fake sysfs tree in a temporary directory, laid out as the kernel lays out a USB HID interface.
private final class FakeSysfs {
    let root: String

    init() throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        root = base + "/hidsysfs-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/class/hidraw", withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// A USB device (`usb` below /devices) with its product string.
    func usbDevice(_ usb: String, product: String) throws {
        let dir = root + "/devices/" + usb
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "1050\n".write(toFile: dir + "/idVendor", atomically: false, encoding: .utf8)
        try (product + "\n").write(toFile: dir + "/product", atomically: false, encoding: .utf8)
    }

    /// A hidraw node whose HID device directory is `device` (below /devices), with its uevent and descriptor.
    func node(_ name: String, device: String, uevent: String, descriptor: [UInt8]?) throws {
        let hid = root + "/devices/" + device
        let raw = hid + "/hidraw/" + name
        try FileManager.default.createDirectory(atPath: raw, withIntermediateDirectories: true)
        try uevent.write(toFile: hid + "/uevent", atomically: false, encoding: .utf8)
        if let descriptor { try Data(descriptor).write(to: URL(fileURLWithPath: hid + "/report_descriptor")) }
        try FileManager.default.createSymbolicLink(atPath: raw + "/device", withDestinationPath: "../..")
        try FileManager.default.createSymbolicLink(atPath: root + "/class/hidraw/" + name, withDestinationPath: raw)
    }
}

private func uevent(bus: String, vendor: String, product: String, name: String, uniq: String) -> String {
    "DRIVER=hid-generic\nHID_ID=\(bus):0000\(vendor):0000\(product)\nHID_NAME=\(name)\nHID_PHYS=usb-0000:00:14.0-1/input0\n"
        + "HID_UNIQ=\(uniq)\nMODALIAS=hid:b\(bus)g0001v0000\(vendor)p0000\(product)\n"
}

@Suite("HID interfaces read from sysfs")
struct HIDSysfsTests {
    @Test("A YubiKey's two interfaces: IDs, the USB product string, the top-level usage of each")
    func yubiKey() throws {
        let fs = try FakeSysfs()
        let usb = "pci0000:00/0000:00:14.0/usb1/1-1"
        try fs.usbDevice(usb, product: "YubiKey OTP+FIDO+CCID")
        try fs.node(
            "hidraw1", device: usb + "/1-1:1.1/0003:1050:0407.0002",
            uevent: uevent(
                bus: "0003", vendor: "1050", product: "0407", name: "Yubico YubiKey OTP+FIDO+CCID", uniq: ""),
            descriptor: fidoDescriptor)
        try fs.node(
            "hidraw0", device: usb + "/1-1:1.0/0003:1050:0407.0001",
            uevent: uevent(
                bus: "0003", vendor: "1050", product: "0407", name: "Yubico YubiKey OTP+FIDO+CCID", uniq: ""),
            descriptor: keyboardDescriptor)
        let found = HIDSysfs.interfaces(root: fs.root, devices: "/dev")
        #expect(found.map(\.path) == ["/dev/hidraw0", "/dev/hidraw1"])
        #expect(found.allSatisfy { $0.vendorID == 0x1050 && $0.productID == 0x0407 })
        #expect(found.allSatisfy { $0.productName == "YubiKey OTP+FIDO+CCID" && $0.serialNumber == nil })
        #expect(found[0].usagePage == HIDRawDevice.keyboardUsagePage && found[0].usage == HIDRawDevice.keyboardUsage)
        #expect(found[1].usagePage == HIDRawDevice.fidoUsagePage && found[1].usage == 1)
        #expect(
            HIDSysfs.usbDevice(above: fs.root + "/class/hidraw/hidraw1/device")?.hasSuffix("/devices/" + usb) == true)
        // The scan gives each interface's USB device with it: one device for both.
        let scanned = HIDSysfs.scan(root: fs.root, devices: "/dev")
        #expect(scanned.map(\.info) == found)
        #expect(scanned.allSatisfy { $0.usbDevice?.hasSuffix("/devices/" + usb) == true })
    }

    @Test("Off USB: the HID name and serial; unlisted buses, broken uevents and gone descriptors")
    func otherBuses() throws {
        let fs = try FakeSysfs()
        try fs.node(
            "hidraw0", device: "virtual/0005:1050:0120.0001",
            uevent: uevent(bus: "0005", vendor: "1050", product: "0120", name: "Security Key by Yubico", uniq: "aa:bb"),
            descriptor: fidoDescriptor)
        try fs.node(
            "hidraw1", device: "virtual/0006:1234:5678.0002",
            uevent: uevent(bus: "0006", vendor: "1234", product: "5678", name: "uhid", uniq: ""),
            descriptor: fidoDescriptor)
        try fs.node("hidraw2", device: "virtual/bad.0003", uevent: "HID_ID=zz\n", descriptor: fidoDescriptor)
        try fs.node(
            "hidraw3", device: "virtual/0003:20A0:42B1.0004",
            uevent: uevent(bus: "0003", vendor: "20A0", product: "42B1", name: "Nitrokey", uniq: "X1"), descriptor: nil)
        let found = HIDSysfs.interfaces(root: fs.root, devices: "/dev")
        #expect(found.map(\.path) == ["/dev/hidraw0", "/dev/hidraw3"])
        #expect(found[0].productName == "Security Key by Yubico" && found[0].serialNumber == "aa:bb")
        #expect(found[0].usagePage == HIDRawDevice.fidoUsagePage)
        // USB without a USB device above it (a uhid device): the HID name; no descriptor, no usage.
        #expect(found[1].productName == "Nitrokey" && found[1].vendorID == 0x20A0 && found[1].productID == 0x42B1)
        #expect(found[1].usagePage == 0 && found[1].usage == 0)
        #expect(HIDSysfs.interfaces(root: fs.root + "/missing").isEmpty)
        #expect(HIDSysfs.scan(root: fs.root, devices: "/dev").map(\.usbDevice) == [nil, nil])
    }

    @Test("uevent: HID_ID's three hex fields, name and serial")
    func uevents() {
        let u = HIDUevent(
            "DRIVER=hid-generic\nHID_ID=0003:00001050:00000407\nHID_NAME=Yubico YubiKey\nHID_UNIQ=1234=5\n")
        #expect(u?.bus == 3 && u?.vendor == 0x1050 && u?.product == 0x0407)
        #expect(u?.name == "Yubico YubiKey" && u?.serial == "1234=5")
        #expect(HIDUevent("HID_NAME=x\n") == nil)
        #expect(HIDUevent("HID_ID=0003:1050\n") == nil)
        #expect(HIDUevent("HID_ID=0003:0000105G:00000407\n") == nil)
    }

    @Test("Report descriptors: each collection's usage, pages in effect, long items, truncation")
    func descriptors() {
        typealias U = HIDReportDescriptor.Usage
        #expect(HIDReportDescriptor.collectionUsages(fidoDescriptor) == [U(page: 0xF1D0, usage: 1)])
        #expect(HIDReportDescriptor.collectionUsages(keyboardDescriptor) == [U(page: 1, usage: 6)])
        // Two top-level collections (a mouse, then FIDO): both, in order.
        let mouse: [UInt8] = [0x05, 0x01, 0x09, 0x02, 0xA1, 0x01, 0x09, 0x01, 0xA1, 0x00, 0xC0, 0xC0]
        #expect(
            HIDReportDescriptor.collectionUsages(mouse + fidoDescriptor)
                == [U(page: 1, usage: 2), U(page: 1, usage: 1), U(page: 0xF1D0, usage: 1)])
        // The page in effect at the Collection counts, even when set after the Usage.
        #expect(
            HIDReportDescriptor.collectionUsages([0x09, 0x01, 0x06, 0xD0, 0xF1, 0xA1, 0x01, 0xC0])
                == [U(page: 0xF1D0, usage: 1)])
        // A four-byte usage carries its own page.
        #expect(
            HIDReportDescriptor.collectionUsages([0x05, 0x01, 0x0B, 0x01, 0x00, 0xD0, 0xF1, 0xA1, 0x01, 0xC0])
                == [U(page: 0xF1D0, usage: 1)])
        // A collection without a usage since the last main item gives none.
        #expect(HIDReportDescriptor.collectionUsages([0x05, 0x01, 0x09, 0x06, 0x81, 0x02, 0xA1, 0x01, 0xC0]) == [])
        // A long item is skipped whole.
        #expect(
            HIDReportDescriptor.collectionUsages([0xFE, 0x02, 0x10, 0xA1, 0xA1] + fidoDescriptor)
                == [U(page: 0xF1D0, usage: 1)])
        // No collection, ending on a usage: that usage. Truncated items end the walk.
        #expect(HIDReportDescriptor.collectionUsages([0x06, 0xD0, 0xF1, 0x09, 0x01]) == [U(page: 0xF1D0, usage: 1)])
        #expect(HIDReportDescriptor.collectionUsages([0x06, 0xD0]) == [])
        #expect(HIDReportDescriptor.collectionUsages([0xFE, 0x40]) == [])
        #expect(HIDReportDescriptor.collectionUsages([]) == [])
    }
}
