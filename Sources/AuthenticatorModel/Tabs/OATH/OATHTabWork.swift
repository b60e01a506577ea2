import FoundationEssentials
import Glibc
import KeyKit

/// Performs the OATH tab's commands: each opens the key's smart-card interface, selects OATH (unlocking it
/// with the key held in memory or remembered on disk), does its work, closes, and posts what came of it.
struct OATHTabWork: TabWork {
    let work: KeyWork

    func perform(_ command: OATHTabCommand, unlockKeys: LockedValue<[String: SecretBytes]>) async {
        switch command {
        case .open(let d, let time):
            await oath(d, .open, unlockKeys) { ops, unlock in
                try await ops.codes(at: Int64(time), unlock).map { entries, opened in
                    .oath(.opened(keyID: d.id, Self.snapshot(opened, entries)))
                }
            }
        case .refresh(let d, let time, let all, let single):
            await oath(d, .refresh, unlockKeys) { ops, unlock in
                try await ops.refresh(at: Int64(time), all: all, single: single, unlock).map { entries, _ in
                    .oath(.codes(keyID: d.id, entries))
                }
            }
        case .calculate(let d, let credential, let time):
            await oath(d, .calculate(accountID: credential.id.string), unlockKeys) { ops, unlock in
                try await ops.code(credential, at: Int64(time), unlock).map { code, _ in
                    .oath(.code(keyID: d.id, accountID: credential.id.string, code))
                }
            }
        case .unlock(let d, let password, let remember, let time):
            await oath(d, .unlock, unlockKeys) { ops, _ in
                let unlock = OATHOperations.Unlock(password: SecretBytes(utf8: password), remember: remember)
                return try await ops.codes(at: Int64(time), unlock).map { entries, opened in
                    .oath(.unlocked(keyID: d.id, Self.snapshot(opened, entries), remembered: remember))
                }
            }
        case .add(let d, let accounts, let overwrite, let time):
            await oath(d, .add, unlockKeys) { ops, unlock in
                try await ops.add(accounts, replacing: overwrite, refreshAt: Int64(time), unlock).map {
                    result, opened in
                    switch result {
                    case .taken(let ids):
                        let taken = OATHError.credentialExists(ids[0])
                        return .oath(
                            .failed(
                                keyID: d.id,
                                OATHFailure(operation: .add, message: ErrorExplanation(taken).text, taken: ids)))
                    case .added(let ids, let entries):
                        let text =
                            ids.count == 1
                            ? UIText("oath.added", ["account": ids[0]])
                            : UIText("oath.addedSeveral", ["count": String(ids.count)])
                        return .oath(.changed(keyID: d.id, Self.snapshot(opened, entries ?? []), text))
                    }
                }
            }
        case .rename(let d, let credential, let newID, let time):
            await oath(d, .rename, unlockKeys) { ops, unlock in
                try await ops.rename(.account(credential), to: newID.string, refreshAt: Int64(time), unlock)
                    .map { changed, opened in
                        .oath(
                            .changed(
                                keyID: d.id, Self.snapshot(opened, changed.entries ?? []),
                                UIText("oath.renamed", ["old": changed.detail.old, "new": changed.detail.new])))
                    }
            }
        case .delete(let d, let credential, let time):
            await oath(d, .delete, unlockKeys) { ops, unlock in
                try await ops.delete(.account(credential), refreshAt: Int64(time), unlock).map { changed, opened in
                    .oath(
                        .changed(
                            keyID: d.id, Self.snapshot(opened, changed.entries ?? []),
                            UIText("oath.deleted", ["account": changed.detail])))
                }
            }
        case .setPassword(let d, let current, let new, let time):
            await setPassword(d, current: current, new: new, time: time, unlockKeys)
        case .makeSecret:
            // 20 random bytes (160 bits, the HMAC-SHA1 block's worth RFC 4226 recommends), as `oath add --generate`.
            var bytes = Crypto.random(20)
            defer { for i in bytes.indices { bytes[i] = 0 } }
            post(.oath(.secretMade(Base32.encode(bytes))))
        case .readImage(let path):
            let file = Self.expandingHome(path, home: getenv("HOME").map { String(cString: $0) })
            post(
                .oath(
                    .imageRead(path: path, Result { () throws(QRImageError) in try QRImage.accountURI(inFile: file) })))
        case .each(let commands):
            // Each key on a connection of its own: a slow key (or one pulled out) holds up only its own answer.
            await withTaskGroup(of: Void.self) { group in
                for command in commands {
                    group.addTask { await perform(command, unlockKeys: unlockKeys) }
                }
            }
        }
    }

