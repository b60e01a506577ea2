/// What went wrong in the PIV application, as facts (`ErrorExplanation` words them).
public enum PIVError: Error, Equatable, Sendable {
    /// VERIFY or CHANGE REFERENCE of the PIN was answered 63Cx.
    case wrongPIN(retriesLeft: Int)
    /// The PIN is blocked (6983, or no tries left): unblock it with the PUK.
    case pinBlocked
    /// CHANGE REFERENCE of the PUK, or RESET RETRY COUNTER, was answered 63Cx.
    case wrongPUK(retriesLeft: Int)
    /// The PUK is blocked: only RESET helps.
    case pukBlocked
    /// A PIN or PUK is longer than 8 bytes, or a new one shorter than 6.
    case pinLength(Int)
    /// A key that enforces PIN complexity refused the new PIN (or, `puk`, the new PUK): 6985 to CHANGE REFERENCE
    /// or RESET RETRY COUNTER.
    case tooSimple(puk: Bool)
    /// The key did not accept our answer to its management key challenge (6982 on the second step).
    case managementKeyAuthenticationFailed
    /// The key's answer to our challenge was wrong: it does not hold the management key we used.
    case managementKeyResponseMismatch
    /// A management key is not as long as its algorithm's keys.
    case managementKeyLength(expected: Int, actual: Int)
    /// Not a management key algorithm (3DES, AES-128/192/256), or not a slot key algorithm.
    case notAManagementKeyAlgorithm(PIV.Algorithm)
    case notASlotKeyAlgorithm(PIV.Algorithm)
    /// 6982: the command needs the PIN or the management key first.
    case securityConditionNotSatisfied
    /// RESET answered 6985: the PIN and the PUK must both be blocked first.
    case resetConditionsNotMet
    /// The slot holds no key (6A88 or 6A80 on use).
    case noKeyInSlot(PIV.Slot)
    /// GET DATA of an object the key does not have (6A82).
    case objectNotFound([UInt8])
    /// An object too big for the key (6A84).
    case noSpace
    /// The key rejected the command's parameters or data (6A80, 6A86).
    case incorrectParameters(StatusWord)
    /// The firmware lacks the feature.
    case notSupported(feature: PIVFeature, minimum: Version, actual: Version)
    /// IMPORT KEY takes RSA keys with the public exponent 65537 only.
    case unsupportedRSAExponent
    /// The private key's parts could not be read from it.
    case privateKeyComponents
    /// The certificate object's CertInfo byte is neither 00 nor 01.
    case unsupportedCertificateInfo(UInt8)
    /// The slot's attestation is not signed by the key of the attestation certificate in F9.
    case attestationNotSignedByDevice(PIV.Slot)
    /// The attestation certifies another public key than the one asked about.
    case attestedKeyMismatch(PIV.Slot)
    /// The answer could not be read.
    case malformed(PIVMalformation)
    /// Any other status word.
    case status(StatusWord)
}

/// What was wrong with a PIV answer.
public enum PIVMalformation: Equatable, Sendable {
    /// BER-TLV that does not decode.
    case tlv(TLV.DecodeError)
    /// A required tag is missing (`tag`: the tag, e.g. 7C, 82, 53).
    case missingTag(UInt32)
    /// A field (`tag`) has a length it cannot have.
    case fieldLength(tag: UInt32, length: Int)
    /// GET VERSION's answer is not 3 bytes; GET SERIAL's not 4.
    case version(length: Int)
    case serial(length: Int)
    /// Metadata with a value PIV does not define.
    case unknownAlgorithm(UInt8)
    case unknownPINPolicy(UInt8)
    case unknownTouchPolicy(UInt8)
    case unknownOrigin(UInt8)
    /// A public key that is not a valid key of its algorithm (a point off the curve, a modulus of another size).
    case publicKey(PIV.Algorithm)
    /// A certificate that is not DER X.509.
    case certificate
    /// A compressed certificate that does not inflate.
    case gzip(Gzip.Error)
    /// A signature or shared secret of the wrong length.
    case resultLength(expected: Int, actual: Int)
}

