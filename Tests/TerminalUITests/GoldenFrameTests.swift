import Foundation
import Testing
import KeyKit
@testable import AuthenticatorModel
@testable import TerminalUI

/// Whole frames: every tab and dialog rendered at 100x30 and 60x20 on the in-memory screen and compared, cell
/// for cell, with the files in `Tests/TerminalUITests/Golden`. `make golden` writes them anew (and only it:
/// a test never updates them by itself); a difference shows both frames side by side.
enum Golden {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let updating = ProcessInfo.processInfo.environment["YKTERM_GOLDEN_UPDATE"] == "1"

    /// The scenes: each a state reached through `update`, as a user reaches it.
    static let scenes: [(String, @Sendable () -> AppState)] = [
        ("oath-list", { ViewFixture.state() }),
        ("oath-add", { press([.char("a")], ViewFixture.state()) }),
        ("oath-delete", { press([.char("d")], ViewFixture.state()) }),
        ("oath-password", { press([.char("P")], ViewFixture.state()) }),
        (
            "oath-locked",
            {
                var s = AppState(now: 1000)
                _ = update(&s, .keyEvent(.keyArrived(ViewFixture.key)))
                _ = update(&s, .oath(.locked(keyID: ViewFixture.key.id, deviceID: "d", version: Version(5, 7, 2))))
                return s
            }
        ),
        ("oath-all-keys", { AllKeysViewFixture.state() }),
        ("oath-all-keys-add", { press([.char("a")], AllKeysViewFixture.state()) }),
        ("oath-compare-keys", { press([.char("D")], AllKeysViewFixture.state()) }),
        ("oath-add-new-secret", { AddQRFixture.newSecret() }),
        ("oath-add-image", { AddQRFixture.image() }),
        ("oath-add-image-refused", { AddQRFixture.imageRefused() }),
        ("oath-shown-account", { AddQRFixture.shown() }),
        ("otp-tab", { OTPViewFixture.state() }),
        ("otp-challenge", { press([.char(OTPTabState.challengeKey)], OTPViewFixture.state()) }),
        (
            "otp-program-hotp",
            {
                press(
                    [.down, .right, .right], OTPViewFixture.alone(OTPTabState.programKey, OTPViewFixture.slotsState()))
            }
        ),
        (
            "otp-overwrite-question",
            {
                press(
                    [.left, .down, .down, .enter],
                    OTPViewFixture.alone(OTPTabState.programKey, OTPViewFixture.slotsState()))
            }
        ),
        (
            "otp-delete-question",
            { press([.down, .enter], OTPViewFixture.alone(OTPTabState.deleteKey, OTPViewFixture.slotsState())) }
        ),
        ("otp-programmed", { OTPViewFixture.programmedState() }),
        ("otp-access-code", { OTPViewFixture.accessCodeState() }),
        ("otp-access-code-refused", { OTPViewFixture.accessCodeRefusedState() }),
        ("fido-info", { FIDOViewFixture.state() }),
        ("fido-set-pin", { press([.char("s")], FIDOViewFixture.state(FIDOViewFixture.info(pinSet: false))) }),
        (
            "fido-credentials",
            {
                var s = FIDOViewFixture.state()
                _ = update(
                    &s,
                    .fido(
                        .verified(
                            keyID: ViewFixture.key.id, FIDOViewFixture.info(),
                            credentials: [
                                FIDOCredential(
                                    rpID: "example.com", rpName: "Example", userName: "alice", displayName: "Alice",
                                    credentialID: [1, 2, 3, 4]),
                                FIDOCredential(
                                    rpID: "github.com", rpName: "GitHub", userName: "alice@example.com",
                                    credentialID: [5, 6, 7, 8]),
                            ])))
                s.status = nil
                return s
            }
        ),
        ("fido-credentials-other-keys", { FIDOKeysViewFixture.state() }),
        ("fido-other-key-pin", { FIDOKeysViewFixture.state(read: false) }),
        ("fido-reset-question", { press([.char("R")], FIDOViewFixture.state()) }),
        (
            "fido-settings",
            {
                var info = FIDOViewFixture.info()
                info.minPINLength = 8
                info.forcePINChange = true
                info.alwaysUV = true
                return FIDOViewFixture.state(info)
            }
        ),
        (
            "fido-fingerprints",
            {
                var info = FIDOViewFixture.info()
                info.bioEnrollment = true
                info.options["bioEnroll"] = true
                var s = FIDOViewFixture.state(info)
                _ = update(
                    &s,
                    .fido(
                        .fingerprints(
                            keyID: ViewFixture.key.id,
                            [
                                FIDOFingerprint(templateID: [1, 2], name: "right thumb"),
                                FIDOFingerprint(templateID: [3, 4], name: nil),
                            ])))
                return s
            }
        ),
        ("fido-credential-detail", { press([.enter], FIDOViewFixture.detailState()) }),
        ("fido-rename", { press([.enter, .char("n")], FIDOViewFixture.detailState()) }),
        ("apdu-console", { APDUViewFixture.console() }),
        (
            "apdu-log",
            {
                var s = APDUViewFixture.console()
                APDUViewFixture.exchange(APDUViewFixture.selectOATH, data: APDUViewFixture.oathData, &s)
                return s
            }
        ),
        ("piv-slots", { PIVViewFixture.state() }),
        ("piv-certificate", { press([.enter], PIVViewFixture.state()) }),
        ("piv-verify-pin", { press([.char("v")], PIVViewFixture.state()) }),
        (
            "piv-touch",
            {
                var s = press([.char("v")] + "123456".map { .char($0) } + [.enter], PIVViewFixture.state())
                _ = update(&s, .piv(.touch(keyID: ViewFixture.key.id, waiting: true)))
                return s
            }
        ),
        ("piv-change-pin", { press([.char("p")], PIVViewFixture.state()) }),
        ("piv-change-puk", { press([.char("u")], PIVViewFixture.state()) }),
        ("piv-unblock-pin", { press([.char("b")], PIVViewFixture.state(PIVViewFixture.info(pinRetries: 0))) }),
        ("piv-export", { press([.char("e")], PIVViewFixture.state()) }),
        (
            "piv-export-overwrite",
            {
                var s = press([.char("e"), .enter], PIVViewFixture.state())
                _ = update(&s, .piv(.exportExists(keyID: ViewFixture.key.id, path: "piv-9a-certificate.pem")))
                return s
            }
        ),
        ("ssh-keys", { SSHViewFixture.state() }),
        ("ssh-key-line", { press([.down, .enter], SSHViewFixture.state()) }),
        ("ssh-new-key", { press([.char("n")], SSHViewFixture.state()) }),
        ("ssh-pin", { SSHViewFixture.state(SSHViewFixture.pinNeeded) }),
        ("ssh-touch", { SSHViewFixture.touchState() }),
        (
            "piv-certificate-generate",
            { press([.char("g")], PIVViewFixture.state(PIVViewFixture.info(defaults: false))) }
        ),
        (
            "piv-certificate-replace",
            { press([.char("g"), .enter, .enter] + "123456".map { .char($0) } + [.enter], PIVViewFixture.state()) }
        ),
        ("openpgp-card", { OpenPGPViewFixture.state() }),
        ("openpgp-change-pin", { press([.char("p")], OpenPGPViewFixture.state()) }),
        (
            "openpgp-unblock-pin",
            { press([.char("b")], OpenPGPViewFixture.state(OpenPGPViewFixture.info(pinTries: 0))) }
        ),
        (
            "openpgp-touch-fixed-question",
            {
                press(
                    [.char("t"), .right, .enter] + "12345678".map { .char($0) } + [.enter], OpenPGPViewFixture.state())
            }
        ),
        ("openpgp-reset-question", { press([.char("R")], OpenPGPViewFixture.state()) }),
        ("help", { press([.char("?")], ViewFixture.state()) }),
        (
            "device-info",
            {
                var s = ViewFixture.state()
                _ = update(&s, .probed(keyID: ViewFixture.key.id, APDUViewFixture.fullInfo()))
                return press([.char("i")], s)
            }
        ),
        // The device view's question before it turns OATH off over USB.
        (
            "device-config-question",
            {
                var s = ViewFixture.state()
                _ = update(&s, .probed(keyID: ViewFixture.key.id, APDUViewFixture.fullInfo()))
                return press([.char("i"), .right, .right, .right, .char(" ")], s)
            }
        ),
        // The lock code a locked key's change needs, after the key refused a wrong one.
        ("device-lock-code-refused", { APDUViewFixture.lockRefusedState() }),
        ("device-set-lock-code", { APDUViewFixture.setLockState() }),
        (
            "security-key",
            {
                var s = AppState(now: 1000)
                let d = KeyDescriptor(
                    transport: .hid(path: "/dev/hidraw4"), name: "Security Key NFC",
                    fidoHID: HIDDeviceInfo(path: "/dev/hidraw4", vendorID: 0x1050, productID: 0x0120))
                _ = update(&s, .keyEvent(.keyArrived(d)))
                return s
            }
        ),
        ("no-key", { AppState(now: 1000) }),
    ]

