/// The YubiHSM Auth application: credentials a YubiKey keeps for opening sessions with a YubiHSM 2, and the
/// YubiHSM 2's session key derivation (SCP03's for symmetric credentials, SCP11's for asymmetric ones), which
/// the key does and the virtual key's applet and the tests do with the functions here.
public enum HSMAuth {
    public enum Ins {
        public static let put: UInt8 = 0x01
        public static let delete: UInt8 = 0x02
        public static let calculate: UInt8 = 0x03
        public static let getChallenge: UInt8 = 0x04
        public static let list: UInt8 = 0x05
        public static let reset: UInt8 = 0x06
        public static let getVersion: UInt8 = 0x07
        public static let putManagementKey: UInt8 = 0x08
        public static let getManagementKeyRetries: UInt8 = 0x09
        public static let getPublicKey: UInt8 = 0x0A
        public static let changeCredentialPassword: UInt8 = 0x0B
    }

    public enum Tag {
        public static let label: UInt32 = 0x71
        public static let labelList: UInt32 = 0x72
        public static let credentialPassword: UInt32 = 0x73
        public static let algorithm: UInt32 = 0x74
        public static let keyEnc: UInt32 = 0x75
        public static let keyMac: UInt32 = 0x76
        public static let context: UInt32 = 0x77
        public static let response: UInt32 = 0x78
        public static let version: UInt32 = 0x79
        public static let touch: UInt32 = 0x7A
        public static let managementKey: UInt32 = 0x7B
        public static let publicKey: UInt32 = 0x7C
        public static let privateKey: UInt32 = 0x7D
    }

    /// The management key and every credential password are 16 bytes.
    public static let managementKeyLength = 16
    public static let credentialPasswordLength = 16
    /// A label is 1 to 64 bytes of UTF-8.
    public static let labelLengths = 1...64
    /// The tries of the management key and of each credential password, and what a right one restores.
    public static let initialRetries = 8
    /// What a new (or reset) application has as its management key: 16 zero bytes.
    public static let defaultManagementKey = [UInt8](repeating: 0, count: 16)
    /// The most credentials a YubiKey keeps.
    public static let maxCredentials = 32
    /// The first firmware with asymmetric credentials and GET CHALLENGE; the first that changes a credential's
    /// password.
    public static let asymmetricFirmware = Version(5, 6, 0)
    public static let changePasswordFirmware = Version(5, 8, 0)
    /// The first firmware whose GET CHALLENGE takes the credential password (for an asymmetric credential).
    public static let challengePasswordFirmware = Version(5, 7, 1)

    /// What a credential holds.
    public enum Algorithm: UInt8, Sendable, CaseIterable, Codable {
        /// Two AES-128 keys (K-ENC, K-MAC): SCP03 sessions.
        case aes128 = 38
        /// A P-256 private key (SK.OCE): SCP11 sessions.
        case ecP256 = 39

        public var isSymmetric: Bool { self == .aes128 }
        /// ykman's word for it.
        public var name: String { self == .aes128 ? "symmetric" : "asymmetric" }
    }

    /// A password as the application takes it, from what a person typed: up to 16 bytes of UTF-8 padded with
    /// zero bytes, or exactly 32 hex digits for 16 raw bytes (as ykman reads the management and credential
    /// passwords). nil when it is longer.
    public static func paddedPassword(_ text: String) -> SecretBytes? {
        var bytes = Array(text.utf8)
        defer { SecretBytes.wipe(&bytes) }
        if bytes.count <= 16 {
            var padded = bytes + [UInt8](repeating: 0, count: 16 - bytes.count)
            return SecretBytes(wiping: &padded)
        }
        if bytes.count == 32, var raw = try? Hex.decode(text) {
            return SecretBytes(wiping: &raw)
        }
        return nil
    }

