import FoundationEssentials
import Glibc
import Synchronization

/// CTAP over ISO 7816 (CTAP 2.1 section 11.3, "ISO7816, ISO14443 and Near Field Communication"): the
/// APDUs that carry CTAP2 messages to the FIDO application, for this client and the virtual key alike.
public enum NFCCTAP {
    /// The class byte of NFCCTAP commands (U2F commands keep class 00).
    public static let cla: UInt8 = 0x80

    /// Instructions.
    public enum Instruction {
        /// NFCCTAP_MSG: a CTAP2 message in the data.
        public static let msg: UInt8 = 0x10
        /// NFCCTAP_GETRESPONSE: polls for the answer after a status update.
        public static let getResponse: UInt8 = 0x11
    }

    /// NFCCTAP_MSG P1 bit: the client polls with NFCCTAP_GETRESPONSE, so the key may answer status updates.
    public static let getResponseSupported: UInt8 = 0x80
    /// NFCCTAP_GETRESPONSE P1: cancel the request.
    public static let cancel: UInt8 = 0x11
    /// The status word of a status update: the data is a KEEPALIVE status (`CTAPHID.KeepaliveStatus`), the
    /// answer is still to come.
    public static let statusUpdate = StatusWord(rawValue: 0x9100)
}

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

    public static func open(
        card: any SmartCardConnection, timeout: Double = defaultTimeout,
        observer: (@Sendable (APDUExchange) -> Void)? = nil
    ) async throws -> PCSCFIDOConnection {
        let (proto, answer) = try await SmartCardProtocol.selecting(
            AID.fido, name: "FIDO", on: card, observer: observer)
        return PCSCFIDOConnection(
            card: card, proto: proto, selectAnswer: String(decoding: answer, as: UTF8.self),
            timeout: timeout)
    }

    public func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        cancelled.withLock { $0 = false }
        var r = try await proto.send(
            APDU(
                cla: NFCCTAP.cla, ins: NFCCTAP.Instruction.msg,
                p1: NFCCTAP.getResponseSupported, p2: 0x00, data: request, le: 256))
        let deadline = Date().addingTimeInterval(timeout)
        while r.status == NFCCTAP.statusUpdate {
            if let status = r.data.first {
                progress?(status == CTAPHID.KeepaliveStatus.userPresenceNeeded ? .waitingForUserPresence : .processing)
            }
            guard Date() < deadline else {
                // Ask the key to stop before giving up on it.
                _ = try? await proto.send(
                    APDU(
                        cla: NFCCTAP.cla, ins: NFCCTAP.Instruction.getResponse,
                        p1: NFCCTAP.cancel, p2: 0x00, le: 256))
                throw FIDOTransportError.timeout
            }
            try await Task.sleep(nanoseconds: UInt64(PCSCFIDOConnection.keepAliveInterval * 1e9))
            let cancel = cancelled.withLock { $0 }
            r = try await proto.send(
                APDU(
                    cla: NFCCTAP.cla, ins: NFCCTAP.Instruction.getResponse,
                    p1: cancel ? NFCCTAP.cancel : 0x00, p2: 0x00, le: 256))
        }
        return try r.checked()
    }

    public func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] {
        try await proto.sendRaw(apdu).bytes
    }

    public func cancel() async {
        requestCancel()
    }

    public func requestCancel() {
        cancelled.withLock { $0 = true }
    }

    public func close() async {
        await card.close()
    }
}
