import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The virtual key's FIDO HID interface as an operation's, counting connections opened and closed. With
/// `breakAfterChangePIN`, the connection sends the PIN change to the key and then fails as a key pulled out
/// before its answer came back.
private final class FIDOKey: FIDOOpener, @unchecked Sendable {
    // @unchecked: the counters and the switch are LockedValues; `key` is set once.
    let key: VirtualKey
    let opened = LockedValue(0)
    let closed = LockedValue(0)
    let breakAfterChangePIN = LockedValue(false)

    init(_ key: VirtualKey = VirtualKey(state: VirtualKeyState.yubiKey5NFC())) {
        self.key = key
    }

    func openFIDO() async throws -> any FIDOConnection {
        opened.withLock { $0 += 1 }
        let hid = try await CTAPHIDConnection(device: key.makeFIDOHIDDevice(), name: "Virtual Key (FIDO HID)")
        return Counted(hid, owner: self)
    }

    final class Counted: FIDOConnection, @unchecked Sendable {
        // @unchecked: `inner` is Sendable, `owner` only reads LockedValues.
        let inner: any FIDOConnection
        let owner: FIDOKey
        init(_ inner: any FIDOConnection, owner: FIDOKey) {
            self.inner = inner
            self.owner = owner
        }
        var name: String { inner.name }
        func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
            let answer = try await inner.sendCBOR(request, progress: progress)
            // authenticatorClientPIN (0x06): a map whose first entries are pinUvAuthProtocol (key 1) and
            // subCommand (key 2), here changePIN (4).
            if owner.breakAfterChangePIN.withLock({ $0 }), request.first == 0x06, request.count > 5,
                request[2] == 0x01, request[4] == 0x02, request[5] == 0x04
            {
                throw SmartCardError.cardRemoved
            }
            return answer
        }
        func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] { try await inner.sendU2F(apdu) }
        func cancel() async { await inner.cancel() }
        func close() async {
            owner.closed.withLock { $0 += 1 }
            await inner.close()
        }
    }
}

