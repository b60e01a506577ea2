// Over 500 lines on purpose: the suites of the key as a whole (inspection, dispatch, chaining, statistics, state
// file, vpcd protocol and bridge) share the helpers at the top; each suite is one topic.
import Foundation
import KeyKit
import Synchronization
import Testing
import VirtualKey
#if canImport(Glibc)
import Glibc
#endif

private func bytes(_ hex: String) -> [UInt8] {
    try! Hex.decode(hex)
}

private let selectManagement = try! APDU.select(aid: AID.management).encoded()
private let selectOTP = try! APDU.select(aid: AID.otp).encoded()
private let readConfig = bytes("00 1D 00 00 00")
private let ok: [UInt8] = [0x90, 0x00]

/// The complete READ CONFIG answer of a key in `state`: a length byte, then the TLVs.
private func expectedConfig(_ state: VirtualKeyState) -> [UInt8] {
    let body = state.deviceInfo.configTLVs().flatMap(\.encoded)
    return [UInt8(body.count)] + body
}

@Suite struct VirtualKeyInspectTests {
    @Test func defaultKeyRoundTripsThroughManagement() async throws {
        let key = VirtualKey()
        let info = try await KeyProbe.inspect(connection: VirtualKeyConnection(key: key))
        #expect(info.reader == "Virtual Key")
        #expect(info.atr == VirtualKey.atr)
        #expect(info.overNFC)  // the ATR is an NFC reader's
        #expect(info.device.fromManagement)
        #expect(info.device.serial == 28_123_456)
        #expect(info.device.version == Version(5, 7, 2))
        #expect(info.device.formFactor == .usbAKeychain)
        #expect(!info.device.isFIPS)
        #expect(info.device.challengeResponseTimeout == 15)
        #expect(info.applications == ["OTP", "U2F", "FIDO2", "OATH", "PIV", "OpenPGP", "HSMAUTH"])
        #expect(info.device.productName == "YubiKey 5 NFC")
        #expect(info.device == key.state.deviceInfo)
    }

