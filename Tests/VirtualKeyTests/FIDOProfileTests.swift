import Foundation
import KeyKit
import Synchronization
import Testing
import VirtualKey

// The FIDO side of the virtual key's profiles (keys of other makes): what the key answers, raw, over NFC
// (NFCCTAP_MSG through the key's APDU dispatch) and over its FIDO HID device, and that KeyKit's CTAP2 and
// U2F sessions cope with each.

private struct Unexpected: Error, CustomStringConvertible {
    let description: String
}

private final class ProgressLog: Sendable {
    private let items = Mutex<[(FIDOProgress, Double)]>([])
    private let start = ProcessInfo.processInfo.systemUptime
    func add(_ p: FIDOProgress) {
        let t = ProcessInfo.processInfo.systemUptime - start
        items.withLock { $0.append((p, t)) }
    }
    /// The progress reports, without repeats of the one before.
    var changes: [FIDOProgress] {
        items.withLock { $0.map(\.0) }.reduce(into: []) { if $0.last != $1 { $0.append($1) } }
    }
    /// Seconds from the log's start to the first report of `p`.
    func first(_ p: FIDOProgress) -> Double? { items.withLock { $0.first { $0.0 == p }?.1 } }
}

private typealias Command = CTAP2.Command

/// The resets here are about keep-alives, not the window after power-up: on a loaded machine a test can
/// reach its reset more than the 10 s a key allows after the key was made.
private func key(_ profile: VirtualKeyProfile, state: VirtualKeyState = .yubiKey5NFC()) -> VirtualKey {
    VirtualKey(state: state, touchDelay: 0, resetWindow: .infinity, profile: profile)
}

/// NFCCTAP_MSG with one CTAP2 request, without polling: the raw response.
private func nfcctap(_ key: VirtualKey, _ request: [UInt8], p1: UInt8 = 0x80) async throws -> Response {
    let card = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
    let selected = try await card.send(.select(aid: AID.fido))
    guard selected.status == .ok else { throw Unexpected(description: "SELECT answered \(selected.status)") }
    return try await card.send(APDU(cla: 0x80, ins: 0x10, p1: p1, p2: 0x00, data: request, le: 256))
}

/// The CTAP status byte of one request over NFC.
private func ctapStatus(_ key: VirtualKey, _ command: Command, _ params: CBOR? = nil) async throws -> UInt8 {
    let r = try await nfcctap(key, [command.rawValue] + (params?.encoded ?? []))
    guard r.status == .ok, let status = r.data.first else { throw Unexpected(description: "answered \(r.status)") }
    return status
}

private func nfcSession(_ key: VirtualKey) async throws -> (CTAP2Session, PCSCFIDOConnection) {
    let fido = try await PCSCFIDOConnection.open(card: VirtualKeyConnection(key: key))
    return (try await CTAP2Session.make(connection: fido), fido)
}

private func hidConnection(_ key: VirtualKey) async throws -> CTAPHIDConnection {
    try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "virtual", timeout: 20)
}

