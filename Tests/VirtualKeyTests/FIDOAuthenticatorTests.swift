// Over 500 lines on purpose: every test uses the CTAP2 client side built at the top (key agreement, PIN
// encryption, pinUvAuthParam), which is not worth a module of its own.
import Foundation
import KeyKit
import Synchronization
import Testing
import VirtualKey

// The virtual key's FIDO2/U2F authenticator, driven with raw CTAP2 CBOR requests through SELECT and
// NFCCTAP_MSG APDUs (as an NFC reader carries them), U2F APDUs, and a few requests over the virtual HID
// device. The client side (key agreement, PIN encryption, pinUvAuthParam) is built here from KeyKit's
// PIN/UV auth protocol and P-256 primitives.

private struct Unexpected: Error, CustomStringConvertible {
    let description: String
}

private final class ProgressLog: Sendable {
    private let items = Mutex<[FIDOProgress]>([])
    func add(_ p: FIDOProgress) { items.withLock { $0.append(p) } }
    var all: [FIDOProgress] { items.withLock { $0 } }
}

/// A PIN padded as clients pad it (to 64 bytes), without the client's own checks, so the key's
/// checks can be tested.
private func rawPadded(_ pin: String) -> [UInt8] {
    let bytes = Array(pin.utf8)
    return bytes + [UInt8](repeating: 0, count: max(0, 64 - bytes.count))
}

private typealias Command = CTAP2.Command

private func sha256(_ data: [UInt8]) -> [UInt8] { Crypto.digest(.sha256, data) }
private func sha256(_ text: String) -> [UInt8] { sha256(Array(text.utf8)) }

/// The FIDO application over (virtual) NFC.
private struct NFCClient {
    let key: VirtualKey
    let card: SmartCardProtocol

    init(_ key: VirtualKey) async throws {
        self.key = key
        card = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        let r = try await card.send(.select(aid: AID.fido))
        guard r.status == .ok, r.data == Array("U2F_V2".utf8) else {
            throw Unexpected(description: "SELECT answered \(r.data.hex) \(r.status)")
        }
    }

    /// NFCCTAP_MSG, polling NFCCTAP_GETRESPONSE while the key answers 9100. Returns the status byte and
    /// the decoded CBOR after it, if any.
    func call(_ command: Command, _ params: CBOR? = nil) async throws -> (status: UInt8, body: CBOR?) {
        let raw = try await callRaw([command.rawValue] + (params?.encoded ?? []))
        guard let status = raw.first else { throw Unexpected(description: "empty CTAP2 response") }
        let body = raw.count > 1 ? try CBOR.decode(Array(raw[1...])) : nil
        return (status, body)
    }

    func callRaw(_ request: [UInt8]) async throws -> [UInt8] {
        var r = try await card.send(APDU(cla: 0x80, ins: 0x10, p1: 0x80, p2: 0x00, data: request, le: 256))
        while r.status.rawValue == 0x9100 {
            #expect(r.data == [0x02])  // KEEPALIVE status: waiting for user presence
            try await Task.sleep(for: .milliseconds(20))
            r = try await card.send(APDU(cla: 0x80, ins: 0x11, p1: 0x00, p2: 0x00, le: 256))
        }
        guard r.status == .ok else { throw Unexpected(description: "NFCCTAP_MSG answered \(r.status)") }
        return r.data
    }

    /// Calls and requires success; returns the CBOR body (an empty map when there is none).
    func ok(_ command: Command, _ params: CBOR? = nil) async throws -> CBOR {
        let (status, body) = try await call(command, params)
        guard status == 0 else {
            throw Unexpected(description: "command \(command) failed: \(CTAPError(status).name)")
        }
        return body ?? [:]
    }

    func status(_ command: Command, _ params: CBOR? = nil) async throws -> UInt8 {
        try await call(command, params).status
    }

    func u2f(_ ins: UInt8, p1: UInt8 = 0, _ data: [UInt8] = []) async throws -> Response {
        try await card.send(APDU(cla: 0x00, ins: ins, p1: p1, p2: 0x00, data: data, le: 256))
    }
}

/// The platform side of clientPIN with one PIN/UV auth protocol.
private struct PINClient {
    let nfc: NFCClient
    let pinProtocol: PINUVAuthProtocol

    var number: CBOR { CBOR(pinProtocol.version) }

    /// getKeyAgreement, then ECDH with a fresh platform key: our COSE key and the shared secret.
    func agree() async throws -> (platformKey: CBOR, secret: [UInt8]) {
        let body = try await nfc.ok(Command.clientPIN, [1: number, 2: 2])
        let cose = try #require(body[1])
        #expect(cose[1] == 2 && cose[3] == -25 && cose[-1] == 1)
        let theirs = try PINUVAuthProtocol.publicKey(fromCOSE: cose)
        let mine = P256PrivateKey()
        let secret = try pinProtocol.kdf(try mine.sharedSecret(with: theirs))
        return (PINUVAuthProtocol.coseKey(mine.publicKey), secret)
    }

    func setPIN(_ pin: String) async throws -> UInt8 {
        try await setPadded(PINUVAuthProtocol.paddedPIN(pin))
    }

    func setPadded(_ padded: [UInt8]) async throws -> UInt8 {
        let (platformKey, secret) = try await agree()
        let newPINEnc = try pinProtocol.encrypt(key: secret, padded)
        return try await nfc.status(
            Command.clientPIN,
            [
                1: number, 2: 3, 3: platformKey, 4: .bytes(pinProtocol.authenticate(key: secret, newPINEnc)),
                5: .bytes(newPINEnc),
            ])
    }

    func changePIN(_ old: String, _ new: String) async throws -> UInt8 {
        try await changePIN(old, padded: PINUVAuthProtocol.paddedPIN(new))
    }

    func changePIN(_ old: String, padded: [UInt8]) async throws -> UInt8 {
        let (platformKey, secret) = try await agree()
        let pinHashEnc = try pinProtocol.encrypt(key: secret, PINUVAuthProtocol.pinHash(old))
        let newPINEnc = try pinProtocol.encrypt(key: secret, padded)
        return try await nfc.status(
            Command.clientPIN,
            [
                1: number, 2: 4, 3: platformKey,
                4: .bytes(pinProtocol.authenticate(key: secret, newPINEnc + pinHashEnc)),
                5: .bytes(newPINEnc), 6: .bytes(pinHashEnc),
            ])
    }

