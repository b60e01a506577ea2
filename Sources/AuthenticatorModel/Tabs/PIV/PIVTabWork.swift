import FoundationEssentials
import Glibc
import KeyKit

/// Performs the PIV tab's commands: each opens the key's smart-card interface, selects PIV, does its work with
/// the flows the command line uses too (`PIVOverview`, `PIVSignatureCheck`), closes, and posts what came of it.
/// PINs and PUKs go to the session as `SecretBytes`, wiped when the command ends.
struct PIVTabWork: Sendable {
    let backend: any KeyBackend
    let environment: RunnerEnvironment
    let post: @Sendable (Msg) -> Void

    func perform(_ command: PIVTabCommand) async {
        switch command {
        case .load(let d):
            await session(d, .load) { s in .loaded(keyID: d.id, try await overview(s)) }
        case .verify(let d, let slot, let pin):
            await session(d, .verify) { s in
                let secret = pin.map { SecretBytes(utf8: $0) }
                defer { secret?.wipe() }
                // The slot's touch policy (firmware 5.3 and later tell it): "Touch your key" just before signing.
                let touch = PIVFeature.metadata.isSupported(by: s.version)
                    ? PIVSignatureCheck.needsTouch(try? await s.slotMetadata(slot)) : false
                let post = self.post
                let outcome = try await PIVSignatureCheck.run(s, slot: slot, pin: secret) {
                    if touch { post(.piv(.touch(keyID: d.id, waiting: true))) }
                }
                if touch { post(.piv(.touch(keyID: d.id, waiting: false))) }
                return .verified(keyID: d.id, slot: slot, outcome, try await overview(s))
            }
        case .changePIN(let d, let current, let new):
            await session(d, .changePIN) { s in
                try await withSecrets(current, new) { try await s.changePIN(old: $0, new: $1) }
                return .changed(keyID: d.id, .changePIN, try await overview(s))
            }
        case .changePUK(let d, let current, let new):
            await session(d, .changePUK) { s in
                try await withSecrets(current, new) { try await s.changePUK(old: $0, new: $1) }
                return .changed(keyID: d.id, .changePUK, try await overview(s))
            }
        case .unblockPIN(let d, let puk, let new):
            await session(d, .unblockPIN) { s in
                try await withSecrets(puk, new) { try await s.unblockPIN(puk: $0, newPIN: $1) }
                return .changed(keyID: d.id, .unblockPIN, try await overview(s))
            }
        case .export(let d, let slot, let path, let overwrite):
            let full = Self.expandHome(path)
            var status = stat()
            if !overwrite, lstat(full, &status) == 0 {
                post(.piv(.exportExists(keyID: d.id, path: path)))
                return
            }
            await session(d, .export) { s in
                guard let certificate = try await s.certificate(in: slot) else { throw PIVWorkError.noCertificate(slot) }
                // A certificate is public: readable by others, as openssl and ykman write them.
                try AtomicFile.write(Array(PEM.encode(certificate.der, label: PEM.certificate).utf8), to: full, mode: 0o644)
                return .exported(keyID: d.id, slot: slot, path: path)
            }
        }
    }

    private func overview(_ s: PIVSession) async throws -> PIVInfo {
        PIVInfo(try await PIVOverview.read(s))
    }

    /// Lends two typed secrets to `body` as `SecretBytes`, wiped after.
    private func withSecrets(_ a: String, _ b: String,
                             _ body: (SecretBytes, SecretBytes) async throws -> Void) async throws {
        let first = SecretBytes(utf8: a), second = SecretBytes(utf8: b)
        defer {
            first.wipe()
            second.wipe()
        }
        try await body(first, second)
    }

    /// Opens PIV on the key's smart-card interface, runs `body` and posts its answer; failures become `.failed`.
    private func session(_ d: KeyDescriptor, _ operation: PIVOperation,
                         _ body: (PIVSession) async throws -> PIVTabMsg) async {
        var connection: (any SmartCardConnection)?
        do {
            let c = try await backend.connect(d)
            connection = c
            let s = try await PIVSession.make(connection: c, observer: environment.observer)
            let msg = try await body(s)
            await c.close()
            post(.piv(msg))
        } catch {
            if let connection { await connection.close() }
            post(.piv(.failed(keyID: d.id, PIVFailure(operation, Self.reason(error, operation)))))
        }
    }

    /// The tab's reason for `error`: the PIN and PUK answers the tab words itself (which one, the tries left), and
    /// the explanation's text (`ErrorExplanation`) for the rest.
    static func reason(_ error: any Error, _ operation: PIVOperation) -> PIVFailureReason {
        switch error {
        case PIVWorkError.noCertificate(let slot):
            return .other(UIText("piv.noCertificate", ["slot": slot.description]))
        case PIVError.wrongPIN(let n): return n == 0 ? .pinBlocked : .wrongPIN(retriesLeft: n)
        case PIVError.pinBlocked: return .pinBlocked
        case PIVError.wrongPUK(let n): return n == 0 ? .pukBlocked : .wrongPUK(retriesLeft: n)
        case PIVError.pukBlocked: return .pukBlocked
        case PIVError.securityConditionNotSatisfied where operation == .verify: return .pinRequired
        default: break
        }
        let explanation = ErrorExplanation(error)
        switch explanation.kind {
        case .interfaceMissing, .applicationMissing: return .notAvailable(explanation.text)
        case _ where explanation.kind.keyGone: return .keyGone
        default: return .other(explanation.text)
        }
    }

    static func expandHome(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = ProcessInfo.processInfo.environment["HOME"] ?? PathString.homeDirectory()
        return home + path.dropFirst()
    }
}

/// What the tab's work refuses before asking the key further.
enum PIVWorkError: Error {
    /// The slot's certificate is gone (another program deleted it since the tab read the key).
    case noCertificate(PIV.Slot)
}
