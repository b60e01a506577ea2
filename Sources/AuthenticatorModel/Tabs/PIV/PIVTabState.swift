import FoundationEssentials
import KeyKit

// MARK: - What the tab knows

/// A slot's certificate, as the PIV tab shows it (read from `X509Certificate` once, when the key is read).
public struct PIVCertificateInfo: Sendable, Hashable {
    public var subject: String
    public var issuer: String
    public var serialHex: String
    /// The validity period, in seconds since 1970.
    public var notBefore: Double?
    public var notAfter: Double?
    /// RFC 5280's names of the key usages; nil without the extension.
    public var keyUsage: [String]?
    /// As OpenSSL writes them ("DNS:example.org").
    public var alternativeNames: [String] = []
    /// Colon-separated upper-case hex pairs.
    public var fingerprint: String
    public var signatureAlgorithm: String
    /// The PIV algorithm of the certificate's public key (nil: a key no PIV slot can hold).
    public var keyAlgorithm: PIV.Algorithm?

    /// Where the validity stands at `now`.
    public func expiry(now: Double) -> PIVExpiry {
        if let notBefore, now < notBefore { return .notYetValid }
        guard let notAfter else { return .valid(days: nil) }
        if now >= notAfter { return .expired(days: Int(((now - notAfter) / 86_400).rounded(.down))) }
        let days = Int(((notAfter - now) / 86_400).rounded(.down))
        return days < PIVCertificateInfo.warningDays ? .soon(days: days) : .valid(days: days)
    }

    /// A certificate this close to its end is shown as a warning.
    public static let warningDays = 30
}

extension PIVCertificateInfo {
    public init(_ c: X509Certificate) {
        self.init(
            subject: c.subject, issuer: c.issuer, serialHex: c.serialHex,
            notBefore: c.notBefore?.timeIntervalSince1970, notAfter: c.notAfter?.timeIntervalSince1970,
            keyUsage: c.keyUsage?.names, alternativeNames: c.alternativeNames.map(\.description),
            fingerprint: c.sha256FingerprintText, signatureAlgorithm: c.signatureAlgorithm,
            keyAlgorithm: c.subjectPublicKeyInfo.flatMap { try? AsymmetricPublicKey(spki: $0) }?.pivAlgorithm)
    }
}

/// How a certificate's validity stands.
public enum PIVExpiry: Sendable, Hashable {
    /// Valid for `days` more whole days (nil: no end known).
    case valid(days: Int?)
    /// Ends within `PIVCertificateInfo.warningDays`.
    case soon(days: Int)
    /// Ended `days` whole days ago.
    case expired(days: Int)
    case notYetValid
}

/// A slot's key, from its metadata (firmware 5.3 and later).
public struct PIVKeyInfo: Sendable, Hashable {
    public var algorithm: PIV.Algorithm
    public var pinPolicy: PIV.PINPolicy
    public var touchPolicy: PIV.TouchPolicy
    public var origin: PIV.Origin

    public init(algorithm: PIV.Algorithm, pinPolicy: PIV.PINPolicy, touchPolicy: PIV.TouchPolicy, origin: PIV.Origin) {
        self.algorithm = algorithm
        self.pinPolicy = pinPolicy
        self.touchPolicy = touchPolicy
        self.origin = origin
    }
}

/// One slot as the tab lists it.
public struct PIVSlotInfo: Sendable, Hashable {
    public var slot: PIV.Slot
    /// The key (nil: none, or firmware that does not tell).
    public var key: PIVKeyInfo?
    public var certificate: PIVCertificateInfo?
    /// The certificate object holds something that is not a certificate: why.
    public var certificateProblem: UIText?
    /// Whether the certificate's public key is the slot's key (nil when either is unknown).
    public var certificateMatchesKey: Bool?

    public init(
        slot: PIV.Slot, key: PIVKeyInfo? = nil, certificate: PIVCertificateInfo? = nil,
        certificateProblem: UIText? = nil, certificateMatchesKey: Bool? = nil
    ) {
        self.slot = slot
        self.key = key
        self.certificate = certificate
        self.certificateProblem = certificateProblem
        self.certificateMatchesKey = certificateMatchesKey
    }

    /// The key's algorithm: its metadata's, else the certificate's.
    public var algorithm: PIV.Algorithm? { key?.algorithm ?? certificate?.keyAlgorithm }
    public var isEmpty: Bool { key == nil && certificate == nil && certificateProblem == nil }
}

/// The PIV application at a glance: what `PIVOverview` read, in the tab's terms.
public struct PIVInfo: Sendable, Hashable {
    public var version: String
    public var serial: UInt32?
    public var pinRetries: Int
    /// Total tries, and whether PIN, PUK or management key are the factory defaults (5.3 and later).
    public var pinTotal: Int?
    public var pinDefault: Bool?
    /// The PUK's tries are known from metadata only (reading them otherwise would cost one).
    public var pukRetries: Int?
    public var pukTotal: Int?
    public var pukDefault: Bool?
    public var managementKey: PIV.Algorithm?
    public var managementKeyDefault: Bool?
    /// True when the firmware tells the slots' keys (GET METADATA): a slot without key metadata has no key.
    public var hasMetadata: Bool = true
    /// The slots that hold something, in slot order.
    public var slots: [PIVSlotInfo] = []

