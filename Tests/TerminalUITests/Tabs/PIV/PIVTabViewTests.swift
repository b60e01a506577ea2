import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// The PIV tab's states, drawn with the English strings.
enum PIVViewFixture {
    static let key = ViewFixture.key
    /// 2026-01-01 00:00:00 UTC.
    static let now = 1_767_225_600.0
    static let day = 86_400.0

    static func certificate(
        _ subject: String, notAfter: Double, algorithm: PIV.Algorithm = .eccP256,
        names: [String] = []
    ) -> PIVCertificateInfo {
        PIVCertificateInfo(
            subject: subject, issuer: subject, serialHex: "5A3F0C12D4E6F708", notBefore: now - 100 * day,
            notAfter: notAfter, keyUsage: ["digitalSignature", "keyCertSign"], alternativeNames: names,
            fingerprint:
                "2F:02:DC:7A:11:9B:C4:E5:08:6D:3A:F1:42:77:90:BE:5C:0D:A3:6E:19:84:F2:7B:CC:01:9D:45:E8:73:B6:2A",
            signatureAlgorithm: "ecdsa-with-SHA256", keyAlgorithm: algorithm)
    }

    static func key(
        _ algorithm: PIV.Algorithm = .eccP256, pin: PIV.PINPolicy = .once,
        origin: PIV.Origin = .generated
    ) -> PIVKeyInfo {
        PIVKeyInfo(algorithm: algorithm, pinPolicy: pin, touchPolicy: .never, origin: origin)
    }

    /// 9A as ykman fills it, 9C about to expire, 9D expired, 9E a key only, retired 82 a certificate only.
    static func info(defaults: Bool = true, pinRetries: Int = 3, pukRetries: Int? = 3) -> PIVInfo {
        PIVInfo(
            version: "5.7.2", serial: 28_123_456, pinRetries: pinRetries, pinTotal: 3, pinDefault: defaults,
            pukRetries: pukRetries, pukTotal: 3, pukDefault: defaults, managementKey: .aes192,
            managementKeyDefault: defaults,
            slots: [
                PIVSlotInfo(
                    slot: .authentication, key: key(),
                    certificate: certificate(
                        "CN=ykterm-test", notAfter: now + 365 * day,
                        names: ["DNS:ykterm.example.org", "email:alice@example.org"]),
                    certificateMatchesKey: true),
                PIVSlotInfo(
                    slot: .signature, key: key(.rsa2048, pin: .always, origin: .imported),
                    certificate: certificate(
                        "CN=Alice Signing, O=Example, C=SE", notAfter: now + 12 * day,
                        algorithm: .rsa2048),
                    certificateMatchesKey: true),
                PIVSlotInfo(
                    slot: .keyManagement, key: key(.eccP384),
                    certificate: certificate("CN=old encryption", notAfter: now - 3 * day, algorithm: .eccP384),
                    certificateMatchesKey: false),
                PIVSlotInfo(slot: .cardAuthentication, key: key(pin: .never)),
                PIVSlotInfo(
                    slot: PIV.Slot(rawValue: 0x82), certificate: certificate("CN=archive", notAfter: now + 900 * day)),
            ])
    }

    /// The PIV tab of the fixture key, its application read.
    static func state(_ info: PIVInfo = info()) -> AppState {
        var state = ViewFixture.state(now: now)
        _ = update(&state, .keyPress(.char("5")))
        _ = update(&state, .piv(.loaded(keyID: key.id, info)))
        state.status = nil
        return state
    }

    static func press(_ keys: KeyPress..., into state: inout AppState) {
        for k in keys { _ = update(&state, .keyPress(k)) }
    }

    static func type(_ text: String, _ state: inout AppState) {
        for c in text { _ = update(&state, .keyPress(.char(c))) }
    }

    static func screen(_ state: AppState, rows: Int = 24, columns: Int = 80) -> MemoryScreen {
        let screen = ViewFixture.render(state, rows: rows, columns: columns)
        #expect(screen.lines.count == rows && screen.lines.allSatisfy { $0.cellWidth == columns })
        return screen
    }

