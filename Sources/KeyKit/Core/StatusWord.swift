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

    /// What the status word means, as the string tables' key (`sw.<...>`) and the facts its text shows
    /// (ISO 7816-4, with the YubiKey applications' usage).
    public var meaning: (key: String, arguments: [String: String]) {
        if StatusWord.named.contains(rawValue) { return ("sw." + hexString, [:]) }
        switch sw1 {
        case 0x61: return sw2 == 0 ? ("sw.61-many", [:]) : ("sw.61", ["count": String(sw2)])
        case 0x6C: return ("sw.6C", ["count": String(sw2)])
        case 0x63 where sw2 & 0xF0 == 0xC0: return ("sw.63Cx", ["count": String(sw2 & 0x0F)])
        case 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6A:
            return ("sw." + Hex.encode([sw1], uppercase: true), [:])
        default: return ("sw.unknown", [:])
        }
    }

    /// The status words with a meaning of their own (the others have their SW1 class's).
    public static let named: Set<UInt16> = [
        0x9000, 0x9100, 0x6285, 0x6281, 0x6282, 0x6283, 0x6300, 0x6400, 0x6581, 0x6700,
        0x6881, 0x6882, 0x6883, 0x6884, 0x6982, 0x6983, 0x6984, 0x6985, 0x6986, 0x6A80,
        0x6A81, 0x6A82, 0x6A84, 0x6A86, 0x6A88, 0x6B00, 0x6D00, 0x6E00, 0x6F00,
    ]

    /// `SW=6982`
    public var description: String { "SW=" + hexString }
}