    /// Firmware before 5.0 is a YubiKey 4: USB only (no NFC part in the device information), no FIDO2 and no
    /// YubiHSM Auth; the applications it lacks answer SELECT with 6A82, over the vpcd reader's ATR as well.
    @Test func aFirmwareBefore5IsAYubiKey4() async throws {
        #expect(
            VirtualKeyState.forFirmware(serial: 1, version: Version(5, 0, 0))
                == .yubiKey5NFC(serial: 1, version: Version(5, 0, 0)))
        let state = VirtualKeyState.forFirmware(serial: 4_300_017, version: Version(4, 3, 7))
        #expect(state == .yubiKey4(serial: 4_300_017, version: Version(4, 3, 7)))
        let key = VirtualKey(state: state)
        let info = try await KeyProbe.inspect(connection: VirtualKeyConnection(key: key))
        #expect(info.device.productName == "YubiKey 4")
        #expect(info.device.supportedUSB == [.otp, .u2f, .openpgp, .piv, .oath])
        #expect(info.device.supportedNFC == nil && info.device.enabledNFC == nil)
        #expect(info.applications == ["OTP", "U2F", "OATH", "PIV", "OpenPGP"])
        #expect(key.process(selectManagement) == Array("4.3.7".utf8) + ok)
        let config = key.process(readConfig)
        #expect(config == expectedConfig(state) + ok)
        let fields = try TLV.parseAll(Array(config.dropFirst().dropLast(2)), mode: .simple).dictionary
        #expect(fields[ManagementTag.nfcSupported] == nil && fields[ManagementTag.nfcEnabled] == nil)
        #expect(key.process(try APDU.select(aid: AID.hsmauth).encoded()) == bytes("6A 82"))
        for aid in [AID.oath, AID.piv, AID.openpgp, AID.otp] {
            #expect(Array(key.process(try APDU.select(aid: aid).encoded()).suffix(2)) == ok)
        }
        // U2F over CCID, but no CTAP2 (NFCCTAP_MSG with getInfo), over CCID or FIDO HID.
        #expect(Array(key.process(try APDU.select(aid: AID.fido).encoded()).suffix(2)) == ok)
        #expect(key.process(bytes("80 10 00 00 01 04 00")) == bytes("6D 00"))
        #expect(!key.fidoHIDOptionsWithReadConfig.capabilities.contains(.cbor))
        #expect(VirtualKey().fidoHIDOptionsWithReadConfig.capabilities.contains(.cbor))
    }

    @Test func serialAndVersionAreConfigurable() async throws {
        var state = VirtualKeyState.yubiKey5NFC(serial: 424_242, version: Version(5, 4, 3))
        state.formFactor = FormFactor.usbCNano.rawValue
        state.nfcEnabled = Capabilities([.oath, .piv]).rawValue
        state.usbEnabled = Capabilities([.fido2]).rawValue
        state.configLocked = true
        let key = VirtualKey(state: state)
        let connection = VirtualKeyConnection(key: key, name: "Test Reader")
        let info = try await KeyProbe.inspect(connection: connection)
        #expect(info.reader == "Test Reader")
        #expect(info.device.serial == 424_242)
        #expect(info.device.version == Version(5, 4, 3))
        #expect(info.device.formFactor == .usbCNano)
        #expect(info.device.isConfigLocked)
        #expect(info.device.enabledUSB == [.fido2])
        // Over NFC (the virtual key's ATR), the NFC-enabled set is what counts.
        #expect(info.applications == ["OATH", "PIV"])
        #expect(info.label == "Test Reader (serial 424242)")
        // SELECT itself answers the version text.
        #expect(key.process(selectManagement) == Array("5.4.3".utf8) + ok)
    }

    @Test func otpApplicationAnswersStatusAndSerial() throws {
        let key = VirtualKey(state: .yubiKey5NFC(serial: 0x0102_0304, version: Version(5, 7, 2)))
        #expect(key.process(selectOTP) == [5, 7, 2, 1, 0, 0] + ok)
        #expect(key.process(bytes("00 01 10 00")) == [1, 2, 3, 4] + ok)
        #expect(key.process(bytes("00 03 00 00")) == [5, 7, 2, 1, 0, 0] + ok)
        #expect(key.process(bytes("00 01 01 00")) == bytes("67 00"))  // a slot write without its 52 bytes
        #expect(key.process(bytes("00 77 00 00")) == bytes("6D 00"))
    }

    @Test func closedConnectionRefusesCommands() async throws {
        let connection = VirtualKeyConnection(key: VirtualKey())
        #expect(try await connection.transmit(selectManagement) == Array("5.7.2".utf8) + ok)
        await connection.close()
        await #expect(throws: SmartCardError.closed) { try await connection.transmit(selectManagement) }
    }
}

@Suite struct VirtualKeyDispatchTests {
    @Test func unknownAIDIsNotFound() {
        let key = VirtualKey()
        #expect(key.process(try! APDU.select(aid: bytes("A0 00 00 00 99 01")).encoded()) == bytes("6A 82"))
        #expect(key.process(try! APDU.select(aid: bytes("D2 76 00 00 99 99")).encoded()) == bytes("6A 82"))
        // Shorter than 5 bytes never matches, even as a prefix of a real AID.
        #expect(key.process(try! APDU.select(aid: Array(AID.management.prefix(4))).encoded()) == bytes("6A 82"))
    }

    @Test func failedSelectDeselects() {
        let key = VirtualKey()
        #expect(key.process(selectManagement).suffix(2) == ok[...])
        #expect(key.process(try! APDU.select(aid: bytes("A0 00 00 00 99")).encoded()) == bytes("6A 82"))
        #expect(key.process(readConfig) == bytes("69 85"))
    }

    @Test func commandWithNothingSelectedIsRefused() {
        let key = VirtualKey()
        #expect(key.process(readConfig) == bytes("69 85"))
        #expect(key.process(bytes("00 01 10 00")) == bytes("69 85"))
    }

