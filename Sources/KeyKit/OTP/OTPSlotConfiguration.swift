/// The 52-byte configuration of one OTP slot, as the YubiKey OTP application stores it and as a slot
/// write (INS 01, P1 = CONFIG 1 or 2) carries it, followed by the current access code.
///
/// Layout: fixed part (16), UID (6), key (16), access code (6), fixed part length, extended flags,
/// ticket flags, configuration flags, two reserved bytes, and an ISO 13239 CRC over the 50 bytes before
/// it, stored inverted and little-endian (so the CRC over all 52 bytes leaves `crcResidual`).
public struct OTPSlotConfiguration: Sendable, Hashable {
    public static let size = 52
    public static let fixedSize = 16
    public static let uidSize = 6
    public static let keySize = 16
    public static let accessCodeSize = 6
    /// An HMAC-SHA1 key is at most 20 bytes: 16 in the key field, the rest in the UID field.
    public static let hmacKeySize = 20
    /// What the CRC over a whole configuration (CRC included) leaves when the configuration is intact.
    public static let crcResidual: UInt16 = CRC16.residue

    /// Ticket flags.
    public enum TicketFlag {
        public static let tabFirst: UInt8 = 0x01
        public static let appendTab1: UInt8 = 0x02
        public static let appendTab2: UInt8 = 0x04
        public static let appendDelay1: UInt8 = 0x08
        public static let appendDelay2: UInt8 = 0x10
        public static let appendCR: UInt8 = 0x20
        public static let oathHOTP: UInt8 = 0x40
        /// Challenge-response (together with `ConfigFlag.challengeYubico` or `challengeHMAC`).
        public static let challengeResponse: UInt8 = 0x40
        public static let protectSlot2: UInt8 = 0x80
        /// The ticket flags an UPDATE may change (tabs, delays, Enter).
        public static let updatable: UInt8 = 0x3F
    }

    /// Configuration flags.
    public enum ConfigFlag {
        public static let sendReference: UInt8 = 0x01
        /// Static password (scan codes) and static ticket slots: the short form.
        public static let shortTicket: UInt8 = 0x02
        /// OATH-HOTP: 8 digits instead of 6.
        public static let oathHOTP8: UInt8 = 0x02
        public static let pacing10ms: UInt8 = 0x04
        public static let pacing20ms: UInt8 = 0x08
        /// OATH-HOTP token identifier: its first byte, or its first two, typed as modhex (both: all of it).
        public static let oathFixedModhex1: UInt8 = 0x10
        public static let oathFixedModhex2: UInt8 = 0x40
        public static let oathFixedModhex: UInt8 = 0x50
        public static let staticTicket: UInt8 = 0x20
        public static let challengeYubico: UInt8 = 0x20
        public static let challengeHMAC: UInt8 = 0x22
        /// The HMAC challenge is shorter than 64 bytes: the key strips the trailing padding.
        public static let hmacLessThan64: UInt8 = 0x04
        /// Challenge-response waits for a touch.
        public static let challengeButtonTrigger: UInt8 = 0x08
        /// The configuration flags an UPDATE may change (pacing).
        public static let updatable: UInt8 = 0x0C
    }

    /// Extended flags.
    public enum ExtFlag {
        public static let serialButtonVisible: UInt8 = 0x01
        public static let serialUSBVisible: UInt8 = 0x02
        public static let serialAPIVisible: UInt8 = 0x04
        public static let useNumericKeypad: UInt8 = 0x08
        public static let fastTrigger: UInt8 = 0x10
        /// The slot accepts UPDATE (flags and access code) without being written anew.
        public static let allowUpdate: UInt8 = 0x20
        public static let dormant: UInt8 = 0x40
        public static let ledInverted: UInt8 = 0x80
        /// Every extended flag may be changed by an UPDATE.
        public static let updatable: UInt8 = 0xFF
    }

    public var fixed: [UInt8]
    public var uid: [UInt8]
    public var key: [UInt8]
    public var accessCode: [UInt8]
    public var extFlags: UInt8
    public var ticketFlags: UInt8
    public var configFlags: UInt8

    public init(
        fixed: [UInt8] = [], uid: [UInt8] = [UInt8](repeating: 0, count: uidSize),
        key: [UInt8] = [UInt8](repeating: 0, count: keySize),
        accessCode: [UInt8] = [UInt8](repeating: 0, count: accessCodeSize),
        extFlags: UInt8 = 0, ticketFlags: UInt8 = 0, configFlags: UInt8 = 0
    ) {
        self.fixed = fixed
        self.uid = uid
        self.key = key
        self.accessCode = accessCode
        self.extFlags = extFlags
        self.ticketFlags = ticketFlags
        self.configFlags = configFlags
    }

