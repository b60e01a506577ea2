import KeyKit
import Testing

@Suite struct CTAP2CommandTests {
    /// Traces name the commands so: the specification's names, a preview command by its command's.
    @Test func names() {
        #expect(
            CTAP2.Command.allCases.map(\.name) == [
                "makeCredential", "getAssertion", "getInfo", "clientPIN", "reset", "getNextAssertion",
                "bioEnrollment", "credentialManagement", "selection", "largeBlobs", "config", "bioEnrollment",
                "credentialManagement",
            ])
    }
}
