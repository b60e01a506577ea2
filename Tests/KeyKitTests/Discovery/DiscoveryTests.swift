import KeyKit
import Foundation
import Synchronization
import Testing

private let usbATR: [UInt8] = [
    0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15, 0x80, 0x73, 0xC0, 0x21, 0xC0,
    0x57, 0x59, 0x75, 0x62, 0x69, 0x4B, 0x65, 0x79, 0x40,
]
private let nfcATR: [UInt8] = [
    0x3B, 0x8D, 0x80, 0x01, 0x80, 0x73, 0xC0, 0x21, 0xC0, 0x57, 0x59, 0x75, 0x62, 0x69,
    0x4B, 0x65, 0x79, 0xF9,
]

private func fido(_ n: Int, usb: String?, vendor: UInt16 = 0x1050, product: UInt16 = 0x0407) -> FoundHID {
    var info = HIDDeviceInfo(
        path: "/dev/hidraw\(n)", vendorID: vendor, productID: product, productName: "YubiKey OTP+FIDO+CCID")
    info.usagePage = 0xF1D0
    info.usage = 1
    return FoundHID(info: info, usbDevice: usb)
}

private func otp(_ n: Int, usb: String?, vendor: UInt16 = 0x1050) -> FoundHID {
    var info = HIDDeviceInfo(
        path: "/dev/hidraw\(n)", vendorID: vendor, productID: 0x0407, productName: "YubiKey OTP+FIDO+CCID")
    info.usagePage = 1
    info.usage = 6
    return FoundHID(info: info, usbDevice: usb)
}

private let yubiReader = FoundCard(reader: "Yubico YubiKey OTP+FIDO+CCID 00 00", atr: usbATR)
private let usb1 = "/sys/devices/pci0000:00/usb1/1-1"
private let usb2 = "/sys/devices/pci0000:00/usb1/1-2"

@Suite struct KeyAssemblyTests {
    @Test func oneUSBYubiKeyIsOneKeyWithThreeInterfaces() {
        let keys = KeyAssembler.group(cards: [yubiReader], hid: [fido(0, usb: usb1), otp(1, usb: usb1)])
        #expect(keys.count == 1)
        #expect(keys[0].interfaces == [.ccid, .fido, .otp])
        #expect(keys[0].reader == yubiReader.reader)
        #expect(keys[0].fidoHID?.path == "/dev/hidraw0")
        #expect(keys[0].otpHID?.path == "/dev/hidraw1")
        #expect(keys[0].id == "pcsc:" + yubiReader.reader)
    }

    @Test func aSecurityKeyIsItsFIDOInterfaceAlone() {
        let keys = KeyAssembler.group(cards: [], hid: [fido(3, usb: usb1, product: 0x0120)])
        #expect(keys.count == 1)
        #expect(keys[0].interfaces == [.fido])
        #expect(keys[0].id == "hid:/dev/hidraw3")
        #expect(keys[0].channels(for: .fido) == [.fidoHID])
        #expect(keys[0].channels(for: .oath).isEmpty)
    }

    @Test func otherKeyboardsAndAnotherVendorsFIDOKeyAreNotJoinedToTheYubiKey() {
        let keyboard = otp(5, usb: usb2, vendor: 0x046D)
        let other = fido(6, usb: usb2, vendor: 0x20A0, product: 0x42B1)
        let keys = KeyAssembler.group(cards: [yubiReader], hid: [fido(0, usb: usb1), keyboard, other])
        #expect(keys.count == 2)
        #expect(keys[0].interfaces == [.ccid, .fido])
        #expect(keys[1].interfaces == [.fido])
        #expect(keys[1].fidoHID?.vendorID == 0x20A0)
    }

