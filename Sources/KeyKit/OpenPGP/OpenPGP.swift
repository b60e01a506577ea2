/// The OpenPGP card's numbers (the OpenPGP smart card application 3.4, with the YubiKey's extensions):
/// instructions, data objects, the three passwords, the key slots and their control reference templates, the
/// curves and the touch policies. KeyKit's `OpenPGPSession` sends them and the virtual key's OpenPGP applet
/// answers them, so both read them from here.
public enum OpenPGP {
    /// A fingerprint as GnuPG shows it: 40 hex digits in groups of four; nil when none was written (all zero).
    public static func fingerprintText(_ bytes: [UInt8]) -> String? {
        guard bytes.contains(where: { $0 != 0 }) else { return nil }
        let hex = Hex.encode(bytes, uppercase: true)
        return stride(from: 0, to: hex.count, by: 4).map { i in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return String(hex[start..<hex.index(start, offsetBy: min(4, hex.count - i))])
        }.joined(separator: " ")
    }

    /// Instruction bytes. 0xF1 and 0xF2 are the YubiKey's.
    public enum Ins {
        public static let verify: UInt8 = 0x20
        public static let changeReference: UInt8 = 0x24
        public static let resetRetryCounter: UInt8 = 0x2C
        public static let performSecurityOperation: UInt8 = 0x2A
        public static let activate: UInt8 = 0x44
        public static let generateAsymmetric: UInt8 = 0x47
        public static let getChallenge: UInt8 = 0x84
        public static let internalAuthenticate: UInt8 = 0x88
        public static let selectData: UInt8 = 0xA5
        public static let getData: UInt8 = 0xCA
        public static let putData: UInt8 = 0xDA
        public static let putDataOdd: UInt8 = 0xDB
        public static let terminate: UInt8 = 0xE6
        public static let getVersion: UInt8 = 0xF1
        public static let setPINRetries: UInt8 = 0xF2
        /// The YubiKey's GET ATTESTATION (class 80, firmware 5.2).
        public static let getAttestation: UInt8 = 0xFB
    }

    /// P1 P2 of PERFORM SECURITY OPERATION: COMPUTE DIGITAL SIGNATURE and DECIPHER.
    public static let computeSignature: UInt16 = 0x9E9A
    public static let decipher: UInt16 = 0x8086

    /// P1 of GENERATE ASYMMETRIC KEY PAIR: make a new key, or read the public key of the one there.
    public static let generateKey: UInt8 = 0x80
    public static let readPublicKey: UInt8 = 0x81

    /// Data object tags (GET DATA and PUT DATA take them as P1 P2).
    public enum DO {
        public static let privateUse1: UInt32 = 0x0101
        public static let privateUse2: UInt32 = 0x0102
        public static let privateUse3: UInt32 = 0x0103
        public static let privateUse4: UInt32 = 0x0104
        public static let aid: UInt32 = 0x4F
        public static let name: UInt32 = 0x5B
        public static let loginData: UInt32 = 0x5E
        public static let language: UInt32 = 0x5F2D
        public static let sex: UInt32 = 0x5F35
        public static let url: UInt32 = 0x5F50
        /// The YubiKey's attestation certificate (the certificate of the ATT slot's key).
        public static let attestationCertificate: UInt32 = 0xFC
        public static let historicalBytes: UInt32 = 0x5F52
        public static let cardholderRelatedData: UInt32 = 0x65
        public static let applicationRelatedData: UInt32 = 0x6E
        public static let discretionaryData: UInt32 = 0x73
        public static let securitySupportTemplate: UInt32 = 0x7A
        public static let signatureCounter: UInt32 = 0x93
        public static let extendedCapabilities: UInt32 = 0xC0
        public static let pwStatus: UInt32 = 0xC4
        public static let fingerprints: UInt32 = 0xC5
        public static let caFingerprints: UInt32 = 0xC6
        public static let generationTimes: UInt32 = 0xCD
        public static let resettingCode: UInt32 = 0xD3
        public static let keyInformation: UInt32 = 0xDE
        public static let kdf: UInt32 = 0xF9
        public static let algorithmInformation: UInt32 = 0xFA
        public static let cardholderCertificate: UInt32 = 0x7F21
        public static let extendedLengthInformation: UInt32 = 0x7F66
        public static let generalFeatureManagement: UInt32 = 0x7F74
        public static let publicKey: UInt32 = 0x7F49
        /// Inside a public key: RSA modulus and exponent, an EC point (or an Ed25519/X25519 key).
        public static let rsaModulus: UInt32 = 0x81
        public static let rsaExponent: UInt32 = 0x82
        public static let ecPoint: UInt32 = 0x86
        /// DECIPHER's ECDH template: A6 { 7F49 { 86 point } }.
        public static let cipherTemplate: UInt32 = 0xA6
    }

