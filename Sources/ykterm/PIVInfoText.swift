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

    static func json(_ o: PIVOverview) -> [String: Any] {
        var object: [String: Any] = [
            "version": o.version.description,
            "serial": o.serial.map { Int($0) as Any } ?? JSONNull(),
            "pin_tries": o.pinRetries,
            "pin_total_tries": o.pin.map { $0.totalRetries as Any } ?? JSONNull(),
            "pin_is_default": o.pin.map { $0.isDefault as Any } ?? JSONNull(),
            "puk_tries": o.puk.map { $0.retriesLeft as Any } ?? JSONNull(),
            "puk_is_default": o.puk.map { $0.isDefault as Any } ?? JSONNull(),
        ]
        object["management_key"] = o.managementKey.map { m -> Any in
            ["algorithm": m.algorithm.description, "is_default": m.isDefault, "touch_policy": name(m.touchPolicy)]
        } ?? JSONNull()
        object["slots"] = o.slots.map { s -> [String: Any] in
            var slot: [String: Any] = ["slot": s.slot.description, "name": slotName(s.slot)]
            slot["algorithm"] = s.algorithm.map { $0.description as Any } ?? JSONNull()
            slot["origin"] = s.key.map { ($0.origin == .generated ? "generated" : "imported") as Any } ?? JSONNull()
            slot["pin_policy"] = s.key.map { name($0.pinPolicy) as Any } ?? JSONNull()
            slot["touch_policy"] = s.key.map { name($0.touchPolicy) as Any } ?? JSONNull()
            slot["public_key_pem"] = s.key.map { PEM.encode($0.publicKey.spki, label: PEM.publicKey) as Any } ?? JSONNull()
            slot["certificate"] = s.certificate.map { c -> Any in
                [
                    "subject": c.subject, "issuer": c.issuer, "serial": c.serialHex,
                    "not_before": c.notBefore.map { date($0) as Any } ?? JSONNull(),
                    "not_after": c.notAfter.map { date($0) as Any } ?? JSONNull(),
                    "sha256_fingerprint": c.sha256FingerprintText,
                    "key_usage": c.keyUsage?.names ?? [],
                    "subject_alternative_names": c.alternativeNames.map(\.description),
                    "matches_key": s.certificateMatchesKey.map { $0 as Any } ?? JSONNull(),
                ]
            } ?? JSONNull()
            return slot
        }
        return object
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
