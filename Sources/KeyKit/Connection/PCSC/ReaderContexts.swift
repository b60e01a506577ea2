import Synchronization

/// A PC/SC context for each reader, kept from one connection to the next.
///
/// Making a context is a connection to pcscd's socket and two exchanges with it, and releasing it one more: the TUI
/// makes a short connection to each key at every period boundary (one per operation, so the key is never held
/// between operations), and over four keys that was four contexts made and released every 30 seconds.
///
/// A kept context serves one connection at a time: a connection takes it, and gives it back when it is closed. A
/// second connection to the same reader meanwhile makes a context of its own, as every connection did before.
/// Sharing one would be worse than slow: pcsc-lite holds a context's lock for the whole of each call, and a thread
/// that waits for that lock holds the lock of every context in the process while it waits, so one key's wait for a
/// touch would stop the calls to every other key. For the same reason a context whose call was given up
/// (`PCSCContext.isWedged`: a reader that did not answer) is never given back.
///
/// A context pcscd no longer knows (pcscd was restarted) fails its connect with `serviceUnavailable` or a PC/SC
/// error of its own; the connect is then made once more with a new context.
public final class ReaderContexts: Sendable {
    private let contexts = Mutex<[String: PCSCContext]>([:])
    /// At most this many contexts are kept (readers come and go); one more forgets the others.
    static let limit = 16

    public init() {}

    /// A connection to the card in `reader`, as `PCSCConnection.connect` makes it, on the reader's kept context
    /// when there is one free.
    public func connect(reader: String, transaction: Bool = true, probe: Bool = false) async throws -> PCSCConnection {
        let kept = contexts.withLock { $0.removeValue(forKey: reader) }
        let connection: PCSCConnection
        do {
            connection = try await PCSCConnection.connect(
                reader: reader, context: kept, transaction: transaction, probe: probe)
        } catch let error as SmartCardError {
            guard let kept else { throw error }
            switch error {
            case .serviceUnavailable, .pcsc:
                connection = try await PCSCConnection.connect(
                    reader: reader, transaction: transaction, probe: probe)
            default:
                giveBack(kept, for: reader)
                throw error
            }
        }
        connection.whenClosed { [self] context in giveBack(context, for: reader) }
        return connection
    }

    private func giveBack(_ context: PCSCContext, for reader: String) {
        guard !context.isWedged else { return }
        contexts.withLock { kept in
            guard kept[reader] == nil else { return }
            if kept.count >= Self.limit { kept.removeAll() }
            kept[reader] = context
        }
    }
}
