/// What went wrong in the OpenPGP application, as facts (`ErrorExplanation` words them).
public enum OpenPGPError: Error, Equatable, Sendable {
    /// VERIFY or CHANGE REFERENCE DATA of a password was refused; the tries left, as the card then tells them.
    case wrongPassword(OpenPGP.Password, retriesLeft: Int)
    /// The password has no tries left (6983); for the reset code also: none is set.
    case passwordBlocked(OpenPGP.Password)
    /// A password shorter or longer than the card takes.
    case passwordLength(OpenPGP.Password, count: Int, minimum: Int, maximum: Int)
    /// 6982: the command needs a password first.
    case securityConditionNotSatisfied
    /// The card derives passwords with a KDF other than the iterated and salted S2K over SHA-256 or SHA-512 (the
    /// object's algorithm and hash algorithm bytes).
    case kdfUnsupported(algorithm: UInt8, hash: UInt8?)
    /// The slot holds no key (6A88, or "no key" in key information).
    case noKey(OpenPGP.KeySlot)
    /// The slot's touch policy is fixed: it changes only with a new key.
    case touchPolicyFixed(OpenPGP.KeySlot)
    /// The firmware lacks what was asked (`minimum`: the first version that has it).
    case notSupported(minimum: Version, actual: Version)
    /// The card does not take these algorithm attributes for the slot.
    case unsupportedAlgorithm
    /// 6985: the card's conditions for the command are not met (e.g. TERMINATE before the passwords are blocked).
    case conditionsNotSatisfied
    /// A key that enforces PIN complexity refused the new password (6985 to CHANGE REFERENCE DATA, RESET RETRY
    /// COUNTER or PUT DATA of the reset code).
    case tooSimple(OpenPGP.Password)
    /// An attestation the attestation key (ATT) did not sign.
    case attestationNotSigned(OpenPGP.KeySlot)
    /// An attestation of a key other than the slot's.
    case attestedKeyMismatch(OpenPGP.KeySlot)
    /// The answer could not be read.
    case malformed(Malformation)
    /// Any other status word.
    case status(StatusWord)
}

/// The application identifier (DO 4F): the RID, the specification version, the manufacturer and the serial.
public struct OpenPGPAID: Sendable, Equatable {
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) throws(OpenPGPError) {
        guard bytes.count == 16 else {
            throw .malformed(Malformation(.openpgpAID, .lengthExpected(bytes.count, expected: 16)))
        }
        guard bytes.starts(with: AID.openpgp) else {
            throw .malformed(Malformation(.openpgpAID, .value(Hex.encode(Array(bytes.prefix(6)), uppercase: true))))
        }
        self.bytes = bytes
    }

    /// The specification version, from two BCD bytes ("3.4").
    public var version: (major: Int, minor: Int) { (OpenPGPAID.bcd(bytes[6]), OpenPGPAID.bcd(bytes[7])) }
    public var versionText: String { "\(version.major).\(version.minor)" }
    public var manufacturer: UInt16 { UInt16(bytes[8]) << 8 | UInt16(bytes[9]) }
    /// The serial number: BCD on a YubiKey (its serial); when not BCD, the four bytes as a number.
    public var serial: UInt32 {
        let digits = bytes[10..<14]
        if digits.allSatisfy({ $0 >> 4 < 10 && $0 & 0x0F < 10 }) {
            return digits.reduce(UInt32(0)) { $0 * 100 + UInt32(OpenPGPAID.bcd($1)) }
        }
        return digits.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    static func bcd(_ b: UInt8) -> Int { Int(b >> 4) * 10 + Int(b & 0x0F) }

    /// The AID a card with this version, manufacturer and serial has.
    public static func make(serial: UInt32, manufacturer: UInt16 = OpenPGP.yubicoManufacturer) -> [UInt8] {
        func toBCD(_ n: Int) -> UInt8 { UInt8((n / 10) << 4 | (n % 10)) }
        var s = Int(serial % 100_000_000)
        var serialBytes = [UInt8](repeating: 0, count: 4)
        for i in (0..<4).reversed() {
            serialBytes[i] = toBCD(s % 100)
            s /= 100
        }
        let v = OpenPGP.specificationVersion
        return AID.openpgp + [toBCD(v.major), toBCD(v.minor), UInt8(manufacturer >> 8), UInt8(manufacturer & 0xFF)]
            + serialBytes + [0x00, 0x00]
    }
}

