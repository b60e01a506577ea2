// The slots' keys: GENERAL AUTHENTICATE (sign, ECDH), GENERATE ASYMMETRIC, IMPORT KEY, ATTEST, MOVE KEY.

/// A slot's attestation: a certificate for the slot's key, signed by the key in slot F9.
public struct PIVAttestation: Sendable {
    /// The attestation of the slot's key.
    public let certificate: X509Certificate
    /// Slot F9's certificate, whose key signed `certificate`.
    public let attestationCertificate: X509Certificate
    /// The attested key.
    public let publicKey: AsymmetricPublicKey
}

extension PIVSession {
    /// GENERAL AUTHENTICATE with a slot's key: `input` as the challenge (81), or as the peer's key for ECDH (85);
    /// the answer is the response (82).
    func useKey(in slot: PIV.Slot, algorithm: PIV.Algorithm, _ input: [UInt8], exponentiation: Bool) async throws
        -> [UInt8]
    {
        let template =
            TLV(Tag.response, []).encoded
            + TLV(exponentiation ? Tag.exponentiation : Tag.challenge, input).encoded
        let apdu = APDU(
            ins: Ins.authenticate, p1: algorithm.rawValue, p2: slot.rawValue,
            data: TLV(Tag.dynamicAuthentication, template).encoded, le: 256)
        let answer = try await send(apdu, slot: slot)
        return try PIVSession.field(
            Tag.response,
            in: PIVSession.parseTLVs(
                PIVSession.unwrap(Tag.dynamicAuthentication, answer)))
    }

    /// The algorithm of the key in `slot`: from metadata (5.3 and later), else from the slot's certificate.
    public func keyAlgorithm(in slot: PIV.Slot) async throws -> PIV.Algorithm {
        if PIVFeature.metadata.isSupported(by: version) { return try await slotMetadata(slot).algorithm }
        guard let spki = try await certificate(in: slot)?.subjectPublicKeyInfo,
            let algorithm = try? AsymmetricPublicKey(spki: spki).pivAlgorithm
        else {
            throw PIVError.notSupported(feature: .metadata, minimum: PIVFeature.metadata.minimum, actual: version)
        }
        return algorithm
    }

    /// Signs `message` with the key in `slot` (after the PIN, and a touch if the slot's policy asks). RSA: the
    /// digest padded here (PKCS #1 v1.5 or PSS), the raw signature out; EC: ECDSA over the digest, DER out;
    /// Ed25519: the message itself, 64 bytes out. `algorithm` nil asks `keyAlgorithm(in:)`.
    public func sign(
        _ message: [UInt8], in slot: PIV.Slot, algorithm: PIV.Algorithm? = nil,
        scheme: PIVSignatureScheme = PIVSignatureScheme()
    ) async throws -> [UInt8] {
        let algorithm = if let algorithm { algorithm } else { try await keyAlgorithm(in: slot) }
        if let length = algorithm.rsaModulusLength {
            let bits = length * 8
            let block =
                switch scheme.padding {
                case .pkcs1: try RSAPadding.pkcs1v15(message: message, digest: scheme.digest, modulusBits: bits)
                case .pss: try RSAPadding.pss(message: message, digest: scheme.digest, modulusBits: bits)
                }
            let signature = try await useKey(in: slot, algorithm: algorithm, block, exponentiation: false)
            guard signature.count <= length else {
                throw PIVError.malformed(.resultLength(expected: length, actual: signature.count))
            }
            return [UInt8](repeating: 0, count: length - signature.count) + signature
        }
        switch algorithm {
        case .eccP256, .eccP384:
            return try await useKey(
                in: slot, algorithm: algorithm,
                PIVSession.fitted(
                    scheme.digest.hash(message),
                    to: algorithm.curveLength ?? 32),
                exponentiation: false)
        case .ed25519:
            let signature = try await useKey(in: slot, algorithm: algorithm, message, exponentiation: false)
            guard signature.count == 64 else {
                throw PIVError.malformed(.resultLength(expected: 64, actual: signature.count))
            }
            return signature
        default:
            throw PIVError.notASlotKeyAlgorithm(algorithm)
        }
    }

    /// An ECDSA input: the digest's leftmost bytes when longer than the curve, zeros before it when shorter.
    static func fitted(_ digest: [UInt8], to length: Int) -> [UInt8] {
        digest.count >= length
            ? Array(digest.prefix(length)) : [UInt8](repeating: 0, count: length - digest.count) + digest
    }

    /// ECDH (P-256, P-384) or X25519 of the key in `slot` with `peer`: the shared secret (the x coordinate).
    public func sharedSecret(in slot: PIV.Slot, peer: AsymmetricPublicKey) async throws -> [UInt8] {
        guard let algorithm = peer.pivAlgorithm, [.eccP256, .eccP384, .x25519].contains(algorithm) else {
            throw PIVError.notASlotKeyAlgorithm(peer.pivAlgorithm ?? .rsa2048)
        }
        let point = (algorithm == .x25519 ? peer.raw : peer.ecPoint) ?? []
        let secret = try await useKey(in: slot, algorithm: algorithm, point, exponentiation: true)
        let length = algorithm.curveLength ?? 32
        guard secret.count == length else {
            throw PIVError.malformed(.resultLength(expected: length, actual: secret.count))
        }
        return secret
    }

