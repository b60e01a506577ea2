import FoundationEssentials
import Glibc
import KeyKit

/// Performs the OATH tab's commands: each opens the key's smart-card interface, selects OATH (unlocking it
/// with the key held in memory or remembered on disk), does its work, closes, and posts what came of it.
struct OATHTabWork: Sendable {
    let backend: any KeyBackend
    let environment: RunnerEnvironment
    let post: @Sendable (Msg) -> Void

    func perform(_ command: Command, unlockKeys: LockedValue<[String: SecretBytes]>) async {
        switch command {
        case .oathOpen(let d, let time):
            await oath(d, .open, unlockKeys) { session, hasPassword in
                let entries = try await session.calculateAll(at: Int64(time))
                return .oathOpened(keyID: d.id, await snapshot(session, hasPassword, entries))
            }
        case .oathRefresh(let d, let time, let all, let single):
            await oath(d, .refresh, unlockKeys) { session, _ in
                var entries = all ? try await session.calculateAll(at: Int64(time), otherPeriods: false) : []
                for credential in single {
                    let code = try await session.calculate(credential, at: Int64(time))
                    let digits = code.value.count
                    entries.removeAll { $0.credential.id == credential.id }
                    entries.append(OATHSession.Entry(credential: credential, code: code, digits: digits))
                }
                return .oathCodes(keyID: d.id, entries)
            }
        case .oathCalculate(let d, let credential, let time):
            await oath(d, .calculate(accountID: credential.id.string), unlockKeys) { session, _ in
                .oathCode(keyID: d.id, accountID: credential.id.string,
                          try await session.calculate(credential, at: Int64(time)))
            }
        case .oathUnlock(let d, let password, let remember, let time):
            await unlock(d, password: password, remember: remember, time: time, unlockKeys)
        case .oathAdd(let d, let accounts, let overwrite, let time):
            await oath(d, .add, unlockKeys) { session, hasPassword in
                let existing = Set(try await session.list().map(\.id))
                if !overwrite, let taken = accounts.first(where: { existing.contains($0.id) }) {
                    throw OATHError.credentialExists(taken.id.string)
                }
                for data in accounts { _ = try await session.put(data) }
                let text = accounts.count == 1 ? UIText("oath.added", ["account": accounts[0].id.string])
                                               : UIText("oath.addedSeveral", ["count": String(accounts.count)])
                return .oathChanged(keyID: d.id, await snapshot(session, hasPassword, try await session.calculateAll(at: Int64(time))),
                                    text)
            }
        case .oathRename(let d, let credential, let newID, let time):
            await oath(d, .rename, unlockKeys) { session, hasPassword in
                _ = try await session.rename(credential, to: newID)
                return .oathChanged(keyID: d.id, await snapshot(session, hasPassword, try await session.calculateAll(at: Int64(time))),
                                    UIText("oath.renamed", ["old": credential.id.string, "new": newID.string]))
            }
        case .oathDelete(let d, let credential, let time):
            await oath(d, .delete, unlockKeys) { session, hasPassword in
                try await session.delete(credential)
                return .oathChanged(keyID: d.id, await snapshot(session, hasPassword, try await session.calculateAll(at: Int64(time))),
                                    UIText("oath.deleted", ["account": credential.id.string]))
            }
        case .oathSetPassword(let d, let current, let new, let time):
            await setPassword(d, current: current, new: new, time: time, unlockKeys)
        default:
            break
        }
    }

    private func snapshot(_ session: OATHSession, _ hasPassword: Bool, _ entries: [OATHSession.Entry]) async -> OATHSnapshot {
        OATHSnapshot(deviceID: await session.deviceID, version: session.version, hasPassword: hasPassword, entries: entries)
    }

    /// Opens the OATH application (unlocking it with the key held in memory or remembered on disk), runs
    /// `body` and posts its message; failures become `.oathFailed`, a locked key `.oathLocked`.
    private func oath(_ d: KeyDescriptor, _ operation: OATHFailure.Operation,
                      _ unlockKeys: LockedValue<[String: SecretBytes]>,
                      _ body: (OATHSession, Bool) async throws -> Msg) async {
        var connection: (any SmartCardConnection)?
        do {
            let c = try await backend.connect(d)
            connection = c
            let session = try await OATHSession.make(connection: c, observer: environment.observer)
            let hasPassword = await session.isLocked
            if hasPassword {
                let deviceID = await session.deviceID
                var unlocked = false
                if let key = unlockKeys.withLock({ $0[d.id] }) {
                    do { try await session.validate(key: key); unlocked = true } catch OATHError.wrongPassword {
                        unlockKeys.withLock { $0[d.id] = nil }
                    }
                }
                if !unlocked, var remembered = try? environment.rememberedKeys.key(for: deviceID) {
                    let key = SecretBytes(wiping: &remembered)
                    do {
                        try await session.validate(key: key)
                        unlocked = true
                        unlockKeys.withLock { $0[d.id] = key }
                    } catch OATHError.wrongPassword {
                        _ = try? environment.rememberedKeys.forget(deviceID)
                    }
                }
                if !unlocked {
                    await c.close()
                    post(.oathLocked(keyID: d.id, deviceID: deviceID, version: session.version))
                    return
                }
            }
            let msg = try await body(session, hasPassword)
            await c.close()
            post(msg)
        } catch {
            if let connection { await connection.close() }
            post(.oathFailed(keyID: d.id, Self.failure(operation, error)))
        }
    }

