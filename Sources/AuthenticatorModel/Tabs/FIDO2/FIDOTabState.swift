import KeyKit

// MARK: - What the tab knows

/// The FIDO2 authenticator's information at a glance (getInfo and the PIN retries), as the tab shows it.
public struct FIDOInfo: Sendable, Hashable {
    public var versions: [String]
    public var extensions: [String]
    public var aaguid: String
    public var options: [String: Bool]
    /// True when a PIN is set; nil when the key has no PIN support.
    public var pinSet: Bool?
    public var retries: Int?
    /// Three wrong PINs in a row: the key must be removed and inserted again before the next try.
    public var powerCycleNeeded: Bool
    public var minPINLength: Int
    public var remainingCredentials: Int?
    public var forcePINChange: Bool
    public var credentialManagement: Bool
    /// Credential management can change a credential's user names (CTAP 2.1 credMgmt).
    public var updateUser: Bool
    /// Every credential needs the PIN (alwaysUv); nil when the key has no such setting.
    public var alwaysUV: Bool?
    /// "5.7.2" when getInfo reports a firmware version.
    public var firmware: String?
    /// The key has a fingerprint sensor (bioEnroll, or the preview's userVerificationMgmtPreview).
    public var bioEnrollment: Bool

    public init(
        versions: [String], extensions: [String] = [], aaguid: String, options: [String: Bool],
        pinSet: Bool?, retries: Int?, powerCycleNeeded: Bool = false, minPINLength: Int = 4,
        remainingCredentials: Int? = nil, forcePINChange: Bool = false, credentialManagement: Bool = true,
        updateUser: Bool = false, alwaysUV: Bool? = nil, firmware: String? = nil, bioEnrollment: Bool = false
    ) {
        self.versions = versions
        self.extensions = extensions
        self.aaguid = aaguid
        self.options = options
        self.pinSet = pinSet
        self.retries = retries
        self.powerCycleNeeded = powerCycleNeeded
        self.minPINLength = minPINLength
        self.remainingCredentials = remainingCredentials
        self.forcePINChange = forcePINChange
        self.credentialManagement = credentialManagement
        self.updateUser = updateUser
        self.alwaysUV = alwaysUV
        self.firmware = firmware
        self.bioEnrollment = bioEnrollment
    }

    public init(_ info: AuthenticatorInfo, retries: Int?, powerCycleNeeded: Bool) {
        self.init(
            versions: info.versions, extensions: info.extensions, aaguid: info.aaguidString,
            options: info.options, pinSet: info.pinSet, retries: retries,
            powerCycleNeeded: powerCycleNeeded, minPINLength: max(4, info.minPINLength),
            remainingCredentials: info.remainingDiscoverableCredentials, forcePINChange: info.forcePINChange,
            credentialManagement: info.supportsCredentialManagement,
            updateUser: info.supportsUpdateUserInformation, alwaysUV: info.alwaysUV,
            firmware: info.firmwareVersion.map { "\($0 >> 16).\(($0 >> 8) & 0xFF).\($0 & 0xFF)" },
            bioEnrollment: info.supportsBioEnrollment)
    }
}

/// A discoverable credential on the key, as the credentials list shows it.
public struct FIDOCredential: Sendable, Hashable, Identifiable {
    public var rpID: String
    public var rpName: String?
    public var userName: String?
    public var displayName: String?
    public var credentialID: [UInt8]
    public var userID: [UInt8]
    /// The credProtect level the key reports (1 to 3), if it does.
    public var credProtect: Int?
    /// The key holds a large-blob key for the credential.
    public var largeBlobKey: Bool

    public init(
        rpID: String, rpName: String? = nil, userName: String? = nil, displayName: String? = nil,
        credentialID: [UInt8], userID: [UInt8] = [], credProtect: Int? = nil, largeBlobKey: Bool = false
    ) {
        self.rpID = rpID
        self.rpName = rpName
        self.userName = userName
        self.displayName = displayName
        self.credentialID = credentialID
        self.userID = userID
        self.credProtect = credProtect
        self.largeBlobKey = largeBlobKey
    }

