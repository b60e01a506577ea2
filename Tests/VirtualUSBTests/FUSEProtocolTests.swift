import Testing
@testable import VirtualUSB

@Suite struct FUSEProtocolTests {
    @Test func requestRoundTrip() {
        let r = FUSE.Request(
            opcode: FUSE.Opcode.read.rawValue, unique: 0x1122_3344_5566_7788, nodeID: 1, uid: 1000,
            gid: 100, pid: 42, body: [1, 2, 3])
        #expect(r.bytes.count == 43)
        #expect(Array(r.bytes[0..<4]) == [43, 0, 0, 0])
        #expect(FUSE.Request(parsing: r.bytes) == r)
        #expect(FUSE.Request(parsing: Array(r.bytes.prefix(39))) == nil)
    }

    @Test func replyHeaderAndErrors() {
        let ok = FUSE.reply(unique: 7, payload: [9, 9])
        #expect(ok == [18, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9, 9])
        // An error carries no payload; the errno is negated.
        let e = FUSE.reply(unique: 7, error: -11, payload: [9])
        #expect(e.count == 16)
        #expect(Array(e[4..<8]) == [0xF5, 0xFF, 0xFF, 0xFF])
    }

    @Test func structureSizes() {
        #expect(FUSE.initOut(minor: 38, maxReadahead: 0).count == 64)
        #expect(FUSE.attrOut(mode: 0o666).count == 104)
        #expect(
            FUSE.openOut(handle: 1, flags: FUSE.openDirectIO | FUSE.openStream | FUSE.openNonSeekable)
                == [1, 0, 0, 0, 0, 0, 0, 0, 0x15, 0, 0, 0, 0, 0, 0, 0])
        #expect(
            FUSE.pollWakeup(handle: 5) == [24, 0, 0, 0, 1, 0, 0, 0] + [UInt8](repeating: 0, count: 8) + [
                5, 0, 0, 0, 0, 0, 0, 0,
            ])
    }

    @Test func readAndIoctlArguments() {
        var body = [UInt8](repeating: 0, count: 40)
        body[0] = 3; body[16] = 64; body[33] = 0x08  // handle 3, size 64, flags O_NONBLOCK (0o4000)
        let rd = FUSE.ReadIn(body)
        #expect(rd?.handle == 3 && rd?.size == 64 && rd?.flags == 0o4000)
        var io = [UInt8](repeating: 0, count: 32)
        io[0] = 2
        let cmd = HIDRawIoctl.getFeature(9)
        io[12] = UInt8(cmd & 0xFF); io[13] = UInt8(cmd >> 8 & 0xFF); io[14] = UInt8(cmd >> 16 & 0xFF);
        io[15] = UInt8(cmd >> 24)
        io[24] = 9; io[28] = 9
        let parsed = FUSE.IoctlIn(io + [0, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(parsed?.command == 0xC009_4807 && parsed?.data.count == 9)
        #expect(FUSE.ioctlOut(result: 9, data: [1]).count == 17)
    }

    @Test func hidrawIoctlNumbersAndAnswers() {
        #expect(HIDRawIoctl.getDescriptorSize == 0x8004_4801)
        #expect(HIDRawIoctl.getDescriptor == 0x9004_4802)
        #expect(HIDRawIoctl.getRawInfo == 0x8008_4803)
        #expect(HIDRawIoctl.getRawName(256) == 0x8100_4804)
        #expect(HIDRawIoctl.setFeature(9) == 0xC009_4806)
        let id = HIDNodeIdentity(
            vendor: 0x1050, product: 0x0407, name: "Yubico YubiKey OTP+FIDO+CCID",
            phys: "usb-0000:00:14.0-1/input1", reportDescriptor: HIDReportDescriptors.fido)
        // The descriptor answer is as long as the descriptor, not the 4100 bytes the command declares.
        #expect(
            HIDRawIoctl.answer(HIDRawIoctl.getDescriptor, identity: id)
                == .data(result: 0, [34, 0, 0, 0] + HIDReportDescriptors.fido))
        #expect(
            HIDRawIoctl.answer(HIDRawIoctl.getRawInfo, identity: id)
                == .data(result: 0, [3, 0, 0, 0, 0x50, 0x10, 0x07, 0x04]))
        #expect(HIDRawIoctl.answer(HIDRawIoctl.getRawName(8), identity: id) == .data(result: 8, Array("Yubico Y".utf8)))
        #expect(HIDRawIoctl.answer(0x5401, identity: id) == .error(25))  // TCGETS: ENOTTY
        #expect(HIDRawIoctl.answer(HIDRawIoctl.getFeature(9), identity: id) == nil)
    }

    @Test func interfacesNamesAndProductIDs() {
        #expect(USBInterfaces(parsing: "ccid,fido,otp") == .all)
        #expect(USBInterfaces.all.deviceName == "Yubico YubiKey OTP+FIDO+CCID")
        #expect(USBInterfaces.all.productID == 0x0407)
        #expect(USBInterfaces(parsing: "fido,ccid")?.productID == 0x0406)
        #expect(USBInterfaces(parsing: "otp,fido")?.names == "OTP+FIDO")
        #expect(USBInterfaces(parsing: "fido")?.deviceName == "Yubico Security Key NFC")
        #expect(USBInterfaces(parsing: "fido")?.productID == 0x0120)
        #expect(USBInterfaces(parsing: "usb") == nil)
        #expect(USBInterfaces(parsing: "") == nil)
    }

    /// A YubiKey 5 comes back as the product of the interfaces left on (yubikit's YK4_* product IDs); a
    /// Security Key stays one; interfaces it was not made with do not count.
    @Test func theProductFollowsTheInterfacesOn() {
        let expected: [(USBInterfaces, UInt16, String)] = [
            (.otp, 0x0401, "YubiKey OTP"), (.fido, 0x0402, "YubiKey FIDO"),
            ([.otp, .fido], 0x0403, "YubiKey OTP+FIDO"),
            (.ccid, 0x0404, "YubiKey CCID"), ([.otp, .ccid], 0x0405, "YubiKey OTP+CCID"),
            ([.fido, .ccid], 0x0406, "YubiKey FIDO+CCID"), (.all, 0x0407, "YubiKey OTP+FIDO+CCID"),
        ]
        for (on, id, name) in expected {
            #expect(USBInterfaces.all.product(on: on) == USBProduct(id: id, name: name), "\(on)")
        }
        #expect(USBInterfaces.all.product(on: [.fido, .ccid]).deviceName == "Yubico YubiKey FIDO+CCID")
        #expect(USBInterfaces.fido.product(on: .fido) == USBProduct(id: 0x0120, name: "Security Key NFC"))
        #expect(USBInterfaces([.fido, .ccid]).product(on: .all) == USBProduct(id: 0x0406, name: "YubiKey FIDO+CCID"))
    }
}