    @Test func longerAIDSelectsByPrefix() {
        let key = VirtualKey()
        #expect(
            key.process(try! APDU.select(aid: AID.management + [0x01, 0x02]).encoded())
                == Array("5.7.2".utf8) + ok)
    }

    @Test func malformedCommandIsWrongLengthAndNotCounted() {
        let key = VirtualKey()
        #expect(key.process([0x00, 0xA4, 0x04]) == bytes("67 00"))
        #expect(key.process(bytes("00 A4 04 00 05 01")) == bytes("67 00"))
        #expect(key.statistics.commands == 0)
    }

    @Test func powerCycleForgetsTheSelection() {
        let key = VirtualKey()
        _ = key.process(selectManagement)
        #expect(key.process(readConfig) == expectedConfig(key.state) + ok)
        key.powerCycle()
        #expect(key.process(readConfig) == bytes("69 85"))
    }

    @Test func readConfigAnswersTheStateAndEmptyFurtherPages() throws {
        let key = VirtualKey()
        _ = key.process(selectManagement)
        let answer = key.process(readConfig)
        #expect(answer == expectedConfig(key.state) + ok)
        let tlvs = try TLV.parseAll(Array(answer.dropFirst().dropLast(2)), mode: .simple)
        #expect(tlvs.value(for: 0x02) == [0x01, 0xAD, 0x21, 0x40])  // 28123456
        #expect(tlvs.value(for: 0x10) == nil)  // one page only
        #expect(key.process(bytes("00 1D 01 00 00")) == [0x00] + ok)
        #expect(key.process(bytes("00 1E 00 00")) == bytes("6D 00"))
    }
}

@Suite struct VirtualKeyChainingTests {
    @Test func commandChainingIsReassembled() {
        let key = VirtualKey()
        let aid = AID.management
        // Neither half alone is the Management AID.
        #expect(key.process([0x10, 0xA4, 0x04, 0x00, 0x04] + aid[0..<4]) == ok)
        #expect(key.process([0x00, 0xA4, 0x04, 0x00, 0x04] + aid[4...]) == Array("5.7.2".utf8) + ok)
        #expect(key.statistics.selects == [aid.hex: 1])
        #expect(key.process(readConfig).suffix(2) == ok[...])
    }

    @Test func threePartChain() {
        let key = VirtualKey()
        let aid = AID.management
        #expect(key.process([0x10, 0xA4, 0x04, 0x00, 0x03] + aid[0..<3]) == ok)
        #expect(key.process([0x10, 0xA4, 0x04, 0x00, 0x03] + aid[3..<6]) == ok)
        #expect(key.process([0x00, 0xA4, 0x04, 0x00, 0x02] + aid[6...]) == Array("5.7.2".utf8) + ok)
    }

    @Test func chainEndingWithAnotherCommandIsRefused() {
        let key = VirtualKey()
        _ = key.process(selectManagement)
        #expect(key.process([0x10, 0xA4, 0x04, 0x00, 0x04] + AID.management[0..<4]) == ok)
        #expect(key.process(readConfig) == bytes("68 83"))
        // The chain is gone afterwards; a plain command works again.
        #expect(key.process(readConfig).suffix(2) == ok[...])
    }

    @Test func longCommandThroughTheProtocolIsChainedAndReassembled() async throws {
        let key = VirtualKey()
        let proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        // 300 bytes: too long for one short APDU, so the protocol sends 255 + 45 with CLA 0x10 first.
        let longAID = AID.management + [UInt8](repeating: 0xEE, count: 292)
        let answer = try await proto.select(longAID, name: "Management")
        #expect(answer == Array("5.7.2".utf8))
        #expect(key.statistics.byInstruction[0xA4] == 2)
        #expect(key.statistics.selects == [longAID.hex: 1])
    }

    @Test func longAnswerIsSplitInto61xxParts() throws {
        let key = VirtualKey()
        _ = key.process(selectManagement)
        let full = expectedConfig(key.state)
        try #require(full.count > 20 && full.count < 256)

        let first = key.process(bytes("00 1D 00 00 0A"))
        #expect(first == Array(full[0..<10]) + [0x61, UInt8(full.count - 10)])
        // A smaller GET RESPONSE gets part of the rest, announcing what remains.
        let second = key.process(bytes("00 C0 00 00 05"))
        #expect(second == Array(full[10..<15]) + [0x61, UInt8(full.count - 15)])
        // The announced length fetches the rest.
        let third = key.process([0x00, 0xC0, 0x00, 0x00, UInt8(full.count - 15)])
        #expect(third == Array(full[15...]) + ok)
        // Nothing is pending any more: GET RESPONSE is an unknown instruction for Management.
        #expect(key.process(bytes("00 C0 00 00 00")) == bytes("6D 00"))
    }

    @Test func anotherCommandDropsThePendingAnswer() {
        let key = VirtualKey()
        _ = key.process(selectManagement)
        #expect(key.process(bytes("00 1D 00 00 0A")).suffix(2).first == 0x61)
        _ = key.process(bytes("00 1D 01 00 00"))
        #expect(key.process(bytes("00 C0 00 00 00")) == bytes("6D 00"))
    }

