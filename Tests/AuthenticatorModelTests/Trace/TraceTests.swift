import Foundation
import Logging
import Testing
import KeyKit
import VirtualKey
@testable import AuthenticatorModel

/// An APDU: header, Lc and data (and Le 00 when `le`).
private func apdu(_ cla: UInt8, _ ins: UInt8, _ p1: UInt8, _ p2: UInt8, _ data: [UInt8] = [], le: Bool = false)
    -> [UInt8]
{
    [cla, ins, p1, p2] + (data.isEmpty ? [] : [UInt8(data.count)] + data) + (le ? [0] : [])
}

private func select(_ aid: [UInt8]) -> [UInt8] { apdu(0x00, 0xA4, 0x04, 0x00, aid) }

private let ok: [UInt8] = [0x90, 0x00]
private let secret: [UInt8] = Array(0xA0...0xAF)
private var secretHex: String { secret.hex.uppercased() }

@Suite("Trace: APDU redaction")
struct APDURedactorTests {
    @Test func oathPutAndValidateAreRedactedAndLabelled() {
        var r = APDURedactor()
        let s = r.redact(command: select(AID.oath), response: [0x79, 0x03, 0x05, 0x07, 0x02] + ok)
        #expect(s.label == "SELECT OATH")
        #expect(r.application == .oath)
        let put = r.redact(
            command: apdu(
                0x00, 0x01, 0x00, 0x00, [0x71, 0x03] + Array("abc".utf8) + [0x73, 0x12, 0x21, 0x06] + secret),
            response: ok)
        #expect(put.label == "OATH PUT")
        #expect(put.command == "00010000 <25 bytes redacted>")
        #expect(put.response == "9000")
        let validate = r.redact(
            command: apdu(0x00, 0xA3, 0x00, 0x00, [0x75, 0x10] + secret), response: [0x75, 0x10] + secret + ok)
        #expect(validate.command == "00A30000 <18 bytes redacted>")
        #expect(validate.response == "<18 bytes redacted> 9000")
        let list = r.redact(command: apdu(0x00, 0xA1, 0x00, 0x00), response: [0x72, 0x02, 0x21, 0x61] + ok)
        #expect(list.label == "OATH LIST")
        #expect(list.response == "72022161 9000")
    }

    @Test func codesFetchedInPartsStayRedacted() {
        var r = APDURedactor()
        _ = r.redact(command: select(AID.oath), response: ok)
        let first = r.redact(
            command: apdu(0x00, 0xA4, 0x00, 0x01, [0x74, 0x08, 0, 0, 0, 0, 0, 0, 0, 1]),
            response: [0x71, 0x01, 0x61, 0x76, 0x05, 0x06, 0x12, 0x34, 0x56, 0x78, 0x61, 0x10])
        #expect(first.label == "OATH CALCULATE ALL")
        #expect(first.response == "<10 bytes redacted> 6110")
        let rest = r.redact(
            command: apdu(0x00, 0xA5, 0x00, 0x00), response: [0x76, 0x05, 0x06, 0x87, 0x65, 0x43, 0x21] + ok)
        #expect(rest.label == "SEND REMAINING (OATH CALCULATE ALL)")
        #expect(rest.response == "<7 bytes redacted> 9000")
        // After the last part, a LIST answer is shown again.
        let list = r.redact(command: apdu(0x00, 0xA1, 0x00, 0x00), response: [0x72, 0x00] + ok)
        #expect(list.response == "7200 9000")
    }

