import FoundationEssentials
import Glibc
import KeyKit

/// Reset, credential management and the wrapped key handles of non-resident credentials.
extension FIDOAuthenticator {
    // MARK: reset

    func reset(
        _ state: inout VirtualKeyState, _ now: Double,
        _ presence: () -> Presence
    ) throws(Failure) -> [UInt8] {
        guard now - poweredUpAt <= resetWindow else { throw .status(CTAPError.notAllowed) }
        try collectPresence(presence)
        let attestationKey = state.fido.attestationKey
        let attestationCertificate = state.fido.attestationCertificate
        state.fido = FIDOState(
            wrapEncryptionKey: Crypto.random(32), wrapMACKey: Crypto.random(32),
            attestationKey: attestationKey, attestationCertificate: attestationCertificate)
        token = nil
        consecutiveWrongPINs = 0
        currentKeyAgreementKey = nil
        pendingEnrollment = nil
        return [CTAP2.ok]
    }

    // MARK: Credential management

    typealias CredentialAnswer = CTAP2.CredentialManagement.ResponseKey

    func credentialManagement(
        _ p: Fields, _ state: inout VirtualKeyState, rps: [RPEntry]?,
        credentials: [FIDOState.Credential]?
    ) throws(Failure) -> [UInt8] {
        typealias Sub = CTAP2.CredentialManagement.Subcommand
        typealias Key = CTAP2.CredentialManagement.Key
        typealias SubKey = CTAP2.CredentialManagement.SubcommandKey
        guard let sub = try p.int(Key.subcommand) else { throw .status(CTAPError.missingParameter) }
        let subParams = try p.map(Key.subcommandParams)

        switch sub {
        case Sub.enumerateRPsGetNextRP:
            guard let rps, !rps.isEmpty else { throw .status(CTAPError.notAllowed) }
            return enumerate(rps, totalKey: nil, rpFields, pending: \.pendingRPs)
        case Sub.enumerateCredentialsGetNextCredential:
            guard let credentials, !credentials.isEmpty else { throw .status(CTAPError.notAllowed) }
            return enumerate(credentials, totalKey: nil, credentialFields, pending: \.pendingCredentials)
        case Sub.getCredsMetadata, Sub.enumerateRPsBegin, Sub.enumerateCredentialsBegin, Sub.deleteCredential,
            Sub.updateUserInformation:
            break
        default:
            throw .status(CTAPError.invalidSubcommand)
        }

        guard let auth = try p.bytes(Key.pinUVAuthParam) else { throw .status(CTAPError.pinRequired) }
        let pinProtocol = try requestProtocol(p, key: Key.pinUVAuthProtocol)
        var message = [UInt8(sub)]
        if let raw = p[Key.subcommandParams] { message += raw.encoded }
        // The RP a bound token is for is checked below, per subcommand.
        try authorize(pinProtocol, auth, message, permission: .credentialManagement, rpID: nil)
        let boundRP = token?.rpID

        switch sub {
        case Sub.getCredsMetadata:
            guard boundRP == nil else { throw .status(CTAPError.pinAuthInvalid) }
            let count = state.fido.credentials.count
            return Self.ok([
                CredentialAnswer.existingResidentCredentialsCount: CBOR(count),
                CredentialAnswer.maxPossibleRemainingResidentCredentialsCount:
                    CBOR(max(0, FIDOState.capacity(for: state.version) - count)),
            ])

        case Sub.enumerateRPsBegin:
            guard boundRP == nil else { throw .status(CTAPError.pinAuthInvalid) }
            var entries = [RPEntry]()
            for c in state.fido.credentials.sorted(by: { $0.created < $1.created })
            where !entries.contains(where: { $0.id == c.rpID }) {
                entries.append(RPEntry(id: c.rpID, name: c.rpName))
            }
            guard !entries.isEmpty else { throw .status(CTAPError.noCredentials) }
            return enumerate(entries, totalKey: CredentialAnswer.totalRPs, rpFields, pending: \.pendingRPs)

        case Sub.enumerateCredentialsBegin:
            guard let rpIDHash = try subParams?.bytes(SubKey.rpIDHash) else {
                throw .status(CTAPError.missingParameter)
            }
            if let boundRP, Crypto.digest(.sha256, Array(boundRP.utf8)) != rpIDHash {
                throw .status(CTAPError.pinAuthInvalid)
            }
            let matching = state.fido.credentials
                .filter { Crypto.digest(.sha256, Array($0.rpID.utf8)) == rpIDHash }
                .sorted { $0.created < $1.created }
            guard !matching.isEmpty else { throw .status(CTAPError.noCredentials) }
            return enumerate(
                matching, totalKey: CredentialAnswer.totalCredentials, credentialFields,
                pending: \.pendingCredentials)

        case Sub.deleteCredential:
            let index = try residentIndex(subParams, state, boundRP: boundRP)
            state.fido.credentials.remove(at: index)
            return [CTAP2.ok]

        default:  // updateUserInformation
            let index = try residentIndex(subParams, state, boundRP: boundRP)
            guard let user = try subParams?.map(SubKey.user) else { throw .status(CTAPError.missingParameter) }
            guard let userID = try user.bytes("id") else { throw .status(CTAPError.missingParameter) }
            guard userID == state.fido.credentials[index].userID else {
                throw .status(CTAPError.invalidParameter)
            }
            state.fido.credentials[index].userName = try user.text("name")
            state.fido.credentials[index].userDisplayName = try user.text("displayName")
            return [CTAP2.ok]
        }
    }

