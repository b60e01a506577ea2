/// A connection to a smart card (a key in a CCID or NFC reader, or the virtual key).
///
/// Implementations send one raw command and return the raw answer (data and SW1 SW2); APDU chaining,
/// response chaining and application selection live in `SmartCardProtocol` above.
public protocol SmartCardConnection: AnyObject, Sendable {
    /// The card's answer to reset.
    var atr: [UInt8] { get }
    /// A name for the connection (the reader name).
    var name: String { get }
    /// Sends one command APDU, returns the response APDU.
    func transmit(_ command: [UInt8]) async throws -> [UInt8]
    /// Runs `body` while holding the card exclusively against other PC/SC clients.
    func withTransaction<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T
    /// Closes the connection; later transmits fail with `SmartCardError.closed`.
    func close() async
}

extension SmartCardConnection {
    public func withTransaction<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await body()
    }
}

/// One command and its answer, as seen on the wire (for the APDU console and traces).
public struct APDUExchange: Sendable, Equatable {
    public var command: [UInt8]
    public var response: [UInt8]

    public init(command: [UInt8], response: [UInt8]) {
        self.command = command
        self.response = response
    }
}

/// The transport above a `SmartCardConnection`: command chaining, automatic GET RESPONSE on 61xx
/// (or another instruction, such as OATH's SEND REMAINING 0xA5), re-send with the right Le on 6Cxx,
/// and SELECT.
///
/// Commands that expect data must carry Le (ISO 7816-4 cases 2 and 4; short Le 00 asks for up to 256
/// bytes): a key may read a command without Le as "no data wanted" and answer 61xx with nothing. The
/// sessions build their commands that way, and the fetches made here always carry Le.
public struct SmartCardProtocol: Sendable {
    public let connection: any SmartCardConnection
    /// The instruction that fetches the rest of a response announced by 61xx.
    public var remainingInstruction: UInt8
    /// Send long commands as one extended APDU instead of a chain of short ones.
    public var useExtendedAPDUs: Bool
    /// Called for every raw exchange, in order.
    public var observer: (@Sendable (APDUExchange) -> Void)?

    /// Guard against a device that answers 61xx forever.
    public static let maxResponseParts = 4096

    public static let getResponse: UInt8 = 0xC0

    public init(
        connection: any SmartCardConnection, remainingInstruction: UInt8 = SmartCardProtocol.getResponse,
        useExtendedAPDUs: Bool = false, observer: (@Sendable (APDUExchange) -> Void)? = nil
    ) {
        self.connection = connection
        self.remainingInstruction = remainingInstruction
        self.useExtendedAPDUs = useExtendedAPDUs
        self.observer = observer
    }

    private func exchange(_ bytes: [UInt8]) async throws -> Response {
        let raw: [UInt8]
        do {
            raw = try await connection.transmit(bytes)
        } catch {
            WireTrace.observer?(.apdu(connection: connection.name, command: bytes, response: .failure(error)))
            throw error
        }
        WireTrace.observer?(.apdu(connection: connection.name, command: bytes, response: .success(raw)))
        observer?(APDUExchange(command: bytes, response: raw))
        return try Response(raw: raw)
    }

    /// Sends a command and gathers its whole answer. A non-9000 final status is returned, not thrown.
    public func send(_ apdu: APDU) async throws -> Response {
        let parts: [APDU]
        if useExtendedAPDUs || !apdu.needsExtended {
            parts = [apdu]
        } else {
            parts = apdu.chained()
        }
        var last = parts[parts.count - 1]
        for part in parts.dropLast() {
            let r = try await exchange(try part.encoded(.short))
            guard r.status.isSuccess else { return r }
        }
        let encoding: APDU.Encoding = useExtendedAPDUs ? .automatic : (last.needsExtended ? .extended : .short)
        let first = try await exchange(try last.encoded(encoding))
        return try await complete(first) { le in
            last.le = le
            return try last.encoded(encoding)
        }
    }

    /// Sends the bytes exactly as given, once: the answer as it came, 61xx and 6Cxx included (the APDU console
    /// with chaining turned off).
    public func sendOnce(_ bytes: [UInt8]) async throws -> Response {
        try await exchange(bytes)
    }

