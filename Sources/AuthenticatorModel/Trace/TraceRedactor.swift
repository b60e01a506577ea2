import KeyKit

/// One exchange as the trace file shows it: hex with the secret parts replaced by `<N bytes redacted>`,
/// and a name for the command when it is a known one ("OATH PUT", "CTAP2 clientPIN").
public struct RedactedExchange: Sendable, Equatable {
    /// The command: hex, or hex of the header followed by `<N bytes redacted>`.
    public var command: String
    /// The response: data (hex or `<N bytes redacted>`) then the status word; nil when there was none.
    public var response: String?
    /// What the command is, when known.
    public var label: String?

    public init(command: String, response: String?, label: String?) {
        self.command = command
        self.response = response
        self.label = label
    }
}

/// Redacts the secrets in a connection's APDUs before they are traced.
///
/// The meaning of an instruction depends on the application selected, so the redactor follows the
/// SELECT commands it sees; it keeps one state per connection (a card keeps its selected application
/// across exchanges). It also follows the parts of one logical command: an ISO chain (CLA bit 0x10) is
/// judged by its first part, and the parts of an answer fetched later (61xx then GET RESPONSE, OATH SEND
/// REMAINING, or NFCCTAP GETRESPONSE while a FIDO key answers 9100) by the command they answer.
///
/// What is redacted:
/// - OATH: the data of PUT (01), SET CODE (03) and VALIDATE (A3); the answers of VALIDATE, CALCULATE (A2)
///   and CALCULATE ALL (A4) — codes are secrets while they are valid.
/// - OTP: the data of every write (INS 01: slot configurations P1 01/03/04/05, and the other writes,
///   which end with the access code), except challenge-response (P1 20/28/30/38), whose answers are
///   redacted instead.
/// - FIDO over PC/SC: NFCCTAP_MSG carrying clientPIN (CTAP2 command 06): everything after the command
///   byte, and the answer after its status byte. U2F carries nothing secret.
/// - Management: the data of WRITE CONFIG (1C), which may carry a lock code.
/// - NDEF: the answers of READ BINARY (B0), which carry a fresh one-time password.
/// - PIV: the data of VERIFY, CHANGE REFERENCE and RESET RETRY COUNTER (PIN, PUK), SET MANAGEMENT KEY and
///   IMPORT KEY (keys); GENERAL AUTHENTICATE's answers (a decrypted message, a shared secret, the management
///   key's challenge) and, for the management key (9B), its data too; GET DATA's answer and PUT DATA's data
///   of the printed information object (5FC109), where a PIN-protected management key is kept.
/// - OpenPGP: the data of VERIFY, CHANGE REFERENCE DATA and RESET RETRY COUNTER (PIN, reset code, admin PIN),
///   of PUT DATA of the reset code (D3) and of key import (PUT DATA DB); the answers of PSO:DECIPHER (a session
///   key, a shared secret).
/// - Any application: ISO VERIFY (20), CHANGE REFERENCE DATA (24) and RESET RETRY COUNTER (2C) data (PINs).
/// - No application known (no SELECT seen on this connection): the data of INS 01, 03, A3, 1C and the
///   answers of A2 and A4, as if it might be OATH, OTP or Management.
public struct APDURedactor: Sendable {
    /// The application a connection has selected, as far as the redactor has seen.
    public enum Application: Sendable, Equatable {
        case unknown, oath, otp, fido, management, ndef, piv, openpgp, other
    }

    public private(set) var application: Application = .unknown

    /// The decision for the command whose answer is being fetched in parts (61xx, 9100).
    private var pendingAnswer: Decision?
    /// The decision for an ISO command chain in progress.
    private var chain: Decision?

    private struct Decision {
        var label: String?
        /// Bytes of the command data shown before the redaction (the CTAP command byte), or nil: data shown.
        var commandKeep: Int?
        /// Bytes of the answer data shown before the redaction (the CTAP status byte), or nil: answer shown.
        var responseKeep: Int?
        /// True for a fetch of the rest of an answer (GET RESPONSE, SEND REMAINING).
        var isFetch = false
        /// For a fetch: the label of the command whose answer it fetches (nil when that one has none), so
        /// that every later fetch names that command, not the fetch before it.
        var answerOf: String?

        /// The command a further fetch belongs to: the one this fetch belongs to, or this command itself.
        var owner: String? { isFetch ? answerOf : label }
    }