@Suite struct FIDOOperationsTests {
    @Test func aPINIsSetOnceAndTheKeyAfterwardsSaysSo() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        #expect(try await ops.info().pinSet == false)
        let after = try await ops.setPIN("first-pin")
        #expect(after.pinSet == true && after.retries == 8)
        await #expect(throws: FIDOOperationError.self) { _ = try await ops.setPIN("second-pin") }
        #expect(try await ops.verifyPIN("first-pin").retries == 8)
        #expect(key.opened.withLock { $0 } == 4 && key.closed.withLock { $0 } == 4)
    }

    @Test func aRefusedChangeIsTheKeysAnswerAndChangesNothing() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        await #expect(throws: CTAPError.self) { _ = try await ops.changePIN(current: "none-yet", new: "new-pin-1") }
        _ = try await ops.setPIN("old-pin-1")
        do {
            _ = try await ops.changePIN(current: "wrong-pin", new: "new-pin-1")
            Issue.record("a wrong current PIN changed the PIN")
        } catch let e as CTAPError {
            #expect(e.code == CTAPError.pinInvalid && FIDOOperations.keyAnswered(e))
        }
        #expect(try await ops.verifyPIN("old-pin-1").retries == 8)
        let changed = try await ops.changePIN(current: "old-pin-1", new: "new-pin-1")
        #expect(changed.pinSet == true)
        await #expect(throws: CTAPError.self) { _ = try await ops.verifyPIN("old-pin-1") }
        #expect(try await ops.verifyPIN("new-pin-1").retries == 8)
    }

    @Test func aChangeWithoutAnAnswerIsUncertainAndTheConnectionIsClosed() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        _ = try await ops.setPIN("old-pin-1")
        key.breakAfterChangePIN.withLock { $0 = true }
        do {
            _ = try await ops.changePIN(current: "old-pin-1", new: "new-pin-1")
            Issue.record("the change seemed to succeed")
        } catch FIDOOperationError.pinChangeUncertain(let cause) {
            #expect(!FIDOOperations.keyAnswered(cause))
            #expect(ErrorExplanation(FIDOOperationError.pinChangeUncertain(cause)).kind == .keyRemoved)
            #expect(FIDOTabWork.reason(FIDOOperationError.pinChangeUncertain(cause), .changePIN) == .keyGone)
        }
        key.breakAfterChangePIN.withLock { $0 = false }
        // Here the key took it: the new PIN is the one.
        #expect(try await ops.verifyPIN("new-pin-1").pinSet == true)
        #expect(key.opened.withLock { $0 } == key.closed.withLock { $0 })
    }

    @Test func theOpenedHookSeesEveryConnectionBeforeItsFirstRequest() async throws {
        let key = FIDOKey()
        let seen = LockedValue<[String]>([])
        let ops = FIDOOperations(
            key,
            hooks: FIDOOperations.Hooks(opened: { connection in
                seen.withLock { $0.append(connection.name) }
            }))
        _ = try await ops.info()
        _ = try await ops.setPIN("a-pin-123")
        #expect(seen.withLock { $0 } == ["Virtual Key (FIDO HID)", "Virtual Key (FIDO HID)"])
    }

    /// Makes a discoverable credential on `key` for `rp`, with a token of its own (as a browser would).
    private func makeCredential(_ key: FIDOKey, pin: String, rp: String, user: String) async throws -> [UInt8] {
        let fido = try await key.openFIDO()
        let session = try await CTAP2Session.make(connection: fido)
        try await session.verifyPIN(pin, permissions: [.makeCredential], rpID: rp)
        let made = try await session.makeCredential(
            clientDataHash: Crypto.random(32), rp: .init(id: rp),
            user: .init(id: Array(user.utf8), name: user, displayName: nil),
            residentKey: true)
        await fido.close()
        return made.credentialID
    }

    @Test func credentialsAreListedRenamedAndDeletedWithThePINOrAHeldToken() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        _ = try await ops.setPIN("cred-pin-1")
        let aliceID = try await makeCredential(key, pin: "cred-pin-1", rp: "example.org", user: "alice")
        _ = try await makeCredential(key, pin: "cred-pin-1", rp: "example.com", user: "bob")
        await #expect(throws: CTAPError.self) { _ = try await ops.credentials(.pin("wrong-pin")) }
        let listed = try await ops.credentials(.pin("cred-pin-1")).credentials
        #expect(Set(listed.map(\.rpID)) == ["example.org", "example.com"])
        // The display name is set, the user name kept (.none).
        let (renamed, all) = try await ops.updateUser(
            aliceID, name: .none, displayName: .some("Alice A."), .pin("cred-pin-1"))
        #expect(
            renamed.userName == "alice" && renamed.displayName == "Alice A." && renamed.userID == Array("alice".utf8))
        #expect(all.count == 2)
        // A token held from a verification, as the FIDO2 tab keeps one.
        let held = try await ops.withAuthorized(.pin("cred-pin-1")) { await $0.heldToken() }
        let (deleted, remaining, info) = try await ops.deleteCredential(aliceID, .token(try #require(held)))
        #expect(deleted.rpID == "example.org" && remaining.map(\.rpID) == ["example.com"] && info.pinSet == true)
        await #expect(throws: CTAPError.self) { _ = try await ops.deleteCredential(aliceID, .pin("cred-pin-1")) }
        #expect(key.opened.withLock { $0 } == key.closed.withLock { $0 })
    }

    @Test func resetRemovesThePINAndEveryCredential() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        _ = try await ops.setPIN("cred-pin-1")
        _ = try await makeCredential(key, pin: "cred-pin-1", rp: "example.org", user: "alice")
        let after = try await ops.reset()
        #expect(after.pinSet == false)
        await #expect(throws: CTAPError.self) { _ = try await ops.credentials(.pin("cred-pin-1")) }
    }

    @Test func settingsNeedThePINOnceTheKeyHasOneAndRefuseWhatTheKeyCannotDo() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        // No PIN yet: authenticatorConfig goes without a token.
        #expect(try await ops.toggleAlwaysUV(pin: nil) == true)
        #expect(try await ops.info().options["alwaysUv"] == true)
        #expect(try await ops.toggleAlwaysUV(pin: nil) == false)
        _ = try await ops.setPIN("cfg-pin-1")
        await #expect(throws: FIDOOperationError.self) { _ = try await ops.toggleAlwaysUV(pin: nil) }
        // Enterprise attestation: the PIN first, then on for good; asked again, nothing is sent.
        await #expect(throws: FIDOOperationError.self) { _ = try await ops.enableEnterpriseAttestation(pin: nil) }
        #expect(try await ops.enableEnterpriseAttestation(pin: "cfg-pin-1") == true)
        #expect(try await ops.info().options["ep"] == true)
        #expect(try await ops.enableEnterpriseAttestation(pin: nil) == false)
        // The minimum only grows; a lower one is refused before the PIN is used.
        await #expect(throws: FIDOSessionError.self) {
            _ = try await ops.setMinPINLength(4 - 1, rpIDs: [], pin: "cfg-pin-1")
        }
        // The PIN has 9 characters: a minimum of 10 makes the key want it changed.
        #expect(try await ops.setMinPINLength(10, rpIDs: ["example.org"], pin: "cfg-pin-1") == true)
        let after = try await ops.info()
        #expect(after.minPINLength == 10 && after.forcePINChange)
        #expect(key.opened.withLock { $0 } == key.closed.withLock { $0 })
    }

    @Test func aForcedChangeNeedsAPINAndLeavesOnlyTheChange() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        await #expect(throws: CTAPError.self) { try await ops.forcePINChange(pin: nil) }
        _ = try await ops.setPIN("force-pin-1")
        try await ops.forcePINChange(pin: "force-pin-1")
        #expect(try await ops.info().forcePINChange)
        _ = try await ops.changePIN(current: "force-pin-1", new: "force-pin-2")
        #expect(try await ops.info().forcePINChange == false)
    }

    @Test func fingerprintsAreListedRenamedAndDeletedOnAKeyWithASensor() async throws {
        var state = VirtualKeyState.yubiKey5NFC()
        state.fido.fingerprints = [
            FIDOState.Fingerprint(templateID: [0x01, 0x02], name: "left thumb"),
            FIDOState.Fingerprint(templateID: [0x03], name: nil),
        ]
        let key = FIDOKey(VirtualKey(state: state, profile: .yubikeyBio))
        let ops = FIDOOperations(key)
        _ = try await ops.setPIN("bio-pin-1")
        #expect(try await ops.fingerprints(.pin("bio-pin-1")).map(\.name) == ["left thumb", nil])
        let renamed = try await ops.renameFingerprint([0x03], to: "right index", .pin("bio-pin-1"))
        #expect(renamed.map(\.name) == ["left thumb", "right index"])
        let (deleted, remaining) = try await ops.deleteFingerprint([0x01, 0x02], .pin("bio-pin-1"))
        #expect(deleted.name == "left thumb" && remaining.map(\.templateID) == [[0x03]])
        await #expect(throws: FIDOSessionError.self) {
            _ = try await ops.deleteFingerprint([0x01, 0x02], .pin("bio-pin-1"))
        }
        // A key without a sensor says so.
        let plain = FIDOOperations(FIDOKey())
        _ = try await plain.setPIN("bio-pin-1")
        await #expect(throws: FIDOSessionError.self) { _ = try await plain.fingerprints(.pin("bio-pin-1")) }
        #expect(key.opened.withLock { $0 } == key.closed.withLock { $0 })
    }

    @Test func aU2FRegistrationSignsAndItsKeyHandleThenAuthenticates() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        let application = Crypto.digest(.sha256, Array("https://example.org".utf8))
        let registration = try await ops.u2fRegister(application: application)
        let first = try await ops.u2fAuthenticate(
            application: application, keyHandle: registration.keyHandle,
            publicKey: registration.publicKey)
        let second = try await ops.u2fAuthenticate(
            application: application, keyHandle: registration.keyHandle,
            publicKey: registration.publicKey)
        // The counter moves on; the signatures were checked with the registered key by the operation.
        #expect(second.counter > first.counter)
        // Another application's parameter does not go with the key handle.
        await #expect(throws: (any Error).self) {
            _ = try await ops.u2fAuthenticate(
                application: Crypto.digest(.sha256, Array("other".utf8)),
                keyHandle: registration.keyHandle, publicKey: registration.publicKey)
        }
        #expect(try await ops.u2fVersion() == "U2F_V2")
        #expect(key.opened.withLock { $0 } == key.closed.withLock { $0 })
    }

    @Test func theSelfTestMakesAndChecksACredentialAndCleansUpADiscoverableOne() async throws {
        let key = FIDOKey()
        let ops = FIDOOperations(key)
        // No PIN: a credential that is not discoverable, nothing to delete.
        let plain = try await ops.selfTest(rpID: "selftest.example", pin: nil)
        #expect(plain.format == "packed" && !plain.deleted)
        _ = try await ops.setPIN("test-pin-1")
        await #expect(throws: FIDOOperationError.self) {
            _ = try await ops.selfTest(rpID: "selftest.example", pin: nil)
        }
        let resident = try await ops.selfTest(rpID: "selftest.example", pin: "test-pin-1")
        #expect(resident.deleted && resident.counter > plain.counter)
        #expect(try await ops.credentials(.pin("test-pin-1")).credentials.isEmpty)
        let (info, retries) = try await ops.authenticatorInfo()
        #expect(info.pinSet == true && retries == 8)
    }

    @Test func anEnrollmentReportsEachSampleAndNamesTheNewFingerprint() async throws {
        // The sensor's second sample is too fast; five good ones make a template (the virtual YubiKey Bio).
        let key = FIDOKey(
            VirtualKey(
                state: VirtualKeyState.yubiKey5NFC(), profile: .yubikeyBio,
                bioSampleStatuses: [.good, .tooFast], sensorDelays: [0]))
        let ops = FIDOOperations(key)
        _ = try await ops.setPIN("bio-pin-1")
        let seen = LockedValue<[FIDOOperations.EnrollmentProgress]>([])
        let id = try await ops.enrollFingerprint(
            name: "left thumb", .pin("bio-pin-1"), timeoutMilliseconds: 5_000,
            progress: { step in seen.withLock { $0.append(step) } })
        #expect(
            seen.withLock { $0 } == [
                .touchTheSensor, .good(remaining: 4), .unusable(.tooFast, remaining: 4),
                .good(remaining: 3), .good(remaining: 2), .good(remaining: 1),
            ])
        #expect(try await ops.fingerprints(.pin("bio-pin-1")) == [FIDOFingerprint(templateID: id, name: "left thumb")])
        // A name longer than the sensor takes is refused before the sensor is asked.
        await #expect(throws: FIDOSessionError.self) {
            _ = try await ops.enrollFingerprint(
                name: String(repeating: "x", count: 200), .pin("bio-pin-1"),
                timeoutMilliseconds: 5_000, progress: { _ in })
        }
        #expect(key.opened.withLock { $0 } == key.closed.withLock { $0 })
    }
}
