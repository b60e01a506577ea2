import FoundationEssentials
import Glibc
import KeyKit

/// Making credentials and assertions, and the hmac-secret extension.
extension FIDOAuthenticator {
    // MARK: makeCredential

    func makeCredential(
        _ p: Fields, _ state: inout VirtualKeyState,
        _ presence: () -> Presence
    ) throws(Failure) -> [UInt8] {
        typealias Key = CTAP2.MakeCredential.Key
        guard let clientDataHash = try p.bytes(Key.clientDataHash), let rp = try p.map(Key.rp),
            let user = try p.map(Key.user), let algorithms = try p.array(Key.pubKeyCredParams)
        else {
            throw .status(CTAPError.missingParameter)
        }
        guard let rpID = try rp.text("id") else { throw .status(CTAPError.missingParameter) }
        let rpName = try rp.text("name")
        guard let userID = try user.bytes("id") else { throw .status(CTAPError.missingParameter) }
        guard userID.count <= 64 else { throw .status(CTAPError.invalidLength) }
        let userName = try user.text("name")
        let userDisplayName = try user.text("displayName")
        let excludeList = try p.array(Key.excludeList) ?? []
        let extensions = try p.map(Key.extensions) ?? Fields([:])
        let options = try p.map(Key.options) ?? Fields([:])
        let pinAuth = try pinAuth(p, param: Key.pinUVAuthParam, protocol: Key.pinUVAuthProtocol, state, presence)
        let (auth, pinProtocol) = (pinAuth?.param, pinAuth?.pinProtocol)

        // The first algorithm the RP lists that this key makes credentials with, in the RP's order.
        let supported = FIDOCredentialKey.algorithms(for: state.version)
        var algorithm: Int?
        for entry in algorithms {
            guard let m = entry.map else { throw .status(CTAPError.cborUnexpectedType) }
            let fields = Fields(m)
            guard let type = try fields.text("type"), let alg = try fields.int("alg") else {
                throw .status(CTAPError.missingParameter)
            }
            if algorithm == nil && type == CTAP2.publicKeyType && supported.contains(alg) { algorithm = alg }
        }
        guard let algorithm else { throw .status(CTAPError.unsupportedAlgorithm) }

        let rk = try options.bool("rk") ?? false
        if try options.bool("up") == false { throw .status(CTAPError.invalidOption) }
        // No built-in user verification: uv is only meaningful through pinUvAuthParam.
        if try options.bool("uv") == true, auth == nil { throw .status(CTAPError.invalidOption) }

        if auth == nil && state.fido.isPINSet && rk { throw .status(CTAPError.pinRequired) }
        // alwaysUv: no credential without user verification (CTAP 2.1 makeCredential, step 6).
        if auth == nil && state.fido.alwaysUV { throw .status(CTAPError.pinRequired) }
        if p[Key.enterpriseAttestation] != nil { throw .status(CTAPError.invalidParameter) }  // not supported

        var userVerified = false
        if let auth, let pinProtocol {
            try authorize(pinProtocol, auth, clientDataHash, permission: .makeCredential, rpID: rpID)
            guard token?.userVerified == true else { throw .status(CTAPError.pinAuthInvalid) }
            userVerified = true
        }

        let rpIDHash = Crypto.digest(.sha256, Array(rpID.utf8))
        for excluded in try locate(excludeList, rpID: rpID, rpIDHash: rpIDHash, state)
        where excluded.credProtect < 3 || userVerified {
            try collectPresence(presence)
            throw .status(CTAPError.credentialExcluded)
        }

        var credProtect = 1
        if let level = try extensions.int("credProtect"), (1...3).contains(level) { credProtect = level }
        let requestedCredProtect = try extensions.int("credProtect").map { _ in credProtect }
        let hmacSecret = try extensions.bool("hmac-secret") ?? false
        let minPINLength = try minPINLengthOutput(extensions, rpID: rpID, state)

        if rk {
            let replacing = state.fido.credentials.contains { $0.rpID == rpID && $0.userID == userID }
            guard replacing || state.fido.credentials.count < FIDOState.capacity(for: state.version) else {
                throw .status(CTAPError.keyStoreFull)
            }
        }

        try collectPresence(presence)
        // Nothing above changed any state: from here on the command completes.
        if userVerified {
            consumeToken(boundTo: rpID)
        }
        ensureWrappingKeys(&state)

        guard let key = FIDOCredentialKey(generating: algorithm) else { throw .status(CTAPError.other) }
        let credentialID: [UInt8]
        if rk {
            credentialID = Crypto.random(32)
            state.fido.credentials.removeAll { $0.rpID == rpID && $0.userID == userID }
            state.fido.credentials.append(
                FIDOState.Credential(
                    id: credentialID, rpID: rpID, rpName: rpName, userID: userID, userName: userName,
                    userDisplayName: userDisplayName, algorithm: algorithm, privateKey: key.raw,
                    credProtect: credProtect, hmacSecret: hmacSecret, created: state.fido.nextCreated))
            state.fido.nextCreated += 1
        } else {
            guard
                let handle = wrap(
                    key.raw, algorithm: algorithm, rpIDHash: rpIDHash, credProtect: credProtect,
                    hmacSecret: hmacSecret, state.fido)
            else { throw .status(CTAPError.other) }
            credentialID = handle
        }
        state.fido.signCount &+= 1

        var outputs = [CBOR: CBOR]()
        if requestedCredProtect != nil { outputs["credProtect"] = CBOR(credProtect) }
        if hmacSecret { outputs["hmac-secret"] = true }
        if let minPINLength { outputs["minPinLength"] = minPINLength }
        var flags: UInt8 = Flag.userPresent | Flag.attestedCredentialData
        if userVerified { flags |= Flag.userVerified }
        if !outputs.isEmpty { flags |= Flag.extensionData }
        var authData = rpIDHash + [flags] + BigEndian.bytes(UInt64(state.fido.signCount), count: 4)
        authData += Self.aaguid + BigEndian.bytes(UInt64(credentialID.count), count: 2) + credentialID
        authData += key.publicKey.encoded
        if !outputs.isEmpty { authData += CBOR.map(outputs).encoded }

        // Packed self attestation: signed with the credential's own key, so with its algorithm.
        let signature = try sign(key, authData + clientDataHash)
        typealias Answer = CTAP2.MakeCredential.ResponseKey
        return Self.ok([
            Answer.format: "packed",
            Answer.authData: .bytes(authData),
            Answer.attestationStatement: ["alg": CBOR(algorithm), "sig": .bytes(signature)],
        ])
    }