    public init() {}

    /// Redacts one exchange: `command` as sent, `response` as received (data and SW1 SW2), or nil when the
    /// exchange failed.
    public mutating func redact(command: [UInt8], response: [UInt8]?) -> RedactedExchange {
        guard command.count >= 4 else {
            // Not an APDU; nothing the protocol layer would send. Show only its length.
            return RedactedExchange(
                command: "<\(command.count) bytes redacted>",
                response: response.map { APDURedactor.formatResponse($0, keep: 0) }, label: nil)
        }
        let apdu = try? APDU(parsing: command)
        let decision = decide(command, apdu: apdu)
        let shownCommand = APDURedactor.formatCommand(command, apdu: apdu, keep: decision.commandKeep)
        let shownResponse = response.map { APDURedactor.formatResponse($0, keep: decision.responseKeep) }

        // Follow the chains and the SELECTs for the next exchanges.
        if command[0] & 0x10 != 0, command[0] != 0xFF {
            chain = decision
        } else {
            chain = nil
        }
        if let response, response.count >= 2 {
            let sw1 = response[response.count - 2], sw2 = response[response.count - 1]
            let moreComing =
                sw1 == 0x61
                || (application == .fido && StatusWord(sw1: sw1, sw2: sw2) == NFCCTAP.statusUpdate)
            pendingAnswer = moreComing ? decision : nil
            if APDURedactor.isSelect(command), let apdu {
                application = sw1 == 0x90 && sw2 == 0x00 ? APDURedactor.application(for: apdu.data) : .unknown
            }
        } else {
            pendingAnswer = nil
            if APDURedactor.isSelect(command) { application = .unknown }
        }
        return RedactedExchange(command: shownCommand, response: shownResponse, label: decision.label)
    }

    // MARK: Rules

    private func decide(_ bytes: [UInt8], apdu: APDU?) -> Decision {
        let cla = bytes[0], ins = bytes[1], p1 = bytes[2]
        if var chain {
            // A later part of a chained command: its data is all payload, none of it a command byte.
            chain.commandKeep = chain.commandKeep.map { _ in 0 }
            return chain
        }
        if APDURedactor.isSelect(bytes) {
            let name = apdu.map { APDURedactor.name(of: APDURedactor.application(for: $0.data)) } ?? nil
            return Decision(label: "SELECT" + (name.map { " " + $0 } ?? ""))
        }
        // The rest of an answer: judged by the command it belongs to.
        let getResponse = SmartCardProtocol.getResponse
        let continuation: [UInt8] =
            application == .oath
            ? [getResponse, YKOATH.Ins.sendRemaining]
            : application == .fido ? [getResponse, NFCCTAP.Instruction.getResponse] : [getResponse]
        if continuation.contains(ins), let pending = pendingAnswer {
            // One level only, whatever the round: every fetch is labelled with the command it answers.
            let name: String =
                ins == getResponse
                ? "GET RESPONSE"
                : application == .oath ? "SEND REMAINING" : "NFCCTAP GETRESPONSE"
            let owner = pending.owner
            return Decision(
                label: name + (owner.map { " (\($0))" } ?? ""), commandKeep: nil,
                responseKeep: pending.responseKeep, isFetch: true, answerOf: owner)
        }
        if application == .piv { return APDURedactor.piv(ins: ins, p2: bytes[3], data: apdu?.data) }
        if application == .openpgp { return APDURedactor.openpgp(ins: ins, p1: p1, p2: bytes[3]) }
        if cla & 0x80 == 0, [0x20, 0x24, 0x2C].contains(ins), application != .fido, application != .oath,
            application != .otp
        {
            let names: [UInt8: String] = [0x20: "VERIFY", 0x24: "CHANGE REFERENCE DATA", 0x2C: "RESET RETRY COUNTER"]
            return Decision(label: names[ins], commandKeep: 0)
        }
        switch application {
        case .oath:
            return APDURedactor.oath(ins: ins, p1: p1)
        case .otp:
            return APDURedactor.otp(ins: ins, p1: p1)
        case .fido:
            return APDURedactor.fido(cla: cla, ins: ins, data: apdu?.data)
        case .management:
            return ins == ManagementSession.Ins.writeConfig
                ? Decision(label: "MANAGEMENT WRITE CONFIG", commandKeep: 0)
                : Decision(label: ins == ManagementSession.Ins.readConfig ? "MANAGEMENT READ CONFIG" : nil)
        case .ndef:
            return ins == 0xB0 ? Decision(label: "NDEF READ BINARY", responseKeep: 0) : Decision(label: nil)
        case .other, .piv, .openpgp:
            return Decision(label: nil)
        case .unknown:
            switch ins {
            // OTP's writes are INS 01 (PUT's) too.
            case YKOATH.Ins.put, YKOATH.Ins.setCode, YKOATH.Ins.validate, ManagementSession.Ins.writeConfig:
                return Decision(label: nil, commandKeep: 0)
            case YKOATH.Ins.calculate, YKOATH.Ins.calculateAll: return Decision(label: nil, responseKeep: 0)
            case NFCCTAP.Instruction.msg where cla & 0x80 != 0:
                return APDURedactor.fido(cla: cla, ins: ins, data: apdu?.data)
            default: return Decision(label: nil)
            }
        }
    }

