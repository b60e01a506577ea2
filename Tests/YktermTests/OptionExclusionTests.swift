import ArgumentParser
import Testing
@testable import ykterm

/// Options that cannot be combined are refused by one rule (`refuseTogether`), with the words of the string
/// tables and a usage status, before anything is asked or sent.
@Suite struct OptionExclusionTests {
    static let refused: [(arguments: [String], message: String)] = [
        (["oath", "code", "--single", "--json"], "--single and --json exclude each other"),
        (["oath", "code", "--single", "--all-keys"], "--single and --all-keys exclude each other"),
        (["fido", "credentials", "list", "--csv", "--json"], "--csv and --json exclude each other"),
        (["fido", "credentials", "list", "-c", "--all-keys"], "--csv and --all-keys exclude each other"),
        (
            ["otp", "settings", "--slot", "1", "--locked", "--unlock", "--lock"],
            "--unlock and --lock exclude each other"
        ),
    ]

    @Test(arguments: refused)
    func combinationsAreRefused(arguments: [String], message: String) {
        #expect {
            _ = try Ykterm.parseAsRoot(arguments)
        } throws: { error in
            Ykterm.fullMessage(for: error).contains(message) && Ykterm.exitCode(for: error) == .validationFailure
        }
    }

    @Test func eachOptionAloneIsTaken() throws {
        for arguments in [
            ["oath", "code", "--single"], ["oath", "code", "--json"], ["fido", "credentials", "list", "--csv"],
            ["otp", "settings", "--slot", "1", "--locked", "--unlock"], ["otp", "settings", "--slot", "1", "--lock"],
        ] {
            #expect(throws: Never.self, "\(arguments)") { _ = try Ykterm.parseAsRoot(arguments) }
        }
    }
}
