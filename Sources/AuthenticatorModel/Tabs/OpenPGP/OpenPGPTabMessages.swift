import KeyKit

// MARK: - Messages and commands

/// Why an OpenPGP command failed, sorted so the tab can explain it.
public enum OpenPGPFailureReason: Sendable, Hashable, ExplainedFailureReason {
    /// The key went away during the command.
    case keyGone
    /// No OpenPGP application (or no smart-card interface): why.
    case notAvailable(UIText)
    /// The card refused the password; the tries it has left.
    case wrongPassword(OpenPGP.Password, retriesLeft: Int)
    /// The password has no tries left (for the reset code also: none is set).
    case passwordBlocked(OpenPGP.Password)
    /// The key enforces PIN complexity and refused the new password (the explanation's text).
    case tooSimple(UIText)
    case other(UIText)
}

public typealias OpenPGPFailure = KeyFailure<OpenPGPTabOperation, OpenPGPFailureReason>

public enum OpenPGPTabMsg: Sendable, Equatable {
    case loaded(keyID: String, OpenPGPCardInfo)
    /// A password change, the unblock or the reset went through (the operation), and the card was read again.
    case changed(keyID: String, OpenPGPTabOperation, OpenPGPCardInfo)
    /// The touch policy of the key in `slot` is set; the card read again.
    case touchPolicySet(keyID: String, slot: OpenPGP.KeySlot, OpenPGPCardInfo)
    /// The export's file exists: the user is asked before it is replaced.
    case exportExists(keyID: String, path: String)
    case exported(keyID: String, slot: OpenPGP.KeySlot, path: String)
    /// The key attested the key in `slot` (the certificate is now the slot's), signed by `issuer`'s key; the
    /// card read again.
    case attested(keyID: String, slot: OpenPGP.KeySlot, issuer: String, OpenPGPCardInfo)
    case failed(keyID: String, OpenPGPFailure)
}

public enum OpenPGPTabCommand: Sendable, Equatable {
    /// The card at a glance (`OpenPGPOverview`).
    case load(KeyDescriptor)
    case changePIN(KeyDescriptor, current: String, new: String)
    case changeAdminPIN(KeyDescriptor, current: String, new: String)
    case setResetCode(KeyDescriptor, adminPIN: String, new: String)
    /// A new PIN with the reset code, or with the admin PIN (`resetCode` nil).
    case unblockPIN(KeyDescriptor, resetCode: String?, adminPIN: String?, new: String)
    /// The touch policy of the key in `slot`; a fixed one only once the user said yes (`confirmed`).
    case setTouchPolicy(
        KeyDescriptor, slot: OpenPGP.KeySlot, policy: OpenPGP.TouchPolicy, adminPIN: String, confirmed: Bool)
    /// The slot's certificate as PEM into `path`; an existing file only when `overwrite`.
    case export(KeyDescriptor, slot: OpenPGP.KeySlot, path: String, overwrite: Bool)
    /// The key attests the key in `slot` with the PIN (the attestation becomes the slot's certificate).
    case attest(KeyDescriptor, slot: OpenPGP.KeySlot, pin: String)
    /// The OpenPGP application back to its factory state: every key gone, the default PINs.
    case reset(KeyDescriptor)
    /// The PIN derivation on or off, with the admin PIN; the PINs become the defaults.
    case setKDF(KeyDescriptor, on: Bool, adminPIN: String)
}
