import FoundationEssentials
import Glibc
import KeyKit

/// What the SSH tab's work keeps between commands, on the runner's side only: the FIDO2 PIN given on the tab's
/// visit (by key id, in locked memory, wiped when the visit ends, the key leaves or the key refuses it) and the
/// connection of the command that runs, so a wait for a touch can be cancelled.
///
/// The PIN, not a token: listing needs a token for credential management, a new key one for making a credential
/// of its own relying party, and a token serves one of them — so the PIN is asked once per visit, as the tab
/// promises, only if it is kept for the visit.
final class SSHTabRuntime: Sendable {
    private let pins = LockedValue<[String: SecretBytes]>([:])
    /// The running command's connection, for Esc (as the FIDO2 tab's).
    let connection = FIDOTabRuntime()

    /// The PIN held for `keyID`, as the FIDO operations take it.
    func pin(for keyID: String) -> String? {
        pins.withLock { pins in
            pins[keyID].map { secret in secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        }
    }

    func keep(_ pin: String, for keyID: String) {
        pins.withLock { pins in
            pins[keyID]?.wipe()
            pins[keyID] = SecretBytes(utf8: pin)
        }
    }

    /// Wipes and drops the PIN held for `keyID`.
    func forget(_ keyID: String) {
        pins.withLock { pins in
            pins[keyID]?.wipe()
            pins[keyID] = nil
        }
    }
}

/// Performs the SSH tab's commands with the operations the command line uses too (`FIDOOperations`' SSH keys,
/// `PIVOperations.sshKeys`) and posts what came of them.
struct SSHTabWork: TabWork {
    let work: KeyWork
    var runtime: SSHTabRuntime { work.sshRuntime }

    func perform(_ command: SSHTabCommand) async {
        switch command {
        case .load(let d):
            await run(d, .load) { fido in .loaded(keyID: d.id, try await load(d, fido)) }
        case .verifyPIN(let d, let pin):
            await run(d, .verifyPIN) { fido in
                let keys = try await fido.sshKeys(.pin(pin))
                runtime.keep(pin, for: d.id)
                return .listed(keyID: d.id, keys)
            }
        case .new(let d, let request):
            await make(d, request)
        case .export(let d, let keys, let directory, let overwrite):
            let dir = PathString.expandingHome(directory)
            let paths = keys.map { dir + "/" + $0.exportName }
            if !overwrite {
                let existing = paths.flatMap(SSHKeyOnKey.files(at:)).filter { access($0, F_OK) == 0 }
                if !existing.isEmpty {
                    post(.ssh(.filesExist(keyID: d.id, existing)))
                    return
                }
            }
            do {
                for (k, path) in zip(keys, paths) { try k.writeFiles(to: path) }
                post(.ssh(.exported(keyID: d.id, paths: paths)))
            } catch {
                post(.ssh(.failed(keyID: d.id, SSHFailure(.export, .other(ErrorExplanation(error).text)))))
            }
        case .delete(let d, let id):
            await run(d, .delete) { fido in
                let pin = try heldPIN(d)
                let keys = try await fido.sshKeys(.pin(pin))
                guard let k = keys.first(where: { $0.credentialID == id }) else {
                    throw CTAPError(CTAPError.noCredentials)
                }
                _ = try await fido.deleteCredential(id, .pin(pin))
                return .deleted(keyID: d.id, k, remaining: try await fido.sshKeys(.pin(pin)))
            }
        case .forgetPIN(let keyID):
            runtime.forget(keyID)
        case .cancel:
            await runtime.connection.cancel()
        }
    }