/// The extended capabilities (DO C0).
public struct OpenPGPExtendedCapabilities: Sendable, Equatable {
    public let flags: UInt8
    public let secureMessagingAlgorithm: UInt8
    public let challengeMaxLength: Int
    public let certificateMaxLength: Int
    public let specialDOMaxLength: Int
    public let pinBlock2Format: Bool
    public let manageSecurityEnvironment: Bool

    public static let kdfFlag: UInt8 = 0x01
    public static let algorithmAttributesChangeable: UInt8 = 0x04
    public static let pwStatusChangeable: UInt8 = 0x10
    public static let keyImport: UInt8 = 0x20
    public static let getChallenge: UInt8 = 0x40

    public init(_ b: [UInt8]) throws(OpenPGPError) {
        guard b.count >= 10 else {
            throw .malformed(Malformation(.extendedCapabilities, .tooShort(b.count, minimum: 10)))
        }
        flags = b[0]
        secureMessagingAlgorithm = b[1]
        challengeMaxLength = Int(b[2]) << 8 | Int(b[3])
        certificateMaxLength = Int(b[4]) << 8 | Int(b[5])
        specialDOMaxLength = Int(b[6]) << 8 | Int(b[7])
        pinBlock2Format = b[8] == 1
        manageSecurityEnvironment = b[9] == 1
    }

    public var hasKDF: Bool { flags & Self.kdfFlag != 0 }
    public var canChangeAlgorithmAttributes: Bool { flags & Self.algorithmAttributesChangeable != 0 }
}

/// A slot's algorithm attributes (DO C1, C2, C3, DA).
public enum OpenPGPAlgorithmAttributes: Sendable, Equatable, CustomStringConvertible {
    /// RSA: the modulus and exponent lengths in bits, and the import format.
    case rsa(modulusBits: Int, exponentBits: Int, importFormat: UInt8)
    /// ECDH, ECDSA or EdDSA (`algorithm`) on a curve known by its OID; `withPublicKey` for import format FF.
    case ecc(algorithm: UInt8, curve: OpenPGP.Curve, withPublicKey: Bool)

    public init(_ b: [UInt8]) throws(OpenPGPError) {
        guard let id = b.first else { throw .malformed(Malformation(.algorithmAttributes, .empty)) }
        switch id {
        case OpenPGP.AlgorithmID.rsa:
            guard b.count >= 5 else {
                throw .malformed(Malformation(.algorithmAttributes, .tooShort(b.count, minimum: 5)))
            }
            let n = Int(b[1]) << 8 | Int(b[2])
            let e = Int(b[3]) << 8 | Int(b[4])
            self = .rsa(modulusBits: n, exponentBits: e, importFormat: b.count > 5 ? b[5] : 0)
        case OpenPGP.AlgorithmID.ecdh, OpenPGP.AlgorithmID.ecdsa, OpenPGP.AlgorithmID.eddsa:
            var oid = Array(b.dropFirst())
            let withPublicKey = oid.last == 0xFF
            if withPublicKey { oid.removeLast() }
            guard let curve = OpenPGP.Curve(oid: oid) else {
                throw .malformed(Malformation(.algorithmAttributes, .value(Hex.encode(oid, uppercase: true))))
            }
            self = .ecc(algorithm: id, curve: curve, withPublicKey: withPublicKey)
        default:
            throw .malformed(Malformation(.algorithmAttributes, .value(Hex.encode([id], uppercase: true))))
        }
    }

