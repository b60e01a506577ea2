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

    private var access: OATHAccess { OATHAccess(store: environment.rememberedKeys) }

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
            let known = try await access.unlockWithKnownKey(session, held: unlockKeys.withLock { $0[d.id] })
            unlockKeys.withLock { $0[d.id] = known.key }
            if known.needsPassword {
                await c.close()
                post(.oathLocked(keyID: d.id, deviceID: await session.deviceID, version: session.version))
                return
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
            let key = try await access.unlock(session, password: SecretBytes(utf8: password), remember: remember)
            unlockKeys.withLock { $0[d.id] = key }
            let entries = try await session.calculateAll(at: Int64(time))
            await c.close()
            post(.oathUnlocked(keyID: d.id, await snapshot(session, true, entries), remembered: remember))
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
            // The current password is asked for again when the key has one: changing it proves knowing it.
            let key = try await access.setPassword(session, current: current.map { SecretBytes(utf8: $0) },
                                                   new: SecretBytes(utf8: new), remember: false)
            unlockKeys.withLock { $0[d.id] = key }
            let text = UIText(key == nil ? "oath.passwordRemoved" : current == nil ? "oath.passwordSet" : "oath.passwordChanged")
            let entries = try await session.calculateAll(at: Int64(time))
            await c.close()
            post(.oathChanged(keyID: d.id, await snapshot(session, !new.isEmpty, entries), text))
        } catch {
            if let connection { await connection.close() }
            post(.oathFailed(keyID: d.id, Self.failure(.password, error)))
        }
    }

    /// What the tab shows for `error` (`ErrorExplanation`); a key without OATH gets the tab's own words.
    static func failure(_ operation: OATHFailure.Operation, _ error: any Error) -> OATHFailure {
        let explanation = ErrorExplanation(error)
        switch explanation.kind {
        case .applicationMissing:
            return OATHFailure(operation: operation, message: UIText("oath.notAvailable"), notAvailable: true)
        case .interfaceMissing:
            return OATHFailure(operation: operation, message: explanation.text, notAvailable: true)
        case .wrongPassword:
            return OATHFailure(operation: operation, message: UIText("oath.wrongPassword"), wrongPassword: true)
        case .touchTimeout:
            return OATHFailure(operation: operation, message: UIText("oath.touchTimeout"))
        default:
            return OATHFailure(operation: operation, message: explanation.text, keyGone: explanation.kind.keyGone)
        }
    }
}
