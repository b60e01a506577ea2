import KeyKit
import VirtualKey

/// Virtual keys in the states the seeds are recorded from.
public enum VirtualKeys {
    /// A key whose FIDO PIN is `pin` (none when nil), set through CTAP2 as a client would.
    public static func fido(pin: String?, profile: VirtualKeyProfile = .yubikey) async throws -> VirtualKey {
        let key = VirtualKey(touchDelay: 0, profile: profile)
        if let pin {
            try await withCTAP2(key) { try await $0.setPIN(pin) }
        }
        return key
    }

    /// Runs `body` on a CTAP2 session with `key` over its NFC side (setting a key up, not recorded).
    public static func withCTAP2<T: Sendable>(
        _ key: VirtualKey,
        _ body: @Sendable (CTAP2Session) async throws -> T
    ) async throws -> T {
        let connection = try await PCSCFIDOConnection.open(card: VirtualKeyConnection(key: key))
        do {
            let value = try await body(try await CTAP2Session.make(connection: connection))
            await connection.close()
            return value
        } catch {
            await connection.close()
            throw error
        }
    }
}
