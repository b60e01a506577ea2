/// PIV's numbers (NIST SP 800-73-4 and the YubiKey's extensions to it): instructions, key references, slots,
/// algorithms, policies, data object identifiers and the tags of their templates. KeyKit's `PIVSession` sends
/// them and the virtual key's PIV applet answers them, so both read them from here.
public enum PIV {
    /// Instruction bytes. 0x20-0x87 and 0xCB/0xDB are SP 800-73-4's; 0xF6-0xFF are the YubiKey's.
    public enum Ins {
        public static let verify: UInt8 = 0x20
        public static let changeReference: UInt8 = 0x24
        public static let resetRetryCounter: UInt8 = 0x2C
        public static let generateAsymmetric: UInt8 = 0x47
        public static let authenticate: UInt8 = 0x87
        public static let getData: UInt8 = 0xCB
        public static let putData: UInt8 = 0xDB
        public static let moveKey: UInt8 = 0xF6
        public static let getMetadata: UInt8 = 0xF7
        public static let getSerial: UInt8 = 0xF8
        public static let attest: UInt8 = 0xF9
        public static let setPINRetries: UInt8 = 0xFA
        public static let reset: UInt8 = 0xFB
        public static let getVersion: UInt8 = 0xFD
        public static let importKey: UInt8 = 0xFE
        public static let setManagementKey: UInt8 = 0xFF
    }

    /// Key references of the secrets that are not slots (P2 of VERIFY, CHANGE REFERENCE, GET METADATA).
    public enum Reference {
        public static let pin: UInt8 = 0x80
        public static let puk: UInt8 = 0x81
        public static let managementKey: UInt8 = 0x9B
        /// On-card biometric comparison (a YubiKey Bio's); other keys answer 6A88 for it.
        public static let biometrics: UInt8 = 0x96
    }

    /// A key slot: its key reference is the raw value.
    public struct Slot: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        public static let authentication = Slot(rawValue: 0x9A)
        public static let signature = Slot(rawValue: 0x9C)
        public static let keyManagement = Slot(rawValue: 0x9D)
        public static let cardAuthentication = Slot(rawValue: 0x9E)
        /// The slot of the key that signs attestations (its certificate is the attestation certificate).
        public static let attestation = Slot(rawValue: 0xF9)
        /// The twenty retired key management slots, 82 to 95.
        public static let retired: [Slot] = (0x82...0x95).map { Slot(rawValue: UInt8($0)) }

        /// The slots that hold a key and a certificate, in the order keys list them: 9A, 9C, 9D, 9E, 82-95.
        public static let all: [Slot] = [.authentication, .signature, .keyManagement, .cardAuthentication] + retired

        /// A slot named as users write it: "9a", "9C", "0x82"; the attestation slot "f9" too.
        public init?(name: String) {
            var text = name.lowercased()
            if text.hasPrefix("0x") { text.removeFirst(2) }
            guard text.count == 2, let value = UInt8(text, radix: 16),
                Slot.all.contains(Slot(rawValue: value)) || value == Slot.attestation.rawValue
            else { return nil }
            self.init(rawValue: value)
        }

        /// The slot's number as ykman and the YubiKey documentation write it: "9A", "82".
        public var description: String {
            let hex = String(rawValue, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }

        /// The object that holds the slot's certificate (SP 800-73-4 part 1, table 3).
        public var certificateObject: [UInt8] {
            switch self {
            case .authentication: return ObjectID.authenticationCertificate
            case .signature: return ObjectID.signatureCertificate
            case .keyManagement: return ObjectID.keyManagementCertificate
            case .cardAuthentication: return ObjectID.cardAuthenticationCertificate
            case .attestation: return ObjectID.attestationCertificate
            default:
                // Retired slot 82 is object 5FC10D, and so on to 95 at 5FC120.
                return [0x5F, 0xC1, 0x0D + (rawValue &- 0x82)]
            }
        }

        public static func < (a: Slot, b: Slot) -> Bool {
            let order = Slot.all + [.attestation]
            return (order.firstIndex(of: a) ?? Int(a.rawValue)) < (order.firstIndex(of: b) ?? Int(b.rawValue))
        }
    }