    private static func oath(ins: UInt8, p1: UInt8) -> Decision {
        typealias Ins = YKOATH.Ins
        switch ins {
        case Ins.put: return Decision(label: "OATH PUT", commandKeep: 0)
        case Ins.delete: return Decision(label: "OATH DELETE")
        case Ins.setCode: return Decision(label: "OATH SET CODE", commandKeep: 0)
        case Ins.reset: return Decision(label: "OATH RESET")
        case Ins.rename: return Decision(label: "OATH RENAME")
        case Ins.list: return Decision(label: "OATH LIST")
        case Ins.calculate: return Decision(label: "OATH CALCULATE", responseKeep: 0)
        case Ins.validate: return Decision(label: "OATH VALIDATE", commandKeep: 0, responseKeep: 0)
        case Ins.calculateAll: return Decision(label: "OATH CALCULATE ALL", responseKeep: 0)
        default: return Decision(label: nil)
        }
    }

    private static func otp(ins: UInt8, p1: UInt8) -> Decision {
        typealias Command = OTPSession.Command
        guard ins == OTPSession.Ins.config else {
            return Decision(label: ins == OTPSession.Ins.status ? "OTP STATUS" : nil)
        }
        switch p1 {
        case Command.config1, Command.config2:
            return Decision(label: "OTP CONFIG SLOT \(p1 == Command.config1 ? 1 : 2)", commandKeep: 0)
        case Command.update1, Command.update2:
            return Decision(label: "OTP UPDATE SLOT \(p1 == Command.update1 ? 1 : 2)", commandKeep: 0)
        case Command.challengeOTP1, Command.challengeOTP2, Command.challengeHMAC1, Command.challengeHMAC2:
            let kind = p1 == Command.challengeHMAC1 || p1 == Command.challengeHMAC2 ? "HMAC" : "OTP"
            let slot = p1 == Command.challengeOTP1 || p1 == Command.challengeHMAC1 ? 1 : 2
            return Decision(label: "OTP CHALLENGE \(kind) SLOT \(slot)", responseKeep: 0)
        case Command.deviceSerial:
            return Decision(label: "OTP READ SERIAL")
        default:
            // Other writes (NDEF, swap, device configuration, scan map) end with the access code.
            return Decision(label: "OTP WRITE " + hex([p1]), commandKeep: 0)
        }
    }

    private static func fido(cla: UInt8, ins: UInt8, data: [UInt8]?) -> Decision {
        switch ins {
        case NFCCTAP.Instruction.msg where cla & 0x80 != 0:
            guard let command = data?.first else { return Decision(label: "NFCCTAP_MSG") }
            let name = "NFCCTAP_MSG " + CTAPRedactor.name(ofCBORCommand: command)
            return command == CTAPRedactor.clientPIN
                ? Decision(label: name, commandKeep: 1, responseKeep: 1)
                : Decision(label: name)
        case 0x12 where cla & 0x80 != 0:
            return Decision(label: "NFCCTAP_CANCEL")
        case U2F.Instruction.register where cla & 0x80 == 0: return Decision(label: "U2F REGISTER")
        case U2F.Instruction.authenticate where cla & 0x80 == 0: return Decision(label: "U2F AUTHENTICATE")
        case U2F.Instruction.version where cla & 0x80 == 0: return Decision(label: "U2F VERSION")
        default: return Decision(label: nil)
        }
    }

