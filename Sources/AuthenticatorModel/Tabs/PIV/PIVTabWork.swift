import FoundationEssentials
import Glibc
import KeyKit

/// Performs the PIV tab's commands with the operations the command line uses too (`PIVOperations`) and posts what
/// came of them. PINs and PUKs go to the operations as `SecretBytes`, wiped when the command ends.
struct PIVTabWork: TabWork {
    let work: KeyWork

    func perform(_ command: PIVTabCommand) async {
        switch command {
        case .load(let d):
            await run(d, .load) { .loaded(keyID: d.id, PIVInfo(try await $0.overview())) }
        case .verify(let d, let slot, let pin):
            let post = self.post
            await run(d, .verify) { piv in
                let (outcome, overview) = try await withSecret(pin) { secret in
                    // The slot's touch policy (firmware 5.3 and later tell it): "Touch your key" just before signing.
                    try await piv.verify(slot: slot, pin: secret) { post(.piv(.touch(keyID: d.id, waiting: $0))) }
                }
                return .verified(keyID: d.id, slot: slot, outcome, PIVInfo(overview))
            }
        case .changePIN(let d, let current, let new):
            await run(d, .changePIN) { piv in
                .changed(
                    keyID: d.id, .changePIN,
                    PIVInfo(try await withSecrets(current, new) { try await piv.changePIN(current: $0, new: $1) }))
            }
        case .changePUK(let d, let current, let new):
            await run(d, .changePUK) { piv in
                .changed(
                    keyID: d.id, .changePUK,
                    PIVInfo(try await withSecrets(current, new) { try await piv.changePUK(current: $0, new: $1) }))
            }
        case .unblockPIN(let d, let puk, let new):
            await run(d, .unblockPIN) { piv in
                .changed(
                    keyID: d.id, .unblockPIN,
                    PIVInfo(try await withSecrets(puk, new) { try await piv.unblockPIN(puk: $0, new: $1) }))
            }
        case .export(let d, let slot, let path, let overwrite):
            guard let full = exportTarget(path, overwrite: overwrite) else {
                return post(.piv(.exportExists(keyID: d.id, path: path)))
            }
            await run(d, .export) { piv in
                guard let certificate = try await piv.certificate(in: slot) else {
                    throw PIVOperationError.noCertificate(slot)
                }
                try writeCertificate(certificate.pem, to: full)
                return .exported(keyID: d.id, slot: slot, path: path)
            }
        case .generateCertificate(let d, let slot, let subject, let days, let pin, let managementKey):
            let post = self.post
            let touched = LockedValue(false)
            await run(d, .generateCertificate) { piv in
                let names = try PIVOperations.subject(subject)
                let certificate = try await withSecret(pin) { pinBytes in
                    try await withManagementKey(managementKey) { keyBytes in
                        // The slot's touch policy: "Touch your key" just before the key signs.
                        try await piv.generateCertificate(
                            in: slot, subject: names, days: days, pin: pinBytes, managementKey: keyBytes
                        ) {
                            touched.withLock { $0 = true }
                            post(.piv(.touch(keyID: d.id, waiting: true)))
                        }
                    }
                }
                if touched.withLock({ $0 }) { post(.piv(.touch(keyID: d.id, waiting: false))) }
                // The certificate is stored: a failed read after it does not make it a failure.
                let info = try? await piv.overview()
                return .certificateGenerated(
                    keyID: d.id, slot: slot, subject: certificate.subject, info.map { PIVInfo($0) })
            }
        case .sshKey(let d, let slot):
            await run(d, .sshKey) { piv in
                let key = try await piv.publicKey(in: slot)
                guard let line = SSHPublicKey.authorizedKeysLine(key, comment: PIVSSHKey.comment(slot)) else {
                    let algorithm = key.pivAlgorithm?.description ?? "\(key.type)"
                    return .failed(
                        keyID: d.id,
                        PIVFailure(
                            .sshKey,
                            .other(
                                UIText("piv.sshKey.unsupported", ["slot": slot.description, "algorithm": algorithm]))))
                }
                return .sshKeyRead(keyID: d.id, slot: slot, line: line)
            }
        }
    }

    /// Lends a management key typed in hex, when there is one, to `body` as `SecretBytes`, wiped after.
    private func withManagementKey<T>(_ hex: String?, _ body: (SecretBytes?) async throws -> T) async throws -> T {
        guard let hex else { return try await body(nil) }
        var bytes = try Hex.decode(hex)
        let secret = SecretBytes(wiping: &bytes)
        defer { secret.wipe() }
        return try await body(secret)
    }

    /// Runs one PIV operation on the key (`PIVOperations`, which opens and closes its interface) and posts its
    /// answer; failures become `.failed`.
    private func run(
        _ d: KeyDescriptor, _ operation: PIVOperation,
        _ body: (PIVOperations) async throws -> PIVTabMsg
    ) async {
        do {
            post(.piv(try await body(PIVOperations(BackendKey(backend, d), observer: environment.observer))))
        } catch {
            post(.piv(.failed(keyID: d.id, PIVFailure(operation, Self.reason(error, operation)))))
        }
    }

    /// The tab's reason for `error`: the PIN and PUK answers the tab words itself (which one, the tries left), and
    /// the explanation's text (`ErrorExplanation`) for the rest.
    static func reason(_ error: any Error, _ operation: PIVOperation) -> PIVFailureReason {
        switch error {
        case PIVOperationError.noCertificate(let slot):
            return .other(UIText("piv.noCertificate", ["slot": slot.description]))
        // The tab asks for the PIN when the slot wants it (the key then said so, or its policy did).
        case PIVOperationError.needs(.pin): return .pinRequired
        case PIVOperationError.needs(.managementKey): return .managementKeyRequired
        case PIVError.managementKeyAuthenticationFailed, PIVError.managementKeyResponseMismatch:
            return .wrongManagementKey
        case PIVError.wrongPIN(let n): return n == 0 ? .pinBlocked : .wrongPIN(retriesLeft: n)
        case PIVError.pinBlocked: return .pinBlocked
        case PIVError.wrongPUK(let n): return n == 0 ? .pukBlocked : .wrongPUK(retriesLeft: n)
        case PIVError.pukBlocked: return .pukBlocked
        case PIVError.securityConditionNotSatisfied where operation == .verify: return .pinRequired
        default: break
        }
        return .explained(error)
    }
}