    /// RSA with a 17-bit exponent (65537) and the standard import format, as a YubiKey 5 takes it.
    public static func rsa(bits: Int) -> OpenPGPAlgorithmAttributes {
        .rsa(modulusBits: bits, exponentBits: 17, importFormat: 0)
    }

    /// The attributes of a key on `curve` in `slot`: EdDSA for Ed25519, ECDH for the decryption slot, else ECDSA.
    public static func ecc(_ curve: OpenPGP.Curve, slot: OpenPGP.KeySlot) -> OpenPGPAlgorithmAttributes {
        let id: UInt8
        if curve == .ed25519 {
            id = OpenPGP.AlgorithmID.eddsa
        } else if slot == .decryption || curve == .x25519 {
            id = OpenPGP.AlgorithmID.ecdh
        } else {
            id = OpenPGP.AlgorithmID.ecdsa
        }
        return .ecc(algorithm: id, curve: curve, withPublicKey: false)
    }

    public var encoded: [UInt8] {
        switch self {
        case .rsa(let n, let e, let f):
            return [OpenPGP.AlgorithmID.rsa, UInt8(n >> 8), UInt8(n & 0xFF), UInt8(e >> 8), UInt8(e & 0xFF), f]
        case .ecc(let id, let curve, let withPublicKey):
            return [id] + curve.oid + (withPublicKey ? [0xFF] : [])
        }
    }

    /// "RSA2048", or the curve's name as ykman gives it ("SECP256R1", "Ed25519").
    public var description: String {
        switch self {
        case .rsa(let n, _, _): return "RSA\(n)"
        case .ecc(_, let curve, _): return curve.displayName
        }
    }

    /// The key type KeyKit computes with; nil for curves it does not know.
    public var keyType: AsymmetricKeyType? {
        switch self {
        case .rsa(let n, _, _): return .rsa(bits: n)
        case .ecc(_, let curve, _): return curve.keyType
        }
    }

    /// The attributes equal but for the import format (what the key itself is).
    public func sameKind(as other: OpenPGPAlgorithmAttributes) -> Bool {
        switch (self, other) {
        case (.rsa(let a, _, _), .rsa(let b, _, _)): return a == b
        case (.ecc(let a, let c, _), .ecc(let b, let d, _)): return a == b && c == d
        default: return false
        }
    }
}

/// The PW status bytes (DO C4): the signature PIN policy, the passwords' longest lengths and their tries left.
public struct OpenPGPPasswordStatus: Sendable, Equatable {
    /// True: one VERIFY allows several signatures; false: each signature needs the PIN again.
    public var pinValidForSeveralSignatures: Bool
    public var maxLengthUser: Int
    public var maxLengthReset: Int
    public var maxLengthAdmin: Int
    public var triesUser: Int
    public var triesReset: Int
    public var triesAdmin: Int

    public init(
        pinValidForSeveralSignatures: Bool, maxLengthUser: Int, maxLengthReset: Int, maxLengthAdmin: Int,
        triesUser: Int, triesReset: Int, triesAdmin: Int
    ) {
        self.pinValidForSeveralSignatures = pinValidForSeveralSignatures
        self.maxLengthUser = maxLengthUser
        self.maxLengthReset = maxLengthReset
        self.maxLengthAdmin = maxLengthAdmin
        self.triesUser = triesUser
        self.triesReset = triesReset
        self.triesAdmin = triesAdmin
    }

    public init(_ b: [UInt8]) throws(OpenPGPError) {
        guard b.count >= 7 else { throw .malformed(Malformation(.pwStatus, .tooShort(b.count, minimum: 7))) }
        self.init(
            pinValidForSeveralSignatures: b[0] == 1, maxLengthUser: Int(b[1]), maxLengthReset: Int(b[2]),
            maxLengthAdmin: Int(b[3]), triesUser: Int(b[4]), triesReset: Int(b[5]), triesAdmin: Int(b[6]))
    }

