import ArgumentParser
import FoundationEssentials
import Glibc
import KeyKit

/// `fido info`: what the authenticator says of itself (getInfo), its PIN state, and what ykterm makes of it.
extension FIDOCommand {
    struct Info: RequestCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show versions, AAGUID, options, PIN state and retries, and credential room.")

        @OptionGroup var key: KeyOptions

        @Flag(name: .long, help: "JSON: versions, aaguid, options, pin_set, pin_retries, min_pin_length, ...")
        var json = false

        /// The command line's values, as DirectCommandLine also reads them without ArgumentParser.
        var request: Request { Request(key: key.choice, json: json) }

        /// The work of `fido info`, from the values of its command line.
        struct Request: CommandRequest, Equatable, Sendable {
            var key: KeyChoice
            var json: Bool

            func run() async throws {
                let info: AuthenticatorInfo
                let retries: Int?
                do {
                    (info, retries) = try await withCTAP2(key) { s -> (AuthenticatorInfo, Int?) in
                        let info = await s.info
                        var retries: Int?
                        // A key may refuse getPINRetries before a PIN is set (CTAP2_ERR_PIN_NOT_SET): no count.
                        if info.pinSet != nil { retries = try? await s.pinRetries().retries }
                        return (info, retries)
                    }
                } catch FIDOSessionError.ctap2NotSupported {
                    // A U2F-only key: what it says of itself is its U2F version.
                    let version = try await U2FCommand.withU2F(key) { try await $0.version() }
                    try showU2FOnly(version: version)
                    return
                }
                if json {
                    var o: [String: Any] = [
                        "versions": info.versions, "extensions": info.extensions, "aaguid": info.aaguidString,
                        "options": info.options, "pin_set": info.pinSet ?? false,
                        "pin_retries": retries.map { $0 as Any } ?? JSONNull(), "min_pin_length": info.minPINLength,
                        "pin_protocols": info.pinUVAuthProtocols, "transports": info.transports,
                        "algorithms": info.algorithms, "fido2": true,
                    ]
                    o["max_msg_size"] = info.maxMessageSize ?? JSONNull()
                    o["remaining_discoverable_credentials"] = info.remainingDiscoverableCredentials ?? JSONNull()
                    o["firmware_version"] = info.firmware.map { $0.description as Any } ?? JSONNull()
                    o["force_pin_change"] = info.forcePINChange
                    o["always_uv"] = info.alwaysUV ?? JSONNull()
                    o["enterprise_attestation"] = info.enterpriseAttestation ?? JSONNull()
                    o["max_rpids_for_min_pin_length"] = info.maxRPIDsForSetMinPINLength ?? JSONNull()
                    var other = [String: Any]()
                    for (k, v) in info.otherFields { other[Info.fieldName(k)] = Info.json(v) }
                    o["other_fields"] = other
                    try printJSON(o)
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
                    try printJSON([
                        "versions": [version], "fido2": false, "extensions": [String](), "aaguid": JSONNull(),
                        "options": [String: Bool](), "pin_set": false, "pin_retries": JSONNull(),
                        "min_pin_length": JSONNull(), "pin_protocols": [Int](), "transports": [String](),
                        "algorithms": [Int](), "max_msg_size": JSONNull(), "remaining_discoverable_credentials": JSONNull(),
                        "firmware_version": JSONNull(), "force_pin_change": false, "other_fields": [String: Any](),
                        "always_uv": JSONNull(), "enterprise_attestation": JSONNull(),
                        "max_rpids_for_min_pin_length": JSONNull(),
                    ] as [String: Any])
                    return
                }
                out(Info.field("Versions", version))
                out(Info.field("FIDO2", "not supported: this key speaks U2F only (no FIDO2 PIN, passkeys or FIDO2 "
                               + "reset); `ykterm u2f` registers and signs with it"))
            }
        }

        /// A getInfo key as the output names it: 0x13, or the text of a text key.
        static func fieldName(_ key: CBOR) -> String {
            if let n = key.int { return n < 0 ? "\(n)" : "0x" + String(n, radix: 16, uppercase: true) }
            if let t = key.string { return t }
            return key.encoded.hex
        }

        /// A CBOR value as JSON: byte strings in hex, map keys as text, tags as {"tag", "value"}.
        static func json(_ value: CBOR) -> Any {
            switch value {
            case .unsigned(let n): return n
            case .negative(let n): return n < UInt64(Int64.max) ? -1 - Int64(n) : "-1-\(n)" as Any
            case .bytes(let b): return b.hex
            case .text(let t): return t
            case .array(let a): return a.map(json)
            case .map(let m):
                var o = [String: Any]()
                for (k, v) in m { o[k.string ?? k.int.map(String.init) ?? k.encoded.hex] = json(v) }
                return o
            case .tagged(let tag, let inner): return ["tag": tag, "value": json(inner)] as [String: Any]
            case .bool(let b): return b
            case .null, .undefined: return JSONNull()
            case .float(let d): return d.isFinite ? d : "\(d)" as Any
            }
        }

        /// The text output's fields, in order.
        static func lines(_ info: AuthenticatorInfo, retries: Int?) -> [(String, String)] {
            var lines: [(String, String)] = [("Versions", info.versions.joined(separator: ", ")),
                                             ("AAGUID", info.aaguidString)]
            if let f = info.firmware { lines.append(("Firmware", f.description)) }
            switch info.pinSet {
            case .some(true):
                lines.append(("PIN", "set, " + (retries.map { "\($0) attempts left" } ?? "attempts unknown")
                              + (info.forcePINChange ? " (must be changed before use)" : "")))
            case .some(false): lines.append(("PIN", "no PIN set (set one with `ykterm fido pin set`)"))
            case .none: lines.append(("PIN", "not supported"))
            }
            lines.append(("Minimum PIN length", "\(info.minPINLength)"))
            if let on = info.alwaysUV {
                lines.append(("Always UV", on ? "on (every registration and sign-in needs the PIN)" : "off"))
            }
            if let on = info.enterpriseAttestation { lines.append(("EP attestation", on ? "enabled" : "disabled")) }
            if let r = info.remainingDiscoverableCredentials { lines.append(("Room for credentials", "\(r) more")) }
            lines.append(("Options", info.options.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.value ? "yes" : "no")" }.joined(separator: " ")))
            if !info.extensions.isEmpty { lines.append(("Extensions", info.extensions.joined(separator: ", "))) }
            if !info.transports.isEmpty { lines.append(("Transports", info.transports.joined(separator: ", "))) }
            if !info.pinUVAuthProtocols.isEmpty {
                lines.append(("PIN protocols", info.pinUVAuthProtocols.map(String.init).joined(separator: ", ")))
            }
            let other = info.otherFields
            if !other.isEmpty {
                lines.append(("Other fields", other.map { fieldName($0.key) }.joined(separator: " ")
                              + " (not interpreted; their values are in --json)"))
            }
            return lines
        }

        /// The labels' column: the longest label, its colon and a space, so every value starts in one column.
        static let labelWidth = "Room for credentials".count + 2

        static func field(_ label: String, _ value: String) -> String {
            let head = label + ":"
            return head + String.spaces(max(1, labelWidth - head.count)) + value
        }
    }
}