    /// The FIDO side (its SSH keys when the PIN is held) and the PIV slots with a key.
    private func load(_ d: KeyDescriptor, _ fido: FIDOOperations) async throws -> SSHTabLoad {
        var load = SSHTabLoad(fido: .unknown)
        if d.has(.fido) {
            do {
                let (info, edDSA) = try await fido.withSession { s in
                    (
                        try await FIDOOperations.status(s, readAgain: false),
                        await s.info.algorithms.contains(COSE.Algorithm.edDSA)
                    )
                }
                load.minPINLength = info.minPINLength
                load.edDSA = edDSA
                if info.pinSet != true {
                    load.fido = info.pinSet == false ? .noPIN : .cannotList
                } else if !info.credentialManagement {
                    load.fido = .cannotList
                } else if let pin = runtime.pin(for: d.id) {
                    do {
                        load.fidoKeys = try await fido.sshKeys(.pin(pin))
                        load.fido = .listed
                    } catch let e as CTAPError where e.code == CTAPError.pinInvalid {
                        // The PIN was changed elsewhere meanwhile: it is asked again.
                        runtime.forget(d.id)
                        load.fido = .pinNeeded
                    }
                } else {
                    load.fido = .pinNeeded
                }
            } catch {
                let reason = FIDOTabWork.reason(error, .load)
                if reason == .keyGone { throw error }
                load.fido = .unavailable(fidoFailureText(reason, operation: .load))
            }
        } else {
            load.fido = .unavailable(UIText("ssh.fidoNotOnKey"))
        }
        if d.has(.piv) {
            do {
                load.pivKeys = try await PIVOperations(BackendKey(backend, d), observer: environment.observer).sshKeys()
            } catch {
                let explanation = ErrorExplanation(error)
                if explanation.kind.keyGone { throw error }
                load.pivProblem = explanation.text
            }
        } else {
            load.pivProblem = notOnKeyText(d, .available, application: "PIV")
        }
        return load
    }

    /// Makes the key (files first: what they would replace is asked about before the key is touched), writes its
    /// files, and lists the keys again when the PIN is held.
    private func make(_ d: KeyDescriptor, _ request: SSHNewKeyRequest) async {
        // A user too long for the user ID is refused by the operation below, before the key is asked.
        let userID = (try? SSHKeyOnKey.userID(for: request.user)) ?? []
        let path =
            PathString.expandingHome(request.directory) + "/"
            + SSHKeyOnKey.exportName(type: request.type, application: request.application, userID: userID)
        if !request.replacingFiles {
            let existing = SSHKeyOnKey.files(at: path).filter { access($0, F_OK) == 0 }
            if !existing.isEmpty {
                post(.ssh(.filesExist(keyID: d.id, existing)))
                return
            }
        }
        await run(d, .new) { fido in
            let pin = runtime.pin(for: d.id)
            let made: SSHKeyOnKey
            do {
                made = try await fido.newSSHKey(
                    application: request.application, user: request.user, type: request.type,
                    verifyRequired: request.verifyRequired, touchRequired: request.touchRequired,
                    replacing: request.replacingKey, pin: pin)
            } catch SSHOperationError.exists(let application, let user) {
                return .keyExists(keyID: d.id, application: application, user: user)
            }
            let keys = pin == nil ? nil : try? await fido.sshKeys(.pin(pin!))
            do {
                try made.writeFiles(to: path)
            } catch {
                // The key holds the new credential: the list shows it, and `e` writes its files elsewhere.
                return .madeWithoutFiles(keyID: d.id, made, problem: ErrorExplanation(error).text, keys: keys)
            }
            return .made(keyID: d.id, made, path: path, keys: keys)
        }
    }

    /// The PIN held for `d`; none means the visit has none yet (the key then asks for it: pinRequired).
    private func heldPIN(_ d: KeyDescriptor) throws -> String {
        guard let pin = runtime.pin(for: d.id) else { throw CTAPError(CTAPError.pinRequired) }
        return pin
    }

    /// Runs `body` with the FIDO operations on `d` (touches reported to the tab, Esc able to cancel) and posts its
    /// answer; failures become `.failed`, and a PIN the key refused is forgotten.
    private func run(
        _ d: KeyDescriptor, _ operation: SSHOperation,
        _ body: (FIDOOperations) async throws -> SSHTabMsg
    ) async {
        let post = self.post
        let fido = FIDOTabWork.operations(backend, environment, d, runtime.connection) {
            post(.ssh(.touch(keyID: d.id, waiting: $0)))
        }
        do {
            let msg = try await body(fido)
            runtime.connection.ended()
            post(.ssh(msg))
        } catch {
            runtime.connection.ended()
            let reason = FIDOTabWork.reason(error, operation == .verifyPIN ? .verifyPIN : .list)
            switch reason {
            case .wrongPIN, .pinBlocked, .pinAuthBlocked, .tokenInvalid: runtime.forget(d.id)
            default: break
            }
            post(.ssh(.failed(keyID: d.id, SSHFailure(operation, reason))))
        }
    }
}
