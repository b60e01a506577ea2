/// Errors from the smart-card layer: what happened, as facts (`ErrorExplanation` words them).
public enum SmartCardError: Error, Equatable, Sendable {
    /// pcscd cannot be reached.
    case serviceUnavailable
    /// pcscd took the connection and closed it at once (pcsc-lite reports SCARD_W_SECURITY_VIOLATION): its access
    /// control (polkit) does not allow this user, or this session (one that is not at the seat).
    case accessDenied
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
    /// The reader did not answer a connect (or a probe's exchange) within `PCSCConnection.readerTimeout`: its
    /// driver or card is stuck in pcscd. The reader's name.
    case readerNotAnswering(String)
    case timeout
    case cancelled
    /// Communication with the reader failed: the PC/SC function and its status.
    case communication(function: String, code: UInt32)
    /// Any other PC/SC status, with the function that returned it.
    case pcsc(code: UInt32, function: String)
    /// A command APDU that cannot be built.
    case invalidAPDU(APDUProblem)
    /// The card answered something that cannot be parsed.
    case malformedResponse(Malformation)
    /// The card answered with a non-success status word.
    case status(StatusWord)
    /// A fetch of the rest of an answer (`after`: "SEND REMAINING", "GET RESPONSE") was answered 61xx
    /// again with no data: the key announced more but sent none, so the exchange was ended.
    case emptyResponsePart(StatusWord, after: String)
    /// SELECT of an application failed: the key does not have it, or has it disabled.
    case applicationNotAvailable(String)
    /// The firmware (this version) is older than READ CONFIG, which device information needs.
    case deviceInfoNeedsFirmware(Version)
    /// The connection was closed.
    case closed

    /// True for errors that mean the key went away.
    public var isKeyGone: Bool {
        switch self {
        case .cardRemoved, .noCard, .unknownReader, .unresponsive, .communication: return true
        default: return false
        }
    }
}
