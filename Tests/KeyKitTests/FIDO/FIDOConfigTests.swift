import KeyKit
import Synchronization
import Testing

/// A CTAP2 key that records what it is sent: getInfo answers `info`; clientPIN gives out `token` (encrypted
/// for whoever asks, whatever the PIN); authenticatorConfig and credential management answer `answers` by
/// subcommand (success without data when absent).
private final class RecordingKey: FIDOConnection, Sendable {
    let name = "recording"
    let info: CBOR
    let token = [UInt8](repeating: 0x55, count: 32)
    let answers: [Int: CBOR]
    private let keyAgreement = P256PrivateKey()
    private let log = Mutex<[[UInt8]]>([])

    init(info: CBOR, answers: [Int: CBOR] = [:]) {
        self.info = info
        self.answers = answers
    }

    var requests: [[UInt8]] { log.withLock { $0 } }

    /// The CBOR parameters of the requests with this command byte.
    func sent(_ command: CTAP2.Command) throws -> [CBOR] {
        try requests.filter { $0.first == command.rawValue }.map { try CBOR.decode(Array($0.dropFirst())) }
    }

    func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        log.withLock { $0.append(request) }
        switch CTAP2.Command(rawValue: request.first ?? 0) {
        case .getInfo: return [0x00] + info.encoded
        case .clientPIN:
            let p = try CBOR.decode(Array(request.dropFirst()))
            typealias Key = CTAP2.ClientPIN.Key
            if p[Key.subcommand]?.int == CTAP2.ClientPIN.Subcommand.getKeyAgreement {
                return [0x00] + CBOR.map([1: PINUVAuthProtocol.coseKey(keyAgreement.publicKey)]).encoded
            }
            let peer = try PINUVAuthProtocol.publicKey(fromCOSE: p[Key.keyAgreement] ?? .null)
            let secret = try PINUVAuthProtocol.two.kdf(try keyAgreement.sharedSecret(with: peer))
            return [0x00] + CBOR.map([2: .bytes(try PINUVAuthProtocol.two.encrypt(key: secret, token))]).encoded
        case .config, .credentialManagement, .credentialManagementPreview:
            let p = try CBOR.decode(Array(request.dropFirst()))
            guard let answer = p[1]?.int.flatMap({ answers[$0] }) else { return [0x00] }
            return [0x00] + answer.encoded
        default: return [CTAPError.invalidCommand]
        }
    }

    func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] { [0x6D, 0x00] }
    func cancel() async {}
    func close() async {}
}

private let aaguid: CBOR = .bytes([UInt8](repeating: 0x2F, count: 16))

/// getInfo of a CTAP 2.1 key with authenticatorConfig, with these options (and PIN/UV auth protocol 2).
private func configInfo(
    _ options: [CBOR: CBOR] = [
        "authnrCfg": true, "setMinPINLength": true, "alwaysUv": false,
        "ep": false, "credMgmt": true, "clientPin": false,
    ],
    minPINLength: Int = 4
) -> CBOR {
    [1: ["FIDO_2_1"], 3: aaguid, 4: .map(options), 6: [2], 0x0D: CBOR(minPINLength)]
}