    @Test func protocolGathersTheSplitAnswer() async throws {
        let key = VirtualKey()
        let proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        _ = try await proto.select(AID.management, name: "Management")
        let r = try await proto.send(APDU(ins: 0x1D, le: 8))
        #expect(r.status == .ok)
        #expect(r.data == expectedConfig(key.state))
        #expect(key.statistics.byInstruction[0xC0] == 1)
    }
}

@Suite struct VirtualKeyStatisticsTests {
    @Test func commandsAreCountedByInstruction() async throws {
        let key = VirtualKey()
        let connection = VirtualKeyConnection(key: key)
        _ = try await KeyProbe.inspect(connection: connection)
        var stats = key.statistics
        #expect(stats.commands == 2)
        #expect(stats.byInstruction == [0xA4: 1, 0x1D: 1])
        #expect(stats.selects == [AID.management.hex: 1])

        _ = key.process(bytes("00 1D 00 00 0A"))
        _ = key.process(bytes("00 C0 00 00 00"))
        _ = key.process(selectOTP)
        _ = key.process(selectOTP)
        _ = key.process(try! APDU.select(aid: bytes("A0 00 00 00 99 01")).encoded())  // not found: not a select
        stats = key.statistics
        #expect(stats.commands == 7)
        #expect(stats.byInstruction == [0xA4: 4, 0x1D: 2, 0xC0: 1])
        #expect(stats.selects == [AID.management.hex: 1, AID.otp.hex: 2])

        key.resetStatistics()
        stats = key.statistics
        #expect(stats.commands == 0)
        #expect(stats.byInstruction.isEmpty)
        #expect(stats.selects.isEmpty)
    }

    @Test func concurrentClientsAreAllCounted() async throws {
        let key = VirtualKey()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<50 { _ = key.process(bytes("00 03 00 00")) }
                }
            }
        }
        #expect(key.statistics.commands == 400)
        #expect(key.statistics.byInstruction[0x03] == 400)
    }
}

/// A fresh directory under the system's temporary directory, removed after `body`.
private func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("vk-tests-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    return try body(dir)
}

/// The permission bits of a file.
private func mode(of path: String) throws -> mode_t {
    var st = stat()
    guard stat(path, &st) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    return st.st_mode & 0o777
}

@Suite struct VirtualKeyStateFileTests {
    @Test func savedWithMode0600AndReloadedEqual() throws {
        try withTemporaryDirectory { dir in
            let file = VirtualKeyStateFile(path: dir + "/state.json")
            #expect(try file.load() == nil)
            var state = VirtualKeyState.yubiKey5NFC(serial: 99, version: Version(5, 4, 3))
            state.configLocked = true
            state.otpSequence = 7
            try file.save(state)
            #expect(try mode(of: file.path) == 0o600)
            #expect(try file.load() == state)
            // Nothing but the state file is left behind.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["state.json"])
            // The version is stored the way people write it.
            let text = try String(contentsOfFile: file.path, encoding: .utf8)
            #expect(text.contains("\"5.4.3\""))
        }
    }

