/// A session with the YubiHSM Auth application: its credentials (list, put, delete), session keys, challenges,
/// the management key, credential passwords and the reset.
///
/// Secrets (the management key, credential passwords, keys) come in as `SecretBytes` and are copied only into
/// command buffers that are wiped after sending.
public actor HSMAuthSession: SmartCardApplicationSession {
    typealias Ins = HSMAuth.Ins
    typealias Tag = HSMAuth.Tag

    public nonisolated let selected: SelectedApplication

    public init(_ selected: SelectedApplication) { self.selected = selected }

    public static func select(on proto: SmartCardProtocol) async throws -> Version {
        try parseSelect(try await proto.select(AID.hsmauth, name: "HSMAUTH"))
    }

    /// SELECT's answer: 79 { major minor patch }.
    public static func parseSelect(_ answer: [UInt8]) throws(HSMAuthError) -> Version {
        let tlvs: [TLV]
        do {
            tlvs = try TLV.parseAll(answer)
        } catch {
            throw .malformed(Malformation(.hsmauthSelect, .tlv(error)))
        }
        guard let value = tlvs.value(for: Tag.version) else {
            throw .malformed(Malformation(.hsmauthSelect, .missing))
        }
        guard value.count == 3 else {
            throw .malformed(Malformation(.hsmauthSelect, .lengthExpected(value.count, expected: 3)))
        }
        return Version(Int(value[0]), Int(value[1]), Int(value[2]))
    }

    /// GET MANAGEMENT KEY RETRIES' answer: the tries left, one byte (or more, big-endian).
    public static func parseRetries(_ answer: [UInt8]) throws(HSMAuthError) -> Int {
        guard (1...2).contains(answer.count) else {
            throw .malformed(Malformation(.hsmauthRetries, .length(answer.count)))
        }
        return answer.reduce(0) { $0 << 8 | Int($1) }
    }

    /// GET PUBLIC KEY's answer: an uncompressed P-256 point.
    public static func parsePublicKey(_ answer: [UInt8]) throws(HSMAuthError) -> P256PublicKey {
        do {
            return try P256PublicKey(uncompressed: answer)
        } catch {
            throw .malformed(Malformation(.publicKey, .notOnCurve))
        }
    }

    /// GET CHALLENGE's answer: 8 random bytes for a symmetric credential, EPK.OCE (65 bytes) for an asymmetric
    /// one.
    public static func parseChallenge(_ answer: [UInt8]) throws(HSMAuthError) -> [UInt8] {
        guard answer.count == 8 || answer.count == 65 else {
            throw .malformed(Malformation(.hsmauthChallenge, .length(answer.count)))
        }
        if answer.count == 65 { _ = try parsePublicKey(answer) }
        return answer
    }

    // MARK: Status words

    /// Which credential or key a command's 63Cx and 6983 concern.
    enum Authenticating {
        case managementKey
        case credentialPassword
    }

    func send(_ apdu: APDU, _ who: Authenticating?, exists: Bool = false) async throws -> [UInt8] {
        var apdu = apdu
        defer { SecretBytes.wipe(&apdu.data) }
        return try Self.check(try await proto.send(apdu), who, exists: exists)
    }

    /// `exists`: 6983 means "the label is taken" (PUT) rather than "not an asymmetric credential".
    static func check(_ response: Response, _ who: Authenticating?, exists: Bool = false) throws(HSMAuthError)
        -> [UInt8]
    {
        let status = response.status
        if let retries = status.retriesLeft, let who {
            switch who {
            case .managementKey: throw .wrongManagementKey(retriesLeft: retries)
            case .credentialPassword: throw .wrongCredentialPassword(retriesLeft: retries)
            }
        }
        switch status.rawValue {
        case 0x9000: return response.data
        case 0x6983: throw exists ? .labelExists : .notAsymmetric
        case 0x6A84: throw .noSpace
        case 0x6A82: throw .notFound
        case 0x6982: throw .touchRequired
        case 0x6985: throw .passwordRefused
        default: throw .status(status)
        }
    }

    func require(_ minimum: Version) throws(HSMAuthError) {
        guard version >= minimum else { throw .notSupported(minimum: minimum, actual: version) }
    }

    static func labelBytes(_ label: String) throws(HSMAuthError) -> [UInt8] {
        let bytes = Array(label.utf8)
        guard HSMAuth.labelLengths.contains(bytes.count) else { throw .labelLength(bytes.count) }
        return bytes
    }

    static func sixteen(_ secret: SecretBytes) throws(HSMAuthError) -> [UInt8] {
        guard secret.count == 16 else { throw .keyLength(expected: 16, actual: secret.count) }
        return secret.copyBytes()
    }

    // MARK: Reading

    public func listCredentials() async throws -> [HSMAuthCredential] {
        try HSMAuthCredential.list(try await send(APDU(ins: Ins.list, le: 256), nil))
    }

    public func managementKeyRetries() async throws -> Int {
        try Self.parseRetries(try await send(APDU(ins: Ins.getManagementKeyRetries, le: 256), nil))
    }

    /// The long-term public key (PK.OCE) of an asymmetric credential.
    public func publicKey(label: String) async throws -> P256PublicKey {
        try require(HSMAuth.asymmetricFirmware)
        let data = TLV(Tag.label, try Self.labelBytes(label)).encoded
        return try Self.parsePublicKey(try await send(APDU(ins: Ins.getPublicKey, data: data, le: 256), nil))
    }

    // MARK: Credentials

    /// PUT: a symmetric credential (`enc` and `mac`, 16 bytes each), an asymmetric one (`privateKey`, the 32-byte
    /// scalar) or, with neither, an asymmetric one the key generates.
    private func put(
        managementKey: SecretBytes, label: String, algorithm: HSMAuth.Algorithm, keys: [(UInt32, SecretBytes)],
        credentialPassword: SecretBytes, touchRequired: Bool
    ) async throws -> HSMAuthCredential {
        var data = TLV(Tag.managementKey, try Self.sixteen(managementKey)).encoded
        data += TLV(Tag.label, try Self.labelBytes(label)).encoded
        data += TLV(Tag.algorithm, [algorithm.rawValue]).encoded
        for (tag, key) in keys {
            var bytes = key.copyBytes()
            data += TLV(tag, bytes).encoded
            SecretBytes.wipe(&bytes)
        }
        if keys.isEmpty { data += TLV(Tag.privateKey, []).encoded }
        data += TLV(Tag.credentialPassword, try Self.sixteen(credentialPassword)).encoded
        data += TLV(Tag.touch, [touchRequired ? 1 : 0]).encoded
        _ = try await send(APDU(ins: Ins.put, data: data), .managementKey, exists: true)
        return HSMAuthCredential(
            label: label, algorithm: algorithm, touchRequired: touchRequired, retries: HSMAuth.initialRetries)
    }

    public func putSymmetric(
        managementKey: SecretBytes, label: String, enc: SecretBytes, mac: SecretBytes,
        credentialPassword: SecretBytes, touchRequired: Bool
    ) async throws -> HSMAuthCredential {
        guard enc.count == 16 else { throw HSMAuthError.keyLength(expected: 16, actual: enc.count) }
        guard mac.count == 16 else { throw HSMAuthError.keyLength(expected: 16, actual: mac.count) }
        return try await put(
            managementKey: managementKey, label: label, algorithm: .aes128,
            keys: [(Tag.keyEnc, enc), (Tag.keyMac, mac)],
            credentialPassword: credentialPassword, touchRequired: touchRequired)
    }

    /// A symmetric credential whose keys are derived from `derivationPassword` as the YubiHSM 2 derives them.
    public func putDerived(
        managementKey: SecretBytes, label: String, derivationPassword: SecretBytes,
        credentialPassword: SecretBytes, touchRequired: Bool
    ) async throws -> HSMAuthCredential {
        let (enc, mac) = HSMAuth.derivedKeys(password: derivationPassword)
        defer {
            enc.wipe()
            mac.wipe()
        }
        return try await putSymmetric(
            managementKey: managementKey, label: label, enc: enc, mac: mac, credentialPassword: credentialPassword,
            touchRequired: touchRequired)
    }

    /// An asymmetric credential from a P-256 private scalar (32 bytes).
    public func putAsymmetric(
        managementKey: SecretBytes, label: String, privateKey: SecretBytes, credentialPassword: SecretBytes,
        touchRequired: Bool
    ) async throws -> HSMAuthCredential {
        try require(HSMAuth.asymmetricFirmware)
        guard privateKey.count == 32 else { throw HSMAuthError.keyLength(expected: 32, actual: privateKey.count) }
        return try await put(
            managementKey: managementKey, label: label, algorithm: .ecP256, keys: [(Tag.privateKey, privateKey)],
            credentialPassword: credentialPassword, touchRequired: touchRequired)
    }

    /// An asymmetric credential whose private key the YubiKey generates (its public key: `publicKey(label:)`).
    public func generateAsymmetric(
        managementKey: SecretBytes, label: String, credentialPassword: SecretBytes, touchRequired: Bool
    ) async throws -> HSMAuthCredential {
        try require(HSMAuth.asymmetricFirmware)
        return try await put(
            managementKey: managementKey, label: label, algorithm: .ecP256, keys: [],
            credentialPassword: credentialPassword, touchRequired: touchRequired)
    }

    public func delete(managementKey: SecretBytes, label: String) async throws {
        let data =
            TLV(Tag.managementKey, try Self.sixteen(managementKey)).encoded
            + TLV(Tag.label, try Self.labelBytes(label)).encoded
        _ = try await send(APDU(ins: Ins.delete, data: data), .managementKey)
    }

    // MARK: Passwords and the management key

    public func putManagementKey(current: SecretBytes, new: SecretBytes) async throws {
        let data =
            TLV(Tag.managementKey, try Self.sixteen(current)).encoded
            + TLV(Tag.managementKey, try Self.sixteen(new)).encoded
        _ = try await send(APDU(ins: Ins.putManagementKey, data: data), .managementKey)
    }

    /// A credential's new password, authorised by its current one or by the management key (firmware 5.8 and
    /// later).
    public func changeCredentialPassword(
        label: String, authority: HSMAuthPasswordAuthority, new: SecretBytes
    ) async throws {
        try require(HSMAuth.changePasswordFirmware)
        let (p1, tag, secret, who): (UInt8, UInt32, SecretBytes, Authenticating) =
            switch authority {
            case .credentialPassword(let current): (0, Tag.credentialPassword, current, .credentialPassword)
            case .managementKey(let key): (1, Tag.managementKey, key, .managementKey)
            }
        let data =
            TLV(Tag.label, try Self.labelBytes(label)).encoded + TLV(tag, try Self.sixteen(secret)).encoded
            + TLV(Tag.credentialPassword, try Self.sixteen(new)).encoded
        _ = try await send(APDU(ins: Ins.changeCredentialPassword, p1: p1, data: data), who)
    }

    /// Erases every credential and restores the default management key (16 zero bytes).
    public func reset() async throws {
        _ = try await send(APDU(ins: Ins.reset, p1: 0xDE, p2: 0xAD), nil)
    }

    // MARK: Sessions

    /// The host challenge: 8 random bytes for a symmetric credential, EPK.OCE for an asymmetric one (the key
    /// keeps its ephemeral private key for the CALCULATE that follows). The credential password goes along for
    /// an asymmetric credential on firmware 5.7.1 and later.
    public func challenge(label: String, credentialPassword: SecretBytes?) async throws -> [UInt8] {
        try require(HSMAuth.asymmetricFirmware)
        var data = TLV(Tag.label, try Self.labelBytes(label)).encoded
        if let credentialPassword, version >= HSMAuth.challengePasswordFirmware {
            data += TLV(Tag.credentialPassword, try Self.sixteen(credentialPassword)).encoded
        }
        return try Self.parseChallenge(
            try await send(APDU(ins: Ins.getChallenge, data: data, le: 256), .credentialPassword))
    }

    /// The session keys of a symmetric credential: `context` is the host challenge then the YubiHSM 2's (16
    /// bytes); `cardCryptogram` the YubiHSM 2's, when there is one to check.
    public func calculateSymmetric(
        label: String, context: [UInt8], credentialPassword: SecretBytes, cardCryptogram: [UInt8]? = nil
    ) async throws -> HSMAuthSessionKeys {
        try await calculate(
            label: label, context: context, publicKey: nil, cardCryptogram: cardCryptogram,
            credentialPassword: credentialPassword)
    }

    /// The session keys of an asymmetric credential: `context` is EPK.OCE then EPK.SD (130 bytes), `publicKey`
    /// the YubiHSM 2's PK.SD, `receipt` its receipt.
    public func calculateAsymmetric(
        label: String, context: [UInt8], publicKey: P256PublicKey, receipt: [UInt8], credentialPassword: SecretBytes
    ) async throws -> HSMAuthSessionKeys {
        try require(HSMAuth.asymmetricFirmware)
        return try await calculate(
            label: label, context: context, publicKey: publicKey.uncompressed, cardCryptogram: receipt,
            credentialPassword: credentialPassword)
    }

    private func calculate(
        label: String, context: [UInt8], publicKey: [UInt8]?, cardCryptogram: [UInt8]?,
        credentialPassword: SecretBytes
    ) async throws -> HSMAuthSessionKeys {
        var data = TLV(Tag.label, try Self.labelBytes(label)).encoded + TLV(Tag.context, context).encoded
        if let publicKey { data += TLV(Tag.publicKey, publicKey).encoded }
        if let cardCryptogram, !cardCryptogram.isEmpty { data += TLV(Tag.response, cardCryptogram).encoded }
        data += TLV(Tag.credentialPassword, try Self.sixteen(credentialPassword)).encoded
        var answer = try await send(APDU(ins: Ins.calculate, data: data, le: 256), .credentialPassword)
        defer { SecretBytes.wipe(&answer) }
        return try HSMAuthSessionKeys(answer: answer)
    }
}
