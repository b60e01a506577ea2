import KeyKit

// MARK: - Messages and commands

/// Why a PIV command failed, sorted so the tab can explain it.
public enum PIVFailureReason: Sendable, Hashable, ExplainedFailureReason {
    /// The key went away during the command.
    case keyGone
    /// No PIV application (or no smart-card interface): why.
    case notAvailable(UIText)
    case wrongPIN(retriesLeft: Int)
    case wrongPUK(retriesLeft: Int)
    case pinBlocked
    case pukBlocked
    /// The key wanted the PIN where the tab did not expect it (firmware that does not tell the policy).
    case pinRequired
    /// The key's management key is not the default and none was typed.
    case managementKeyRequired
    /// The key refused the management key typed.
    case wrongManagementKey
    /// The key enforces PIN complexity and refused the new PIN or PUK (the explanation's text).
    case tooSimple(UIText)
    case other(UIText)
}

public typealias PIVFailure = KeyFailure<PIVOperation, PIVFailureReason>

public enum PIVTabMsg: Sendable, Equatable {
    case loaded(keyID: String, PIVInfo)
    /// The key started (true) or stopped (false) waiting for a touch.
    case touch(keyID: String, waiting: Bool)
    /// The signature check's outcome, and the application read again.
    case verified(keyID: String, slot: PIV.Slot, PIVSignatureCheck.Outcome, PIVInfo)
    /// A PIN or PUK change, or an unblock, went through (the operation), and the application read again.
    case changed(keyID: String, PIVOperation, PIVInfo)
    /// The export's file exists: the user is asked before it is replaced.
    case exportExists(keyID: String, path: String)
    case exported(keyID: String, slot: PIV.Slot, path: String)
    /// A self-signed certificate with `subject` is stored in the slot; the application read again (nil when that
    /// read failed: the tab reads it anew).
    case certificateGenerated(keyID: String, slot: PIV.Slot, subject: String, PIVInfo?)
    /// The slot's public key as an authorized_keys line, to be copied.
    case sshKeyRead(keyID: String, slot: PIV.Slot, line: String)
    case failed(keyID: String, PIVFailure)
}

public enum PIVTabCommand: Sendable, Equatable {
    /// Version, serial, tries, management key, slots (`PIVOverview`).
    case load(KeyDescriptor)
    /// The demo (`PIVSignatureCheck`): the PIN when the slot wants it, a signature, its check.
    case verify(KeyDescriptor, slot: PIV.Slot, pin: String?)
    case changePIN(KeyDescriptor, current: String, new: String)
    case changePUK(KeyDescriptor, current: String, new: String)
    case unblockPIN(KeyDescriptor, puk: String, new: String)
    /// The slot's certificate as PEM into `path`; an existing file only when `overwrite`.
    case export(KeyDescriptor, slot: PIV.Slot, path: String, overwrite: Bool)
    /// A self-signed certificate for the slot's key, signed on the key, valid from now for `days` days, stored
    /// in the slot (`PIVOperations.generateCertificate`). `subject` as `PIVOperations.subject` takes it; the
    /// management key in hex, nil when it is not asked for or left empty (the default is then used or tried).
    case generateCertificate(
        KeyDescriptor, slot: PIV.Slot, subject: String, days: Int, pin: String?, managementKey: String?)
    /// The slot's public key (`PIVOperations.publicKey`) as an authorized_keys line.
    case sshKey(KeyDescriptor, slot: PIV.Slot)
}