    /// An HMAC-SHA1 challenge-response configuration, as yubikey-manager builds it (serial visible over
    /// the API, updates allowed, challenges shorter than 64 bytes). Keys longer than 64 bytes are hashed
    /// with SHA-1 first, as HMAC does; keys of 21 to 64 bytes do not fit.
    public static func challengeResponse(
        key: [UInt8], requireTouch: Bool = false,
        accessCode: [UInt8]? = nil
    ) throws(OTPError) -> OTPSlotConfiguration {
        var k = key
        if k.count > 64 { k = Crypto.digest(.sha1, k) }
        guard !k.isEmpty, k.count <= hmacKeySize else { throw .invalidKey(k.count) }
        if let accessCode, accessCode.count != accessCodeSize { throw .invalidAccessCode }
        let padded = k + [UInt8](repeating: 0, count: hmacKeySize - k.count)
        return OTPSlotConfiguration(
            uid: Array(padded[keySize...]) + [0, 0],
            key: Array(padded[..<keySize]),
            accessCode: accessCode ?? [UInt8](repeating: 0, count: accessCodeSize),
            extFlags: ExtFlag.serialAPIVisible | ExtFlag.allowUpdate,
            ticketFlags: TicketFlag.challengeResponse,
            configFlags: ConfigFlag.challengeHMAC | ConfigFlag.hmacLessThan64
                | (requireTouch ? ConfigFlag.challengeButtonTrigger : 0))
    }

    /// The 52 bytes, CRC included.
    public var bytes: [UInt8] {
        var b = [UInt8]()
        b.reserveCapacity(Self.size)
        b += Self.fit(fixed, Self.fixedSize)
        b += Self.fit(uid, Self.uidSize)
        b += Self.fit(key, Self.keySize)
        b += Self.fit(accessCode, Self.accessCodeSize)
        b += [UInt8(min(fixed.count, Self.fixedSize)), extFlags, ticketFlags, configFlags, 0, 0]
        let crc = ~Self.crc(b)
        return b + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }

    /// Parses 52 bytes; nil when the length or the CRC is wrong.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.size, Self.crc(bytes) == Self.crcResidual else { return nil }
        let fixedLength = min(Int(bytes[44]), Self.fixedSize)
        fixed = Array(bytes[0..<fixedLength])
        uid = Array(bytes[16..<22])
        key = Array(bytes[22..<38])
        accessCode = Array(bytes[38..<44])
        extFlags = bytes[45]
        ticketFlags = bytes[46]
        configFlags = bytes[47]
    }

    /// ISO 13239 (CRC-16/X.25 without the final inversion, `CRC16`): initial 0xFFFF, reflected polynomial 0x8408.
    public static func crc(_ data: some Sequence<UInt8>) -> UInt16 {
        CRC16.checksum(data)
    }

    /// A challenge-response configuration (HMAC-SHA1 or Yubico OTP).
    public var isChallengeResponse: Bool {
        ticketFlags & TicketFlag.challengeResponse != 0 && configFlags & ConfigFlag.challengeYubico != 0
    }

    /// An HMAC-SHA1 challenge-response configuration.
    public var isHMACChallengeResponse: Bool {
        ticketFlags & TicketFlag.challengeResponse != 0
            && configFlags & ConfigFlag.challengeHMAC == ConfigFlag.challengeHMAC
    }

    /// Challenge-response that waits for a touch.
    public var requiresTouch: Bool {
        isChallengeResponse && configFlags & ConfigFlag.challengeButtonTrigger != 0
    }

    /// The HMAC-SHA1 key: the key field followed by the first four bytes of the UID field.
    public var hmacKey: [UInt8] {
        Self.fit(key, Self.keySize) + Array(Self.fit(uid, Self.uidSize).prefix(Self.hmacKeySize - Self.keySize))
    }

    public var hasAccessCode: Bool { accessCode.contains { $0 != 0 } }

    /// The challenge an HMAC slot with "less than 64 bytes" set actually uses: the 64-byte block without
    /// the run of bytes at its end equal to its last byte (the padding the host added).
    public static func strippedHMACChallenge(_ block: [UInt8]) -> [UInt8] {
        guard block.count == 64, let last = block.last else { return block }
        var end = block.count
        while end > 0 && block[end - 1] == last { end -= 1 }
        return Array(block[..<end])
    }

    /// Pads a challenge to 64 bytes for an HMAC slot: with 0x01 when it ends in 0x00, otherwise 0x00, so
    /// the key can strip the padding again.
    public static func paddedHMACChallenge(_ challenge: [UInt8]) -> [UInt8] {
        guard challenge.count < 64 else { return challenge }
        let pad: UInt8 = challenge.last == 0 ? 1 : 0
        return challenge + [UInt8](repeating: pad, count: 64 - challenge.count)
    }

    static func fit(_ bytes: [UInt8], _ count: Int) -> [UInt8] {
        bytes.count >= count ? Array(bytes.prefix(count)) : bytes + [UInt8](repeating: 0, count: count - bytes.count)
    }
}
