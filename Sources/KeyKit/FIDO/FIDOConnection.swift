/// Progress while a FIDO command runs.
public enum FIDOProgress: Sendable, Equatable {
    /// The key is working on the command.
    case processing
    /// The key waits for a touch.
    case waitingForUserPresence
}

/// A connection that carries CTAP messages (CTAPHID over HID, or NFCCTAP over PC/SC).
///
/// Implementations move whole messages; the CTAP2 and U2F sessions above build and parse them.
public protocol FIDOConnection: AnyObject, Sendable {
    /// A name for the connection (the HID path, or the reader name).
    var name: String { get }
    /// Sends a CTAP2 CBOR request (command byte + CBOR) and returns the response (status byte + CBOR).
    /// `progress` is told when the key starts waiting for a touch (and when it goes back to work).
    func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8]
    /// Sends a U2F/CTAP1 APDU (raw bytes) and returns the raw response (data + SW).
    func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8]
    /// Asks the key to stop waiting (CTAPHID_CANCEL); no-op where unsupported.
    func cancel() async
    /// `cancel()` for a caller that cannot wait for a task (a signal's watch on another thread): the request
    /// in progress is asked to stop, and the thread that makes it sends the cancel.
    func requestCancel()
    /// Closes the connection; later sends fail with `FIDOTransportError.closed`.
    func close() async
    /// Whether the key said, when the connection opened, that it speaks CTAP2 (CTAPHID_INIT's CBOR
    /// capability); nil where the transport does not say (then only a CTAP2 request tells).
    var announcesCTAP2: Bool? { get }
}

extension FIDOConnection {
    public var announcesCTAP2: Bool? { nil }

    public func requestCancel() {
        Task { await cancel() }
    }

    /// `sendCBOR` without progress reports.
    public func sendCBOR(_ request: [UInt8]) async throws -> [UInt8] {
        try await sendCBOR(request, progress: nil)
    }
}

/// Errors of the FIDO transports (framing and channel trouble, not CTAP2 status codes, which are
/// `CTAPError`). Each says what happened and what to do next.
public enum FIDOTransportError: Error, Equatable, Sendable {
    /// The key did not answer in time.
    case timeout
    /// The key stayed busy with another program's request.
    case channelBusy
    /// Packets of a message arrived out of order.
    case invalidSequence
    /// A message is longer than the transport allows, or its length field does not fit.
    case invalidLength
    /// The key answered with another command than the one sent.
    case unexpectedCommand
    /// The key answered CTAPHID_ERROR with this code (see `CTAPHID.ErrorCode`).
    case ctaphidError(UInt8)
    /// The device is gone (unplugged) or stopped working.
    case deviceGone
    /// The connection was closed.
    case closed
    /// The key answered something that cannot be parsed.
    case malformed(Malformation)

    /// True for errors that mean the key went away.
    public var isKeyGone: Bool { self == .deviceGone }
}
