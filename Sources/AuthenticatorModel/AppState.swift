import KeyKit

/// The tabs, in the order the tab bar shows them (`1`-`7` select them).
public enum Tab: Int, CaseIterable, Sendable, Hashable {
    case oath, otp, fido, apdu, piv, ssh, openpgp

    public var next: Tab { Tab(rawValue: (rawValue + 1) % Tab.allCases.count)! }
    public var previous: Tab { Tab(rawValue: (rawValue + Tab.allCases.count - 1) % Tab.allCases.count)! }

    /// The digits that select a tab ("1" to the number of tabs).
    public static let numberKeys: Set<Character> = Set(allCases.map { Character(String($0.rawValue + 1)) })
}

/// Text for the user, resolved by the view through the string tables: a key and its named arguments.
/// `literal` carries text that has no entry (an error description from the protocol library).
public struct UIText: Sendable, Hashable {
    public var key: String
    public var arguments: [String: String]
    /// Placeholders filled with texts of their own (a fact that has words of its own, as what was wrong
    /// with an answer), looked up in the same language.
    public var nested: [String: UIText]
    public var literal: String?

    public init(_ key: String, _ arguments: [String: String] = [:], nested: [String: UIText] = [:]) {
        self.key = key
        self.arguments = arguments
        self.nested = nested
        self.literal = nil
    }

    public static func literal(_ text: String) -> UIText {
        var t = UIText("literal")
        t.literal = text
        return t
    }

    /// The status line of a copy that went through: this text with the ways it went (`how`: "OSC 52, xclip").
    public func adding(how: String) -> UIText {
        var text = self
        text.arguments["how"] = how
        return text
    }

    /// How much of what the user gave a message quotes: all of it up to `excerptLimit` characters, else its start
    /// and end with its length ("3031…3839 [70000 characters]"), so that a long argument does not come back whole.
    public static let excerptLimit = 48

    public static func excerpt(_ text: String) -> UIText {
        let count = text.count
        guard count > excerptLimit else { return .literal(text) }
        return UIText(
            "input.excerpt",
            [
                "start": String(text.prefix(32)), "end": String(text.suffix(12)),
                "count": String(count),
            ])
    }
}

/// A line in the status bar, with how serious it is and until when it shows.
public struct StatusMessage: Sendable, Hashable {
    public enum Kind: Sendable, Hashable { case info, success, warning, error }
    public var text: UIText
    public var kind: Kind
    /// Seconds since 1970 after which the message is dropped (nil: until replaced).
    public var expires: Double?
    /// What the message is about, where the app acts on that (nil: nothing but its words).
    public var subject: Subject?

    /// The messages the app acts on, beyond showing them.
    public enum Subject: Sendable, Hashable {
        /// pcscd is not running: cleared when it is back, or on a tab that works without it.
        case pcscdMissing
        /// An operation the key's removal cut short (and what the user should know of it): the removal itself
        /// does not replace it.
        case operationCutShort
        /// The key waits for a touch (`TouchAlert`): the line goes when nothing waits any more.
        case touch
    }

    public init(_ text: UIText, kind: Kind = .info, expires: Double? = nil, subject: Subject? = nil) {
        self.text = text
        self.kind = kind
        self.expires = expires
        self.subject = subject
    }
}

/// A key the monitor reported, and what a probe learned about it.
public struct KeyEntry: Sendable, Hashable, Identifiable {
    public var descriptor: KeyDescriptor
    public var serial: UInt32?
    public var version: Version?
    /// "YubiKey 5 NFC" and the like, when the Management application told.
    public var model: String?
    public var info: KeyInfo?
    public var probed: Bool

    public var id: String { descriptor.id }

    public init(descriptor: KeyDescriptor) {
        self.descriptor = descriptor
        self.probed = false
    }
}

/// Whether pcscd answers.
public enum ServiceState: Sendable, Hashable {
    case unknown, available, unavailable
    /// pcscd is there but refuses this session (polkit).
    case refused

    /// pcscd serves no readers to ykterm: not reachable, or refusing.
    public var isDown: Bool { self == .unavailable || self == .refused }
}

/// Everything the app shows, and nothing else: `update` changes it, `view` draws it.
public struct AppState: Sendable {
    public var now: Double
    public var tab: Tab = .oath
    public var keys: [KeyEntry] = []
    /// The key the tabs work on.
    public var selectedKeyID: String?
    /// The serial the user chose; when a key with it arrives, it is selected again.
    public var preferredSerial: UInt32?
    public var service: ServiceState = .unknown
    public var status: StatusMessage?
    /// The latest wait for a touch (`alertTouch`): the terminal rings and notifies once per `id`.
    public var touchAlert: TouchAlert?
    public var showHelp = false
    /// The first help entry shown (the help scrolls when it does not fit).
    public var helpScroll = 0
    public var showKeySwitcher = false
    public var keySwitcherIndex = 0
    /// The names the user gave keys, by serial (`KeyNames`), read at start and changed with `n` in the device view.
    public var keyNames: [UInt32: String] = [:]
    public var oath = OATHTabState()
    public var otp = OTPTabState()
    public var fido = FIDOTabState()
    public var apdu = APDUTabState()
    public var piv = PIVTabState()
    public var ssh = SSHTabState()
    public var openpgp = OpenPGPTabState()
    /// The Management information overlay of the selected key.
    public var showDeviceInfo = false
    /// The device view's application toggles.
    public var deviceConfig = DeviceConfigState()
    public var bindings: KeyBindings
    public var quitting = false
    /// Names the virtual key's demo mode, where the status bar says so.
    public var virtualMode: Bool

    public init(
        now: Double, bindings: KeyBindings = KeyBindings(), virtualMode: Bool = false,
        preferredSerial: UInt32? = nil
    ) {
        self.now = now
        self.bindings = bindings
        self.virtualMode = virtualMode
        self.preferredSerial = preferredSerial
    }

    public var selectedKey: KeyEntry? {
        guard let id = selectedKeyID else { return nil }
        return keys.first { $0.id == id }
    }

    /// The form of the dialog open: the device view's lock code dialog over it, else the shown tab's, if any.
    public var openForm: Form? {
        if showDeviceInfo, let form = deviceConfig.lockDialog?.form ?? deviceConfig.nameDialog?.form { return form }
        return tab.model.form(self)
    }

    /// True while the shown tab has a dialog open (Tab moves between its fields, not between tabs).
    public var dialogOpen: Bool { openForm != nil }

    /// True while a text field or dialog has the keyboard, so printable keys are text, not bindings.
    public var textFocused: Bool { tab.model.textFocused(self) }
}