    /// K-ENC and K-MAC from a password, as the YubiHSM 2 derives them (PBKDF2-HMAC-SHA256, salt "Yubico",
    /// 10,000 iterations, 32 bytes: the first 16 are K-ENC).
    public static func derivedKeys(password: SecretBytes) -> (enc: SecretBytes, mac: SecretBytes) {
        let both = Crypto.pbkdf2(
            .sha256, password: password, salt: Array("Yubico".utf8), iterations: 10_000, length: 32)
        defer { both.wipe() }
        var bytes = both.copyBytes()
        var enc = Array(bytes[0..<16])
        var mac = Array(bytes[16..<32])
        SecretBytes.wipe(&bytes)
        return (SecretBytes(wiping: &enc), SecretBytes(wiping: &mac))
    }

    // MARK: Session keys

    /// The derivation constants of SCP03 the YubiHSM 2 uses.
    public enum Derivation {
        public static let cardCryptogram: UInt8 = 0x00
        public static let hostCryptogram: UInt8 = 0x01
        public static let sEnc: UInt8 = 0x04
        public static let sMac: UInt8 = 0x06
        public static let sRmac: UInt8 = 0x07
    }

    /// AES-CMAC (NIST SP 800-38B, RFC 4493) with a 16-byte AES-128 key.
    public static func cmac(key: [UInt8], _ message: [UInt8]) throws -> [UInt8] {
        func doubled(_ block: [UInt8]) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 16)
            for i in 0..<16 {
                out[i] = block[i] << 1 | (i < 15 ? block[i + 1] >> 7 : 0)
            }
            if block[0] & 0x80 != 0 { out[15] ^= 0x87 }
            return out
        }
        var l = try Crypto.aes128ECBEncrypt(key: key, [UInt8](repeating: 0, count: 16))
        defer { SecretBytes.wipe(&l) }
        var k1 = doubled(l)
        var k2 = doubled(k1)
        defer {
            SecretBytes.wipe(&k1)
            SecretBytes.wipe(&k2)
        }
        let blocks = max(1, (message.count + 15) / 16)
        let complete = !message.isEmpty && message.count % 16 == 0
        var last = Array(message[((blocks - 1) * 16)...])
        if complete {
            for i in 0..<16 { last[i] ^= k1[i] }
        } else {
            last.append(0x80)
            last += [UInt8](repeating: 0, count: 16 - last.count)
            for i in 0..<16 { last[i] ^= k2[i] }
        }
        var x = [UInt8](repeating: 0, count: 16)
        for b in 0..<(blocks - 1) {
            for i in 0..<16 { x[i] ^= message[b * 16 + i] }
            x = try Crypto.aes128ECBEncrypt(key: key, x)
        }
        for i in 0..<16 { x[i] ^= last[i] }
        return try Crypto.aes128ECBEncrypt(key: key, x)
    }

    /// SCP03's KDF (NIST SP 800-108 in counter mode with AES-CMAC): 11 zero bytes, the derivation constant, a
    /// zero separator, the length in bits (two bytes), the counter 1, then the context. `bits` is 64 or 128.
    public static func scp03KDF(key: [UInt8], constant: UInt8, context: [UInt8], bits: Int = 128) throws
        -> [UInt8]
    {
        let input =
            [UInt8](repeating: 0, count: 11) + [constant, 0, UInt8(bits >> 8), UInt8(bits & 0xFF), 1] + context
        return Array(try cmac(key: key, input).prefix(bits / 8))
    }

    /// The session keys of a symmetric credential: S-ENC from K-ENC, S-MAC and S-RMAC from K-MAC, over the
    /// context (host challenge then the HSM's challenge).
    public static func symmetricSessionKeys(enc: [UInt8], mac: [UInt8], context: [UInt8]) throws
        -> HSMAuthSessionKeys
    {
        HSMAuthSessionKeys(
            enc: try scp03KDF(key: enc, constant: Derivation.sEnc, context: context),
            mac: try scp03KDF(key: mac, constant: Derivation.sMac, context: context),
            rmac: try scp03KDF(key: mac, constant: Derivation.sRmac, context: context))
    }

    /// The card cryptogram the YubiHSM 2 answers CREATE SESSION with: 8 bytes from S-MAC over the context.
    public static func cardCryptogram(sessionMAC: [UInt8], context: [UInt8]) throws -> [UInt8] {
        try scp03KDF(key: sessionMAC, constant: Derivation.cardCryptogram, context: context, bits: 64)
    }

    /// ANSI X9.63's KDF with SHA-256: SHA-256(Z || counter || shared info) for counters 1, 2, ....
    public static func x963SHA256(_ z: [UInt8], sharedInfo: [UInt8], length: Int) -> [UInt8] {
        var out = [UInt8]()
        var counter: UInt32 = 1
        while out.count < length {
            let c = [
                UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF),
            ]
            out += Crypto.digest(.sha256, z + c + sharedInfo)
            counter += 1
        }
        return Array(out.prefix(length))
    }

    /// The shared info of the YubiHSM 2's asymmetric authentication (SCP11's key usage and length).
    public static let asymmetricSharedInfo: [UInt8] = [0x3C, 0x88, 0x10]

    /// The session keys of an asymmetric credential, as the OCE side derives them: ShSee (the two ephemeral
    /// keys) and ShSss (the credential's key and the YubiHSM 2's static one) through X9.63's KDF into four keys;
    /// the first must check the YubiHSM 2's receipt (CMAC over EPK.SD then EPK.OCE), the other three are S-ENC,
    /// S-MAC and S-RMAC. nil when the receipt does not check.
    public static func asymmetricSessionKeys(
        ephemeralShared: [UInt8], staticShared: [UInt8], epkOCE: [UInt8], epkSD: [UInt8], receipt: [UInt8]
    ) throws -> HSMAuthSessionKeys? {
        var keys = x963SHA256(ephemeralShared + staticShared, sharedInfo: asymmetricSharedInfo, length: 64)
        defer { SecretBytes.wipe(&keys) }
        let expected = try cmac(key: Array(keys[0..<16]), epkSD + epkOCE)
        guard Crypto.constantTimeEqual(expected, receipt) else { return nil }
        return HSMAuthSessionKeys(enc: Array(keys[16..<32]), mac: Array(keys[32..<48]), rmac: Array(keys[48..<64]))
    }
}