    /// Algorithm identifiers (SP 800-78-4 table 6-2, and the YubiKey's for Ed25519 and X25519).
    public enum Algorithm: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        case tripleDES = 0x03
        case aes128 = 0x08
        case aes192 = 0x0A
        case aes256 = 0x0C
        case rsa1024 = 0x06
        case rsa2048 = 0x07
        case rsa3072 = 0x05
        case rsa4096 = 0x16
        case eccP256 = 0x11
        case eccP384 = 0x14
        case ed25519 = 0xE0
        case x25519 = 0xE1

        /// The name ykman gives the algorithm ("ECCP256", "RSA2048", "TDES", "AES192").
        public var description: String {
            switch self {
            case .tripleDES: return "TDES"
            case .aes128: return "AES128"
            case .aes192: return "AES192"
            case .aes256: return "AES256"
            case .rsa1024: return "RSA1024"
            case .rsa2048: return "RSA2048"
            case .rsa3072: return "RSA3072"
            case .rsa4096: return "RSA4096"
            case .eccP256: return "ECCP256"
            case .eccP384: return "ECCP384"
            case .ed25519: return "ED25519"
            case .x25519: return "X25519"
            }
        }

        /// Looks an algorithm up by its name, ignoring case ("eccp256", "rsa2048", "aes192").
        public init?(name: String) {
            guard let found = Algorithm.allCases.first(where: { $0.description.lowercased() == name.lowercased() })
            else { return nil }
            self = found
        }

        /// Whether this is a management key algorithm (a block cipher) rather than a slot key's.
        public var isManagementKey: Bool { blockSize != nil }

        /// The block size of a management key algorithm: the length of its authentication challenges.
        public var blockSize: Int? {
            switch self {
            case .tripleDES: return 8
            case .aes128, .aes192, .aes256: return 16
            default: return nil
            }
        }

        /// The length of a management key of this algorithm, in bytes.
        public var keyLength: Int? {
            switch self {
            case .tripleDES, .aes192: return 24
            case .aes128: return 16
            case .aes256: return 32
            default: return nil
            }
        }

        /// The modulus length in bytes of an RSA algorithm.
        public var rsaModulusLength: Int? {
            switch self {
            case .rsa1024: return 128
            case .rsa2048: return 256
            case .rsa3072: return 384
            case .rsa4096: return 512
            default: return nil
            }
        }

