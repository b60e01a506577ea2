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

        public init(
            algorithm: PIV.Algorithm, pinPolicy: PIV.PINPolicy, touchPolicy: PIV.TouchPolicy,
            origin: PIV.Origin, privateKey: [UInt8]
        ) {
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
                throw DecodingError.dataCorruptedError(
                    forKey: .algorithm, in: c,
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
            try c.encodeHex(privateKey, forKey: .privateKey)
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
                throw DecodingError.dataCorruptedError(
                    forKey: .managementAlgorithm, in: c,
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
        try c.encodeHex(pin, forKey: .pin)
        try c.encodeHex(puk, forKey: .puk)
        try c.encode(pinTries, forKey: .pinTries)
        try c.encode(pinTriesLeft, forKey: .pinTriesLeft)
        try c.encode(pukTries, forKey: .pukTries)
        try c.encode(pukTriesLeft, forKey: .pukTriesLeft)
        try c.encodeHex(managementKey, forKey: .managementKey)
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
        Mirror(
            self,
            children: [
                "algorithm": algorithm, "pinPolicy": pinPolicy, "touchPolicy": touchPolicy,
                "origin": origin,
            ])
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
        Mirror(
            self,
            children: [
                "pinTries": pinTries, "pinTriesLeft": pinTriesLeft, "pukTries": pukTries,
                "pukTriesLeft": pukTriesLeft, "managementAlgorithm": managementAlgorithm as Any,
                "managementTouch": managementTouch, "keys": keys, "objects": objects.keys.map(\.hex),
            ])
    }
}

// MARK: Demo

extension PIVState {
    /// The demo's private key: an EC P-256 scalar derived from a fixed text (the SHA-256 of "ykterm PIV demo
    /// key"), so that its public key is the same everywhere. It protects nothing.
    static let demoScalar = SignatureDigest.sha256.hash(Array("ykterm PIV demo key".utf8))

    /// The demo key as PKCS#8 (with its public key) and its self-signed certificate, CN=ykterm demo, ECDSA with
    /// SHA-256, valid from 2026-11-27 for ten years (issued once with this key by `CertificateIssuer`), kept as
    /// bytes: making them at every start (an OpenSSL key decoder and a signature) was 43% of the instructions of
    /// `ykterm --virtual` up to its first frame. `PIVDemoTests` checks that they are the scalar's key and a
    /// certificate it signed.
    static let demoPKCS8 = try! Hex.decode(
        "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420b7e6318e241939309eec2368"
            + "804757f94c2cb37f441e9019e053f5fbb418f366a14403420004fd07331f3f3f44ba28dc7607fbf06c70d3a295efdaf7"
            + "bdab303e186553c61535fd6ccc4c72ed2b811f4ac9ee57980f05b13031a271b786fb67cc4ee9d012637c")
    static let demoCertificate = try! Hex.decode(
        "308201273081cea00302010202103961d9379876d47e0a2ef33da985687f300a06082a8648ce3d040302301631143012"
            + "06035504030c0b796b7465726d2064656d6f301e170d3236313132373231313930305a170d3336313132373231313930"
            + "305a30163114301206035504030c0b796b7465726d2064656d6f3059301306072a8648ce3d020106082a8648ce3d0301"
            + "0703420004fd07331f3f3f44ba28dc7607fbf06c70d3a295efdaf7bdab303e186553c61535fd6ccc4c72ed2b811f4ac9"
            + "ee57980f05b13031a271b786fb67cc4ee9d012637c300a06082a8648ce3d0403020348003045022059f8d0735a78efc4"
            + "fc811493aaa514974a77b653a77477ac74eeb5f17719e0f6022100d0324441f5b7dae9e5e0011ca49b5bf3fdc39a6330"
            + "f403ec4504429fff3b09c7")

    /// Puts the demo in slot 9A: the EC P-256 key above (imported, PIN once, no touch) and its certificate.
    /// Replaces what 9A held.
    public mutating func installDemo() {
        keys[.authentication] = StoredKey(
            algorithm: .eccP256, pinPolicy: .once, touchPolicy: .never,
            origin: .imported, privateKey: PIVState.demoPKCS8)
        objects[PIV.Slot.authentication.certificateObject] =
            TLV(PIV.Tag.certificate, PIVState.demoCertificate).encoded
            + TLV(PIV.Tag.certificateInfo, [PIV.certificateUncompressed]).encoded
            + TLV(PIV.Tag.errorDetection, []).encoded
    }
}
