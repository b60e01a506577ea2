import FoundationEssentials
import Glibc
import KeyKit

/// What the FIDO2 tab's work keeps between commands, on the runner's side only: the PIN tokens of keys
/// (by key id, in memory, wiped when the key leaves or a PIN changes) and the connection of the command
/// that runs, so a wait for a touch can be cancelled.
final class FIDOTabRuntime: Sendable {
    private let tokens = LockedValue<[String: CTAP2Session.HeldToken]>([:])
    private let running = LockedValue<(any FIDOConnection)?>(nil)
    /// Esc came after the command opened its connection but before the key reported waiting (the connection
    /// clears its cancel flag when it sends): the cancel is repeated at the key's next keep-alive.
    private let cancelPending = LockedValue(false)

    func token(for keyID: String) -> CTAP2Session.HeldToken? {
        tokens.withLock { $0[keyID] }
    }

    func keep(_ token: CTAP2Session.HeldToken?, for keyID: String) {
        tokens.withLock { tokens in
            tokens[keyID]?.wipe()
            tokens[keyID] = token
        }
    }

    /// Drops and wipes the token of a key (it left, or its PIN changed).
    func forget(_ keyID: String) {
        keep(nil, for: keyID)
    }

    /// A command opened its connection (an earlier, stray cancel does not carry over to it).
    func started(_ connection: any FIDOConnection) {
        cancelPending.withLock { $0 = false }
        running.withLock { $0 = connection }
    }

    /// The command ended: a cancel that came too late has nothing left to stop.
    func ended() {
        running.withLock { $0 = nil }
        cancelPending.withLock { $0 = false }
    }

    var isCancelPending: Bool { cancelPending.withLock { $0 } }

    /// Asks the key to stop waiting for a touch (NFCCTAP_GETRESPONSE with the cancel flag).
    func cancel() async {
        cancelPending.withLock { $0 = true }
        let connection = running.withLock { $0 }
        await connection?.cancel()
    }
}

/// Performs the FIDO2 tab's commands: each opens the interface the key's FIDO application is on (CTAPHID on
/// USB, CTAP over the reader on NFC; `KeyBackend.connectFIDO`), does its work, closes, and posts what came
/// of it.
struct FIDOTabWork: TabWork {
    let work: KeyWork
    var runtime: FIDOTabRuntime { work.fidoRuntime }

    func perform(_ command: FIDOTabCommand) async {
        switch command {
        case .load(let d):
            await run(d, .load) { ops in .loaded(keyID: d.id, try await ops.info()) }
        case .setPIN(let d, let new):
            await run(d, .setPIN) { ops in
                let info = try await ops.setPIN(new)
                runtime.forget(d.id)
                return .pinSet(keyID: d.id, info, changed: false)
            }
        case .changePIN(let d, let current, let new):
            await run(d, .changePIN) { ops in
                let info = try await ops.changePIN(current: current, new: new)
                runtime.forget(d.id)
                return .pinSet(keyID: d.id, info, changed: true)
            }
        case .verifyPIN(let d, let pin, let thenList):
            await run(d, .verifyPIN) { ops in
                try await ops.withAuthorized(.pin(pin)) { s in
                    runtime.keep(await s.heldToken(), for: d.id)
                    if thenList { try await postFingerprints(s, keyID: d.id) }
                    let credentials = thenList ? try await FIDOOperations.credentials(s) : nil
                    return .verified(keyID: d.id, try await FIDOOperations.status(s), credentials: credentials)
                }
            }
        case .listCredentials(let d):
            await withToken(d, .list) { ops, token in
                let (credentials, prints) = try await ops.credentials(token, fingerprints: true)
                // The fingerprints are posted before the credentials they were read with.
                if let prints { post(.fido(.fingerprints(keyID: d.id, prints))) }
                return .credentials(keyID: d.id, credentials)
            }
        case .deleteCredential(let d, let id):
            await withToken(d, .delete) { ops, token in
                let (deleted, remaining, info) = try await ops.deleteCredential(id, token)
                return .deleted(keyID: d.id, deleted, remaining: remaining, info)
            }
        case .updateUser(let d, let id, _, let name, let displayName):
            await withToken(d, .update) { ops, token in
                let (updated, all) = try await ops.updateUser(
                    id, name: .some(name), displayName: .some(displayName), token)
                return .updated(keyID: d.id, updated, credentials: all)
            }
        case .reset(let d):
            runtime.forget(d.id)
            await run(d, .reset) { ops in .resetDone(keyID: d.id, try await ops.reset()) }
        case .loadOthers(let keys):
            // Each key on a connection of its own: a slow key (or one pulled out) holds up only its own answer.
            await withTaskGroup(of: Void.self) { group in
                for d in keys {
                    group.addTask {
                        do {
                            post(.fido(.otherInfo(keyID: d.id, try await otherOperations(d).info())))
                        } catch {
                            post(.fido(.otherFailed(keyID: d.id, FIDOFailure(.load, Self.reason(error, .load)))))
                        }
                    }
                }
            }
        case .readOther(let d, let pin):
            // The PIN is used once, for a token the session drops when it closes: nothing of it is kept.
            do {
                let credentials = try await otherOperations(d).withAuthorized(.pin(pin)) { s in
                    try await FIDOOperations.credentials(s)
                }
                post(.fido(.otherCredentials(keyID: d.id, credentials)))
            } catch {
                post(.fido(.otherFailed(keyID: d.id, FIDOFailure(.list, Self.reason(error, .verifyPIN)))))
            }
        case .cancel:
            await runtime.cancel()
        }
    }

