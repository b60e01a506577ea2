import KeyKit

// What a tab's work does with the PINs and passwords a dialog gathered: each is lent to the operation as
// `SecretBytes` and wiped when the operation returns (the dialog's own copy was already cleared when it was sent).

/// Lends `a` (when given) to `body` as `SecretBytes`, wiped after.
func withSecret<T>(_ a: String?, _ body: (SecretBytes?) async throws -> T) async throws -> T {
    let secret = a.map { SecretBytes(utf8: $0) }
    defer { secret?.wipe() }
    return try await body(secret)
}

/// Lends `a` to `body` as `SecretBytes`, wiped after.
func withSecret<T>(_ a: String, _ body: (SecretBytes) async throws -> T) async throws -> T {
    let secret = SecretBytes(utf8: a)
    defer { secret.wipe() }
    return try await body(secret)
}

/// Lends two typed secrets to `body` as `SecretBytes`, wiped after.
func withSecrets<T>(
    _ a: String, _ b: String, _ body: (SecretBytes, SecretBytes) async throws -> T
) async throws -> T {
    let first = SecretBytes(utf8: a), second = SecretBytes(utf8: b)
    defer {
        first.wipe()
        second.wipe()
    }
    return try await body(first, second)
}
