import KeyKit

/// The OpenPGP application at a glance: what `openpgp info` shows.
public struct OpenPGPOverview: Sendable, Equatable {
    public var version: Version
    public var data: OpenPGPApplicationData
    public var signatureCounter: Int?
    public var cardholder: OpenPGPCardholder?
    public var url: [UInt8]
    public var kdfEnabled: Bool
    /// The certificate (DER) each slot stores (7F21, the attestation key's in FC); a slot without one, or whose
    /// object the card does not give, is absent. Empty unless read `withCertificates`.
    public var certificates: [OpenPGP.KeySlot: [UInt8]] = [:]

    /// Reads the overview in an open session; `withCertificates` also each slot's certificate (SELECT DATA and
    /// GET DATA per slot).
    public static func read(_ s: OpenPGPSession, withCertificates: Bool = false) async throws -> OpenPGPOverview {
        let data = try await s.applicationData()
        var overview = OpenPGPOverview(
            version: s.version, data: data, signatureCounter: try? await s.signatureCounter(),
            cardholder: try? await s.cardholder(), url: (try? await s.url()) ?? [],
            kdfEnabled: try await s.kdf(capabilities: data.extendedCapabilities).isEnabled)
        if withCertificates {
            for key in data.keys {
                if let der = try? await s.certificate(key.slot), !der.isEmpty { overview.certificates[key.slot] = der }
            }
        }
        return overview
    }
}

/// Whether one VERIFY of the PIN lets the card make one signature (`always`: the PIN for every signature) or
/// several (`once`), as ykman names the two.
public enum OpenPGPSignaturePolicy: String, CaseIterable, Sendable {
    case always
    case once

    /// The policy the PW status bytes say.
    public init(_ status: OpenPGPPasswordStatus) {
        self = status.pinValidForSeveralSignatures ? .once : .always
    }
}

/// What `openpgp keys set-touch` and `keys import` must ask before they change anything.
public enum OpenPGPOperationError: Error, Equatable, Sendable {
    /// A fixed touch policy cannot be undone without replacing the key: confirm, then call again with `confirmed`.
    case touchPolicyNeedsConfirmation(OpenPGP.KeySlot, OpenPGP.TouchPolicy)
    /// The slot holds a key that an import would replace: confirm, then call again with `replacing`.
    case slotHoldsKey(OpenPGP.KeySlot)
}

/// The OpenPGP application's actions, written once for `ykterm openpgp` and the TUI's OpenPGP tab.
///
/// Each opens the key's smart-card interface (`SmartCardOpener`), selects OpenPGP, does one thing and closes the
/// connection, whether it succeeded or not. None prints, prompts or formats; the passwords come in as
/// `SecretBytes`, asked for by the face before the call.
public struct OpenPGPOperations: Sendable {
    public let opener: any SmartCardOpener
    public let observer: (@Sendable (APDUExchange) -> Void)?

    public init(_ opener: any SmartCardOpener, observer: (@Sendable (APDUExchange) -> Void)? = nil) {
        self.opener = opener
        self.observer = observer
    }

    /// Opens the smart-card interface, selects OpenPGP, runs `body` and closes the connection (also when it threw).
    public func withSession<T>(_ body: (OpenPGPSession) async throws -> T) async throws -> T {
        try await withSmartCard(opener) { connection in
            try await body(try await OpenPGPSession.make(connection: connection, observer: observer))
        }
    }

    public func overview(withCertificates: Bool = false) async throws -> OpenPGPOverview {
        try await withSession { try await OpenPGPOverview.read($0, withCertificates: withCertificates) }
    }

    /// One slot's key: its information; `noKey` when the slot is empty.
    public func keyInfo(_ slot: OpenPGP.KeySlot) async throws -> OpenPGPKeyInfo {
        try await withSession { s in
            let data = try await s.applicationData()
            guard let key = data.key(slot), key.hasKey else { throw OpenPGPError.noKey(slot) }
            return key
        }
    }

    /// Factory reset: both PINs blocked, TERMINATE, ACTIVATE.
    public func reset() async throws {
        try await withSession { try await $0.reset() }
    }

    /// Sets the tries of the PIN, the reset code and the admin PIN (admin PIN first).
    public func setRetries(user: Int, reset: Int, admin: Int, adminPIN: SecretBytes) async throws {
        try await withSession { s in
            try await s.verifyAdminPIN(adminPIN)
            try await s.setPINRetries(user: user, reset: reset, admin: admin)
        }
    }

    public func changePIN(current: SecretBytes, new: SecretBytes) async throws {
        try await withSession { try await $0.changePassword(.user, old: current, new: new) }
    }

    public func changeAdminPIN(current: SecretBytes, new: SecretBytes) async throws {
        try await withSession { try await $0.changePassword(.admin, old: current, new: new) }
    }

