/// A command APDU (ISO 7816-4), in any of the four cases, encodable as short or extended.
public struct APDU: Hashable, Sendable, CustomStringConvertible {
    public var cla: UInt8
    public var ins: UInt8
    public var p1: UInt8
    public var p2: UInt8
    public var data: [UInt8]
    /// Expected response length: `nil` when absent, else 1...65536 (256 is the short maximum).
    public var le: Int?

    public enum Encoding: Sendable, Equatable {
        /// Short when data and Le fit (Lc <= 255, Le <= 256), extended otherwise.
        case automatic
        case short
        case extended
    }

    public enum Case: Int, Sendable { case one = 1, two, three, four }

    public init(cla: UInt8 = 0x00, ins: UInt8, p1: UInt8 = 0, p2: UInt8 = 0, data: [UInt8] = [], le: Int? = nil) {
        self.cla = cla
        self.ins = ins
        self.p1 = p1
        self.p2 = p2
        self.data = data
        self.le = le
    }

    /// ISO SELECT by AID (`00 A4 04 00 Lc AID`).
    public static func select(aid: [UInt8]) -> APDU {
        APDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: aid)
    }

    public var apduCase: Case {
        switch (data.isEmpty, le == nil) {
        case (true, true): return .one
        case (true, false): return .two
        case (false, true): return .three
        case (false, false): return .four
        }
    }

    /// Whether this command needs the extended encoding.
    public var needsExtended: Bool { data.count > 255 || (le ?? 0) > 256 }

    /// Encodes the command. Throws when it cannot be expressed in the requested encoding.
    public func encoded(_ encoding: Encoding = .automatic) throws(SmartCardError) -> [UInt8] {
        if let le, le < 1 || le > 65536 {
            throw .invalidAPDU(.leOutOfRange(le))
        }
        guard data.count <= 65535 else {
            throw .invalidAPDU(.dataTooLong(data.count))
        }
        let extended: Bool
        switch encoding {
        case .automatic: extended = needsExtended
        case .extended: extended = true
        case .short:
            guard !needsExtended else {
                throw .invalidAPDU(.notShort(data: data.count, le: le ?? 0))
            }
            extended = false
        }
        var out: [UInt8] = [cla, ins, p1, p2]
        out.reserveCapacity(data.count + 9)
        if extended {
            if !data.isEmpty {
                out += [0x00, UInt8(data.count >> 8), UInt8(data.count & 0xFF)]
                out += data
                if let le {
                    let v = le == 65536 ? 0 : le
                    out += [UInt8(v >> 8), UInt8(v & 0xFF)]
                }
            } else if let le {
                let v = le == 65536 ? 0 : le
                out += [0x00, UInt8(v >> 8), UInt8(v & 0xFF)]
            }
        } else {
            if !data.isEmpty {
                out.append(UInt8(data.count))
                out += data
            }
            if let le { out.append(le == 256 ? 0 : UInt8(le)) }
        }
        return out
    }

    /// Splits data longer than `maxChunk` bytes into a chain of short commands: every command but the last
    /// has the chaining bit (CLA | 0x10) set and no Le; the last keeps the original Le.
    public func chained(maxChunk: Int = 255) -> [APDU] {
        guard data.count > maxChunk, maxChunk > 0 else { return [self] }
        var parts = [APDU]()
        var offset = 0
        while offset < data.count {
            let end = min(offset + maxChunk, data.count)
            let last = end == data.count
            parts.append(
                APDU(
                    cla: last ? cla : cla | 0x10, ins: ins, p1: p1, p2: p2,
                    data: Array(data[offset..<end]), le: last ? le : nil))
            offset = end
        }
        return parts
    }

    /// Parses a command APDU as a card receives it (cases 1-4, short or extended).
    public init(parsing bytes: [UInt8]) throws(SmartCardError) {
        let n = bytes.count
        guard n >= 4 else { throw .invalidAPDU(.tooShort(n)) }
        self.init(cla: bytes[0], ins: bytes[1], p1: bytes[2], p2: bytes[3])
        if n == 4 { return }
        let b4 = Int(bytes[4])
        if n == 5 {
            le = b4 == 0 ? 256 : b4
            return
        }
        if b4 != 0 {
            // Short Lc.
            if n == 5 + b4 {
                data = Array(bytes[5...])
                return
            }
            if n == 6 + b4 {
                data = Array(bytes[5..<(5 + b4)])
                let l = Int(bytes[n - 1])
                le = l == 0 ? 256 : l
                return
            }
            throw .invalidAPDU(.lengthMismatch(declared: b4, following: n - 5))
        }
        // Extended: 00 followed by two length bytes.
        guard n >= 7 else { throw .invalidAPDU(.truncatedExtendedLength) }
        let l16 = Int(bytes[5]) << 8 | Int(bytes[6])
        if n == 7 {
            le = l16 == 0 ? 65536 : l16
            return
        }
        guard l16 > 0 else { throw .invalidAPDU(.zeroExtendedLc) }
        if n == 7 + l16 {
            data = Array(bytes[7...])
            return
        }
        if n == 9 + l16 {
            data = Array(bytes[7..<(7 + l16)])
            let l = Int(bytes[n - 2]) << 8 | Int(bytes[n - 1])
            le = l == 0 ? 65536 : l
            return
        }
        throw .invalidAPDU(.lengthMismatch(declared: l16, following: n - 7))
    }

    public var description: String {
        ((try? encoded()) ?? [cla, ins, p1, p2] + data).hex.uppercased()
    }
}

/// Why bytes are not a command APDU, or a command cannot be encoded: facts for `SmartCardError.invalidAPDU`.
public enum APDUProblem: Hashable, Sendable {
    /// Le outside 1...65536.
    case leOutOfRange(Int)
    /// More than 65535 bytes of command data.
    case dataTooLong(Int)
    /// The data or Le need the extended encoding, and the short one was asked for.
    case notShort(data: Int, le: Int)
    /// Fewer than the four header bytes.
    case tooShort(Int)
    /// The length field announces `declared` data bytes and `following` follow.
    case lengthMismatch(declared: Int, following: Int)
    /// An extended length cut short.
    case truncatedExtendedLength
    /// An extended Lc of 0 with data after it.
    case zeroExtendedLc
}