    private static func openpgp(ins: UInt8, p1: UInt8, p2: UInt8) -> Decision {
        typealias Ins = OpenPGP.Ins
        let p1p2 = UInt16(p1) << 8 | UInt16(p2)
        switch ins {
        case Ins.verify: return Decision(label: "OPENPGP VERIFY", commandKeep: 0)
        case Ins.changeReference: return Decision(label: "OPENPGP CHANGE REFERENCE DATA", commandKeep: 0)
        case Ins.resetRetryCounter: return Decision(label: "OPENPGP RESET RETRY COUNTER", commandKeep: 0)
        case Ins.putData:
            return Decision(
                label: "OPENPGP PUT DATA", commandKeep: p1p2 == UInt16(OpenPGP.DO.resettingCode) ? 0 : nil)
        case Ins.putDataOdd: return Decision(label: "OPENPGP IMPORT KEY", commandKeep: 0)
        case Ins.getData: return Decision(label: "OPENPGP GET DATA")
        case Ins.performSecurityOperation:
            return p1p2 == OpenPGP.decipher
                ? Decision(label: "OPENPGP DECIPHER", responseKeep: 0)
                : Decision(label: "OPENPGP PSO")
        default: return Decision(label: nil)
        }
    }

    private static func piv(ins: UInt8, p2: UInt8, data: [UInt8]?) -> Decision {
        typealias Ins = PIV.Ins
        // GET DATA names the object in its data (5C 03 ...), PUT DATA starts with it.
        let protected = (data ?? []).starts(
            with: [0x5C, UInt8(PIV.ObjectID.printedInformation.count)]
                + PIV.ObjectID.printedInformation)
        switch ins {
        case Ins.verify: return Decision(label: "PIV VERIFY", commandKeep: 0)
        case Ins.changeReference: return Decision(label: "PIV CHANGE REFERENCE", commandKeep: 0)
        case Ins.resetRetryCounter: return Decision(label: "PIV RESET RETRY COUNTER", commandKeep: 0)
        case Ins.setManagementKey: return Decision(label: "PIV SET MANAGEMENT KEY", commandKeep: 0)
        case Ins.importKey: return Decision(label: "PIV IMPORT KEY", commandKeep: 0)
        case Ins.authenticate:
            return Decision(
                label: "PIV GENERAL AUTHENTICATE", commandKeep: p2 == PIV.Reference.managementKey ? 0 : nil,
                responseKeep: 0)
        case Ins.getData: return Decision(label: "PIV GET DATA", responseKeep: protected ? 0 : nil)
        case Ins.putData: return Decision(label: "PIV PUT DATA", commandKeep: protected ? 0 : nil)
        case Ins.generateAsymmetric: return Decision(label: "PIV GENERATE ASYMMETRIC")
        case Ins.getMetadata: return Decision(label: "PIV GET METADATA")
        case Ins.getSerial: return Decision(label: "PIV GET SERIAL")
        case Ins.getVersion: return Decision(label: "PIV GET VERSION")
        case Ins.attest: return Decision(label: "PIV ATTEST")
        case Ins.moveKey: return Decision(label: "PIV MOVE KEY")
        case Ins.setPINRetries: return Decision(label: "PIV SET PIN RETRIES")
        case Ins.reset: return Decision(label: "PIV RESET")
        default: return Decision(label: nil)
        }
    }

    static func isSelect(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && bytes[0] & 0x80 == 0 && bytes[1] == 0xA4 && bytes[2] == 0x04
    }

    static func application(for aid: [UInt8]) -> Application {
        let known: [([UInt8], Application)] = [
            (AID.oath, .oath), (AID.otp, .otp), (AID.fido, .fido), (AID.management, .management), (AID.ndef, .ndef),
            (AID.piv, .piv), (AID.openpgp, .openpgp),
        ]
        for (prefix, app) in known where aid.count >= 5 && (aid.starts(with: prefix) || prefix.starts(with: aid)) {
            return app
        }
        return .other
    }

    static func name(of application: Application) -> String? {
        switch application {
        case .oath: return "OATH"
        case .otp: return "OTP"
        case .fido: return "FIDO"
        case .management: return "Management"
        case .ndef: return "NDEF"
        case .piv: return "PIV"
        case .openpgp: return "OpenPGP"
        case .other, .unknown: return nil
        }
    }

