import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The virtual key as PIV operations' smart-card interface, counting the connections opened and closed.
private final class PIVKey: SmartCardOpener, @unchecked Sendable {
    // @unchecked: the counters are LockedValues; `key` is set once.
    let key = VirtualKey(state: VirtualKeyState.yubiKey5NFC())
    let opened = LockedValue(0)
    let closed = LockedValue(0)

    func openSmartCard() async throws -> any SmartCardConnection {
        opened.withLock { $0 += 1 }
        return CountedConnection(VirtualKeyConnection(key: key), closed: closed)
    }

    var allClosed: Bool { opened.withLock { $0 } == closed.withLock { $0 } }
}

private let defaultPIN = SecretBytes(utf8: "123456")

/// Runs `body` and returns the question it ended with, nil when it asked none.
private func question<T>(_ body: () async throws -> T) async throws -> PIVQuestion? {
    do {
        _ = try await body()
        return nil
    } catch PIVOperationError.needs(let question) {
        return question
    }
}

@Suite struct PIVOperationsTests {
    @Test func signingAsksForThePINWhenThePolicyWantsItAndTheSignatureVerifies() async throws {
        let key = PIVKey()
        let piv = PIVOperations(key)
        let publicKey = try await piv.generateKey(
            in: .signature, algorithm: .eccP256, pinPolicy: .default,
            touchPolicy: .never, managementKey: nil)
        let message = Array("signed by slot 9c".utf8)
        let scheme = PIVSignatureScheme(digest: .sha256)
        // 9C's default policy wants the PIN: asked for before anything is signed.
        #expect(try await question { try await piv.sign(message, slot: .signature, scheme: scheme, pin: nil) } == .pin)
        let signature = try await piv.sign(message, slot: .signature, scheme: scheme, pin: defaultPIN)
        #expect(publicKey.verify(signature: signature, message: message, digest: .sha256, padding: .pkcs1))
        #expect(key.allClosed && key.opened.withLock { $0 } == 3)
    }

    @Test func aSlotWhosePolicyIsNeverSignsWithoutAPIN() async throws {
        let piv = PIVOperations(PIVKey())
        _ = try await piv.generateKey(
            in: .authentication, algorithm: .eccP256, pinPolicy: .never,
            touchPolicy: .never, managementKey: nil)
        let message = Array("no PIN".utf8)
        #expect(
            try await question {
                try await piv.sign(message, slot: .authentication, scheme: PIVSignatureScheme(), pin: nil)
            } == nil)
    }

    @Test func theSignatureCheckAsksForNoPINWithoutACertificate() async throws {
        let key = PIVKey()
        let piv = PIVOperations(key)
        _ = try await piv.generateKey(
            in: .authentication, algorithm: .eccP256, pinPolicy: .default,
            touchPolicy: .never, managementKey: nil)
        let (outcome, overview) = try await piv.verify(slot: .authentication, pin: nil)
        #expect(outcome == .noCertificate)
        #expect(overview.pinRetries == 3)
        #expect(key.allClosed)
    }

    @Test func aManagementKeyThatIsNotTheDefaultIsAskedForAndAWrongOneChangesNothing() async throws {
        let key = PIVKey()
        let piv = PIVOperations(key)
        // The new key is asked for once the current one (the default) worked; the wrong length is refused.
        #expect(
            try await question {
                try await piv.changeManagementKey(
                    algorithm: .aes192, to: .given(nil), requireTouch: false, managementKey: nil)
            } == .newManagementKey(.aes192))
        await #expect(throws: PIVOperationError.managementKeyLength(.aes192, expected: 24, given: 16)) {
            _ = try await piv.changeManagementKey(
                algorithm: .aes192, to: .given(SecretBytes(Array(repeating: 1, count: 16))),
                requireTouch: false, managementKey: nil)
        }
        let set = try await piv.changeManagementKey(
            algorithm: .aes192, to: .generate, requireTouch: false,
            managementKey: nil)
        #expect(set.count == 24)
        #expect(
            try await question {
                try await piv.generateKey(
                    in: .keyManagement, algorithm: .eccP256, pinPolicy: .default, touchPolicy: .never,
                    managementKey: nil)
            } == .managementKey)
        await #expect(throws: PIVError.self) {
            _ = try await piv.generateKey(
                in: .keyManagement, algorithm: .eccP256, pinPolicy: .default,
                touchPolicy: .never, managementKey: SecretBytes(Array(repeating: 7, count: 24)))
        }
        #expect(try await piv.overview().slot(.keyManagement)?.key == nil)
        _ = try await piv.generateKey(
            in: .keyManagement, algorithm: .eccP256, pinPolicy: .default, touchPolicy: .never,
            managementKey: set)
        #expect(try await piv.overview().slot(.keyManagement)?.key != nil)
        #expect(key.allClosed)
    }

    @Test func aCertificateOfAnotherKeyIsRefusedUnlessForcedAndDeletingAnEmptySlotSaysSo() async throws {
        let piv = PIVOperations(PIVKey())
        _ = try await piv.generateKey(
            in: .authentication, algorithm: .eccP256, pinPolicy: .default,
            touchPolicy: .never, managementKey: nil)
        let other = try X509Certificate.selfSigned(key: P256PrivateKey(), commonName: "another key", serial: 7)
        await #expect(throws: PIVOperationError.certificateNotTheSlotsKey(.authentication)) {
            try await piv.importCertificate(
                other, in: .authentication, compress: false, force: false, managementKey: nil)
        }
        #expect(try await piv.certificate(in: .authentication) == nil)
        try await piv.importCertificate(other, in: .authentication, compress: false, force: true, managementKey: nil)
        #expect(try await piv.certificate(in: .authentication)?.der == other.der)
        // The slot's key cannot have signed what the certificate's key verifies.
        let (outcome, _) = try await piv.verify(slot: .authentication, pin: defaultPIN)
        #expect(outcome == .mismatch(.eccP256))
        try await piv.deleteCertificate(in: .authentication, managementKey: nil)
        await #expect(throws: PIVOperationError.noCertificate(.authentication)) {
            try await piv.deleteCertificate(in: .authentication, managementKey: nil)
        }
    }

    @Test func resetBlocksThePINAndPUKAndRestoresTheDefaults() async throws {
        let piv = PIVOperations(PIVKey())
        _ = try await piv.changePIN(current: defaultPIN, new: SecretBytes(utf8: "654321"))
        _ = try await piv.generateKey(
            in: .signature, algorithm: .eccP256, pinPolicy: .default, touchPolicy: .never,
            managementKey: nil)
        try await piv.reset()
        let overview = try await piv.changePIN(current: defaultPIN, new: SecretBytes(utf8: "111111"))
        #expect(overview.slots.allSatisfy { $0.key == nil })
    }
}

