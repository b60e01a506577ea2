/// An ISO 7816-4 status word (SW1 SW2). The raw value is always kept, so unknown words are shown as they are.
public struct StatusWord: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(sw1: UInt8, sw2: UInt8) { self.rawValue = UInt16(sw1) << 8 | UInt16(sw2) }

    public var sw1: UInt8 { UInt8(rawValue >> 8) }
    public var sw2: UInt8 { UInt8(rawValue & 0xFF) }

    public static let ok = StatusWord(rawValue: 0x9000)
    public static let noInputData = StatusWord(rawValue: 0x6285)
    public static let verifyFailNoRetry = StatusWord(rawValue: 0x63C0)
    public static let memoryFailure = StatusWord(rawValue: 0x6581)
    public static let wrongLength = StatusWord(rawValue: 0x6700)
    public static let securityConditionNotSatisfied = StatusWord(rawValue: 0x6982)
    public static let authMethodBlocked = StatusWord(rawValue: 0x6983)
    public static let dataInvalid = StatusWord(rawValue: 0x6984)
    public static let conditionsNotSatisfied = StatusWord(rawValue: 0x6985)
    public static let commandNotAllowed = StatusWord(rawValue: 0x6986)
    public static let incorrectParameters = StatusWord(rawValue: 0x6A80)
    public static let functionNotSupported = StatusWord(rawValue: 0x6A81)
    public static let fileNotFound = StatusWord(rawValue: 0x6A82)
    public static let noSpace = StatusWord(rawValue: 0x6A84)
    public static let referencedDataNotFound = StatusWord(rawValue: 0x6A88)
    public static let wrongP1P2 = StatusWord(rawValue: 0x6B00)
    public static let invalidInstruction = StatusWord(rawValue: 0x6D00)
    public static let classNotSupported = StatusWord(rawValue: 0x6E00)
    public static let commandAborted = StatusWord(rawValue: 0x6F00)

    public var isSuccess: Bool { rawValue == 0x9000 }

    /// SW1 = 0x61: more data waits; SW2 says how much (0 = 256 or more).
    public var isMoreDataAvailable: Bool { sw1 == 0x61 }

    /// SW1 = 0x6C: wrong Le; SW2 is the exact length to ask for.
    public var isWrongLe: Bool { sw1 == 0x6C }

    /// Retry counter in 63Cx answers (VERIFY failures), if any.
    public var retriesLeft: Int? { (rawValue & 0xFFF0) == 0x63C0 ? Int(rawValue & 0x0F) : nil }

    /// Four upper-case hex digits, as the console prints them.
    public var hexString: String { Hex.encode([sw1, sw2], uppercase: true) }

    /// The meaning in plain words (ISO 7816-4, with the YubiKey applications' usage).
    public var meaning: String {
        switch rawValue {
        case 0x9000: return "success"
        case 0x9100: return "CTAP keep-alive: still processing"
        case 0x6285: return "no input data available"
        case 0x6281: return "part of returned data may be corrupted"
        case 0x6282: return "end of file reached before reading Le bytes"
        case 0x6283: return "selected file invalidated"
        case 0x6300: return "verification failed"
        case 0x6400: return "execution error, state of non-volatile memory unchanged"
        case 0x6581: return "memory failure"
        case 0x6700: return "wrong length"
        case 0x6881: return "logical channel not supported"
        case 0x6882: return "secure messaging not supported"
        case 0x6883: return "last command of the chain expected"
        case 0x6884: return "command chaining not supported"
        case 0x6982: return "security status not satisfied"
        case 0x6983: return "authentication method blocked"
        case 0x6984: return "reference data not usable"
        case 0x6985: return "conditions of use not satisfied"
        case 0x6986: return "command not allowed"
        case 0x6A80: return "incorrect parameters in the data field"
        case 0x6A81: return "function not supported"
        case 0x6A82: return "file or application not found"
        case 0x6A84: return "not enough memory space"
        case 0x6A86: return "incorrect parameters P1-P2"
        case 0x6A88: return "referenced data not found"
        case 0x6B00: return "wrong parameters P1-P2"
        case 0x6D00: return "instruction not supported"
        case 0x6E00: return "class not supported"
        case 0x6F00: return "no precise diagnosis"
        default: break
        }
        switch sw1 {
        case 0x61: return sw2 == 0 ? "more data available (256 bytes or more)" : "\(sw2) more bytes available"
        case 0x6C: return "wrong Le: exact length is \(sw2)"
        case 0x63 where sw2 & 0xF0 == 0xC0: return "verification failed, \(sw2 & 0x0F) retries left"
        case 0x62: return "warning, state of non-volatile memory unchanged"
        case 0x63: return "warning, state of non-volatile memory changed"
        case 0x64: return "execution error, state of non-volatile memory unchanged"
        case 0x65: return "execution error, state of non-volatile memory changed"
        case 0x66: return "security-related issue"
        case 0x67: return "wrong length"
        case 0x68: return "functions in CLA not supported"
        case 0x69: return "command not allowed"
        case 0x6A: return "wrong parameters"
        default: return "unknown status"
        }
    }

    /// `SW=6982 (security status not satisfied)`
    public var description: String { "SW=\(hexString) (\(meaning))" }
}
