import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// The SSH tab's states, drawn with the English strings. The keys are OpenSSH's own test keys (openssh-portable,
/// regress/unittests/sshkey/testdata: ed25519_sk1, ecdsa_sk1, ed25519_1 and ecdsa_1), with the fingerprints
/// `ssh-keygen -l` printed for them there.
enum SSHViewFixture {
    static let key = ViewFixture.key

    static func hex(_ text: String) -> [UInt8] { try! Hex.decode(text) }

    static func userID(_ user: String?) -> [UInt8] {
        let bytes = Array((user ?? "").utf8)
        return bytes + [UInt8](repeating: 0, count: 32 - bytes.count)
    }

    /// ed25519_sk1 (application "ssh:"): no user, a touch for every use.
    static let edSK = SSHKeyOnKey(
        key: SecurityKeySSHKey(
            publicKey: .ed25519(hex("2168fe4e4b53cf3adeeeba602f5e50edb5ef441dba884f5119109db2dafdd733")),
            application: "ssh:", flags: [.userPresenceRequired, .residentKey],
            keyHandle: Array(repeating: 0xE1, count: 48)
        ),
        userID: userID(nil), userName: "openssh", credProtect: 2)
    static let edSKFingerprint = "SHA256:6WZVJ44bqhAWLVP4Ns0TDkoSQSsZo/h2K+mEvOaNFbw"

    /// ecdsa_sk1 (application "ssh:") for user alice, a touch and the PIN for every use.
    static let ecSK = SSHKeyOnKey(
        key: SecurityKeySSHKey(
            publicKey: .ecdsaP256(
                hex(
                    "0467553e428e2d4319edbeab65f4bc04e1e8b62738357e0c9aec849a2baf91a78a95b6f517ee6835ecd1607a5c17a3f5d3"
                        + "8b6b35510e342bb55d7d4203ba71f905")),
            application: "ssh:", flags: [.userPresenceRequired, .userVerificationRequired, .residentKey],
            keyHandle: Array(repeating: 0xEC, count: 64)),
        userID: userID("alice"), userName: "openssh", credProtect: 3)
    static let ecSKFingerprint = "SHA256:Go7HO0CVPYG+BSDSk9ZUJBKGSrtBExp6obTa9iqzIUo"
    /// ecdsa_sk1.pub's line, with the application as its comment.
    static let ecSKLine =
        "sk-ecdsa-sha2-nistp256@openssh.com AAAAInNrLWVjZHNhLXNoYTItbmlzdHAyNTZAb3BlbnNzaC5jb20AAAAIbmlzdHAyNTYAAABBBGd"
        + "VPkKOLUMZ7b6rZfS8BOHotic4NX4MmuyEmiuvkaeKlbb1F+5oNezRYHpcF6P104trNVEONCu1XX1CA7px+QUAAAAEc3NoOg== ssh:"

    /// ed25519_1 in slot 9A, with a certificate.
    static let pivEd = PIVSSHKey(
        slot: .authentication,
        publicKey: try! AsymmetricPublicKey(
            raw: hex("5386ea463b45fe14b4216f3f02a0a3f073b57724db10b86b65b2037e17b48c19"), type: .ed25519),
        certificateSubject: "CN=alice")!
    static let pivEdFingerprint = "SHA256:L3k/oJubblSY0lB9Ulsl7emDMnRPKm/8udf2ccwk560"
    static let pivEdLine =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFOG6kY7Rf4UtCFvPwKgo/BztXck2xC4a2WyA34XtIwZ PIV slot 9A"

    /// ecdsa_1 in slot 9C, without a certificate.
    static let pivEC = PIVSSHKey(
        slot: .signature,
        publicKey: try! AsymmetricPublicKey(
            ecPoint: hex(
                "040c595b9643ab5bdc9d29586d33ef4063773db1a044ed21b7945c77f2705abe40030da23d8e1dff92f1bf26df6fa66db6"
                    + "ab0a249530860dfcc291790829a5a507"),
            type: .p256),
        certificateSubject: nil)!
    static let pivECFingerprint = "SHA256:8ty77fOpABat1y88aNdclQTfU+lVvWe7jYZGw8VYtfg"