    public func setResetCode(_ code: SecretBytes, adminPIN: SecretBytes) async throws {
        try await withSession { s in
            try await s.verifyAdminPIN(adminPIN)
            try await s.setResetCode(code)
        }
    }

    /// Turns the card's PIN derivation on (the iterated and salted S2K over SHA-256, fresh salts: as GnuPG's
    /// kdf-setup) or off, with the admin PIN. The PIN and the admin PIN are the defaults afterwards (123456 and
    /// 12345678, typed as before: the derivation is the client's), and the reset code is gone.
    public func setKDF(_ on: Bool, adminPIN: SecretBytes) async throws {
        try await withSession { s in
            try await s.verifyAdminPIN(adminPIN)
            try await s.setKDF(on ? OpenPGPKDF.make() : OpenPGPKDF(algorithm: OpenPGPKDF.none))
        }
    }

    /// A new PIN with the reset code, or (`resetCode` nil) with the admin PIN.
    public func unblockPIN(newPIN: SecretBytes, resetCode: SecretBytes?, adminPIN: SecretBytes?) async throws {
        try await withSession { s in
            if let adminPIN, resetCode == nil { try await s.verifyAdminPIN(adminPIN) }
            try await s.unblockPIN(newPIN: newPIN, resetCode: resetCode)
        }
    }

    /// Sets a slot's touch policy with the admin PIN. A fixed policy is set only when `confirmed`; otherwise the
    /// operation ends with `touchPolicyNeedsConfirmation` before anything changed.
    public func setTouchPolicy(
        _ slot: OpenPGP.KeySlot, _ policy: OpenPGP.TouchPolicy, adminPIN: SecretBytes, confirmed: Bool
    ) async throws {
        guard confirmed || !policy.isFixed else {
            throw OpenPGPOperationError.touchPolicyNeedsConfirmation(slot, policy)
        }
        try await withSession { s in
            try await s.verifyAdminPIN(adminPIN)
            try await s.setTouchPolicy(slot, policy)
        }
    }

    /// Sets whether the PIN is asked for every signature or once per session (PW status byte 1), with the admin
    /// PIN.
    public func setSignaturePolicy(_ policy: OpenPGPSignaturePolicy, adminPIN: SecretBytes) async throws {
        try await withSession { s in
            try await s.verifyAdminPIN(adminPIN)
            try await s.setSignaturePINPolicy(severalSignatures: policy == .once)
        }
    }

    /// Imports `key` into `slot` with the admin PIN, its fingerprint and generation time (`created`) written as
    /// GnuPG computes them. A slot that holds a key is replaced only when `replacing`; otherwise the operation
    /// ends with `slotHoldsKey` before anything changed. Returns the slot's key as the card then tells it.
    public func importKey(
        _ key: AsymmetricPrivateKey, into slot: OpenPGP.KeySlot, adminPIN: SecretBytes, replacing: Bool,
        created: UInt32
    ) async throws -> OpenPGPKeyInfo {
        try await withSession { s in
            _ = try OpenPGPKeyImport.attributes(key, slot: slot)
            if !replacing, try await s.applicationData().key(slot)?.hasKey == true {
                throw OpenPGPOperationError.slotHoldsKey(slot)
            }
            try await s.verifyAdminPIN(adminPIN)
            try await s.importKey(key, into: slot, created: created)
            guard let info = try await s.applicationData().key(slot) else { throw OpenPGPError.noKey(slot) }
            return info
        }
    }

    /// The attestation of the key in `slot` (firmware 5.2), with the PIN: made by the card, then checked against
    /// the attestation certificate and the slot's public key.
    public func attest(_ slot: OpenPGP.KeySlot, pin: SecretBytes) async throws -> OpenPGPAttestation {
        try await withSession { s in
            try await s.verifyPIN(pin)
            return try await s.attest(slot)
        }
    }

    /// The certificate of `slot`; nil when it has none.
    public func certificate(_ slot: OpenPGP.KeySlot) async throws -> X509Certificate? {
        try await withSession { s in
            let der = try await s.certificate(slot)
            if der.isEmpty { return nil }
            guard let certificate = try? X509Certificate(der: der) else {
                throw OpenPGPError.malformed(Malformation(.certificate, .length(der.count)))
            }
            return certificate
        }
    }

    /// Stores `certificate` as the certificate of `slot` (replacing one there), with the admin PIN.
    public func importCertificate(_ certificate: X509Certificate, _ slot: OpenPGP.KeySlot, adminPIN: SecretBytes)
        async throws
    {
        try await withSession { s in
            try await s.verifyAdminPIN(adminPIN)
            try await s.putCertificate(slot, certificate.der)
        }
    }

    /// Deletes the certificate of `slot`, with the admin PIN.
    public func deleteCertificate(_ slot: OpenPGP.KeySlot, adminPIN: SecretBytes) async throws {
        try await withSession { s in
            try await s.verifyAdminPIN(adminPIN)
            try await s.putCertificate(slot, [])
        }
    }
}
