/// CTAP2's numbers (Client to Authenticator Protocol 2.1): command bytes, the integer keys of each
/// command's parameter and response maps, clientPIN and credential management subcommands, and the flags
/// of authenticator data. KeyKit's `CTAP2Session` sends them and the virtual key's authenticator answers
/// them, so both read them from here. The status codes are `CTAPError`'s.
public enum CTAP2 {
    /// The status byte of a successful answer (CTAP2_OK).
    public static let ok: UInt8 = 0x00

    /// The type of every credential (WebAuthn's PublicKeyCredentialType).
    public static let publicKeyType = "public-key"

    /// A PublicKeyCredentialDescriptor: a credential ID with its type, as allow and exclude lists, credential
    /// management and assertions carry it.
    public static func credentialDescriptor(_ id: [UInt8]) -> CBOR {
        ["id": .bytes(id), "type": .text(publicKeyType)]
    }

    /// The PublicKeyCredentialParameters of ES256, as makeCredential asks for it and getInfo lists it.
    public static let es256Parameters = credentialParameters(COSE.Algorithm.es256)
    /// The PublicKeyCredentialParameters of EdDSA (Ed25519), which YubiKeys have from firmware 5.2.
    public static let edDSAParameters = credentialParameters(COSE.Algorithm.edDSA)

    /// The PublicKeyCredentialParameters of a COSE algorithm: makeCredential's pubKeyCredParams and getInfo's
    /// algorithms are lists of them.
    public static func credentialParameters(_ algorithm: Int) -> CBOR {
        ["alg": CBOR(algorithm), "type": .text(publicKeyType)]
    }

    /// Command bytes: the first byte of every CTAP2 message (CTAP 2.1 section 6, "Authenticator API"; the
    /// preview commands come from CTAP 2.1's drafts).
    public enum Command: UInt8, Sendable, CaseIterable {
        case makeCredential = 0x01
        case getAssertion = 0x02
        case getInfo = 0x04
        case clientPIN = 0x06
        case reset = 0x07
        case getNextAssertion = 0x08
        case bioEnrollment = 0x09
        case credentialManagement = 0x0A
        case selection = 0x0B
        case largeBlobs = 0x0C
        case config = 0x0D
        /// The preview command some keys have instead of 0x09.
        case bioEnrollmentPreview = 0x40
        /// The preview command some keys (YubiKey 5.2-5.4) have instead of 0x0A.
        case credentialManagementPreview = 0x41
    }

    /// The keys of authenticatorGetInfo's answer (CTAP 2.1 section 6.4, "authenticatorGetInfo").
    public enum InfoKey {
        public static let versions = 0x01
        public static let extensions = 0x02
        public static let aaguid = 0x03
        public static let options = 0x04
        public static let maxMsgSize = 0x05
        public static let pinUVAuthProtocols = 0x06
        public static let maxCredentialCountInList = 0x07
        public static let maxCredentialIDLength = 0x08
        public static let transports = 0x09
        public static let algorithms = 0x0A
        public static let maxSerializedLargeBlobArray = 0x0B
        public static let forcePINChange = 0x0C
        public static let minPINLength = 0x0D
        public static let firmwareVersion = 0x0E
        public static let maxCredBlobLength = 0x0F
        public static let maxRPIDsForSetMinPINLength = 0x10
        public static let preferredPlatformUVAttempts = 0x11
        public static let uvModality = 0x12
        public static let certifications = 0x13
        public static let remainingDiscoverableCredentials = 0x14
        public static let vendorPrototypeConfigCommands = 0x15
    }

    /// authenticatorMakeCredential (CTAP 2.1 section 6.1).
    public enum MakeCredential {
        /// The keys of the parameter map.
        public enum Key {
            public static let clientDataHash = 0x01
            public static let rp = 0x02
            public static let user = 0x03
            public static let pubKeyCredParams = 0x04
            public static let excludeList = 0x05
            public static let extensions = 0x06
            public static let options = 0x07
            public static let pinUVAuthParam = 0x08
            public static let pinUVAuthProtocol = 0x09
            public static let enterpriseAttestation = 0x0A
        }

        /// The keys of the answer.
        public enum ResponseKey {
            public static let format = 0x01
            public static let authData = 0x02
            public static let attestationStatement = 0x03
            public static let enterpriseAttestation = 0x04
            public static let largeBlobKey = 0x05
        }
    }