    /// A PIN/UV auth token: with permissions (subcommand 9) or without (legacy getPinToken, 5).
    func token(_ pin: String, permissions: PINPermissions? = nil, rpID: String? = nil) async throws
        -> (status: UInt8, token: [UInt8]?)
    {
        let (platformKey, secret) = try await agree()
        let pinHashEnc = try pinProtocol.encrypt(key: secret, PINUVAuthProtocol.pinHash(pin))
        var params: [CBOR: CBOR] = [
            1: number, 2: permissions == nil ? 5 : 9, 3: platformKey,
            6: .bytes(pinHashEnc),
        ]
        if let permissions { params[9] = CBOR(permissions.rawValue) }
        if let rpID { params[10] = .text(rpID) }
        let (status, body) = try await nfc.call(Command.clientPIN, .map(params))
        guard status == 0 else { return (status, nil) }
        let encrypted = try #require(body?[2]?.bytes)
        return (0, try pinProtocol.decrypt(key: secret, encrypted))
    }

    func requireToken(_ pin: String, permissions: PINPermissions? = nil, rpID: String? = nil) async throws
        -> [UInt8]
    {
        let (status, token) = try await self.token(pin, permissions: permissions, rpID: rpID)
        guard status == 0, let token else {
            throw Unexpected(description: "no token: \(CTAPError(status).name)")
        }
        return token
    }

    func retries() async throws -> (retries: Int, powerCycleNeeded: Bool) {
        let body = try await nfc.ok(Command.clientPIN, [1: number, 2: 1])
        return (try #require(body[3]?.int), body[4]?.bool ?? false)
    }

    /// pinUvAuthParam over `message` with `token`.
    func param(_ token: [UInt8], _ message: [UInt8]) -> CBOR {
        .bytes(pinProtocol.authenticate(key: token, message))
    }
}

/// Authenticator data, taken apart.
private struct AuthData {
    var rpIDHash: [UInt8]
    var flags: UInt8
    var counter: UInt32
    var aaguid: [UInt8]?
    var credentialID: [UInt8]?
    var publicKey: CBOR?
    var extensions: CBOR?

    init(_ b: [UInt8]) throws {
        guard b.count >= 37 else { throw Unexpected(description: "authData of \(b.count) bytes") }
        rpIDHash = Array(b[0..<32])
        flags = b[32]
        counter = UInt32(BigEndian.integer(b[33..<37]))
        var rest = Array(b[37...])
        if flags & 0x40 != 0 {
            aaguid = Array(rest[0..<16])
            let n = Int(BigEndian.integer(rest[16..<18]))
            credentialID = Array(rest[18..<(18 + n)])
            let (key, end) = try CBOR.decodePrefix(Array(rest[(18 + n)...]))
            publicKey = key
            rest = Array(rest[(18 + n + end)...])
        }
        if flags & 0x80 != 0 {
            extensions = try CBOR.decode(rest)
        } else if !rest.isEmpty {
            throw Unexpected(description: "\(rest.count) bytes after the authenticator data")
        }
    }