    static func contains(_ screen: MemoryScreen, _ text: String) -> Bool {
        screen.lines.contains { $0.contains(text) }
    }

    /// The style of the first cell of `text` on screen.
    static func style(_ screen: MemoryScreen, of text: String) -> TextStyle? {
        let line = screen.lines.enumerated().first { $0.element.contains(text) }
        guard let (row, content) = line, let range = content.range(of: text) else { return nil }
        return screen.style(row: row, column: String(content[..<range.lowerBound]).cellWidth)
    }
}

@Suite("Views: PIV tab")
struct PIVTabViewTests {
    typealias F = PIVViewFixture

    @Test func slotsAtAGlanceWithTriesAndDefaults() throws {
        let screen = F.screen(F.state(), rows: 30, columns: 100)
        #expect(screen.text(row: 0).contains("5 PIV"))
        #expect(F.contains(screen, "PIV application"))
        #expect(try #require(ViewFixture.line(screen, containing: "Version")).contains("5.7.2 · serial 28123456"))
        let pin = try #require(ViewFixture.line(screen, containing: "PIN  "))
        #expect(pin.contains("3 of 3 tries left · the default (123456)"))
        #expect(try #require(ViewFixture.line(screen, containing: "PUK  ")).contains("3 of 3 tries left"))
        let management = try #require(ViewFixture.line(screen, containing: "Management key"))
        #expect(management.contains("AES192 · the default: anyone can change keys"))
        #expect(F.style(screen, of: "AES192") == Theme().warning)
        let a = try #require(ViewFixture.line(screen, containing: "9A Authentication"))
        #expect(a.contains("ECCP256") && a.contains("CN=ykterm-test") && a.contains("2027-01-01"))
        let d = try #require(ViewFixture.line(screen, containing: "9D Key Management"))
        #expect(d.contains("ECCP384") && d.contains("2025-12-29"))
        #expect(try #require(ViewFixture.line(screen, containing: "9E Card Authentication")).contains("no certificate"))
        #expect(try #require(ViewFixture.line(screen, containing: "82 Retired 1")).contains("no key"))
        // Expiry colours: 9C ends in 12 days (warning), 9D ended (error), 9A is far off (plain).
        #expect(F.style(screen, of: "2026-01-13") == Theme().warning)
        #expect(F.style(screen, of: "2025-12-29") == Theme().error)
        // The cursor is on 9A.
        #expect(F.style(screen, of: "9A Authentication") == Theme().selection)
        let hints = screen.text(row: 27)
        #expect(hints.contains("Enter certificate") && hints.contains("v verify"))
        #expect(hints.contains("g new certificate") && hints.contains("s copy SSH key"))
    }

    @Test func blockedPINAndPUKStandOut() {
        let screen = F.screen(F.state(F.info(defaults: false, pinRetries: 0, pukRetries: 0)), rows: 30, columns: 100)
        #expect(F.contains(screen, "blocked: b unblocks it with the PUK"))
        #expect(F.style(screen, of: "blocked: b unblocks") == Theme().error)
        #expect(F.contains(screen, "PIN and PUK are blocked: only a reset of PIV"))
        let few = F.screen(F.state(F.info(defaults: false, pinRetries: 1)), rows: 30, columns: 100)
        #expect(F.style(few, of: "1 of 3 tries left") == Theme().warning)
        #expect(!F.contains(few, "the default"))
    }

    @Test func emptySlotsAndAKeyWithoutPIV() {
        let screen = F.screen(F.state(PIVInfo(version: "5.4.3", pinRetries: 3, pinTotal: 3, slots: [])))
        #expect(F.contains(screen, "9A Authentication") && F.contains(screen, "empty"))
        var state = F.state()
        _ = update(
            &state,
            .piv(
                .failed(
                    keyID: F.key.id,
                    PIVFailure(.load, .notAvailable(UIText("error.application-missing", ["application": "PIV"]))))))
        #expect(F.contains(F.screen(state), "No PIV here"))
    }