    /// Sends the bytes exactly as given (no re-encoding, no command chaining), then gathers the answer
    /// as `send` does: re-send with the right Le on 6Cxx, fetch the rest on 61xx.
    public func sendRaw(_ bytes: [UInt8]) async throws -> Response {
        let apdu = try APDU(parsing: bytes)
        let first = try await exchange(bytes)
        return try await complete(first) { le in
            var again = apdu
            again.le = le
            return try again.encoded(bytes.count > 4 && bytes[4] == 0 && bytes.count > 5 ? .extended : .short)
        }
    }

    /// Gathers the rest of an answer. The first answer may announce its data with 61xx and bring none
    /// (ISO 7816-4's T=0 way of answering a command sent without Le); after that, every fetch carries Le
    /// and must bring data: a fetch answered 61xx with no data would be asked again for ever, so it ends
    /// the exchange at once with `SmartCardError.emptyResponsePart`.
    private func complete(_ first: Response, resend: (Int) throws -> [UInt8]) async throws -> Response {
        var response = first
        if response.status.isWrongLe {
            response = try await exchange(try resend(response.status.sw2 == 0 ? 256 : Int(response.status.sw2)))
        }
        var data = response.data
        var count = 0
        while response.status.isMoreDataAvailable {
            count += 1
            guard count < SmartCardProtocol.maxResponseParts else {
                throw SmartCardError.malformedResponse(Malformation(.answer, .neverEnds(parts: count)))
            }
            response = try await exchange(try fetchCommand(announced: response.status))
            if response.data.isEmpty && response.status.isMoreDataAvailable {
                throw SmartCardError.emptyResponsePart(
                    response.status,
                    after: SmartCardProtocol.name(ofFetch: remainingInstruction))
            }
            data += response.data
        }
        return Response(data: data, status: response.status)
    }

    /// The command that fetches the rest announced by `announced` (61xx): GET RESPONSE asks for the
    /// announced length (SW2, 00 = 256); other instructions (OATH's SEND REMAINING) ask for up to 256
    /// bytes (Le 00), as a key that reads a command without Le as "no data wanted" needs.
    func fetchCommand(announced: StatusWord) throws -> [UInt8] {
        let le: Int
        if remainingInstruction == SmartCardProtocol.getResponse {
            le = announced.sw2 == 0 ? 256 : Int(announced.sw2)
        } else {
            le = 256
        }
        return try APDU(cla: 0x00, ins: remainingInstruction, le: le).encoded(.short)
    }

    /// How errors and traces name the instruction that fetches the rest of an answer.
    public static func name(ofFetch instruction: UInt8) -> String {
        switch instruction {
        case getResponse: return "GET RESPONSE"
        case 0xA5: return "SEND REMAINING"
        default: return "INS " + Hex.encode([instruction], uppercase: true)
        }
    }

    /// Sends a command and returns its data; a non-9000 status is thrown as `SmartCardError.status`.
    public func sendChecked(_ apdu: APDU) async throws -> [UInt8] {
        try await send(apdu).checked()
    }

    /// A protocol over `connection` (as `init` makes it) with the application `aid` SELECTed, and SELECT's answer:
    /// where every session starts.
    static func selecting(
        _ aid: [UInt8], name: String, on connection: any SmartCardConnection,
        remainingInstruction: UInt8 = SmartCardProtocol.getResponse,
        observer: (@Sendable (APDUExchange) -> Void)? = nil
    ) async throws -> (SmartCardProtocol, answer: [UInt8]) {
        let proto = SmartCardProtocol(
            connection: connection, remainingInstruction: remainingInstruction, observer: observer)
        return (proto, try await proto.select(aid, name: name))
    }

    /// SELECT an application by AID. A "not found" answer becomes `applicationNotAvailable(name)`.
    public func select(_ aid: [UInt8], name: String) async throws -> [UInt8] {
        // SELECT answers data (a version, a challenge): it carries Le, so that a key which reads a command
        // without Le as "no data wanted" answers it too (ISO 7816-4 case 4).
        var command = APDU.select(aid: aid)
        command.le = 256
        let r = try await send(command)
        switch r.status.rawValue {
        case 0x9000: return r.data
        case 0x6A82, 0x6A81, 0x6D00, 0x6E00, 0x6999, 0x6A86, 0x6985:
            throw SmartCardError.applicationNotAvailable(name)
        default:
            throw SmartCardError.status(r.status)
        }
    }
}