    /// Checks that this firmware has `algorithm` and the policies.
    func checkSupport(_ algorithm: PIV.Algorithm, pinPolicy: PIV.PINPolicy, touchPolicy: PIV.TouchPolicy) throws {
        guard !algorithm.isManagementKey else { throw PIVError.notASlotKeyAlgorithm(algorithm) }
        try PIVFeature.needed(for: algorithm)?.check(version)
        if pinPolicy != .default || touchPolicy != .default { try PIVFeature.policies.check(version) }
        if touchPolicy == .cached { try PIVFeature.cachedTouch.check(version) }
    }

    static func policyTLVs(_ pinPolicy: PIV.PINPolicy, _ touchPolicy: PIV.TouchPolicy) -> [UInt8] {
        (pinPolicy == .default ? [] : TLV(Tag.pinPolicy, [pinPolicy.rawValue]).encoded)
            + (touchPolicy == .default ? [] : TLV(Tag.touchPolicy, [touchPolicy.rawValue]).encoded)
    }

    /// GENERATE ASYMMETRIC: a new key in `slot` (replacing any); returns its public key. Needs the management key.
    public func generateKey(
        in slot: PIV.Slot, algorithm: PIV.Algorithm, pinPolicy: PIV.PINPolicy = .default,
        touchPolicy: PIV.TouchPolicy = .default
    ) async throws -> AsymmetricPublicKey {
        try checkSupport(algorithm, pinPolicy: pinPolicy, touchPolicy: touchPolicy)
        let template =
            TLV(Tag.generateAlgorithm, [algorithm.rawValue]).encoded + PIVSession.policyTLVs(pinPolicy, touchPolicy)
        let answer = try await send(
            APDU(
                ins: Ins.generateAsymmetric, p2: slot.rawValue,
                data: TLV(Tag.generateTemplate, template).encoded, le: 256), slot: slot)
        return try AsymmetricPublicKey(pivEncoding: PIVSession.unwrap(Tag.publicKey, answer), algorithm: algorithm)
    }

    /// IMPORT KEY: `key` into `slot` (RSA keys need the exponent 65537); returns the algorithm it went in as.
    /// Needs the management key.
    @discardableResult
    public func importKey(
        _ key: AsymmetricPrivateKey, in slot: PIV.Slot, pinPolicy: PIV.PINPolicy = .default,
        touchPolicy: PIV.TouchPolicy = .default
    ) async throws -> PIV.Algorithm {
        guard let algorithm = key.type.pivAlgorithm else {
            if case .rsa = key.type { throw PIVError.notASlotKeyAlgorithm(.rsa2048) }
            throw CryptoError.keyType
        }
        try checkSupport(algorithm, pinPolicy: pinPolicy, touchPolicy: touchPolicy)
        var data = try key.pivImportData() + PIVSession.policyTLVs(pinPolicy, touchPolicy)
        defer { SecretBytes.wipe(&data) }
        _ = try await send(APDU(ins: Ins.importKey, p1: algorithm.rawValue, p2: slot.rawValue, data: data), slot: slot)
        return algorithm
    }

    /// ATTEST: the key in `slot` certified by the key in F9, with the chain checked: the attestation must verify
    /// with the F9 certificate's key, and when `expected` is given, certify that key.
    public func attest(_ slot: PIV.Slot, expected: AsymmetricPublicKey? = nil) async throws -> PIVAttestation {
        try PIVFeature.attestation.check(version)
        let der = try await send(APDU(ins: Ins.attest, p1: slot.rawValue, le: 256), slot: slot)
        guard let certificate = try? X509Certificate(der: der),
            let spki = certificate.subjectPublicKeyInfo, let key = try? AsymmetricPublicKey(spki: spki)
        else {
            throw PIVError.malformed(.certificate)
        }
        guard let device = try await self.certificate(in: .attestation) else {
            throw PIVError.objectNotFound(PIV.ObjectID.attestationCertificate)
        }
        guard let deviceKey = device.subjectPublicKeyInfo, certificate.isSigned(byKey: deviceKey) else {
            throw PIVError.attestationNotSignedByDevice(slot)
        }
        if let expected, expected != key { throw PIVError.attestedKeyMismatch(slot) }
        return PIVAttestation(certificate: certificate, attestationCertificate: device, publicKey: key)
    }

    /// MOVE KEY (firmware 5.7): the key in `from` to the empty slot `to`. Needs the management key.
    public func moveKey(from: PIV.Slot, to: PIV.Slot) async throws {
        try PIVFeature.moveKey.check(version)
        _ = try await send(APDU(ins: Ins.moveKey, p1: to.rawValue, p2: from.rawValue), slot: from)
    }

    /// Deletes the key in `slot` (firmware 5.7; MOVE KEY to FF). Needs the management key.
    public func deleteKey(in slot: PIV.Slot) async throws {
        try PIVFeature.moveKey.check(version)
        _ = try await send(APDU(ins: Ins.moveKey, p1: 0xFF, p2: slot.rawValue), slot: slot)
    }
}
