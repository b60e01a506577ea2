import Testing
@testable import KeyKit

/// A small deterministic generator (SplitMix64), so a failing random case can be replayed.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
}

private let cid: UInt32 = 0x1234_5678

private func reassemble(_ packets: [[UInt8]], channel: UInt32 = cid) throws -> [CTAPHID.Message] {
    var r = CTAPHID.Reassembler(channel: channel)
    var out = [CTAPHID.Message]()
    for p in packets {
        if let m = try r.add(p) { out.append(m) }
    }
    return out
}

@Suite struct CTAPHIDFramingTests {
    @Test func constants() {
        #expect(CTAPHID.maxPayload == 7609)
        #expect(CTAPHID.maxPayload(packetSize: 64) == 57 + 128 * 59)
        #expect(CTAPHID.maxPayload(packetSize: 7) == 0)
        #expect(CTAPHID.Command.cbor | CTAPHID.initFlag == 0x90)
        #expect(CTAPHID.Command.keepalive | CTAPHID.initFlag == 0xBB)
        #expect(CTAPHID.Command.error | CTAPHID.initFlag == 0xBF)
        #expect(CTAPHID.Command.initialize | CTAPHID.initFlag == 0x86)
        #expect(CTAPHID.Command.name(0x90) == "CBOR")
        #expect(CTAPHID.ErrorCode.name(0x06) == "ERR_CHANNEL_BUSY")
        #expect(CTAPHIDCapabilities(rawValue: 0x0D).description == "WINK|CBOR|NMSG")
    }

    @Test(arguments: [
        (0, 1), (1, 1), (57, 1), (58, 2), (116, 2), (117, 3), (1000, 17), (1001, 17), (1002, 18), (7609, 129),
    ])
    func fragmentSizes(count: Int, packets expected: Int) throws {
        let payload = pattern(count)
        let packets = try CTAPHID.fragment(cid: cid, command: CTAPHID.Command.cbor, payload: payload)
        #expect(packets.count == expected)
        #expect(packets.allSatisfy { $0.count == 64 })
        // Initialisation packet: CID, command with bit 7, big-endian length.
        #expect(Array(packets[0][0..<4]) == [0x12, 0x34, 0x56, 0x78])
        #expect(packets[0][4] == 0x90)
        #expect(packets[0][5] == UInt8(count >> 8))
        #expect(packets[0][6] == UInt8(count & 0xFF))
        #expect(Array(packets[0][7..<(7 + min(count, 57))]) == Array(payload.prefix(57)))
        // Continuation packets: CID, sequence 0, 1, ... with bit 7 clear.
        for (i, p) in packets.dropFirst().enumerated() {
            #expect(Array(p[0..<4]) == [0x12, 0x34, 0x56, 0x78])
            #expect(p[4] == UInt8(i))
            let start = 57 + i * 59
            let end = min(count, start + 59)
            #expect(Array(p[5..<(5 + end - start)]) == Array(payload[start..<end]))
        }
        // Zero padding after the data.
        let used = count <= 57 ? 7 + count : 5 + (count - 57 - 59 * (packets.count - 2))
        #expect(packets[packets.count - 1][used...].allSatisfy { $0 == 0 })
        // And back.
        #expect(try reassemble(packets) == [CTAPHID.Message(command: CTAPHID.Command.cbor, payload: payload)])
    }

    @Test func commandBitIsSetOnlyOnce() throws {
        let a = try CTAPHID.fragment(cid: cid, command: 0x06, payload: [1])
        let b = try CTAPHID.fragment(cid: cid, command: 0x86, payload: [1])
        #expect(a == b)
        #expect(CTAPHID.command(of: a[0]) == 0x06)
        #expect(CTAPHID.isInitPacket(a[0]))
    }

