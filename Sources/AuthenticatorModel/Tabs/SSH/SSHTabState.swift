import KeyKit

// MARK: - What the tab knows

/// One SSH key of the list: a FIDO `ssh:` credential or a PIV slot's key.
public enum SSHTabKey: Sendable, Hashable {
    case fido(SSHKeyOnKey)
    case piv(PIVSSHKey)

    /// The key type as OpenSSH names it (`sk-ssh-ed25519@openssh.com`, `ecdsa-sha2-nistp256`, ...).
    public var typeName: String {
        switch self {
        case .fido(let k): k.key.typeName
        case .piv(let k): k.typeName
        }
    }

    /// The type as `ssh-keygen -t` names it: `ed25519-sk`, `ecdsa-sk`, `rsa`, `ecdsa`, `ed25519`.
    public var shortType: String {
        switch self {
        case .fido(let k):
            switch k.key.publicKey {
            case .ed25519: return "ed25519-sk"
            case .ecdsaP256: return "ecdsa-sk"
            }
        case .piv(let k):
            switch k.publicKey.type {
            case .rsa: return "rsa"
            case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1: return "ecdsa"
            case .ed25519: return "ed25519"
            case .x25519: return "x25519"
            }
        }
    }

    /// The `authorized_keys` line.
    public var line: String {
        switch self {
        case .fido(let k): k.authorizedKeysLine
        case .piv(let k): k.authorizedKeysLine
        }
    }

    /// SHA256, as `ssh-keygen -l` prints it.
    public var fingerprint: String {
        switch self {
        case .fido(let k): k.key.fingerprint
        case .piv(let k): k.fingerprint
        }
    }

    /// Identifies the row across reads: the credential ID, or the slot.
    public var id: String {
        switch self {
        case .fido(let k): "fido:" + k.credentialID.hex
        case .piv(let k): "piv:" + k.slot.description
        }
    }
}

/// Where the tab stands with the key's FIDO SSH keys.
public enum SSHFIDOState: Sendable, Hashable {
    /// Not read yet.
    case unknown
    /// Listed with the PIN given on this visit.
    case listed
    /// The key has a PIN, not given on this visit: the list needs it.
    case pinNeeded
    /// No PIN is set: new keys can be made, but listing them needs a PIN (credential management).
    case noPIN
    /// The key cannot list its credentials (no credential management): new keys can be made.
    case cannotList
    /// No FIDO2 here (or it could not be read): why.
    case unavailable(UIText)
}

/// What the tab read of a key: the FIDO side and the PIV side.
public struct SSHTabLoad: Sendable, Hashable {
    public var fido: SSHFIDOState
    public var fidoKeys: [SSHKeyOnKey] = []
    /// The key makes EdDSA credentials (YubiKey 5.2 and later): `ed25519` is offered first.
    public var edDSA = true
    public var minPINLength = 4
    /// The PIV slots with a key SSH can use; nil when the PIV application could not be read (`pivProblem`).
    public var pivKeys: [PIVSSHKey]?
    /// Why there are no PIV keys to show (no PIV application, no smart-card interface, a failed read).
    public var pivProblem: UIText?
}

extension SSHTabLoad {
    /// Why the FIDO keys are not in the list (nothing to say once they are listed: "none" then).
    public var fidoNote: UIText {
        switch fido {
        case .unavailable(let why): return UIText("ssh.fido.unavailable", nested: ["why": why])
        case .noPIN: return UIText("ssh.fido.noPIN")
        case .cannotList: return UIText("ssh.fido.cannotList")
        case .pinNeeded: return UIText("ssh.fido.pinNeeded")
        case .unknown, .listed: return UIText("ssh.fido.none")
        }
    }
}

/// A new FIDO SSH key, as the dialog asks for it (the options of `ykterm ssh new`).
public struct SSHNewKeyRequest: Sendable, Hashable {
    public var application: String
    public var user: String?
    public var type: SSHKeyType
    public var verifyRequired: Bool
    public var touchRequired: Bool
    /// The directory the handle file and its `.pub` go to (named as `ssh-keygen -K` names them).
    public var directory: String
    /// Existing files may be replaced (the user said yes).
    public var replacingFiles: Bool = false
    /// An SSH key on the key for the same application and user may be replaced (the user said yes).
    public var replacingKey: Bool = false
}

/// What a new key or an export may replace once the user said yes.
public enum SSHReplacement: Sendable, Hashable {
    /// The handle file or `.pub` in the directory.
    case files
    /// The SSH key the key holds for the same application and user.
    case key
}

/// The dialogs of the SSH tab.
public enum SSHDialogKind: Sendable, Hashable {
    /// The FIDO2 PIN, kept for this visit; `thenNew` opens the new-key dialog after it.
    case pin(thenNew: Bool)
    /// A new FIDO SSH key.
    case new
    /// Where the handle files of one FIDO SSH key (its credential ID), or of all, go.
    case export(credentialID: [UInt8]?)
    /// The question before a FIDO SSH key is deleted.
    case delete(credentialID: [UInt8])
}

