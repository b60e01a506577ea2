/// Choosing a key: by reader name (case-insensitive substring) and/or serial number.
public struct KeySelector: Sendable, Equatable {
    public var reader: String?
    public var serial: UInt32?

    public init(reader: String? = nil, serial: UInt32? = nil) {
        self.reader = reader?.isEmpty == true ? nil : reader
        self.serial = serial
    }

    public func matches(readerName: String) -> Bool {
        guard let reader else { return true }
        return readerName.lowercased().includes(reader.lowercased())
    }
}

public enum KeyFinderError: Error, Equatable {
    case noKey(KeySelector)
    case ambiguous([String])

}

/// Finds keys on PC/SC.
public enum KeyFinder {
    /// Readers holding a card that match the reader part of `selector`.
    public static func candidateReaders(_ selector: KeySelector, context: PCSCContext) throws -> [ReaderStatus] {
        try context.status().filter { $0.cardPresent && !$0.mute && selector.matches(readerName: $0.name) }
    }

    /// Every matching key with its information. Keys that fail to answer are skipped (their error is
    /// returned in `failures`).
    public static func inspectAll(_ selector: KeySelector) async throws
        -> (keys: [KeyInfo], failures: [(reader: String, error: Error)]) {
        let context = try PCSCContext()
        var keys = [KeyInfo]()
        var failures = [(reader: String, error: Error)]()
        for reader in try candidateReaders(selector, context: context) {
            do {
                let connection = try await PCSCConnection.connect(reader: reader.name, context: context)
                let info: KeyInfo
                do {
                    info = try await KeyProbe.inspect(connection: connection)
                    await connection.close()
                } catch {
                    await connection.close()
                    throw error
                }
                if let serial = selector.serial, info.device.serial != serial { continue }
                keys.append(info)
            } catch {
                failures.append((reader.name, error))
            }
        }
        return (keys, failures)
    }

    /// Opens a connection to the single key `selector` designates; with `transaction`, it is one PC/SC
    /// transaction until it is closed (see `PCSCConnection.connect`); `calls` says where its pcsc-lite calls run.
    public static func connect(_ selector: KeySelector, transaction: Bool = true,
                               calls: PCSCCalls = .queued) async throws -> (PCSCConnection, KeyInfo?) {
        let context = try PCSCContext()
        if selector.serial == nil {
            // One reader to choose from: connect to it at once. Asking every reader's state first
            // (SCardGetStatusChange) cost a third of a millisecond, a tenth of `oath code`; a reader without a
            // working card says so on connecting, and that is the same "no key" the states would have given.
            let names = try context.readers().filter { selector.matches(readerName: $0) }
            if names.count == 1 {
                do {
                    return (try await PCSCConnection.connect(reader: names[0], context: context, transaction: transaction,
                                                               calls: calls), nil)
                } catch SmartCardError.noCard, SmartCardError.unresponsive, SmartCardError.cardRemoved {
                    throw KeyFinderError.noKey(selector)
                }
            }
        }
        let readers = try candidateReaders(selector, context: context)
        if selector.serial == nil {
            guard !readers.isEmpty else { throw KeyFinderError.noKey(selector) }
            guard readers.count == 1 else { throw KeyFinderError.ambiguous(readers.map(\.name)) }
            let connection = try await PCSCConnection.connect(reader: readers[0].name, context: context,
                                                              transaction: transaction, calls: calls)
            return (connection, nil)
        }
        var matches = [(PCSCConnection, KeyInfo)]()
        for reader in readers {
            guard let connection = try? await PCSCConnection.connect(reader: reader.name, context: context,
                                                                     transaction: transaction, calls: calls),
                  let info = try? await KeyProbe.inspect(connection: connection) else { continue }
            if info.device.serial == selector.serial {
                matches.append((connection, info))
            } else {
                await connection.close()
            }
        }
        guard !matches.isEmpty else { throw KeyFinderError.noKey(selector) }
        guard matches.count == 1 else {
            for m in matches { await m.0.close() }
            throw KeyFinderError.ambiguous(matches.map { $0.1.label })
        }
        return (matches[0].0, matches[0].1)
    }
}
