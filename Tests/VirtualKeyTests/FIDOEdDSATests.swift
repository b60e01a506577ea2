import Foundation
import KeyKit
import Testing
import VirtualKey

/// EdDSA (Ed25519) credentials beside ES256 ones, as a YubiKey from firmware 5.2 makes them: the algorithm the RP
/// lists first of those the key has, the OKP COSE key, pure Ed25519 signatures checked here with OpenSSL through
/// KeyKit, credential management, U2F kept to P-256, and state files from before the algorithm was stored.
@Suite struct FIDOEdDSATests {
    static let rpID = "ssh:"

    static func session(_ key: VirtualKey) async throws -> (CTAP2Session, CTAPHIDConnection) {
        try await CTAP2OverHIDTests.session(key)
    }

    /// A makeCredential with `algorithms` as pubKeyCredParams, its self attestation checked.
    static func make(
        _ s: CTAP2Session, _ algorithms: [Int], resident: Bool = false, user: [UInt8] = [7]
    ) async throws -> AttestedCredential {
        let cdh = Crypto.random(32)
        let made = try await s.makeCredential(
            clientDataHash: cdh, rp: .init(id: rpID), user: .init(id: user, name: "user"),
            residentKey: resident, algorithms: algorithms)
        try FIDOVerifier.verifyAttestation(made, clientDataHash: cdh)
        return made
    }

    /// The status byte of a makeCredential sent as is, with `algorithms` as (type, alg) pairs.
    static func makeStatus(_ c: CTAPHIDConnection, _ algorithms: [(String, Int)]) async throws -> UInt8 {
        typealias Key = CTAP2.MakeCredential.Key
        let params: CBOR = [
            CBOR(Key.clientDataHash): .bytes(Crypto.random(32)), CBOR(Key.rp): ["id": .text(rpID)],
            CBOR(Key.user): ["id": .bytes([1])],
            CBOR(Key.pubKeyCredParams): .array(algorithms.map { ["type": .text($0.0), "alg": CBOR($0.1)] }),
        ]
        let answer = try await c.sendCBOR([CTAP2.Command.makeCredential.rawValue] + params.encoded, progress: nil)
        return try #require(answer.first)
    }

    @Test func theFirstSupportedAlgorithmInTheRPsOrderIsTaken() async throws {
        let (s, c) = try await Self.session(VirtualKey())
        let cases: [([Int], Int)] = [([-8], -8), ([-7, -8], -7), ([-8, -7], -8), ([-257, -35, -8, -7], -8)]
        for (algorithms, expected) in cases {
            let made = try await Self.make(s, algorithms)
            #expect(made.attestationStatement["alg"]?.int == expected, "\(algorithms)")
            #expect(made.attestationStatement["x5c"] == nil)
            #expect(made.authData.publicKey?.algorithm == expected, "\(algorithms)")
        }
        // Only public-key entries count; none supported is CTAP2_ERR_UNSUPPORTED_ALGORITHM.
        #expect(try await Self.makeStatus(c, [("other", -8), (CTAP2.publicKeyType, -7)]) == CTAP2.ok)
        #expect(try await Self.makeStatus(c, [("other", -8)]) == CTAPError.unsupportedAlgorithm)
        #expect(try await Self.makeStatus(c, [(CTAP2.publicKeyType, -257)]) == CTAPError.unsupportedAlgorithm)
        await c.close()
    }