    /// authenticatorGetAssertion and authenticatorGetNextAssertion (CTAP 2.1 sections 6.2 and 6.3).
    public enum GetAssertion {
        /// The keys of getAssertion's parameter map.
        public enum Key {
            public static let rpID = 0x01
            public static let clientDataHash = 0x02
            public static let allowList = 0x03
            public static let extensions = 0x04
            public static let options = 0x05
            public static let pinUVAuthParam = 0x06
            public static let pinUVAuthProtocol = 0x07
        }

        /// The keys of the answer of both commands.
        public enum ResponseKey {
            public static let credential = 0x01
            public static let authData = 0x02
            public static let signature = 0x03
            public static let user = 0x04
            public static let numberOfCredentials = 0x05
            public static let userSelected = 0x06
            public static let largeBlobKey = 0x07
        }
    }

    /// authenticatorClientPIN (CTAP 2.1 section 6.5.5).
    public enum ClientPIN {
        /// The subcommands (0x08 is not given out).
        public enum Subcommand {
            public static let getPINRetries = 0x01
            public static let getKeyAgreement = 0x02
            public static let setPIN = 0x03
            public static let changePIN = 0x04
            /// The CTAP 2.0 command for a token that may do everything.
            public static let getPINToken = 0x05
            public static let getPINUVAuthTokenUsingUVWithPermissions = 0x06
            public static let getUVRetries = 0x07
            public static let getPINUVAuthTokenUsingPINWithPermissions = 0x09
        }

        /// The keys of the parameter map.
        public enum Key {
            public static let pinUVAuthProtocol = 0x01
            public static let subcommand = 0x02
            public static let keyAgreement = 0x03
            public static let pinUVAuthParam = 0x04
            public static let newPINEnc = 0x05
            public static let pinHashEnc = 0x06
            public static let permissions = 0x09
            public static let rpID = 0x0A
        }

        /// The keys of the answer.
        public enum ResponseKey {
            public static let keyAgreement = 0x01
            public static let pinUVAuthToken = 0x02
            public static let pinRetries = 0x03
            public static let powerCycleState = 0x04
            public static let uvRetries = 0x05
        }
    }

    /// authenticatorCredentialManagement (CTAP 2.1 section 6.8).
    public enum CredentialManagement {
        /// The subcommands.
        public enum Subcommand {
            public static let getCredsMetadata = 0x01
            public static let enumerateRPsBegin = 0x02
            public static let enumerateRPsGetNextRP = 0x03
            public static let enumerateCredentialsBegin = 0x04
            public static let enumerateCredentialsGetNextCredential = 0x05
            public static let deleteCredential = 0x06
            public static let updateUserInformation = 0x07
        }

        /// The keys of the parameter map.
        public enum Key {
            public static let subcommand = 0x01
            public static let subcommandParams = 0x02
            public static let pinUVAuthProtocol = 0x03
            public static let pinUVAuthParam = 0x04
        }

        /// The keys of the subcommand parameters' map.
        public enum SubcommandKey {
            public static let rpIDHash = 0x01
            public static let credentialID = 0x02
            public static let user = 0x03
        }

        /// The keys of the answers of every subcommand.
        public enum ResponseKey {
            public static let existingResidentCredentialsCount = 0x01
            public static let maxPossibleRemainingResidentCredentialsCount = 0x02
            public static let rp = 0x03
            public static let rpIDHash = 0x04
            public static let totalRPs = 0x05
            public static let user = 0x06
            public static let credentialID = 0x07
            public static let publicKey = 0x08
            public static let totalCredentials = 0x09
            public static let credProtect = 0x0A
            public static let largeBlobKey = 0x0B
        }
    }

    /// authenticatorConfig (CTAP 2.1 section 6.11): settings of the whole authenticator, with a PIN/UV auth
    /// token that has the acfg permission (or none while the key has no PIN and alwaysUv is off).
    public enum Config {
        /// The subcommands.
        public enum Subcommand {
            public static let enableEnterpriseAttestation = 0x01
            public static let toggleAlwaysUV = 0x02
            public static let setMinPINLength = 0x03
            public static let vendorPrototype = 0xFF
        }

        /// The keys of the parameter map.
        public enum Key {
            public static let subcommand = 0x01
            public static let subcommandParams = 0x02
            public static let pinUVAuthProtocol = 0x03
            public static let pinUVAuthParam = 0x04
        }

        /// The keys of setMinPINLength's subcommand parameters.
        public enum SetMinPINLengthKey {
            public static let newMinPINLength = 0x01
            public static let minPINLengthRPIDs = 0x02
            public static let forceChangePIN = 0x03
        }

