import ArgumentParser
import FoundationEssentials
import Glibc
import KeyKit

/// `fido info`: what the authenticator says of itself (getInfo), its PIN state, and what ykterm makes of it.
extension FIDOCommand {
    struct Info: KeyJSONCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show versions, AAGUID, options, PIN state and retries, and credential room.")

        @OptionGroup var key: KeyOptions

        @Flag(name: .long, help: "JSON: versions, aaguid, options, pin_set, pin_retries, min_pin_length, ...")
        var json = false

        /// The work of `fido info`, from the values of its command line.
        struct Request: KeyJSONRequest, Equatable, Sendable {
            var key: KeyChoice
            var json: Bool

            func run() async throws {
                let info: AuthenticatorInfo
                let retries: Int?
                do {
                    // A key may refuse getPINRetries before a PIN is set (CTAP2_ERR_PIN_NOT_SET): no count then.
                    (info, retries) = try await fidoOperations(key).authenticatorInfo()
                } catch FIDOSessionError.ctap2NotSupported {
                    // A U2F-only key: what it says of itself is its U2F version.
                    let version = try await fidoOperations(key).u2fVersion()
                    try showU2FOnly(version: version)
                    return
                }
                if json {
                    try printJSON(FIDOInfoJSON(info, pinRetries: retries))
                    return
                }
                for (label, value) in Info.lines(info, retries: retries) {
                    out(Info.field(label, value))
                }
            }

            /// A key that speaks U2F only: its U2F version, and that FIDO2 is not there. The JSON has the fields of
            /// a FIDO2 key's, empty.
            private func showU2FOnly(version: String) throws {
                if json {
                    try printJSON(FIDOInfoJSON.u2fOnly(version: version))
                    return
                }
                out(Info.field(words("cli.fido.info.versions"), version))
                out(Info.field(words("cli.fido.info.fido2"), words("cli.fido.info.u2fOnly")))
            }
        }

        /// A getInfo key as the output names it: 0x13, or the text of a text key.
        static func fieldName(_ key: CBOR) -> String {
            if let n = key.int { return n < 0 ? "\(n)" : "0x" + String(n, radix: 16, uppercase: true) }
            if let t = key.string { return t }
            return key.encoded.hex
        }

        /// A CBOR value as JSON: byte strings in hex, map keys as text, tags as {"tag", "value"}; a negative
        /// integer of Int64.min or below, and a float that is not finite, as text.
        static func json(_ value: CBOR) -> JSONValue {
            switch value {
            case .unsigned(let n): return .integer(Int128(n))
            case .negative(let n): return n < UInt64(Int64.max) ? .integer(Int128(-1 - Int64(n))) : .string("-1-\(n)")
            case .bytes(let b): return .string(b.hex)
            case .text(let t): return .string(t)
            case .array(let a): return .array(a.map(json))
            case .map(let m):
                var o = [String: JSONValue]()
                for (k, v) in m { o[k.string ?? k.int.map(String.init) ?? k.encoded.hex] = json(v) }
                return .object(o)
            case .tagged(let tag, let inner): return .object(["tag": .integer(Int128(tag)), "value": json(inner)])
            case .bool(let b): return .bool(b)
            case .null, .undefined: return .null
            case .float(let d): return d.isFinite ? .double(d) : .string("\(d)")
            }
        }