    var userPresent: Bool { flags & 0x01 != 0 }
    var userVerified: Bool { flags & 0x04 != 0 }
}

private func publicKey(fromCOSE cose: CBOR) throws -> P256PublicKey {
    #expect(cose[1] == 2 && cose[3] == -7 && cose[-1] == 1)
    return try P256PublicKey(x: try #require(cose[-2]?.bytes), y: try #require(cose[-3]?.bytes))
}

private func makeCredentialParams(
    _ clientDataHash: [UInt8], rpID: String = "example.org",
    user: String = "alice", userID: [UInt8]? = nil, rk: Bool = false,
    auth: (PINClient, [UInt8])? = nil, exclude: [[UInt8]] = [],
    extensions: CBOR? = nil, algorithms: [Int] = [-7]
) -> CBOR {
    var params: [CBOR: CBOR] = [
        1: .bytes(clientDataHash),
        2: ["id": .text(rpID), "name": .text("Example " + rpID)],
        3: ["id": .bytes(userID ?? Array(user.utf8)), "name": .text(user), "displayName": .text(user.capitalized)],
        4: .array(algorithms.map { ["alg": CBOR($0), "type": "public-key"] }),
    ]
    if rk { params[7] = ["rk": true] }
    if !exclude.isEmpty { params[5] = .array(exclude.map { ["id": .bytes($0), "type": "public-key"] }) }
    if let extensions { params[6] = extensions }
    if let (client, token) = auth {
        params[8] = client.param(token, clientDataHash)
        params[9] = client.number
    }
    return .map(params)
}

private func getAssertionParams(
    _ clientDataHash: [UInt8], rpID: String = "example.org", allow: [[UInt8]] = [],
    auth: (PINClient, [UInt8])? = nil, up: Bool? = nil,
    extensions: CBOR? = nil
) -> CBOR {
    var params: [CBOR: CBOR] = [1: .text(rpID), 2: .bytes(clientDataHash)]
    if !allow.isEmpty { params[3] = .array(allow.map { ["id": .bytes($0), "type": "public-key"] }) }
    if let extensions { params[4] = extensions }
    if let up { params[5] = ["up": .bool(up)] }
    if let (client, token) = auth {
        params[6] = client.param(token, clientDataHash)
        params[7] = client.number
    }
    return .map(params)
}

/// A made credential: its ID and public key, after checking the packed self attestation.
private struct MadeCredential {
    var id: [UInt8]
    var publicKey: P256PublicKey
    var authData: AuthData
}

private func makeCredential(
    _ nfc: NFCClient, rpID: String = "example.org", user: String = "alice",
    rk: Bool = false, auth: (PINClient, [UInt8])? = nil,
    extensions: CBOR? = nil
) async throws -> MadeCredential {
    let cdh = Crypto.random(32)
    let body = try await nfc.ok(
        Command.makeCredential,
        makeCredentialParams(
            cdh, rpID: rpID, user: user, rk: rk, auth: auth,
            extensions: extensions))
    #expect(body[1] == "packed")
    let rawAuthData = try #require(body[2]?.bytes)
    let authData = try AuthData(rawAuthData)
    #expect(authData.rpIDHash == sha256(rpID))
    #expect(authData.userPresent)
    #expect(authData.aaguid == FIDOAuthenticator.aaguid)
    let key = try publicKey(fromCOSE: try #require(authData.publicKey))
    let statement = try #require(body[3])
    #expect(statement["alg"] == -7)
    #expect(statement["x5c"] == nil)  // self attestation
    let signature = try #require(statement["sig"]?.bytes)
    #expect(key.verify(signature: signature, message: rawAuthData + cdh))
    return MadeCredential(id: try #require(authData.credentialID), publicKey: key, authData: authData)
}

/// A getAssertion answer, its signature checked with `key`.
private func checkAssertion(_ body: CBOR, _ cdh: [UInt8], key: P256PublicKey) throws -> AuthData {
    let rawAuthData = try #require(body[2]?.bytes)
    let signature = try #require(body[3]?.bytes)
    #expect(key.verify(signature: signature, message: rawAuthData + cdh))
    return try AuthData(rawAuthData)
}

private func newKey(
    _ state: VirtualKeyState = .yubiKey5NFC(), stateFile: VirtualKeyStateFile? = nil,
    userPresenceDelay: Double = 0, resetWindow: Double = 10
) -> VirtualKey {
    VirtualKey(
        state: state, stateFile: stateFile, touchDelay: 0, userPresenceDelay: userPresenceDelay,
        resetWindow: resetWindow)
}

@Suite struct FIDOAuthenticatorTests {
    // MARK: getInfo

    @Test func getInfoDescribesAYubiKey5() async throws {
        let nfc = try await NFCClient(newKey())
        let body = try await nfc.ok(Command.getInfo)
        let info = try AuthenticatorInfo(cbor: body)
        #expect(info.versions == ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE", "FIDO_2_1"])
        #expect(info.extensions == ["credProtect", "hmac-secret", "minPinLength"])
        #expect(info.aaguid == FIDOAuthenticator.aaguid)
        #expect(info.aaguidString == "804b8213-9e22-4f99-b7cf-b9568f76800a")
        #expect(
            info.options == [
                "rk": true, "up": true, "plat": false, "clientPin": false, "credMgmt": true,
                "credentialMgmtPreview": true, "pinUvAuthToken": true,
                "makeCredUvNotRqd": true, "authnrCfg": true, "alwaysUv": false, "ep": false,
                "setMinPINLength": true,
            ])
        #expect(info.maxRPIDsForSetMinPINLength == 8 && !info.forcePINChange)
        #expect(info.pinSet == false)
        #expect(info.maxMessageSize == 1200)
        #expect(info.pinUVAuthProtocols == [2, 1])
        #expect(info.maxCredentialCountInList == 8)
        #expect(info.maxCredentialIDLength == 128)
        #expect(info.transports == ["nfc", "usb"])
        #expect(info.algorithms == [-7, -8])
        #expect(body[10] == [["alg": -7, "type": "public-key"], ["alg": -8, "type": "public-key"]])
        #expect(info.minPINLength == 4)
        #expect(info.firmwareVersion == 0x05_07_02)
        #expect(info.remainingDiscoverableCredentials == 100)

        let older = try await NFCClient(newKey(.yubiKey5NFC(version: Version(5, 4, 3))))
        let olderInfo = try AuthenticatorInfo(cbor: try await older.ok(Command.getInfo))
        #expect(olderInfo.firmwareVersion == 0x05_04_03)
        #expect(olderInfo.remainingDiscoverableCredentials == 25)
    }

    @Test func malformedRequestsGetCTAPErrors() async throws {
        let nfc = try await NFCClient(newKey())
        #expect(try await nfc.callRaw([0x55]) == [CTAPError.invalidCommand])
        #expect(try await nfc.callRaw([Command.makeCredential.rawValue, 0xA1]) == [CTAPError.invalidCBOR])
        #expect(try await nfc.callRaw([Command.makeCredential.rawValue, 0x80]) == [CTAPError.cborUnexpectedType])
        #expect(
            try await nfc.status(Command.makeCredential, [1: .bytes(Crypto.random(32))])
                == CTAPError.missingParameter)
        #expect(try await nfc.status(Command.clientPIN, [1: 2, 2: 7]) == CTAPError.invalidSubcommand)
        #expect(try await nfc.status(Command.clientPIN, [1: 3, 2: 2]) == CTAPError.invalidParameter)
        #expect(try await nfc.status(Command.getNextAssertion) == CTAPError.notAllowed)
        #expect(
            try await nfc.callRaw([Command.getInfo.rawValue] + [UInt8](repeating: 0, count: 1300))
                == [CTAPError.invalidLength])
    }

    // MARK: PIN

    @Test(arguments: [PINUVAuthProtocol.two, .one])
    func setPINAndGetTokens(_ pinProtocol: PINUVAuthProtocol) async throws {
        let key = newKey()
        let nfc = try await NFCClient(key)
        let client = PINClient(nfc: nfc, pinProtocol: pinProtocol)
        #expect(try await client.token("1234").status == CTAPError.pinNotSet)
        #expect(try await client.setPIN("12345678") == 0)
        #expect(key.state.fido.pinHash == Array(sha256("12345678").prefix(16)))
        #expect(key.state.fido.pinRetries == 8)
        #expect(try await AuthenticatorInfo(cbor: nfc.ok(Command.getInfo)).pinSet == true)
        #expect(try await client.setPIN("87654321") == CTAPError.notAllowed)

        let legacy = try await client.requireToken("12345678")
        #expect(legacy.count == 32)
        let scoped = try await client.requireToken("12345678", permissions: [.makeCredential], rpID: "example.org")
        #expect(scoped.count == 32 && scoped != legacy)
        #expect(try await client.token("12345678", permissions: []).status == CTAPError.invalidParameter)
        #expect(
            try await client.token("12345678", permissions: [.bioEnrollment]).status
                == CTAPError.unauthorizedPermission)
        #expect(try await client.retries() == (8, false))
    }

    @Test func newPINsMustFollowThePolicy() async throws {
        let nfc = try await NFCClient(newKey())
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        #expect(try await client.setPadded(rawPadded("123")) == CTAPError.pinPolicyViolation)
        var tooLong = Array(String(repeating: "x", count: 64).utf8)
        #expect(try await client.setPadded(tooLong) == CTAPError.pinPolicyViolation)
        tooLong = Array("1234".utf8) + [UInt8](repeating: 0, count: 28)  // padded to 32 bytes only
        #expect(try await client.setPadded(tooLong) == CTAPError.pinPolicyViolation)
        // Four code points are enough, however many bytes they take.
        #expect(try await client.setPIN("äöüß") == 0)
        #expect(try await client.requireToken("äöüß").count == 32)
    }

