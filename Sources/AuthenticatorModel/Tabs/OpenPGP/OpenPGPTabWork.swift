import FoundationEssentials
import Glibc
import KeyKit

/// Performs the OpenPGP tab's commands with the operations the command line uses too (`OpenPGPOperations`) and
/// posts what came of them. Passwords go to the operations as `SecretBytes`, wiped when the command ends.
struct OpenPGPTabWork: TabWork {
    let work: KeyWork

    func perform(_ command: OpenPGPTabCommand) async {
        switch command {
        case .load(let d):
            await run(d, .load) { .loaded(keyID: d.id, OpenPGPCardInfo(try await $0.overview())) }
        case .changePIN(let d, let current, let new):
            await run(d, .changePIN) { ops in
                try await withSecrets(current, new) { try await ops.changePIN(current: $0, new: $1) }
                return .changed(keyID: d.id, .changePIN, OpenPGPCardInfo(try await ops.overview()))
            }
        case .changeAdminPIN(let d, let current, let new):
            await run(d, .changeAdminPIN) { ops in
                try await withSecrets(current, new) { try await ops.changeAdminPIN(current: $0, new: $1) }
                return .changed(keyID: d.id, .changeAdminPIN, OpenPGPCardInfo(try await ops.overview()))
            }
        case .setResetCode(let d, let adminPIN, let new):
            await run(d, .setResetCode) { ops in
                try await withSecrets(adminPIN, new) { try await ops.setResetCode($1, adminPIN: $0) }
                return .changed(keyID: d.id, .setResetCode, OpenPGPCardInfo(try await ops.overview()))
            }
        case .unblockPIN(let d, let resetCode, let adminPIN, let new):
            await run(d, .unblockPIN) { ops in
                try await withSecrets(resetCode ?? adminPIN ?? "", new) { first, newPIN in
                    try await ops.unblockPIN(
                        newPIN: newPIN, resetCode: resetCode == nil ? nil : first,
                        adminPIN: resetCode == nil ? first : nil)
                }
                return .changed(keyID: d.id, .unblockPIN, OpenPGPCardInfo(try await ops.overview()))
            }
        case .setTouchPolicy(let d, let slot, let policy, let adminPIN, let confirmed):
            await run(d, .touchPolicy) { ops in
                try await withSecret(adminPIN) {
                    try await ops.setTouchPolicy(slot, policy, adminPIN: $0, confirmed: confirmed)
                }
                return .touchPolicySet(keyID: d.id, slot: slot, OpenPGPCardInfo(try await ops.overview()))
            }
        case .export(let d, let slot, let path, let overwrite):
            guard let full = exportTarget(path, overwrite: overwrite) else {
                return post(.openpgp(.exportExists(keyID: d.id, path: path)))
            }
            await run(d, .export) { ops in
                guard let certificate = try await ops.certificate(slot) else {
                    return .failed(
                        keyID: d.id,
                        OpenPGPFailure(
                            .export, .other(UIText("openpgp.noCertificate", ["slot": openpgpSlotLabel(slot)]))))
                }
                try writeCertificate(certificate.pem, to: full)
                return .exported(keyID: d.id, slot: slot, path: path)
            }
        case .attest(let d, let slot, let pin):
            await run(d, .attest) { ops in
                let attestation = try await withSecret(pin) { try await ops.attest(slot, pin: $0) }
                return .attested(
                    keyID: d.id, slot: slot, issuer: attestation.attestationCertificate.subject,
                    OpenPGPCardInfo(try await ops.overview()))
            }
        case .reset(let d):
            await run(d, .reset) { ops in
                try await ops.reset()
                return .changed(keyID: d.id, .reset, OpenPGPCardInfo(try await ops.overview()))
            }
        case .setKDF(let d, let on, let adminPIN):
            await run(d, .kdf) { ops in
                try await withSecret(adminPIN) { try await ops.setKDF(on, adminPIN: $0) }
                return .changed(keyID: d.id, .kdf, OpenPGPCardInfo(try await ops.overview()))
            }
        }
    }

    /// Runs one OpenPGP operation on the key (`OpenPGPOperations`, which opens and closes its interface for each
    /// call) and posts its answer; failures become `.failed`.
    private func run(
        _ d: KeyDescriptor, _ operation: OpenPGPTabOperation,
        _ body: (OpenPGPOperations) async throws -> OpenPGPTabMsg
    ) async {
        do {
            post(.openpgp(try await body(OpenPGPOperations(BackendKey(backend, d), observer: environment.observer))))
        } catch {
            post(.openpgp(.failed(keyID: d.id, OpenPGPFailure(operation, Self.reason(error)))))
        }
    }

    /// The tab's reason for `error`: the password answers the tab words itself (which one, the tries left), and
    /// the explanation's text (`ErrorExplanation`) for the rest.
    static func reason(_ error: any Error) -> OpenPGPFailureReason {
        switch error {
        case OpenPGPError.wrongPassword(let p, let n):
            return n == 0 ? .passwordBlocked(p) : .wrongPassword(p, retriesLeft: n)
        case OpenPGPError.passwordBlocked(let p): return .passwordBlocked(p)
        default: break
        }
        return .explained(error)
    }
}