    public var id: String { credentialID.hex }
    /// Who the credential is for: the user name, else the display name, else nothing.
    public var who: String? { userName ?? displayName }
}

/// An enrolled fingerprint of a key with a sensor.
public struct FIDOFingerprint: Sendable, Hashable {
    public var templateID: [UInt8]
    public var name: String?

    public init(templateID: [UInt8], name: String?) {
        self.templateID = templateID
        self.name = name
    }
}

/// The dialogs of the FIDO2 tab.
public enum FIDODialogKind: Sendable, Hashable {
    /// New PIN twice (no PIN set yet).
    case setPIN
    /// Current PIN, then the new one twice.
    case changePIN
    /// The PIN; `thenList` when the credentials list asked for it.
    case verifyPIN(thenList: Bool)
    case deleteCredential(id: String)
    /// The user name and display name of a credential.
    case renameCredential(id: String)
    /// The warning before a reset.
    case reset
    /// The PIN of another key, to read its credentials beside the selected key's (`FIDOOtherKeys.swift`).
    case otherPIN(keyID: String)
}

public typealias FIDODialog = TabDialog<FIDODialogKind>

/// Where a guided reset stands.
public enum FIDOResetStage: Sendable, Hashable {
    /// The reset is on its way to this key (a touch follows).
    case sending(keyID: String)
    /// The key refused (inserted too long ago): waiting for it to be removed.
    case removeKey(KeyDescriptor)
    /// Removed: waiting for it to come back, then the reset goes at once.
    case insertKey(KeyDescriptor)
}

/// The key operations of the tab (what is running, what failed).
public enum FIDOOperation: String, KeyTabOperation {
    case load, setPIN, changePIN, verifyPIN, list, delete, update, reset

    public static let words = "fido"
    /// Reading the information and the reset say nothing after the title (the reset has its own box).
    public var workingName: String? { self == .load || self == .reset ? nil : rawValue }
}

public typealias FIDOBusy = KeyBusy<FIDOOperation>

/// The FIDO2 tab: the information, the PIN dialogs, the credentials list and the guided reset.
public struct FIDOTabState: Sendable, Hashable, KeyTabState {
    /// `unavailable`: the key has no FIDO2 application on the interface that carries it (or speaks U2F only), or
    /// it could not be read.
    public var phase: KeyTabPhase = .noKey
    /// The key the information belongs to (its descriptor id).
    public var keyID: String?
    public var info: FIDOInfo?
    public var dialog: FIDODialog?
    public var busy: FIDOBusy?
    /// The credentials once listed (nil: not listed since the tab got this key).
    public var credentials: [FIDOCredential]?
    /// The fingerprints of a key with a sensor, read with the credentials (nil: not read since the tab got
    /// this key).
    public var fingerprints: [FIDOFingerprint]?
    /// The credentials list is showing (instead of the information).
    public var showCredentials = false
    /// The selected credential's details are showing (over the list).
    public var showCredentialDetail = false
    /// The first line of the information shown (it scrolls with Up/Down when the terminal is short).
    public var infoScroll = 0
    public var selectedCredential = 0
    public var reset: FIDOResetStage?
    /// The runner holds a PIN token for this key (the token itself never enters the state).
    public var hasToken = false
    /// Something the user must know until it changes (PIN blocked, re-insert needed).
    public var alert: UIText?
    /// The other keys whose credentials the credentials view shows beside the selected key's, by key id (empty: the
    /// selected key's alone).
    public var others: [String: FIDOOtherKey] = [:]

    public init() {}

    /// True while a text field of the tab has the keyboard.
    public var textFocused: Bool { dialog != nil }

    /// The credentials in list order: by relying party, then user.
    public var sortedCredentials: [FIDOCredential] { Self.sorted(credentials ?? []) }

    /// `credentials` in list order: by relying party, then user.
    public static func sorted(_ credentials: [FIDOCredential]) -> [FIDOCredential] {
        credentials.sorted { a, b in
            if a.rpID != b.rpID { return a.rpID < b.rpID }
            return (a.who ?? "", a.id) < (b.who ?? "", b.id)
        }
    }