    static let listed = SSHTabLoad(fido: .listed, fidoKeys: [edSK, ecSK], pivKeys: [pivEd, pivEC])
    static let pinNeeded = SSHTabLoad(fido: .pinNeeded, pivKeys: [pivEd, pivEC])

    /// The SSH tab of the fixture key, its keys read.
    static func state(_ load: SSHTabLoad = listed) -> AppState {
        var state = ViewFixture.state()
        _ = update(&state, .keyPress(.char("6")))
        _ = update(&state, .ssh(.loaded(keyID: key.id, load)))
        state.status = nil
        return state
    }

    /// The PIN given, the FIDO keys listed, and the new-key dialog submitted: the key waits for a touch.
    static func touchState() -> AppState {
        var state = self.state()
        for k in [KeyPress.char("n"), .enter, .enter, .enter, .enter, .enter, .enter] {
            _ = update(&state, .keyPress(k))
        }
        _ = update(&state, .ssh(.touch(keyID: key.id, waiting: true)))
        state.status = nil
        return state
    }

    static func press(_ keys: KeyPress..., into state: inout AppState) {
        for k in keys { _ = update(&state, .keyPress(k)) }
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

    /// The rows under "authorized_keys line" down to the hints, joined: the line as the details show it.
    static func shownLine(_ screen: MemoryScreen) -> String? {
        guard let label = row(screen, "authorized_keys line (c copies it):") else { return nil }
        // The line's rows run from the label to the first empty row (the facts follow it).
        let rows = ((label + 1)..<(screen.lines.count - 3)).map {
            screen.text(row: $0).trimmingCharacters(in: .whitespaces)
        }
        return rows.prefix { !$0.isEmpty }.joined()
    }

    /// The row of the first line holding `text`.
    static func row(_ screen: MemoryScreen, _ text: String) -> Int? {
        screen.lines.firstIndex { $0.contains(text) }
    }
}

@Suite("Views: SSH tab")
struct SSHTabViewTests {
    typealias F = SSHViewFixture

    @Test func theListShowsTypeApplicationCommentAndFingerprint() throws {
        let screen = F.screen(F.state())
        #expect(screen.text(row: 0).contains("6 SSH"))
        #expect(F.contains(screen, "SSH keys on the key: 4"))
        let heading = try #require(ViewFixture.line(screen, containing: "Type"))
        #expect(heading.contains("Application") && heading.contains("Comment"))
        // Each key: its type, application or slot and comment on one line, the fingerprint under it.
        let rows: [(String, String, String, String)] = [
            ("ed25519-sk", "ssh:", "touch", F.edSKFingerprint),
            ("ecdsa-sk", "ssh:", "user alice · touch and PIN", F.ecSKFingerprint),
            ("ed25519", "PIV 9A", "CN=alice", F.pivEdFingerprint),
            ("ecdsa", "PIV 9C", "no certificate: ssh -I does not see it", F.pivECFingerprint),
        ]
        var last = -1
        for (type, place, comment, fingerprint) in rows {
            let row = try #require(F.row(screen, " " + type + " "), "\(type)")
            let line = screen.text(row: row)
            #expect(line.hasPrefix(" " + type) && line.contains(" " + place + " ") && line.contains(comment))
            // The columns line up under the heading.
            #expect(
                line.range(of: place)?.lowerBound.utf16Offset(in: line)
                    == heading.range(of: "Application")?.lowerBound.utf16Offset(in: heading))
            #expect(screen.text(row: row + 1).trimmingCharacters(in: .whitespaces) == fingerprint)
            #expect(row > last)
            last = row
        }
        // The cursor is on the first key, both its lines.
        #expect(F.style(screen, of: "ed25519-sk") == Theme().selection)
        #expect(F.style(screen, of: F.edSKFingerprint) == Theme().selection)
        #expect(F.style(screen, of: F.ecSKFingerprint) == Theme().dim)
        let hints = screen.text(row: 21)
        #expect(hints.contains("Enter line") && hints.contains("c copy") && hints.contains("n new"))
        #expect(hints.contains("d delete") && !hints.contains("v PIN"))
    }