    typealias Flag = CTAP2.AuthDataFlag

    func sign(_ key: FIDOCredentialKey, _ message: [UInt8]) throws(Failure) -> [UInt8] {
        guard let signature = key.sign(message) else { throw .status(CTAPError.other) }
        return signature
    }

    /// After a makeCredential or getAssertion with user presence the token has done its job: its user
    /// verified state and its permissions are gone (CTAP 2.1), the next operation needs a new token.
    func consumeToken(boundTo rpID: String) {
        guard var t = token else { return }
        if t.rpID == nil { t.rpID = rpID }
        t.userVerified = false
        t.permissions = []
        token = t
    }

    // MARK: getAssertion

    func getAssertion(
        _ p: Fields, _ state: inout VirtualKeyState, _ now: Double,
        _ presence: () -> Presence
    ) throws(Failure) -> [UInt8] {
        typealias Key = CTAP2.GetAssertion.Key
        guard let rpID = try p.text(Key.rpID), let clientDataHash = try p.bytes(Key.clientDataHash) else {
            throw .status(CTAPError.missingParameter)
        }
        let allowList = try p.array(Key.allowList) ?? []
        let extensions = try p.map(Key.extensions) ?? Fields([:])
        let options = try p.map(Key.options) ?? Fields([:])
        let pinAuth = try pinAuth(p, param: Key.pinUVAuthParam, protocol: Key.pinUVAuthProtocol, state, presence)
        let (auth, pinProtocol) = (pinAuth?.param, pinAuth?.pinProtocol)

        if try options.bool("rk") != nil { throw .status(CTAPError.unsupportedOption) }
        let up = try options.bool("up") ?? true
        if try options.bool("uv") == true, auth == nil { throw .status(CTAPError.invalidOption) }
        // alwaysUv: no assertion without user verification (CTAP 2.1 getAssertion, step 6).
        if auth == nil && state.fido.alwaysUV { throw .status(CTAPError.pinRequired) }

        var userVerified = false
        if let auth, let pinProtocol {
            try authorize(pinProtocol, auth, clientDataHash, permission: .getAssertion, rpID: rpID)
            guard token?.userVerified == true else { throw .status(CTAPError.pinAuthInvalid) }
            userVerified = true
        }

        let rpIDHash = Crypto.digest(.sha256, Array(rpID.utf8))
        var found: [Located]
        if allowList.isEmpty {
            found = state.fido.credentials.filter { $0.rpID == rpID }
                .sorted { $0.created > $1.created }
                .map {
                    Located(
                        id: $0.id, algorithm: $0.algorithm, privateKey: $0.privateKey,
                        credProtect: $0.credProtect, hmacSecret: $0.hmacSecret, resident: $0)
                }
                .filter { $0.credProtect < 2 || userVerified }
        } else {
            found = try locate(allowList, rpID: rpID, rpIDHash: rpIDHash, state)
                .filter { $0.credProtect < 3 || userVerified }
            // With an allow list the authenticator answers with one credential.
            found = Array(found.prefix(1))
        }

        var hmacSecret: HMACSecretInput?
        if let input = try extensions.map("hmac-secret") {
            hmacSecret = try hmacSecretInput(input)
        }

        guard !found.isEmpty else { throw .status(CTAPError.noCredentials) }

        if up { try collectPresence(presence) }
        if up && userVerified { consumeToken(boundTo: rpID) }

        var flags: UInt8 = up ? Flag.userPresent : 0
        if userVerified { flags |= Flag.userVerified }
        var pending = PendingAssertions(
            remaining: found, rpIDHash: rpIDHash, clientDataHash: clientDataHash,
            flags: flags, hmacSecret: hmacSecret,
            expires: now + Self.nextAssertionTimeout)
        let first = pending.remaining.removeFirst()
        let count = allowList.isEmpty && found.count > 1 ? found.count : nil
        let response = try assertion(first, pending, numberOfCredentials: count, &state)
        if !pending.remaining.isEmpty { pendingAssertions = pending }
        return response
    }

