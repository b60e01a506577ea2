import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit
import TerminalUI

/// `oath add --generate` and `--qr`: the secret made here, shown once as a URI and a QR code.
enum OATHQR {
    /// A new secret, Base32: 20 random bytes (160 bits, the HMAC-SHA1 block's worth RFC 4226 recommends).
    static func generatedSecret() -> String {
        var bytes = Crypto.random(20)
        defer { for i in bytes.indices { bytes[i] = 0 } }
        return Base32.encode(bytes)
    }

    /// `accounts`, each requiring a touch when `touch` is set (--touch beside a URI or an image).
    static func touching(_ accounts: [CredentialData], _ touch: Bool) -> [CredentialData] {
        guard touch else { return accounts }
        return accounts.map {
            var a = $0
            a.touch = true
            return a
        }
    }

    /// Prints the account's URI and its QR code on standard output, with a line that says it is shown once. The
    /// code is drawn in half blocks on a UTF-8 terminal, else in "##" (TerminalLocale decides, as for the TUI); on
    /// a terminal (and without NO_COLOR) in black on white whatever the terminal's colours, so that a dark
    /// background does not invert it; elsewhere (a file, a pipe) dark characters on what is taken to be light.
    static func show(_ account: CredentialData) {
        let uri = OTPAuthURI.make(account)
        out(words("cli.oath.generated"))
        out(uri)
        // Without libqrencode the URI alone is shown, with the reason, and the account is added all the same.
        let drawn: QRCode?
        do { drawn = try QRCode(uri) } catch {
            warn("ykterm: " + explained(error).1)
            return
        }
        guard let code = drawn else { return }
        let environment = ProcessInfo.processInfo.environment
        let unicode = TerminalLocale.setUp(environment: environment).isUTF8
        let colour =
            isatty(STDOUT_FILENO) == 1 && environment["NO_COLOR"] == nil
            && environment["TERM"].map { $0 != "dumb" }
                ?? false
        var text = ""
        for line in code.lines(unicode: unicode) {
            text += colour ? "\u{1B}[30;47m" + line + "\u{1B}[0m\n" : line + "\n"
        }
        StandardStream.write(text, to: 1)
    }
}
