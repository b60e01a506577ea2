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