        /// The text output's fields, in order, labelled in the user's language.
        static func lines(_ info: AuthenticatorInfo, retries: Int?) -> [(String, String)] {
            var lines: [(String, String)] = [
                (words("cli.fido.info.versions"), info.versions.joined(separator: ", ")),
                (words("cli.fido.info.aaguid"), info.aaguidString),
            ]
            if let f = info.firmware { lines.append((words("cli.fido.info.firmware"), f.description)) }
            switch info.pinSet {
            case .some(true):
                let pin =
                    retries.map { words("cli.fido.info.pinSetRetries", ["count": String($0)]) }
                    ?? words("cli.fido.info.pinSetRetriesUnknown")
                lines.append(
                    (
                        words("cli.fido.info.pin"),
                        info.forcePINChange ? words("cli.fido.info.pinMustChange", ["value": pin]) : pin
                    ))
            case .some(false): lines.append((words("cli.fido.info.pin"), words("cli.fido.info.pinNotSet")))
            case .none: lines.append((words("cli.fido.info.pin"), words("cli.fido.info.notSupported")))
            }
            lines.append((words("cli.fido.info.minPINLength"), "\(info.minPINLength)"))
            if let on = info.alwaysUV {
                lines.append(
                    (words("cli.fido.info.alwaysUV"), words(on ? "cli.fido.info.alwaysUVOn" : "cli.fido.info.off")))
            }
            if let on = info.enterpriseAttestation {
                lines.append(
                    (
                        words("cli.fido.info.epAttestation"),
                        words(on ? "cli.fido.info.enabled" : "cli.fido.info.disabled")
                    ))
            }
            if let r = info.remainingDiscoverableCredentials {
                lines.append((words("cli.fido.info.room"), words("cli.fido.info.roomMore", ["count": "\(r)"])))
            }
            let (yes, no) = (words("cli.fido.info.yes"), words("cli.fido.info.no"))
            lines.append(
                (
                    words("cli.fido.info.options"),
                    info.options.sorted { $0.key < $1.key }
                        .map { "\($0.key)=\($0.value ? yes : no)" }.joined(separator: " ")
                ))
            if !info.extensions.isEmpty {
                lines.append((words("cli.fido.info.extensions"), info.extensions.joined(separator: ", ")))
            }
            if !info.transports.isEmpty {
                lines.append((words("cli.fido.info.transports"), info.transports.joined(separator: ", ")))
            }
            if !info.pinUVAuthProtocols.isEmpty {
                lines.append(
                    (
                        words("cli.fido.info.pinProtocols"),
                        info.pinUVAuthProtocols.map(String.init).joined(separator: ", ")
                    ))
            }
            let other = info.otherFields
            if !other.isEmpty {
                let fields = other.map { fieldName($0.key) }.joined(separator: " ")
                lines.append(
                    (words("cli.fido.info.otherFields"), words("cli.fido.info.otherFieldsValue", ["fields": fields])))
            }
            return lines
        }

        /// The labels the text output may have.
        static let labels = [
            "cli.fido.info.versions", "cli.fido.info.aaguid", "cli.fido.info.firmware", "cli.fido.info.pin",
            "cli.fido.info.minPINLength", "cli.fido.info.alwaysUV", "cli.fido.info.epAttestation",
            "cli.fido.info.room", "cli.fido.info.options", "cli.fido.info.extensions",
            "cli.fido.info.transports", "cli.fido.info.pinProtocols", "cli.fido.info.otherFields",
            "cli.fido.info.fido2",
        ]

        /// The labels' column: the longest label of the user's language, its colon and a space, so every value
        /// starts in one column whichever fields the key has.
        static var labelWidth: Int { (labels.map { words($0).count }.max() ?? 0) + 2 }

        static func field(_ label: String, _ value: String) -> String {
            let head = label + ":"
            return head + String.spaces(max(1, labelWidth - head.count)) + value
        }
    }
}

extension FIDOInfoJSON {
    /// A FIDO2 key's: what its getInfo says, and its PIN retries (nil when it did not say).
    init(_ info: AuthenticatorInfo, pinRetries: Int?) {
        versions = info.versions
        fido2 = true
        extensions = info.extensions
        aaguid = info.aaguidString
        options = info.options
        pinSet = info.pinSet ?? false
        self.pinRetries = pinRetries
        minPINLength = info.minPINLength
        pinProtocols = info.pinUVAuthProtocols
        transports = info.transports
        algorithms = info.algorithms
        maxMsgSize = info.maxMessageSize
        remainingDiscoverableCredentials = info.remainingDiscoverableCredentials
        firmwareVersion = info.firmware?.description
        forcePINChange = info.forcePINChange
        alwaysUV = info.alwaysUV
        enterpriseAttestation = info.enterpriseAttestation
        maxRPIDsForMinPINLength = info.maxRPIDsForSetMinPINLength
        var other = [String: JSONValue]()
        for (k, v) in info.otherFields { other[FIDOCommand.Info.fieldName(k)] = FIDOCommand.Info.json(v) }
        otherFields = other
    }

    /// A key that speaks U2F only: its U2F version.
    static func u2fOnly(version: String) -> FIDOInfoJSON {
        FIDOInfoJSON(
            versions: [version], fido2: false, extensions: [], aaguid: nil, options: [:], pinSet: false,
            pinRetries: nil, minPINLength: nil, pinProtocols: [], transports: [], algorithms: [],
            maxMsgSize: nil, remainingDiscoverableCredentials: nil, firmwareVersion: nil,
            forcePINChange: false, alwaysUV: nil, enterpriseAttestation: nil, maxRPIDsForMinPINLength: nil,
            otherFields: [:])
    }
}