    private func unlock(_ d: KeyDescriptor, password: String, remember: Bool, time: Double,
                        _ unlockKeys: LockedValue<[String: SecretBytes]>) async {
        var connection: (any SmartCardConnection)?
        do {
            let c = try await backend.connect(d)
            connection = c
            let session = try await OATHSession.make(connection: c, observer: environment.observer)
            let key = await session.deriveSecretKey(password: SecretBytes(utf8: password))
            try await session.validate(key: key)
            unlockKeys.withLock { $0[d.id] = key }
            var remembered = false
            if remember {
                var bytes = key.copyBytes()
                defer { SecretBytes.wipe(&bytes) }
                try environment.rememberedKeys.remember(bytes, for: await session.deviceID)
                remembered = true
            }
            let entries = try await session.calculateAll(at: Int64(time))
            await c.close()
            post(.oathUnlocked(keyID: d.id, await snapshot(session, true, entries), remembered: remembered))
        } catch {
            if let connection { await connection.close() }
            post(.oathFailed(keyID: d.id, Self.failure(.unlock, error)))
        }
    }

    private func setPassword(_ d: KeyDescriptor, current: String?, new: String, time: Double,
                             _ unlockKeys: LockedValue<[String: SecretBytes]>) async {
        var connection: (any SmartCardConnection)?
        do {
            let c = try await backend.connect(d)
            connection = c
            let session = try await OATHSession.make(connection: c, observer: environment.observer)
            let deviceIDBefore = await session.deviceID
            if await session.isLocked {
                // The current password is asked for again: changing it proves knowing it.
                try await session.validate(key: await session.deriveSecretKey(password: SecretBytes(utf8: current ?? "")))
            }
            let text: UIText
            if new.isEmpty {
                try await session.removePassword()
                unlockKeys.withLock { $0[d.id] = nil }
                _ = try? environment.rememberedKeys.forget(deviceIDBefore)
                text = UIText("oath.passwordRemoved")
            } else {
                let key = await session.deriveSecretKey(password: SecretBytes(utf8: new))
                try await session.setKey(key)
                unlockKeys.withLock { $0[d.id] = key }
                // A remembered key for the old password no longer works: replace it.
                if var old = try? environment.rememberedKeys.key(for: deviceIDBefore) {
                    SecretBytes.wipe(&old)
                    var bytes = key.copyBytes()
                    try? environment.rememberedKeys.remember(bytes, for: deviceIDBefore)
                    SecretBytes.wipe(&bytes)
                }
                text = UIText(current == nil ? "oath.passwordSet" : "oath.passwordChanged")
            }
            let entries = try await session.calculateAll(at: Int64(time))
            await c.close()
            post(.oathChanged(keyID: d.id, await snapshot(session, !new.isEmpty, entries), text))
        } catch {
            if let connection { await connection.close() }
            post(.oathFailed(keyID: d.id, Self.failure(.password, error)))
        }
    }

    static func failure(_ operation: OATHFailure.Operation, _ error: any Error) -> OATHFailure {
        if let e = error as? KeyRouteError {
            return OATHFailure(operation: operation, message: .literal(e.description), notAvailable: true)
        }
        if let e = error as? SmartCardError {
            if e.isKeyGone || e == .closed {
                return OATHFailure(operation: operation, message: .literal(e.description), keyGone: true)
            }
            if case .applicationNotAvailable = e {
                return OATHFailure(operation: operation, message: UIText("oath.notAvailable"), notAvailable: true)
            }
            return OATHFailure(operation: operation, message: .literal(e.description))
        }
        if let e = error as? OATHError {
            if e == .wrongPassword {
                return OATHFailure(operation: operation, message: UIText("oath.wrongPassword"), wrongPassword: true)
            }
            if e == .touchTimeout { return OATHFailure(operation: operation, message: UIText("oath.touchTimeout")) }
            return OATHFailure(operation: operation, message: .literal(e.description))
        }
        return OATHFailure(operation: operation, message: .literal(String(describing: error)))
    }
}