        /// What pinUvAuthParam authenticates (section 6.11, step 4): 32 bytes of 0xFF, the command byte
        /// 0x0D, the subcommand, and the subcommand parameters as they are encoded in the request, if any.
        public static func authenticatedMessage(subcommand: Int, params: CBOR?) -> [UInt8] {
            [UInt8](repeating: 0xFF, count: 32) + [Command.config.rawValue, UInt8(truncatingIfNeeded: subcommand)]
                + (params?.encoded ?? [])
        }
    }

    /// The names of getInfo's options this client reads (CTAP 2.1 section 6.4): the key has the feature when
    /// the option is present, and it is on when the option is true.
    public enum Option {
        /// authenticatorConfig is there.
        public static let authenticatorConfig = "authnrCfg"
        /// Every credential needs user verification; present: the key can be switched to that.
        public static let alwaysUV = "alwaysUv"
        /// Enterprise attestation is enabled; present: the key has it.
        public static let enterpriseAttestation = "ep"
        /// authenticatorConfig's setMinPINLength is there.
        public static let setMinPINLength = "setMinPINLength"
        /// makeCredential without user verification is allowed for non-discoverable credentials.
        public static let makeCredUVNotRequired = "makeCredUvNotRqd"
        /// Credential management (CTAP 2.1), with updateUserInformation.
        public static let credentialManagement = "credMgmt"
        /// Fingerprint enrollment (authenticatorBioEnrollment); true once a fingerprint is enrolled.
        public static let bioEnrollment = "bioEnroll"
        /// The preview bioEnrollment command (0x40), on keys without bioEnroll.
        public static let bioEnrollmentPreview = "userVerificationMgmtPreview"
    }

    /// The hmac-secret extension's input to getAssertion (CTAP 2.1 section 12.5).
    public enum HMACSecret {
        /// The keys of the input map.
        public enum Key {
            public static let keyAgreement = 0x01
            public static let saltEnc = 0x02
            public static let saltAuth = 0x03
            public static let pinUVAuthProtocol = 0x04
        }
    }

    /// The bits of authenticator data's flags byte (WebAuthn Level 2, section 6.1, "Authenticator Data").
    public enum AuthDataFlag {
        /// UP: the user was present (touched the key).
        public static let userPresent: UInt8 = 0x01
        /// UV: the user was verified (here: with the PIN).
        public static let userVerified: UInt8 = 0x04
        /// AT: attested credential data follows the counter.
        public static let attestedCredentialData: UInt8 = 0x40
        /// ED: extension outputs end the data.
        public static let extensionData: UInt8 = 0x80
    }
}

/// The COSE numbers CTAP2 uses for public keys (RFC 9052 section 7 and RFC 9053's tables).
public enum COSE {
    /// The keys of a COSE_Key map: common parameters, then those of EC2 keys (OKP keys have crv and x).
    public enum Key {
        public static let keyType = 1
        public static let algorithm = 3
        public static let curve = -1
        public static let x = -2
        public static let y = -3
    }

    /// Key type OKP (octet key pair: Ed25519 and the like).
    public static let keyTypeOKP = 1
    /// Key type EC2 (elliptic curve, both coordinates).
    public static let keyTypeEC2 = 2
    /// Curve P-256 (an EC2 curve).
    public static let curveP256 = 1
    /// Curve Ed25519 (an OKP curve).
    public static let curveEd25519 = 6

    /// Algorithm numbers.
    public enum Algorithm {
        /// ECDSA with SHA-256 on P-256: credential keys.
        public static let es256 = -7
        /// EdDSA (with Ed25519 here): credential keys of YubiKeys from firmware 5.2.
        public static let edDSA = -8
        /// ECDH-ES with HKDF-SHA-256: the key agreement keys of clientPIN.
        public static let ecdhESHKDF256 = -25
    }

    /// The COSE_Key of a P-256 public key, for the algorithm given.
    public static func ec2Key(_ key: P256PublicKey, algorithm: Int) -> CBOR {
        .map([
            CBOR(Key.keyType): CBOR(keyTypeEC2), CBOR(Key.algorithm): CBOR(algorithm),
            CBOR(Key.curve): CBOR(curveP256), CBOR(Key.x): .bytes(key.x), CBOR(Key.y): .bytes(key.y),
        ])
    }

    /// The COSE_Key of an Ed25519 public key: an OKP key for EdDSA, with the 32-byte key as x.
    public static func okpKey(_ key: Ed25519PublicKey) -> CBOR {
        .map([
            CBOR(Key.keyType): CBOR(keyTypeOKP), CBOR(Key.algorithm): CBOR(Algorithm.edDSA),
            CBOR(Key.curve): CBOR(curveEd25519), CBOR(Key.x): .bytes(key.raw),
        ])
    }
}