    /// The three passwords, by their reference (P2 of VERIFY, CHANGE REFERENCE DATA, RESET RETRY COUNTER).
    public enum Password: UInt8, Sendable, CaseIterable, Codable {
        /// PW1, the user PIN.
        case user = 0x81
        /// The resetting code, which sets a new user PIN.
        case reset = 0x82
        /// PW3, the admin PIN.
        case admin = 0x83

        /// The shortest value the password can have.
        public var minimumLength: Int { self == .user ? 6 : 8 }

        /// The name the string tables use (`openpgp.password.<name>`).
        public var textName: String {
            switch self {
            case .user: return "pin"
            case .reset: return "reset-code"
            case .admin: return "admin-pin"
            }
        }
    }

    /// A key slot: signature, decryption, authentication, and the YubiKey's attestation key.
    public enum KeySlot: UInt8, Sendable, CaseIterable, Codable, Comparable {
        case signature = 0x01
        case decryption = 0x02
        case authentication = 0x03
        case attestation = 0x81

        /// The short name ykman and the command line use: sig, dec, aut, att.
        public var name: String {
            switch self {
            case .signature: return "sig"
            case .decryption: return "dec"
            case .authentication: return "aut"
            case .attestation: return "att"
            }
        }

        public init?(name: String) {
            guard let slot = KeySlot.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
            self = slot
        }

        /// Its place in the fingerprint and generation time lists (C5, CD).
        public var index: Int {
            switch self {
            case .signature: return 0
            case .decryption: return 1
            case .authentication: return 2
            case .attestation: return 3
            }
        }

        /// The control reference template that names the slot in GENERATE ASYMMETRIC KEY PAIR.
        public var controlReference: [UInt8] {
            switch self {
            case .signature: return [0xB6, 0x00]
            case .decryption: return [0xB8, 0x00]
            case .authentication: return [0xA4, 0x00]
            case .attestation: return [0xB6, 0x03, 0x84, 0x01, 0x81]
            }
        }

        /// The slot a control reference template names; nil for none.
        public init?(controlReference bytes: [UInt8]) {
            guard let slot = KeySlot.allCases.first(where: { $0.controlReference == bytes }) else { return nil }
            self = slot
        }

        public var algorithmAttributesTag: UInt32 {
            switch self {
            case .signature: return 0xC1
            case .decryption: return 0xC2
            case .authentication: return 0xC3
            case .attestation: return 0xDA
            }
        }

        public var fingerprintTag: UInt32 {
            switch self {
            case .signature: return 0xC7
            case .decryption: return 0xC8
            case .authentication: return 0xC9
            case .attestation: return 0xDB
            }
        }

        public var generationTimeTag: UInt32 {
            switch self {
            case .signature: return 0xCE
            case .decryption: return 0xCF
            case .authentication: return 0xD0
            case .attestation: return 0xDD
            }
        }

        /// The YubiKey's user interaction flag (touch policy) object of the slot.
        public var touchPolicyTag: UInt32 {
            switch self {
            case .signature: return 0xD6
            case .decryption: return 0xD7
            case .authentication: return 0xD8
            case .attestation: return 0xD9
            }
        }

        public static func < (a: KeySlot, b: KeySlot) -> Bool { a.index < b.index }
    }

    /// The YubiKey's touch policy of a slot (the first byte of its UIF object).
    public enum TouchPolicy: UInt8, Sendable, CaseIterable, Codable {
        case off = 0x00
        case on = 0x01
        /// On, and only replacing the key turns it off.
        case fixed = 0x02
        /// A touch counts for 15 seconds.
        case cached = 0x03
        case cachedFixed = 0x04

