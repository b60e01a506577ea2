import FoundationEssentials
import Glibc
import Synchronization

/// CTAP over PC/SC, as NFC readers (and keys offering FIDO over CCID) carry it: SELECT the FIDO application,
/// NFCCTAP_MSG (80 10) with keep-alive polling (SW 9100, NFCCTAP_GETRESPONSE 80 11), U2F as plain APDUs.
public final class PCSCFIDOConnection: FIDOConnection {
    public let card: any SmartCardConnection
    private let proto: SmartCardProtocol
    /// What SELECT answered ("U2F_V2" on keys that also speak U2F).
    public let selectAnswer: String
    private let cancelled = Mutex(false)
    /// Polling interval while the key reports it is still working.
    public static let keepAliveInterval: Double = 0.1
    /// Give up after this long without a final answer.
    public let timeout: Double

    public var name: String { card.name }

    private init(card: any SmartCardConnection, proto: SmartCardProtocol, selectAnswer: String, timeout: Double) {
        self.card = card
        self.proto = proto
        self.selectAnswer = selectAnswer
        self.timeout = timeout
    }

    /// How long a CTAP message may keep the key busy (keep-alives included): 60 s, or `YKTERM_CARD_TIMEOUT`.
    public static var defaultTimeout: Double { PCSCConnection.configuredTimeout ?? 60 }

    public static func open(card: any SmartCardConnection, timeout: Double = defaultTimeout,
                            observer: (@Sendable (APDUExchange) -> Void)? = nil) async throws -> PCSCFIDOConnection {
        let proto = SmartCardProtocol(connection: card, observer: observer)
        let answer = try await proto.select(AID.fido, name: "FIDO")
        return PCSCFIDOConnection(card: card, proto: proto, selectAnswer: String(decoding: answer, as: UTF8.self),
                                  timeout: timeout)
    }

    public func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        cancelled.withLock { $0 = false }
        var r = try await proto.send(APDU(cla: 0x80, ins: 0x10, p1: 0x80, p2: 0x00, data: request, le: 256))
        let deadline = Date().addingTimeInterval(timeout)
        while r.status.rawValue == 0x9100 {
            if let status = r.data.first {
                progress?(status == 2 ? .waitingForUserPresence : .processing)
            }
            guard Date() < deadline else {
                // Ask the key to stop before giving up on it.
                _ = try? await proto.send(APDU(cla: 0x80, ins: 0x11, p1: 0x11, p2: 0x00, le: 256))
                throw FIDOTransportError.timeout
            }
            try await Task.sleep(nanoseconds: UInt64(PCSCFIDOConnection.keepAliveInterval * 1e9))
            let cancel = cancelled.withLock { $0 }
            r = try await proto.send(APDU(cla: 0x80, ins: 0x11, p1: cancel ? 0x11 : 0x00, p2: 0x00, le: 256))
        }
        return try r.checked()
    }

    public func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] {
        try await proto.sendRaw(apdu).bytes
    }

    public func cancel() async {
        cancelled.withLock { $0 = true }
    }

    public func close() async {
        await card.close()
    }
}
