import KeyKit

/// What the virtual key's OpenPGP application remembers: the three passwords and their tries, the slots' keys
/// with their attributes, fingerprints, generation times and touch policies, the cardholder's data objects, the
/// signature counter, and whether the application is terminated.
///
/// In the state file byte strings are lower-case hex, slots are keyed by their names ("sig", "dec", "aut",
/// "att") and data objects by their hex tag ("5b", "5f50"). Private keys are DER PKCS#8 and the passwords are
/// stored as they are: this is a software key and its state file is its storage.
public struct OpenPGPState: Codable, Sendable, Equatable {
    /// One key slot.
    public struct Slot: Codable, Sendable, Equatable {
        /// The algorithm attributes as the card answers them (C1, C2, C3, DA).
        public var attributes: [UInt8]
        /// DER PKCS#8; nil while the slot is empty.
        public var privateKey: [UInt8]?
        public var status: OpenPGP.KeyStatus
        /// 20 bytes, all zero until the host writes one.
        public var fingerprint: [UInt8]
        public var caFingerprint: [UInt8]
        public var generationTime: [UInt8]
        public var touchPolicy: OpenPGP.TouchPolicy

        public init(attributes: OpenPGPAlgorithmAttributes = .rsa(bits: 2048)) {
            self.attributes = attributes.encoded
            privateKey = nil
            status = .none
            fingerprint = [UInt8](repeating: 0, count: 20)
            caFingerprint = [UInt8](repeating: 0, count: 20)
            generationTime = [UInt8](repeating: 0, count: 4)
            touchPolicy = .off
        }

        private enum CodingKeys: String, CodingKey {
            case attributes, privateKey, status, fingerprint, caFingerprint, generationTime, touchPolicy
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            attributes = try decodeHex(c, .attributes)
            privateKey = try c.contains(.privateKey) ? decodeHex(c, .privateKey) : nil
            status = try decodeRaw(c, .status)
            fingerprint = try decodeHex(c, .fingerprint)
            caFingerprint = try decodeHex(c, .caFingerprint)
            generationTime = try decodeHex(c, .generationTime)
            touchPolicy = try decodeRaw(c, .touchPolicy)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeHex(attributes, forKey: .attributes)
            try c.encodeHex(privateKey, forKey: .privateKey)
            try c.encode(status.rawValue, forKey: .status)
            try c.encodeHex(fingerprint, forKey: .fingerprint)
            try c.encodeHex(caFingerprint, forKey: .caFingerprint)
            try c.encodeHex(generationTime, forKey: .generationTime)
            try c.encode(touchPolicy.rawValue, forKey: .touchPolicy)
        }
    }

    public var userPIN: [UInt8]
    public var adminPIN: [UInt8]
    /// nil while no reset code is set.
    public var resetCode: [UInt8]?
    public var userTries: Int
    public var resetTries: Int
    public var adminTries: Int
    public var userTriesLeft: Int
    public var resetTriesLeft: Int
    public var adminTriesLeft: Int
    /// One VERIFY allows several signatures (PW status byte 1), or one.
    public var pinValidForSeveralSignatures: Bool
    public var signatureCounter: Int
    public var slots: [OpenPGP.KeySlot: Slot]
    /// Data objects the host writes and reads back as they are: name, language, sex, URL, login data, the
    /// private use objects and the slots' certificates (7F21 under the slot's name).
    public var objects: [UInt32: [UInt8]]
    /// TERMINATE was sent: only ACTIVATE is answered until it comes.
    public var terminated: Bool

    public init() {
        userPIN = OpenPGP.defaultUserPIN
        adminPIN = OpenPGP.defaultAdminPIN
        resetCode = nil
        userTries = OpenPGP.defaultRetries
        resetTries = OpenPGP.defaultRetries
        adminTries = OpenPGP.defaultRetries
        userTriesLeft = OpenPGP.defaultRetries
        resetTriesLeft = 0
        adminTriesLeft = OpenPGP.defaultRetries
        pinValidForSeveralSignatures = false
        signatureCounter = 0
        slots = [:]
        for slot in OpenPGP.KeySlot.allCases { slots[slot] = Slot() }
        objects = [:]
        terminated = false
    }

