// The management key: mutual authentication (GENERAL AUTHENTICATE on key reference 9B) and SET MANAGEMENT KEY.

extension PIVSession {
    /// The management key's algorithm: from metadata (5.3 and later), else 3DES, the only one older keys have.
    public func managementKeyAlgorithm() async throws -> PIV.Algorithm {
        if let known = managementKeyAlgorithmKnown { return known }
        guard PIVFeature.metadata.isSupported(by: version) else {
            managementKeyAlgorithmKnown = .tripleDES
            return .tripleDES
        }
        return try await managementKeyMetadata().algorithm
    }

    /// The default management key's algorithm on this firmware: AES-192 from 5.7, 3DES before.
    public nonisolated var defaultManagementKeyAlgorithm: PIV.Algorithm {
        version >= PIV.version57 ? .aes192 : .tripleDES
    }

    /// Mutual authentication with the management key: the key sends an encrypted witness, we send it back
    /// decrypted with a challenge of ours, and the key answers the challenge encrypted. `algorithm` nil asks
    /// `managementKeyAlgorithm()`. Wrong key: `managementKeyAuthenticationFailed`.
    public func authenticate(managementKey key: SecretBytes, algorithm: PIV.Algorithm? = nil) async throws {
        let algorithm = if let algorithm { algorithm } else { try await managementKeyAlgorithm() }
        guard let cipher = BlockCipher.Algorithm(algorithm) else {
            throw PIVError.notAManagementKeyAlgorithm(algorithm)
        }
        guard key.count == cipher.keyLength else {
            throw PIVError.managementKeyLength(expected: cipher.keyLength, actual: key.count)
        }
        let ref = PIV.Reference.managementKey
        let request = TLV(Tag.dynamicAuthentication, TLV(Tag.witness, []).encoded).encoded
        let first = try await send(APDU(ins: Ins.authenticate, p1: algorithm.rawValue, p2: ref, data: request, le: 256))
        let witness = try PIVSession.field(
            Tag.witness,
            in: PIVSession.parseTLVs(
                PIVSession.unwrap(Tag.dynamicAuthentication, first)))
        guard witness.count == cipher.blockSize else {
            throw PIVError.malformed(.fieldLength(tag: Tag.witness, length: witness.count))
        }
        var decrypted = try BlockCipher.decrypt(cipher, key: key, block: witness)
        defer { SecretBytes.wipe(&decrypted) }
        let challenge = Crypto.random(cipher.blockSize)
        let answer = TLV(
            Tag.dynamicAuthentication,
            TLV(Tag.witness, decrypted).encoded + TLV(Tag.challenge, challenge).encoded
        ).encoded
        let response = try await proto.send(
            APDU(
                ins: Ins.authenticate, p1: algorithm.rawValue, p2: ref, data: answer,
                le: 256))
        if response.status == .securityConditionNotSatisfied { throw PIVError.managementKeyAuthenticationFailed }
        let theirs = try PIVSession.field(
            Tag.response,
            in: PIVSession.parseTLVs(
                PIVSession.unwrap(Tag.dynamicAuthentication, PIVSession.check(response))))
        let expected = try BlockCipher.encrypt(cipher, key: key, block: challenge)
        guard Crypto.constantTimeEqual(theirs, expected) else { throw PIVError.managementKeyResponseMismatch }
        managementKeyAlgorithmKnown = algorithm
    }

    /// SET MANAGEMENT KEY (after `authenticate`): a new key of `algorithm` (AES from firmware 5.4), which
    /// may ask for a touch on every use.
    public func setManagementKey(_ key: SecretBytes, algorithm: PIV.Algorithm, requireTouch: Bool = false) async throws
    {
        guard let cipher = BlockCipher.Algorithm(algorithm) else {
            throw PIVError.notAManagementKeyAlgorithm(algorithm)
        }
        if algorithm != .tripleDES { try PIVFeature.aesManagementKey.check(version) }
        guard key.count == cipher.keyLength else {
            throw PIVError.managementKeyLength(expected: cipher.keyLength, actual: key.count)
        }
        var data = [algorithm.rawValue] + TLV(UInt32(PIV.Reference.managementKey), key.copyBytes()).encoded
        defer { SecretBytes.wipe(&data) }
        _ = try await send(APDU(ins: Ins.setManagementKey, p1: 0xFF, p2: requireTouch ? 0xFE : 0xFF, data: data))
        managementKeyAlgorithmKnown = algorithm
    }
}
