/// The slot configurations that type when the key is touched (Yubico OTP, static password, OATH-HOTP), the
/// flags-only configuration of an UPDATE, and what the virtual key needs to know to type one.
///
/// Each is built as yubikey-manager builds it: serial number visible over the API, updates allowed, fast
/// trigger, Enter after the output unless told otherwise. The access code given is the slot's new one.
extension OTPSlotConfiguration {
    /// The most scan codes a static password slot holds: the fixed part, the UID and the key fields together.
    public static let scanCodesSize = fixedSize + uidSize + keySize
    /// The largest initial moving factor an HOTP slot stores (it keeps the factor divided by 16 in 16 bits).
    public static let maxMovingFactor: UInt32 = 0xFFFF0

    /// What a configuration is, as far as its flags tell.
    public enum Kind: String, Sendable, Equatable {
        case yubicoOTP = "yubico-otp"
        case staticPassword = "static-password"
        case staticTicket = "static-ticket"
        case oathHOTP = "oath-hotp"
        case hmacChallengeResponse = "hmac-challenge-response"
        case yubicoChallengeResponse = "yubico-challenge-response"
    }

    public var kind: Kind {
        if ticketFlags & TicketFlag.challengeResponse != 0 {
            if configFlags & ConfigFlag.challengeYubico != 0 {
                return isHMACChallengeResponse ? .hmacChallengeResponse : .yubicoChallengeResponse
            }
            return .oathHOTP
        }
        if configFlags & ConfigFlag.staticTicket != 0 { return .staticTicket }
        if configFlags & ConfigFlag.shortTicket != 0 { return .staticPassword }
        return .yubicoOTP
    }

    /// The flags every keyboard slot starts with.
    private static func keyboard(appendEnter: Bool) -> (ext: UInt8, ticket: UInt8) {
        (ExtFlag.serialAPIVisible | ExtFlag.allowUpdate | ExtFlag.fastTrigger, appendEnter ? TicketFlag.appendCR : 0)
    }

    private static func checked(accessCode: [UInt8]?) throws(OTPError) -> [UInt8] {
        guard let accessCode else { return [UInt8](repeating: 0, count: accessCodeSize) }
        guard accessCode.count == accessCodeSize else { throw .invalidAccessCode }
        return accessCode
    }

    /// A Yubico OTP slot: the public ID (up to 16 bytes) is typed in modhex before each OTP, the private ID
    /// (6 bytes) is encrypted inside it with the AES-128 key.
    public static func yubicoOTP(
        publicID: [UInt8], privateID: [UInt8], key: [UInt8], appendEnter: Bool = true,
        accessCode: [UInt8]? = nil
    ) throws(OTPError) -> OTPSlotConfiguration {
        guard publicID.count <= fixedSize else { throw .invalidPublicID(publicID.count) }
        guard privateID.count == uidSize else { throw .invalidPrivateID(privateID.count) }
        guard key.count == keySize else { throw .invalidAESKey(key.count) }
        let flags = keyboard(appendEnter: appendEnter)
        return OTPSlotConfiguration(
            fixed: publicID, uid: privateID, key: key, accessCode: try checked(accessCode: accessCode),
            extFlags: flags.ext, ticketFlags: flags.ticket)
    }

    /// A static password slot: up to 38 scan codes (see `ScanCodeLayout`), spread over the fixed part, the
    /// UID and the key fields.
    public static func staticPassword(
        scanCodes: [UInt8], appendEnter: Bool = true,
        accessCode: [UInt8]? = nil
    ) throws(OTPError) -> OTPSlotConfiguration {
        guard !scanCodes.isEmpty, scanCodes.count <= scanCodesSize else {
            throw .invalidPasswordLength(scanCodes.count)
        }
        let padded = scanCodes + [UInt8](repeating: 0, count: scanCodesSize - scanCodes.count)
        let flags = keyboard(appendEnter: appendEnter)
        return OTPSlotConfiguration(
            fixed: Array(padded[..<fixedSize]), uid: Array(padded[fixedSize..<(fixedSize + uidSize)]),
            key: Array(padded[(fixedSize + uidSize)...]), accessCode: try checked(accessCode: accessCode),
            extFlags: flags.ext, ticketFlags: flags.ticket, configFlags: ConfigFlag.shortTicket)
    }

