import FoundationEssentials
import Glibc
import KeyKit
import AuthenticatorModel

/// `openpgp info` and `openpgp keys info` as text, and `openpgp info` as JSON.
enum OpenPGPInfoText {
    static func lines(_ o: OpenPGPOverview) -> [String] {
        var rows = [(String, String)?]()
        func field(_ key: String, _ value: String) { rows.append((words(key), value)) }
        let status = o.data.passwordStatus
        field("cli.openpgp.info.openpgpVersion", o.data.aid.versionText)
        field("cli.openpgp.info.applicationVersion", o.version.description)
        field("cli.openpgp.info.serial", String(o.data.aid.serial))
        field("cli.openpgp.info.pinTries", String(status.triesUser))
        field("cli.openpgp.info.resetCodeTries", String(status.triesReset))
        field("cli.openpgp.info.adminPINTries", String(status.triesAdmin))
        field(
            "cli.openpgp.info.signaturePIN",
            words(status.pinValidForSeveralSignatures ? "cli.openpgp.info.once" : "cli.openpgp.info.always"))
        field("cli.openpgp.info.kdf", words(o.kdfEnabled ? "cli.openpgp.info.kdfOn" : "cli.openpgp.info.kdfOff"))
        field("cli.openpgp.info.signatureCounter", o.signatureCounter.map(String.init) ?? "-")
        let name = o.cardholder?.displayName ?? ""
        field("cli.openpgp.info.cardholder", name.isEmpty ? "-" : name)
        field("cli.openpgp.info.url", o.url.isEmpty ? "-" : String(decoding: o.url, as: UTF8.self))
        var out = InfoLines.lines(rows)
        for key in o.data.keys {
            out.append("")
            out += keyLines(key, indent: "  ", certificates: o.certificates)
        }
        return out
    }

    /// One slot: its heading and its fields (a slot without a key says so); with `certificates`, also whether the
    /// slot stores a certificate, its subject and when it expires.
    static func keyLines(
        _ k: OpenPGPKeyInfo, indent: String, certificates: [OpenPGP.KeySlot: [UInt8]]? = nil
    ) -> [String] {
        var rows = [(String, String)?]()
        func field(_ key: String, _ value: String) { rows.append((indent + words(key), value)) }
        var out = [words("cli.openpgp.slot." + k.slot.name, ["slot": k.slot.name.uppercased()])]
        if k.hasKey {
            field("cli.openpgp.info.algorithm", k.attributes?.description ?? "-")
            field("cli.openpgp.info.fingerprint", OpenPGP.fingerprintText(k.fingerprint) ?? "-")
            field("cli.openpgp.info.created", created(k.generationTime) ?? "-")
            field("cli.openpgp.info.origin", words("cli.openpgp.origin." + origin(k.status)))
        } else {
            field("cli.openpgp.info.key", words("cli.openpgp.info.noKey"))
        }
        field("cli.openpgp.info.touchPolicy", k.touchPolicy?.name ?? "-")
        if let certificates {
            if let der = certificates[k.slot] {
                let c = try? X509Certificate(der: der)
                field("cli.openpgp.info.certificate", c?.subject ?? words("cli.openpgp.info.certificateUnreadable"))
                field("cli.openpgp.info.certificateExpires", c?.notAfter.map(PIVInfoText.date) ?? "-")
            } else {
                field("cli.openpgp.info.certificate", words("cli.openpgp.info.noCertificate"))
            }
        }
        out += InfoLines.lines(rows)
        return out
    }

    /// Each slot's certificate as `info --json` gives it.
    static func certificateJSON(_ slot: OpenPGP.KeySlot, _ o: OpenPGPOverview) -> OpenPGPInfoJSON.Certificate {
        guard let der = o.certificates[slot] else {
            return OpenPGPInfoJSON.Certificate(slot: slot.name, present: false)
        }
        let c = try? X509Certificate(der: der)
        return OpenPGPInfoJSON.Certificate(
            slot: slot.name, present: true, subject: c?.subject, issuer: c?.issuer,
            notBefore: c?.notBefore.map(PIVInfoText.date), notAfter: c?.notAfter.map(PIVInfoText.date),
            sha256Fingerprint: c?.sha256FingerprintText)
    }

    static func created(_ time: UInt32) -> String? {
        guard time != 0 else { return nil }
        return PIVInfoText.date(Date(timeIntervalSince1970: Double(time)))
    }

    static func origin(_ status: OpenPGP.KeyStatus?) -> String {
        switch status {
        case .generated?: return "generated"
        case .imported?: return "imported"
        case .none?: return "none"
        case nil: return "unknown"
        }
    }

    static func json(_ o: OpenPGPOverview) -> OpenPGPInfoJSON {
        let status = o.data.passwordStatus
        let name = o.cardholder?.displayName ?? ""
        return OpenPGPInfoJSON(
            openpgpVersion: o.data.aid.versionText, applicationVersion: o.version.description,
            serial: Int(o.data.aid.serial), manufacturer: Int(o.data.aid.manufacturer), pinTries: status.triesUser,
            resetCodeTries: status.triesReset, adminPinTries: status.triesAdmin,
            signaturePinPolicy: status.pinValidForSeveralSignatures ? "once" : "always", kdfEnabled: o.kdfEnabled,
            signatureCounter: o.signatureCounter, cardholder: name.isEmpty ? nil : name,
            url: o.url.isEmpty ? nil : String(decoding: o.url, as: UTF8.self),
            keys: o.data.keys.map(keyJSON), certificates: o.data.keys.map { certificateJSON($0.slot, o) })
    }

    /// One slot's key as `info --json` and `keys info --json` give it.
    static func keyJSON(_ k: OpenPGPKeyInfo) -> OpenPGPInfoJSON.Key {
        OpenPGPInfoJSON.Key(
            slot: k.slot.name, hasKey: k.hasKey, algorithm: k.attributes?.description,
            fingerprint: OpenPGP.fingerprintText(k.fingerprint).map { $0.filter { $0 != " " } },
            created: created(k.generationTime), origin: k.status.map { origin($0) },
            touchPolicy: k.touchPolicy?.name)
    }
}