    /// The FIDO operations on a key other than the selected one: no touch prompt, no cancel (reading its information
    /// and credentials needs no touch), and no PIN token kept.
    private func otherOperations(_ d: KeyDescriptor) -> FIDOOperations {
        FIDOOperations(BackendKey(backend, d, observer: environment.observer))
    }

    /// On a key with a sensor, its fingerprints, posted before the credentials they are read with (the token
    /// has the be permission; one without it leaves them unread).
    private func postFingerprints(_ s: CTAP2Session, keyID: String) async throws {
        if let prints = try await FIDOOperations.fingerprints(s) { post(.fido(.fingerprints(keyID: keyID, prints))) }
    }

    /// The FIDO operations on `d`, touches reported to the tab.
    private func operations(_ d: KeyDescriptor) -> FIDOOperations {
        let post = self.post
        return Self.operations(backend, environment, d, runtime) { post(.fido(.touch(keyID: d.id, waiting: $0))) }
    }

    /// The FIDO operations on `d` for a tab: `touch` hears when the key starts and stops waiting for a touch, and
    /// the connection is known to `runtime` so that Esc can cancel (a cancel asked for before the key started
    /// waiting reaches it at its first keep-alive).
    static func operations(
        _ backend: any KeyBackend, _ environment: RunnerEnvironment, _ d: KeyDescriptor, _ runtime: FIDOTabRuntime,
        touch: @escaping @Sendable (Bool) -> Void
    ) -> FIDOOperations {
        FIDOOperations(
            BackendKey(backend, d, observer: environment.observer),
            hooks: FIDOOperations.Hooks(
                opened: { runtime.started($0) },
                progress: { p, fido in
                    touch(p == .waitingForUserPresence)
                    if runtime.isCancelPending { Task { await fido.cancel() } }
                }))
    }

    /// Runs `body` with the operations on `d` and posts its answer; failures become `.failed`.
    private func run(
        _ d: KeyDescriptor, _ operation: FIDOOperation,
        _ body: (FIDOOperations) async throws -> FIDOTabMsg
    ) async {
        do {
            let msg = try await body(operations(d))
            runtime.ended()
            post(.fido(msg))
        } catch {
            runtime.ended()
            post(.fido(.failed(keyID: d.id, FIDOFailure(operation, Self.reason(error, operation)))))
        }
    }

    /// Runs `body` with the operations on `d` and the PIN token the runtime holds (none: the PIN is needed), which
    /// is forgotten when the key turns it down.
    private func withToken(
        _ d: KeyDescriptor, _ operation: FIDOOperation,
        _ body: (FIDOOperations, FIDOAuthorization) async throws -> FIDOTabMsg
    ) async {
        let runtime = self.runtime
        await run(d, operation) { ops in
            guard let held = runtime.token(for: d.id) else { throw CTAPError(CTAPError.pinAuthInvalid) }
            do {
                return try await body(ops, .token(held))
            } catch let e as CTAPError where e.code == CTAPError.pinAuthInvalid {
                runtime.forget(d.id)
                throw e
            }
        }
    }

    /// The tab's reason for `error`, from its kind (`ErrorExplanation`): the reasons the tab words in its own way
    /// (which PIN was wrong, what a reset needs), and the explanation's text for the rest.
    static func reason(_ error: any Error, _ operation: FIDOOperation) -> FIDOFailureReason {
        switch error as? FIDOOperationError {
        case .pinAlreadySet?: return .other(UIText("fido.pinAlreadySet"))
        case .pinChangeUncertain(let cause)?: return reason(cause, operation)
        default: break
        }
        let explanation = ErrorExplanation(error)
        switch explanation.kind {
        case .interfaceMissing, .applicationMissing: return .notAvailable
        case .hidGone: return .keyGone
        case _ where explanation.kind.keyGone: return .keyGone
        case .timeout, .touchTimeout: return .timeout
        case .pinTooShort, .pinTooLong, .pinHasNUL: return .pinRule(explanation.text)
        case .noPINSupport: return .noPINSupport
        case .u2fOnly: return .u2fOnly
        case .wrongPIN: return .wrongPIN(retriesLeft: (error as? CTAPError)?.retriesLeft)
        case .pinBlocked: return .pinBlocked
        case .pinAuthBlocked: return .pinAuthBlocked
        case .pinPolicy: return .policyViolation
        case .pinTokenInvalid, .pinRequired: return .tokenInvalid
        case .pinNotSet: return .noPIN
        case .notAllowed: return .notAllowed
        case .cancelled: return .cancelled
        case .operationDenied where operation == .reset: return .cancelled
        default: return .other(explanation.text)
        }
    }
}
