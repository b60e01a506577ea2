import KeyKit

/// How the virtual key behaves where keys of different makes differ while speaking the same protocols:
/// a YubiKey's ways by default, or another key's, to test that clients cope with both.
///
/// Each profile is one case and differs from a YubiKey in one way. Each way is one property below: a
/// `switch` naming the profiles that differ there, the rest (`default`) doing what a YubiKey does. The
/// applets and the APDU dispatch ask these properties and never the case itself.
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
    /// A Type 4 tag whose NDEF message is in file E105, not E104: only the capability container says where.
    case ndefElsewhere = "ndef-elsewhere"
    /// OATH without its optional commands: RESET answers 6D00, SET CODE 6E00 and RENAME 6A81.
    case oathBasic = "oath-basic"
    /// CTAP2 with PIN/UV auth protocol 1 only (getInfo lists [1]; protocol 2 is refused).
    case pinProtocol1 = "pin-protocol-1"
    /// CTAP2 with PIN/UV auth protocol 2 only (getInfo lists [2]; protocol 1 is refused).
    case pinProtocol2 = "pin-protocol-2"
    /// CTAP2 whose getInfo carries fields, versions, options and extensions no client knows yet.
    case ctapUnknownFields = "ctap-unknown-fields"
    /// A U2F-only key: the FIDO application speaks U2F (CTAP1) and refuses every CTAP2 command.
    case u2fOnly = "u2f-only"
    /// CTAP2 that refuses getPinRetries (CTAP2_ERR_PIN_NOT_SET) while no PIN is set.
    case pinRetriesRefused = "pin-retries-refused"
    /// CTAP2 that sends keepalives for 8 seconds before answering each command that needs the user.
    case slowKeepalive = "slow-keepalive"
    /// A YubiKey Bio: a fingerprint sensor with authenticatorBioEnrollment (getInfo option bioEnroll, the
    /// be permission); each capture answers after a short delay with the next sample status of the
    /// authenticator's sequence (good by default), and a template needs five good samples.
    case yubikeyBio = "yubikey-bio"

    /// The name `virtual-key serve --profile` takes.
    public var name: String { rawValue }

    public var description: String { name }

    /// One line for help texts.
    public var summary: String {
        switch self {
        case .yubikey: return "answers as a YubiKey 5 NFC"
        case .strictLe: return "data only for commands that carry Le; without Le the answer is 61xx and no data"
        case .noManagement: return "no Management application (clients identify the key by probing)"
        case .ndefElsewhere: return "NDEF message in file E105 (named by the capability container)"
        case .oathBasic: return "OATH without RESET, SET CODE and RENAME (6D00, 6E00, 6A81)"
        case .pinProtocol1: return "CTAP2 with PIN/UV auth protocol 1 only"
        case .pinProtocol2: return "CTAP2 with PIN/UV auth protocol 2 only"
        case .ctapUnknownFields: return "getInfo with fields, options and extensions no client knows"
        case .u2fOnly: return "U2F only: every CTAP2 command is refused"
        case .pinRetriesRefused: return "getPinRetries refused while no PIN is set"
        case .slowKeepalive: return "keepalives for 8 s before each answer that needs the user"
        case .yubikeyBio: return "a YubiKey Bio: fingerprint enrollment (bioEnroll) with a simulated sensor"
        }
    }

    /// Whether a command without Le that would answer data is answered 61xx with no data instead (the data
    /// waits for a GET RESPONSE or SEND REMAINING that carries Le; one without Le gets 61xx again).
    var withholdsDataWithoutLe: Bool {
        switch self {
        case .strictLe: return true
        default: return false
        }
    }

    /// Whether the key has the Management application (device information, serial, enabled applications).
    var hasManagement: Bool {
        switch self {
        case .noManagement: return false
        default: return true
        }
    }

    /// The file identifier of the NDEF message, as the capability container names it.
    var ndefFile: [UInt8] {
        switch self {
        case .ndefElsewhere: return [0xE1, 0x05]
        default: return [0xE1, 0x04]
        }
    }

    /// OATH instructions this key does not have, with the status word it answers them.
    var refusedOATHInstructions: [UInt8: StatusWord] {
        switch self {
        case .oathBasic:
            return [
                YKOATH.Ins.reset: .invalidInstruction, YKOATH.Ins.setCode: .classNotSupported,
                YKOATH.Ins.rename: .functionNotSupported,
            ]
        default: return [:]
        }
    }

    /// Whether the FIDO application speaks CTAP2. Without it the key is U2F only: NFCCTAP_MSG answers 6D00,
    /// the FIDO HID interface announces no CBOR (CTAPHID_CBOR is an invalid command), and the Management
    /// application lists U2F without FIDO2.
    var speaksCTAP2: Bool {
        switch self {
        case .u2fOnly: return false
        default: return true
        }
    }

    /// Whether the FIDO authenticator has a fingerprint sensor and authenticatorBioEnrollment.
    public var hasBioEnrollment: Bool {
        switch self {
        case .yubikeyBio: return true
        default: return false
        }
    }

    /// The device information the Management application gives (over CCID and the HID interfaces): the
    /// state's, without FIDO2 on a key that does not speak CTAP2.
    func deviceInfo(_ state: VirtualKeyState) -> DeviceInfo {
        var info = state.deviceInfo
        if !speaksCTAP2 {
            info.supportedUSB.remove(.fido2)
            info.enabledUSB.remove(.fido2)
            info.supportedNFC?.remove(.fido2)
            info.enabledNFC?.remove(.fido2)
        }
        return info
    }

    /// The PIN/UV auth protocols the FIDO authenticator offers, in getInfo's order (the preferred first); a
    /// request naming another is refused with CTAP1_ERR_INVALID_PARAMETER, as CTAP 2.1 says.
    var pinUVAuthProtocols: [Int] {
        switch self {
        case .pinProtocol1: return [1]
        case .pinProtocol2: return [2]
        default: return [2, 1]
        }
    }

    /// What getInfo carries beyond the authenticator's own entries: versions, extensions and options added
    /// to its lists, and fields under keys of their own.
    var getInfoAdditions: GetInfoAdditions {
        switch self {
        case .ctapUnknownFields: return .unknownToClients
        default: return GetInfoAdditions()
        }
    }

    /// Whether getPinRetries is refused with CTAP2_ERR_PIN_NOT_SET while no PIN is set (instead of the count).
    var refusesPINRetriesWithoutPIN: Bool {
        switch self {
        case .pinRetriesRefused: return true
        default: return false
        }
    }

    /// The KEEPALIVE statuses a CTAP2 command that needs the user reports before its answer, each for so
    /// many seconds, ahead of any simulated touch (a YubiKey answers as soon as it is touched).
    var keepalivesBeforeUser: [KeepalivePhase] {
        switch self {
        case .slowKeepalive:
            return [
                KeepalivePhase(status: CTAPHID.KeepaliveStatus.processing, seconds: 4),
                KeepalivePhase(status: CTAPHID.KeepaliveStatus.userPresenceNeeded, seconds: 4),
            ]
        default: return []
        }
    }

    /// A stretch of time during which the FIDO authenticator keeps reporting one KEEPALIVE status.
    struct KeepalivePhase: Sendable, Equatable {
        var status: UInt8
        var seconds: Double
    }

    /// Entries added to getInfo's answer.
    struct GetInfoAdditions: Sendable, Equatable {
        var versions: [String] = []
        var extensions: [String] = []
        var options: [String: Bool] = [:]
        var fields: [CBOR: CBOR] = [:]

        /// A key newer than every client: versions, extensions and options of later (or private)
        /// specifications, fields of CTAP 2.1 and 2.2 that few clients read, and fields under keys no
        /// specification has given out yet, holding maps, arrays, byte strings, negative numbers and
        /// booleans, at most four levels deep and of the types CTAP2's CBOR allows.
        static let unknownToClients = GetInfoAdditions(
            versions: ["FIDO_2_2", "FIDO_3_0"],
            extensions: ["thirdPartyPayment", "x-vendor-telemetry"],
            options: ["futureOption": true, "x-vendor-mode": false],
            fields: [
                0x13: ["FIDO": 2],  // certifications (CTAP 2.1)
                0x18: false,  // longTouchForReset (CTAP 2.2)
                0x21: [1: [.bytes([0x01, 0x02]), -5], "vendor": ["mode": "quiet", "level": 3]],
                0x30: [1, -1, "two", .bytes([0x03]), true, [4, [5]]],
                0x7F: .bytes([0xDE, 0xAD, 0xBE, 0xEF]),
                0x1000: "a field past every known key",
            ])
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
