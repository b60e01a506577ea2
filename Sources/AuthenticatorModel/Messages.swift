import KeyKit

/// Everything that can happen to the app: input, time, keys coming and going, and the answers of commands.
public enum Msg: Sendable {
    case keyPress(KeyPress)
    /// Text the terminal marked as pasted (bracketed paste). It never acts as key presses: a text field
    /// takes it, the OATH list opens Add with an `otpauth://` URI, the OTP tab decodes an OTP.
    case paste(String)
    /// The clock, once a second while something counts down (and at each period boundary).
    case tick(now: Double)
    case keyEvent(KeyEvent)
    case probed(keyID: String, KeyInfo?)
    /// A device configuration was written (failure: what went wrong).
    case configWritten(keyID: String, failure: UIText?)

    case pinsLoaded(deviceID: String, Set<String>)
    /// Something to tell the user in the status line (a file that could not be read was set aside).
    case notice(UIText, StatusMessage.Kind)
    case copied(Bool, UIText)
    /// The name of the key with `serial` was kept (nil: forgotten), or `problem` says why not.
    case keyNamed(serial: UInt32, name: String?, problem: UIText?)

    // The tabs' answers.
    case oath(OATHTabMsg)
    case otp(OTPTabMsg)
    case fido(FIDOTabMsg)
    case apdu(APDUTabMsg)
    case piv(PIVTabMsg)
    case ssh(SSHTabMsg)
    case openpgp(OpenPGPTabMsg)
}

/// The accounts and codes of an opened OATH application.
public struct OATHSnapshot: Sendable, Equatable {
    public var deviceID: String
    public var version: Version
    public var hasPassword: Bool
    public var entries: [OATHSession.Entry]

    public init(deviceID: String, version: Version, hasPassword: Bool, entries: [OATHSession.Entry]) {
        self.deviceID = deviceID
        self.version = version
        self.hasPassword = hasPassword
        self.entries = entries
    }
}

/// Why an OATH command failed, and what the tab does about it.
public struct OATHFailure: Sendable, Equatable {
    public enum Operation: Sendable, Equatable {
        case open, refresh, calculate(accountID: String), unlock, add, rename, delete, password
    }
    public var operation: Operation
    public var message: UIText
    /// The key went away during the command (the key monitor will say when it is back).
    public var keyGone = false
    /// The key has no OATH application.
    public var notAvailable = false
    /// The password was wrong (unlock, or the current password when changing it).
    public var wrongPassword = false
    /// An add found accounts of these IDs on the key (it replaces them only when asked to).
    public var taken: [String] = []
}

extension Command {
    /// Work the user asked for (not the bookkeeping that follows: pins saved, keys forgotten).
    var isAction: Bool {
        switch self {
        case .savePins, .loadPins, .forgetKey, .watchKeys, .probe, .nameKey, .rememberOATHAllKeys: return false
        default: return true
        }
    }

    /// The key applications the command selects on keys, and on which key (nil: the selected one); none for
    /// commands that talk to no key. Every case is named, so a new command says what it does to a key.
    var keyApplications: [(keyID: String?, name: String)] {
        switch self {
        case .probe(let d), .writeConfig(let d, _, _, _, _): return [(d.id, "Management")]
        case .oath(let c): return c.keys.map { ($0.id, "OATH") }
        case .otp: return [(nil, "OTP")]
        case .fido: return [(nil, "FIDO2")]
        case .piv: return [(nil, "PIV")]
        case .openpgp: return [(nil, "OpenPGP")]
        case .ssh(let c):
            switch c {
            // The list reads the PIV slots beside the FIDO side; the rest is FIDO, or no key at all.
            case .load: return [(nil, "PIV")]
            case .verifyPIN, .new, .delete: return [(nil, "FIDO2")]
            case .export, .forgetPIN, .cancel: return []
            }
        case .apdu, .watchKeys, .loadPins, .savePins, .forgetKey, .copy, .nameKey, .rememberOATHAllKeys, .quit:
            return []
        }
    }
}

/// Work for the runner: each is performed asynchronously and answers with messages.
public enum Command: Sendable, Equatable {
    /// Watch for keys arriving and leaving (once, at start).
    case watchKeys
    case probe(KeyDescriptor)
    /// WRITE CONFIG of the Management application (the device view's toggles and lock code): with the current
    /// lock code of a locked key, and a new one to set (`DeviceConfiguration.clearedLockCode` removes it).
    case writeConfig(
        KeyDescriptor, DeviceConfiguration, reboot: Bool, currentLockCode: [UInt8]? = nil,
        newLockCode: [UInt8]? = nil)
    case loadPins(deviceID: String)
    case savePins(deviceID: String, Set<String>)
    /// Keep `name` for the key with `serial` (nil forgets its name).
    case nameKey(serial: UInt32, name: String?)
    /// Write `[oath] all_keys` to the config file: the OATH tab's view the next start opens with.
    case rememberOATHAllKeys(Bool)
    /// Forget the derived keys the runner holds for a key that left.
    case forgetKey(keyID: String)
    /// Put text on the clipboard; `status` is what the status line says once it is there (its `how` argument, the
    /// ways it went, is added then).
    case copy(String, status: UIText)
    case quit

    // The tabs' work.
    case oath(OATHTabCommand)
    case otp(OTPTabCommand)
    case fido(FIDOTabCommand)
    case apdu(APDUTabCommand)
    case piv(PIVTabCommand)
    case ssh(SSHTabCommand)
    case openpgp(OpenPGPTabCommand)
}
