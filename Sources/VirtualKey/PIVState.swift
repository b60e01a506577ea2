import KeyKit

/// What the virtual key's PIV application remembers: PIN, PUK and their tries, the management key, the keys in
/// the slots (the attestation key in F9 too) and the data objects (certificates, CHUID, CCC, ...).
///
/// In the state file byte strings are lower-case hex; slots and objects are keyed by their hex number ("9a",
/// "5fc105"). Private keys are DER PKCS#8: this is a software key and its state file is its storage.
public struct PIVState: Codable, Sendable, Equatable {
    /// A key in a slot, with the policies it was made with and where it came from.
    public struct StoredKey: Codable, Sendable, Equatable {
        public var algorithm: PIV.Algorithm
        public var pinPolicy: PIV.PINPolicy
        public var touchPolicy: PIV.TouchPolicy
        public var origin: PIV.Origin
        /// DER PKCS#8.
        public var privateKey: [UInt8]

        public init(algorithm: PIV.Algorithm, pinPolicy: PIV.PINPolicy, touchPolicy: PIV.TouchPolicy,
                    origin: PIV.Origin, privateKey: [UInt8]) {
            self.algorithm = algorithm
            self.pinPolicy = pinPolicy
            self.touchPolicy = touchPolicy
            self.origin = origin
            self.privateKey = privateKey
        }

        private enum CodingKeys: String, CodingKey {
            case algorithm, pinPolicy, touchPolicy, origin, privateKey
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let name = try c.decode(String.self, forKey: .algorithm)
            guard let algorithm = PIV.Algorithm(name: name), !algorithm.isManagementKey else {
                throw DecodingError.dataCorruptedError(forKey: .algorithm, in: c,
                                                       debugDescription: "not a PIV key algorithm: \(name)")
            }
            self.algorithm = algorithm
            pinPolicy = try decodeRaw(c, .pinPolicy)
            touchPolicy = try decodeRaw(c, .touchPolicy)
            origin = try decodeRaw(c, .origin)
            privateKey = try decodeHex(c, .privateKey)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(algorithm.description, forKey: .algorithm)
            try c.encode(pinPolicy.rawValue, forKey: .pinPolicy)
            try c.encode(touchPolicy.rawValue, forKey: .touchPolicy)
            try c.encode(origin.rawValue, forKey: .origin)
            try c.encode(privateKey.hex, forKey: .privateKey)
        }
    }

    /// PIN and PUK as VERIFY compares them: padded with FF to eight bytes.
    public var pin: [UInt8]
    public var puk: [UInt8]
    public var pinTries: Int
    public var pinTriesLeft: Int
    public var pukTries: Int
    public var pukTriesLeft: Int
    /// The management key; nil for the default key (010203...08).
    public var managementKey: [UInt8]?
    /// The management key's algorithm; nil for the firmware's default (3DES before 5.7, AES-192 from 5.7).
    public var managementAlgorithm: PIV.Algorithm?
    /// Whether authenticating with the management key waits for a touch.
    public var managementTouch: Bool
    /// Slot → key, the attestation key (F9) included.
    public var keys: [PIV.Slot: StoredKey]
    /// Object ID → the object's value (what PUT DATA gave under tag 53).
    public var objects: [[UInt8]: [UInt8]]

    public init() {
        pin = PIVState.padded(PIV.defaultPIN)
        puk = PIVState.padded(PIV.defaultPUK)
        pinTries = PIV.defaultRetries
        pinTriesLeft = PIV.defaultRetries
        pukTries = PIV.defaultRetries
        pukTriesLeft = PIV.defaultRetries
        managementKey = nil
        managementAlgorithm = nil
        managementTouch = false
        keys = [:]
        objects = [:]
    }

    /// `value` padded with FF to PIV's eight bytes.
    static func padded(_ value: [UInt8]) -> [UInt8] {
        value + [UInt8](repeating: PIV.pinPadding, count: max(0, PIV.pinLength - value.count))
    }

    /// The management key's algorithm on firmware `version`.
    func managementAlgorithm(on version: Version) -> PIV.Algorithm {
        managementAlgorithm ?? (version >= PIV.version57 ? .aes192 : .tripleDES)
    }

    /// The management key's bytes.
    var managementKeyBytes: [UInt8] { managementKey ?? PIV.defaultManagementKey }

    var pinIsDefault: Bool { pin == PIVState.padded(PIV.defaultPIN) }
    var pukIsDefault: Bool { puk == PIVState.padded(PIV.defaultPUK) }
    var managementKeyIsDefault: Bool { managementKeyBytes == PIV.defaultManagementKey }

    /// The state after RESET: everything back to the defaults, but the attestation key and its certificate stay
    /// (a YubiKey keeps them through a PIV reset).
    func afterReset() -> PIVState {
        var fresh = PIVState()
        fresh.keys[.attestation] = keys[.attestation]
        fresh.objects[PIV.ObjectID.attestationCertificate] = objects[PIV.ObjectID.attestationCertificate]
        return fresh
    }

    private enum CodingKeys: String, CodingKey {
        case pin, puk, pinTries, pinTriesLeft, pukTries, pukTriesLeft
        case managementKey, managementAlgorithm, managementTouch, keys, objects
    }