    @Test func theCredentialKeyIsAnOKPKeyAndAssertionsAreEd25519() async throws {
        let key = VirtualKey()
        let (s, c) = try await Self.session(key)
        let made = try await Self.make(s, [-8])
        // Exactly {1: 1 (OKP), 3: -8 (EdDSA), -1: 6 (Ed25519), -2: x}.
        let cose = try #require(made.authData.credentialPublicKey)
        let x = try #require(cose[-2]?.bytes)
        #expect(cose == [1: 1, 3: -8, -1: 6, -2: .bytes(x)] && x.count == 32)
        #expect(made.credentialID.count == 98 && key.state.fido.credentials.isEmpty)

        let cdh = Crypto.random(32)
        let assertions = try await s.getAssertions(rpID: Self.rpID, clientDataHash: cdh, allowList: [made.credentialID])
        let assertion = try #require(assertions.first)
        let message = assertion.authData.raw + cdh
        // Pure Ed25519 over authData || clientDataHash, checked with OpenSSL twice over, and not a P-256 signature.
        #expect(assertion.signature.count == 64)
        #expect(try Ed25519PublicKey(raw: x).verify(signature: assertion.signature, message: message))
        let spkiKey = try AsymmetricPublicKey(raw: x, type: .ed25519)
        #expect(spkiKey.verify(signature: assertion.signature, message: message))
        #expect(!spkiKey.verify(signature: assertion.signature, message: Crypto.digest(.sha512, message)))
        #expect(try !Ed25519PublicKey(raw: x).verify(signature: assertion.signature, message: message + [0]))
        try FIDOVerifier.verifyAssertion(assertion, coseKey: cose, clientDataHash: cdh, rpID: Self.rpID)
        #expect(throws: FIDOSessionError.self) {
            try FIDOVerifier.verifyAssertion(
                assertion, coseKey: cose, clientDataHash: Crypto.random(32), rpID: Self.rpID)
        }
        // An ES256 credential beside it still signs with ECDSA.
        let es256 = try await Self.make(s, [-7])
        let esAssertion = try #require(
            try await s.getAssertions(rpID: Self.rpID, clientDataHash: cdh, allowList: [es256.credentialID]).first)
        let p256 = try #require(es256.authData.es256PublicKey)
        try FIDOVerifier.verifyAssertion(esAssertion, publicKey: p256, clientDataHash: cdh, rpID: Self.rpID)
        await c.close()
    }

    @Test func residentEdDSACredentialsAreStoredListedAndAsserted() async throws {
        let key = VirtualKey()
        let (s, c) = try await Self.session(key)
        try await s.setPIN("eddsa-pin")
        try await s.verifyPIN("eddsa-pin", permissions: [.makeCredential], rpID: Self.rpID)
        let made = try await Self.make(s, [-8, -7], resident: true)
        await s.dropToken()  // used up with the touch
        let stored = try #require(key.state.fido.credentials.first)
        #expect(stored.algorithm == COSE.Algorithm.edDSA && stored.id == made.credentialID)
        let publicKey = try #require(made.authData.publicKey)
        guard case .edDSA = publicKey else {
            Issue.record("not an EdDSA key: \(publicKey)")
            return
        }

        // Discovered (no allow list), signed with Ed25519.
        let cdh = Crypto.random(32)
        let assertion = try #require(try await s.getAssertions(rpID: Self.rpID, clientDataHash: cdh).first)
        #expect(assertion.credentialID == made.credentialID)
        #expect(publicKey.verify(signature: assertion.signature, message: assertion.authData.raw + cdh))

        // Credential management gives the same OKP key back.
        try await s.verifyPIN("eddsa-pin", permissions: [.credentialManagement])
        let rp = try #require(try await s.relyingParties().first)
        let listed = try await s.credentials(of: rp)
        #expect(listed.map(\.credentialID) == [made.credentialID])
        #expect(listed.first?.publicKey == made.authData.credentialPublicKey)
        #expect(listed.first?.key == publicKey)
        await c.close()
    }

    @Test func u2fRefusesAnEdDSAKeyHandle() async throws {
        let (s, c) = try await Self.session(VirtualKey())
        let made = try await Self.make(s, [-8])
        let application = Crypto.digest(.sha256, Array(Self.rpID.utf8))
        let u2f = U2FSession(connection: c)
        #expect(try await !u2f.isRegistered(keyHandle: made.credentialID, application: application))
        let es256 = try await Self.make(s, [-7])
        #expect(try await u2f.isRegistered(keyHandle: es256.credentialID, application: application))
        await c.close()
    }

    @Test func firmwareBefore52MakesES256Only() async throws {
        for (version, algorithms) in [
            (Version(5, 1, 2), [-7]), (Version(5, 2, 7), [-7, -8]), (Version(5, 7, 2), [-7, -8]),
        ] {
            let (s, c) = try await Self.session(VirtualKey(state: .yubiKey5NFC(version: version)))
            #expect(await s.info.algorithms == algorithms, "\(version)")
            if algorithms == [-7] {
                #expect(try await Self.makeStatus(c, [(CTAP2.publicKeyType, -8)]) == CTAPError.unsupportedAlgorithm)
                let made = try await Self.make(s, [-8, -7])
                #expect(made.authData.publicKey?.algorithm == COSE.Algorithm.es256)
            }
            await c.close()
        }
    }

    @Test func stateFilesKeepTheAlgorithmAndOldOnesMeanES256() async throws {
        try await withTemporaryDirectoryAsync { dir in
            let file = VirtualKeyStateFile(path: dir + "/key.json")

            let first = try VirtualKey(stateFile: file, initial: .yubiKey5NFC(), touchDelay: 0)
            var (s, c) = try await Self.session(first)
            let edDSA = try await Self.make(s, [-8], resident: true, user: [1])
            let es256 = try await Self.make(s, [-7], resident: true, user: [2])
            await c.close()
            let text = try String(contentsOfFile: file.path, encoding: .utf8)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let fido = try #require(json["fido"] as? [String: Any])
            let credentials = try #require(fido["credentials"] as? [[String: Any]])
            #expect(credentials.map { $0["algorithm"] as? Int } == [-8, -7])

            // Loaded again: both still sign, each with its own algorithm.
            let second = try VirtualKey(stateFile: file, initial: .yubiKey5NFC(), touchDelay: 0)
            #expect(second.state == first.state)
            (s, c) = try await Self.session(second)
            for made in [edDSA, es256] {
                let cdh = Crypto.random(32)
                let assertion = try #require(
                    try await s.getAssertions(rpID: Self.rpID, clientDataHash: cdh, allowList: [made.credentialID])
                        .first)
                let cose = try #require(made.authData.credentialPublicKey)
                try FIDOVerifier.verifyAssertion(assertion, coseKey: cose, clientDataHash: cdh, rpID: Self.rpID)
            }
            await c.close()

            // A state file written before credentials had an algorithm: its credentials are ES256 ones.
            let oldCredentials = credentials.filter { $0["algorithm"] as? Int == -7 }.map {
                $0.filter { $0.key != "algorithm" }
            }
            #expect(oldCredentials.count == 1 && oldCredentials[0]["privateKey"] != nil)
            var old = json
            var oldFIDO = fido
            oldFIDO["credentials"] = oldCredentials
            old["fido"] = oldFIDO
            let oldText = try JSONSerialization.data(withJSONObject: old)
            let decoded = try JSONDecoder().decode(VirtualKeyState.self, from: oldText)
            #expect(decoded.fido.credentials.map(\.algorithm) == [COSE.Algorithm.es256])
            (s, c) = try await Self.session(VirtualKey(state: decoded))
            let cdh = Crypto.random(32)
            let assertion = try #require(try await s.getAssertions(rpID: Self.rpID, clientDataHash: cdh).first)
            #expect(assertion.credentialID == es256.credentialID)
            let p256 = try #require(es256.authData.es256PublicKey)
            try FIDOVerifier.verifyAssertion(assertion, publicKey: p256, clientDataHash: cdh, rpID: Self.rpID)
            await c.close()
        }
    }
}