        /// The field length in bytes of an elliptic curve algorithm (Ed25519 and X25519 too).
        public var curveLength: Int? {
            switch self {
            case .eccP256, .ed25519, .x25519: return 32
            case .eccP384: return 48
            default: return nil
            }
        }
    }

    /// When a slot's key asks for the PIN (the first byte of tag AA, and of metadata's policy).
    public enum PINPolicy: UInt8, Sendable, CaseIterable {
        case `default` = 0x00
        case never = 0x01
        case once = 0x02
        case always = 0x03
        case matchOnce = 0x04
        case matchAlways = 0x05
    }

    /// When a slot's key asks for a touch (tag AB, and the second byte of metadata's policy).
    public enum TouchPolicy: UInt8, Sendable, CaseIterable {
        case `default` = 0x00
        case never = 0x01
        case always = 0x02
        /// A touch counts for 15 seconds.
        case cached = 0x03
    }

    /// Where a slot's key came from (metadata tag 03).
    public enum Origin: UInt8, Sendable {
        case generated = 0x01
        case imported = 0x02
    }

    /// Data object identifiers (SP 800-73-4 part 1, table 3, and the YubiKey's attestation certificate).
    public enum ObjectID {
        public static let cardCapabilityContainer: [UInt8] = [0x5F, 0xC1, 0x07]
        public static let chuid: [UInt8] = [0x5F, 0xC1, 0x02]
        public static let authenticationCertificate: [UInt8] = [0x5F, 0xC1, 0x05]
        public static let signatureCertificate: [UInt8] = [0x5F, 0xC1, 0x0A]
        public static let keyManagementCertificate: [UInt8] = [0x5F, 0xC1, 0x0B]
        public static let cardAuthenticationCertificate: [UInt8] = [0x5F, 0xC1, 0x01]
        public static let fingerprints: [UInt8] = [0x5F, 0xC1, 0x03]
        public static let securityObject: [UInt8] = [0x5F, 0xC1, 0x06]
        public static let facialImage: [UInt8] = [0x5F, 0xC1, 0x08]
        public static let printedInformation: [UInt8] = [0x5F, 0xC1, 0x09]
        public static let keyHistory: [UInt8] = [0x5F, 0xC1, 0x0C]
        public static let iris: [UInt8] = [0x5F, 0xC1, 0x21]
        public static let discovery: [UInt8] = [0x7E]
        /// The YubiKey's attestation certificate (slot F9's).
        public static let attestationCertificate: [UInt8] = [0x5F, 0xFF, 0x01]
        /// The data ykman keeps about the PIV application (its flags: the management key protected by the PIN).
        public static let pivmanData: [UInt8] = [0x5F, 0xFF, 0x00]
    }

    /// Tags of GET DATA / PUT DATA, of the certificate object, of GENERAL AUTHENTICATE, GENERATE ASYMMETRIC,
    /// IMPORT KEY and GET METADATA.
    public enum Tag {
        /// GET DATA and PUT DATA: the tag list naming the object.
        public static let objectID: UInt32 = 0x5C
        /// The object's data (GET DATA's answer, PUT DATA's value).
        public static let objectData: UInt32 = 0x53

        /// Inside a certificate object: the certificate, its CertInfo byte, and the error detection code.
        public static let certificate: UInt32 = 0x70
        public static let certificateInfo: UInt32 = 0x71
        public static let errorDetection: UInt32 = 0xFE

        /// GENERAL AUTHENTICATE's dynamic authentication template and its parts.
        public static let dynamicAuthentication: UInt32 = 0x7C
        public static let witness: UInt32 = 0x80
        public static let challenge: UInt32 = 0x81
        public static let response: UInt32 = 0x82
        public static let exponentiation: UInt32 = 0x85

        /// GENERATE ASYMMETRIC's control template and its parts.
        public static let generateTemplate: UInt32 = 0xAC
        public static let generateAlgorithm: UInt32 = 0x80
        public static let pinPolicy: UInt32 = 0xAA
        public static let touchPolicy: UInt32 = 0xAB

        /// A public key (GENERATE ASYMMETRIC's answer) and its parts: RSA modulus and exponent, EC point
        /// (or the Ed25519/X25519 key).
        public static let publicKey: UInt32 = 0x7F49
        public static let rsaModulus: UInt32 = 0x81
        public static let rsaExponent: UInt32 = 0x82
        public static let ecPoint: UInt32 = 0x86

        /// IMPORT KEY's parts: RSA's primes and CRT values, an EC private scalar, an Ed25519 or X25519 key.
        public static let rsaP: UInt32 = 0x01
        public static let rsaQ: UInt32 = 0x02
        public static let rsaDP: UInt32 = 0x03
        public static let rsaDQ: UInt32 = 0x04
        public static let rsaQInv: UInt32 = 0x05
        public static let ecPrivate: UInt32 = 0x06
        public static let ed25519Private: UInt32 = 0x07
        public static let x25519Private: UInt32 = 0x08

        /// GET METADATA's answer.
        public static let metadataAlgorithm: UInt32 = 0x01
        public static let metadataPolicy: UInt32 = 0x02
        public static let metadataOrigin: UInt32 = 0x03
        public static let metadataPublicKey: UInt32 = 0x04
        public static let metadataIsDefault: UInt32 = 0x05
        public static let metadataRetries: UInt32 = 0x06
    }

    /// CertInfo values: the certificate is stored as it is, or gzip-compressed.
    public static let certificateUncompressed: UInt8 = 0x00
    public static let certificateGzip: UInt8 = 0x01

    /// The defaults of a new or reset key.
    public static let defaultPIN: [UInt8] = Array("123456".utf8)
    public static let defaultPUK: [UInt8] = Array("12345678".utf8)
    public static let defaultManagementKey: [UInt8] = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x01, 0x02, 0x03, 0x04,
        0x05, 0x06, 0x07, 0x08, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    ]
    /// PIN and PUK tries of a new or reset key.
    public static let defaultRetries = 3
    /// PINs and PUKs are padded with FF to eight bytes.
    public static let pinPadding: UInt8 = 0xFF
    public static let pinLength = 8

    /// The firmware that first has GET METADATA.
    public static let metadataVersion = Version(5, 3, 0)
    /// The firmware whose default management key is AES-192 rather than 3DES, and that has MOVE KEY,
    /// key deletion and Ed25519/X25519.
    public static let version57 = Version(5, 7, 0)
}