    func getNextAssertion(
        _ pending: PendingAssertions?, _ state: inout VirtualKeyState,
        _ now: Double
    ) throws(Failure) -> [UInt8] {
        guard var pending, !pending.remaining.isEmpty, now <= pending.expires else {
            throw .status(CTAPError.notAllowed)
        }
        let next = pending.remaining.removeFirst()
        pending.expires = now + Self.nextAssertionTimeout
        let response = try assertion(next, pending, numberOfCredentials: nil, &state)
        if !pending.remaining.isEmpty { pendingAssertions = pending }
        return response
    }

    func assertion(
        _ credential: Located, _ pending: PendingAssertions, numberOfCredentials: Int?,
        _ state: inout VirtualKeyState
    ) throws(Failure) -> [UInt8] {
        let userVerified = pending.flags & Flag.userVerified != 0
        var outputs = [CBOR: CBOR]()
        if credential.hmacSecret, let input = pending.hmacSecret {
            outputs["hmac-secret"] = .bytes(
                try hmacSecretOutput(
                    credential, input, userVerified: userVerified,
                    state.fido))
        }
        var flags = pending.flags
        if !outputs.isEmpty { flags |= Flag.extensionData }
        state.fido.signCount &+= 1
        var authData = pending.rpIDHash + [flags] + BigEndian.bytes(UInt64(state.fido.signCount), count: 4)
        if !outputs.isEmpty { authData += CBOR.map(outputs).encoded }
        guard let key = FIDOCredentialKey(algorithm: credential.algorithm, raw: credential.privateKey) else {
            throw .status(CTAPError.other)
        }
        let signature = try sign(key, authData + pending.clientDataHash)

        typealias Answer = CTAP2.GetAssertion.ResponseKey
        var response: [Int: CBOR] = [
            Answer.credential: CTAP2.credentialDescriptor(credential.id),
            Answer.authData: .bytes(authData),
            Answer.signature: .bytes(signature),
        ]
        if let resident = credential.resident {
            var user: [CBOR: CBOR] = ["id": .bytes(resident.userID)]
            // Names only after user verification.
            if userVerified {
                if let name = resident.userName { user["name"] = .text(name) }
                if let name = resident.userDisplayName { user["displayName"] = .text(name) }
            }
            response[Answer.user] = .map(user)
        }
        if let numberOfCredentials { response[Answer.numberOfCredentials] = CBOR(numberOfCredentials) }
        return Self.ok(response)
    }