    @Test func otpWritesAndChallengeAnswersAreRedacted() {
        var r = APDURedactor()
        _ = r.redact(command: select(AID.otp), response: [5, 7, 2, 1, 0, 0] + ok)
        let config = r.redact(
            command: apdu(0x00, 0x01, 0x03, 0x00, secret + Array(repeating: 0, count: 36)), response: ok)
        #expect(config.label == "OTP CONFIG SLOT 2")
        #expect(config.command == "00010300 <52 bytes redacted>")
        let challenge = [UInt8](repeating: 0x5A, count: 32)
        let answer = [UInt8](repeating: 0xC3, count: 20)
        let hmac = r.redact(command: apdu(0x00, 0x01, 0x38, 0x00, challenge), response: answer + ok)
        #expect(hmac.label == "OTP CHALLENGE HMAC SLOT 2")
        #expect(hmac.command == "0001380020" + challenge.hex.uppercased())
        #expect(hmac.response == "<20 bytes redacted> 9000")
        let other = r.redact(command: apdu(0x00, 0x01, 0x06, 0x00, [1, 2, 3]), response: ok)
        #expect(other.label == "OTP WRITE 06")
        #expect(other.command == "00010600 <3 bytes redacted>")
    }

    @Test func openpgpPasswordsResetCodeImportedKeysAndDecipheredSecretsAreRedacted() {
        var r = APDURedactor()
        let s = r.redact(command: select(AID.openpgp), response: ok)
        #expect(s.label == "SELECT OpenPGP" && r.application == .openpgp)
        let verify = r.redact(command: apdu(0x00, 0x20, 0x00, 0x83, secret), response: ok)
        #expect(verify.label == "OPENPGP VERIFY" && verify.command == "00200083 <16 bytes redacted>")
        let change = r.redact(command: apdu(0x00, 0x24, 0x00, 0x81, secret), response: ok)
        #expect(change.command == "00240081 <16 bytes redacted>")
        let code = r.redact(command: apdu(0x00, 0xDA, 0x00, 0xD3, secret), response: ok)
        #expect(code.label == "OPENPGP PUT DATA" && code.command == "00DA00D3 <16 bytes redacted>")
        let name = r.redact(command: apdu(0x00, 0xDA, 0x00, 0x5B, [0x41]), response: ok)
        #expect(name.command == "00DA005B0141")
        let key = r.redact(command: apdu(0x00, 0xDB, 0x3F, 0xFF, secret), response: ok)
        #expect(key.label == "OPENPGP IMPORT KEY" && key.command == "00DB3FFF <16 bytes redacted>")
        let decipher = r.redact(command: apdu(0x00, 0x2A, 0x80, 0x86, [0x00, 0x01], le: true), response: secret + ok)
        #expect(decipher.label == "OPENPGP DECIPHER" && decipher.response == "<16 bytes redacted> 9000")
        let sign = r.redact(command: apdu(0x00, 0x2A, 0x9E, 0x9A, [0x01], le: true), response: [0x02] + ok)
        #expect(sign.label == "OPENPGP PSO" && sign.response == "02 9000")
    }

    @Test func fidoClientPINKeepsOnlyTheCommandAndStatusBytes() {
        var r = APDURedactor()
        _ = r.redact(command: select(AID.fido), response: Array("FIDO_2_0".utf8) + ok)
        let pin = r.redact(
            command: apdu(0x80, 0x10, 0x00, 0x00, [0x06] + secret, le: true), response: [0x00] + secret + ok)
        #expect(pin.label == "NFCCTAP_MSG clientPIN")
        #expect(pin.command == "80100000 06 <16 bytes redacted>")
        #expect(pin.response == "00 <16 bytes redacted> 9000")
        let info = r.redact(command: apdu(0x80, 0x10, 0x00, 0x00, [0x04], le: true), response: [0x00, 0xA1] + ok)
        #expect(info.label == "NFCCTAP_MSG getInfo")
        #expect(info.response == "00A1 9000")
        // clientPIN answered in parts (9100 then NFCCTAP GETRESPONSE) stays redacted.
        _ = r.redact(command: apdu(0x80, 0x10, 0x00, 0x00, [0x06, 0x01], le: true), response: [0x91, 0x00])
        let later = r.redact(command: apdu(0x80, 0x11, 0x00, 0x00), response: [0x00] + secret + ok)
        #expect(later.label == "NFCCTAP GETRESPONSE (NFCCTAP_MSG clientPIN)")
        #expect(later.response == "00 <16 bytes redacted> 9000")
    }

