import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// Keys as USB devices with several interfaces: what each tab does with the interfaces a key has.
enum USBFixture {
    static let reader = "Yubico YubiKey OTP+FIDO+CCID 00 00"
    static let fidoNode = HIDDeviceInfo(
        path: "/dev/hidraw0", vendorID: 0x1050, productID: 0x0407, productName: "YubiKey OTP+FIDO+CCID")
    static let otpNode = HIDDeviceInfo(
        path: "/dev/hidraw1", vendorID: 0x1050, productID: 0x0407, productName: "YubiKey OTP+FIDO+CCID")
    static let usbATR: [UInt8] = [
        0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15, 0x80, 0x73, 0xC0, 0x21,
        0xC0, 0x57, 0x59, 0x75, 0x62, 0x69, 0x4B, 0x65, 0x79, 0x40,
    ]

    /// A Security Key: FIDO HID only.
    static let securityKey = KeyDescriptor(
        transport: .hid(path: "/dev/hidraw4"), name: "Security Key NFC",
        fidoHID: HIDDeviceInfo(path: "/dev/hidraw4", vendorID: 0x1050, productID: 0x0120))

    /// A YubiKey's HID interfaces, first seen without its reader (pcscd not running, or not yet reporting it).
    static var hidOnly: KeyDescriptor {
        var d = KeyDescriptor(transport: .hid(path: fidoNode.path), name: "YubiKey OTP+FIDO+CCID", fidoHID: fidoNode)
        d.otpHID = otpNode
        return d
    }

    /// The same key once its reader is there.
    static var full: KeyDescriptor {
        var d = hidOnly
        d.reader = reader
        d.atr = usbATR
        return d
    }
}

@Suite("Model: keys with several interfaces")
struct KeyInterfacesModelTests {
    typealias U = USBFixture

    @Test func aSecurityKeyShowsItsFIDO2TabAndSaysPlainlyWhatElseItLacks() {
        var state = AppState(now: 1000)
        let commands = update(&state, .keyEvent(.keyArrived(U.securityKey)))
        #expect(state.selectedKeyID == U.securityKey.id)
        // No OATH session is tried on a key that has no smart-card interface: the tab says so.
        #expect(!commands.contains { if case .oath(.open) = $0 { return true } else { return false } })
        #expect(
            state.oath.phase
                == .unavailable(UIText("view.notOnKey.ccid", ["application": "OATH", "interfaces": "FIDO"])))
        #expect(commands.contains(.probe(U.securityKey)))
        #expect(update(&state, .keyPress(.char("3"))) == [.fido(.load(U.securityKey))])
    }

    @Test func withoutPcscdTheHIDInterfacesStillWorkAndOATHSaysWhy() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyPress(.char("3")))
        _ = update(&state, .keyEvent(.serviceUnavailable))
        // Not over the FIDO2 tab: HID keys do not need pcscd.
        #expect(state.status == nil)
        let commands = update(&state, .keyEvent(.keyArrived(U.hidOnly)))
        #expect(commands.contains(.fido(.load(U.hidOnly))))
        #expect(state.oath.phase == .unavailable(UIText("view.notOnKey.pcscd", ["application": "OATH"])))
        // pcscd back, the reader joins the key: OATH opens on it.
        _ = update(&state, .keyEvent(.serviceAvailable))
        var full = U.full
        full.id = U.hidOnly.id
        let joined = update(&state, .keyEvent(.keyChanged(full)))
        #expect(joined.contains(.oath(.open(full, time: 1000))))
        #expect(state.keys.count == 1 && state.keys[0].descriptor.interfaces == [.ccid, .fido, .otp])
    }

    @Test func onTheOATHTabPcscdMissingIsStillSaidAndTheFIDO2TabDropsIt() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.serviceUnavailable))
        #expect(state.status?.text == UIText("status.pcscdMissing"))
        _ = update(&state, .keyPress(.char("3")))
        #expect(state.status == nil)
    }

    @Test func theFIDO2TabOfAKeyWithoutFIDOSaysSoWithoutAsking() {
        var state = AppState(now: 1000)
        let ccidOnly = KeyDescriptor(transport: .pcsc(reader: U.reader), name: U.reader, atr: U.usbATR)
        _ = update(&state, .keyEvent(.keyArrived(ccidOnly)))
        #expect(update(&state, .keyPress(.char("3"))).isEmpty)
        #expect(state.fido.phase == .unavailable(UIText("fido.notOnKey", ["interfaces": "CCID"])))
        // Its FIDO interface shows up (the HID node came after the reader): the tab reads it.
        var full = U.full
        full.id = ccidOnly.id
        full.transport = ccidOnly.transport
        let commands = update(&state, .keyEvent(.keyChanged(full)))
        #expect(commands.contains(.fido(.load(full))))
    }

    @Test func aResetOnUSBWaitsForTheFIDOInterfaceToComeBack() {
        var state = AppState(now: 1000)
        var key = U.full
        key.id = "pcsc:" + U.reader
        key.transport = .pcsc(reader: U.reader)
        _ = update(&state, .keyEvent(.keyArrived(key)))
        _ = update(&state, .keyPress(.char("3")))
        _ = update(&state, .fido(.loaded(keyID: key.id, FIDOFixture.info(pinSet: true))))
        _ = FIDOFixture.confirm(.char("R"), into: &state)
        _ = update(&state, .fido(.failed(keyID: key.id, FIDOFailure(.reset, .notAllowed))))
        guard case .removeKey? = state.fido.reset else {
            Issue.record("expected the remove step, got \(String(describing: state.fido.reset))")
            return
        }
        // Pulled out: the HID nodes go first, then the reader.
        var ccidOnly = key
        ccidOnly.fidoHID = nil
        ccidOnly.otpHID = nil
        _ = update(&state, .keyEvent(.keyChanged(ccidOnly)))
        _ = update(&state, .keyEvent(.keyLeft(id: key.id)))
        guard case .insertKey? = state.fido.reset else {
            Issue.record("expected the insert step, got \(String(describing: state.fido.reset))")
            return
        }
        // Back in: pcscd reports the reader before the FIDO interface is there: no reset yet.
        #expect(!update(&state, .keyEvent(.keyArrived(ccidOnly))).contains(.fido(.reset(ccidOnly))))
        // The FIDO interface is back: now, and first.
        let commands = update(&state, .keyEvent(.keyChanged(key)))
        #expect(commands.first == .fido(.reset(key)))
        #expect(state.fido.reset == .sending(keyID: key.id))
    }

    @Test func aKeyNeverSeenIsNotReset() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyEvent(.keyArrived(U.securityKey)))
        _ = update(&state, .keyPress(.char("3")))
        _ = update(&state, .fido(.loaded(keyID: U.securityKey.id, FIDOFixture.info(pinSet: true))))
        _ = FIDOFixture.confirm(.char("R"), into: &state)
        _ = update(&state, .fido(.failed(keyID: U.securityKey.id, FIDOFailure(.reset, .notAllowed))))
        _ = update(&state, .keyEvent(.keyLeft(id: U.securityKey.id)))
        // Another FIDO key on another node arrives: it is not the one to reset.
        let other = KeyDescriptor(
            transport: .hid(path: "/dev/hidraw9"), name: "Other",
            fidoHID: HIDDeviceInfo(path: "/dev/hidraw9", vendorID: 0x20A0, productID: 0x42B1))
        let commands = update(&state, .keyEvent(.keyArrived(other)))
        #expect(!commands.contains { if case .fido(.reset) = $0 { return true } else { return false } })
    }
}

