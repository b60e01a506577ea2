/// The OATH password flows, once for every face of ykterm (the command line and the TUI): unlocking with a
/// key already known (held in memory, or remembered on this computer), unlocking with a typed password, and
/// setting, changing or clearing the password while the remembered key is kept in step with it.
///
/// The rules:
/// - A key held in memory is tried first, then the remembered one. One the key turns down is dropped: the
///   caller is told to forget the held one, and a remembered one is removed from the file.
/// - A password is remembered (its derived key, never the password) only when the user asks.
/// - A new password replaces the remembered key when the old one was remembered or the user asks to
///   remember; cleared, the remembered key is forgotten. Changing a password proves knowing the current one.
public struct OATHAccess: Sendable {
    public let store: RememberedKeys

    public init(store: RememberedKeys) {
        self.store = store
    }

    /// What trying the known keys came to.
    public struct KnownKeyOutcome: Sendable {
        /// The key that unlocked the session; nil when the session needs a password (or had none: then
        /// `needsPassword` is false).
        public var key: SecretBytes?
        /// The session is still locked: ask for the password.
        public var needsPassword: Bool
        /// The held key was turned down (the password changed elsewhere): drop it.
        public var heldRejected = false
        /// The remembered key was turned down and has been forgotten.
        public var rememberedForgotten = false
    }

    /// Unlocks `session` with `held` (a key kept in memory), else with the remembered key of the session's
    /// device. A session without a password needs nothing.
    public func unlockWithKnownKey(_ session: OATHSession, held: SecretBytes? = nil) async throws -> KnownKeyOutcome {
        guard await session.isLocked else { return KnownKeyOutcome(key: nil, needsPassword: false) }
        var outcome = KnownKeyOutcome(key: nil, needsPassword: true)
        if let held {
            do {
                try await session.validate(key: held)
                outcome.key = held
                outcome.needsPassword = false
                return outcome
            } catch OATHError.wrongPassword {
                outcome.heldRejected = true
            }
        }
        let deviceID = await session.deviceID
        if var bytes = try? store.key(for: deviceID) {
            let key = SecretBytes(wiping: &bytes)
            do {
                try await session.validate(key: key)
                outcome.key = key
                outcome.needsPassword = false
            } catch OATHError.wrongPassword {
                outcome.rememberedForgotten = (try? store.forget(deviceID)) ?? false
            }
        }
        return outcome
    }

    /// Unlocks `session` with `password` and returns its key; remembers the key when `remember` is set.
    /// A wrong password is `OATHError.wrongPassword`.
    public func unlock(_ session: OATHSession, password: SecretBytes, remember: Bool) async throws -> SecretBytes {
        let key = await session.deriveSecretKey(password: password)
        try await session.validate(key: key)
        if remember { try self.remember(key, for: await session.deviceID) }
        return key
    }

    /// Sets the password to `new`, or clears it when `new` is nil or empty, and returns the new key (nil when
    /// cleared). A session that is locked is first unlocked with `current` (a wrong one changes nothing).
    /// The remembered key follows: replaced when it existed or `remember` is set, forgotten when cleared.
    public func setPassword(
        _ session: OATHSession, current: SecretBytes?, new: SecretBytes?,
        remember: Bool
    ) async throws -> SecretBytes? {
        let deviceID = await session.deviceID
        if await session.isLocked {
            guard let current, !current.isEmpty else { throw OATHError.passwordRequired }
            try await session.validate(key: await session.deriveSecretKey(password: current))
        }
        guard let new, !new.isEmpty else {
            try await session.removePassword()
            _ = try? store.forget(deviceID)
            return nil
        }
        let key = await session.deriveSecretKey(password: new)
        try await session.setKey(key)
        var old = (try? store.key(for: deviceID)) ?? nil
        let wasRemembered = old != nil
        if old != nil { SecretBytes.wipe(&old!) }
        if remember || wasRemembered { try self.remember(key, for: deviceID) }
        return key
    }

    /// RESET, and the remembered key of the device it was goes too.
    public func reset(_ session: OATHSession) async throws {
        let deviceID = await session.deviceID
        try await session.reset()
        _ = try? store.forget(deviceID)
    }

    private func remember(_ key: SecretBytes, for deviceID: String) throws {
        var bytes = key.copyBytes()
        defer { SecretBytes.wipe(&bytes) }
        try store.remember(bytes, for: deviceID)
    }
}