    public var selected: FIDOCredential? {
        let list = sortedCredentials
        guard !list.isEmpty else { return nil }
        return list[max(0, min(list.count - 1, selectedCredential))]
    }
}

// MARK: - Messages and commands

/// Why a FIDO2 command failed, sorted so the tab can explain it.
public enum FIDOFailureReason: Sendable, Hashable {
    /// The key went away during the command.
    case keyGone
    /// No FIDO2 over the smart-card interface.
    case notAvailable
    /// The key speaks U2F only: no FIDO2, so no PIN or credentials to manage.
    case u2fOnly
    case wrongPIN(retriesLeft: Int?)
    /// Too many wrong PINs: only a reset helps.
    case pinBlocked
    /// Three wrong PINs in a row: remove and re-insert the key.
    case pinAuthBlocked
    /// The key refused the new PIN (its rules).
    case policyViolation
    /// A PIN rule the session checked before sending (length, NUL).
    case pinRule(UIText)
    /// The held PIN token is no longer accepted, or there is none.
    case tokenInvalid
    /// The key does not allow this now (a reset long after insertion).
    case notAllowed
    case cancelled
    /// Not touched in time.
    case timeout
    case noPIN
    case noPINSupport
    case other(UIText)
}

public typealias FIDOFailure = KeyFailure<FIDOOperation, FIDOFailureReason>

public enum FIDOTabMsg: Sendable, Equatable {
    case loaded(keyID: String, FIDOInfo)
    /// The key started (true) or stopped (false) waiting for a touch.
    case touch(keyID: String, waiting: Bool)
    /// A PIN was set (`changed` false) or changed.
    case pinSet(keyID: String, FIDOInfo, changed: Bool)
    /// The PIN was right; the runner holds a token. With the credentials when the list asked.
    case verified(keyID: String, FIDOInfo, credentials: [FIDOCredential]?)
    case credentials(keyID: String, [FIDOCredential])
    /// The fingerprints of a key with a sensor, read with the credentials (just before their message).
    case fingerprints(keyID: String, [FIDOFingerprint])
    case deleted(keyID: String, FIDOCredential, remaining: [FIDOCredential], FIDOInfo)
    /// A credential's user names changed; the list as the key has it now.
    case updated(keyID: String, FIDOCredential, credentials: [FIDOCredential])
    case resetDone(keyID: String, FIDOInfo)
    case failed(keyID: String, FIDOFailure)
    /// Another key's FIDO2 information, for the credentials view's comparison.
    case otherInfo(keyID: String, FIDOInfo)
    /// Another key's discoverable credentials, read with its PIN.
    case otherCredentials(keyID: String, [FIDOCredential])
    /// Another key refused or failed (`load`: its information; `list`: its PIN or its credentials).
    case otherFailed(keyID: String, FIDOFailure)
}

public enum FIDOTabCommand: Sendable, Equatable {
    /// getInfo and the PIN retries.
    case load(KeyDescriptor)
    case setPIN(KeyDescriptor, new: String)
    case changePIN(KeyDescriptor, current: String, new: String)
    /// Verifies the PIN and keeps a token (credential management permission); `thenList` lists credentials.
    case verifyPIN(KeyDescriptor, pin: String, thenList: Bool)
    /// Lists the credentials with the token the runner holds.
    case listCredentials(KeyDescriptor)
    case deleteCredential(KeyDescriptor, credentialID: [UInt8])
    /// New user names for a credential (nil removes one), with the token the runner holds.
    case updateUser(KeyDescriptor, credentialID: [UInt8], userID: [UInt8], name: String?, displayName: String?)
    case reset(KeyDescriptor)
    /// The FIDO2 information of other keys, each on a connection of its own, at once.
    case loadOthers([KeyDescriptor])
    /// Another key's discoverable credentials, with its PIN (neither the PIN nor a token is kept).
    case readOther(KeyDescriptor, pin: String)
    /// Stops a wait for a touch (performed at once, not after the command that waits).
    case cancel
}

extension FIDOTabCommand {
    /// Commands the runner performs at once instead of queueing them behind the key work.
    public var runsAtOnce: Bool { self == .cancel }
}