    public var encoded: [UInt8] {
        [pinValidForSeveralSignatures ? 1 : 0]
            + [maxLengthUser, maxLengthReset, maxLengthAdmin, triesUser, triesReset, triesAdmin]
            .map { UInt8(clamping: $0) }
    }

    public func tries(_ password: OpenPGP.Password) -> Int {
        switch password {
        case .user: return triesUser
        case .reset: return triesReset
        case .admin: return triesAdmin
        }
    }

    public func maxLength(_ password: OpenPGP.Password) -> Int {
        switch password {
        case .user: return maxLengthUser
        case .reset: return maxLengthReset
        case .admin: return maxLengthAdmin
        }
    }
}

/// One key slot as the application related data tells it.
public struct OpenPGPKeyInfo: Sendable, Equatable {
    public var slot: OpenPGP.KeySlot
    public var attributes: OpenPGPAlgorithmAttributes?
    /// 20 bytes, all zero when none was written.
    public var fingerprint: [UInt8]
    /// Seconds since 1970; 0 when none was written.
    public var generationTime: UInt32
    /// From key information (DE); nil when the card does not tell (before firmware 5.2).
    public var status: OpenPGP.KeyStatus?
    /// From the UIF object; nil when the card has none for the slot.
    public var touchPolicy: OpenPGP.TouchPolicy?

    /// Whether the slot holds a key: by its key information, else by a fingerprint.
    public var hasKey: Bool {
        if let status { return status != .none }
        return fingerprint.contains { $0 != 0 }
    }
}

/// The application related data (DO 6E) with what it contains.
public struct OpenPGPApplicationData: Sendable, Equatable {
    public var aid: OpenPGPAID
    public var historicalBytes: [UInt8]
    public var extendedCapabilities: OpenPGPExtendedCapabilities
    public var passwordStatus: OpenPGPPasswordStatus
    /// The slots the card has (the attestation key only where it tells its attributes), in order.
    public var keys: [OpenPGPKeyInfo]

    public func key(_ slot: OpenPGP.KeySlot) -> OpenPGPKeyInfo? { keys.first { $0.slot == slot } }

