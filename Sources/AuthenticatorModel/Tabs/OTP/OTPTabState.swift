import KeyKit

/// One thing a key typed (or its NDEF tag held, or the virtual key's touch gave), classified and, when an AES
/// key is configured for its public ID, decrypted.
public struct OTPCaptureEntry: Sendable, Hashable {
    public enum Source: Sendable, Hashable { case typed, touch, ndef, pasted }

    /// The fields of a decrypted Yubico OTP whose CRC checked.
    public struct Decoded: Sendable, Hashable {
        /// Hex.
        public var privateID: String
        /// The non-volatile usage counter (yubiotp's `session`).
        public var usageCounter: Int
        /// OTPs since power-up (yubiotp's `counter`).
        public var sessionCounter: Int
        /// The 8 Hz timer, 24 bits.
        public var timestamp: Int
        /// True when the counters are not after those of an earlier capture of the same public ID.
        public var replayed: Bool = false
    }

    public enum Decryption: Sendable, Hashable {
        /// Not a Yubico OTP, or no AES key is configured for its public ID.
        case noKey
        case decoded(Decoded)
        /// The configured key gives a token whose CRC fails: a wrong key, or an altered OTP.
        case wrongKey
    }

    public var time: Double
    public var source: Source
    public var kind: OTPKind
    /// Yubico OTP and OATH-HOTP: the text as the key meant it. A static password is a secret and is not kept.
    public var text: String?
    /// Characters captured.
    public var length: Int
    public var layout: KeyboardLayout
    /// Yubico OTP: the modhex public ID; HOTP: the token identifier, when present.
    public var publicID: String?
    public var serial: UInt32?
    /// HOTP: the code.
    public var code: String?
    public var decryption: Decryption
}

/// The Yubico OTP form of the challenge-response answer shown under the captures.
public struct ChallengeResponseResult: Sendable, Hashable {
    public var keyID: String
    public var slot: Int
    /// Hex, as entered (normalised: lowercase, no spaces).
    public var challenge: String
    /// Hex.
    public var response: String
}

/// A bound character that arrived when no burst was going on: a key's OTP may start with it (modhex letters,
/// digits), so it is performed only when no further character follows within the burst gap.
public struct DeferredKey: Sendable, Hashable {
    public var character: Character
    public var time: Double
}

/// The OTP tab's state: the captures, the burst in progress, the challenge-response form and its answer.
///
/// Keyboard: while the tab is shown it listens, so every printable key comes to it (`textFocused` is true)
/// and a key's OTP is never taken as bindings. A bound character (`q`, `?`, `K`, `i`, `1`-`4`, and the tab's
/// `x`, `T`, `p`, `w`, `D` and `a`) that does not belong to a burst is performed once `detector.maxGap` has passed with no
/// further character (`wakeAt` tells the app loop when to look again), or at once when a key no key types
/// follows. The tab's other bindings are such keys: F5 / Ctrl-R read NDEF, Ctrl-T touches the virtual key,
/// Up/Down choose a capture, Del clears.
///
/// NFC: when the selected key is on an NFC reader (its ATR says so), the tab reads its NDEF tag by itself,
/// once each time the key is presented (or selected) while the tab is open.
public struct OTPTabState: Sendable {
    /// Yubico OTP AES keys by public ID (lowercase modhex), from the configuration (and, in `--virtual`
    /// mode, the virtual key's own). Secret: never shown, never logged.
    public var aesKeys: [String: [UInt8]] = [:]
    /// The config file's `[otp] parsers`: patterns that find the OTP in what a key types (a URL, say).
    public var parsers: [Config.OTPPattern] = []
    /// Newest first, at most `maxCaptures`.
    public var captures: [OTPCaptureEntry] = []
    public var selected = 0
    public var detector = BurstDetector()
    /// When the last character of the current burst came (nil: no burst).
    public var lastCharacter: Double?
    public var deferred: DeferredKey?
    /// Set while a deferred binding is performed through the app's key routing.
    var resolving = false
    /// The challenge-response form.
    public var form: Form?
    public var busy: Busy?
    /// The challenge-response slot waits for a touch.
    public var waitingForTouch = false
    public var response: ChallengeResponseResult?
    /// The last thing typed too slowly for a key: how many characters were ignored.
    public var ignoredTyping: Int?
    /// Characters dropped from bursts that a pause ended (typed by hand) since the last Enter.
    var slowCharacters = 0
    /// The key whose NDEF tag was read when it was found on an NFC reader (read once per arrival).
    public var ndefReadKeyID: String?
    /// The selected key's OTP slots, read when the tab opens on it (and after a challenge-response), and
    /// as the key reports them after each slot write.
    public var slots: OTPSlots?
    /// The program, swap, delete or access code dialog.
    public var slotDialog: OTPSlotDialog?
    /// What a slot was just programmed with that is shown once (Yubico OTP IDs and AES key, a generated
    /// HMAC key): secret, dropped when dismissed.
    public var programmed: OTPProgrammedSecrets?

