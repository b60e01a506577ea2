/// How the virtual key behaves where keys of different makes differ while speaking the same protocols:
/// a YubiKey's ways by default, or another key's, to test that clients cope with both.
///
/// Each profile is one case. Each way a profile can differ is one property below that answers for every
/// case (a `switch`, so a new case must say what it does everywhere); the applets and the APDU dispatch
/// ask these properties and never the case itself.
public enum VirtualKeyProfile: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A YubiKey 5 NFC: answers as much data as fits, whether or not the command carries Le.
    case yubikey
    /// ISO 7816-4 read to the letter, as keys of some other makes do: a command without Le (case 1 or 3)
    /// wants no data, so an answer that has data is held back and announced with 61xx, every time; the
    /// data goes only to commands that carry Le, in parts fetched with GET RESPONSE (or OATH's SEND
    /// REMAINING) as usual.
    case strictLe = "strict-le"
    /// A key of another make with no Management application: SELECT of its AID fails (6A82), so clients
    /// must identify the key by probing its applications.
    case noManagement = "no-management"

    /// The name `virtual-key serve --profile` takes.
    public var name: String { rawValue }

    public var description: String { name }

    /// One line for help texts.
    public var summary: String {
        switch self {
        case .yubikey: return "answers as a YubiKey 5 NFC"
        case .strictLe: return "data only for commands that carry Le; without Le the answer is 61xx and no data"
        case .noManagement: return "no Management application (clients identify the key by probing)"
        }
    }

    /// Whether a command without Le that would answer data is answered 61xx with no data instead (the data
    /// waits for a GET RESPONSE or SEND REMAINING that carries Le; one without Le gets 61xx again).
    var withholdsDataWithoutLe: Bool {
        switch self {
        case .yubikey, .noManagement: return false
        case .strictLe: return true
        }
    }

    /// Whether the key has the Management application (device information, serial, enabled applications).
    var hasManagement: Bool {
        switch self {
        case .yubikey, .strictLe: return true
        case .noManagement: return false
        }
    }

    /// The profile named `name`; the error lists the known names.
    public init(named name: String) throws(UnknownName) {
        guard let profile = VirtualKeyProfile(rawValue: name) else { throw UnknownName(name: name) }
        self = profile
    }

    /// The known names, comma-separated, in the order of the cases.
    public static var names: String { allCases.map(\.name).joined(separator: ", ") }

    public struct UnknownName: Error, Equatable, CustomStringConvertible {
        public var name: String
        public var description: String {
            "unknown virtual key profile \"\(name)\": use one of \(VirtualKeyProfile.names)"
        }
    }
}