    private func operations(_ d: KeyDescriptor) -> OATHOperations {
        OATHOperations(BackendKey(backend, d), store: environment.rememberedKeys, observer: environment.observer)
    }

    private static func snapshot(_ opened: OATHOperations.Opened, _ entries: [OATHSession.Entry]) -> OATHSnapshot {
        OATHSnapshot(
            deviceID: opened.deviceID, version: opened.version, hasPassword: opened.hasPassword,
            entries: entries)
    }

    /// Runs one operation with the access key held for `d` and posts its message: the key's new access key is
    /// held for the next; a key that needs its password posts `.oath(.locked)`, a failure `.oath(.failed)`.
    private func oath(
        _ d: KeyDescriptor, _ operation: OATHFailure.Operation,
        _ unlockKeys: LockedValue<[String: SecretBytes]>,
        _ body: (OATHOperations, OATHOperations.Unlock) async throws -> OATHOperations.Outcome<Msg>
    ) async {
        do {
            let unlock = OATHOperations.Unlock(held: unlockKeys.withLock { $0[d.id] })
            switch try await body(operations(d), unlock) {
            case .done(let msg, let opened):
                unlockKeys.withLock { $0[d.id] = opened.accessKey }
                post(msg)
            case .locked(let opened):
                unlockKeys.withLock { $0[d.id] = nil }
                post(.oath(.locked(keyID: d.id, deviceID: opened.deviceID, version: opened.version)))
            }
        } catch {
            post(.oath(.failed(keyID: d.id, Self.failure(operation, error))))
        }
    }

    private func setPassword(
        _ d: KeyDescriptor, current: String?, new: String, time: Double,
        _ unlockKeys: LockedValue<[String: SecretBytes]>
    ) async {
        // The current password is asked for again when the key has one: changing it proves knowing it.
        let change: OATHOperations.PasswordChange
        switch (current.map { SecretBytes(utf8: $0) }, new.isEmpty ? nil : SecretBytes(utf8: new)) {
        case (nil, let n?): change = .set(new: n)
        case (let c?, let n?): change = .change(current: c, new: n)
        case (let c?, nil): change = .clear(current: c)
        case (nil, nil):
            post(.oath(.failed(keyID: d.id, Self.failure(.password, OATHOperationError.noPassword))))
            return
        }
        do {
            let changed = try await operations(d).setPassword(change, remember: false, refreshAt: Int64(time))
            unlockKeys.withLock { $0[d.id] = changed.opened.accessKey }
            let text: UIText
            switch changed.done {
            case .set: text = UIText("oath.passwordSet")
            case .changed: text = UIText("oath.passwordChanged")
            case .cleared: text = UIText("oath.passwordRemoved")
            }
            post(.oath(.changed(keyID: d.id, Self.snapshot(changed.opened, changed.entries ?? []), text)))
        } catch {
            post(.oath(.failed(keyID: d.id, Self.failure(.password, error))))
        }
    }

    /// `path` with a leading `~/` as the home directory (a path typed in a dialog has no shell to expand it).
    static func expandingHome(_ path: String, home: String?) -> String {
        guard path == "~" || path.hasPrefix("~/"), let home, !home.isEmpty else { return path }
        return home + path.dropFirst()
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
