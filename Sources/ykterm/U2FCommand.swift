import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

struct U2FCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "u2f",
        abstract: "U2F (CTAP1): register and sign, with every signature checked.",
        subcommands: [Register.self, Sign.self])

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "register",
            abstract: "Register with an application ID; prints the key handle and public key.",
            discussion: "The registration signature is verified against the attestation certificate.")

        @OptionGroup var key: KeyOptions

        @OptionGroup var application: U2FApplication

        @Flag(name: .long, help: "JSON: key_handle, public_key (hex), certificate_subject.")
        var json = false

        func run() async throws {
            let reg = try await fidoOperations(key.choice).u2fRegister(application: application.parameter)
            let subject = (try? X509Certificate(der: reg.certificate))?.subject ?? ""
            if json {
                try printJSON(
                    U2FRegistrationJSON(
                        keyHandle: reg.keyHandle.hex,
                        publicKey: reg.publicKey.uncompressed.hex,
                        certificateSubject: subject))
            } else {
                out(
                    subject.isEmpty
                        ? words("cli.u2f.registered") : words("cli.u2f.registeredSubject", ["subject": subject]))
                out(words("cli.u2f.keyHandle", ["handle": reg.keyHandle.hex]))
                out(words("cli.u2f.publicKey", ["key": reg.publicKey.uncompressed.hex]))
            }
        }
    }

    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign",
            abstract: "Authenticate with a key handle; verifies the signature with the public key.")

        @OptionGroup var key: KeyOptions

        @OptionGroup var application: U2FApplication

        @Option(name: .long, help: "Key handle (hex) from `ykterm u2f register`.")
        var keyHandle: String

        @Option(name: .long, help: "Public key (hex, 65 bytes uncompressed) from `ykterm u2f register`.")
        var publicKey: String

        @Flag(name: .long, help: "JSON: counter, user_presence, signature.")
        var json = false

        func run() async throws {
            let handle: [UInt8]
            let pub: P256PublicKey
            do {
                handle = try Hex.decode(keyHandle)
                pub = try P256PublicKey(uncompressed: try Hex.decode(publicKey))
            } catch {
                throw YktermError.usage(words("cli.u2f.notHex", ["detail": explained(error).1]))
            }
            guard !handle.isEmpty, handle.count < 256 else { throw YktermError.usage(words("cli.u2f.keyHandleLength")) }
            let auth = try await fidoOperations(key.choice).u2fAuthenticate(
                application: application.parameter, keyHandle: handle, publicKey: pub)
            if json {
                try printJSON(
                    U2FSignatureJSON(
                        counter: Int(auth.counter), userPresence: auth.userPresence & 1 == 1,
                        signature: auth.signature.hex))
            } else {
                out(
                    words(
                        auth.userPresence & 1 == 1 ? "cli.u2f.verifiedPresent" : "cli.u2f.verified",
                        ["counter": "\(auth.counter)"]))
            }
        }
    }
}

/// `--app-id` of `u2f register` and `u2f sign`: the application ID, whose SHA-256 is U2F's application parameter.
struct U2FApplication: ParsableArguments {
    @Option(
        name: .long,
        help: "Application ID (its SHA-256 is the application parameter); sign takes the one used at registration.")
    var appID: String = "https://ykterm.invalid"

    /// The application parameter.
    var parameter: [UInt8] { Crypto.digest(.sha256, Array(appID.utf8)) }
}