/// A USB key in process: CCID through `VirtualKeyConnection`, FIDO through the virtual key's HID device (CTAPHID).
final class USBVirtualBackend: KeyBackend, @unchecked Sendable {
    // @unchecked: `key` is immutable and thread-safe; `hidOpened` is a LockedValue.
    let key = VirtualKey(state: .yubiKey5NFC())
    let hidOpened = LockedValue(0)
    static var descriptor: KeyDescriptor {
        var d = KeyDescriptor(transport: .virtual, name: "Virtual Key", atr: USBFixture.usbATR)
        d.fidoHID = USBFixture.fidoNode
        return d
    }

    func events() -> AsyncStream<KeyEvent> { AsyncStream { $0.yield(.keyArrived(Self.descriptor)) } }

    func connect(_ descriptor: KeyDescriptor) async throws -> any SmartCardConnection {
        VirtualKeyConnection(key: key)
    }

    func connectFIDO(_ descriptor: KeyDescriptor, observer: (@Sendable (APDUExchange) -> Void)?) async throws
        -> any FIDOConnection
    {
        hidOpened.withLock { $0 += 1 }
        return try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "Virtual Key (FIDO HID)")
    }
}

@Suite("FIDO2 tab work over CTAPHID")
struct FIDOOverHIDWorkTests {
    @Test func aPINSetOverHIDIsThePINOverTheSmartCardInterface() async throws {
        let backend = USBVirtualBackend()
        let harness = Harness(backend, directory: temporaryDirectory())
        let d = USBVirtualBackend.descriptor
        let answer = try await harness.run(.fido(.setPIN(d, new: "271828"))) { msg -> FIDOTabMsg? in
            if case .fido(let m) = msg, case .touch = m { return nil }
            if case .fido(let m) = msg { return m }
            return nil
        }
        guard case .pinSet(_, let info, changed: false) = answer else {
            Issue.record("expected pinSet, got \(answer)")
            return
        }
        #expect(info.pinSet == true && info.retries == 8)
        #expect(backend.hidOpened.withLock { $0 } >= 1)
        // An independent session over the key's CCID interface (NFCCTAP) takes the same PIN.
        let card = try await PCSCFIDOConnection.open(card: VirtualKeyConnection(key: backend.key))
        let session = try await CTAP2Session.make(connection: card)
        try await session.verifyPIN("271828", permissions: [])
        await #expect(throws: CTAPError.self) { try await session.verifyPIN("000000", permissions: []) }
        await card.close()
    }
}