/// The three session keys of a YubiHSM 2 session.
public struct HSMAuthSessionKeys: Sendable, Equatable {
    public var enc: [UInt8]
    public var mac: [UInt8]
    public var rmac: [UInt8]

    public init(enc: [UInt8], mac: [UInt8], rmac: [UInt8]) {
        self.enc = enc
        self.mac = mac
        self.rmac = rmac
    }

    /// CALCULATE's answer: S-ENC, S-MAC and S-RMAC, 16 bytes each.
    public init(answer: [UInt8]) throws(HSMAuthError) {
        guard answer.count == 48 else {
            throw .malformed(Malformation(.sessionKeys, .lengthExpected(answer.count, expected: 48)))
        }
        self.init(enc: Array(answer[0..<16]), mac: Array(answer[16..<32]), rmac: Array(answer[32..<48]))
    }

    public var encoded: [UInt8] { enc + mac + rmac }

    public mutating func wipe() {
        SecretBytes.wipe(&enc)
        SecretBytes.wipe(&mac)
        SecretBytes.wipe(&rmac)
    }
}

extension HSMAuthSessionKeys: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "HSMAuthSessionKeys(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// A credential as LIST shows it.
public struct HSMAuthCredential: Sendable, Equatable {
    public var label: String
    public var algorithm: HSMAuth.Algorithm
    public var touchRequired: Bool
    /// Tries left of its credential password.
    public var retries: Int

    public init(label: String, algorithm: HSMAuth.Algorithm, touchRequired: Bool, retries: Int) {
        self.label = label
        self.algorithm = algorithm
        self.touchRequired = touchRequired
        self.retries = retries
    }