    /// An OATH-HOTP slot: the HMAC-SHA1 secret (1 to 20 bytes, or more than 64, hashed with SHA-1 first) in
    /// the key field and the first four bytes of the UID field, the initial moving factor divided by 16 in the
    /// UID's last two bytes (big-endian). With `tokenIdentifier` the key types it before each code; without, the
    /// code alone.
    public static func oathHOTP(
        secret: [UInt8], digits: Int = 6, movingFactor: UInt32 = 0, tokenIdentifier: OATHTokenIdentifier? = nil,
        appendEnter: Bool = true, accessCode: [UInt8]? = nil
    ) throws(OTPError) -> OTPSlotConfiguration {
        guard digits == 6 || digits == 8 else { throw .invalidDigits(digits) }
        guard movingFactor % 16 == 0, movingFactor <= maxMovingFactor else { throw .invalidMovingFactor(movingFactor) }
        var k = secret
        if k.count > 64 { k = Crypto.digest(.sha1, k) }
        guard !k.isEmpty, k.count <= hmacKeySize else { throw .invalidKey(k.count) }
        let padded = k + [UInt8](repeating: 0, count: hmacKeySize - k.count)
        let imf = UInt16(movingFactor >> 4)
        let flags = keyboard(appendEnter: appendEnter)
        // Without an identifier the flag for OMP and TT in modhex is set all the same, as yubikit sets it.
        return OTPSlotConfiguration(
            fixed: tokenIdentifier?.fixed ?? [],
            uid: Array(padded[keySize...]) + [UInt8(imf >> 8), UInt8(imf & 0xFF)], key: Array(padded[..<keySize]),
            accessCode: try checked(accessCode: accessCode), extFlags: flags.ext,
            ticketFlags: flags.ticket | TicketFlag.oathHOTP,
            configFlags: (tokenIdentifier?.configFlags ?? ConfigFlag.oathFixedModhex2)
                | (digits == 8 ? ConfigFlag.oathHOTP8 : 0))
    }

    /// The delay between typed characters a slot can be given (pacing flags).
    public enum Pacing: Int, CaseIterable, Sendable {
        case none = 0, ms20 = 20, ms40 = 40, ms60 = 60

        var flags: UInt8 {
            switch self {
            case .none: return 0
            case .ms20: return ConfigFlag.pacing10ms
            case .ms40: return ConfigFlag.pacing20ms
            case .ms60: return ConfigFlag.pacing10ms | ConfigFlag.pacing20ms
            }
        }

        public init(flags: UInt8) {
            switch flags & (ConfigFlag.pacing10ms | ConfigFlag.pacing20ms) {
            case ConfigFlag.pacing10ms: self = .ms20
            case ConfigFlag.pacing20ms: self = .ms40
            case 0: self = .none
            default: self = .ms60
            }
        }
    }

    /// What an UPDATE sets on a programmed slot without touching its secret. Settings not given are written
    /// with their defaults, as on the key every updatable flag is replaced.
    public struct Settings: Sendable, Equatable {
        public var appendEnter = true
        public var pacing = Pacing.none
        public var useNumericKeypad = false
        public var serialUSBVisible = false

        public init(
            appendEnter: Bool = true, pacing: Pacing = .none, useNumericKeypad: Bool = false,
            serialUSBVisible: Bool = false
        ) {
            self.appendEnter = appendEnter
            self.pacing = pacing
            self.useNumericKeypad = useNumericKeypad
            self.serialUSBVisible = serialUSBVisible
        }
    }

    /// The configuration an UPDATE carries: flags only, with the slot's new access code.
    public static func update(_ settings: Settings, accessCode: [UInt8]? = nil) throws(OTPError) -> OTPSlotConfiguration
    {
        let flags = keyboard(appendEnter: settings.appendEnter)
        // The fixed part is 16 zero bytes (its length says 16), as yubikey-manager sends it.
        return OTPSlotConfiguration(
            fixed: [UInt8](repeating: 0, count: fixedSize), accessCode: try checked(accessCode: accessCode),
            extFlags: flags.ext | (settings.useNumericKeypad ? ExtFlag.useNumericKeypad : 0)
                | (settings.serialUSBVisible ? ExtFlag.serialUSBVisible : 0),
            ticketFlags: flags.ticket, configFlags: settings.pacing.flags)
    }

