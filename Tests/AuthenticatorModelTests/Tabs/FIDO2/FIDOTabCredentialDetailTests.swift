import Foundation
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// The FIDO2 tab's credential details and the renaming of a credential's user, in the model and against the
/// virtual key; and the settings the information shows (always-UV, a forced PIN change).
@Suite("Model: FIDO2 credential details and settings")
struct FIDOTabCredentialDetailTests {
    typealias F = FIDOFixture

    static func listed(_ credentials: [FIDOCredential], updateUser: Bool = true) -> AppState {
        var info = F.info(pinSet: true)
        info.updateUser = updateUser
        var state = F.opened(info)
        _ = update(&state, .fido(.verified(keyID: F.d.id, info, credentials: credentials)))
        state.status = nil
        return state
    }

    static let alice = FIDOCredential(
        rpID: "example.com", rpName: "Example", userName: "alice", displayName: "Alice",
        credentialID: [1, 2, 3, 4], userID: [0xA1], credProtect: 2, largeBlobKey: true)

    @Test func enterShowsTheDetailsAndEscGoesBackStepByStep() {
        var state = Self.listed([Self.alice])
        _ = update(&state, .keyPress(.enter))
        #expect(state.fido.showCredentials && state.fido.showCredentialDetail)
        _ = update(&state, .keyPress(.escape))
        #expect(state.fido.showCredentials && !state.fido.showCredentialDetail)
        _ = update(&state, .keyPress(.escape))
        #expect(!state.fido.showCredentials)
        // l from the details leaves the list, and the details do not come back with it.
        _ = update(&state, .keyPress(.char("l")))
        _ = update(&state, .fido(.credentials(keyID: F.d.id, [Self.alice])))
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .keyPress(.char("l")))
        #expect(!state.fido.showCredentials && !state.fido.showCredentialDetail)
    }

    @Test func renameEditsBothNamesAndAnEmptyOneIsRemoved() throws {
        var state = Self.listed([Self.alice])
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .keyPress(.char("n")))
        let dialog = try #require(state.fido.dialog)
        #expect(dialog.kind == .renameCredential(id: Self.alice.id))
        #expect(
            dialog.form[CredentialNameField.name] == "alice" && dialog.form[CredentialNameField.displayName] == "Alice")
        // Typing is text: the n of the binding does not rename again.
        _ = Fixture.type("@example.com", into: &state)
        _ = update(&state, .keyPress(.tab))
        for _ in 0..<5 { _ = update(&state, .keyPress(.backspace)) }
        let commands = update(&state, .keyPress(.enter))
        #expect(
            commands == [
                .fido(
                    .updateUser(
                        F.d, credentialID: Self.alice.credentialID, userID: [0xA1],
                        name: "alice@example.com", displayName: nil))
            ])
        #expect(state.fido.busy == FIDOBusy(.update) && state.fido.dialog?.form.busy == true)
        var renamed = Self.alice
        renamed.userName = "alice@example.com"
        renamed.displayName = nil
        _ = update(&state, .fido(.updated(keyID: F.d.id, renamed, credentials: [renamed])))
        #expect(state.fido.dialog == nil && state.fido.busy == nil && state.fido.showCredentialDetail)
        #expect(state.fido.selected == renamed)
        #expect(state.status?.text == UIText("fido.updated", ["user": "alice@example.com", "rp": "example.com"]))
    }

    @Test func aKeyWithoutUpdateSaysSoAndAnExpiredTokenAsksForThePIN() {
        var old = Self.listed([Self.alice], updateUser: false)
        _ = update(&old, .keyPress(.char("n")))
        #expect(old.fido.dialog == nil && old.status?.text == UIText("fido.noUpdateUser"))

        var state = Self.listed([Self.alice])
        _ = update(&state, .keyPress(.char("n")))
        _ = update(&state, .keyPress(.enter))
        _ = update(&state, .keyPress(.enter))
        #expect(state.fido.busy == FIDOBusy(.update))
        _ = update(&state, F.failed(.update, .tokenInvalid))
        #expect(!state.fido.hasToken && state.fido.dialog?.kind == .verifyPIN(thenList: true))
    }

    @Test func deletingFromTheDetailsGoesBackToTheList() {
        var state = Self.listed([Self.alice])
        _ = update(&state, .keyPress(.enter))
        #expect(
            F.confirm(.char("d"), into: &state) == [
                .fido(.deleteCredential(F.d, credentialID: Self.alice.credentialID))
            ])
        _ = update(&state, .fido(.deleted(keyID: F.d.id, Self.alice, remaining: [], F.info(pinSet: true))))
        #expect(state.fido.showCredentials && !state.fido.showCredentialDetail)
    }

    @Test func theInformationCarriesAlwaysUVAndUpdateFromGetInfo() throws {
        let aaguid = CBOR.bytes([UInt8](repeating: 1, count: 16))
        let modern = try AuthenticatorInfo(cbor: [
            1: ["FIDO_2_1"], 3: aaguid,
            4: ["credMgmt": true, "alwaysUv": true, "clientPin": true],
        ])
        let info = FIDOInfo(modern, retries: 8, powerCycleNeeded: false)
        #expect(info.alwaysUV == true && info.updateUser && info.credentialManagement)
        let preview = try AuthenticatorInfo(cbor: [1: ["FIDO_2_1_PRE"], 3: aaguid, 4: ["credentialMgmtPreview": true]])
        let old = FIDOInfo(preview, retries: nil, powerCycleNeeded: false)
        #expect(old.alwaysUV == nil && !old.updateUser && old.credentialManagement)
    }
}

@Suite("FIDO2 tab work: user names against the virtual key")
struct FIDOTabUpdateUserWorkTests {
    static let d = FIDOTestBackend.descriptor

    func run(_ harness: Harness, _ command: FIDOTabCommand) async throws -> FIDOTabMsg {
        try await harness.run(.fido(command), timeout: 60) { msg in
            if case .fido(let m) = msg, case .touch = m { return nil }
            if case .fido(let m) = msg { return m }
            return nil
        }
    }

    @Test func renameWithTheHeldTokenAndTheDetailsTheKeyReports() async throws {
        let backend = FIDOTestBackend()
        let harness = Harness(backend, directory: temporaryDirectory())
        _ = try await run(harness, .setPIN(Self.d, new: "cred-pin"))
        // A credential made with a token of our own, over the key's PC/SC route.
        let fido = try await PCSCFIDOConnection.open(card: VirtualKeyConnection(key: backend.key))
        let session = try await CTAP2Session.make(connection: fido)
        try await session.verifyPIN("cred-pin", permissions: [.makeCredential], rpID: "example.org")
        let made = try await session.makeCredential(
            clientDataHash: Crypto.random(32), rp: .init(id: "example.org"),
            user: .init(id: [7], name: "alice", displayName: "Alice"),
            residentKey: true)
        await fido.close()
        guard
            case .verified(_, let info, let listed?) = try await run(
                harness,
                .verifyPIN(
                    Self.d, pin: "cred-pin",
                    thenList: true))
        else {
            Issue.record("verify and list failed"); return
        }
        #expect(info.updateUser && info.alwaysUV == false)
        let alice = try #require(listed.first)
        #expect(alice.userID == [7] && alice.credProtect == 1 && !alice.largeBlobKey)
        guard
            case .updated(_, let renamed, let all) = try await run(
                harness,
                .updateUser(
                    Self.d, credentialID: made.credentialID, userID: [7], name: "alice2", displayName: nil))
        else {
            Issue.record("update failed"); return
        }
        #expect(renamed.userName == "alice2" && renamed.displayName == nil && all == [renamed])
    }
}
