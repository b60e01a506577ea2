import FoundationEssentials
import Glibc
import KeyKit
import Logging
import Synchronization

/// Writes a redacted trace of every APDU and CTAPHID message to a swift-log `Logger`, for bug reports
/// (`ykterm --verbose`, `YKTERM_LOG=FILE`).
///
/// Use:
/// ```swift
/// let tracer = try WireTracer(path: "/tmp/trace.log")
/// try await tracer.run { try await command.run() }   // exchanges inside are traced
/// ```
/// Each exchange becomes two lines, `[reader] > command  LABEL` and `[reader] < response`, with secrets
/// replaced by `<N bytes redacted>` (see `APDURedactor` and `CTAPRedactor` for what counts as one).
/// Nothing is ever logged unredacted: the raw bytes reach only the redactors.
public final class WireTracer: Sendable {
    public let logger: Logger
    /// One redactor per connection name: the card keeps its selected application between connections.
    private let redactors = Mutex<[String: APDURedactor]>([:])

    public static let label = "ykterm.trace"

    public init(logger: Logger) {
        self.logger = logger
    }

    /// A tracer writing to `path` (appending; created with mode 0600).
    public convenience init(path: String) throws(LogFileError) {
        let file = try LogFile(path: path)
        self.init(logger: Logger(label: WireTracer.label) { FileLogHandler(label: $0, file: file) })
    }

    /// The function to install as `WireTrace.observer`.
    public var observer: @Sendable (WireEvent) -> Void {
        { [self] event in record(event) }
    }

    /// Runs `body` with every exchange it makes (and its child tasks make) traced.
    public func run<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows -> T
    {
        try await WireTrace.$observer.withValue(observer, operation: body, isolation: isolation)
    }

    /// Redacts and logs one exchange.
    public func record(_ event: WireEvent) {
        switch event {
        case .apdu(let connection, let command, let response):
            // Redact and log under the lock, so each connection's lines keep their order.
            redactors.withLock { all in
                var redactor = all[connection] ?? APDURedactor()
                let shown = redactor.redact(command: command, response: try? response.get())
                all[connection] = redactor
                log(connection, shown, error: response.failure)
            }
        case .ctaphid(let connection, let command, let request, let response):
            let shown = CTAPRedactor.redact(command: command, request: request, response: try? response.get())
            redactors.withLock { _ in log(connection, shown, error: response.failure) }
        }
    }

    private func log(_ connection: String, _ shown: RedactedExchange, error: (any Error)?) {
        let label = shown.label.map { "  " + $0 } ?? ""
        logger.debug("[\(connection)] > \(shown.command)\(label)")
        if let error {
            logger.debug("[\(connection)] < error: \(String(describing: error))")
        } else if let response = shown.response {
            logger.debug("[\(connection)] < \(response)")
        }
    }

    /// Where the trace goes: `YKTERM_LOG` when set and not empty, else with `verbose` the default file
    /// `$XDG_STATE_HOME/ykterm/trace.log` (`~/.local/state/ykterm/trace.log`), else nowhere (nil).
    public static func path(verbose: Bool, environment: [String: String]) -> String? {
        if let path = environment["YKTERM_LOG"], !path.isEmpty { return path }
        guard verbose else { return nil }
        return defaultStateDirectory(environment: environment) + "/ykterm/trace.log"
    }

    static func defaultStateDirectory(environment: [String: String]) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? PathString.homeDirectory()
        return home + "/.local/state"
    }

    /// Opens the trace file at `path`, creating its directory (mode 0700) when missing.
    public static func open(path: String) throws(LogFileError) -> WireTracer {
        let directory = PathString.directory(of: path)
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw LogFileError(path: path, reason: "cannot create \(directory): \(error)")
            }
        }
        return try WireTracer(path: path)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