    @Test func saveReplacesAWorldReadableFile() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/state.json"
            #expect(FileManager.default.createFile(atPath: path, contents: Data("old".utf8)))
            #expect(chmod(path, 0o644) == 0)
            #expect(try mode(of: path) == 0o644)
            try VirtualKeyStateFile(path: path).save(.yubiKey5NFC())
            #expect(try mode(of: path) == 0o600)
            #expect(try VirtualKeyStateFile(path: path).load() == .yubiKey5NFC())
        }
    }

    @Test func keyCreatesTheFileFromTheInitialStateThenReloadsIt() async throws {
        try await withTemporaryDirectoryAsync { dir in
            let file = VirtualKeyStateFile(path: dir + "/key.json")
            let initial = VirtualKeyState.yubiKey5NFC(serial: 5555, version: Version(5, 2, 7))
            let key = try VirtualKey(stateFile: file, initial: initial)
            #expect(key.state == initial)
            #expect(try file.load() == initial)
            #expect(try mode(of: file.path) == 0o600)

            // A second key from the same file ignores its own initial state.
            let again = try VirtualKey(stateFile: file, initial: .yubiKey5NFC())
            #expect(again.state == initial)
            let info = try await KeyProbe.inspect(connection: VirtualKeyConnection(key: again))
            #expect(info.device.serial == 5555)
            #expect(info.device.version == Version(5, 2, 7))
        }
    }

    @Test func corruptFileGivesAClearError() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/state.json"
            try Data("{ not json".utf8).write(to: URL(fileURLWithPath: path))
            let file = VirtualKeyStateFile(path: path)
            do {
                _ = try file.load()
                Issue.record("a corrupt state file loaded")
            } catch let error as VirtualKeyStateFile.FileError {
                guard case .unreadable(let p, _) = error else {
                    Issue.record("expected unreadable, got \(error)")
                    return
                }
                #expect(p == path)
                #expect(error.description.hasPrefix("cannot read the virtual key's state file \(path): "))
            }
            #expect(throws: VirtualKeyStateFile.FileError.self) {
                try VirtualKey(stateFile: file, initial: .yubiKey5NFC())
            }
            // The corrupt file is left alone for the user to inspect.
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "{ not json")
        }
    }

    @Test func wrongShapeIsAlsoUnreadable() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/state.json"
            try Data("{\"serial\": 1, \"version\": \"five\"}".utf8).write(to: URL(fileURLWithPath: path))
            #expect(throws: VirtualKeyStateFile.FileError.self) { try VirtualKeyStateFile(path: path).load() }
        }
    }

    @Test func unwritableLocationIsAnError() {
        let file = VirtualKeyStateFile(path: "/nonexistent-\(UUID().uuidString)/state.json")
        let error = #expect(throws: VirtualKeyStateFile.FileError.self) { try file.save(.yubiKey5NFC()) }
        guard case .unwritable = error else {
            Issue.record("expected unwritable, got \(String(describing: error))")
            return
        }
    }
}

/// A fresh directory under the system's temporary directory, removed after `body` (the other suites use it too).
func withTemporaryDirectoryAsync(_ body: (String) async throws -> Void) async throws {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("vk-tests-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try await body(dir)
}

@Suite struct VpcdProtocolTests {
    @Test func frameHasATwoByteBigEndianLength() throws {
        #expect(try VpcdProtocol.frame([0x01, 0x02, 0x03]) == [0x00, 0x03, 0x01, 0x02, 0x03])
        #expect(try VpcdProtocol.frame([]) == [0x00, 0x00])
        let big = [UInt8](repeating: 0x7E, count: 0x1234)
        #expect(try VpcdProtocol.frame(big) == [0x12, 0x34] + big)
        let max = [UInt8](repeating: 0x01, count: 65535)
        #expect(try VpcdProtocol.frame(max).prefix(2) == [0xFF, 0xFF])
    }

    @Test func payloadOver65535IsRejected() {
        #expect(throws: VpcdProtocol.FramingError.tooLong(65536)) {
            try VpcdProtocol.frame([UInt8](repeating: 0, count: 65536))
        }
    }

    @Test func frameDeframeRoundTrip() throws {
        let payloads: [[UInt8]] = [[0x04], selectManagement, [], [UInt8](repeating: 0xAB, count: 300), [0x01]]
        let stream = try payloads.flatMap { try VpcdProtocol.frame($0) }
        let (out, consumed) = VpcdProtocol.deframe(stream)
        #expect(out == payloads)
        #expect(consumed == stream.count)
    }

    @Test func partialFramesStayBuffered() throws {
        let a = try VpcdProtocol.frame(selectManagement)
        let b = try VpcdProtocol.frame([UInt8](repeating: 0x55, count: 40))
        let stream = a + b
        for cut in 0...stream.count {
            let (out, consumed) = VpcdProtocol.deframe(Array(stream.prefix(cut)))
            switch cut {
            case ..<a.count:
                #expect(out.isEmpty)
                #expect(consumed == 0)
            case a.count..<stream.count:
                #expect(out == [selectManagement])
                #expect(consumed == a.count)
            default:
                #expect(out.count == 2)
                #expect(consumed == stream.count)
            }
        }
    }

    @Test func byteByByteStreamYieldsThePayloads() throws {
        let payloads: [[UInt8]] = [[0x01], [0x04], selectManagement, readConfig, [0x00]]
        let stream = try payloads.flatMap { try VpcdProtocol.frame($0) }
        var buffer = [UInt8]()
        var received = [[UInt8]]()
        for byte in stream {
            buffer.append(byte)
            let (out, consumed) = VpcdProtocol.deframe(buffer)
            buffer.removeFirst(consumed)
            received += out
        }
        #expect(received == payloads)
        #expect(buffer.isEmpty)
    }

    @Test func oneByteMessagesAreControlCodes() throws {
        #expect(try VpcdProtocol.message([0]) == .control(.powerOff))
        #expect(try VpcdProtocol.message([1]) == .control(.powerOn))
        #expect(try VpcdProtocol.message([2]) == .control(.reset))
        #expect(try VpcdProtocol.message([4]) == .control(.getATR))
        #expect(try VpcdProtocol.message([0x00, 0xA4]) == .apdu([0x00, 0xA4]))
        #expect(try VpcdProtocol.message(selectManagement) == .apdu(selectManagement))
    }

    @Test func unknownControlAndEmptyMessagesAreErrors() {
        #expect(throws: VpcdProtocol.FramingError.unknownControl(3)) { try VpcdProtocol.message([3]) }
        #expect(throws: VpcdProtocol.FramingError.unknownControl(0xFF)) { try VpcdProtocol.message([0xFF]) }
        #expect(throws: VpcdProtocol.FramingError.empty) { try VpcdProtocol.message([]) }
        #expect(VpcdProtocol.FramingError.unknownControl(3).description == "vpcd: unknown control code 3")
    }

    @Test func endpointParsing() {
        func endpoint(_ text: String) -> String? {
            VpcdBridge.parseEndpoint(text).map { "\($0.0) port \($0.1)" }
        }
        #expect(endpoint("localhost:35963") == "localhost port 35963")
        #expect(endpoint("127.0.0.1:1") == "127.0.0.1 port 1")
        #expect(endpoint("::1:35963") == "::1 port 35963")
        for bad in ["localhost", ":35963", "host:", "host:0", "host:65536", "host:abc", ""] {
            #expect(endpoint(bad) == nil, "\(bad)")
        }
    }
}