    @Test func pinsInVerifyAndChainsAreRedacted() {
        var r = APDURedactor()
        _ = r.redact(command: select(AID.piv), response: ok)
        let verify = r.redact(command: apdu(0x00, 0x20, 0x00, 0x80, Array("123456\u{FF}\u{FF}".utf8)), response: ok)
        #expect(verify.label == "PIV VERIFY")
        #expect(verify.command.hasPrefix("00200080 <"))
        #expect(!verify.command.contains("313233"))
        // An ISO chain: every part judged by the first.
        _ = r.redact(command: select(AID.oath), response: ok)
        let part1 = r.redact(command: apdu(0x10, 0x01, 0x00, 0x00, secret), response: ok)
        let part2 = r.redact(command: apdu(0x00, 0x01, 0x00, 0x00, secret), response: ok)
        #expect(part1.command == "10010000 <16 bytes redacted>")
        #expect(part2.command == "00010000 <16 bytes redacted>")
    }

    @Test func withoutASelectTheRiskyInstructionsAreRedacted() {
        var r = APDURedactor()
        #expect(r.application == .unknown)
        #expect(
            r.redact(command: apdu(0x00, 0x01, 0x00, 0x00, secret), response: ok).command
                == "00010000 <16 bytes redacted>")
        #expect(
            r.redact(command: apdu(0x00, 0xA2, 0x00, 0x01, [1]), response: secret + ok).response
                == "<16 bytes redacted> 9000")
        // A failed SELECT forgets the application.
        _ = r.redact(command: select(AID.oath), response: ok)
        _ = r.redact(command: select(AID.otp), response: [0x6A, 0x82])
        #expect(r.application == .unknown)
        // Not an APDU at all: only its length.
        #expect(r.redact(command: [1, 2], response: nil).command == "<2 bytes redacted>")
    }

    @Test func ctaphidClientPINIsRedacted() {
        let pin = CTAPRedactor.redact(
            command: CTAPHID.Command.cbor, request: [0x06] + secret, response: [0x00] + secret)
        #expect(pin.label == "CTAP2 clientPIN")
        #expect(pin.command == "06 <16 bytes redacted>")
        #expect(pin.response == "00 <16 bytes redacted>")
        let info = CTAPRedactor.redact(command: CTAPHID.Command.cbor, request: [0x04], response: [0x00, 0xA0])
        #expect(info.label == "CTAP2 getInfo")
        #expect(info.command == "04")
        let ping = CTAPRedactor.redact(command: 0x81, request: secret, response: secret)
        #expect(ping.command == "<16 bytes>")
    }

    /// The specification's names, a preview command by its command's, an unknown byte in hex.
    @Test func ctap2CommandsAreNamedAsTheSpecificationNamesThem() {
        #expect(
            CTAP2.Command.allCases.map { CTAPRedactor.name(ofCBORCommand: $0.rawValue) } == [
                "makeCredential", "getAssertion", "getInfo", "clientPIN", "reset", "getNextAssertion",
                "bioEnrollment", "credentialManagement", "selection", "largeBlobs", "config", "bioEnrollment",
                "credentialManagement",
            ])
        #expect(CTAPRedactor.name(ofCBORCommand: 0x3F) == "command 3F")
    }
}

@Suite("Trace: the file")
struct TraceFileTests {
    func temporaryPath() -> String {
        NSTemporaryDirectory() + "ykterm-trace-\(UUID().uuidString)/trace.log"
    }

