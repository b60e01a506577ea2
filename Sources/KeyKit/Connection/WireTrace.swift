/// One exchange with a key as a diagnostic trace sees it: raw bytes, before any redaction.
public enum WireEvent: Sendable {
    /// A command APDU sent through `SmartCardProtocol` and the raw response (data and SW1 SW2), or the
    /// error that ended the exchange. `connection` is the connection's name (the reader name).
    case apdu(connection: String, command: [UInt8], response: Result<[UInt8], any Error>)
    /// A CTAPHID message (`CTAPHID.Command.cbor`: command byte + CBOR; `.msg`: a U2F APDU) and its answer.
    case ctaphid(connection: String, command: UInt8, request: [UInt8], response: Result<[UInt8], any Error>)
}

/// A tap on every exchange with a key, for `ykterm --verbose`. It is a task-local value, not global state:
/// code run inside `WireTrace.$observer.withValue(handler) { ... }` (and the child tasks it starts) reports
/// its exchanges to `handler`; everything else pays one task-local read per exchange. The handler sees
/// secrets in the clear and must redact them before writing anything (AuthenticatorModel's `WireTracer`).
public enum WireTrace {
    @TaskLocal public static var observer: (@Sendable (WireEvent) -> Void)?

    /// Runs `body` (one CTAPHID message), reporting it to the observer if there is one.
    static func ctaphid(
        connection: String, command: UInt8, request: [UInt8],
        _ body: () async throws -> [UInt8]
    ) async throws -> [UInt8] {
        guard let observer else { return try await body() }
        do {
            let response = try await body()
            observer(.ctaphid(connection: connection, command: command, request: request, response: .success(response)))
            return response
        } catch {
            observer(.ctaphid(connection: connection, command: command, request: request, response: .failure(error)))
            throw error
        }
    }
}
