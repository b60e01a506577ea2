/// Credential management (CTAP 2.1 section 6.8, or the 2.1 preview command on YubiKey 5.2 to 5.4): the
/// discoverable credentials on the key, by relying party, with a PIN token that has the permission.
extension CTAP2Session {
    public struct CredentialsMetadata: Sendable, Equatable {
        public var existing: Int
        public var remaining: Int
    }

    public struct StoredRelyingParty: Sendable, Hashable {
        public var id: String
        public var name: String?
        public var idHash: [UInt8]
    }

    public struct StoredCredential: Sendable, Hashable {
        public var rpID: String
        public var credentialID: [UInt8]
        public var user: User
        /// The credential's public key as the key gave it (a COSE_Key); `key` reads it.
        public var publicKey: CBOR?
        /// The credProtect level (1 userVerificationOptional, 2 userVerificationOptionalWithCredentialIDList,
        /// 3 userVerificationRequired), when the key says.
        public var credProtect: Int?
        /// Whether the key answered a largeBlobKey for the credential (the key itself is not kept).
        public var hasLargeBlobKey: Bool

        public init(
            rpID: String, credentialID: [UInt8], user: User, publicKey: CBOR? = nil, credProtect: Int? = nil,
            hasLargeBlobKey: Bool = false
        ) {
            self.rpID = rpID
            self.credentialID = credentialID
            self.user = user
            self.publicKey = publicKey
            self.credProtect = credProtect
            self.hasLargeBlobKey = hasLargeBlobKey
        }

        /// The public key, if the key gave one of an algorithm ykterm verifies (ES256 or EdDSA).
        public var key: CredentialPublicKey? { publicKey.flatMap { try? CredentialPublicKey(cose: $0) } }
    }

    private var credMgmtCommand: CTAP2.Command {
        info.options["credMgmt"] == true ? .credentialManagement : .credentialManagementPreview
    }

    private func credMgmt(_ sub: Int, _ subParams: CBOR? = nil, authenticated: Bool = true) async throws -> CBOR? {
        guard info.supportsCredentialManagement else {
            throw FIDOSessionError.notSupported(.credentialManagement)
        }
        typealias Key = CTAP2.CredentialManagement.Key
        var params: CTAPParameters = [Key.subcommand: CBOR(sub)]
        if let subParams { params[Key.subcommandParams] = subParams }
        if authenticated {
            let t = try requireToken()
            params[Key.pinUVAuthProtocol] = CBOR(t.protocolVersion.version)
            let message = [UInt8(sub)] + (subParams?.encoded ?? [])
            params[Key.pinUVAuthParam] = .bytes(t.protocolVersion.authenticate(key: t.value, message))
        }
        return try await send(credMgmtCommand, params)
    }

    typealias CredSub = CTAP2.CredentialManagement.Subcommand
    typealias CredSubKey = CTAP2.CredentialManagement.SubcommandKey
    typealias CredAnswer = CTAP2.CredentialManagement.ResponseKey

    public func credentialsMetadata() async throws -> CredentialsMetadata {
        let r = try await credMgmt(CredSub.getCredsMetadata)
        return CredentialsMetadata(
            existing: r?[CredAnswer.existingResidentCredentialsCount]?.int ?? 0,
            remaining: r?[CredAnswer.maxPossibleRemainingResidentCredentialsCount]?.int ?? 0)
    }

    public func relyingParties() async throws -> [StoredRelyingParty] {
        let first: CBOR?
        do {
            first = try await credMgmt(CredSub.enumerateRPsBegin)
        } catch let e as CTAPError where e.code == CTAPError.noCredentials {
            return []
        }
        guard let first, let total = first[CredAnswer.totalRPs]?.int else { return [] }
        var out = [StoredRelyingParty]()
        func add(_ r: CBOR?) throws {
            guard let r, let id = r[CredAnswer.rp]?["id"]?.string, let hash = r[CredAnswer.rpIDHash]?.bytes else {
                throw FIDOSessionError.malformed(Malformation(.relyingPartyEntry, .incomplete))
            }
            out.append(StoredRelyingParty(id: id, name: r[CredAnswer.rp]?["name"]?.string, idHash: hash))
        }
        try add(first)
        if total > 1 {
            for _ in 1..<total { try add(try await credMgmt(CredSub.enumerateRPsGetNextRP, authenticated: false)) }
        }
        return out
    }

    public func credentials(of rp: StoredRelyingParty) async throws -> [StoredCredential] {
        let first: CBOR?
        do {
            first = try await credMgmt(
                CredSub.enumerateCredentialsBegin,
                [CBOR(CredSubKey.rpIDHash): .bytes(rp.idHash)])
        } catch let e as CTAPError where e.code == CTAPError.noCredentials {
            return []
        }
        guard let first, let total = first[CredAnswer.totalCredentials]?.int else { return [] }
        var out = [StoredCredential]()
        func add(_ r: CBOR?) throws {
            guard let r, let user = User(cbor: r[CredAnswer.user]), let id = r[CredAnswer.credentialID]?["id"]?.bytes
            else {
                throw FIDOSessionError.malformed(Malformation(.credentialEntry, .incomplete))
            }
            out.append(
                StoredCredential(
                    rpID: rp.id, credentialID: id, user: user, publicKey: r[CredAnswer.publicKey],
                    credProtect: r[CredAnswer.credProtect]?.int,
                    hasLargeBlobKey: r[CredAnswer.largeBlobKey]?.bytes?.isEmpty == false))
        }
        try add(first)
        if total > 1 {
            for _ in 1..<total {
                try add(try await credMgmt(CredSub.enumerateCredentialsGetNextCredential, authenticated: false))
            }
        }
        return out
    }

    public func deleteCredential(_ credentialID: [UInt8]) async throws {
        _ = try await credMgmt(
            CredSub.deleteCredential,
            [CBOR(CredSubKey.credentialID): CTAP2.credentialDescriptor(credentialID)])
    }

    /// updateUserInformation: the credential's user gets `user`'s name and display name; a name that is nil
    /// (or empty) is removed from the credential (CTAP 2.1 section 6.8.6). The user ID must be the
    /// credential's.
    public func updateUser(_ credentialID: [UInt8], user: User) async throws {
        guard info.supportsUpdateUserInformation else { throw FIDOSessionError.notSupported(.updateUserInformation) }
        _ = try await credMgmt(
            CredSub.updateUserInformation,
            [
                CBOR(CredSubKey.credentialID): CTAP2.credentialDescriptor(credentialID),
                CBOR(CredSubKey.user): user.cbor,
            ])
    }
}
