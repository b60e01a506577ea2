import FoundationEssentials
import Glibc
import KeyKit
import Synchronization

/// A fault the served virtual key injects, for tests of how clients survive a misbehaving key:
/// `ACTION@TRIGGER`, e.g. `remove-before@ins=05`, `status=6A80@ins=01`, `hang@ins=A4`,
/// `remove-before@ctap=06.04` (CTAP command 06, clientPIN, subcommand 04, changePIN).
public struct FaultRule: Sendable, Equatable, CustomStringConvertible {
    public enum Action: Sendable, Equatable {
        /// The card is pulled out before the command is carried out (the reader sees no card for a while).
        case removeBefore
        /// The command is carried out, then the card is pulled out before it answers.
        case removeAfter
        /// The answer's data is cut in half (the status word kept).
        case truncate
        /// The answer's data is replaced by random bytes of the same length (with 9000).
        case garbage
        /// The command is refused with this status word, not carried out.
        case status(UInt16)
        /// No answer at all, until the client gives up or the key is stopped.
        case hang
        /// A CTAP message over PC/SC answered "still processing" (SW 9100) forever: every NFCCTAP_GETRESPONSE
        /// gets another keep-alive, until the client cancels (then CTAP2_ERR_KEEPALIVE_CANCEL).
        case keepalive
        /// The answer to a cancel while keeping alive (not a rule of its own).
        case keepaliveCancelled
    }

    public enum Trigger: Sendable, Equatable {
        /// The first command APDU with this instruction byte (and P1, when given); SELECT never triggers.
        case ins(UInt8, p1: UInt8?)
        /// The first CTAP message over PC/SC (NFCCTAP_MSG) with this command byte and, when given, this
        /// subCommand (map key 2).
        case ctap(UInt8, UInt8?)
        /// The n-th command APDU (1 = the first).
        case nth(Int)
    }

    public var action: Action
    public var trigger: Trigger
    public let description: String

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case invalid(String)
        public var description: String {
            switch self {
            case .invalid(let text):
                return "invalid fault \"\(text)\": use ACTION@TRIGGER with ACTION remove-before, remove-after, "
                    + "truncate, garbage, status=XXXX, hang or keepalive, and TRIGGER ins=XX[.P1], ctap=XX[.YY] or nth=N"
            }
        }
    }

    public init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: "@", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw .invalid(text) }
        switch parts[0] {
        case "remove-before": action = .removeBefore
        case "remove-after": action = .removeAfter
        case "truncate": action = .truncate
        case "garbage": action = .garbage
        case "hang": action = .hang
        case "keepalive": action = .keepalive
        case let a where a.hasPrefix("status="):
            guard let sw = UInt16(a.dropFirst(7), radix: 16), a.count == 11 else { throw .invalid(text) }
            action = .status(sw)
        default: throw .invalid(text)
        }
        let t = parts[1]
        if t.hasPrefix("ins=") {
            let fields = t.dropFirst(4).split(separator: ".").map { UInt8($0, radix: 16) }
            guard (1...2).contains(fields.count), let ins = fields[0] else { throw .invalid(text) }
            if fields.count == 2 {
                guard let p1 = fields[1] else { throw .invalid(text) }
                trigger = .ins(ins, p1: p1)
            } else {
                trigger = .ins(ins, p1: nil)
            }
        } else if t.hasPrefix("nth="), let n = Int(t.dropFirst(4)), n > 0 {
            trigger = .nth(n)
        } else if t.hasPrefix("ctap=") {
            let fields = t.dropFirst(5).split(separator: ".").map { UInt8($0, radix: 16) }
            guard (1...2).contains(fields.count), let command = fields[0] else { throw .invalid(text) }
            if fields.count == 2 {
                guard let sub = fields[1] else { throw .invalid(text) }
                trigger = .ctap(command, sub)
            } else {
                trigger = .ctap(command, nil)
            }
        } else {
            throw .invalid(text)
        }
        description = text
    }

    /// Whether `command` (the `index`-th APDU, from 1) sets this rule off.
    func matches(_ command: [UInt8], index: Int) -> Bool {
        guard command.count >= 4 else { return false }
        let ins = command[1]
        switch trigger {
        case .nth(let n):
            return index == n
        case .ins(let wanted, let p1):
            let select = ins == 0xA4 && command[2] == 0x04 && command[0] & 0x80 == 0
            return ins == wanted && !select && (p1 == nil || command[2] == p1)
        case .ctap(let wanted, let sub):
            // NFCCTAP_MSG: CLA 80, INS 10; the data is the CTAP command byte and its CBOR map.
            guard ins == 0x10, let data = try? APDU(parsing: command).data, data.first == wanted else { return false }
            guard let sub else { return true }
            guard case .map(let map)? = try? CBOR.decode(Array(data.dropFirst())),
                case .unsigned(let value)? = map[.unsigned(2)]
            else { return false }
            return value == UInt64(sub)
        }
    }
}

/// Applies fault rules to the commands a served key receives; each rule fires once.
public final class FaultInjector: Sendable {
    private let state: Mutex<(rules: [FaultRule], count: Int, keepingAlive: FaultRule?)>

    public init(_ rules: [FaultRule]) {
        state = Mutex((rules, 0, nil))
    }

    /// The action for the next command, if a rule fires for it (the rule is then used up).
    public func action(for command: [UInt8]) -> (FaultRule.Action, FaultRule)? {
        state.withLock { s in
            s.count += 1
            // A keep-alive fault goes on for every poll (NFCCTAP_GETRESPONSE, 80 11) until a cancel (P1 11).
            if let rule = s.keepingAlive, command.count >= 4, command[0] == 0x80, command[1] == 0x11 {
                if command[2] == 0x11 {
                    s.keepingAlive = nil
                    return (.keepaliveCancelled, rule)
                }
                return (.keepalive, rule)
            }
            guard let i = s.rules.firstIndex(where: { $0.matches(command, index: s.count) }) else { return nil }
            let rule = s.rules.remove(at: i)
            if rule.action == .keepalive { s.keepingAlive = rule }
            return (rule.action, rule)
        }
    }
}
