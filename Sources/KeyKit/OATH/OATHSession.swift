import FoundationEssentials
import Glibc

/// The YKOATH application: accounts, codes, password.
///
/// Each method builds its TLVs, sends one command (the transport gathers long answers with SEND REMAINING)
/// and parses the answer. Commands that answer data (VALIDATE, LIST, CALCULATE, CALCULATE ALL, and SELECT)
/// carry Le 00; those that answer only a status (PUT, DELETE, RENAME, SET CODE, RESET) carry none. After `make`, a password-protected key is locked until `validate` or `unlock`.
public actor OATHSession {
    typealias Ins = YKOATH.Ins
    typealias Tag = YKOATH.Tag

    static let requireTouch = YKOATH.requireTouch
    /// HMAC keys shorter than this are zero-padded (the key expects at least 14 bytes).
    static let minimumKeyLength = 14
    static let passwordIterations = 1000
    static let passwordKeyLength = 16

    private let proto: SmartCardProtocol
    public nonisolated let version: Version
    public private(set) var salt: [UInt8]
    private var challenge: [UInt8]?

    private init(proto: SmartCardProtocol, version: Version, salt: [UInt8], challenge: [UInt8]?) {
        self.proto = proto
        self.version = version
        self.salt = salt
        self.challenge = challenge
    }

    /// SELECTs the OATH application.
    public static func make(
        connection: any SmartCardConnection,
        observer: (@Sendable (APDUExchange) -> Void)? = nil
    ) async throws -> OATHSession {
        let (proto, answer) = try await SmartCardProtocol.selecting(
            AID.oath, name: "OATH", on: connection, remainingInstruction: Ins.sendRemaining, observer: observer)
        let tlvs = try parse(answer)
        guard let v = tlvs.value(for: Tag.version).flatMap({ Version(bytes: $0) }),
            let salt = tlvs.value(for: Tag.name)
        else {
            throw SmartCardError.malformedResponse(Malformation(.oathSelect, .incomplete))
        }
        return OATHSession(proto: proto, version: v, salt: salt, challenge: tlvs.value(for: Tag.challenge))
    }

    static func parse(_ bytes: [UInt8]) throws -> [TLV] {
        do {
            return try TLV.parseAll(bytes, mode: .simple)
        } catch {
            throw SmartCardError.malformedResponse(Malformation(.answer, .tlv(error)))
        }
    }

    /// True while a password is set and not yet given in this session.
    public var isLocked: Bool { challenge != nil }

    /// A stable identifier of this key's OATH application (changes on RESET).
    public var deviceID: String { OATHSession.deviceID(salt: salt) }

    public static func deviceID(salt: [UInt8]) -> String {
        let digest = Crypto.digest(.sha256, salt)
        return Data(digest.prefix(16)).base64EncodedString().replacing("=", with: "")
    }

    /// The access key for a password: PBKDF2-HMAC-SHA1(password, salt, 1000 iterations, 16 bytes).
    public func deriveKey(password: String) -> [UInt8] {
        OATHSession.deriveKey(password: password, salt: salt)
    }

    public static func deriveKey(password: String, salt: [UInt8]) -> [UInt8] {
        deriveSecretKey(password: SecretBytes(utf8: password), salt: salt).copyBytes()
    }

    /// The access key for a password, kept in a buffer that is zeroed when released.
    public func deriveSecretKey(password: SecretBytes) -> SecretBytes {
        OATHSession.deriveSecretKey(password: password, salt: salt)
    }

    public static func deriveSecretKey(password: SecretBytes, salt: [UInt8]) -> SecretBytes {
        Crypto.pbkdf2(
            .sha1, password: password, salt: salt, iterations: passwordIterations,
            length: passwordKeyLength)
    }

    // MARK: Password

    /// VALIDATE: proves we know the key and checks that the key knows it too.
    public func validate(key: [UInt8]) async throws {
        try await validate(key: SecretBytes(key))
    }

    /// VALIDATE with a key kept in its own buffer.
    public func validate(key: SecretBytes) async throws {
        guard let challenge else { return }
        let ours = Crypto.random(8)
        let data =
            TLV(Tag.response, Crypto.hmac(.sha1, key: key, data: challenge)).encoded
            + TLV(Tag.challenge, ours).encoded
        let r = try await proto.send(APDU(ins: Ins.validate, data: data, le: 256))
        if r.status == .dataInvalid || r.status == .incorrectParameters { throw OATHError.wrongPassword }
        let answer = try check(r)
        guard let theirs = try OATHSession.parse(answer).value(for: Tag.response),
            Crypto.constantTimeEqual(theirs, Crypto.hmac(.sha1, key: key, data: ours))
        else {
            throw OATHError.keyResponseMismatch
        }
        self.challenge = nil
    }

    public func unlock(password: String) async throws {
        try await validate(key: deriveSecretKey(password: SecretBytes(utf8: password)))
    }

    /// SET CODE: protects the application with `key` (from `deriveKey`).
    public func setKey(_ key: [UInt8]) async throws {
        try await setKey(SecretBytes(key))
    }

    /// SET CODE with a key kept in its own buffer.
    public func setKey(_ key: SecretBytes) async throws {
        let challenge = Crypto.random(8)
        var keyField = [OATHType.totp.rawValue | HashAlgorithm.sha1.oathCode] + key.copyBytes()
        let data =
            TLV(Tag.key, keyField).encoded
            + TLV(Tag.challenge, challenge).encoded
            + TLV(Tag.response, Crypto.hmac(.sha1, key: key, data: challenge)).encoded
        SecretBytes.wipe(&keyField)
        try check(try await proto.send(APDU(ins: Ins.setCode, data: data)), optional: .setCode)
    }

    /// SET CODE with an empty key: removes the password.
    public func removePassword() async throws {
        try check(try await proto.send(APDU(ins: Ins.setCode, data: TLV(Tag.key, []).encoded)), optional: .setCode)
    }

    /// RESET: deletes every account and the password. A new salt (and device ID) follows.
    public func reset() async throws {
        try check(try await proto.send(APDU(ins: Ins.reset, p1: YKOATH.resetP1, p2: YKOATH.resetP2)), optional: .reset)
        let answer = try await proto.select(AID.oath, name: "OATH")
        let tlvs = try OATHSession.parse(answer)
        salt = tlvs.value(for: Tag.name) ?? salt
        challenge = tlvs.value(for: Tag.challenge)
    }

    // MARK: Accounts

    /// LIST: every account with its type and algorithm.
    public func list() async throws -> [Credential] {
        let answer = try check(try await proto.send(APDU(ins: Ins.list, le: 256)))
        return try OATHSession.parse(answer).compactMap { t in
            guard t.tag == Tag.nameList, let first = t.value.first,
                let type = OATHType(rawValue: first & YKOATH.typeMask)
            else { return nil }
            return Credential(
                rawID: Array(t.value.dropFirst()), type: type,
                algorithm: HashAlgorithm(oathCode: first))
        }
    }

    /// A calculated (or pending) entry of CALCULATE ALL.
    public struct Entry: Sendable, Hashable {
        public var credential: Credential
        /// nil for HOTP and touch accounts, which are calculated on request only.
        public var code: Code?
        public var digits: Int

        public init(credential: Credential, code: Code?, digits: Int) {
            self.credential = credential
            self.code = code
            self.digits = digits
        }
    }

    /// CALCULATE ALL with the 30-second time step of `time`, then one CALCULATE for each TOTP account with
    /// another period (with its own time step) unless `otherPeriods` is false (then their code is nil, for a
    /// caller that knows it is still valid). HOTP and touch accounts are left for `calculate`.
    public func calculateAll(at time: Int64, otherPeriods: Bool = true) async throws -> [Entry] {
        let step = time / Int64(CredentialData.defaultPeriod)
        let data = TLV(Tag.challenge, BigEndian.bytes(UInt64(max(step, 0)), count: 8)).encoded
        let answer = try check(
            try await proto.send(
                APDU(
                    ins: Ins.calculateAll, p2: YKOATH.truncateResponse, data: data,
                    le: 256)))
        let tlvs = try OATHSession.parse(answer)
        guard tlvs.count % 2 == 0 else {
            throw SmartCardError.malformedResponse(Malformation(.calculateAll, .unpaired))
        }
        var entries = [Entry]()
        var i = 0
        while i < tlvs.count {
            let nameTLV = tlvs[i], resp = tlvs[i + 1]
            i += 2
            guard nameTLV.tag == Tag.name, let digits = resp.value.first.map(Int.init) else {
                throw SmartCardError.malformedResponse(Malformation(.calculateAll, .unexpectedTag(nameTLV.tag)))
            }
            let type: OATHType = resp.tag == Tag.hotp ? .hotp : .totp
            var credential = Credential(rawID: nameTLV.value, type: type, touch: resp.tag == Tag.touch)
            switch resp.tag {
            case Tag.truncated:
                if credential.period != CredentialData.defaultPeriod && !otherPeriods {
                    entries.append(Entry(credential: credential, code: nil, digits: digits))
                } else if credential.period != CredentialData.defaultPeriod {
                    let code = try await calculate(credential, at: time)
                    entries.append(Entry(credential: credential, code: code, digits: digits))
                } else {
                    let code = try OATHSession.code(fromTruncated: resp.value, credential: credential, time: time)
                    entries.append(Entry(credential: credential, code: code, digits: digits))
                }
            case Tag.hotp, Tag.touch:
                credential.touch = resp.tag == Tag.touch
                entries.append(Entry(credential: credential, code: nil, digits: digits))
            case Tag.response:
                let code = try OATHSession.code(fromFull: resp.value, credential: credential, time: time)
                entries.append(Entry(credential: credential, code: code, digits: digits))
            default:
                throw SmartCardError.malformedResponse(Malformation(.calculateAll, .unexpectedTag(resp.tag)))
            }
        }
        return entries
    }

    /// CALCULATE one account (touch accounts wait for the touch; HOTP counters advance).
    public func calculate(_ credential: Credential, at time: Int64) async throws -> Code {
        let challenge: [UInt8]
        if credential.type == .totp {
            challenge = Self.timeChallenge(time, period: Int64(credential.period))
        } else {
            challenge = []
        }
        let data = TLV(Tag.name, credential.rawID).encoded + TLV(Tag.challenge, challenge).encoded
        let r = try await proto.send(APDU(ins: Ins.calculate, p2: YKOATH.truncateResponse, data: data, le: 256))
        if r.status == .fileNotFound || r.status == .dataInvalid {
            throw OATHError.noSuchCredential(credential.id.string)
        }
        if r.status == .conditionsNotSatisfied || r.status == .securityConditionNotSatisfied && !isLocked {
            throw OATHError.touchTimeout
        }
        let tlvs = try OATHSession.parse(try check(r))
        if let t = tlvs.value(for: Tag.truncated) {
            return try OATHSession.code(fromTruncated: t, credential: credential, time: time)
        }
        if let full = tlvs.value(for: Tag.response) {
            return try OATHSession.code(fromFull: full, credential: credential, time: time)
        }
        throw SmartCardError.malformedResponse(Malformation(.oathCode, .missing))
    }

    /// PUT: creates (or overwrites) an account.
    @discardableResult
    public func put(_ data: CredentialData) async throws -> Credential {
        try data.id.validate()
        guard (6...8).contains(data.digits) else {
            throw OATHError.invalidCredential(.field(.digits, String(data.digits)))
        }
        guard data.period > 0 else { throw OATHError.invalidCredential(.field(.period, String(data.period))) }
        if data.touch { try OATHFeature.touch.check(version) }
        if data.algorithm == .sha512 { try OATHFeature.sha512.check(version) }
        let secret = OATHSession.prepareSecret(data.secret, algorithm: data.algorithm)
        var body = TLV(Tag.name, data.id.bytes).encoded
        body += TLV(Tag.key, [data.type.rawValue | data.algorithm.oathCode, UInt8(data.digits)] + secret).encoded
        if data.touch { body += [Tag.property, OATHSession.requireTouch] }
        if data.type == .hotp && data.counter > 0 {
            body += TLV(Tag.imf, BigEndian.bytes(UInt64(data.counter), count: 4)).encoded
        }
        let r = try await proto.send(APDU(ins: Ins.put, data: body))
        if r.status == .noSpace { throw OATHError.noSpace }
        try check(r)
        return Credential(rawID: data.id.bytes, type: data.type, algorithm: data.algorithm, touch: data.touch)
    }

    /// DELETE an account.
    public func delete(_ credential: Credential) async throws {
        let r = try await proto.send(APDU(ins: Ins.delete, data: TLV(Tag.name, credential.rawID).encoded))
        if r.status == .fileNotFound || r.status == .dataInvalid {
            throw OATHError.noSuchCredential(credential.id.string)
        }
        try check(r)
    }

    /// RENAME an account (firmware 5.3.1 and later). The new ID keeps the account's type and period.
    @discardableResult
    public func rename(_ credential: Credential, to newID: CredentialID) async throws -> Credential {
        try OATHFeature.rename.check(version)
        try newID.validate()
        let data = TLV(Tag.name, credential.rawID).encoded + TLV(Tag.name, newID.bytes).encoded
        let r = try await proto.send(APDU(ins: Ins.rename, data: data))
        if r.status == .fileNotFound || r.status == .dataInvalid {
            throw OATHError.noSuchCredential(credential.id.string)
        }
        if r.status == .incorrectParameters {
            throw OATHError.invalidCredential(.nameTaken(newID.string))
        }
        try check(r, optional: .rename)
        var renamed = credential
        renamed.rawID = newID.bytes
        renamed.id = newID
        return renamed
    }

    // MARK: Helpers

    /// Keys longer than the hash block are hashed; shorter ones padded to 14 bytes.
    public static func prepareSecret(_ secret: [UInt8], algorithm: HashAlgorithm) -> [UInt8] {
        var s = secret.count > algorithm.blockSize ? Crypto.digest(algorithm, secret) : secret
        if s.count < minimumKeyLength { s += [UInt8](repeating: 0, count: minimumKeyLength - s.count) }
        return s
    }

    static let steamAlphabet = Array("23456789BCDFGHJKMNPQRTVWXY")

    /// Formats a dynamically truncated 31-bit value: decimal digits, or 5 Steam characters.
    ///
    /// The last `digits` decimal digits of the value, zero-padded; a 31-bit value has at most 10, so more
    /// digits only add leading zeros.
    public static func format(value: UInt32, digits: Int, steam: Bool) -> String {
        var v = value & 0x7FFF_FFFF
        if steam {
            var out = ""
            for _ in 0..<5 {
                out.append(steamAlphabet[Int(v % 26)])
                v /= 26
            }
            return out
        }
        var mod: UInt64 = 1
        for _ in 0..<min(max(digits, 0), maxCodeDigits) { mod *= 10 }
        let s = String(UInt64(v) % mod)
        return String(repeating: "0", count: max(digits - s.count, 0)) + s
    }

    /// RFC 6238's challenge at `time`: its time step (seconds since 1970 / `period`; 0 before 1970), eight bytes
    /// big-endian.
    public static func timeChallenge(_ time: Int64, period: Int64) -> [UInt8] {
        BigEndian.bytes(UInt64(max(time / period, 0)), count: 8)
    }

    /// RFC 4226's dynamic truncation of an HMAC (20 bytes or more): four bytes at the offset its last byte's low
    /// nibble names; `format` keeps their low 31 bits.
    public static func truncated(_ mac: [UInt8]) -> UInt32 {
        let offset = Int(mac[mac.count - 1] & 0x0F)
        return UInt32(BigEndian.integer(mac[offset..<(offset + 4)]))
    }

    /// The most decimal digits a code can have (a 31-bit value has 10).
    static let maxCodeDigits = 10

    /// The digit count a key answers with a code, when a code can have it (1 to 10); any other count is a
    /// malformed answer.
    static func codeDigits(_ byte: UInt8) throws -> Int {
        guard (1...maxCodeDigits).contains(Int(byte)) else {
            throw SmartCardError.malformedResponse(Malformation(.oathDigits, .value(String(byte))))
        }
        return Int(byte)
    }

    static func window(_ credential: Credential, time: Int64) -> (Int64, Int64) {
        guard credential.type == .totp else { return (time, Int64.max) }
        let p = Int64(credential.period)
        let start = (time / p) * p
        return (start, start + p)
    }

    static func code(fromTruncated value: [UInt8], credential: Credential, time: Int64) throws -> Code {
        guard value.count == 5 else {
            throw SmartCardError.malformedResponse(Malformation(.oathCode, .lengthExpected(value.count, expected: 5)))
        }
        let digits = try codeDigits(value[0])
        let n = UInt32(BigEndian.integer(value.dropFirst()))
        let (from, to) = window(credential, time: time)
        return Code(value: format(value: n, digits: digits, steam: credential.isSteam), validFrom: from, validTo: to)
    }

    /// Full HMAC answers (P2 = 0): dynamic truncation as in RFC 4226.
    static func code(fromFull value: [UInt8], credential: Credential, time: Int64) throws -> Code {
        guard value.count >= 21 else {
            throw SmartCardError.malformedResponse(Malformation(.oathCode, .tooShort(value.count, minimum: 21)))
        }
        let digits = try codeDigits(value[0])
        let n = truncated(Array(value.dropFirst()))
        let (from, to) = window(credential, time: time)
        return Code(value: format(value: n, digits: digits, steam: credential.isSteam), validFrom: from, validTo: to)
    }

    /// The answer's data when it is a success. For a command some keys lack (`optional`), an answer saying
    /// the instruction, its class or its function is not supported is `OATHError.commandNotSupported`.
    @discardableResult
    private func check(_ r: Response, optional: OATHOptionalCommand? = nil) throws -> [UInt8] {
        if r.status == .securityConditionNotSatisfied && isLocked { throw OATHError.passwordRequired }
        if let optional, OATHOptionalCommand.notSupportedStatuses.contains(r.status) {
            throw OATHError.commandNotSupported(optional, r.status)
        }
        return try r.checked()
    }
}