    @Test func enterShowsTheWholeCertificate() throws {
        var state = F.state()
        F.press(.enter, into: &state)
        let screen = F.screen(state, rows: 40, columns: 100)
        #expect(F.contains(screen, "Slot 9A · Authentication"))
        #expect(try #require(ViewFixture.line(screen, containing: "Subject")).contains("CN=ykterm-test"))
        #expect(try #require(ViewFixture.line(screen, containing: "Issuer")).contains("CN=ykterm-test"))
        #expect(try #require(ViewFixture.line(screen, containing: "Serial number")).contains("5A3F0C12D4E6F708"))
        #expect(try #require(ViewFixture.line(screen, containing: "Valid from")).contains("2025-09-23 00:00:00 UTC"))
        #expect(
            try #require(ViewFixture.line(screen, containing: "Valid until")).contains(
                "2027-01-01 00:00:00 UTC · 365 days left"))
        #expect(
            try #require(ViewFixture.line(screen, containing: "Key usage")).contains("digitalSignature, keyCertSign"))
        #expect(
            try #require(ViewFixture.line(screen, containing: "Alternative names"))
                .contains("DNS:ykterm.example.org, email:alice@example.org"))
        #expect(try #require(ViewFixture.line(screen, containing: "SHA-256 fingerprint")).contains("2F:02:DC:7A"))
        #expect(F.contains(screen, "B6:2A"))
        #expect(try #require(ViewFixture.line(screen, containing: "Key  ")).contains("ECCP256 · generated on the key"))
        #expect(try #require(ViewFixture.line(screen, containing: "PIN policy")).contains("once per session"))
        #expect(try #require(ViewFixture.line(screen, containing: "Touch policy")).contains("never"))
        #expect(F.contains(screen, "the certificate's public key is the slot's key"))
        // An expired certificate whose key is not the slot's says both.
        F.press(.escape, .down, .down, .enter, into: &state)
        let expired = F.screen(state, rows: 40, columns: 100)
        #expect(F.contains(expired, "expired 3 days ago"))
        #expect(F.style(expired, of: "2025-12-29") == Theme().error)
        #expect(F.contains(expired, "is not the slot's key"))
        // Short terminals scroll the details.
        let short = F.screen(state, rows: 20, columns: 60)
        #expect(F.contains(short, "more below"))
    }

    @Test func verifyDialogHidesThePINAndTouchIsShown() throws {
        var state = F.state()
        F.press(.char("v"), into: &state)
        F.type("9753", &state)
        let screen = F.screen(state)
        #expect(F.contains(screen, "PIN to sign with slot 9A"))
        #expect(!screen.lines.joined().contains("9753") && F.contains(screen, "••••"))
        F.press(.enter, into: &state)
        _ = update(&state, .piv(.touch(keyID: F.key.id, waiting: true)))
        let touch = F.screen(state)
        #expect(F.contains(touch, "Touch your key") && F.contains(touch, "slot 9A signs once it is touched"))
        _ = update(&state, .piv(.verified(keyID: F.key.id, slot: .authentication, .verified(.eccP256), F.info())))
        let done = F.screen(state)
        #expect(F.contains(done, "Slot 9A: signature verified (ECCP256) with the certificate's public key"))
        #expect(!F.contains(done, "Touch your key"))
    }

    @Test func wrongPINShowsTheTriesLeftInTheDialogAndBehindIt() {
        var state = F.state()
        F.press(.char("p"), into: &state)
        for text in ["000000", "654321", "654321"] {
            F.type(text, &state)
            F.press(.enter, into: &state)
        }
        _ = update(&state, .piv(.failed(keyID: F.key.id, PIVFailure(.changePIN, .wrongPIN(retriesLeft: 2)))))
        let screen = F.screen(state, rows: 30, columns: 100)
        #expect(F.contains(screen, "Change the PIV PIN"))
        #expect(F.contains(screen, "Wrong current PIN: 2 tries left before the PIN is blocked"))
        #expect(F.contains(screen, "2 of 3 tries left"))
    }

    @Test func exportAsksBeforeReplacing() {
        var state = F.state()
        F.press(.char("e"), into: &state)
        #expect(F.contains(F.screen(state), "Export the certificate of slot 9A"))
        F.press(.enter, into: &state)
        _ = update(&state, .piv(.exportExists(keyID: F.key.id, path: "piv-9a-certificate.pem")))
        let screen = F.screen(state)
        #expect(F.contains(screen, "piv-9a-certificate.pem exists. Replace it?"))
    }

    @Test func certificateDialogMasksTheSecretsAsksBeforeReplacingAndSaysWhatItMade() throws {
        var state = F.state(F.info(defaults: false))
        F.press(.char("g"), into: &state)
        F.press(.enter, .enter, into: &state)
        F.type("0102030405060708", &state)
        F.press(.enter, into: &state)
        F.type("9753", &state)
        let screen = F.screen(state, rows: 30, columns: 100)
        #expect(F.contains(screen, "Self-signed certificate for slot 9A"))
        #expect(try #require(ViewFixture.line(screen, containing: "Subject")).contains("CN=PIV slot 9A"))
        #expect(try #require(ViewFixture.line(screen, containing: "Valid for (days)")).contains("365"))
        #expect(F.contains(screen, "Management key (hex)"))
        let shown = screen.lines.joined()
        #expect(!shown.contains("0102030405060708") && !shown.contains("9753"))
        #expect(F.contains(screen, "••••••••••••••••") && F.contains(screen, "••••"))
        // The management key's length is said once the cursor left it, without its digits.
        #expect(F.contains(screen, "The management key (AES192) has 48 hex digits (16 typed)"))

        // 9A holds a certificate: the question comes before the key is asked.
        var replacing = F.state()
        F.press(.char("g"), .enter, .enter, into: &replacing)
        F.type("123456", &replacing)
        F.press(.enter, into: &replacing)
        #expect(F.contains(F.screen(replacing), "Slot 9A already holds a certificate. Replace it?"))
        replacing.now += 1
        F.press(.char("y"), into: &replacing)
        #expect(F.contains(F.screen(replacing, rows: 30, columns: 100), "making the certificate…"))
        _ = update(
            &replacing,
            .piv(.certificateGenerated(keyID: F.key.id, slot: .authentication, subject: "CN=PIV slot 9A", F.info())))
        let done = F.screen(replacing)
        #expect(F.contains(done, "Slot 9A: self-signed certificate stored, subject CN=PIV slot 9A"))
        #expect(!F.contains(done, "Replace it?"))
    }

    @Test func aSlotWithoutKeyOrAnSSHFormSaysSo() {
        var state = F.state()
        // Retired 82 holds a certificate, no key.
        F.press(.end, .char("s"), into: &state)
        #expect(F.contains(F.screen(state), "Slot 82 has a certificate but no key: nothing can sign"))
        F.press(.home, .char("s"), into: &state)
        #expect(F.contains(F.screen(state, rows: 30, columns: 100), "reading the public key…"))
        // The line read is copied; the status line says what and how.
        let commands = update(
            &state, .piv(.sshKeyRead(keyID: F.key.id, slot: .authentication, line: "ssh-ed25519 AAAA PIV slot 9A")))
        guard case .copy(_, let status)? = commands.first else {
            Issue.record("\(commands)")
            return
        }
        _ = update(&state, .copied(true, status.adding(how: "OSC 52")))
        #expect(F.contains(F.screen(state), "Copied the SSH key of PIV slot 9A (OSC 52)"))
    }

    @Test func datesAreUTC() {
        #expect(PIVTabView.dateTime(0) == "1970-01-01 00:00:00 UTC")
        #expect(PIVTabView.dateTime(1_767_225_599) == "2025-12-31 23:59:59 UTC")
        #expect(PIVTabView.date(F.now) == "2026-01-01")
    }

    @Test func narrowTerminalsKeepEveryColumn() throws {
        let screen = F.screen(F.state(), rows: 20, columns: 60)
        let a = try #require(ViewFixture.line(screen, containing: "9A Authentication"))
        #expect(a.contains("ECCP256") && a.contains("CN=ykterm-test") && a.contains("2027-01-01"))
        #expect(screen.text(row: 0).contains("5 PIV"))
    }
}