/// A platform key agreement with protocol `p`'s KDF over the key's getKeyAgreement answer (asked for with
/// protocol `asked`).
private func agree(_ key: VirtualKey, _ p: PINUVAuthProtocol) async throws -> (CBOR, [UInt8]) {
    let r = try await nfcctap(key, [Command.clientPIN.rawValue] + CBOR.map([1: CBOR(p.version), 2: 2]).encoded)
    let body = try CBOR.decode(Array(r.data.dropFirst()))
    return try p.encapsulate(try PINUVAuthProtocol.publicKey(fromCOSE: try #require(body[1])))
}

private func makeCredentialParams(_ cdh: [UInt8], auth: [UInt8], protocolNumber: Int) -> CBOR {
    [
        1: .bytes(cdh), 2: ["id": "example.org"], 3: ["id": .bytes([1, 2, 3]), "name": "u"],
        4: [["alg": -7, "type": "public-key"]], 8: .bytes(auth), 9: CBOR(protocolNumber),
    ]
}

/// The depth of a CBOR value: 1 for a map or array of plain values.
private func depth(_ v: CBOR) -> Int {
    switch v {
    case .array(let a): return 1 + (a.map(depth).max() ?? 0)
    case .map(let m): return 1 + (m.flatMap { [depth($0.key), depth($0.value)] }.max() ?? 0)
    case .tagged(_, let inner): return depth(inner)
    default: return 0
    }
}

/// Whether `v` holds only what CTAP2 messages carry: integers, byte and text strings, arrays, maps, booleans.
private func onlyCTAP2Types(_ v: CBOR) -> Bool {
    switch v {
    case .unsigned, .negative, .bytes, .text, .bool: return true
    case .array(let a): return a.allSatisfy(onlyCTAP2Types)
    case .map(let m): return m.allSatisfy { onlyCTAP2Types($0.key) && onlyCTAP2Types($0.value) }
    case .tagged, .null, .undefined, .float: return false
    }
}

@Suite("Virtual key profiles: FIDO")
struct FIDOProfileTests {
    // MARK: One PIN/UV auth protocol

    @Test(arguments: [(VirtualKeyProfile.pinProtocol1, 1), (.pinProtocol2, 2)])
    func onePINProtocolOnly(profile: VirtualKeyProfile, number: Int) async throws {
        let k = key(profile)
        let other = number == 1 ? PINUVAuthProtocol.two : .one
        let (s, fido) = try await nfcSession(k)
        #expect(await s.info.pinUVAuthProtocols == [number])
        #expect(await s.pinProtocol?.version == number)

        // The other protocol is refused (CTAP1_ERR_INVALID_PARAMETER) for every clientPIN subcommand that
        // names one, before anything changes.
        #expect(
            try await ctapStatus(k, Command.clientPIN, [1: CBOR(other.version), 2: 2]) == CTAPError.invalidParameter)
        let (platformKey, _) = try await agree(k, number == 1 ? .one : .two)
        #expect(
            try await ctapStatus(
                k, Command.clientPIN,
                [
                    1: CBOR(other.version), 2: 3, 3: platformKey,
                    4: .bytes(Crypto.random(16)), 5: .bytes(Crypto.random(64)),
                ])
                == CTAPError.invalidParameter)
        #expect(!k.state.fido.isPINSet)

        // KeyKit picks the one offered, for set, change, verify and credential management.
        try await s.setPIN("first-pin")
        try await s.changePIN(old: "first-pin", new: "second-pin")
        await #expect(throws: CTAPError.self) { try await s.verifyPIN("first-pin") }
        try await s.verifyPIN("second-pin", permissions: [.makeCredential], rpID: "example.org")
        let cdh = Crypto.random(32)
        _ = try await s.makeCredential(
            clientDataHash: cdh, rp: .init(id: "example.org"),
            user: .init(id: [7], name: "seven"), residentKey: true)
        try await s.verifyPIN("second-pin", permissions: [.credentialManagement])
        let rps = try await s.relyingParties()
        #expect(rps.map(\.id) == ["example.org"])
        #expect(try await s.credentials(of: rps[0]).map(\.user.name) == ["seven"])
        #expect(try await s.pinRetries().retries == 8)

        // A makeCredential whose pinUvAuthParam names the other protocol is refused the same way.
        #expect(
            try await ctapStatus(
                k, Command.makeCredential,
                makeCredentialParams(cdh, auth: Crypto.random(16), protocolNumber: other.version))
                == CTAPError.invalidParameter)
        await fido.close()

        // Over HID too.
        let hid = try await hidConnection(k)
        let overHID = try await CTAP2Session.make(connection: hid)
        #expect(await overHID.info.pinUVAuthProtocols == [number])
        try await overHID.verifyPIN("second-pin")
        await hid.close()
    }

    @Test func theProtocolChosenFromWhatAKeyOffers() {
        #expect(CTAP2Session.pinProtocol(offered: [2, 1]) == .two)
        #expect(CTAP2Session.pinProtocol(offered: [1, 2]) == .two)
        #expect(CTAP2Session.pinProtocol(offered: [1]) == .one)
        #expect(CTAP2Session.pinProtocol(offered: [2]) == .two)
        #expect(CTAP2Session.pinProtocol(offered: [3, 1]) == .one)
        // CTAP 2.0 keys may leave the list out: they have protocol 1.
        #expect(CTAP2Session.pinProtocol(offered: []) == .one)
        #expect(CTAP2Session.pinProtocol(offered: [3]) == nil)
    }

    // MARK: getInfo entries no client knows

    @Test func unknownGetInfoEntriesAreValidCTAP2CBORAndKeptAside() async throws {
        let k = key(.ctapUnknownFields)
        let r = try await nfcctap(k, [Command.getInfo.rawValue])
        #expect(r.status == .ok && r.data.first == 0)
        // Canonical, as CTAP2 wants it, at most four levels deep, with no tags, floats or null.
        let raw = try CBOR.decode(Array(r.data.dropFirst()), limits: .init(requireCanonicalKeys: true))
        #expect(depth(raw) <= 4 && onlyCTAP2Types(raw))

        let (s, fido) = try await nfcSession(k)
        let info = await s.info
        #expect(info.versions == ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE", "FIDO_2_1", "FIDO_2_2", "FIDO_3_0"])
        #expect(
            info.extensions == [
                "credProtect", "hmac-secret", "minPinLength", "thirdPartyPayment",
                "x-vendor-telemetry",
            ])
        #expect(info.options["futureOption"] == true && info.options["x-vendor-mode"] == false)
        #expect(info.options["clientPin"] == false && info.pinSet == false)
        #expect(info.aaguid == FIDOAuthenticator.aaguid && info.pinUVAuthProtocols == [2, 1])
        #expect(info.otherFields.map(\.key) == [0x13, 0x18, 0x21, 0x30, 0x7F, 0x1000])
        #expect(info.otherFields.first { $0.key == 0x21 }?.value["vendor"]?["level"] == 3)
        // The key works as ever.
        try await s.setPIN("unknown-fields")
        #expect(await s.info.pinSet == true)
        #expect(try await s.pinRetries().retries == 8)
        await fido.close()
    }

    @Test func getInfoWithTypesCTAP2DoesNotUseIsStillRead() throws {
        // A key that breaks CTAP2's rules in fields nobody reads (a tag, a float, null) does not stop a
        // client that reads the fields it knows.
        let info = try AuthenticatorInfo(cbor: [
            1: ["FIDO_2_0"], 3: .bytes([UInt8](repeating: 7, count: 16)), 4: ["clientPin": true, "odd": 1],
            0x40: .tagged(1, CBOR(1_700_000_000)), 0x41: .float(1.5), 0x42: .null, -1: "negative key",
        ])
        #expect(info.pinSet == true && info.options == ["clientPin": true])
        #expect(info.otherFields.map(\.key) == [0x40, 0x41, 0x42, -1])
    }

    // MARK: U2F only

    @Test func u2fOnlyKeyRefusesCTAP2OverNFCAndSpeaksU2F() async throws {
        let k = key(.u2fOnly)
        let card = SmartCardProtocol(connection: VirtualKeyConnection(key: k))
        let selected = try await card.send(.select(aid: AID.fido))
        #expect(selected.status == .ok && selected.data == Array("U2F_V2".utf8))
        let msg = try await card.send(
            APDU(
                cla: 0x80, ins: 0x10, p1: 0x80, p2: 0, data: [Command.getInfo.rawValue],
                le: 256))
        #expect(msg.status == .invalidInstruction && msg.data.isEmpty)
        let poll = try await card.send(APDU(cla: 0x80, ins: 0x11, p1: 0, p2: 0, le: 256))
        #expect(poll.status == .invalidInstruction)

        let fido = try await PCSCFIDOConnection.open(card: VirtualKeyConnection(key: k))
        await #expect(throws: FIDOSessionError.ctap2NotSupported) { _ = try await CTAP2Session.make(connection: fido) }
        let u2f = U2FSession(connection: fido)
        #expect(try await u2f.version() == "U2F_V2")
        let app = Crypto.digest(.sha256, Array("https://u2f.example".utf8))
        let reg = try await u2f.register(challenge: Crypto.random(32), application: app)
        let auth = try await u2f.authenticate(
            challenge: Crypto.random(32), application: app,
            keyHandle: reg.keyHandle, publicKey: reg.publicKey)
        #expect(auth.userPresence & 1 == 1)
        await fido.close()

        // The Management application lists U2F and not FIDO2, over NFC and USB.
        let management = try await ManagementSession.make(connection: VirtualKeyConnection(key: k))
        let device = try await management.deviceInfo()
        #expect(device.enabledUSB.contains(.u2f) && !device.enabledUSB.contains(.fido2))
        #expect(device.supportedNFC?.contains(.fido2) == false && device.enabledNFC?.contains(.u2f) == true)
        #expect(!device.enabled(overNFC: true).names.contains("FIDO2"))
    }

    @Test func u2fOnlyKeyOverHIDAnnouncesNoCBOR() async throws {
        let k = key(.u2fOnly)
        let hid = try await hidConnection(k)
        #expect(!hid.capabilities.contains(.cbor) && !hid.capabilities.contains(.nmsg))
        // Sent all the same, CTAPHID_CBOR is an invalid command.
        await #expect(throws: FIDOTransportError.ctaphidError(CTAPHID.ErrorCode.invalidCommand)) {
            _ = try await hid.sendCBOR([Command.getInfo.rawValue])
        }
        await #expect(throws: FIDOSessionError.ctap2NotSupported) { _ = try await CTAP2Session.make(connection: hid) }
        let u2f = U2FSession(connection: hid)
        let app = Crypto.digest(.sha256, Array("https://hid.example".utf8))
        let reg = try await u2f.register(challenge: Crypto.random(32), application: app)
        _ = try await u2f.authenticate(
            challenge: Crypto.random(32), application: app, keyHandle: reg.keyHandle,
            publicKey: reg.publicKey)
        // What a client probing the HID interface learns: U2F, no FIDO2.
        let probed = await KeyProbe.inspect(fido: hid, name: "virtual")
        #expect(probed.applications.contains("U2F") && !probed.applications.contains("FIDO2"))
        await hid.close()
        // The YubiKey profile's HID interface does announce CBOR.
        let yubikey = try await hidConnection(key(.yubikey))
        #expect(yubikey.capabilities.contains(.cbor))
        await yubikey.close()
    }

    // MARK: getPinRetries refused before a PIN is set

    @Test func pinRetriesRefusedUntilAPINIsSet() async throws {
        let k = key(.pinRetriesRefused)
        #expect(try await ctapStatus(k, Command.clientPIN, [1: 2, 2: 1]) == CTAPError.pinNotSet)
        #expect(try await ctapStatus(k, Command.clientPIN, [2: 1]) == CTAPError.pinNotSet)
        let (s, fido) = try await nfcSession(k)
        await #expect(throws: CTAPError(CTAPError.pinNotSet)) { _ = try await s.pinRetries() }
        try await s.setPIN("now-set")
        #expect(try await s.pinRetries().retries == 8)
        await fido.close()
        // The YubiKey profile counts before a PIN exists.
        #expect(try await ctapStatus(key(.yubikey), Command.clientPIN, [1: 2, 2: 1]) == 0)
    }

    // MARK: Long keepalives before an answer that needs the user

    @Test func slowKeepaliveOverHIDReportsProcessingThenTouchAndAnswers() async throws {
        let k = key(.slowKeepalive)
        let hid = try await hidConnection(k)
        let s = try await CTAP2Session.make(connection: hid)
        // getInfo needs no user: answered without a keepalive.
        let log = ProgressLog()
        await s.setProgress { log.add($0) }
        try await s.refreshInfo()
        #expect(log.changes.isEmpty)
        // Selection needs the user: the key keeps the client waiting its 8 s (no upper bound: how much longer
        // a loaded machine takes is not the key's behaviour).
        let start = ProcessInfo.processInfo.systemUptime
        try await s.selection()
        let took = ProcessInfo.processInfo.systemUptime - start
        #expect(took >= 8)
        #expect(log.changes == [.processing, .waitingForUserPresence])
        #expect((log.first(.waitingForUserPresence) ?? 0) >= 3.5)
        await hid.close()
    }

    @Test func slowKeepaliveOverNFCAnswers9100WithTheStatusOfTheMoment() async throws {
        let k = key(.slowKeepalive)
        let (s, fido) = try await nfcSession(k)
        let log = ProgressLog()
        await s.setProgress { log.add($0) }
        let start = ProcessInfo.processInfo.systemUptime
        try await s.reset()
        let took = ProcessInfo.processInfo.systemUptime - start
        #expect(took >= 8)
        #expect(log.changes == [.processing, .waitingForUserPresence])
        await fido.close()
    }

    @Test func slowKeepaliveCanBeCancelledOverBothTransports() async throws {
        let k = key(.slowKeepalive)
        try await nfcSession(k).0.setPIN("keep-me")
        // NFC: NFCCTAP_GETRESPONSE with P1 0x11 while the key reports "processing".
        let (s, fido) = try await nfcSession(k)
        await s.setProgress { p in if p == .processing { Task { await fido.cancel() } } }
        // Cancelled, not answered: the reset never happened, so the PIN is still set.
        await #expect(throws: CTAPError(CTAPError.keepaliveCancel)) { try await s.reset() }
        #expect(k.state.fido.isPINSet)
        await fido.close()
        // HID: CTAPHID_CANCEL.
        let hid = try await hidConnection(k)
        let overHID = try await CTAP2Session.make(connection: hid)
        await overHID.setProgress { p in if p == .processing { Task { await hid.cancel() } } }
        await #expect(throws: CTAPError(CTAPError.keepaliveCancel)) { try await overHID.reset() }
        #expect(k.state.fido.isPINSet)
        await hid.close()
    }
}
