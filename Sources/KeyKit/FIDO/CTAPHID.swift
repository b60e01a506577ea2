/// CTAPHID framing (CTAP 2.1, section 11.2 "USB Human Interface Device"): constants, splitting a
/// message into HID reports, and putting it back together. Pure functions, no device needed.
///
/// A message travels as one initialisation packet and up to 128 continuation packets, each one HID
/// report (64 bytes on every known key):
///
///     init:          CID (4, big endian) | CMD | 0x80 | BCNTH | BCNTL | data (packetSize - 7)
///     continuation:  CID (4, big endian) | SEQ (0...0x7F)             | data (packetSize - 5)
///
/// Bit 7 of the fifth byte tells the two apart. Unused bytes at the end are zero. Commands are given
/// and returned here without bit 7; `fragment` sets it on the wire.
public enum CTAPHID {
    /// The HID report size of FIDO keys.
    public static let packetSize = 64
    /// Bytes before the data in an initialisation packet: CID, command, two length bytes.
    public static let initHeaderSize = 7
    /// Bytes before the data in a continuation packet: CID, sequence number.
    public static let continuationHeaderSize = 5
    /// Sequence numbers run from 0 to 0x7F, so a message has at most 128 continuation packets.
    public static let maxContinuationPackets = 128
    /// The largest message in 64-byte packets: 57 + 128 × 59.
    public static let maxPayload = maxPayload(packetSize: packetSize)
    /// Bit 7 of the command byte: set in initialisation packets.
    public static let initFlag: UInt8 = 0x80
    /// The channel for CTAPHID_INIT before a channel is allocated.
    public static let broadcastCID: UInt32 = 0xFFFF_FFFF
    /// Channel 0 is reserved and never allocated.
    public static let reservedCID: UInt32 = 0
    /// Length of the CTAPHID_INIT nonce.
    public static let nonceSize = 8
    /// Length of the CTAPHID_INIT answer: nonce, CID, protocol version, three version bytes, capabilities.
    public static let initResponseSize = 17
    /// The CTAPHID protocol version keys report.
    public static let protocolVersion: UInt8 = 2

    /// Command codes (without bit 7).
    public enum Command {
        public static let ping: UInt8 = 0x01
        public static let msg: UInt8 = 0x03
        public static let lock: UInt8 = 0x04
        public static let initialize: UInt8 = 0x06
        public static let wink: UInt8 = 0x08
        public static let cbor: UInt8 = 0x10
        public static let cancel: UInt8 = 0x11
        public static let keepalive: UInt8 = 0x3B
        public static let error: UInt8 = 0x3F

        public static func name(_ command: UInt8) -> String {
            switch command & 0x7F {
            case ping: return "PING"
            case msg: return "MSG"
            case lock: return "LOCK"
            case initialize: return "INIT"
            case wink: return "WINK"
            case cbor: return "CBOR"
            case cancel: return "CANCEL"
            case keepalive: return "KEEPALIVE"
            case error: return "ERROR"
            default: return "0x" + String(command & 0x7F, radix: 16, uppercase: true)
            }
        }
    }

    /// The status byte of CTAPHID_KEEPALIVE.
    public enum KeepaliveStatus {
        /// The key is processing the request.
        public static let processing: UInt8 = 1
        /// The key waits for a touch.
        public static let userPresenceNeeded: UInt8 = 2
    }

    /// The code in CTAPHID_ERROR.
    public enum ErrorCode {
        public static let invalidCommand: UInt8 = 0x01
        public static let invalidParameter: UInt8 = 0x02
        public static let invalidLength: UInt8 = 0x03
        public static let invalidSequence: UInt8 = 0x04
        public static let messageTimeout: UInt8 = 0x05
        public static let channelBusy: UInt8 = 0x06
        public static let lockRequired: UInt8 = 0x0A
        public static let invalidChannel: UInt8 = 0x0B
        public static let other: UInt8 = 0x7F