    /// This configuration with an UPDATE applied, as the key applies it: the updatable flags and the access
    /// code from `update`, everything else kept.
    public func applying(update: OTPSlotConfiguration) -> OTPSlotConfiguration {
        var c = self
        c.extFlags = extFlags & ~ExtFlag.updatable | update.extFlags & ExtFlag.updatable
        c.ticketFlags = ticketFlags & ~TicketFlag.updatable | update.ticketFlags & TicketFlag.updatable
        c.configFlags = configFlags & ~ConfigFlag.updatable | update.configFlags & ConfigFlag.updatable
        c.accessCode = update.accessCode
        return c
    }

    /// An update that changes only flags an UPDATE may change.
    public var isValidUpdate: Bool {
        ticketFlags & ~TicketFlag.updatable == 0 && configFlags & ~ConfigFlag.updatable == 0
    }

    /// The slot types Enter after its output.
    public var appendsEnter: Bool { ticketFlags & TicketFlag.appendCR != 0 }

    /// An OATH-HOTP slot's number of digits.
    public var hotpDigits: Int { configFlags & ConfigFlag.oathHOTP8 != 0 ? 8 : 6 }

    /// An OATH-HOTP slot's initial moving factor.
    public var hotpMovingFactor: UInt32 {
        let u = Self.fit(uid, Self.uidSize)
        return (UInt32(u[4]) << 8 | UInt32(u[5])) << 4
    }

    /// A static password slot's scan codes, up to the first 0.
    public var staticScanCodes: [UInt8] {
        let all = Self.fit(fixed, Self.fixedSize) + Self.fit(uid, Self.uidSize) + Self.fit(key, Self.keySize)
        return Array(all.prefix { $0 != 0 })
    }
}

/// The NDEF record a YubiKey's tag serves for the slot chosen for NDEF: a URI (or text) followed by the slot's
/// output, as a slot NDEF write (INS 01, P1 = NDEF 1 or 2) carries it: length, record type ("U" or "T") and 54
/// bytes of payload.
public struct OTPNDEFConfiguration: Sendable, Equatable {
    public static let payloadSize = 54
    public static let size = 2 + payloadSize
    public static let uriType: UInt8 = 0x55
    public static let textType: UInt8 = 0x54

    public var type: UInt8
    /// The record payload: for a URI its identifier code and the rest of the URI.
    public var payload: [UInt8]

    /// A URI record that ends where the slot's output goes (default: the YubiCloud verification URI).
    public static func uri(_ uri: String = NDEFOTP.defaultURIPrefix) throws(OTPError) -> OTPNDEFConfiguration {
        let payload = NDEFRecord.uri(uri).payload
        guard payload.count <= payloadSize else { throw .ndefTooLong(payload.count) }
        return OTPNDEFConfiguration(type: uriType, payload: payload)
    }

    /// A text record (UTF-8, language "en", as ykman writes it): `text`, then the slot's output.
    public static func text(_ text: String = "") throws(OTPError) -> OTPNDEFConfiguration {
        let payload = NDEFRecord.text(text).payload
        guard payload.count <= payloadSize else { throw .ndefTooLong(payload.count) }
        return OTPNDEFConfiguration(type: textType, payload: payload)
    }

    public var bytes: [UInt8] {
        [UInt8(payload.count), type] + payload + [UInt8](repeating: 0, count: Self.payloadSize - payload.count)
    }

    /// Parses the 56 bytes of an NDEF write; nil when they do not hold one.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= Self.size, Int(bytes[0]) <= Self.payloadSize,
            bytes[1] == Self.uriType || bytes[1] == Self.textType
        else { return nil }
        type = bytes[1]
        payload = Array(bytes[2..<(2 + Int(bytes[0]))])
    }

    public init(type: UInt8, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }

    /// The record the tag serves with `output` (what the slot types) after this prefix.
    public func record(output: String) -> NDEFRecord {
        NDEFRecord(tnf: NDEFRecord.tnfWellKnown, type: [type], payload: payload + Array(output.utf8))
    }
}