    // MARK: Formatting

    /// The command in hex; with `keep`, only the header and the first `keep` data bytes, then the count
    /// of redacted bytes (the length fields are left out, they would tell nothing more).
    static func formatCommand(_ bytes: [UInt8], apdu: APDU?, keep: Int?) -> String {
        guard let keep else { return hex(bytes) }
        let header = hex(Array(bytes.prefix(4)))
        guard let apdu else {
            // Unparsable: redact everything after the header.
            return bytes.count > 4 ? header + " <\(bytes.count - 4) bytes redacted>" : header
        }
        let data = apdu.data
        guard data.count > keep else { return header + (data.isEmpty ? "" : " " + hex(data)) }
        let shown = keep > 0 ? " " + hex(Array(data.prefix(keep))) : ""
        return header + shown + " <\(data.count - keep) bytes redacted>"
    }

    /// Response data (hex, or with `keep` the first `keep` bytes and the count redacted), then the SW.
    static func formatResponse(_ bytes: [UInt8], keep: Int?) -> String {
        guard bytes.count >= 2 else { return bytes.isEmpty ? "(empty)" : "<\(bytes.count) bytes redacted>" }
        let data = Array(bytes.dropLast(2))
        let sw = hex(Array(bytes.suffix(2)))
        if data.isEmpty { return sw }
        guard let keep, data.count > keep else { return hex(data) + " " + sw }
        let shown = keep > 0 ? hex(Array(data.prefix(keep))) + " " : ""
        return shown + "<\(data.count - keep) bytes redacted> " + sw
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.hex.uppercased()
    }
}

/// Redacts CTAPHID messages (FIDO over USB HID). Stateless: each CTAP2 request names its command in its
/// first byte. clientPIN (06) requests are redacted after the command byte and their answers after the
/// status byte; everything else is shown, U2F included.
public enum CTAPRedactor {
    static let clientPIN = CTAP2.Command.clientPIN.rawValue

    public static func redact(command: UInt8, request: [UInt8], response: [UInt8]?) -> RedactedExchange {
        switch command {
        case CTAPHID.Command.cbor:
            guard let ctap = request.first else {
                return RedactedExchange(command: "", response: response.map { APDURedactor.hex($0) }, label: "CTAP2")
            }
            let label = "CTAP2 " + name(ofCBORCommand: ctap)
            guard ctap == clientPIN else {
                return RedactedExchange(
                    command: APDURedactor.hex(request), response: response.map { APDURedactor.hex($0) },
                    label: label)
            }
            return RedactedExchange(command: keepOne(request), response: response.map(keepOne), label: label)
        case CTAPHID.Command.msg:
            let names: [UInt8: String] = [
                U2F.Instruction.register: "U2F REGISTER",
                U2F.Instruction.authenticate: "U2F AUTHENTICATE",
                U2F.Instruction.version: "U2F VERSION",
            ]
            return RedactedExchange(
                command: APDURedactor.hex(request),
                response: response.map { APDURedactor.formatResponse($0, keep: nil) },
                label: request.count > 1 ? names[request[1]] : nil)
        default:
            // PING, WINK and the like carry no secrets, but nothing here needs their payload either.
            return RedactedExchange(
                command: "<\(request.count) bytes>", response: response.map { "<\($0.count) bytes>" },
                label: "CTAPHID " + APDURedactor.hex([command]))
        }
    }

    /// The first byte (CTAP command or status) in hex, then how many bytes were redacted.
    private static func keepOne(_ bytes: [UInt8]) -> String {
        guard let first = bytes.first else { return "" }
        let head = APDURedactor.hex([first])
        return bytes.count > 1 ? head + " <\(bytes.count - 1) bytes redacted>" : head
    }

    /// A command's name as CTAP 2.1 (section 6) writes it, without "authenticator": the case's name; a
    /// preview command has its command's name; an unknown byte is shown in hex.
    public static func name(ofCBORCommand command: UInt8) -> String {
        switch CTAP2.Command(rawValue: command) {
        case nil: return "command " + APDURedactor.hex([command])
        case .bioEnrollmentPreview: return "\(CTAP2.Command.bioEnrollment)"
        case .credentialManagementPreview: return "\(CTAP2.Command.credentialManagement)"
        case let known?: return "\(known)"
        }
    }
}