    /// The credentials of `descriptors` that belong to this authenticator and `rpID`.
    func locate(
        _ descriptors: [CBOR], rpID: String, rpIDHash: [UInt8],
        _ state: VirtualKeyState
    ) throws(Failure) -> [Located] {
        var out = [Located]()
        for descriptor in descriptors {
            guard let m = descriptor.map else { throw .status(CTAPError.cborUnexpectedType) }
            let fields = Fields(m)
            guard let type = try fields.text("type"), let id = try fields.bytes("id") else {
                throw .status(CTAPError.missingParameter)
            }
            guard type == CTAP2.publicKeyType else { continue }
            if let r = state.fido.credentials.first(where: { $0.id == id && $0.rpID == rpID }) {
                out.append(
                    Located(
                        id: id, algorithm: r.algorithm, privateKey: r.privateKey, credProtect: r.credProtect,
                        hmacSecret: r.hmacSecret, resident: r))
            } else if let unwrapped = unwrap(id, rpIDHash: rpIDHash, state.fido) {
                out.append(
                    Located(
                        id: id, algorithm: unwrapped.algorithm, privateKey: unwrapped.privateKey,
                        credProtect: unwrapped.credProtect, hmacSecret: unwrapped.hmacSecret, resident: nil))
            }
        }
        return out
    }

    // MARK: hmac-secret

    func hmacSecretInput(_ input: Fields) throws(Failure) -> HMACSecretInput {
        typealias Key = CTAP2.HMACSecret.Key
        guard let peer = input[Key.keyAgreement], let saltEnc = try input.bytes(Key.saltEnc),
            let saltAuth = try input.bytes(Key.saltAuth)
        else {
            throw .status(CTAPError.missingParameter)
        }
        guard let pinProtocol = try self.pinProtocol(input.int(Key.pinUVAuthProtocol) ?? 1) else {
            throw .status(CTAPError.invalidParameter)
        }
        let secret = try sharedSecret(pinProtocol, peer)
        guard pinProtocol.verify(key: secret, saltEnc, signature: saltAuth) else {
            throw .status(CTAPError.pinAuthInvalid)
        }
        guard let salts = try? pinProtocol.decrypt(key: secret, saltEnc), salts.count == 32 || salts.count == 64
        else {
            throw .status(CTAPError.invalidLength)
        }
        return HMACSecretInput(pinProtocol: pinProtocol, sharedSecret: secret, salts: salts)
    }

    /// HMAC-SHA-256 of each salt with the credential's CredRandom (one with user verification, another
    /// without), encrypted for the platform.
    func hmacSecretOutput(
        _ credential: Located, _ input: HMACSecretInput, userVerified: Bool,
        _ fido: FIDOState
    ) throws(Failure) -> [UInt8] {
        let credRandom = Crypto.hmac(
            .sha256, key: fido.wrapMACKey,
            data: Array("hmac-secret".utf8) + [userVerified ? 1 : 0] + credential.id)
        var output = Crypto.hmac(.sha256, key: credRandom, data: Array(input.salts[0..<32]))
        if input.salts.count == 64 {
            output += Crypto.hmac(.sha256, key: credRandom, data: Array(input.salts[32..<64]))
        }
        return try encrypt(input.pinProtocol, input.sharedSecret, output)
    }
}