    func slot(_ slot: OpenPGP.KeySlot) -> Slot { slots[slot] ?? Slot() }

    /// The state after a reset (TERMINATE, then ACTIVATE): everything back to the defaults, but the attestation
    /// key and its certificate stay (the ones a YubiKey leaves the factory with are not made again).
    func afterReset() -> OpenPGPState {
        var fresh = OpenPGPState()
        fresh.slots[.attestation] = slots[.attestation]
        let certificate = OpenPGPApplet.certificateKey(.attestation)
        fresh.objects[certificate] = objects[certificate]
        return fresh
    }

    private enum CodingKeys: String, CodingKey {
        case userPIN, adminPIN, resetCode, userTries, resetTries, adminTries, userTriesLeft, resetTriesLeft
        case adminTriesLeft, pinValidForSeveralSignatures, signatureCounter, slots, objects, terminated
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        userPIN = try decodeHex(c, .userPIN)
        adminPIN = try decodeHex(c, .adminPIN)
        resetCode = try c.contains(.resetCode) ? decodeHex(c, .resetCode) : nil
        userTries = try c.decode(Int.self, forKey: .userTries)
        resetTries = try c.decode(Int.self, forKey: .resetTries)
        adminTries = try c.decode(Int.self, forKey: .adminTries)
        userTriesLeft = try c.decode(Int.self, forKey: .userTriesLeft)
        resetTriesLeft = try c.decode(Int.self, forKey: .resetTriesLeft)
        adminTriesLeft = try c.decode(Int.self, forKey: .adminTriesLeft)
        pinValidForSeveralSignatures = try c.decode(Bool.self, forKey: .pinValidForSeveralSignatures)
        signatureCounter = try c.decode(Int.self, forKey: .signatureCounter)
        terminated = try c.decodeIfPresent(Bool.self, forKey: .terminated) ?? false
        let named = try c.decode([String: Slot].self, forKey: .slots)
        slots = [:]
        for (name, value) in named {
            guard let slot = OpenPGP.KeySlot(name: name) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .slots, in: c, debugDescription: "not an OpenPGP key slot: \(name)")
            }
            slots[slot] = value
        }
        for slot in OpenPGP.KeySlot.allCases where slots[slot] == nil { slots[slot] = Slot() }
        let hexObjects = try c.decode([String: String].self, forKey: .objects)
        objects = [:]
        for (tag, value) in hexObjects {
            guard let t = UInt32(tag, radix: 16), let bytes = try? Hex.decode(value) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .objects, in: c, debugDescription: "not a data object: \(tag)")
            }
            objects[t] = bytes
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeHex(userPIN, forKey: .userPIN)
        try c.encodeHex(adminPIN, forKey: .adminPIN)
        try c.encodeHex(resetCode, forKey: .resetCode)
        try c.encode(userTries, forKey: .userTries)
        try c.encode(resetTries, forKey: .resetTries)
        try c.encode(adminTries, forKey: .adminTries)
        try c.encode(userTriesLeft, forKey: .userTriesLeft)
        try c.encode(resetTriesLeft, forKey: .resetTriesLeft)
        try c.encode(adminTriesLeft, forKey: .adminTriesLeft)
        try c.encode(pinValidForSeveralSignatures, forKey: .pinValidForSeveralSignatures)
        try c.encode(signatureCounter, forKey: .signatureCounter)
        try c.encode(terminated, forKey: .terminated)
        try c.encode(Dictionary(uniqueKeysWithValues: slots.map { ($0.key.name, $0.value) }), forKey: .slots)
        try c.encode(
            Dictionary(uniqueKeysWithValues: objects.map { (String($0.key, radix: 16), $0.value.hex) }),
            forKey: .objects)
    }
}