public typealias SSHDialog = TabDialog<SSHDialogKind>

/// The fields of the SSH tab's dialogs.
public enum SSHField: String, FormFieldID {
    case pin, application, user, type, verifyRequired, touchRequired, directory
}

/// The key operations of the tab.
public enum SSHOperation: String, KeyTabOperation {
    case load, verifyPIN, new, export, delete

    public static let words = "ssh"
}

public typealias SSHBusy = KeyBusy<SSHOperation>

/// The SSH tab: the list, a key's line, and the PIN, new-key, export and delete dialogs.
public struct SSHTabState: Sendable, Hashable, KeyTabState {
    public var phase: KeyTabPhase = .noKey
    /// The key the list belongs to (its descriptor id).
    public var keyID: String?
    public var load: SSHTabLoad?
    public var dialog: SSHDialog?
    public var busy: SSHBusy?
    /// The runner holds the FIDO2 PIN given on this visit (the PIN itself never enters the state).
    public var pinHeld = false
    /// The row of `rows` with the cursor.
    public var selectedRow = 0
    /// The selected key's line and facts are shown (instead of the list).
    public var showDetails = false
    /// The PIN dialog the visit opened by itself was closed with Esc: it is not opened by itself again.
    public var pinDeclined = false
    /// What the open dialog's question is about (files or a key on the key it would replace).
    public var asking: SSHReplacement?
    /// What the user agreed the open dialog's command may replace.
    public var replacing: Set<SSHReplacement> = []

    public init() {}

    /// FIDO keys first (by application and user), then the PIV slots.
    public var rows: [SSHTabKey] {
        guard let load else { return [] }
        return load.fidoKeys.map(SSHTabKey.fido) + (load.pivKeys ?? []).map(SSHTabKey.piv)
    }

    /// The key with the cursor.
    public var selected: SSHTabKey? {
        let rows = self.rows
        guard !rows.isEmpty else { return nil }
        return rows[max(0, min(rows.count - 1, selectedRow))]
    }

    /// The FIDO SSH keys, once listed.
    public var fidoKeys: [SSHKeyOnKey] { load?.fidoKeys ?? [] }
}

// MARK: - Messages and commands

public typealias SSHFailure = KeyFailure<SSHOperation, FIDOFailureReason>

public enum SSHTabMsg: Sendable, Equatable {
    case loaded(keyID: String, SSHTabLoad)
    /// The key started (true) or stopped (false) waiting for a touch.
    case touch(keyID: String, waiting: Bool)
    /// The PIN was right (the runner keeps it for this visit): the FIDO SSH keys.
    case listed(keyID: String, [SSHKeyOnKey])
    /// Files the new key or the export would replace: the user is asked first.
    case filesExist(keyID: String, [String])
    /// The key already holds an SSH key for this application and user: the user is asked first.
    case keyExists(keyID: String, application: String, user: String?)
    /// A key was made and its files written; the FIDO SSH keys as the key has them now (nil: not listable).
    case made(keyID: String, SSHKeyOnKey, path: String, keys: [SSHKeyOnKey]?)
    /// A key was made, but its files could not be written (`problem`): the list shows it, and `e` writes them.
    case madeWithoutFiles(keyID: String, SSHKeyOnKey, problem: UIText, keys: [SSHKeyOnKey]?)
    /// Handle files were written: one path per key.
    case exported(keyID: String, paths: [String])
    case deleted(keyID: String, SSHKeyOnKey, remaining: [SSHKeyOnKey])
    case failed(keyID: String, SSHFailure)
}

public enum SSHTabCommand: Sendable, Equatable {
    /// The FIDO side (PIN state, and the SSH keys when the runner holds the PIN) and the PIV slots.
    case load(KeyDescriptor)
    /// Lists the FIDO SSH keys with `pin`, which the runner keeps for this visit when the key takes it.
    case verifyPIN(KeyDescriptor, pin: String)
    /// Makes a FIDO SSH key (with the PIN held, when the key has one) and writes its files.
    case new(KeyDescriptor, SSHNewKeyRequest)
    /// Writes the handle files and `.pub` of `keys` into `directory`; existing ones only when `overwrite`.
    case export(KeyDescriptor, [SSHKeyOnKey], directory: String, overwrite: Bool)
    /// Deletes the FIDO SSH key `credentialID` with the PIN held.
    case delete(KeyDescriptor, credentialID: [UInt8])
    /// Wipes the PIN the runner holds for the key (the visit ended, or the key left).
    case forgetPIN(keyID: String)
    /// Stops a wait for a touch (performed at once, not after the command that waits).
    case cancel
}

extension SSHTabCommand {
    /// Commands the runner performs at once instead of queueing them behind the key work.
    public var runsAtOnce: Bool {
        switch self {
        case .cancel, .forgetPIN: return true
        default: return false
        }
    }
}
