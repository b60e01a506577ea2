/// Errors from the smart-card layer. Each says what happened and what to do next.
public enum SmartCardError: Error, Equatable, Sendable, CustomStringConvertible {
    /// pcscd cannot be reached.
    case serviceUnavailable
    /// No smart-card reader is attached (or pcscd sees none).
    case noReaders
    /// The named reader does not exist (any more).
    case unknownReader(String)
    /// The reader has no card (key) in it.
    case noCard(String)
    /// The card was removed or reset during the operation.
    case cardRemoved
    /// Another program holds the card exclusively.
    case sharingViolation(String)
    /// The card does not answer.
    case unresponsive
    case timeout
    case cancelled
    /// Communication with the reader failed.
    case communication(String)
    /// Any other PC/SC status, with the function that returned it.
    case pcsc(code: UInt32, function: String)
    /// A command APDU that cannot be built.
    case invalidAPDU(String)
    /// The card answered something that cannot be parsed.
    case malformedResponse(String)
    /// The card answered with a non-success status word.
    case status(StatusWord)
    /// A fetch of the rest of an answer (`after`: "SEND REMAINING", "GET RESPONSE") was answered 61xx
    /// again with no data: the key announced more but sent none, so the exchange was ended.
    case emptyResponsePart(StatusWord, after: String)
    /// SELECT of an application failed: the key does not have it, or has it disabled.
    case applicationNotAvailable(String)
    /// The connection was closed.
    case closed

    public var description: String {
        switch self {
        case .serviceUnavailable:
            return "pcscd is not reachable: install and start it (apt-get install pcscd; systemctl start pcscd.socket)"
        case .noReaders:
            return "no smart-card reader found: insert a key, or check that pcscd sees it (ykterm doctor)"
        case .unknownReader(let r):
            return "reader \"\(r)\" is not there any more: was the key removed?"
        case .noCard(let r):
            return "no key in reader \"\(r)\": insert the key or place it on the reader"
        case .cardRemoved:
            return "the key was removed or reset during the operation: insert it again and retry"
        case .sharingViolation(let r):
            return "another program holds the key in \"\(r)\" exclusively (often gpg's scdaemon): "
                + "run `gpgconf --kill scdaemon`, or close that program, and retry"
        case .unresponsive:
            return "the key does not answer: remove it, insert it again and retry"
        case .timeout:
            return "the key did not answer in time: check its connection and retry"
        case .cancelled:
            return "cancelled"
        case .communication(let what):
            return "communication with the reader failed (\(what)): re-insert the key and retry"
        case .pcsc(let code, let function):
            return "\(function) failed with PC/SC error 0x\(String(code, radix: 16, uppercase: true)): "
                + "see `ykterm doctor`"
        case .invalidAPDU(let why):
            return "invalid command APDU: \(why)"
        case .malformedResponse(let why):
            return "the key answered something unexpected (\(why)): it may not be a supported key"
        case .status(let sw):
            return "the key refused the command: \(sw)"
        case .emptyResponsePart(let sw, let fetch):
            return "the exchange broke off: the key announced more data but sent none (\(sw.hexString) with no data "
                + "after \(fetch)); retry, and if it happens again run with --verbose and report the trace"
        case .applicationNotAvailable(let name):
            return "the key has no \(name) application, or it is disabled"
        case .closed:
            return "the connection to the key is closed"
        }
    }

    /// True for errors that mean the key went away.
    public var isKeyGone: Bool {
        switch self {
        case .cardRemoved, .noCard, .unknownReader, .unresponsive, .communication: return true
        default: return false
        }
    }
}
