import KeyKit

// MARK: - What the tab knows

/// One key slot as the OpenPGP tab lists it.
public struct OpenPGPKeyRow: Sendable, Hashable {
    public var slot: OpenPGP.KeySlot
    public var hasKey: Bool
    /// "RSA2048", "SECP256R1", "Ed25519" (nil: attributes the card did not tell).
    public var algorithm: String?
    /// 20 bytes; all zero when none was written.
    public var fingerprint: [UInt8] = []
    /// Seconds since 1970; 0 when none was written.
    public var created: UInt32 = 0
    /// Where the key came from (firmware 5.2 and later tell it).
    public var origin: OpenPGP.KeyStatus?
    /// nil: the card has no touch policy for the slot (firmware before 4.2).
    public var touchPolicy: OpenPGP.TouchPolicy? = .off

    /// 40 hex digits in groups of four, as GnuPG shows them; nil when none was written.
    public var fingerprintText: String? { OpenPGP.fingerprintText(fingerprint) }
}

extension OpenPGPKeyRow {
    public init(_ k: OpenPGPKeyInfo) {
        self.init(
            slot: k.slot, hasKey: k.hasKey, algorithm: k.attributes?.description, fingerprint: k.fingerprint,
            created: k.generationTime, origin: k.status, touchPolicy: k.touchPolicy)
    }
}

/// The OpenPGP application at a glance, as `gpg --card-status` tells it: what `OpenPGPOverview` read, in the
/// tab's terms.
public struct OpenPGPCardInfo: Sendable, Hashable {
    /// The firmware's version ("5.7.2") and the specification's ("3.4").
    public var version: String
    public var specification: String = "3.4"
    public var serial: UInt32
    public var pinTries: Int = 3
    public var resetCodeTries: Int = 0
    public var adminPINTries: Int = 3
    /// True: one PIN entry serves several signatures; false: the PIN for every signature (GnuPG's "forced").
    public var pinForSeveralSignatures: Bool = false
    public var signatureCounter: Int? = 0
    /// As a person reads it ("Alice Example"); empty when none is set.
    public var cardholder: String = ""
    public var url: String = ""
    public var kdfEnabled: Bool = false
    /// Attestation (firmware 5.2 and later).
    public var canAttest: Bool = true
    /// Signature, decryption and authentication, in that order.
    public var keys: [OpenPGPKeyRow]

    public func tries(_ password: OpenPGP.Password) -> Int {
        switch password {
        case .user: return pinTries
        case .reset: return resetCodeTries
        case .admin: return adminPINTries
        }
    }
}

extension OpenPGPCardInfo {
    public init(_ o: OpenPGPOverview) {
        let status = o.data.passwordStatus
        let slots: [OpenPGP.KeySlot] = [.signature, .decryption, .authentication]
        self.init(
            version: o.version.description, specification: o.data.aid.versionText, serial: o.data.aid.serial,
            pinTries: status.triesUser, resetCodeTries: status.triesReset, adminPINTries: status.triesAdmin,
            pinForSeveralSignatures: status.pinValidForSeveralSignatures, signatureCounter: o.signatureCounter,
            cardholder: o.cardholder?.displayName ?? "", url: String(decoding: o.url, as: UTF8.self),
            kdfEnabled: o.kdfEnabled, canAttest: o.version >= OpenPGPTabState.attestationVersion,
            keys: slots.map { slot in
                o.data.key(slot).map(OpenPGPKeyRow.init) ?? OpenPGPKeyRow(slot: slot, hasKey: false)
            }
        )
    }
}

/// The dialogs of the OpenPGP tab.
public enum OpenPGPDialogKind: Sendable, Hashable {
    /// Current PIN, the new one twice.
    case changePIN
    /// Current admin PIN, the new one twice.
    case changeAdminPIN
    /// The admin PIN, then the new reset code twice.
    case setResetCode
    /// The reset code (`withResetCode`) or the admin PIN, then the new PIN twice.
    case unblockPIN(withResetCode: Bool)
    /// The touch policy of the key in the slot, with the admin PIN; a fixed one is asked about first.
    case touchPolicy(OpenPGP.KeySlot)
    /// The file the certificate of the slot goes to.
    case export(OpenPGP.KeySlot)
    /// The PIN, before the key attests the key in the slot.
    case attest(OpenPGP.KeySlot)
    /// The question before the reset.
    case reset
    /// The admin PIN, before the PIN derivation (KDF) is turned on or off (the PINs become the defaults).
    case kdf(on: Bool)
}

public typealias OpenPGPDialog = TabDialog<OpenPGPDialogKind>

/// The fields of the OpenPGP tab's dialogs.
public enum OpenPGPField: String, FormFieldID {
    case current, new, confirm, adminPIN, resetCode, pin, policy, path
}

/// The key operations of the tab.
public enum OpenPGPTabOperation: String, KeyTabOperation {
    case load, changePIN, changeAdminPIN, setResetCode, unblockPIN, touchPolicy, export, attest, reset, kdf

    public static let words = "openpgp"
}

public typealias OpenPGPBusy = KeyBusy<OpenPGPTabOperation>

/// The OpenPGP tab: the card at a glance (as `gpg --card-status`, read again after every change), the PIN,
/// admin PIN and reset code dialogs, the touch policies, certificates, attestation and the reset.
public struct OpenPGPTabState: Sendable, Hashable, KeyTabState {
    public var phase: KeyTabPhase = .noKey
    /// The key the information belongs to (its descriptor id).
    public var keyID: String?
    public var info: OpenPGPCardInfo?
    public var dialog: OpenPGPDialog?
    public var busy: OpenPGPBusy?
    /// The row of `info.keys` with the cursor.
    public var selectedRow = 0

    public init() {}

    public var textFocused: Bool { dialog != nil }

    /// The key slot with the cursor.
    public var selected: OpenPGPKeyRow? {
        guard let keys = info?.keys, !keys.isEmpty else { return nil }
        return keys[max(0, min(keys.count - 1, selectedRow))]
    }

    /// Attestation came with firmware 5.2.
    public static let attestationVersion = Version(5, 2, 0)
}