    public init(from decoder: any Decoder) throws {
        self.init()
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if c.contains(.pin) { pin = try decodeHex(c, .pin) }
        if c.contains(.puk) { puk = try decodeHex(c, .puk) }
        pinTries = try c.decodeIfPresent(Int.self, forKey: .pinTries) ?? pinTries
        pinTriesLeft = try c.decodeIfPresent(Int.self, forKey: .pinTriesLeft) ?? pinTriesLeft
        pukTries = try c.decodeIfPresent(Int.self, forKey: .pukTries) ?? pukTries
        pukTriesLeft = try c.decodeIfPresent(Int.self, forKey: .pukTriesLeft) ?? pukTriesLeft
        if let hex = try c.decodeIfPresent(String.self, forKey: .managementKey) {
            managementKey = try Hex.decode(hex)
        }
        if let name = try c.decodeIfPresent(String.self, forKey: .managementAlgorithm) {
            guard let algorithm = PIV.Algorithm(name: name), algorithm.isManagementKey else {
                throw DecodingError.dataCorruptedError(forKey: .managementAlgorithm, in: c,
                                                       debugDescription: "not a management key algorithm: \(name)")
            }
            managementAlgorithm = algorithm
        }
        managementTouch = try c.decodeIfPresent(Bool.self, forKey: .managementTouch) ?? false
        for (name, key) in try c.decodeIfPresent([String: StoredKey].self, forKey: .keys) ?? [:] {
            guard let slot = PIV.Slot(name: name) else {
                throw DecodingError.dataCorruptedError(forKey: .keys, in: c, debugDescription: "not a slot: \(name)")
            }
            keys[slot] = key
        }
        for (id, value) in try c.decodeIfPresent([String: String].self, forKey: .objects) ?? [:] {
            objects[try Hex.decode(id)] = try Hex.decode(value)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(pin.hex, forKey: .pin)
        try c.encode(puk.hex, forKey: .puk)
        try c.encode(pinTries, forKey: .pinTries)
        try c.encode(pinTriesLeft, forKey: .pinTriesLeft)
        try c.encode(pukTries, forKey: .pukTries)
        try c.encode(pukTriesLeft, forKey: .pukTriesLeft)
        try c.encodeIfPresent(managementKey?.hex, forKey: .managementKey)
        try c.encodeIfPresent(managementAlgorithm?.description, forKey: .managementAlgorithm)
        try c.encode(managementTouch, forKey: .managementTouch)
        let namedKeys = Dictionary(uniqueKeysWithValues: keys.map { (Hex.encode([$0.key.rawValue]), $0.value) })
        try c.encode(namedKeys, forKey: .keys)
        let namedObjects = Dictionary(uniqueKeysWithValues: objects.map { ($0.key.hex, $0.value.hex) })
        try c.encode(namedObjects, forKey: .objects)
    }
}

// Printing or dumping the state (a failed test's message, a debugger) shows no PIN, PUK, management key or
// private key.
extension PIVState.StoredKey: CustomStringConvertible, CustomReflectable {
    public var description: String {
        "StoredKey(\(algorithm), PIN \(pinPolicy), touch \(touchPolicy), \(origin), private key hidden)"
    }
    public var customMirror: Mirror {
        Mirror(self, children: ["algorithm": algorithm, "pinPolicy": pinPolicy, "touchPolicy": touchPolicy,
                                "origin": origin])
    }
}

extension PIVState: CustomStringConvertible, CustomReflectable {
    public var description: String {
        let slots = keys.keys.sorted().map { "\($0): \(keys[$0]!)" }.joined(separator: ", ")
        let management = (managementAlgorithm.map(\.description) ?? "default") + (managementTouch ? " touch" : "")
        return "PIVState(PIN tries \(pinTriesLeft)/\(pinTries), PUK tries \(pukTriesLeft)/\(pukTries), "
            + "management key \(management), "
            + "keys [\(slots)], objects \(objects.keys.map(\.hex).sorted()); secrets hidden)"
    }
    public var customMirror: Mirror {
        Mirror(self, children: ["pinTries": pinTries, "pinTriesLeft": pinTriesLeft, "pukTries": pukTries,
                                "pukTriesLeft": pukTriesLeft, "managementAlgorithm": managementAlgorithm as Any,
                                "managementTouch": managementTouch, "keys": keys, "objects": objects.keys.map(\.hex)])
    }
}

// MARK: Demo

extension PIVState {
    /// The demo's private key: an EC P-256 scalar derived from a fixed text, so that its public key is the same
    /// everywhere. It protects nothing.
    static let demoScalar = SignatureDigest.sha256.hash(Array("ykterm PIV demo key".utf8))

    /// Puts the demo in slot 9A: the EC P-256 key above (imported, PIN once, no touch) and a self-signed
    /// certificate for it, CN=ykterm demo, valid for ten years from now. Replaces what 9A held.
    public mutating func installDemo() {
        guard let key = try? AsymmetricPrivateKey.ec(.p256, scalar: PIVState.demoScalar),
              let certificate = try? CertificateIssuer.issue(
                subject: [.init("CN", "ykterm demo")], publicKey: key.publicKey,
                serial: PIVApplet.positiveInteger(Crypto.random(16)), validity: .days(3653), signingKey: key)
        else { return }
        keys[.authentication] = StoredKey(algorithm: .eccP256, pinPolicy: .once, touchPolicy: .never,
                                          origin: .imported, privateKey: key.pkcs8)
        objects[PIV.Slot.authentication.certificateObject] = TLV(PIV.Tag.certificate, certificate.der).encoded
            + TLV(PIV.Tag.certificateInfo, [PIV.certificateUncompressed]).encoded
            + TLV(PIV.Tag.errorDetection, []).encoded
    }
}

/// A PIV enumeration stored as its raw byte.
private func decodeRaw<K: CodingKey, T: RawRepresentable>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> T
    where T.RawValue == UInt8 {
    let raw = try c.decode(UInt8.self, forKey: key)
    guard let value = T(rawValue: raw) else {
        throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "unknown value \(raw)")
    }
    return value
}