@Suite("FIDO: authenticatorConfig and updateUserInformation as CTAP 2.1 encodes them")
struct FIDOConfigTests {
    @Test func configMessageIsThirtyTwoFFsTheCommandTheSubcommandAndItsParameters() {
        let params: CBOR = [1: 8]
        let message = CTAP2.Config.authenticatedMessage(
            subcommand: CTAP2.Config.Subcommand.setMinPINLength,
            params: params)
        #expect(message == [UInt8](repeating: 0xFF, count: 32) + [0x0D, 0x03, 0xA1, 0x01, 0x08])
        #expect(
            CTAP2.Config.authenticatedMessage(subcommand: CTAP2.Config.Subcommand.toggleAlwaysUV, params: nil)
                == [UInt8](repeating: 0xFF, count: 32) + [0x0D, 0x02])
        // pinUvAuthParam with protocol one and the token 55…55: LEFT(HMAC-SHA-256(token, message), 16), as
        // Python's hmac module computes it (OpenSK's config tests expect the same two values).
        let token = [UInt8](repeating: 0x55, count: 32)
        #expect(PINUVAuthProtocol.one.authenticate(key: token, message).hex == "5c697129bdcc53e83c9762dd9029b2de")
        let seven = CTAP2.Config.authenticatedMessage(subcommand: 0x03, params: [1: 7])
        #expect(PINUVAuthProtocol.one.authenticate(key: token, seven).hex == "c5eac15e7f80701a4ec4ad8535d8a771")
    }

    @Test func setMinPINLengthWithoutAPINSendsNoAuthAndReadsGetInfoAgain() async throws {
        let key = RecordingKey(info: configInfo())
        let s = try await CTAP2Session.make(connection: key)
        try await s.setMinPINLength(6, rpIDs: ["example.com"], forceChangePIN: false)
        // {1: 3, 2: {1: 6, 2: ["example.com"]}}: no forceChangePin when false, no auth without a token.
        let request = try #require(key.requests.first { $0.first == 0x0D })
        #expect(
            request == [0x0D, 0xA2, 0x01, 0x03, 0x02, 0xA2, 0x01, 0x06, 0x02, 0x81, 0x6B] + Array("example.com".utf8))
        #expect(key.requests.filter { $0 == [0x04] }.count == 2)
        try await s.setMinPINLength(nil, forceChangePIN: true)
        let force: CBOR = [1: 3, 2: [3: true]]
        #expect(try key.sent(.config).last == force)
        try await s.toggleAlwaysUV()
        try await s.enableEnterpriseAttestation()
        let toggleThenEnable: [CBOR] = [[1: 2], [1: 1]]
        #expect(Array(try key.sent(.config).suffix(2)) == toggleThenEnable)
    }

    @Test func withATokenConfigCarriesTheProtocolAndTheMACOverTheMessage() async throws {
        let key = RecordingKey(
            info: configInfo([
                "authnrCfg": true, "setMinPINLength": true, "clientPin": true,
                "pinUvAuthToken": true,
            ]))
        let s = try await CTAP2Session.make(connection: key)
        try await s.verifyPIN("123456", permissions: [.authenticatorConfig])
        // The token request asked for acfg (0x20).
        #expect(try key.sent(.clientPIN).last?[CTAP2.ClientPIN.Key.permissions]?.int == 0x20)
        try await s.setMinPINLength(8)
        let sent = try #require(try key.sent(.config).last)
        #expect(sent[3]?.int == 2)
        let message = CTAP2.Config.authenticatedMessage(subcommand: 3, params: [1: 8])
        #expect(sent[4]?.bytes == PINUVAuthProtocol.two.authenticate(key: key.token, message))
    }

    @Test func keysWithoutTheOptionsAreToldApartBeforeAnythingIsSent() async throws {
        let old = RecordingKey(info: [
            1: ["FIDO_2_0", "FIDO_2_1_PRE"], 3: aaguid,
            4: ["clientPin": false, "credentialMgmtPreview": true],
        ])
        let s = try await CTAP2Session.make(connection: old)
        await #expect(throws: FIDOSessionError.notSupported(.authenticatorConfig)) { try await s.toggleAlwaysUV() }
        await #expect(throws: FIDOSessionError.notSupported(.authenticatorConfig)) { try await s.setMinPINLength(6) }
        await #expect(throws: FIDOSessionError.notSupported(.updateUserInformation)) {
            try await s.updateUser([1], user: .init(id: [2], name: "x"))
        }
        let partial = RecordingKey(info: configInfo(["authnrCfg": true]))
        let p = try await CTAP2Session.make(connection: partial)
        await #expect(throws: FIDOSessionError.notSupported(.alwaysUV)) { try await p.toggleAlwaysUV() }
        await #expect(throws: FIDOSessionError.notSupported(.enterpriseAttestation)) {
            try await p.enableEnterpriseAttestation()
        }
        await #expect(throws: FIDOSessionError.notSupported(.setMinPINLength)) { try await p.setMinPINLength(6) }
        #expect(old.requests.allSatisfy { $0 == [0x04] } && partial.requests.allSatisfy { $0 == [0x04] })
    }

    @Test func aLowerMinimumIsRefusedBeforeSending() async throws {
        let key = RecordingKey(info: configInfo(minPINLength: 8))
        let s = try await CTAP2Session.make(connection: key)
        await #expect(throws: FIDOSessionError.minPINLengthDecrease(current: 8, requested: 6)) {
            try await s.setMinPINLength(6)
        }
        try await s.setMinPINLength(8, rpIDs: [])
        let expected: [CBOR] = [[1: 3, 2: [1: 8, 2: []]]]
        #expect(try key.sent(.config) == expected)
    }

    @Test func getInfoFieldsOfCTAP21() throws {
        var cbor = configInfo(
            ["authnrCfg": true, "alwaysUv": true, "ep": false, "setMinPINLength": true],
            minPINLength: 6)
        cbor = .map((cbor.map ?? [:]).merging([0x0C: true, 0x10: 4]) { $1 })
        let info = try AuthenticatorInfo(cbor: cbor)
        #expect(info.minPINLength == 6 && info.forcePINChange && info.maxRPIDsForSetMinPINLength == 4)
        #expect(info.alwaysUV == true && info.enterpriseAttestation == false)
        #expect(info.supportsConfig && info.supportsSetMinPINLength && !info.supportsUpdateUserInformation)
        #expect(info.otherFields.isEmpty)
        let bare = try AuthenticatorInfo(cbor: [1: ["FIDO_2_0"], 3: aaguid])
        #expect(bare.alwaysUV == nil && bare.enterpriseAttestation == nil && bare.maxRPIDsForSetMinPINLength == nil)
        #expect(!bare.supportsConfig && !bare.forcePINChange && bare.minPINLength == 4)
    }

    @Test func updateUserInformationAndTheCredentialDetailsOfAnEnumeration() async throws {
        typealias Answer = CTAP2.CredentialManagement.ResponseKey
        let rpHash = Crypto.digest(.sha256, Array("example.com".utf8))
        let key = RecordingKey(
            info: configInfo(["credMgmt": true, "clientPin": true, "pinUvAuthToken": true]),
            answers: [
                0x02: [
                    CBOR(Answer.rp): ["id": "example.com"], CBOR(Answer.rpIDHash): .bytes(rpHash),
                    CBOR(Answer.totalRPs): 1,
                ],
                0x04: [
                    CBOR(Answer.user): ["id": .bytes([7]), "name": "alice"],
                    CBOR(Answer.credentialID): CTAP2.credentialDescriptor([9, 9]),
                    CBOR(Answer.credProtect): 2, CBOR(Answer.largeBlobKey): .bytes([UInt8](repeating: 1, count: 32)),
                    CBOR(Answer.totalCredentials): 1,
                ],
            ])
        let s = try await CTAP2Session.make(connection: key)
        try await s.verifyPIN("123456", permissions: [.credentialManagement])
        let rps = try await s.relyingParties()
        let creds = try await s.credentials(of: try #require(rps.first))
        #expect(creds.map(\.credProtect) == [2] && creds.map(\.hasLargeBlobKey) == [true])
        try await s.updateUser([9, 9], user: .init(id: [7], name: "alice2", displayName: nil))
        let sent = try #require(try key.sent(.credentialManagement).last)
        let subParams: CBOR = [2: CTAP2.credentialDescriptor([9, 9]), 3: ["id": .bytes([7]), "name": "alice2"]]
        #expect(sent[1]?.int == 7 && sent[2] == subParams && sent[3]?.int == 2)
        #expect(sent[4]?.bytes == PINUVAuthProtocol.two.authenticate(key: key.token, [0x07] + subParams.encoded))
    }
}