        /// The name ykman and the command line use: off, on, fixed, cached, cached-fixed.
        public var name: String {
            switch self {
            case .off: return "off"
            case .on: return "on"
            case .fixed: return "fixed"
            case .cached: return "cached"
            case .cachedFixed: return "cached-fixed"
            }
        }

        public init?(name: String) {
            guard let p = TouchPolicy.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
            self = p
        }

        /// Fixed policies cannot be changed again while the key stays.
        public var isFixed: Bool { self == .fixed || self == .cachedFixed }
        public var isCached: Bool { self == .cached || self == .cachedFixed }
    }

    /// Where a slot's key came from (key information, DE).
    public enum KeyStatus: UInt8, Sendable, Codable {
        case none = 0x00
        case generated = 0x01
        case imported = 0x02
    }

    /// The curves of ECC algorithm attributes, by their OID.
    public enum Curve: String, Sendable, CaseIterable, Codable {
        case secp256r1, secp384r1, secp521r1, secp256k1
        case brainpoolP256r1, brainpoolP384r1, brainpoolP512r1
        case ed25519, x25519

        /// The OID's DER content (without tag and length), as algorithm attributes carry it.
        public var oid: [UInt8] {
            switch self {
            case .secp256r1: return [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
            case .secp384r1: return [0x2B, 0x81, 0x04, 0x00, 0x22]
            case .secp521r1: return [0x2B, 0x81, 0x04, 0x00, 0x23]
            case .secp256k1: return [0x2B, 0x81, 0x04, 0x00, 0x0A]
            case .brainpoolP256r1: return [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07]
            case .brainpoolP384r1: return [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0B]
            case .brainpoolP512r1: return [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0D]
            case .ed25519: return [0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01]
            case .x25519: return [0x2B, 0x06, 0x01, 0x04, 0x01, 0x97, 0x55, 0x01, 0x05, 0x01]
            }
        }

        public init?(oid: [UInt8]) {
            guard let c = Curve.allCases.first(where: { $0.oid == oid }) else { return nil }
            self = c
        }

        /// The name ykman gives the curve ("SECP256R1", "Ed25519", "X25519").
        public var displayName: String {
            switch self {
            case .ed25519: return "Ed25519"
            case .x25519: return "X25519"
            case .brainpoolP256r1: return "BrainpoolP256R1"
            case .brainpoolP384r1: return "BrainpoolP384R1"
            case .brainpoolP512r1: return "BrainpoolP512R1"
            default: return rawValue.uppercased()
            }
        }

        /// The curve as KeyKit's key types know it; nil for the curves KeyKit does not compute with.
        public var keyType: AsymmetricKeyType? {
            switch self {
            case .secp256r1: return .p256
            case .secp384r1: return .p384
            case .secp521r1: return .p521
            case .brainpoolP256r1: return .brainpoolP256r1
            case .brainpoolP384r1: return .brainpoolP384r1
            case .brainpoolP512r1: return .brainpoolP512r1
            case .ed25519: return .ed25519
            case .x25519: return .x25519
            default: return nil
            }
        }
    }

    /// Algorithm identifiers of algorithm attributes.
    public enum AlgorithmID {
        public static let rsa: UInt8 = 0x01
        public static let ecdh: UInt8 = 0x12
        public static let ecdsa: UInt8 = 0x13
        public static let eddsa: UInt8 = 0x16
    }

    /// The defaults of a new or reset card.
    public static let defaultUserPIN: [UInt8] = Array("123456".utf8)
    public static let defaultAdminPIN: [UInt8] = Array("12345678".utf8)
    public static let defaultRetries = 3
    /// The YubiKey's longest password.
    public static let maximumPINLength = 127
    /// The version of the specification a YubiKey 5 implements (in its AID).
    public static let specificationVersion = (major: 3, minor: 4)
    /// Yubico's manufacturer number in the AID.
    public static let yubicoManufacturer: UInt16 = 0x0006
    /// The firmware from which a YubiKey has ECC keys, the attestation key and cached touch policies.
    public static let version52 = Version(5, 2, 0)
}