    public enum Busy: Sendable, Hashable { case ndef, challenge, touch, slots }

    public static let maxCaptures = 100
    /// The tab's own printable bindings (deferred like the global ones).
    public static let challengeKey: Character = "x"
    public static let touchKey: Character = "T"
    /// Not modhex letters, which a key's OTP starts with (nor anything a person types often on its own).
    public static let programKey: Character = "p"
    public static let swapKey: Character = "w"
    public static let deleteKey: Character = "D"
    public static let accessCodeKey: Character = "a"

    public init(aesKeys: [String: [UInt8]] = [:]) {
        self.aesKeys = aesKeys
    }

    /// The tab listens to every key; false only while a deferred binding is handed to the global bindings.
    public var textFocused: Bool { !resolving }

    /// When the app should send a tick so a deferred binding is performed (nil: nothing pending).
    public var wakeAt: Double? { deferred.map { $0.time + detector.maxGap + 0.01 } }

    /// Characters of the burst in progress.
    public var pendingCount: Int { detector.pending.count }

    /// True while a burst is coming in (two characters or more within the gap): a key is typing.
    public var receiving: Bool { pendingCount >= 2 }

    public var selectedCapture: OTPCaptureEntry? {
        captures.indices.contains(selected) ? captures[selected] : nil
    }
}

/// What the OTP application's status says of its two slots, and the interface it was read over.
public struct OTPSlots: Sendable, Equatable {
    public var keyID: String
    /// Nil while unknown (being read, or the key does not tell); `problem` says why when it failed.
    public var status: OTPSession.Status?
    public var overHID: Bool = false
    public var problem: UIText?
}

/// Answers of the OTP tab's commands.
public enum OTPTabMsg: Sendable {
    case slotsRead(OTPSlots)
    /// The virtual key's touch typed this (nil: the backend cannot be touched from software).
    case touched(String?)
    case ndefRead(keyID: String, otp: String)
    case challengeWaitingForTouch(keyID: String)
    case challengeAnswered(keyID: String, slot: Int, challenge: [UInt8], response: [UInt8])
    /// A slot write went through; `slots` is the status the key reported after it.
    case slotsWritten(OTPSlotWrite, OTPSlots)
    case failed(keyID: String?, OTPTabFailure)
}

/// Why an OTP tab command failed.
public struct OTPTabFailure: Sendable, Equatable {
    public enum Operation: Sendable, Equatable { case ndef, challenge, touch, slots }
    public var operation: Operation
    public var message: UIText
    public var keyGone: Bool = false
    /// The key has no such application where it was asked (no NDEF tag, no OTP application on that interface).
    public var applicationMissing: Bool = false
}

public enum OTPTabCommand: Sendable, Equatable {
    /// Ask the backend for the OTP a touch of the (virtual) key types.
    case touch
    case readNDEF(KeyDescriptor)
    case challengeResponse(KeyDescriptor, slot: Int, challenge: [UInt8])
    /// Reads the OTP application's status (which slots are programmed) where `openOTP` finds it.
    case readSlots(KeyDescriptor)
    /// Writes `slot`; `accessCode` is the slot's current one, kept as its new one.
    case program(KeyDescriptor, slot: Int, OTPSlotProgram, accessCode: [UInt8]?)
    case swapSlots(KeyDescriptor, accessCode: [UInt8]?)
    case deleteSlot(KeyDescriptor, slot: Int, accessCode: [UInt8]?)
    /// UPDATEs `slot` with the default settings and `new` as its access code (nil: none); `current` is the
    /// slot's code now.
    case setAccessCode(KeyDescriptor, slot: Int, current: [UInt8]?, new: [UInt8]?)
}
