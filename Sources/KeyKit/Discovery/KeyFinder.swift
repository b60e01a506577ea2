import Dispatch
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
    /// SELECT of the Management application (A000000527471117).
    static let managementSelect: [UInt8] = [
        0x00, 0xA4, 0x04, 0x00, 0x08, 0xA0, 0x00, 0x00, 0x05, 0x27, 0x47, 0x11, 0x17,
    ]

    /// Readers holding a card that match the reader part of `selector`.
    public static func candidateReaders(_ selector: KeySelector, context: PCSCContext) throws -> [ReaderStatus] {
        try context.status().filter { $0.cardPresent && !$0.mute && selector.matches(readerName: $0.name) }
    }

    /// Every matching key with its information. Keys that fail to answer are skipped (their error is
    /// returned in `failures`).
    public static func inspectAll(_ selector: KeySelector) async throws
        -> (keys: [KeyInfo], failures: [(reader: String, error: Error)])
    {
        let context = try PCSCContext()
        var keys = [KeyInfo]()
        var failures = [(reader: String, error: Error)]()
        for reader in try candidateReaders(selector, context: context) {
            do {
                let connection = try await PCSCConnection.connect(reader: reader.name, context: context, probe: true)
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

    /// Of `readers`, those that do not answer a connect and one command within `PCSCConnection.readerTimeout`
    /// (the two together; asked all at once, each on a context of its own), in the order given.
    public static func silentReaders(_ readers: [String]) async -> [String] {
        let silent = await withTaskGroup(of: String?.self) { group -> Set<String> in
            for reader in readers {
                group.addTask { await answersInTime(reader) ? nil : reader }
            }
            var found = Set<String>()
            for await reader in group { if let reader { found.insert(reader) } }
            return found
        }
        return readers.filter(silent.contains)
    }

    /// Whether `reader` answers a connect and one command within `PCSCConnection.readerTimeout` in all, not
    /// each: a connect that takes nearly all of it and an exchange that then takes as long again would have made
    /// the choice of key wait twice the time (8 s for `oath code` once, against its 5 s). A probe still under way
    /// at the deadline is left to end by itself, and the reader counts as silent.
    static func answersInTime(_ reader: String) async -> Bool {
        let outcome = OneShot<Bool>()
        Task.detached {
            outcome.resolve(await answers(reader))
        }
        Blocking.after(PCSCConnection.readerTimeout) { outcome.resolve(false) }
        return await outcome.value
    }

    /// Whether `reader` answers a connect and one command (each within `PCSCConnection.readerTimeout`). Any
    /// answer counts, an error too (no card, a card that refuses): only a reader that does not answer is silent.
    private static func answers(_ reader: String) async -> Bool {
        do {
            // One exchange too: a card may give its ATR and then answer no command. Any answer counts (SELECT of
            // the Management application, which a YubiKey has, changes nothing).
            let connection = try await PCSCConnection.connect(reader: reader, transaction: false, probe: true)
            var answered = true
            do {
                _ = try await connection.transmit(managementSelect)
            } catch SmartCardError.readerNotAnswering {
                answered = false
            } catch {}
            await connection.close()
            return answered
        } catch SmartCardError.readerNotAnswering {
            return false
        } catch {
            return true
        }
    }

    /// Opens a connection to the single key `selector` designates; with `transaction`, it is one PC/SC
    /// transaction until it is closed (see `PCSCConnection.connect`); `calls` says where its pcsc-lite calls run.
    /// Of several readers that show a key, those that do not answer are left out, each named to `silentReader`.
    public static func connect(
        _ selector: KeySelector, transaction: Bool = true, calls: PCSCCalls = .queued,
        silentReader: (@Sendable (String) -> Void)? = nil
    ) async throws -> (PCSCConnection, KeyInfo?) {
        let context = try PCSCContext()
        if selector.serial == nil {
            // One reader to choose from: connect to it at once. Asking every reader's state first
            // (SCardGetStatusChange) cost a third of a millisecond, a tenth of `oath code`; a reader without a
            // working card says so on connecting, and that is the same "no key" the states would have given.
            let names = try context.readers().filter { selector.matches(readerName: $0) }
            if names.count == 1 {
                do {
                    return (
                        try await PCSCConnection.connect(
                            reader: names[0], context: context, transaction: transaction,
                            calls: calls), nil
                    )
                } catch SmartCardError.noCard, SmartCardError.unresponsive, SmartCardError.cardRemoved {
                    throw KeyFinderError.noKey(selector)
                }
            }
        }
        var readers = try candidateReaders(selector, context: context)
        if readers.count > 1 {
            let silent = await silentReaders(readers.map(\.name))
            if !silent.isEmpty {
                silent.forEach { silentReader?($0) }
                readers.removeAll { silent.contains($0.name) }
                if readers.isEmpty { throw SmartCardError.readerNotAnswering(silent[0]) }
            }
        }
        if selector.serial == nil {
            guard !readers.isEmpty else { throw KeyFinderError.noKey(selector) }
            guard readers.count == 1 else { throw KeyFinderError.ambiguous(readers.map(\.name)) }
            let connection = try await PCSCConnection.connect(
                reader: readers[0].name, context: context,
                transaction: transaction, calls: calls)
            return (connection, nil)
        }
        var matches = [(PCSCConnection, KeyInfo)]()
        for reader in readers {
            guard
                let connection = try? await PCSCConnection.connect(
                    reader: reader.name,
                    transaction: transaction, calls: calls),
                let info = try? await KeyProbe.inspect(connection: connection)
            else { continue }
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
