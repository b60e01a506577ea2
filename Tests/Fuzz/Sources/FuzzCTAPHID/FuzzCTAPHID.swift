import FuzzSupport
import KeyKit

/// CTAPHID packet reassembly. The input is a packet size, then packets (a length byte, a flags byte, the
/// bytes), some moved onto the reassembler's channel so that they are not all skipped. Invariants: a
/// message the reassembler returns fits the declared limits, and fragmenting it again and feeding the
/// packets to a fresh reassembler gives it back on exactly the last packet. The rest of the input, as a
/// payload, makes the same round trip.
private let channel: UInt32 = 0x0102_0304

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var reader = FuzzReader(fuzzBytes(data, size))
    let sizeByte = reader.byte()
    let packetSize = sizeByte & 1 == 0 ? CTAPHID.packetSize : 8 + Int(sizeByte >> 1) % 57
    var reassembler = CTAPHID.Reassembler(channel: channel, packetSize: packetSize)
    let packetCount = Int(reader.byte() % 16)
    for _ in 0..<packetCount {
        let length = Int(reader.byte() % 80)
        let flags = reader.byte()
        var packet = reader.take(length)
        if flags & 1 != 0, packet.count >= 4 { packet.replaceSubrange(0..<4, with: CTAPHID.bytes(of: channel)) }
        _ = CTAPHID.command(of: packet)
        guard let message = try? reassembler.add(packet) else { continue }
        fuzzCheck(CTAPHID.channel(of: packet) == channel, "a message from another channel")
        fuzzCheck(message.command < 0x80, "command \(message.command) keeps bit 7")
        fuzzCheck(
            message.payload.count <= CTAPHID.maxPayload(packetSize: packetSize),
            "a message of \(message.payload.count) bytes from \(packetSize)-byte packets")
        fuzzCheck(!reassembler.isInProgress, "still in progress after a whole message")
        roundTrip(message, packetSize: packetSize)
    }
    let command = reader.byte() & 0x7F
    roundTrip(CTAPHID.Message(command: command, payload: reader.rest()), packetSize: packetSize)
    return 0
}

private func roundTrip(_ message: CTAPHID.Message, packetSize: Int) {
    let packets: [[UInt8]]
    do {
        packets = try CTAPHID.fragment(
            cid: channel, command: message.command, payload: message.payload,
            packetSize: packetSize)
    } catch {
        fuzzCheck(
            message.payload.count > CTAPHID.maxPayload(packetSize: packetSize),
            "fragment refused \(message.payload.count) bytes: \(error)")
        return
    }
    var fresh = CTAPHID.Reassembler(channel: channel, packetSize: packetSize)
    for (n, packet) in packets.enumerated() {
        fuzzCheck(packet.count == packetSize, "a packet of \(packet.count) bytes, not \(packetSize)")
        let result: CTAPHID.Message?
        do {
            result = try fresh.add(packet)
        } catch {
            fuzzCheck(false, "packet \(n) of a fragmented message refused: \(error)")
            return
        }
        if n == packets.count - 1 {
            fuzzCheck(result == message, "the fragmented message comes back different")
        } else {
            fuzzCheck(result == nil, "a message after packet \(n) of \(packets.count)")
        }
    }
}

@_cdecl("FuzzCTAPHID_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