/// A listening TCP socket on 127.0.0.1, standing in for pcscd's vpcd driver.
private final class LoopbackListener {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, len) == 0 && listen(fd, 4) == 0 && getsockname(fd, sa, &len) == 0
            }
        }
        guard bound else {
            let e = errno
            close(fd)
            throw POSIXError(.init(rawValue: e) ?? .EIO)
        }
        self.fd = fd
        port = UInt16(bigEndian: addr.sin_port)
    }

    /// Waits at most `timeout` milliseconds for the bridge to connect.
    func accept(timeout: Int32) -> Int32? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeout) == 1 else { return nil }
        let conn = Glibc.accept(fd, nil, nil)
        guard conn >= 0 else { return nil }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return conn
    }

    deinit { close(fd) }
}

private func sendAll(_ fd: Int32, _ data: [UInt8]) -> Bool {
    var off = 0
    while off < data.count {
        let n = data[off...].withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { return false }
        off += n
    }
    return true
}

private func receiveExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
    var out = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: max(count, 1))
    while out.count < count {
        let n = recv(fd, &chunk, count - out.count, 0)
        if n <= 0 { return nil }  // closed, or the 5 s receive timeout
        out += chunk[..<n]
    }
    return out
}

/// One vpcd message from the bridge: the 2-byte length, then the payload.
private func receiveFrame(_ fd: Int32) -> [UInt8]? {
    guard let header = receiveExactly(fd, 2) else { return nil }
    return receiveExactly(fd, Int(header[0]) << 8 | Int(header[1]))
}

@Suite struct VpcdBridgeTests {
    @Test(.timeLimit(.minutes(1)))
    func loopbackServesATRAndAPDUs() throws {
        let listener = try LoopbackListener()
        let key = VirtualKey()
        let logged = Mutex<[String]>([])
        let bridge = VpcdBridge(
            key: key, host: "127.0.0.1", port: listener.port, retryInterval: 0.05,
            log: { line in logged.withLock { $0.append(line) } })
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            bridge.run()
            finished.signal()
        }
        thread.start()
        var joined = false
        defer {
            if !joined {
                bridge.stop()
                _ = finished.wait(timeout: .now() + 5)
            }
        }

        let conn = try #require(listener.accept(timeout: 5000), "the bridge did not connect")
        defer { close(conn) }

