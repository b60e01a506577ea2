import KeyKit

/// The raw APDU console's action, written once for the APDU tab and `ykterm apdu`: one command APDU sent as the
/// user typed it, and everything that crossed the wire for it. It neither parses nor prints: the faces parse
/// the hex and show the answer in their own way.
public struct APDUOperations: Sendable {
    public let opener: any SmartCardOpener

    public init(_ opener: any SmartCardOpener) {
        self.opener = opener
    }

    /// What follows a 61xx or 6Cxx answer.
    public enum Chaining: Sendable, Equatable {
        /// The answer as it came.
        case none
        /// 6Cxx re-sent with the right Le, 61xx followed with `remaining` (GET RESPONSE C0, or another
        /// application's instruction such as OATH's SEND REMAINING A5).
        case follow(remaining: UInt8)

        public static let standard = Chaining.follow(remaining: SmartCardProtocol.getResponse)
    }

    /// One command's outcome: the final answer and every raw exchange it took, in order.
    public struct Answer: Sendable, Equatable {
        public var response: Response
        public var exchanges: [APDUExchange]
    }

    /// The key's smart-card interface for a run of commands. `perCommand`: the user types between commands,
    /// so the key is not held between them and each `send` is a transaction of its own (other programs keep
    /// using the key); otherwise the whole run is one transaction.
    public struct Console: Sendable {
        public let connection: any SmartCardConnection
        public let perCommand: Bool

        public init(_ connection: any SmartCardConnection, perCommand: Bool) {
            self.connection = connection
            self.perCommand = perCommand
        }

        /// Sends `bytes` as given, follows the answer as `chaining` says; `observer` sees each exchange as it
        /// happens (a failure part-way still shows the exchanges before it).
        public func send(
            _ bytes: [UInt8], chaining: Chaining = .standard, observer: (@Sendable (APDUExchange) -> Void)? = nil
        ) async throws -> Answer {
            let exchanges = LockedValue<[APDUExchange]>([])
            let remaining: UInt8
            if case .follow(let instruction) = chaining { remaining = instruction } else { remaining = 0xC0 }
            let proto = SmartCardProtocol(connection: connection, remainingInstruction: remaining) { exchange in
                exchanges.withLock { $0.append(exchange) }
                observer?(exchange)
            }
            let follow = chaining != .none
            let exchange = { @Sendable in try await follow ? proto.sendRaw(bytes) : proto.sendOnce(bytes) }
            let response = try await perCommand ? connection.withTransaction(exchange) : exchange()
            return Answer(response: response, exchanges: exchanges.withLock { $0 })
        }
    }

    /// Opens the key's smart-card interface for a run of commands (`Console`), runs `body` and closes it,
    /// whether `body` returned or threw.
    public func withConsole<T>(perCommand: Bool, _ body: (Console) async throws -> T) async throws -> T {
        try await withOpened(
            perCommand ? opener.openHeldSmartCard : opener.openSmartCard, close: { await $0.close() }
        ) { try await body(Console($0, perCommand: perCommand)) }
    }
}
