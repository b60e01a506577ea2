import FoundationEssentials
import Glibc

/// Reads the serial number of one interface, so that discovery can tell which interfaces are one key.
public enum KeyIdentity {
    /// The serial of the key in `reader`: from its Management application, else from its OTP application
    /// (nil when neither tells).
    public static func serial(ofReader reader: String) async -> UInt32? {
        guard let connection = try? await PCSCConnection.connect(reader: reader, probe: true) else { return nil }
        let serial = try? await KeyProbe.inspect(connection: connection).device.serial
        await connection.close()
        return serial ?? nil
    }

    /// The serial of a HID interface's key, from the Management application over HID: the vendor READ CONFIG on
    /// the FIDO interface, the serial command on the OTP interface. Nil for other vendors' keys and keys that do
    /// not reveal it.
    public static func serial(ofHID h: FoundHID) async -> UInt32? {
        guard h.info.isYubico else { return nil }
        if h.isFIDO {
            guard let fido = try? await CTAPHIDConnection.open(path: h.info.path, timeout: 5) else { return nil }
            let info = try? await ManagementHID.readDeviceInfo(fido: fido)
            await fido.close()
            return info?.serial
        }
        guard h.isYubiKeyOTP, let otp = try? await OTPHIDConnection.open(path: h.info.path) else { return nil }
        let serial = try? await ManagementHID.serial(otp: otp)
        await otp.close()
        return serial
    }

    /// The serial behind an address ("pcsc:READER" or "hid:PATH"), for `KeyAssembler`.
    public static func serial(of address: String, hid: [FoundHID]) async -> UInt32? {
        if address.hasPrefix("pcsc:") { return await serial(ofReader: String(address.dropFirst(5))) }
        if address.hasPrefix("hid:"), let h = hid.first(where: { $0.address == address }) {
            return await serial(ofHID: h)
        }
        return nil
    }
}

/// Physical keys arriving, changing and leaving: PC/SC readers (`KeyMonitor`) and HID interfaces
/// (`HIDMonitor`) joined into keys by `KeyAssembler`. Reader and service events pass through. Without
/// pcscd, HID keys are still reported.
public final class DeviceMonitor: Sendable {
    let pcsc: KeyMonitor
    let hid: HIDMonitor

    public init(pcsc: KeyMonitor = KeyMonitor(), hid: HIDMonitor = HIDMonitor()) {
        self.pcsc = pcsc
        self.hid = hid
    }

    private enum Input: Sendable {
        case pcsc(KeyEvent)
        case hid([FoundHID])
    }

    public func events() -> AsyncStream<KeyEvent> {
        let (inputs, feed) = AsyncStream<Input>.makeStream(bufferingPolicy: .unbounded)
        let pcscEvents = pcsc.events()
        let hidSnapshots = hid.snapshots()
        let pumpPCSC = Task {
            for await e in pcscEvents { feed.yield(.pcsc(e)) }
        }
        let pumpHID = Task {
            for await s in hidSnapshots { feed.yield(.hid(s)) }
        }
        return AsyncStream { continuation in
            let work = Task {
                var cards = [FoundCard]()
                var found = [FoundHID]()
                var assembler = KeyAssembler()
                var serials = [String: UInt32]()
                var asked = Set<String>()
                for await input in inputs {
                    switch input {
                    case .pcsc(.keyArrived(let d)):
                        guard let reader = d.reader else { continue }
                        cards.removeAll { $0.reader == reader }
                        cards.append(FoundCard(reader: reader, atr: d.atr))
                        asked.remove("pcsc:" + reader)
                    case .pcsc(.keyLeft(let id)):
                        cards.removeAll { "pcsc:" + $0.reader == id }
                        asked.remove(id)
                        serials[id] = nil
                    case .pcsc(let other):
                        continuation.yield(other)
                        continue
                    case .hid(let snapshot):
                        for gone in found where !snapshot.contains(gone) {
                            asked.remove(gone.address)
                            serials[gone.address] = nil
                        }
                        found = snapshot
                    }
                    // Serials only when more than one key could be joined with another.
                    for address in KeyAssembler.candidatesNeedingSerials(cards: cards, hid: found)
                    where !asked.contains(address) {
                        asked.insert(address)
                        if let s = await KeyIdentity.serial(of: address, hid: found) { serials[address] = s }
                    }
                    for event in assembler.apply(KeyAssembler.group(cards: cards, hid: found, serials: serials)) {
                        continuation.yield(event)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in
                work.cancel()
                pumpPCSC.cancel()
                pumpHID.cancel()
                feed.finish()
            }
        }
    }
}