    @Test func theDetailsShowTheWholeLineAcrossItsWrappedRows() throws {
        var state = F.state()
        F.press(.down, .enter, into: &state)
        let screen = F.screen(state)
        #expect(F.contains(screen, "SSH key ssh:"))
        #expect(
            try #require(ViewFixture.line(screen, containing: "Type")).contains("sk-ecdsa-sha2-nistp256@openssh.com"))
        #expect(try #require(ViewFixture.line(screen, containing: "User")).contains("alice"))
        #expect(try #require(ViewFixture.line(screen, containing: "Each use needs")).contains("touch and PIN"))
        #expect(try #require(ViewFixture.line(screen, containing: "credProtect")).contains("3"))
        #expect(
            try #require(ViewFixture.line(screen, containing: "File (ssh-keygen -K)")).contains("id_ecdsa_sk_rk__alice")
        )
        #expect(try #require(ViewFixture.line(screen, containing: "Fingerprint")).contains(F.ecSKFingerprint))
        // The line in full: every character, in order, on the rows under its label.
        #expect(F.shownLine(screen) == F.ecSKLine)
        #expect(screen.text(row: 21).contains("Esc back to the list") && screen.text(row: 21).contains("c copy"))
        // A PIV slot: its slot and how OpenSSH reaches it.
        F.press(.escape, .up, .down, .down, .enter, into: &state)
        let piv = F.screen(state)
        #expect(F.contains(piv, "SSH key PIV 9A"))
        #expect(try #require(ViewFixture.line(piv, containing: "PIV slot")).contains("9A"))
        #expect(try #require(ViewFixture.line(piv, containing: "Certificate")).contains("CN=alice"))
        #expect(try #require(ViewFixture.line(piv, containing: "OpenSSH uses it with")).contains("ssh -I libykcs11.so"))
        #expect(F.shownLine(piv) == F.pivEdLine)
    }

    @Test func theFIDONoteSaysThePINIsWanted() throws {
        var state = F.state(F.pinNeeded)
        // The PIN dialog opens by itself; Esc shows the PIV slots and the note.
        let dialog = F.screen(state)
        #expect(F.contains(dialog, "FIDO2 PIN for the SSH keys"))
        F.press(.escape, into: &state)
        let screen = F.screen(state)
        #expect(F.contains(screen, "SSH keys on the key: 2") && F.contains(screen, "PIV 9A"))
        #expect(!F.contains(screen, "ed25519-sk"))
        let note = "FIDO SSH keys: v enters the FIDO2 PIN to list them."
        let row = try #require(F.row(screen, note))
        #expect(F.style(screen, of: note) == Theme().warning)
        // Under the list, above the hints.
        #expect(row == 20 && screen.text(row: 21).contains("v PIN"))
        // Without a PIN set, the note says why and is no warning.
        let noPIN = F.screen(F.state(SSHTabLoad(fido: .noPIN, pivKeys: [])))
        #expect(F.contains(noPIN, "No SSH keys on this key yet: n makes one."))
        #expect(F.style(noPIN, of: "FIDO SSH keys: listing them needs a FIDO2 PIN") == Theme().dim)
    }

    @Test func aTouchIsAskedForInABox() {
        let screen = F.screen(F.touchState())
        #expect(F.contains(screen, "Touch your key"))
        #expect(F.contains(screen, "The key makes the new SSH key once it is touched (it blinks)."))
        #expect(F.contains(screen, "Esc cancels"))
        #expect(F.style(screen, of: "Touch your key") == Theme().warning)
        // The dialog under it is not drawn over the box.
        #expect(!F.contains(screen, "New FIDO SSH key"))
    }
}