/// PIV features that depend on the firmware version.
public enum PIVFeature: Sendable, CaseIterable {
    /// GET METADATA of PIN, PUK, management key and slots.
    case metadata
    /// AES management keys (SET MANAGEMENT KEY with AES-128/192/256).
    case aesManagementKey
    /// GET SERIAL.
    case serial
    /// ATTEST of a generated key.
    case attestation
    /// EC P-384 keys, PIN and touch policies.
    case p384
    case policies
    /// Touch cached for 15 seconds.
    case cachedTouch
    /// MOVE KEY and key deletion.
    case moveKey
    /// RSA 3072 and 4096, Ed25519 and X25519 keys.
    case rsa3072And4096
    case ed25519
    case x25519

    public var minimum: Version {
        switch self {
        case .metadata: return PIV.metadataVersion
        case .aesManagementKey: return Version(5, 4, 0)
        case .serial: return Version(5, 0, 0)
        case .attestation, .cachedTouch: return Version(4, 3, 0)
        case .p384, .policies: return Version(4, 0, 0)
        case .moveKey, .rsa3072And4096, .ed25519, .x25519: return PIV.version57
        }
    }

    public func isSupported(by version: Version) -> Bool { version >= minimum }

    public func check(_ version: Version) throws(PIVError) {
        guard isSupported(by: version) else { throw .notSupported(feature: self, minimum: minimum, actual: version) }
    }

    /// The feature a slot key algorithm needs, if any.
    public static func needed(for algorithm: PIV.Algorithm) -> PIVFeature? {
        switch algorithm {
        case .eccP384: return .p384
        case .rsa3072, .rsa4096: return .rsa3072And4096
        case .ed25519: return .ed25519
        case .x25519: return .x25519
        default: return nil
        }
    }
}

/// GET METADATA of the PIN or the PUK.
public struct PIVPINMetadata: Sendable, Hashable {
    /// Whether it is still the factory default (123456, 12345678).
    public var isDefault: Bool
    public var totalRetries: Int
    public var retriesLeft: Int
}

/// GET METADATA of the management key.
public struct PIVManagementKeyMetadata: Sendable, Hashable {
    public var algorithm: PIV.Algorithm
    public var isDefault: Bool
    public var touchPolicy: PIV.TouchPolicy

    public init(algorithm: PIV.Algorithm, isDefault: Bool, touchPolicy: PIV.TouchPolicy) {
        self.algorithm = algorithm
        self.isDefault = isDefault
        self.touchPolicy = touchPolicy
    }
}

/// GET METADATA of a slot that holds a key.
public struct PIVSlotMetadata: Sendable, Hashable {
    public var algorithm: PIV.Algorithm
    public var pinPolicy: PIV.PINPolicy
    public var touchPolicy: PIV.TouchPolicy
    public var origin: PIV.Origin
    public var publicKey: AsymmetricPublicKey

    public init(
        algorithm: PIV.Algorithm, pinPolicy: PIV.PINPolicy, touchPolicy: PIV.TouchPolicy,
        origin: PIV.Origin, publicKey: AsymmetricPublicKey
    ) {
        self.algorithm = algorithm
        self.pinPolicy = pinPolicy
        self.touchPolicy = touchPolicy
        self.origin = origin
        self.publicKey = publicKey
    }
}

/// How a slot's key signs: the digest, and for RSA the padding made on the host.
public struct PIVSignatureScheme: Sendable, Hashable {
    public var digest: SignatureDigest
    /// RSA only; EC and Ed25519 keys ignore it.
    public var padding: RSASignaturePadding

    public init(digest: SignatureDigest = .sha256, padding: RSASignaturePadding = .pkcs1) {
        self.digest = digest
        self.padding = padding
    }
}