    /// Parses GET DATA 6E's answer. Older cards put the discretionary objects directly in 6E, not in 73.
    public init(_ answer: [UInt8]) throws(OpenPGPError) {
        let outer = try OpenPGPApplicationData.unwrap(OpenPGP.DO.applicationRelatedData, answer, part: .openpgpAnswer)
        let top = try OpenPGPApplicationData.parse(outer, part: .openpgpAnswer)
        let inner = top.value(for: OpenPGP.DO.discretionaryData).map { $0 }
        let d =
            try inner.map { v throws(OpenPGPError) in try OpenPGPApplicationData.parse(v, part: .openpgpAnswer) } ?? top
        func need(_ tag: UInt32, _ part: Malformation.Part) throws(OpenPGPError) -> [UInt8] {
            guard let v = d.value(for: tag) ?? top.value(for: tag) else {
                throw .malformed(Malformation(part, .missing))
            }
            return v
        }
        aid = try OpenPGPAID(try need(OpenPGP.DO.aid, .openpgpAID))
        historicalBytes = top.value(for: OpenPGP.DO.historicalBytes) ?? []
        extendedCapabilities = try OpenPGPExtendedCapabilities(
            try need(OpenPGP.DO.extendedCapabilities, .extendedCapabilities))
        passwordStatus = try OpenPGPPasswordStatus(try need(OpenPGP.DO.pwStatus, .pwStatus))
        let fingerprints = try need(OpenPGP.DO.fingerprints, .fingerprints)
        guard fingerprints.count % 20 == 0, fingerprints.count >= 60 else {
            throw .malformed(Malformation(.fingerprints, .length(fingerprints.count)))
        }
        let times = d.value(for: OpenPGP.DO.generationTimes) ?? []
        guard times.count % 4 == 0 else { throw .malformed(Malformation(.generationTimes, .length(times.count))) }
        var statuses = [OpenPGP.KeySlot: OpenPGP.KeyStatus]()
        if let info = d.value(for: OpenPGP.DO.keyInformation) {
            guard info.count % 2 == 0 else { throw .malformed(Malformation(.keyInformation, .length(info.count))) }
            for i in stride(from: 0, to: info.count, by: 2) {
                guard let slot = OpenPGP.KeySlot(rawValue: info[i]),
                    let status = OpenPGP.KeyStatus(rawValue: info[i + 1])
                else {
                    throw .malformed(
                        Malformation(.keyInformation, .value(Hex.encode([info[i], info[i + 1]], uppercase: true))))
                }
                statuses[slot] = status
            }
        }
        var keys = [OpenPGPKeyInfo]()
        for slot in OpenPGP.KeySlot.allCases {
            let attributesBytes = d.value(for: slot.algorithmAttributesTag)
            if slot == .attestation && attributesBytes == nil { continue }
            guard let attributesBytes else { throw .malformed(Malformation(.algorithmAttributes, .missing)) }
            let attributes = try OpenPGPAlgorithmAttributes(attributesBytes)
            let at = slot.index * 20
            let fingerprint =
                at + 20 <= fingerprints.count ? Array(fingerprints[at..<(at + 20)]) : [UInt8](repeating: 0, count: 20)
            let t = slot.index * 4
            let time = t + 4 <= times.count ? times[t..<(t + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : 0
            var touch: OpenPGP.TouchPolicy?
            if let uif = d.value(for: slot.touchPolicyTag) {
                touch = try OpenPGPApplicationData.touchPolicy(uif)
            }
            keys.append(
                OpenPGPKeyInfo(
                    slot: slot, attributes: attributes, fingerprint: fingerprint, generationTime: time,
                    status: statuses[slot], touchPolicy: touch))
        }
        self.keys = keys
    }

    /// A UIF object: the policy byte and the features byte.
    public static func touchPolicy(_ uif: [UInt8]) throws(OpenPGPError) -> OpenPGP.TouchPolicy {
        guard let first = uif.first else { throw .malformed(Malformation(.touchPolicy, .empty)) }
        guard let policy = OpenPGP.TouchPolicy(rawValue: first) else {
            throw .malformed(Malformation(.touchPolicy, .value(Hex.encode([first], uppercase: true))))
        }
        return policy
    }

    static func parse(_ bytes: [UInt8], part: Malformation.Part) throws(OpenPGPError) -> [TLV] {
        do {
            return try TLV.parseAll(bytes)
        } catch {
            throw .malformed(Malformation(part, .tlv(error)))
        }
    }

    /// The value of the one TLV `tag` that `bytes` must be.
    static func unwrap(_ tag: UInt32, _ bytes: [UInt8], part: Malformation.Part) throws(OpenPGPError) -> [UInt8] {
        let tlvs = try parse(bytes, part: part)
        guard let first = tlvs.first else { throw .malformed(Malformation(part, .empty)) }
        guard tlvs.count == 1, first.tag == tag else { throw .malformed(Malformation(part, .unexpectedTag(first.tag))) }
        return first.value
    }
}

/// The cardholder related data (DO 65).
public struct OpenPGPCardholder: Sendable, Equatable {
    /// As the card stores it: surname<<given name, ISO 8859-1 (ASCII in practice).
    public var name: [UInt8]
    public var language: [UInt8]
    /// ISO 5218: 0x31 male, 0x32 female, 0x39 not announced; nil when absent.
    public var sex: UInt8?

    public init(_ answer: [UInt8]) throws(OpenPGPError) {
        let inner = try OpenPGPApplicationData.unwrap(OpenPGP.DO.cardholderRelatedData, answer, part: .cardholderData)
        let tlvs = try OpenPGPApplicationData.parse(inner, part: .cardholderData)
        name = tlvs.value(for: OpenPGP.DO.name) ?? []
        language = tlvs.value(for: OpenPGP.DO.language) ?? []
        sex = tlvs.value(for: OpenPGP.DO.sex)?.first
    }

    /// The name as a person reads it: "Given Surname" from "Surname<<Given", filler '<' as spaces.
    public var displayName: String {
        // Latin-1: each byte is its code point.
        let text = String(String.UnicodeScalarView(name.map { Unicode.Scalar($0) }))
        var surname = text
        var given = ""
        if let range = text.firstRange(of: "<<") {
            surname = String(text[..<range.lowerBound])
            given = String(text[range.upperBound...])
        }
        return [given, surname].map { String($0.map { $0 == "<" ? " " : $0 }) }.filter { !$0.isEmpty }
            .joined(separator: " ")
    }
}

/// A slot's public key, as GENERATE ASYMMETRIC KEY PAIR gives it.
public enum OpenPGPPublicKey: Sendable, Equatable {
    case rsa(modulus: [UInt8], exponent: [UInt8])
    /// An EC point (uncompressed), or the 32 bytes of an Ed25519 or X25519 key.
    case ecc(curve: OpenPGP.Curve, point: [UInt8])

    /// Parses 7F49 { 81 n, 82 e } or 7F49 { 86 point } for a slot with `attributes`.
    public init(_ answer: [UInt8], attributes: OpenPGPAlgorithmAttributes) throws(OpenPGPError) {
        let inner = try OpenPGPApplicationData.unwrap(OpenPGP.DO.publicKey, answer, part: .publicKey)
        let tlvs = try OpenPGPApplicationData.parse(inner, part: .publicKey)
        switch attributes {
        case .rsa:
            guard let n = tlvs.value(for: OpenPGP.DO.rsaModulus), let e = tlvs.value(for: OpenPGP.DO.rsaExponent),
                !n.isEmpty, !e.isEmpty
            else { throw .malformed(Malformation(.publicKey, .incomplete)) }
            self = .rsa(modulus: n, exponent: e)
        case .ecc(_, let curve, _):
            guard let point = tlvs.value(for: OpenPGP.DO.ecPoint), !point.isEmpty else {
                throw .malformed(Malformation(.publicKey, .incomplete))
            }
            self = .ecc(curve: curve, point: point)
        }
    }

    /// The key as KeyKit computes with it (checked: a point on its curve); nil for curves KeyKit does not know.
    public func asymmetricKey() throws(OpenPGPError) -> AsymmetricPublicKey? {
        do {
            switch self {
            case .rsa(let n, let e): return try AsymmetricPublicKey(rsaModulus: n, exponent: e)
            case .ecc(let curve, let point):
                switch curve.keyType {
                case .p256?, .p384?, .p521?, .brainpoolP256r1?, .brainpoolP384r1?, .brainpoolP512r1?:
                    return try AsymmetricPublicKey(ecPoint: point, type: curve.keyType ?? .p256)
                case .ed25519?, .x25519?: return try AsymmetricPublicKey(raw: point, type: curve.keyType ?? .ed25519)
                default: return nil
                }
            }
        } catch {
            throw .malformed(Malformation(.publicKey, .notOnCurve))
        }
    }

    /// The public key's TLVs inside 7F49, as a card answers them.
    public var encoded: [UInt8] {
        switch self {
        case .rsa(let n, let e):
            return TLV(
                OpenPGP.DO.publicKey, TLV(OpenPGP.DO.rsaModulus, n).encoded + TLV(OpenPGP.DO.rsaExponent, e).encoded
            )
            .encoded
        case .ecc(_, let point):
            return TLV(OpenPGP.DO.publicKey, TLV(OpenPGP.DO.ecPoint, point).encoded).encoded
        }
    }
}

/// An attestation: the certificate the card made for a slot's key, and the attestation certificate it was checked
/// against.
public struct OpenPGPAttestation: Sendable {
    public let certificate: X509Certificate
    public let attestationCertificate: X509Certificate
    public let publicKey: AsymmetricPublicKey
}