    @Test func wrongPINsCountDownBlockPerPowerCycleAndThenForGood() async throws {
        let key = newKey()
        let nfc = try await NFCClient(key)
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        #expect(try await client.setPIN("right-pin") == 0)

        #expect(try await client.token("wrong-pin").status == CTAPError.pinInvalid)
        #expect(try await client.retries() == (7, false))
        #expect(try await client.token("wrong-pin").status == CTAPError.pinInvalid)
        #expect(try await client.token("wrong-pin").status == CTAPError.pinAuthBlocked)
        // Blocked until the key is powered off and on, even for the right PIN, and it costs no retry.
        #expect(try await client.token("right-pin").status == CTAPError.pinAuthBlocked)
        #expect(try await client.changePIN("right-pin", "other-pin") == CTAPError.pinAuthBlocked)
        #expect(try await client.retries() == (5, true))
        #expect(key.state.fido.pinRetries == 5)

        key.powerCycle()
        let again = PINClient(nfc: try await NFCClient(key), pinProtocol: .one)
        #expect(try await again.retries() == (5, false))
        #expect(try await again.requireToken("right-pin").count == 32)
        #expect(try await again.retries() == (8, false))  // the right PIN restores every retry

        // Eight wrong PINs in a row, across power cycles, block the PIN for good.
        var answers = [UInt8]()
        for cycle in 0..<3 {
            key.powerCycle()
            let c = PINClient(nfc: try await NFCClient(key), pinProtocol: .two)
            for _ in 0..<(cycle < 2 ? 3 : 2) { answers.append(try await c.token("wrong-pin").status) }
        }
        #expect(
            answers == [
                CTAPError.pinInvalid, CTAPError.pinInvalid, CTAPError.pinAuthBlocked,
                CTAPError.pinInvalid, CTAPError.pinInvalid, CTAPError.pinAuthBlocked,
                CTAPError.pinInvalid, CTAPError.pinBlocked,
            ])
        key.powerCycle()
        let last = PINClient(nfc: try await NFCClient(key), pinProtocol: .two)
        #expect(try await last.token("right-pin").status == CTAPError.pinBlocked)
        #expect(try await last.retries() == (0, false))
        #expect(key.state.fido.pinRetries == 0)
    }

    /// The key agreement key stays the same within a power-up and is new after a wrong PIN, a power cycle and
    /// a reset (the authenticator makes it when first asked).
    @Test func keyAgreementKeyLastsUntilAWrongPINAPowerCycleOrAReset() async throws {
        let key = newKey()
        let client = PINClient(nfc: try await NFCClient(key), pinProtocol: .two)
        func current() async throws -> CBOR {
            try #require(try await client.nfc.ok(Command.clientPIN, [1: 2, 2: 2])[1])
        }
        let first = try await current()
        #expect(try await current() == first)
        #expect(try await client.setPIN("right-pin") == CTAP2.ok)
        #expect(try await current() == first)
        #expect(try await client.token("wrong-pin").status == CTAPError.pinInvalid)
        let afterWrongPIN = try await current()
        #expect(afterWrongPIN != first)
        key.powerCycle()
        let again = PINClient(nfc: try await NFCClient(key), pinProtocol: .two)
        let afterPowerCycle = try #require(try await again.nfc.ok(Command.clientPIN, [1: 2, 2: 2])[1])
        #expect(afterPowerCycle != afterWrongPIN && afterPowerCycle != first)
        #expect(try await again.nfc.status(Command.reset) == CTAP2.ok)
        let afterReset = try #require(try await again.nfc.ok(Command.clientPIN, [1: 2, 2: 2])[1])
        #expect(afterReset != afterPowerCycle)
    }

    @Test func changingThePINInvalidatesTheOldPINAndTokens() async throws {
        let nfc = try await NFCClient(newKey())
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        #expect(try await client.changePIN("first-pin", "second-pin") == CTAPError.pinNotSet)
        #expect(try await client.setPIN("first-pin") == 0)
        let oldToken = try await client.requireToken("first-pin", permissions: [.credentialManagement])
        let metadata: (([UInt8]) async throws -> UInt8) = { token in
            try await nfc.status(Command.credentialManagement, [1: 1, 3: 2, 4: client.param(token, [0x01])])
        }
        #expect(try await metadata(oldToken) == 0)

        #expect(try await client.changePIN("not-the-pin", "second-pin") == CTAPError.pinInvalid)
        #expect(try await client.retries().retries == 7)
        #expect(try await client.changePIN("first-pin", padded: rawPadded("abc")) == CTAPError.pinPolicyViolation)
        #expect(try await client.changePIN("first-pin", "second-pin") == 0)
        #expect(try await client.retries().retries == 8)
        #expect(try await metadata(oldToken) == CTAPError.pinAuthInvalid)
        #expect(try await client.token("first-pin").status == CTAPError.pinInvalid)
        let newToken = try await client.requireToken("second-pin", permissions: [.credentialManagement])
        #expect(try await metadata(newToken) == 0)
    }

    // MARK: makeCredential and getAssertion

    @Test func residentCredentialAttestsAndAsserts() async throws {
        let key = newKey()
        let nfc = try await NFCClient(key)
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        #expect(try await client.setPIN("cred-pin") == 0)

        let token = try await client.requireToken("cred-pin", permissions: [.makeCredential], rpID: "example.org")
        let made = try await makeCredential(nfc, rk: true, auth: (client, token))
        #expect(made.authData.userVerified)
        #expect(made.id.count == 32)
        #expect(made.authData.counter == 1)
        let stored = try #require(key.state.fido.credentials.first)
        #expect(stored.id == made.id && stored.rpID == "example.org" && stored.userName == "alice")
        #expect(stored.userID == Array("alice".utf8) && stored.rpName == "Example example.org")

        // Without a token: the user's ID only, no UV.
        let cdh = Crypto.random(32)
        let plain = try await nfc.ok(Command.getAssertion, getAssertionParams(cdh))
        let plainData = try checkAssertion(plain, cdh, key: made.publicKey)
        #expect(plainData.userPresent && !plainData.userVerified)
        #expect(plainData.counter == 2)
        #expect(plain[1]?["id"]?.bytes == made.id)
        #expect(plain[4] == ["id": .bytes(Array("alice".utf8))])
        #expect(plain[5] == nil)

        // With a token: user verified, and the names.
        let gaToken = try await client.requireToken("cred-pin", permissions: [.getAssertion], rpID: "example.org")
        let cdh2 = Crypto.random(32)
        let verified = try await nfc.ok(Command.getAssertion, getAssertionParams(cdh2, auth: (client, gaToken)))
        let verifiedData = try checkAssertion(verified, cdh2, key: made.publicKey)
        #expect(verifiedData.userPresent && verifiedData.userVerified)
        #expect(verified[4] == ["id": .bytes(Array("alice".utf8)), "name": "alice", "displayName": "Alice"])
        // The token was used up with the touch.
        #expect(
            try await nfc.status(Command.getAssertion, getAssertionParams(cdh2, auth: (client, gaToken)))
                == CTAPError.pinAuthInvalid)

        #expect(
            try await nfc.status(Command.getAssertion, getAssertionParams(cdh, rpID: "other.example"))
                == CTAPError.noCredentials)
    }

    @Test func nonResidentCredentialIDsCarryTheirKey() async throws {
        let key = newKey()
        let nfc = try await NFCClient(key)
        let made = try await makeCredential(nfc, rpID: "example.com")
        #expect(!made.authData.userVerified)
        #expect(made.id.count == 98)
        #expect(key.state.fido.credentials.isEmpty)

        let cdh = Crypto.random(32)
        let body = try await nfc.ok(
            Command.getAssertion,
            getAssertionParams(
                cdh, rpID: "example.com",
                allow: [Crypto.random(98), made.id]))
        _ = try checkAssertion(body, cdh, key: made.publicKey)
        #expect(body[1]?["id"]?.bytes == made.id)
        #expect(body[4] == nil)
        // Bound to its RP, and to this key.
        #expect(
            try await nfc.status(
                Command.getAssertion,
                getAssertionParams(
                    cdh, rpID: "example.net",
                    allow: [made.id]))
                == CTAPError.noCredentials)
        var tampered = made.id
        tampered[40] ^= 1
        #expect(
            try await nfc.status(
                Command.getAssertion,
                getAssertionParams(
                    cdh, rpID: "example.com",
                    allow: [tampered]))
                == CTAPError.noCredentials)
        let other = try await NFCClient(newKey())
        _ = try await makeCredential(other, rpID: "example.com")
        #expect(
            try await other.status(
                Command.getAssertion,
                getAssertionParams(
                    cdh, rpID: "example.com",
                    allow: [made.id]))
                == CTAPError.noCredentials)

        // Silent assertion (up false): no UP flag.
        let silent = try await nfc.ok(
            Command.getAssertion,
            getAssertionParams(
                cdh, rpID: "example.com",
                allow: [made.id], up: false))
        #expect(!(try checkAssertion(silent, cdh, key: made.publicKey)).userPresent)
    }

    @Test func makeCredentialChecksAlgorithmsOptionsTokensAndExclusions() async throws {
        let nfc = try await NFCClient(newKey())
        let cdh = Crypto.random(32)
        #expect(
            try await nfc.status(Command.makeCredential, makeCredentialParams(cdh, algorithms: [-257, -35]))
                == CTAPError.unsupportedAlgorithm)
        var params = makeCredentialParams(cdh).map!
        params[7] = ["uv": true]
        #expect(try await nfc.status(Command.makeCredential, .map(params)) == CTAPError.invalidOption)
        params[7] = ["up": false]
        #expect(try await nfc.status(Command.makeCredential, .map(params)) == CTAPError.invalidOption)

        let first = try await makeCredential(nfc)
        #expect(
            try await nfc.status(Command.makeCredential, makeCredentialParams(cdh, exclude: [first.id]))
                == CTAPError.credentialExcluded)
        // Excluding another RP's credential does not stop this one.
        #expect(
            try await nfc.status(
                Command.makeCredential,
                makeCredentialParams(cdh, rpID: "example.net", exclude: [first.id])) == 0)

        // With a PIN: discoverable credentials need a token, others do not (makeCredUvNotRqd).
        let client = PINClient(nfc: nfc, pinProtocol: .one)
        #expect(try await client.setPIN("make-pin") == 0)
        #expect(
            try await nfc.status(Command.makeCredential, makeCredentialParams(cdh, rk: true))
                == CTAPError.pinRequired)
        #expect(try await nfc.status(Command.makeCredential, makeCredentialParams(cdh)) == 0)
        let gaOnly = try await client.requireToken("make-pin", permissions: [.getAssertion])
        #expect(
            try await nfc.status(
                Command.makeCredential,
                makeCredentialParams(
                    cdh, rk: true,
                    auth: (client, gaOnly)))
                == CTAPError.pinAuthInvalid)
        let otherRP = try await client.requireToken("make-pin", permissions: [.makeCredential], rpID: "example.net")
        #expect(
            try await nfc.status(
                Command.makeCredential,
                makeCredentialParams(
                    cdh, rk: true,
                    auth: (client, otherRP)))
                == CTAPError.pinAuthInvalid)
        let token = try await client.requireToken("make-pin", permissions: [.makeCredential])
        var forged = makeCredentialParams(cdh, rk: true, auth: (client, token)).map!
        forged[8] = .bytes(Crypto.random(16))
        #expect(try await nfc.status(Command.makeCredential, .map(forged)) == CTAPError.pinAuthInvalid)
        #expect(
            try await nfc.status(
                Command.makeCredential,
                makeCredentialParams(
                    cdh, rk: true,
                    auth: (client, token))) == 0)
        // A token does its one makeCredential.
        #expect(
            try await nfc.status(
                Command.makeCredential,
                makeCredentialParams(
                    cdh, rk: true,
                    auth: (client, token)))
                == CTAPError.pinAuthInvalid)
        // An empty pinUvAuthParam asks (after a touch) whether a PIN is set.
        var probe = makeCredentialParams(cdh).map!
        probe[8] = .bytes([])
        probe[9] = 1
        #expect(try await nfc.status(Command.makeCredential, .map(probe)) == CTAPError.pinInvalid)
    }

    @Test func discoverableCredentialsComeNewestFirstAndTheStoreFills() async throws {
        var state = VirtualKeyState.yubiKey5NFC(version: Version(5, 4, 3))
        for i in 0..<23 {
            state.fido.credentials.append(
                FIDOState.Credential(
                    id: Crypto.random(32), rpID: "filler.example", rpName: nil, userID: [UInt8(i)], userName: nil,
                    userDisplayName: nil, privateKey: P256PrivateKey().raw, credProtect: 1, created: UInt64(i + 1)))
        }
        state.fido.nextCreated = 24
        let nfc = try await NFCClient(newKey(state))
        let alice = try await makeCredential(nfc, rk: true)
        let bob = try await makeCredential(nfc, user: "bob", rk: true)
        #expect(
            try await nfc.status(
                Command.makeCredential,
                makeCredentialParams(Crypto.random(32), user: "carol", rk: true))
                == CTAPError.keyStoreFull)
        // The same user again replaces the credential, even when full.
        let alice2 = try await makeCredential(nfc, rk: true)
        #expect(try AuthenticatorInfo(cbor: await nfc.ok(Command.getInfo)).remainingDiscoverableCredentials == 0)

        let cdh = Crypto.random(32)
        let first = try await nfc.ok(Command.getAssertion, getAssertionParams(cdh))
        #expect(first[5] == 2)
        #expect(first[1]?["id"]?.bytes == alice2.id)
        _ = try checkAssertion(first, cdh, key: alice2.publicKey)
        let second = try await nfc.ok(Command.getNextAssertion)
        #expect(second[1]?["id"]?.bytes == bob.id)
        #expect(second[4] == ["id": .bytes(Array("bob".utf8))])
        #expect(second[5] == nil)
        _ = try checkAssertion(second, cdh, key: bob.publicKey)
        #expect(try await nfc.status(Command.getNextAssertion) == CTAPError.notAllowed)
        #expect(alice.id != alice2.id)
    }

    @Test func credProtectKeepsCredentialsFromUnverifiedDiscovery() async throws {
        let nfc = try await NFCClient(newKey())
        let optionalWithList = try await makeCredential(nfc, rk: true, extensions: ["credProtect": 2])
        #expect(optionalWithList.authData.extensions == ["credProtect": 2])
        let required = try await makeCredential(nfc, rpID: "example.net", extensions: ["credProtect": 3])
        let cdh = Crypto.random(32)
        #expect(try await nfc.status(Command.getAssertion, getAssertionParams(cdh)) == CTAPError.noCredentials)
        let listed = try await nfc.ok(Command.getAssertion, getAssertionParams(cdh, allow: [optionalWithList.id]))
        _ = try checkAssertion(listed, cdh, key: optionalWithList.publicKey)
        #expect(
            try await nfc.status(
                Command.getAssertion,
                getAssertionParams(
                    cdh, rpID: "example.net",
                    allow: [required.id]))
                == CTAPError.noCredentials)
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        #expect(try await client.setPIN("protect-pin") == 0)
        let token = try await client.requireToken("protect-pin", permissions: [.getAssertion], rpID: "example.net")
        let verified = try await nfc.ok(
            Command.getAssertion,
            getAssertionParams(
                cdh, rpID: "example.net",
                allow: [required.id],
                auth: (client, token)))
        _ = try checkAssertion(verified, cdh, key: required.publicKey)
    }

    @Test func hmacSecretIsStablePerSaltAndCredential() async throws {
        let nfc = try await NFCClient(newKey())
        let made = try await makeCredential(nfc, extensions: ["hmac-secret": true])
        #expect(made.authData.extensions == ["hmac-secret": true])
        let client = PINClient(nfc: nfc, pinProtocol: .two)

        func secret(_ salt: [UInt8]) async throws -> [UInt8] {
            let (platformKey, shared) = try await client.agree()
            let saltEnc = try client.pinProtocol.encrypt(key: shared, salt)
            let input: CBOR = [
                1: platformKey, 2: .bytes(saltEnc),
                3: .bytes(client.pinProtocol.authenticate(key: shared, saltEnc)), 4: 2,
            ]
            let cdh = Crypto.random(32)
            let body = try await nfc.ok(
                Command.getAssertion,
                getAssertionParams(cdh, allow: [made.id], extensions: ["hmac-secret": input]))
            let authData = try checkAssertion(body, cdh, key: made.publicKey)
            let output = try #require(authData.extensions?["hmac-secret"]?.bytes)
            return try client.pinProtocol.decrypt(key: shared, output)
        }
        let salt1 = Crypto.random(32), salt2 = Crypto.random(32)
        let a = try await secret(salt1)
        #expect(a.count == 32)
        #expect(try await secret(salt1) == a)
        let both = try await secret(salt1 + salt2)
        #expect(both.count == 64 && Array(both[..<32]) == a && Array(both[32...]) != a)
    }

    // MARK: Credential management

    @Test(arguments: [Command.credentialManagement, Command.credentialManagementPreview])
    func credentialManagementEnumeratesUpdatesAndDeletes(_ command: CTAP2.Command) async throws {
        let key = newKey()
        let nfc = try await NFCClient(key)
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        #expect(try await client.setPIN("manage-pin") == 0)
        var made = [MadeCredential]()
        for (rp, user) in [("example.org", "alice"), ("example.org", "bob"), ("example.com", "carol")] {
            let t = try await client.requireToken("manage-pin", permissions: [.makeCredential], rpID: rp)
            made.append(try await makeCredential(nfc, rpID: rp, user: user, rk: true, auth: (client, t)))
        }
        let token = try await client.requireToken("manage-pin", permissions: [.credentialManagement])
        func call(_ sub: Int, _ params: CBOR? = nil, token: [UInt8]? = nil) async throws -> (UInt8, CBOR?) {
            var request: [CBOR: CBOR] = [1: CBOR(sub)]
            if let params { request[2] = params }
            if let token {
                request[3] = 2
                request[4] = client.param(token, [UInt8(sub)] + (params?.encoded ?? []))
            }
            return try await nfc.call(command, .map(request))
        }

        let (metaStatus, meta) = try await call(1, token: token)
        #expect(metaStatus == 0 && meta?[1] == 3 && meta?[2] == 97)

        let (s1, rp1) = try await call(2, token: token)
        #expect(s1 == 0 && rp1?[5] == 2)
        #expect(rp1?[3] == ["id": "example.org", "name": "Example example.org"])
        #expect(rp1?[4]?.bytes == sha256("example.org"))
        let (s2, rp2) = try await call(3)
        #expect(s2 == 0 && rp2?[3]?["id"] == "example.com" && rp2?[5] == nil)
        #expect(try await call(3).0 == CTAPError.notAllowed)

        let (c1s, c1) = try await call(4, [1: .bytes(sha256("example.org"))], token: token)
        #expect(c1s == 0 && c1?[9] == 2 && c1?[10] == 1)
        #expect(c1?[6] == ["id": .bytes(Array("alice".utf8)), "name": "alice", "displayName": "Alice"])
        #expect(c1?[7]?["id"]?.bytes == made[0].id)
        let listedKey = try publicKey(fromCOSE: try #require(c1?[8]))
        #expect(listedKey.uncompressed == made[0].publicKey.uncompressed)
        let (c2s, c2) = try await call(5)
        #expect(c2s == 0 && c2?[7]?["id"]?.bytes == made[1].id && c2?[9] == nil)
        #expect(
            try await call(4, [1: .bytes(sha256("nobody.example"))], token: token).0
                == CTAPError.noCredentials)

        // Without the cm permission, or with a forged parameter: refused.
        let mcToken = try await client.requireToken("manage-pin", permissions: [.makeCredential])
        #expect(try await call(1, token: mcToken).0 == CTAPError.pinAuthInvalid)
        #expect(try await call(1).0 == CTAPError.pinRequired)
        // A token bound to an RP may only manage that RP's credentials.
        let bound = try await client.requireToken(
            "manage-pin", permissions: [.credentialManagement],
            rpID: "example.com")
        #expect(try await call(2, token: bound).0 == CTAPError.pinAuthInvalid)
        #expect(try await call(4, [1: .bytes(sha256("example.org"))], token: bound).0 == CTAPError.pinAuthInvalid)
        #expect(try await call(4, [1: .bytes(sha256("example.com"))], token: bound).0 == 0)
        // Each new token replaces the one before.
        #expect(try await call(1, token: token).0 == CTAPError.pinAuthInvalid)
        let cmToken = try await client.requireToken("manage-pin", permissions: [.credentialManagement])

        let descriptor: CBOR = ["id": .bytes(made[1].id), "type": "public-key"]
        let newUser: CBOR = ["id": .bytes(Array("bob".utf8)), "name": "robert", "displayName": "Robert"]
        #expect(try await call(7, [2: descriptor, 3: newUser], token: cmToken).0 == 0)
        #expect(key.state.fido.credentials.first { $0.id == made[1].id }?.userName == "robert")
        let wrongUser: CBOR = ["id": .bytes(Array("mallory".utf8)), "name": "x"]
        #expect(try await call(7, [2: descriptor, 3: wrongUser], token: cmToken).0 == CTAPError.invalidParameter)

        #expect(try await call(6, [2: descriptor], token: cmToken).0 == 0)
        #expect(try await call(6, [2: descriptor], token: cmToken).0 == CTAPError.noCredentials)
        #expect(key.state.fido.credentials.map(\.id) == [made[0].id, made[2].id])
        let (after, afterMeta) = try await call(1, token: cmToken)
        #expect(after == 0 && afterMeta?[1] == 2)
        // The deleted credential no longer signs.
        let cdh = Crypto.random(32)
        let assertion = try await nfc.ok(Command.getAssertion, getAssertionParams(cdh))
        #expect(assertion[1]?["id"]?.bytes == made[0].id && assertion[5] == nil)
    }

    // MARK: Reset and selection

    @Test func resetOnlyJustAfterPowerUp() async throws {
        let key = newKey(resetWindow: 0.5)
        let nfc = try await NFCClient(key)
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        #expect(try await client.setPIN("reset-pin") == 0)
        let token = try await client.requireToken("reset-pin", permissions: [.makeCredential])
        _ = try await makeCredential(nfc, rk: true, auth: (client, token))
        let nonResident = try await makeCredential(nfc, rpID: "example.com")
        #expect(try await client.token("wrong-pin").status == CTAPError.pinInvalid)
        try await Task.sleep(for: .milliseconds(700))
        #expect(try await nfc.status(Command.reset) == CTAPError.notAllowed)
        #expect(key.state.fido.isPINSet)

        key.powerCycle()
        let fresh = try await NFCClient(key)
        #expect(try await fresh.status(Command.reset) == 0)
        let fido = key.state.fido
        #expect(!fido.isPINSet && fido.pinRetries == 8 && fido.credentials.isEmpty && fido.signCount == 0)
        #expect(try await AuthenticatorInfo(cbor: fresh.ok(Command.getInfo)).pinSet == false)
        // New wrapping keys: earlier key handles are dead.
        #expect(
            try await fresh.status(
                Command.getAssertion,
                getAssertionParams(
                    Crypto.random(32), rpID: "example.com",
                    allow: [nonResident.id]))
                == CTAPError.noCredentials)
        #expect(try await fresh.status(Command.selection) == 0)
    }

    @Test func userPresenceDelayPollsOverNFCAndCanBeCancelled() async throws {
        let key = newKey(userPresenceDelay: 0.3)
        let nfc = try await NFCClient(key)
        let start = ContinuousClock.now
        let r = try await nfc.card.send(
            APDU(
                cla: 0x80, ins: 0x10, p1: 0x80, p2: 0, data: [Command.selection.rawValue],
                le: 256))
        #expect(r.status.rawValue == 0x9100 && r.data == [0x02])
        #expect(try await nfc.status(Command.selection) == 0)
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        // getInfo needs no touch.
        let quick = ContinuousClock.now
        _ = try await nfc.ok(Command.getInfo)
        #expect(ContinuousClock.now - quick < .milliseconds(250))

        // Cancel while waiting: nothing is made.
        let pending = try await nfc.card.send(
            APDU(
                cla: 0x80, ins: 0x10, p1: 0x80, p2: 0,
                data: [Command.makeCredential.rawValue]
                    + makeCredentialParams(Crypto.random(32), rk: true).encoded,
                le: 256))
        #expect(pending.status.rawValue == 0x9100)
        let cancelled = try await nfc.card.send(APDU(cla: 0x80, ins: 0x11, p1: 0x11, p2: 0, le: 256))
        #expect(cancelled.status == .ok && cancelled.data == [CTAPError.keepaliveCancel])
        #expect(key.state.fido.credentials.isEmpty)
        // Errors that come before the touch are answered at once.
        #expect(
            try await nfc.status(Command.makeCredential, makeCredentialParams(Crypto.random(32), algorithms: [-257]))
                == CTAPError.unsupportedAlgorithm)
        _ = try await makeCredential(nfc, rk: true)
        #expect(key.state.fido.credentials.count == 1)
    }

    // MARK: U2F

    @Test func u2fRegisterAndAuthenticate() async throws {
        let key = newKey()
        let nfc = try await NFCClient(key)
        let version = try await nfc.u2f(0x03)
        #expect(version.status == .ok && version.data == Array("U2F_V2".utf8))

        let challenge = Crypto.random(32)
        let application = sha256("https://u2f.example")
        let register = try await nfc.u2f(0x01, p1: 0x03, challenge + application)
        #expect(register.status == .ok)
        let d = register.data
        #expect(d[0] == 0x05)
        let userKey = Array(d[1..<66])
        #expect(userKey[0] == 0x04)
        let handleLength = Int(d[66])
        let handle = Array(d[67..<(67 + handleLength)])
        #expect(handleLength == 98)
        let rest = Array(d[(67 + handleLength)...])
        // The certificate is one DER SEQUENCE; the signature follows it.
        let certificateLength = try derLength(rest)
        let certificate = Array(rest[..<certificateLength])
        let signature = Array(rest[certificateLength...])
        #expect(certificate == key.state.fido.attestationCertificate)
        let parsed = try X509Certificate(der: certificate)
        let attestationKey = try #require(parsed.publicKey)
        #expect(parsed.isSigned(by: attestationKey))  // self-signed
        #expect(
            attestationKey.uncompressed
                == (try P256PrivateKey(raw: key.state.fido.attestationKey)).publicKey.uncompressed)
        #expect(
            attestationKey.verify(
                signature: signature,
                message: [0x00] + application + challenge + handle + userKey))

        // The certificate and its key are made once.
        let again = try await nfc.u2f(0x01, p1: 0x03, Crypto.random(32) + application)
        #expect(again.status == .ok)
        #expect(Array(again.data[(67 + Int(again.data[66]))...]).starts(with: certificate))

        let credential = try P256PublicKey(x: Array(userKey[1..<33]), y: Array(userKey[33..<65]))
        let request = { (p1: UInt8, h: [UInt8], app: [UInt8]) async throws -> Response in
            try await nfc.u2f(0x02, p1: p1, challenge + app + [UInt8(h.count)] + h)
        }
        #expect(try await request(0x07, handle, application).status == .conditionsNotSatisfied)
        #expect(try await request(0x07, handle, sha256("https://other.example")).status == .incorrectParameters)
        #expect(try await request(0x03, Crypto.random(98), application).status == .incorrectParameters)

        let before = key.state.fido.signCount
        let signed = try await request(0x03, handle, application)
        #expect(signed.status == .ok)
        #expect(signed.data[0] == 0x01)
        let counter = Array(signed.data[1..<5])
        #expect(UInt32(BigEndian.integer(counter)) == before + 1)
        #expect(
            credential.verify(
                signature: Array(signed.data[5...]),
                message: application + [0x01] + counter + challenge))
        let silent = try await request(0x08, handle, application)
        #expect(silent.status == .ok && silent.data[0] == 0x00)

        // A U2F key handle is a CTAP2 credential ID for the RP whose hash is the application parameter.
        let rpID = "u2f-as-ctap2.example"
        let reg2 = try await nfc.u2f(0x01, p1: 0x03, challenge + sha256(rpID))
        let handle2 = Array(reg2.data[67..<(67 + Int(reg2.data[66]))])
        let key2 = try P256PublicKey(x: Array(reg2.data[2..<34]), y: Array(reg2.data[34..<66]))
        let cdh = Crypto.random(32)
        let assertion = try await nfc.ok(Command.getAssertion, getAssertionParams(cdh, rpID: rpID, allow: [handle2]))
        _ = try checkAssertion(assertion, cdh, key: key2)

        #expect(try await nfc.u2f(0x01, p1: 0x03, [1, 2, 3]).status == .wrongLength)
        #expect(try await nfc.u2f(0x09).status == .invalidInstruction)
    }

    // MARK: Persistence

    @Test func stateSurvivesThroughTheStateFile() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fido-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = VirtualKeyStateFile(path: dir.appendingPathComponent("key.json").path)

        let first = try VirtualKey(stateFile: file, initial: .yubiKey5NFC(), touchDelay: 0)
        let nfc = try await NFCClient(first)
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        #expect(try await client.setPIN("stored-pin") == 0)
        let token = try await client.requireToken("stored-pin", permissions: [.makeCredential])
        let resident = try await makeCredential(nfc, rk: true, auth: (client, token))
        let nonResident = try await makeCredential(nfc, rpID: "example.com")
        #expect(try await client.token("wrong-pin").status == CTAPError.pinInvalid)
        let u2f = try await nfc.u2f(0x01, p1: 0x03, Crypto.random(32) + sha256("u2f"))
        #expect(u2f.status == .ok)

        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(!text.contains("stored-pin"))
        #expect(text.contains(Array(sha256("stored-pin").prefix(16)).hex))

        let second = try VirtualKey(stateFile: file, initial: .yubiKey5NFC(), touchDelay: 0)
        #expect(second.state == first.state)
        let nfc2 = try await NFCClient(second)
        let client2 = PINClient(nfc: nfc2, pinProtocol: .one)
        #expect(try await client2.retries().retries == 7)
        let cdh = Crypto.random(32)
        let a1 = try await nfc2.ok(Command.getAssertion, getAssertionParams(cdh))
        let d1 = try checkAssertion(a1, cdh, key: resident.publicKey)
        #expect(d1.counter > nonResident.authData.counter)
        let a2 = try await nfc2.ok(
            Command.getAssertion,
            getAssertionParams(
                cdh, rpID: "example.com",
                allow: [nonResident.id]))
        _ = try checkAssertion(a2, cdh, key: nonResident.publicKey)
        #expect(try await client2.requireToken("stored-pin").count == 32)

        // A state file from before the authenticator existed loads with a fresh one.
        var json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
        json["fido"] = nil
        let old = try JSONSerialization.data(withJSONObject: json)
        let decoded = try JSONDecoder().decode(VirtualKeyState.self, from: old)
        #expect(decoded.fido == FIDOState())
        #expect(decoded.oath == first.state.oath)
    }

    // MARK: USB HID

    @Test func hidSharesTheAuthenticatorWithNFC() async throws {
        let key = newKey(userPresenceDelay: 0.2)
        let device = key.makeFIDOHIDDevice()
        let hid = try await CTAPHIDConnection(device: device, name: "virtual", timeout: 5)
        defer { device.close() }
        let infoBytes = try await hid.sendCBOR([Command.getInfo.rawValue])
        #expect(infoBytes.first == 0)
        let info = try AuthenticatorInfo(cbor: CBOR.decode(Array(infoBytes.dropFirst())))
        #expect(info.pinSet == false && info.aaguid == FIDOAuthenticator.aaguid)

        let nfc = try await NFCClient(key)
        #expect(try await PINClient(nfc: nfc, pinProtocol: .two).setPIN("shared-pin") == 0)
        let after = try await hid.sendCBOR([Command.getInfo.rawValue])
        #expect(try AuthenticatorInfo(cbor: CBOR.decode(Array(after.dropFirst()))).pinSet == true)

        // A touch: KEEPALIVE says so while the key waits.
        let progress = ProgressLog()
        let selection = try await hid.sendCBOR([Command.selection.rawValue]) { progress.add($0) }
        #expect(selection == [0])
        #expect(progress.all.contains(.waitingForUserPresence))

        // U2F over CTAPHID_MSG (an extended APDU).
        let version = try await hid.sendU2F([0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(version == Array("U2F_V2".utf8) + [0x90, 0x00])

        // CTAPHID_CANCEL while the key waits for the touch: KEEPALIVE_CANCEL, and nothing is stored.
        let client = PINClient(nfc: nfc, pinProtocol: .two)
        let token = try await client.requireToken("shared-pin", permissions: [.makeCredential])
        let request =
            [Command.makeCredential.rawValue]
            + makeCredentialParams(Crypto.random(32), rk: true, auth: (client, token)).encoded
        let pending = Task { try await hid.sendCBOR(request) }
        try await Task.sleep(for: .milliseconds(80))
        await hid.cancel()
        #expect(try await pending.value == [CTAPError.keepaliveCancel])
        try await Task.sleep(for: .milliseconds(50))
        #expect(key.state.fido.credentials.isEmpty)
        // The token was not used up by the cancelled request.
        let made = try await hid.sendCBOR(request)
        #expect(made.first == 0)
        #expect(key.state.fido.credentials.count == 1)
    }
}

/// The length of the DER element at the start of `bytes` (header included).
private func derLength(_ bytes: [UInt8]) throws -> Int {
    guard bytes.count >= 2, bytes[0] == 0x30 else { throw Unexpected(description: "not a DER SEQUENCE") }
    let first = Int(bytes[1])
    if first < 0x80 { return 2 + first }
    let n = first & 0x7F
    guard n <= 3, bytes.count >= 2 + n else { throw Unexpected(description: "bad DER length") }
    return 2 + n + Int(BigEndian.integer(bytes[2..<(2 + n)]))
}