        public static func name(_ code: UInt8) -> String {
            switch code {
            case invalidCommand: return "ERR_INVALID_CMD"
            case invalidParameter: return "ERR_INVALID_PAR"
            case invalidLength: return "ERR_INVALID_LEN"
            case invalidSequence: return "ERR_INVALID_SEQ"
            case messageTimeout: return "ERR_MSG_TIMEOUT"
            case channelBusy: return "ERR_CHANNEL_BUSY"
            case lockRequired: return "ERR_LOCK_REQUIRED"
            case invalidChannel: return "ERR_INVALID_CHANNEL"
            case other: return "ERR_OTHER"
            default: return "error 0x" + String(code, radix: 16, uppercase: true)
            }
        }
    }

    /// The largest message that fits in packets of `packetSize` bytes.
    public static func maxPayload(packetSize: Int) -> Int {
        guard packetSize > initHeaderSize else { return 0 }
        return (packetSize - initHeaderSize) + maxContinuationPackets * (packetSize - continuationHeaderSize)
    }

    /// Splits a message into packets of exactly `packetSize` bytes, zero padded. A message without data
    /// still takes one initialisation packet.
    ///
    /// - Parameter command: the command code; bit 7 is set for you.
    /// - Throws: `FIDOTransportError.invalidLength` when `payload` exceeds `maxPayload(packetSize:)`
    ///   (7609 bytes for 64-byte packets), or `packetSize` is too small to carry data.
    public static func fragment(
        cid: UInt32, command: UInt8, payload: [UInt8],
        packetSize: Int = CTAPHID.packetSize
    ) throws -> [[UInt8]] {
        guard packetSize > initHeaderSize, payload.count <= maxPayload(packetSize: packetSize) else {
            throw FIDOTransportError.invalidLength
        }
        let cidBytes = bytes(of: cid)
        var packets = [[UInt8]]()
        var first = cidBytes + [command | initFlag, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        var offset = min(payload.count, packetSize - initHeaderSize)
        first += payload[0..<offset]
        packets.append(padded(first, to: packetSize))
        var sequence: UInt8 = 0
        while offset < payload.count {
            let end = min(payload.count, offset + packetSize - continuationHeaderSize)
            packets.append(padded(cidBytes + [sequence] + payload[offset..<end], to: packetSize))
            offset = end
            sequence += 1
        }
        return packets
    }

    /// The channel of a packet, or nil when it is too short to have one.
    public static func channel(of packet: [UInt8]) -> UInt32? {
        guard packet.count >= 4 else { return nil }
        return packet[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// True when `packet` is an initialisation packet (bit 7 of byte 4 set).
    public static func isInitPacket(_ packet: [UInt8]) -> Bool {
        packet.count > 4 && packet[4] & initFlag != 0
    }

    /// The command of an initialisation packet (without bit 7), or nil for a continuation packet.
    public static func command(of packet: [UInt8]) -> UInt8? {
        isInitPacket(packet) ? packet[4] & 0x7F : nil
    }

    /// A channel ID as it goes on the wire (big endian).
    public static func bytes(of cid: UInt32) -> [UInt8] {
        [UInt8(cid >> 24), UInt8(cid >> 16 & 0xFF), UInt8(cid >> 8 & 0xFF), UInt8(cid & 0xFF)]
    }

    private static func padded(_ packet: [UInt8], to size: Int) -> [UInt8] {
        packet.count >= size ? packet : packet + [UInt8](repeating: 0, count: size - packet.count)
    }

    /// One whole message taken out of the packets.
    public struct Message: Sendable, Equatable {
        /// The command, without bit 7.
        public var command: UInt8
        public var payload: [UInt8]

        public init(command: UInt8, payload: [UInt8]) {
            self.command = command
            self.payload = payload
        }
    }

    /// Puts the messages of one channel back together, packet by packet.
    ///
    /// Packets of other channels are ignored (`add` returns nil), not treated as errors: on Linux every
    /// program that opened the key's hidraw node receives a copy of every report the key sends, so a
    /// browser's traffic on its own channel shows up next to ours and must simply be skipped. For the same
    /// reason the broadcast channel, used for CTAPHID_INIT, may carry other programs' INIT answers; the
    /// caller checks the nonce.
    ///
    /// After an error the reassembler is reset and ready for the next initialisation packet.
    public struct Reassembler: Sendable {
        public let channel: UInt32
        public let packetSize: Int
        private var command: UInt8?
        private var expectedLength = 0
        private var data = [UInt8]()
        private var nextSequence: UInt8 = 0

        public init(channel: UInt32, packetSize: Int = CTAPHID.packetSize) {
            self.channel = channel
            self.packetSize = packetSize
        }

        /// True between the initialisation packet of a message and its last continuation packet.
        public var isInProgress: Bool { command != nil }

        /// Forgets a partly received message.
        public mutating func reset() {
            command = nil
            expectedLength = 0
            data = []
            nextSequence = 0
        }

        /// Takes one packet; returns the message when this packet completes it, nil when more packets are
        /// needed or the packet belongs to another channel.
        ///
        /// Packets may be shorter or longer than `packetSize` (a short read, trailing bytes): only the
        /// declared length counts.
        ///
        /// - Throws: `FIDOTransportError.malformed` for a packet too short for its header;
        ///   `.invalidSequence` for a continuation packet out of order or without an initialisation
        ///   packet, and for an initialisation packet in the middle of a message;
        ///   `.invalidLength` when the declared length exceeds what 129 packets can carry.
        public mutating func add(_ packet: [UInt8]) throws -> Message? {
            guard let cid = CTAPHID.channel(of: packet), packet.count >= CTAPHID.continuationHeaderSize else {
                throw FIDOTransportError.malformed(Malformation(.hidPacket, .length(packet.count)))
            }
            guard cid == channel else { return nil }
            if CTAPHID.isInitPacket(packet) {
                guard command == nil else {
                    reset()
                    throw FIDOTransportError.invalidSequence
                }
                guard packet.count >= CTAPHID.initHeaderSize else {
                    throw FIDOTransportError.malformed(
                        Malformation(.hidPacket, .tooShort(packet.count, minimum: CTAPHID.initHeaderSize)))
                }
                let length = Int(packet[5]) << 8 | Int(packet[6])
                guard length <= CTAPHID.maxPayload(packetSize: packetSize) else {
                    throw FIDOTransportError.invalidLength
                }
                let take = min(length, packet.count - CTAPHID.initHeaderSize)
                let body = Array(packet[CTAPHID.initHeaderSize..<(CTAPHID.initHeaderSize + take)])
                let cmd = packet[4] & 0x7F
                if body.count == length { return Message(command: cmd, payload: body) }
                command = cmd
                expectedLength = length
                data = body
                data.reserveCapacity(length)
                nextSequence = 0
                return nil
            }
            guard let cmd = command else { throw FIDOTransportError.invalidSequence }
            guard packet[4] == nextSequence else {
                reset()
                throw FIDOTransportError.invalidSequence
            }
            let take = min(expectedLength - data.count, packet.count - CTAPHID.continuationHeaderSize)
            data += packet[CTAPHID.continuationHeaderSize..<(CTAPHID.continuationHeaderSize + take)]
            nextSequence += 1
            if data.count == expectedLength {
                let message = Message(command: cmd, payload: data)
                reset()
                return message
            }
            if nextSequence > 0x7F {
                // Cannot happen with 64-byte packets (the length check bounds the count), but a short read
                // could leave a message unfinished after the last sequence number.
                reset()
                throw FIDOTransportError.invalidSequence
            }
            return nil
        }
    }
}

/// What a CTAPHID key says it can do, in its CTAPHID_INIT answer.
public struct CTAPHIDCapabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// CTAPHID_WINK.
    public static let wink = CTAPHIDCapabilities(rawValue: 0x01)
    /// CTAPHID_LOCK (never used by this package).
    public static let lock = CTAPHIDCapabilities(rawValue: 0x02)
    /// CTAPHID_CBOR: the key speaks CTAP2.
    public static let cbor = CTAPHIDCapabilities(rawValue: 0x04)
    /// The key does NOT implement CTAPHID_MSG (no U2F).
    public static let nmsg = CTAPHIDCapabilities(rawValue: 0x08)

    public var description: String {
        var parts = [String]()
        if contains(.wink) { parts.append("WINK") }
        if contains(.lock) { parts.append("LOCK") }
        if contains(.cbor) { parts.append("CBOR") }
        if contains(.nmsg) { parts.append("NMSG") }
        return parts.isEmpty ? "none" : parts.joined(separator: "|")
    }
}
