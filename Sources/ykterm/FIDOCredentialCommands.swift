import ArgumentParser
import AuthenticatorModel
import KeyKit

/// `fido credentials update`: a discoverable credential's user name and display name (CTAP 2.1 credential
/// management, updateUserInformation).
extension FIDOCommand.Credentials {
    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "update",
            abstract: "Change a credential's user name or display name; needs the PIN.",
            discussion: """
                The credential is the one whose ID (hex) starts with ID, as `ykterm fido credentials list` shows \
                it. A name not given stays as it is; an empty one is removed. The user ID never changes. Needs a \
                key with CTAP 2.1 credential management (YubiKey 5.7 and later; 5.2 to 5.4 list and delete only).
                """)

        @OptionGroup var key: KeyOptions

        @OptionGroup var credential: HexID<FIDOCredential>

        @Option(name: .long, help: ArgumentHelp("The new user name (empty: none).", valueName: "NAME"))
        var name: String?

        @Option(
            name: .customLong("display-name"),
            help: ArgumentHelp(
                "The new display name (empty: none).",
                valueName: "NAME"))
        var displayName: String?

        func run() async throws {
            guard name != nil || displayName != nil else {
                throw YktermError.usage(words("cli.fido.credentials.nothingToUpdate"))
            }
            let prompt = Prompt()
            let (creds, operations, pin) = try await FIDOCommand.Credentials.all(key.choice, prompt: prompt) { info in
                guard info.updateUser else { throw FIDOSessionError.notSupported(.updateUserInformation) }
            }
            let c = try credential.one(of: creds)
            let (updated, _) = try await operations.updateUser(
                c.credentialID, name: name.map { $0.isEmpty ? nil : $0 },
                displayName: displayName.map { $0.isEmpty ? nil : $0 },
                .pin(pin))
            let (rpID, user) = (updated.rpID, (name: updated.userName, displayName: updated.displayName))
            let none = words("cli.fido.credentials.noValue")
            out(
                words(
                    "cli.fido.credentials.updated",
                    ["rp": rpID, "name": user.name ?? none, "displayName": user.displayName ?? none]))
        }
    }
}
