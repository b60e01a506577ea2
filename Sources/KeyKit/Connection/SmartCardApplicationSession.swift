/// An application SELECTed on a smart card: the transport that selected it and the version it reported. Only
/// KeyKit makes one (in `SmartCardApplicationSession.make`), so a session always starts with its application
/// selected.
public struct SelectedApplication: Sendable {
    let proto: SmartCardProtocol
    public let version: Version
}

/// A session with one smart card application (PIV, OpenPGP, YubiHSM Auth): opening it is "SELECT, then whatever
/// the application needs to report its version", written once here; each session says only its own part
/// (`select(on:)`).
public protocol SmartCardApplicationSession: Actor {
    nonisolated var selected: SelectedApplication { get }
    init(_ selected: SelectedApplication)
    /// SELECTs the application on `proto` (and whatever else it takes to read its version) and returns the version.
    static func select(on proto: SmartCardProtocol) async throws -> Version
}

extension SmartCardApplicationSession {
    nonisolated var proto: SmartCardProtocol { selected.proto }
    /// The application's version (the firmware's on a YubiKey).
    public nonisolated var version: Version { selected.version }

    /// Opens the session on `connection`; `observer` sees every raw exchange, SELECT included.
    public static func make(
        connection: any SmartCardConnection,
        observer: (@Sendable (APDUExchange) -> Void)? = nil
    ) async throws -> Self {
        let proto = SmartCardProtocol(connection: connection, observer: observer)
        return Self(SelectedApplication(proto: proto, version: try await select(on: proto)))
    }
}