    /// One entry of LIST (the value of a 72 TLV): algorithm, touch, the label, the tries left.
    public init(entry: [UInt8]) throws(HSMAuthError) {
        guard entry.count >= 4 else {
            throw .malformed(Malformation(.hsmauthCredential, .tooShort(entry.count, minimum: 4)))
        }
        guard let algorithm = HSMAuth.Algorithm(rawValue: entry[0]) else {
            throw .malformed(Malformation(.hsmauthCredential, .value(String(entry[0]))))
        }
        let labelBytes = Array(entry[2..<(entry.count - 1)])
        guard HSMAuth.labelLengths.contains(labelBytes.count) else {
            throw .malformed(Malformation(.hsmauthCredential, .length(labelBytes.count)))
        }
        guard let label = String(validating: labelBytes, as: UTF8.self) else {
            throw .malformed(Malformation(.hsmauthCredential, .notUTF8))
        }
        guard entry[1] <= 1 else {
            throw .malformed(Malformation(.hsmauthCredential, .value(String(entry[1]))))
        }
        self.init(
            label: label, algorithm: algorithm, touchRequired: entry[1] == 1, retries: Int(entry[entry.count - 1]))
    }

    public var entry: [UInt8] {
        [algorithm.rawValue, touchRequired ? 1 : 0] + Array(label.utf8) + [UInt8(clamping: retries)]
    }

    /// LIST's whole answer: a 72 TLV per credential.
    public static func list(_ answer: [UInt8]) throws(HSMAuthError) -> [HSMAuthCredential] {
        let tlvs: [TLV]
        do {
            tlvs = try TLV.parseAll(answer)
        } catch {
            throw .malformed(Malformation(.hsmauthCredential, .tlv(error)))
        }
        var out = [HSMAuthCredential]()
        for tlv in tlvs {
            guard tlv.tag == HSMAuth.Tag.labelList else {
                throw .malformed(Malformation(.hsmauthCredential, .unexpectedTag(tlv.tag)))
            }
            out.append(try HSMAuthCredential(entry: tlv.value))
        }
        return out
    }
}

/// What the application answered, as facts.
public enum HSMAuthError: Error, Equatable, Sendable {
    /// The management key was wrong; tries left.
    case wrongManagementKey(retriesLeft: Int)
    /// The credential password was wrong; tries left (at 0 the key deletes the credential).
    case wrongCredentialPassword(retriesLeft: Int)
    /// A credential with this label is there already (PUT's 6983).
    case labelExists
    /// No room for another credential (6A84).
    case noSpace
    /// No credential with this label (6A82).
    case notFound
    /// The credential wants a touch and got none (6982).
    case touchRequired
    /// The new password was refused: it does not meet the key's rules (6985).
    case passwordRefused
    /// The credential is symmetric where an asymmetric one is needed (GET PUBLIC KEY's 6983).
    case notAsymmetric
    /// A label of 0 or more than 64 bytes.
    case labelLength(Int)
    /// A key of another length than due (`expected` bytes).
    case keyLength(expected: Int, actual: Int)
    /// The firmware lacks what was asked (`minimum`: the first version that has it).
    case notSupported(minimum: Version, actual: Version)
    /// The answer could not be read.
    case malformed(Malformation)
    /// Any other status word.
    case status(StatusWord)
}

extension HSMAuth {
    /// The 32-byte scalar of a P-256 private key, as PUT takes an asymmetric credential; `keyLength` for a key of
    /// another kind.
    public static func privateScalar(_ key: AsymmetricPrivateKey) throws -> SecretBytes {
        guard key.type == .p256 else { throw HSMAuthError.keyLength(expected: 32, actual: key.type.length) }
        var scalar = try key.withEVP { try AsymmetricPrivateKey.number($0, "priv", length: 32) }
        return SecretBytes(wiping: &scalar)
    }
}

/// How a credential's password change is authorised: its current password, or the management key.
public enum HSMAuthPasswordAuthority: Sendable {
    case credentialPassword(SecretBytes)
    case managementKey(SecretBytes)
}
