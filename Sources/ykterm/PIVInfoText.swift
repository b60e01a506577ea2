import FoundationEssentials
import Glibc
import KeyKit

/// `piv info` as text and as JSON.
enum PIVInfoText {
    static func lines(_ o: PIVOverview) -> [String] {
        var lines = [String]()
        func field(_ label: String, _ value: String) { lines.append(label.padding(to: 22) + value) }
        field("PIV version", o.version.description)
        field("Serial", o.serial.map(String.init) ?? "-")
        field("PIN tries left", tries(o.pinRetries, of: o.pin?.totalRetries) + (o.pin?.isDefault == true ? " (default PIN)" : ""))
        if let puk = o.puk {
            field("PUK tries left", tries(puk.retriesLeft, of: puk.totalRetries) + (puk.isDefault ? " (default PUK)" : ""))
        }
        if let m = o.managementKey {
            field("Management key", "\(m.algorithm)" + (m.isDefault ? ", the default: change it (piv management-key change)" : "")
                  + (m.touchPolicy == .always || m.touchPolicy == .cached ? ", touch required" : ""))
        }
        if o.slots.isEmpty { lines.append("No keys or certificates.") }
        for s in o.slots {
            lines.append("")
            lines.append("Slot \(s.slot) (\(slotName(s.slot))):")
            if let key = s.key {
                field("  Key", "\(key.algorithm), \(key.origin == .generated ? "generated on the key" : "imported")")
                field("  PIN policy", name(key.pinPolicy))
                field("  Touch policy", name(key.touchPolicy))
            } else if s.algorithm != nil || o.pin == nil {
                field("  Key", s.algorithm.map { "\($0) (from the certificate)" } ?? "unknown")
            } else {
                field("  Key", "none")
            }
            if let c = s.certificate {
                field("  Subject", c.subject)
                field("  Issuer", c.issuer)
                field("  Serial", c.serialHex)
                field("  Not before", c.notBefore.map(date) ?? "-")
                field("  Not after", c.notAfter.map(date) ?? "-")
                field("  SHA-256 fingerprint", c.sha256FingerprintText)
                if s.certificateMatchesKey == false { field("  Warning", "the certificate's key is not the slot's key") }
            } else if let problem = s.certificateProblem {
                field("  Certificate", "unreadable: " + explained(problem).1)
            } else {
                field("  Certificate", "none")
            }
        }
        return lines
    }

    static func json(_ o: PIVOverview) -> PIVInfoJSON {
        PIVInfoJSON(
            version: o.version.description, serial: o.serial.map { Int($0) }, pinTries: o.pinRetries,
            pinTotalTries: o.pin?.totalRetries, pinIsDefault: o.pin?.isDefault, pukTries: o.puk?.retriesLeft,
            pukIsDefault: o.puk?.isDefault,
            managementKey: o.managementKey.map {
                PIVInfoJSON.ManagementKey(algorithm: $0.algorithm.description, isDefault: $0.isDefault,
                                          touchPolicy: name($0.touchPolicy))
            },
            slots: o.slots.map { s in
                PIVInfoJSON.Slot(
                    slot: s.slot.description, name: slotName(s.slot), algorithm: s.algorithm?.description,
                    origin: s.key.map { $0.origin == .generated ? "generated" : "imported" },
                    pinPolicy: s.key.map { name($0.pinPolicy) }, touchPolicy: s.key.map { name($0.touchPolicy) },
                    publicKeyPEM: s.key.map { PEM.encode($0.publicKey.spki, label: PEM.publicKey) },
                    certificate: s.certificate.map { c in
                        PIVInfoJSON.Certificate(
                            subject: c.subject, issuer: c.issuer, serial: c.serialHex, notBefore: c.notBefore.map(date),
                            notAfter: c.notAfter.map(date), sha256Fingerprint: c.sha256FingerprintText,
                            keyUsage: c.keyUsage?.names ?? [], subjectAlternativeNames: c.alternativeNames.map(\.description),
                            matchesKey: s.certificateMatchesKey)
                    })
            })
    }

    static func tries(_ left: Int, of total: Int?) -> String {
        total.map { "\(left) of \($0)" } ?? String(left)
    }

    static func slotName(_ slot: PIV.Slot) -> String {
        switch slot {
        case .authentication: return "authentication"
        case .signature: return "digital signature"
        case .keyManagement: return "key management"
        case .cardAuthentication: return "card authentication"
        case .attestation: return "attestation"
        default: return "retired key management"
        }
    }

    static func name(_ p: PIV.PINPolicy) -> String {
        switch p {
        case .default: return "default"
        case .never: return "never"
        case .once: return "once"
        case .always: return "always"
        case .matchOnce: return "match once"
        case .matchAlways: return "match always"
        }
    }

    static func name(_ p: PIV.TouchPolicy) -> String {
        switch p {
        case .default: return "default"
        case .never: return "never"
        case .always: return "always"
        case .cached: return "cached"
        }
    }

    /// A UTC date as ISO 8601 ("2026-11-25T10:57:36Z").
    static func date(_ d: Date) -> String {
        var t = time_t(d.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : String(n) }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}

private extension String {
    func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String.spaces(width - count)
    }
}

/// `piv info --json`. Every field is always there, null when the key does not say (a key before firmware 5.3
/// gives no PIN metadata, an empty slot no algorithm).
struct PIVInfoJSON: Encodable {
    var version: String
    var serial: Int?
    var pinTries: Int
    var pinTotalTries: Int?
    var pinIsDefault: Bool?
    var pukTries: Int?
    var pukIsDefault: Bool?
    var managementKey: ManagementKey?
    var slots: [Slot]

    enum CodingKeys: String, CodingKey {
        case version, serial, slots
        case pinTries = "pin_tries"
        case pinTotalTries = "pin_total_tries"
        case pinIsDefault = "pin_is_default"
        case pukTries = "puk_tries"
        case pukIsDefault = "puk_is_default"
        case managementKey = "management_key"
    }

    struct ManagementKey: Encodable {
        var algorithm: String
        var isDefault: Bool
        var touchPolicy: String

        enum CodingKeys: String, CodingKey {
            case algorithm
            case isDefault = "is_default"
            case touchPolicy = "touch_policy"
        }
    }

    struct Slot: Encodable {
        var slot: String
        var name: String
        var algorithm: String?
        var origin: String?
        var pinPolicy: String?
        var touchPolicy: String?
        var publicKeyPEM: String?
        var certificate: Certificate?

        enum CodingKeys: String, CodingKey {
            case slot, name, algorithm, origin, certificate
            case pinPolicy = "pin_policy"
            case touchPolicy = "touch_policy"
            case publicKeyPEM = "public_key_pem"
        }
    }

    struct Certificate: Encodable {
        var subject: String
        var issuer: String
        var serial: String
        var notBefore: String?
        var notAfter: String?
        var sha256Fingerprint: String
        var keyUsage: [String]
        var subjectAlternativeNames: [String]
        var matchesKey: Bool?

        enum CodingKeys: String, CodingKey {
            case subject, issuer, serial
            case notBefore = "not_before"
            case notAfter = "not_after"
            case sha256Fingerprint = "sha256_fingerprint"
            case keyUsage = "key_usage"
            case subjectAlternativeNames = "subject_alternative_names"
            case matchesKey = "matches_key"
        }
    }
}
