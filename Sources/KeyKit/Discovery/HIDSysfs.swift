#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The HID interfaces of the machine, read straight from sysfs: for each /sys/class/hidraw entry its
/// device's `uevent` (bus, vendor and product IDs, name, serial), `report_descriptor` (top-level usage) and,
/// on USB, the USB device's `product` string — the facts hidapi's Linux enumeration reports, without walking
/// the device tree through libudev (about a millisecond per command for a key with two HID interfaces).
public enum HIDSysfs {
    /// The buses hidapi lists too (linux/input.h): USB, Bluetooth, I2C, SPI.
    static let listedBuses: [UInt16] = [0x03, 0x05, 0x18, 0x1C]

    /// Every HID interface under `root` (a sysfs mount), one per hidraw node, sorted by node path. Nodes
    /// are named under `devices` (/dev): /dev/hidrawN for /sys/class/hidraw/hidrawN.
    public static func interfaces(root: String = "/sys", devices: String = "/dev") -> [HIDDeviceInfo] {
        scan(root: root, devices: devices).map(\.info)
    }

    /// `interfaces`, each with the sysfs directory of the USB device above it (nil when there is none).
    public static func scan(root: String = "/sys", devices: String = "/dev")
        -> [(info: HIDDeviceInfo, usbDevice: String?)]
    {
        let classDir = root + "/class/hidraw"
        guard let dir = opendir(classDir) else { return [] }
        defer { closedir(dir) }
        var names = [String]()
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix("hidraw") { names.append(name) }
        }
        return names.sorted().compactMap { name in
            interface(sysfs: classDir + "/" + name + "/device", node: devices + "/" + name)
        }
    }

    /// The interface whose HID device directory is `sysfs`, and its USB device; nil when it is not a listed
    /// bus, or its files are gone (a key pulled out while it was read).
    static func interface(sysfs: String, node: String) -> (info: HIDDeviceInfo, usbDevice: String?)? {
        guard let uevent = readText(sysfs + "/uevent"), let ids = HIDUevent(uevent),
            listedBuses.contains(ids.bus)
        else { return nil }
        var name = ids.name
        let usb = usbDevice(above: sysfs)
        if ids.bus == 0x03, let usb {
            // hidapi names a USB interface by its device's product string, not the HID name (which has the
            // manufacturer in front).
            name = readText(usb + "/product").map { String($0.trimmingSuffix("\n")) }
        }
        var info = HIDDeviceInfo(
            path: node, vendorID: ids.vendor, productID: ids.product,
            productName: name.flatMap { $0.isEmpty ? nil : $0 },
            serialNumber: ids.serial.flatMap { $0.isEmpty ? nil : $0 })
        let usages = readBytes(sysfs + "/report_descriptor").map(HIDReportDescriptor.collectionUsages) ?? []
        // A node with several top-level collections is one interface; FIDO's usage wins, else the first.
        if let usage = usages.first(where: { $0.page == HIDRawDevice.fidoUsagePage }) ?? usages.first {
            info.usagePage = usage.page
            info.usage = usage.usage
        }
        return (info, usb)
    }

    /// The USB device directory (the first one up with an `idVendor` file) above `sysfs`, resolved.
    static func usbDevice(above sysfs: String) -> String? {
        guard let resolved = realpath(sysfs, nil) else { return nil }
        var dir = String(cString: resolved)
        free(resolved)
        while dir.count > 1 {
            if access(dir + "/idVendor", F_OK) == 0 { return dir }
            guard let slash = dir.lastIndex(of: "/") else { break }
            dir = String(dir[..<slash])
        }
        return nil
    }

    /// A small sysfs file's bytes (at most 64 KiB; report descriptors are at most 4 KiB), or nil.
    static func readBytes(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }

    static func readText(_ path: String) -> String? {
        readBytes(path).map { String(decoding: $0, as: UTF8.self) }
    }
}

private extension String {
    func trimmingSuffix(_ suffix: String) -> Substring {
        hasSuffix(suffix) ? dropLast(suffix.count) : self[...]
    }
}

/// What a HID device's sysfs `uevent` says: `HID_ID=BBBB:VVVVVVVV:PPPPPPPP`, `HID_NAME`, `HID_UNIQ`.
struct HIDUevent: Equatable {
    var bus: UInt16
    var vendor: UInt16
    var product: UInt16
    var name: String?
    var serial: String?

    /// Nil without a well-formed HID_ID line.
    init?(_ text: String) {
        var id: Substring?
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let value = line[line.index(after: eq)...]
            switch line[..<eq] {
            case "HID_ID": id = value
            case "HID_NAME": name = String(value)
            case "HID_UNIQ": serial = String(value)
            default: break
            }
        }
        let parts = id?.split(separator: ":", omittingEmptySubsequences: false) ?? []
        guard parts.count == 3, let b = UInt32(parts[0], radix: 16), let v = UInt32(parts[1], radix: 16),
            let p = UInt32(parts[2], radix: 16)
        else { return nil }
        // The IDs are 16-bit; the kernel prints them in 8 hex digits.
        bus = UInt16(truncatingIfNeeded: b)
        vendor = UInt16(truncatingIfNeeded: v)
        product = UInt16(truncatingIfNeeded: p)
    }
}

/// The usages of a HID report descriptor's collections (HID 1.11, 6.2.2).
enum HIDReportDescriptor {
    struct Usage: Equatable {
        var page: UInt16
        var usage: UInt16
    }

    /// Each Collection item's usage page and usage, in order: the Usage (a local item) must come between
    /// the previous main item and the Collection. A descriptor without collections that ends on a usage
    /// gives that usage. Stops at a malformed item.
    static func collectionUsages(_ d: [UInt8]) -> [Usage] {
        var found = [Usage]()
        var page: UInt16 = 0
        // The last Usage since the previous main item: its own page (a four-byte usage) or none, then the
        // page in effect at the Collection applies.
        var local: (page: UInt16?, usage: UInt16)?
        var i = 0
        while i < d.count {
            let prefix = d[i]
            if prefix == 0xFE {
                // A long item: its data size, a tag, the data.
                guard i + 2 < d.count else { break }
                i += 3 + Int(d[i + 1])
                continue
            }
            let size = [0, 1, 2, 4][Int(prefix & 0x03)]
            guard i + size < d.count else { break }
            var value: UInt32 = 0
            for k in 0..<size { value |= UInt32(d[i + 1 + k]) << (8 * k) }
            switch prefix & 0xFC {
            case 0x04:  // Usage Page (global)
                page = UInt16(truncatingIfNeeded: value)
            case 0x08:  // Usage (local)
                local = (size == 4 ? UInt16(truncatingIfNeeded: value >> 16) : nil, UInt16(truncatingIfNeeded: value))
            case 0xA0:  // Collection
                if let l = local { found.append(Usage(page: l.page ?? page, usage: l.usage)) }
                local = nil
            case 0x80, 0x90, 0xB0, 0xC0:  // Input, Output, Feature, End Collection: local items end here
                local = nil
            default:
                break
            }
            i += 1 + size
        }
        if found.isEmpty, let l = local { found.append(Usage(page: l.page ?? page, usage: l.usage)) }
        return found
    }
}
