import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// The OpenPGP tab's states, drawn with the English strings.
enum OpenPGPViewFixture {
    static let key = ViewFixture.key
    /// 2026-01-01 00:00:00 UTC.
    static let now = 1_767_225_600.0
    static let fingerprint: [UInt8] = [
        0x3A, 0x5F, 0x0C, 0x12, 0xD4, 0xE6, 0xF7, 0x08, 0x9B, 0xC4, 0xE5, 0x08, 0x6D, 0x3A, 0xF1, 0x42, 0x77, 0x90,
        0xBE, 0x5C,
    ]

    /// An Ed25519 signature key (touch on) imported, no decryption key, an RSA 4096 authentication key generated
    /// on the card (touch fixed); a reset code with two tries left.
    static func info(pinTries: Int = 3, resetCodeTries: Int = 2, adminPINTries: Int = 3) -> OpenPGPCardInfo {
        OpenPGPCardInfo(
            version: "5.7.2", serial: 28_123_456, pinTries: pinTries, resetCodeTries: resetCodeTries,
            adminPINTries: adminPINTries, signatureCounter: 42, cardholder: "Alice Example",
            keys: [
                OpenPGPKeyRow(
                    slot: .signature, hasKey: true, algorithm: "Ed25519", fingerprint: fingerprint,
                    created: 1_764_547_200, origin: .imported, touchPolicy: .on),
                OpenPGPKeyRow(
                    slot: .decryption, hasKey: false, algorithm: "RSA2048",
                    fingerprint: [UInt8](repeating: 0, count: 20)),
                OpenPGPKeyRow(
                    slot: .authentication, hasKey: true, algorithm: "RSA4096", fingerprint: fingerprint.reversed(),
                    created: 1_700_000_000, origin: .generated, touchPolicy: .fixed),
            ])
    }

    /// The OpenPGP tab of the fixture key, its application read.
    static func state(_ info: OpenPGPCardInfo = info()) -> AppState {
        var state = ViewFixture.state(now: now)
        _ = update(&state, .keyPress(.char("7")))
        _ = update(&state, .openpgp(.loaded(keyID: key.id, info)))
        state.status = nil
        return state
    }

    static func press(_ keys: KeyPress..., into state: inout AppState) {
        for k in keys { _ = update(&state, .keyPress(k)) }
    }
}

@Suite("Views: OpenPGP tab")
struct OpenPGPTabViewTests {
    typealias F = OpenPGPViewFixture
    typealias P = PIVViewFixture

    @Test func theCardAtAGlance() throws {
        let screen = P.screen(F.state(), rows: 30, columns: 100)
        #expect(screen.text(row: 0).contains("7 OpenPGP"))
        #expect(P.contains(screen, "OpenPGP application"))
        #expect(
            try #require(ViewFixture.line(screen, containing: "Version")).contains(
                "OpenPGP 3.4 · firmware 5.7.2 · serial 28123456"))
        #expect(try #require(ViewFixture.line(screen, containing: " PIN  ")).contains("3 tries left"))
        let resetCode = try #require(ViewFixture.line(screen, containing: "Reset code"))
        #expect(resetCode.contains("2 tries left") && P.style(screen, of: "2 tries left") == Theme().warning)
        #expect(try #require(ViewFixture.line(screen, containing: "Admin PIN")).contains("3 tries left"))
        #expect(
            try #require(ViewFixture.line(screen, containing: "Signatures")).contains(
                "42 made · the PIN for every signature"))
        #expect(try #require(ViewFixture.line(screen, containing: "Cardholder")).contains("Alice Example"))
        let sig = try #require(ViewFixture.line(screen, containing: "SIG Signature"))
        #expect(sig.contains("Ed25519") && sig.contains("2025-12-01") && sig.contains("on"))
        #expect(P.contains(screen, "3A5F 0C12 D4E6 F708 9BC4 E508 6D3A F142 7790 BE5C"))
        let dec = try #require(ViewFixture.line(screen, containing: "DEC Decryption"))
        #expect(dec.contains("no key") && !dec.contains("RSA2048"))
        let aut = try #require(ViewFixture.line(screen, containing: "AUT Authentication"))
        #expect(aut.contains("RSA4096") && aut.contains("2023-11-14") && aut.contains("fixed (until a new key)"))
        #expect(P.style(screen, of: "SIG Signature") == Theme().selection)
        let hints = screen.text(row: 27)
        #expect(hints.contains("t touch") && hints.contains("p PIN") && hints.contains("a admin PIN"))
    }

    @Test func blockedPasswordsStandOutAndANewCardHasNoResetCode() {
        let screen = P.screen(F.state(F.info(pinTries: 0, resetCodeTries: 0, adminPINTries: 0)), rows: 30, columns: 100)
        #expect(P.contains(screen, "blocked: b unblocks it with the reset code or the admin PIN"))
        #expect(P.style(screen, of: "blocked: b unblocks") == Theme().error)
        #expect(P.contains(screen, "blocked: only a reset (R) makes the card usable again"))
        #expect(P.contains(screen, "none set (c sets one), or blocked"))
        #expect(P.style(screen, of: "none set (c sets one)") == Theme().dim)
    }

    @Test func aShortTerminalKeepsEveryKeyOnScreen() throws {
        let screen = P.screen(F.state(), rows: 20, columns: 60)
        for name in ["SIG Signature", "DEC Decryption", "AUT Authentication"] {
            #expect(P.contains(screen, name))
        }
    }

    @Test func aKeyWithoutOpenPGPSaysSo() {
        var state = F.state()
        _ = update(
            &state,
            .openpgp(
                .failed(
                    keyID: F.key.id,
                    OpenPGPFailure(
                        .load, .notAvailable(UIText("error.application-missing", ["application": "OpenPGP"]))))))
        #expect(P.contains(P.screen(state), "No OpenPGP here"))
    }

    @Test func dialogsHideThePasswordsAndTheFixedPolicyIsAskedAbout() {
        var state = F.state()
        F.press(.char("p"), into: &state)
        for c in "9753" { _ = update(&state, .keyPress(.char(c))) }
        let screen = P.screen(state)
        #expect(P.contains(screen, "Change the OpenPGP PIN") && P.contains(screen, "GnuPG then asks for the new one"))
        #expect(!screen.lines.joined().contains("9753") && P.contains(screen, "••••"))
        F.press(.escape, .char("t"), .right, .enter, into: &state)
        for c in "12345678" { _ = update(&state, .keyPress(.char(c))) }
        F.press(.enter, into: &state)
        let question = P.screen(state, rows: 30, columns: 100)
        #expect(P.contains(question, "Touch policy of key SIG"))
        #expect(P.contains(question, "cannot be changed again"))
    }
}