        // GET ATR.
        #expect(sendAll(conn, try VpcdProtocol.frame([0x04])))
        #expect(receiveFrame(conn) == VirtualKey.atr)

        // Power on gets no answer; the next answer is the SELECT's.
        #expect(sendAll(conn, try VpcdProtocol.frame([0x01])))
        #expect(sendAll(conn, try VpcdProtocol.frame(selectManagement)))
        #expect(receiveFrame(conn) == Array("5.7.2".utf8) + ok)

        // Two commands in one write, the second split across writes.
        let readFrame = try VpcdProtocol.frame(readConfig)
        #expect(sendAll(conn, try VpcdProtocol.frame(selectManagement) + readFrame.prefix(3)))
        #expect(sendAll(conn, Array(readFrame.dropFirst(3))))
        #expect(receiveFrame(conn) == Array("5.7.2".utf8) + ok)
        #expect(receiveFrame(conn) == expectedConfig(key.state) + ok)

        // Reset deselects.
        #expect(sendAll(conn, try VpcdProtocol.frame([0x02])))
        #expect(sendAll(conn, try VpcdProtocol.frame(readConfig)))
        #expect(receiveFrame(conn) == bytes("69 85"))

        // An unknown control code is logged and ignored; the connection goes on.
        #expect(sendAll(conn, try VpcdProtocol.frame([0x03])))
        #expect(sendAll(conn, try VpcdProtocol.frame([0x04])))
        #expect(receiveFrame(conn) == VirtualKey.atr)
        #expect(logged.withLock { $0 }.contains("vpcd: unknown control code 3"))

        bridge.stop()
        joined = finished.wait(timeout: .now() + 5) == .success
        #expect(joined, "the bridge did not stop")
        // After stopping, the bridge closed its end.
        #expect(receiveFrame(conn) == nil)
        #expect(logged.withLock { $0 }.contains("connected to vpcd at 127.0.0.1:\(listener.port)"))
        #expect(key.statistics.byInstruction == [0xA4: 2, 0x1D: 2])
    }

    @Test(.timeLimit(.minutes(1)))
    func reconnectsWhenTheDriverGoesAway() throws {
        let listener = try LoopbackListener()
        let key = VirtualKey()
        let logged = Mutex<[String]>([])
        let bridge = VpcdBridge(
            key: key, host: "127.0.0.1", port: listener.port, retryInterval: 0.05,
            log: { line in logged.withLock { $0.append(line) } })
        let finished = DispatchSemaphore(value: 0)
        Thread {
            bridge.run()
            finished.signal()
        }.start()
        var joined = false
        defer {
            if !joined {
                bridge.stop()
                _ = finished.wait(timeout: .now() + 5)
            }
        }

        let first = try #require(listener.accept(timeout: 5000), "the bridge did not connect")
        #expect(sendAll(first, try VpcdProtocol.frame(selectManagement)))
        #expect(receiveFrame(first) == Array("5.7.2".utf8) + ok)
        close(first)  // pcscd went away

        let second = try #require(listener.accept(timeout: 5000), "the bridge did not reconnect")
        defer { close(second) }
        // The key was power-cycled in between: nothing is selected.
        #expect(sendAll(second, try VpcdProtocol.frame(readConfig)))
        #expect(receiveFrame(second) == bytes("69 85"))
        #expect(logged.withLock { $0 }.contains("vpcd connection closed; reconnecting"))

        bridge.stop()
        joined = finished.wait(timeout: .now() + 5) == .success
        #expect(joined, "the bridge did not stop")
    }

    @Test(.timeLimit(.minutes(1)))
    func stopsWhileWaitingForTheDriver() throws {
        // A port that was just free: nothing listens there.
        let port = try LoopbackListener().port
        let logged = Mutex<[String]>([])
        let bridge = VpcdBridge(
            key: VirtualKey(), host: "127.0.0.1", port: port, retryInterval: 0.05,
            log: { line in logged.withLock { $0.append(line) } })
        let finished = DispatchSemaphore(value: 0)
        Thread {
            bridge.run()
            finished.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.3)
        bridge.stop()
        #expect(finished.wait(timeout: .now() + 5) == .success, "the bridge did not stop")
        // Announced once, not on every retry.
        #expect(logged.withLock { $0 } == ["waiting for pcscd's vpcd driver on 127.0.0.1:\(port)"])
    }
}