    @Test func pathComesFromYKTERM_LOGOrVerbose() {
        #expect(WireTracer.path(verbose: false, environment: [:]) == nil)
        #expect(WireTracer.path(verbose: false, environment: ["YKTERM_LOG": "/tmp/t.log"]) == "/tmp/t.log")
        #expect(WireTracer.path(verbose: true, environment: ["YKTERM_LOG": "/tmp/t.log"]) == "/tmp/t.log")
        #expect(
            WireTracer.path(verbose: true, environment: ["HOME": "/home/u"]) == "/home/u/.local/state/ykterm/trace.log")
        #expect(
            WireTracer.path(verbose: true, environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/ykterm/trace.log"
        )
    }

    @Test func fileIsPrivateAndAppended() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let first = try WireTracer.open(path: path)
        first.logger.info("one")
        let dirMode =
            try FileManager.default.attributesOfItem(atPath: (path as NSString).deletingLastPathComponent)[
                .posixPermissions] as? Int
        #expect(dirMode == 0o700)
        let fileMode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(fileMode == 0o600)
        let second = try WireTracer(path: path)
        second.logger.info("two")
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasSuffix(" info ykterm.trace: one"))
        #expect(lines[1].hasSuffix(" info ykterm.trace: two"))
        #expect(lines[0].wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info .*/) != nil)
    }

    @Test func unwritablePathIsAnError() {
        #expect(throws: LogFileError.self) { try WireTracer(path: "/proc/ykterm-no/such/trace.log") }
    }

    /// A whole OATH and OTP session against the in-process virtual key, traced: no secret in any form, and
    /// the instruction headers are all there.
    @Test func sessionTraceHoldsNoSecrets() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let tracer = try WireTracer.open(path: path)
        let oathSecret = Array("12345678901234567890".utf8)
        let hmacKey: [UInt8] = Array(0x30..<0x44)
        let password = "correct horse"
        let key = VirtualKey(state: .yubiKey5NFC())
        try await tracer.run {
            let oath = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
            let data = CredentialData(
                name: "alice@example.com", issuer: "Example", type: .totp, algorithm: .sha1,
                digits: 6, period: 30, counter: 0, secret: oathSecret, touch: false)
            let credential = try await oath.put(data)
            _ = try await oath.calculate(credential, at: 59)
            let derived = await oath.deriveKey(password: password)
            try await oath.setKey(derived)
            let locked = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
            try await locked.unlock(password: password)
            _ = try await locked.calculateAll(at: 59)
            let otp = try await OTPSession.make(connection: VirtualKeyConnection(key: key))
            try await otp.programChallengeResponse(slot: 2, key: hmacKey)
            _ = try await otp.calculateHMAC(slot: 2, challenge: Array("challenge".utf8))
        }
        let trace = try String(contentsOfFile: path, encoding: .utf8)
        // The code RFC 6238 gives for this secret at t = 59 (SHA-1, 8 digits: 94287082; 6 digits: 287082).
        let forbidden = [
            oathSecret.hex, oathSecret.hex.uppercased(), Base32.encode(oathSecret), "12345678901234567890",
            hmacKey.hex, hmacKey.hex.uppercased(), password, Array(password.utf8).hex.uppercased(),
            "287082", "94287082",
        ]
        for f in forbidden {
            #expect(!trace.contains(f), "the trace holds \(f)")
        }
        for label in [
            "SELECT OATH", "OATH PUT", "OATH CALCULATE", "OATH SET CODE", "OATH VALIDATE", "OATH CALCULATE ALL",
            "SELECT OTP", "OTP CONFIG SLOT 2", "OTP CHALLENGE HMAC SLOT 2",
        ] {
            #expect(trace.contains(label), "no \(label) in the trace")
        }
        #expect(trace.contains("> 00010000 <"))
        #expect(trace.contains("[Virtual Key] > 00A40400"))
        #expect(trace.contains(" debug ykterm.trace: "))
    }

    /// Exchanges outside `run` are not traced.
    @Test func onlyTheTracedTaskIsRecorded() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let tracer = try WireTracer.open(path: path)
        let key = VirtualKey(state: .yubiKey5NFC())
        _ = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        #expect(try String(contentsOfFile: path, encoding: .utf8).isEmpty)
        try await tracer.run {
            // A child task inherits the trace.
            let task = Task { try await OATHSession.make(connection: VirtualKeyConnection(key: key)) }
            _ = try await task.value
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("SELECT OATH"))
    }
}
