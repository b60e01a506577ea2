import FoundationEssentials
import Glibc
import KeyKit

/// `piv info` as text and as JSON.
enum PIVInfoText {
    /// The text output: labelled fields in one column (wide enough for the longest label of the user's
    /// language), a block per slot.
    static func lines(_ o: PIVOverview) -> [String] {
        enum Row { case field(String, String), text(String) }
        var rows = [Row]()
        func field(_ key: String, _ value: String) { rows.append(.field(words(key), value)) }
        func slotField(_ key: String, _ value: String) { rows.append(.field("  " + words(key), value)) }
        field("cli.piv.info.version", o.version.description)
        field("cli.piv.info.serial", o.serial.map(String.init) ?? "-")
        let pinTries = tries(o.pinRetries, of: o.pin?.totalRetries)
        field(
            "cli.piv.info.pinTries",
            o.pin?.isDefault == true ? words("cli.piv.info.defaultPIN", ["tries": pinTries]) : pinTries)
        if let puk = o.puk {
            let pukTries = tries(puk.retriesLeft, of: puk.totalRetries)
            field(
                "cli.piv.info.pukTries",
                puk.isDefault ? words("cli.piv.info.defaultPUK", ["tries": pukTries]) : pukTries)
        }
        if let m = o.managementKey {
            var value = "\(m.algorithm)"
            if m.isDefault { value = words("cli.piv.info.defaultManagementKey", ["algorithm": value]) }
            if m.touchPolicy == .always || m.touchPolicy == .cached {
                value = words("cli.piv.info.touchRequired", ["value": value])
            }
            field("cli.piv.info.managementKey", value)
        }
        if o.slots.isEmpty { rows.append(.text(words("cli.piv.info.noSlots"))) }
        for s in o.slots {
            rows.append(.text(""))
            rows.append(.text(words("cli.piv.info.slot", ["slot": "\(s.slot)", "name": localizedSlotName(s.slot)])))
            if let key = s.key {
                slotField(
                    "cli.piv.info.key",
                    words(
                        key.origin == .generated ? "cli.piv.info.generated" : "cli.piv.info.imported",
                        ["algorithm": "\(key.algorithm)"]))
                slotField("cli.piv.info.pinPolicy", name(key.pinPolicy))
                slotField("cli.piv.info.touchPolicy", name(key.touchPolicy))
            } else if s.algorithm != nil || o.pin == nil {
                slotField(
                    "cli.piv.info.key",
                    s.algorithm.map { words("cli.piv.info.fromCertificate", ["algorithm": "\($0)"]) }
                        ?? words("cli.piv.info.unknown"))
            } else {
                slotField("cli.piv.info.key", words("cli.piv.info.noKey"))
            }
            if let c = s.certificate {
                slotField("cli.piv.info.subject", c.subject)
                slotField("cli.piv.info.issuer", c.issuer)
                slotField("cli.piv.info.certificateSerial", c.serialHex)
                slotField("cli.piv.info.notBefore", c.notBefore.map(date) ?? "-")
                slotField("cli.piv.info.notAfter", c.notAfter.map(date) ?? "-")
                slotField("cli.piv.info.fingerprint", c.sha256FingerprintText)
                if s.certificateMatchesKey == false {
                    slotField("cli.piv.info.warning", words("cli.piv.info.mismatch"))
                }
            } else if let problem = s.certificateProblem {
                slotField(
                    "cli.piv.info.certificate", words("cli.piv.info.unreadable", ["detail": explained(problem).1]))
            } else {
                slotField("cli.piv.info.certificate", words("cli.piv.info.noCertificate"))
            }
        }
        // The value column: 22 characters, or one more than the longest label.
        let width = InfoLines.valueColumn(
            rows.compactMap { row in
                guard case .field(let label, _) = row else { return nil }
                return label
            })
        return rows.map { row in
            switch row {
            case .field(let label, let value): label.padding(to: width) + value
            case .text(let text): text
            }
        }
    }

    static func json(_ o: PIVOverview) -> PIVInfoJSON {
        PIVInfoJSON(
            version: o.version.description, serial: o.serial.map { Int($0) }, pinTries: o.pinRetries,
            pinTotalTries: o.pin?.totalRetries, pinIsDefault: o.pin?.isDefault, pukTries: o.puk?.retriesLeft,
            pukIsDefault: o.puk?.isDefault,
            managementKey: o.managementKey.map {
                PIVInfoJSON.ManagementKey(
                    algorithm: $0.algorithm.description, isDefault: $0.isDefault,
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
                            keyUsage: c.keyUsage?.names ?? [],
                            subjectAlternativeNames: c.alternativeNames.map(\.description),
                            matchesKey: s.certificateMatchesKey)
                    })
            })
    }

    static func tries(_ left: Int, of total: Int?) -> String {
        total.map { words("cli.piv.info.triesOf", ["left": String(left), "total": String($0)]) } ?? String(left)
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

    /// The slot's name in the user's language, for the text output (the JSON has `slotName`).
    static func localizedSlotName(_ slot: PIV.Slot) -> String {
        switch slot {
        case .authentication: return words("cli.piv.slot.authentication")
        case .signature: return words("cli.piv.slot.signature")
        case .keyManagement: return words("cli.piv.slot.keyManagement")
        case .cardAuthentication: return words("cli.piv.slot.cardAuthentication")
        case .attestation: return words("cli.piv.slot.attestation")
        default: return words("cli.piv.slot.retired")
        }
    }

    /// A PIN policy as `--pin-policy` and the JSON name it (also in the text output: the option's words).
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

    /// A touch policy as `--touch-policy` and the JSON name it.
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

extension String {
    /// The text and spaces to `width` characters, and at least one space (the value column of `info` outputs).
    func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String.spaces(width - count)
    }
}

/// The label-and-value lines of the `info` outputs, the values in one column.
enum InfoLines {
    /// Where the values start: `atLeast` characters from the left, or `gap` more than the longest label.
    static func valueColumn(_ labels: [String], atLeast: Int = 22, gap: Int = 1) -> Int {
        labels.reduce(atLeast) { max($0, $1.count + gap) }
    }

    /// Each row as a line, a nil row as an empty line.
    static func lines(_ rows: [(String, String)?], atLeast: Int = 22, gap: Int = 1) -> [String] {
        let width = valueColumn(rows.compactMap { $0?.0 }, atLeast: atLeast, gap: gap)
        return rows.map { row in row.map { $0.0.padding(to: width) + $0.1 } ?? "" }
    }
}
