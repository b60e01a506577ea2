import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel

@Suite("Model: the tab contract")
struct TabContractTests {
    @Test func everyTabHasItsModelAndSaysWhatItNeedsOfAKey() {
        #expect(tabModels.count == Tab.allCases.count)
        for tab in Tab.allCases { #expect(tab.model.tab == tab) }
        #expect(Tab.oath.application == .oath)
        #expect(Tab.otp.application == .otp)
        #expect(Tab.fido.application == .fido)
        #expect(Tab.apdu.application == .apdu)
        #expect(Tab.piv.application == .piv)
    }

    /// The working words of every operation of every key tab (those it says anything of while they run), and the
    /// touch words of the tabs whose operations wait for a touch, are in every language's table.
    @Test(arguments: Language.allCases)
    func everyOperationHasItsWordsInEveryLanguage(language: Language) throws {
        let directory = try #require(StringTables.directory(among: StringTables.directories()))
        let data = try #require(FileManager.default.contents(atPath: directory + "/\(language.rawValue).json"))
        let table = try JSONDecoder().decode([String: String].self, from: data)
        func keys<Operation: KeyTabOperation>(_: Operation.Type, touch: Bool) -> [String] {
            Operation.allCases.compactMap(\.workingKey) + (touch ? Operation.allCases.map(\.touchKey) : [])
        }
        let keys =
            keys(FIDOOperation.self, touch: true) + keys(PIVOperation.self, touch: true)
            + keys(SSHOperation.self, touch: true) + keys(OpenPGPTabOperation.self, touch: false)
        #expect(keys.count == 6 + 8 + 8 + 8 + 5 + 5 + 10)
        for key in keys { #expect(table[key] != nil, "\(language.rawValue): \(key)") }
        // The words are named by the operation; FIDO2 says nothing while it loads or resets.
        #expect(PIVOperation.unblockPIN.workingKey == "piv.working.unblockPIN")
        #expect(PIVOperation.unblockPIN.touchKey == "touch.for.piv.unblockPIN")
        #expect(FIDOOperation.load.workingKey == nil && FIDOOperation.reset.workingKey == nil)
        #expect(SSHOperation.verifyPIN.workingKey == "ssh.working.verifyPIN")
    }

    @Test func aTabsMessageGoesToThatTabAlone() {
        var state = AppState(now: 1000)
        let messages: [(Msg, Tab)] = [
            (.otp(.touched(nil)), .otp),
            (.fido(.touch(keyID: "k", waiting: true)), .fido),
            (.apdu(.saved(.history, path: "/nowhere")), .apdu),
            (.piv(.touch(keyID: "k", waiting: true)), .piv),
            (.ssh(.touch(keyID: "k", waiting: true)), .ssh),
            (.oath(.failed(keyID: "k", OATHFailure(operation: .open, message: UIText("x")))), .oath),
        ]
        for (msg, owner) in messages {
            for model in tabModels {
                let answered = model.update(&state, msg) != nil
                #expect(answered == (model.tab == owner), "\(model.tab) and \(msg)")
            }
        }
    }

    @Test func theShownTabOwnsTheKeyboardAndItsDialog() {
        var state = AppState(now: 1000)
        _ = update(&state, .keyPress(.char("4")))
        // The APDU console focuses its input on opening: typed characters are its text.
        #expect(state.textFocused == APDUTab.textFocused(state) && state.textFocused)
        _ = update(&state, .keyPress(.char("q")))
        #expect(!state.quitting && state.apdu.input.text == "q")
        // Tab is still the tab switch: the PIV tab, the SSH tab (no key: no PIN asked), the OpenPGP tab, then the OATH
        // list, have no text focused.
        _ = update(&state, .keyPress(.escape))
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .piv && state.openForm == nil && !state.textFocused)
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .ssh && state.openForm == nil && !state.textFocused)
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .openpgp && state.openForm == nil && !state.textFocused)
        _ = update(&state, .keyPress(.tab))
        #expect(state.tab == .oath && state.openForm == nil && !state.textFocused)
    }
}
