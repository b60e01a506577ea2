import ArgumentParser
import KeyKit

/// `fido config`: settings of the whole authenticator (CTAP 2.1 authenticatorConfig).
extension FIDOCommand {
    struct Config: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "config",
            abstract: "FIDO2 settings: always require user verification, enterprise attestation.",
            discussion: """
                These need a key with CTAP 2.1 authenticatorConfig (YubiKey 5.7 and later); `ykterm fido info` \
                shows the settings (Always UV, EP attestation). With a PIN set, the PIN is asked for. The \
                minimum PIN length and a forced PIN change are under `ykterm fido pin`.
                """,
            subcommands: [ToggleAlwaysUV.self, EnableEPAttestation.self])

        struct ToggleAlwaysUV: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "toggle-always-uv",
                abstract: "Switch between every credential needing the PIN and the usual rules.",
                discussion: """
                    While always-UV is on, every registration and sign-in needs user verification (the PIN), and \
                    a key that cannot verify the user over U2F turns U2F off. Run it again to switch back.
                    """)

            @OptionGroup var key: KeyOptions

            func run() async throws {
                let on = try await FIDOCommand.askingPIN(key) { try await $0.toggleAlwaysUV(pin: $1) }
                out(words(on ? "cli.fido.config.alwaysUVOn" : "cli.fido.config.alwaysUVOff"))
            }
        }

        struct EnableEPAttestation: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "enable-ep-attestation",
                abstract: "Enable enterprise attestation (until a FIDO reset).",
                discussion: """
                    Relying parties the key's maker has listed may then ask for an attestation that identifies \
                    this very key. Only a FIDO reset turns it off again.
                    """)

            @OptionGroup var key: KeyOptions

            func run() async throws {
                let enabledNow = try await FIDOCommand.askingPIN(key) {
                    try await $0.enableEnterpriseAttestation(pin: $1)
                }
                out(words(enabledNow ? "cli.fido.config.epEnabled" : "cli.fido.config.epAlready"))
            }
        }
    }
}