    /// The rows of the slot list: 9A, 9C, 9D and 9E always (empty or not), then the retired slots that hold
    /// something.
    public var rows: [PIVSlotInfo] {
        let main: [PIV.Slot] = [.authentication, .signature, .keyManagement, .cardAuthentication]
        let fixed = main.map { slot in slots.first { $0.slot == slot } ?? PIVSlotInfo(slot: slot) }
        return fixed + slots.filter { !main.contains($0.slot) }.sorted { $0.slot < $1.slot }
    }
}

extension PIVInfo {
    public init(_ o: PIVOverview) {
        let slots = o.slots.map { s in
            PIVSlotInfo(
                slot: s.slot,
                key: s.key.map {
                    PIVKeyInfo(
                        algorithm: $0.algorithm, pinPolicy: $0.pinPolicy,
                        touchPolicy: $0.touchPolicy, origin: $0.origin)
                },
                certificate: s.certificate.map(PIVCertificateInfo.init),
                certificateProblem: s.certificateProblem.map { ErrorExplanation($0).text },
                certificateMatchesKey: s.certificateMatchesKey)
        }
        self.init(
            version: o.version.description, serial: o.serial, pinRetries: o.pinRetries,
            pinTotal: o.pin?.totalRetries, pinDefault: o.pin?.isDefault, pukRetries: o.puk?.retriesLeft,
            pukTotal: o.puk?.totalRetries, pukDefault: o.puk?.isDefault, managementKey: o.managementKey?.algorithm,
            managementKeyDefault: o.managementKey?.isDefault,
            hasMetadata: PIVFeature.metadata.isSupported(by: o.version), slots: slots)
    }
}

/// The dialogs of the PIV tab.
public enum PIVDialogKind: Sendable, Hashable {
    /// The PIN before the key in `slot` signs the challenge.
    case verify(PIV.Slot)
    /// Current PIN, the new one twice.
    case changePIN
    /// Current PUK, the new one twice.
    case changePUK
    /// The PUK, then the new PIN twice.
    case unblockPIN
    /// The file the certificate of `slot` goes to.
    case export(PIV.Slot)
    /// A self-signed certificate for the key in `slot`, signed on the key and stored there: its subject and
    /// validity, the management key as `managementKey` says, and the PIN when `pin` (the slot's policy wants it).
    case generateCertificate(PIV.Slot, managementKey: PIVManagementKeyField, pin: Bool)
}

/// Whether the certificate dialog asks for the management key, from what the key said about it.
public enum PIVManagementKeyField: Sendable, Hashable {
    /// The key says its management key is the default: it is used without asking.
    case notAsked
    /// The key says it is not the default: it must be typed.
    case required
    /// Firmware that does not tell (before 5.3): left empty, the default is tried.
    case optional
}

public typealias PIVDialog = TabDialog<PIVDialogKind>

/// The fields of the PIV tab's dialogs.
public enum PIVField: String, FormFieldID {
    case pin, puk, current, new, confirm, path, subject, days, managementKey
}

/// The key operations of the tab.
public enum PIVOperation: String, KeyTabOperation {
    case load, verify, changePIN, changePUK, unblockPIN, export, generateCertificate, sshKey

    public static let words = "piv"
}

public typealias PIVBusy = KeyBusy<PIVOperation>

/// The PIV tab: the application at a glance, a slot's certificate in full, and the PIN, PUK, verify, export and
/// certificate dialogs.
public struct PIVTabState: Sendable, Hashable, KeyTabState {
    /// `unavailable`: the key has no PIV application, no smart-card interface, or could not be read.
    public var phase: KeyTabPhase = .noKey
    /// The key the information belongs to (its descriptor id).
    public var keyID: String?
    public var info: PIVInfo?
    public var dialog: PIVDialog?
    public var busy: PIVBusy?
    /// The row of `info.rows` with the cursor.
    public var selectedRow = 0
    /// The selected slot's certificate is shown in full (instead of the list).
    public var showDetails = false
    /// The first line of the details shown (they scroll when the terminal is short).
    public var detailsScroll = 0

    public init() {}

    public var textFocused: Bool { dialog != nil }

    /// The slot with the cursor.
    public var selected: PIVSlotInfo? {
        guard let rows = info?.rows, !rows.isEmpty else { return nil }
        return rows[max(0, min(rows.count - 1, selectedRow))]
    }

    /// Something the user must know until it changes: the PIN or the PUK is blocked.
    public var alert: UIText? {
        guard let info else { return nil }
        if info.pinRetries == 0 {
            return UIText(info.pukRetries == 0 ? "piv.alert.bothBlocked" : "piv.alert.pinBlocked")
        }
        if info.pukRetries == 0 { return UIText("piv.alert.pukBlocked") }
        return nil
    }

    /// A bound on the details' scrolling; the view shows no further than their last line.
    public static let maxDetailsScroll = 40
}