    @Test func tooLongIsRejected() {
        #expect(throws: FIDOTransportError.invalidLength) {
            try CTAPHID.fragment(cid: cid, command: CTAPHID.Command.ping, payload: pattern(7610))
        }
        #expect(throws: FIDOTransportError.invalidLength) {
            try CTAPHID.fragment(cid: cid, command: CTAPHID.Command.ping, payload: [], packetSize: 7)
        }
    }

    @Test func otherPacketSizes() throws {
        let payload = pattern(300)
        let packets = try CTAPHID.fragment(cid: cid, command: 0x10, payload: payload, packetSize: 32)
        #expect(packets.allSatisfy { $0.count == 32 })
        #expect(packets.count == 12)  // 25 bytes, then 11 × 27
        var r = CTAPHID.Reassembler(channel: cid, packetSize: 32)
        var result: CTAPHID.Message?
        for p in packets { result = try r.add(p) ?? result }
        #expect(result?.payload == payload)
        #expect(throws: FIDOTransportError.invalidLength) {
            try CTAPHID.fragment(
                cid: cid, command: 0x10, payload: pattern(CTAPHID.maxPayload(packetSize: 32) + 1),
                packetSize: 32)
        }
    }

    @Test func reassemblyIgnoresOtherChannels() throws {
        let ours = try CTAPHID.fragment(cid: cid, command: 0x10, payload: pattern(200))
        let theirs = try CTAPHID.fragment(cid: 0xCAFE_0001, command: 0x10, payload: pattern(130))
        var r = CTAPHID.Reassembler(channel: cid)
        var got = [CTAPHID.Message]()
        // Interleave: their packets (a browser on its own channel) between ours.
        for i in 0..<max(ours.count, theirs.count) {
            if i < theirs.count { #expect(try r.add(theirs[i]) == nil) }
            if i < ours.count, let m = try r.add(ours[i]) { got.append(m) }
            if i < ours.count - 1 { #expect(r.isInProgress) }
        }
        #expect(got == [CTAPHID.Message(command: 0x10, payload: pattern(200))])
        #expect(!r.isInProgress)
    }

    @Test func consecutiveMessages() throws {
        let packets =
            try CTAPHID.fragment(cid: cid, command: CTAPHID.Command.keepalive, payload: [2])
            + CTAPHID.fragment(cid: cid, command: CTAPHID.Command.keepalive, payload: [1])
            + CTAPHID.fragment(cid: cid, command: 0x10, payload: pattern(100))
            + CTAPHID.fragment(cid: cid, command: 0x3F, payload: [6])
        #expect(
            try reassemble(packets) == [
                CTAPHID.Message(command: 0x3B, payload: [2]), CTAPHID.Message(command: 0x3B, payload: [1]),
                CTAPHID.Message(command: 0x10, payload: pattern(100)), CTAPHID.Message(command: 0x3F, payload: [6]),
            ])
    }

    @Test func sequenceErrors() throws {
        let packets = try CTAPHID.fragment(cid: cid, command: 0x10, payload: pattern(300))  // 6 packets
        // A packet missing.
        #expect(throws: FIDOTransportError.invalidSequence) { try reassemble([packets[0], packets[2]]) }
        // A packet twice.
        #expect(throws: FIDOTransportError.invalidSequence) {
            try reassemble([packets[0], packets[1], packets[1]])
        }
        // Out of order.
        #expect(throws: FIDOTransportError.invalidSequence) {
            try reassemble([packets[0], packets[2], packets[1]])
        }
        // A continuation packet without initialisation packet.
        #expect(throws: FIDOTransportError.invalidSequence) { try reassemble([packets[1]]) }
        // A new initialisation packet in the middle of a message.
        #expect(throws: FIDOTransportError.invalidSequence) { try reassemble([packets[0], packets[1], packets[0]]) }
    }

    @Test func recoversAfterAnError() throws {
        let packets = try CTAPHID.fragment(cid: cid, command: 0x10, payload: pattern(300))
        var r = CTAPHID.Reassembler(channel: cid)
        _ = try r.add(packets[0])
        #expect(throws: FIDOTransportError.invalidSequence) { try r.add(packets[3]) }
        #expect(!r.isInProgress)
        var result: CTAPHID.Message?
        for p in packets { result = try r.add(p) ?? result }
        #expect(result?.payload == pattern(300))
        r.reset()
        #expect(!r.isInProgress)
    }

    @Test(arguments: [7610, 0x7FFF, 0xFFFF])
    func overlongLengthIsRejected(length: Int) {
        var packet = CTAPHID.bytes(of: cid) + [0x90, UInt8(length >> 8), UInt8(length & 0xFF)]
        packet += [UInt8](repeating: 0xAA, count: 57)
        var r = CTAPHID.Reassembler(channel: cid)
        #expect(throws: FIDOTransportError.invalidLength) { try r.add(packet) }
        #expect(!r.isInProgress)
    }

    @Test func shortAndLongPackets() throws {
        var r = CTAPHID.Reassembler(channel: cid)
        #expect(throws: FIDOTransportError.malformed(Malformation(.hidPacket, .length(0)))) { try r.add([]) }
        #expect(throws: FIDOTransportError.malformed(Malformation(.hidPacket, .length(4)))) {
            try r.add([0x12, 0x34, 0x56, 0x78])
        }
        #expect(throws: FIDOTransportError.malformed(Malformation(.hidPacket, .tooShort(6, minimum: 7)))) {
            try r.add([0x12, 0x34, 0x56, 0x78, 0x90, 0x00])
        }
        // A short read that still holds the whole message is fine, and so are trailing bytes.
        #expect(
            try r.add([0x12, 0x34, 0x56, 0x78, 0xBB, 0x00, 0x01, 0x02]) == CTAPHID.Message(command: 0x3B, payload: [2]))
        let long = CTAPHID.bytes(of: cid) + [0x81, 0x00, 0x02, 9, 8] + [UInt8](repeating: 0x55, count: 100)
        #expect(try r.add(long) == CTAPHID.Message(command: 0x01, payload: [9, 8]))
    }

    @Test func maximumMessageUsesAllSequenceNumbers() throws {
        let packets = try CTAPHID.fragment(cid: cid, command: 0x01, payload: pattern(7609))
        #expect(packets.last?[4] == 0x7F)
        #expect(try reassemble(packets).first?.payload == pattern(7609))
    }

    /// Random and mutated packets: errors are thrown, nothing crashes, and whatever completes is
    /// consistent with its length field.
    @Test func malformedPacketsNeverCrash() throws {
        var rng = SeededGenerator(state: 0x5EED)
        let channels: [UInt32] = [cid, 0xFFFF_FFFF, 0, 0x0102_0304]
        let valid = try CTAPHID.fragment(cid: cid, command: 0x10, payload: pattern(500))
        var r = CTAPHID.Reassembler(channel: cid)
        var completed = 0, errors = 0
        for _ in 0..<50_000 {
            var packet: [UInt8]
            switch Int.random(in: 0..<4, using: &rng) {
            case 0:  // pure noise of any length
                packet = (0..<Int.random(in: 0...80, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            case 1:  // a valid packet with one byte flipped
                packet = valid[Int.random(in: 0..<valid.count, using: &rng)]
                packet[Int.random(in: 0..<64, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            case 2:  // a valid packet cut short
                packet = Array(
                    valid[Int.random(in: 0..<valid.count, using: &rng)]
                        .prefix(Int.random(in: 0...64, using: &rng)))
            default:  // a plausible header with random contents
                packet = CTAPHID.bytes(of: channels[Int.random(in: 0..<channels.count, using: &rng)])
                packet += (0..<60).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            do {
                if let m = try r.add(packet) {
                    completed += 1
                    #expect(m.payload.count <= CTAPHID.maxPayload)
                    #expect(m.command < 0x80)
                }
            } catch let e as FIDOTransportError {
                errors += 1
                switch e {
                case .invalidSequence, .invalidLength, .malformed: break
                default: Issue.record("unexpected error \(e)")
                }
            }
        }
        #expect(errors > 0)
        #expect(completed > 0)
        // Still usable afterwards.
        r.reset()
        var result: CTAPHID.Message?
        for p in valid { result = try r.add(p) ?? result }
        #expect(result?.payload == pattern(500))
    }

    @Test func busyRetriesBackOffAtRandom() {
        // 20 ms doubling to 160 ms, each between half and one and a half times that.
        for (attempt, base) in [(0, 0.02), (1, 0.04), (2, 0.08), (3, 0.16), (4, 0.16), (60, 0.16)] {
            let delays = (0..<200).map { _ in CTAPHIDConnection.busyRetryDelay(attempt: attempt) }
            #expect(delays.allSatisfy { $0 >= base * 0.5 && $0 <= base * 1.5 }, "attempt \(attempt)")
            // Random: two clients retrying from the same moment do not stay in step.
            #expect(Set(delays).count > 100)
        }
    }

    /// What they say is ErrorExplanation's (AuthenticatorModel); here, what they know.
    @Test func errorsKnowWhetherTheKeyIsGone() {
        #expect(FIDOTransportError.deviceGone.isKeyGone)
        #expect(!FIDOTransportError.timeout.isKeyGone)
        #expect(CTAPHID.ErrorCode.name(6) == "ERR_CHANNEL_BUSY")
    }
}

/// hidapi without a key: enumeration works, opening a missing device says so. (Permission denied needs a
/// real hidraw node and a non-root user; see `ykterm doctor`.)
@Suite struct CTAPHIDHIDAPITests {
    @Test func enumerationListsOnlyFIDODevices() {
        let devices = HIDRawDevice.enumerateFIDO()
        #expect(Set(devices.map(\.path)).count == devices.count)
        #expect(devices.allSatisfy { !$0.path.isEmpty })
    }

    @Test func openingAMissingDevice() {
        #expect(throws: HIDDeviceError.notFound("/dev/ykterm-no-such-hidraw")) {
            try HIDRawDevice(path: "/dev/ykterm-no-such-hidraw")
        }
    }
}