    static let sizes = [(rows: 30, columns: 100), (rows: 20, columns: 60)]

    static func press(_ keys: [KeyPress], _ state: AppState) -> AppState {
        var s = state
        for k in keys { _ = update(&s, .keyPress(k)) }
        s.status = nil
        return s
    }

    /// The frame as text: the characters, then each row's styles (which cells are heading, dim, inverse, ...).
    static func frame(_ state: AppState, rows: Int, columns: Int) -> String {
        ViewFixture.render(state, rows: rows, columns: columns).lines.joined(separator: "\n") + "\n"
    }

    static func path(_ scene: String, rows: Int, columns: Int) -> URL {
        directory.appendingPathComponent("\(scene)-\(columns)x\(rows).txt")
    }

    static func sideBySide(_ expected: String, _ actual: String, width: Int) -> String {
        let a = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let b = actual.split(separator: "\n", omittingEmptySubsequences: false)
        var out = ["expected".padding(toLength: width, withPad: " ", startingAt: 0) + " | actual"]
        for i in 0..<max(a.count, b.count) {
            let l = i < a.count ? String(a[i]) : ""
            let r = i < b.count ? String(b[i]) : ""
            out.append((l == r ? "  " : "! ") + l.padding(toLength: width, withPad: " ", startingAt: 0) + " | " + r)
        }
        return out.joined(separator: "\n")
    }
}

@Suite("Views: golden frames")
struct GoldenFrameTests {
    @Test(arguments: Golden.scenes.map(\.0))
    func frameMatchesItsFile(scene: String) throws {
        let build = Golden.scenes.first { $0.0 == scene }!.1
        for size in Golden.sizes {
            let actual = Golden.frame(build(), rows: size.rows, columns: size.columns)
            let file = Golden.path(scene, rows: size.rows, columns: size.columns)
            if Golden.updating {
                try FileManager.default.createDirectory(at: Golden.directory, withIntermediateDirectories: true)
                try actual.write(to: file, atomically: true, encoding: .utf8)
                continue
            }
            guard let expected = try? String(contentsOf: file, encoding: .utf8) else {
                Issue.record("no golden frame \(file.lastPathComponent): run `make golden` and review the new file")
                continue
            }
            let comparison = Golden.sideBySide(expected, actual, width: size.columns + 2)
            #expect(expected == actual, "\(scene) at \(size.columns)x\(size.rows) differs:\n\(comparison)")
        }
    }
}