@Suite("Operations: PIV keys moved, deleted, imported and the tries set")
struct PIVKeyOperationsTests {
    @Test func keyInfoSaysWhereTheKeyCameFromAndAnEmptySlotHoldsNone() async throws {
        let key = PIVKey()
        let piv = PIVOperations(key)
        let generated = try await piv.generateKey(
            in: .authentication, algorithm: .eccP384, pinPolicy: .never, touchPolicy: .never, managementKey: nil)
        let info = try await piv.keyInfo(.authentication)
        #expect(info.algorithm == .eccP384 && info.origin == .generated && info.pinPolicy == .never)
        #expect(info.publicKey == generated)
        await #expect(throws: PIVOperationError.noPublicKey(.signature)) { try await piv.keyInfo(.signature) }
        #expect(key.allClosed)
    }

    @Test func importedKeysSignAsTheirPrivateKeyAndMoveOnlyToAnEmptySlot() async throws {
        let key = PIVKey()
        let piv = PIVOperations(key)
        let privateKey = try AsymmetricPrivateKey.generate(.p256)
        let algorithm = try await piv.importKey(
            privateKey, in: .keyManagement, pinPolicy: .never, touchPolicy: .never, managementKey: nil)
        #expect(algorithm == .eccP256)
        #expect(try await piv.keyInfo(.keyManagement).origin == .imported)
        #expect(try await piv.publicKey(in: .keyManagement) == privateKey.publicKey)
        // Onto a slot with a key: refused before anything changes.
        _ = try await piv.generateKey(
            in: .cardAuthentication, algorithm: .eccP256, pinPolicy: .default, touchPolicy: .default, managementKey: nil
        )
        await #expect(throws: PIVOperationError.slotHoldsKey(.cardAuthentication)) {
            try await piv.moveKey(from: .keyManagement, to: .cardAuthentication, managementKey: nil)
        }
        #expect(try await piv.publicKey(in: .keyManagement) == privateKey.publicKey)
        // To an empty one: the key is there, the source is empty.
        let retired = try #require(PIV.Slot(name: "82"))
        try await piv.moveKey(from: .keyManagement, to: retired, managementKey: nil)
        #expect(try await piv.publicKey(in: retired) == privateKey.publicKey)
        await #expect(throws: PIVOperationError.noPublicKey(.keyManagement)) { try await piv.keyInfo(.keyManagement) }
        try await piv.deleteKey(in: retired, managementKey: nil)
        await #expect(throws: PIVOperationError.noPublicKey(retired)) { try await piv.keyInfo(retired) }
        #expect(key.allClosed)
    }

    @Test func setRetriesAsksForThePINAndPutsTheDefaultsBack() async throws {
        let key = PIVKey()
        let piv = PIVOperations(key)
        _ = try await piv.changePIN(current: defaultPIN, new: SecretBytes(utf8: "654321"))
        #expect(try await question { try await piv.setRetries(pin: 5, puk: 6, pin: nil, managementKey: nil) } == .pin)
        let overview = try await piv.setRetries(pin: 5, puk: 6, pin: SecretBytes(utf8: "654321"), managementKey: nil)
        #expect(overview.pin?.totalRetries == 5 && overview.puk?.totalRetries == 6 && overview.pin?.isDefault == true)
        #expect(key.allClosed)
    }

    @Test func objectsAreWrittenAsTheyAreAndPINProtectedOnesReadAfterThePIN() async throws {
        let key = PIVKey()
        let piv = PIVOperations(key)
        let id: [UInt8] = [0x5F, 0xFF, 0x10]
        await #expect(throws: PIVError.objectNotFound(id)) { try await piv.readObject(id, pin: nil) }
        let data = Array("any bytes \u{0}\u{1}".utf8)
        try await piv.writeObject(id, data, managementKey: nil)
        #expect(try await piv.readObject(id, pin: nil) == data)
        // The printed information object is read after the PIN only.
        try await piv.writeObject(PIV.ObjectID.printedInformation, [0x88, 0x01, 0x41], managementKey: nil)
        #expect(try await question { try await piv.readObject(PIV.ObjectID.printedInformation, pin: nil) } == .pin)
        #expect(try await piv.readObject(PIV.ObjectID.printedInformation, pin: defaultPIN) == [0x88, 0x01, 0x41])
        // Not while ykman keeps a PIN-protected management key there (its data object's flag 02).
        try await piv.writeObject(PIV.ObjectID.pivmanData, [0x80, 0x03, 0x81, 0x01, 0x02], managementKey: nil)
        await #expect(throws: PIVOperationError.printedHoldsManagementKey) {
            try await piv.writeObject(PIV.ObjectID.printedInformation, [0x88, 0x00], managementKey: nil)
        }
        #expect(PIVSession.pivmanProtectsManagementKey([0x80, 0x04, 0x82, 0x02, 0x01, 0x02]))
        #expect(!PIVSession.pivmanProtectsManagementKey([0x80, 0x03, 0x81, 0x01, 0x01]))
        // Empty deletes it.
        try await piv.writeObject(id, [], managementKey: nil)
        await #expect(throws: PIVError.objectNotFound(id)) { try await piv.readObject(id, pin: nil) }
        #expect(key.allClosed)
    }

    @Test func generatedCHUIDAndCCCAreStoredAndANewManagementKeyIsAskedFor() async throws {
        let key = PIVKey()
        let piv = PIVOperations(key)
        let chuid = try await piv.generateObject(.chuid, managementKey: nil)
        #expect(try await piv.readObject(PIV.ObjectID.chuid, pin: nil) == chuid)
        #expect(PIVSession.guid(inCHUID: chuid)?.count == 16)
        let ccc = try await piv.generateObject(.cardCapabilityContainer, managementKey: nil)
        #expect(try await piv.readObject(PIV.ObjectID.cardCapabilityContainer, pin: nil) == ccc)
        #expect(PIVOperations.GeneratedObject(id: PIV.ObjectID.chuid) == .chuid)
        #expect(PIVOperations.GeneratedObject(id: PIV.ObjectID.printedInformation) == nil)
        // Once the management key is not the default, it is asked for before anything is written.
        let other = SecretBytes(Array(repeating: 0x11, count: 24))
        _ = try await piv.changeManagementKey(
            algorithm: .tripleDES, to: .given(other), requireTouch: false, managementKey: nil)
        #expect(try await question { try await piv.generateObject(.chuid, managementKey: nil) } == .managementKey)
        #expect(
            try await question { try await piv.writeObject([0x5F, 0xFF, 0x10], [1], managementKey: nil) }
                == .managementKey)
        #expect(try await piv.readObject(PIV.ObjectID.chuid, pin: nil) == chuid)
        try await piv.writeObject([0x5F, 0xFF, 0x10], [1], managementKey: other)
        #expect(try await piv.readObject([0x5F, 0xFF, 0x10], pin: nil) == [1])
    }
}