    /// The answer of an enumeration: the first of `entries` (not empty), with how many there are under
    /// `totalKey` for a Begin subcommand; the rest wait in `pending` for the GetNext subcommand.
    func enumerate<Entry>(
        _ entries: [Entry], totalKey: Int?, _ fields: (Entry) -> [Int: CBOR],
        pending: ReferenceWritableKeyPath<FIDOAuthenticator, [Entry]?>
    ) -> [UInt8] {
        var answer = fields(entries[0])
        if let totalKey { answer[totalKey] = CBOR(entries.count) }
        if entries.count > 1 { self[keyPath: pending] = Array(entries.dropFirst()) }
        return Self.ok(answer)
    }

    /// The stored credential a subcommand's credentialId descriptor names.
    func residentIndex(
        _ subParams: Fields?, _ state: VirtualKeyState,
        boundRP: String?
    ) throws(Failure) -> Int {
        let key = CTAP2.CredentialManagement.SubcommandKey.credentialID
        guard let descriptor = try subParams?.map(key) else { throw .status(CTAPError.missingParameter) }
        guard let id = try descriptor.bytes("id") else { throw .status(CTAPError.missingParameter) }
        guard let index = state.fido.credentials.firstIndex(where: { $0.id == id }) else {
            throw .status(CTAPError.noCredentials)
        }
        if let boundRP, state.fido.credentials[index].rpID != boundRP { throw .status(CTAPError.pinAuthInvalid) }
        return index
    }

    func rpFields(_ rp: RPEntry) -> [Int: CBOR] {
        var entity: [CBOR: CBOR] = ["id": .text(rp.id)]
        if let name = rp.name { entity["name"] = .text(name) }
        return [
            CredentialAnswer.rp: .map(entity),
            CredentialAnswer.rpIDHash: .bytes(Crypto.digest(.sha256, Array(rp.id.utf8))),
        ]
    }

    func credentialFields(_ c: FIDOState.Credential) -> [Int: CBOR] {
        var user: [CBOR: CBOR] = ["id": .bytes(c.userID)]
        if let name = c.userName { user["name"] = .text(name) }
        if let name = c.userDisplayName { user["displayName"] = .text(name) }
        var fields: [Int: CBOR] = [
            CredentialAnswer.user: .map(user),
            CredentialAnswer.credentialID: CTAP2.credentialDescriptor(c.id),
            CredentialAnswer.credProtect: CBOR(c.credProtect),
        ]
        if let key = FIDOCredentialKey(algorithm: c.algorithm, raw: c.privateKey) {
            fields[CredentialAnswer.publicKey] = key.publicKey
        }
        return fields
    }

    // MARK: Key handles

    static let keyHandleFormat: UInt8 = 0x01
    static let keyHandleLength = 98

    func ensureWrappingKeys(_ state: inout VirtualKeyState) {
        if state.fido.wrapEncryptionKey.count != 32 { state.fido.wrapEncryptionKey = Crypto.random(32) }
        if state.fido.wrapMACKey.count != 32 { state.fido.wrapMACKey = Crypto.random(32) }
    }

    /// The key handle flag of an EdDSA key; without it the key is a P-256 one (ES256, and every U2F key).
    static let keyHandleEdDSA: UInt8 = 0x40

    func wrap(
        _ privateKey: [UInt8], algorithm: Int, rpIDHash: [UInt8], credProtect: Int, hmacSecret: Bool,
        _ fido: FIDOState
    ) -> [UInt8]? {
        let edDSA = algorithm == COSE.Algorithm.edDSA ? Self.keyHandleEdDSA : 0
        let flags = UInt8(credProtect & 0x03) | edDSA | (hmacSecret ? 0x80 : 0)
        let iv = Crypto.random(16)
        guard let sealed = try? Crypto.aes256CBCEncrypt(key: fido.wrapEncryptionKey, iv: iv, privateKey + rpIDHash)
        else { return nil }
        let body = [Self.keyHandleFormat, flags] + iv + sealed
        return body + Crypto.hmac(.sha256, key: fido.wrapMACKey, data: body).prefix(16)
    }

    func unwrap(_ handle: [UInt8], rpIDHash: [UInt8], _ fido: FIDOState)
        -> (algorithm: Int, privateKey: [UInt8], credProtect: Int, hmacSecret: Bool)?
    {
        guard handle.count == Self.keyHandleLength, handle[0] == Self.keyHandleFormat,
            fido.wrapEncryptionKey.count == 32, fido.wrapMACKey.count == 32
        else { return nil }
        let body = Array(handle[..<82])
        let mac = Array(Crypto.hmac(.sha256, key: fido.wrapMACKey, data: body).prefix(16))
        guard Crypto.constantTimeEqual(mac, Array(handle[82...])) else { return nil }
        guard
            let plain = try? Crypto.aes256CBCDecrypt(
                key: fido.wrapEncryptionKey, iv: Array(handle[2..<18]),
                Array(handle[18..<82])),
            plain.count == 64, Crypto.constantTimeEqual(Array(plain[32...]), rpIDHash)
        else { return nil }
        let level = Int(handle[1] & 0x03)
        guard (1...3).contains(level) else { return nil }
        let algorithm = handle[1] & Self.keyHandleEdDSA != 0 ? COSE.Algorithm.edDSA : COSE.Algorithm.es256
        return (algorithm, Array(plain[..<32]), level, handle[1] & 0x80 != 0)
    }
}