    @Test func aKeyOnAnNFCReaderStandsAloneAndDoesFIDOOverTheReader() {
        let nfc = FoundCard(reader: "ACS ACR122U 00 00", atr: nfcATR)
        let keys = KeyAssembler.group(cards: [nfc], hid: [fido(0, usb: usb1)])
        #expect(keys.count == 2)
        #expect(keys[0].interfaces == [.nfc])
        #expect(keys[0].channels(for: .fido) == [.ctapOverSmartCard])
        #expect(keys[0].channels(for: .otp) == [.smartCard])
        #expect(KeyAssembler.candidatesNeedingSerials(cards: [nfc], hid: [fido(0, usb: usb1)]).isEmpty)
    }

    @Test func twoYubiKeysAreJoinedBySerial() {
        let second = FoundCard(reader: "Yubico YubiKey OTP+FIDO+CCID 01 00", atr: usbATR)
        let hid = [fido(0, usb: usb1), otp(1, usb: usb1), fido(2, usb: usb2), otp(3, usb: usb2)]
        let needed = Set(KeyAssembler.candidatesNeedingSerials(cards: [yubiReader, second], hid: hid))
        #expect(
            needed == ["pcsc:" + yubiReader.reader, "pcsc:" + second.reader, "hid:/dev/hidraw0", "hid:/dev/hidraw2"])
        // The first reader holds the key on the second USB device.
        let serials: [String: UInt32] = [
            "pcsc:" + yubiReader.reader: 222, "pcsc:" + second.reader: 111,
            "hid:/dev/hidraw0": 111, "hid:/dev/hidraw2": 222,
        ]
        let keys = KeyAssembler.group(cards: [yubiReader, second], hid: hid, serials: serials)
        #expect(keys.count == 2)
        #expect(
            keys[0].reader == yubiReader.reader && keys[0].fidoHID?.path == "/dev/hidraw2"
                && keys[0].otpHID?.path == "/dev/hidraw3")
        #expect(keys[1].reader == second.reader && keys[1].fidoHID?.path == "/dev/hidraw0" && keys[1].serial == 111)
    }

    @Test func differentSerialsAreNeverJoined() {
        let keys = KeyAssembler.group(
            cards: [yubiReader], hid: [fido(0, usb: usb1)],
            serials: ["pcsc:" + yubiReader.reader: 1, "hid:/dev/hidraw0": 2])
        #expect(keys.count == 2)
    }

    @Test func aKeyKeepsItsIDWhileItsInterfacesComeAndGo() {
        var a = KeyAssembler()
        // Plugged in: the HID interfaces are seen before pcscd reports the reader.
        let first = a.apply(KeyAssembler.group(cards: [], hid: [fido(0, usb: usb1), otp(1, usb: usb1)]))
        guard case .keyArrived(let d)? = first.first, first.count == 1 else {
            Issue.record("expected one arrival, got \(first)")
            return
        }
        #expect(d.id == "hid:/dev/hidraw0")
        #expect(d.interfaces == [.fido, .otp])
        let second = a.apply(KeyAssembler.group(cards: [yubiReader], hid: [fido(0, usb: usb1), otp(1, usb: usb1)]))
        guard case .keyChanged(let changed)? = second.first, second.count == 1 else {
            Issue.record("expected one change, got \(second)")
            return
        }
        #expect(changed.id == d.id)
        #expect(changed.interfaces == [.ccid, .fido, .otp])
        // Nothing new: nothing told.
        #expect(a.apply(KeyAssembler.group(cards: [yubiReader], hid: [fido(0, usb: usb1), otp(1, usb: usb1)])).isEmpty)
        // Pulled out: the HID nodes go first, then the reader.
        let third = a.apply(KeyAssembler.group(cards: [yubiReader], hid: []))
        guard case .keyChanged(let ccidOnly)? = third.first else {
            Issue.record("expected a change, got \(third)")
            return
        }
        #expect(ccidOnly.id == d.id && ccidOnly.interfaces == [.ccid])
        #expect(a.apply(KeyAssembler.group(cards: [], hid: [])) == [.keyLeft(id: d.id)])
        #expect(a.keys.isEmpty)
    }

    @Test func theOneInterfaceThatCarriesEachApplication() {
        var usb = KeyDescriptor(transport: .pcsc(reader: yubiReader.reader), name: yubiReader.reader, atr: usbATR)
        // A USB YubiKey's CCID interface never carries FIDO.
        #expect(usb.channels(for: .fido).isEmpty)
        usb.fidoHID = fido(0, usb: usb1).info
        usb.otpHID = otp(1, usb: usb1).info
        #expect(usb.channels(for: .fido) == [.fidoHID])
        #expect(usb.channels(for: .oath) == [.smartCard])
        #expect(usb.channels(for: .piv) == [.smartCard])
        #expect(usb.channels(for: .apdu) == [.smartCard])
        #expect(usb.channels(for: .otp) == [.smartCard, .otpHID])
        #expect(usb.channels(for: .management) == [.smartCard, .fidoHID, .otpHID])
        // CCID turned off: OTP and Management over HID.
        var hidOnly = usb
        hidOnly.reader = nil
        #expect(hidOnly.interfaces == [.fido, .otp])
        #expect(hidOnly.channels(for: .otp) == [.otpHID])
        #expect(hidOnly.channels(for: .management) == [.fidoHID, .otpHID])
        #expect(!hidOnly.has(.oath))
        #expect(hidOnly.channels(for: .oath).isEmpty)
    }
}

/// Counts the scans the monitor makes and answers with the nodes `present` names.
private final class ScanCounter: Sendable {
    let state = Mutex((scans: 0, present: [FoundHID](), settling: false))
    func scan() -> (found: [FoundHID], settling: Bool) {
        state.withLock { s in
            s.scans += 1
            return (s.present, s.settling)
        }
    }
    var scans: Int { state.withLock { $0.scans } }
}

@Suite struct HIDMonitorTests {
    func directory() -> String {
        let dir =
            (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp")
            + "/ykterm-hidmon-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(dir, 0o700)
        return dir
    }

    func next(_ iterator: inout AsyncStream<[FoundHID]>.AsyncIterator) async -> [FoundHID]? {
        await iterator.next()
    }

    @Test func aNodeAppearingIsReportedAndNothingElseWakesIt() async throws {
        let dir = directory()
        defer { rmdir(dir) }
        let counter = ScanCounter()
        let monitor = HIDMonitor(directory: dir, scan: { counter.scan() })
        var events = monitor.snapshots().makeAsyncIterator()
        #expect(await events.next() == [])
        // Idle: no polling.
        try await Task.sleep(for: .milliseconds(300))
        #expect(counter.scans == 1)
        // A file that is not a hidraw node: not even a scan.
        close(open(dir + "/ttyUSB0", O_CREAT | O_WRONLY, 0o600))
        defer { unlink(dir + "/ttyUSB0") }
        try await Task.sleep(for: .milliseconds(200))
        #expect(counter.scans == 1)
        // A hidraw node: scanned again, and the new interface reported.
        counter.state.withLock { $0.present = [fido(7, usb: usb1)] }
        close(open(dir + "/hidraw7", O_CREAT | O_WRONLY, 0o600))
        #expect(await events.next() == [fido(7, usb: usb1)])
        // Gone again.
        counter.state.withLock { $0.present = [] }
        unlink(dir + "/hidraw7")
        #expect(await events.next() == [])
    }

    @Test func aNodeThatIsNotReadyYetIsLookedAtAgainShortly() async throws {
        let dir = directory()
        defer { rmdir(dir) }
        let counter = ScanCounter()
        // Listed in sysfs, its /dev node not usable yet (a key being plugged in).
        counter.state.withLock { $0.settling = true }
        let monitor = HIDMonitor(directory: dir, scan: { counter.scan() })
        var events = monitor.snapshots().makeAsyncIterator()
        #expect(await events.next() == [])
        counter.state.withLock {
            $0.settling = false
            $0.present = [fido(2, usb: usb1)]
        }
        // No inotify event comes: the settle timer finds it.
        #expect(await events.next() == [fido(2, usb: usb1)])
        let scans = counter.scans
        try await Task.sleep(for: .milliseconds(300))
        #expect(counter.scans == scans)
    }
}
