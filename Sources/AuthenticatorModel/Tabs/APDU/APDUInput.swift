import FoundationEssentials
import Glibc
import KeyKit

// MARK: - Parsing the input

/// The names `select` knows besides those of `AID.known`.
let apduAliases: [String: String] = [
    "fido2": "FIDO", "u2f": "FIDO", "mgmt": "Management", "pgp": "OpenPGP",
    "gpg": "OpenPGP", "yubiotp": "OTP",
]

/// Understands a console line: hex (spaces, colons allowed) or `select <name>` / `sel <name>`.
public func parseAPDUInput(_ text: String) -> APDUInput {
    let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    guard let first = words.first else { return .empty }
    let names = AID.known.map(\.name).joined(separator: ", ")
    if ["select", "sel"].contains(first.lowercased()) {
        guard words.count == 2 else { return .problem(UIText("apdu.problem.selectUsage", ["names": names])) }
        let name = words[1]
        let known = AID.known.first { $0.name.lowercased() == (apduAliases[name.lowercased()] ?? name).lowercased() }
        let aid: [UInt8]
        let label: String
        if let known {
            aid = known.aid
            label = "SELECT \(known.name)"
        } else if let bytes = try? Hex.decode(name), (5...16).contains(bytes.count) {
            aid = bytes
            label = "SELECT \(Hex.encode(bytes, uppercase: true))"
        } else {
            return .problem(UIText("apdu.problem.unknownApp", ["name": name, "names": names]))
        }
        let bytes = (try? APDU.select(aid: aid).encoded()) ?? []
        return .command(
            bytes: bytes, label: label,
            summary: UIText("apdu.input.select", ["hex": Hex.encode(bytes, uppercase: true)]))
    }
    let bytes: [UInt8]
    do {
        bytes = try Hex.decode(text)
    } catch {
        return .problem(ErrorExplanation(error).text)
    }
    let n = bytes.count
    guard n >= 4 else { return .problem(UIText("apdu.problem.short", ["count": String(n)])) }
    if n > 5, bytes[4] != 0 {
        let lc = Int(bytes[4]), follow = n - 5
        guard follow == lc || follow == lc + 1 else {
            return .problem(UIText("apdu.problem.lc", ["lc": String(lc), "follow": String(follow)]))
        }
    }
    let apdu: APDU
    do {
        apdu = try APDU(parsing: bytes)
    } catch {
        return .problem(ErrorExplanation(error).text)
    }
    var summary = [
        "bytes": String(n), "case": String(apdu.apduCase.rawValue), "lc": String(apdu.data.count),
        "le": apdu.le.map(String.init) ?? "-",
    ]
    summary["ins"] = Hex.encode([apdu.ins], uppercase: true)
    // A SELECT typed in hex is labelled like the `select NAME` shortcut when the AID is a known one.
    let known = apduSelected(bytes).flatMap { name in AID.known.contains { $0.name == name } ? "SELECT \(name)" : nil }
    return .command(bytes: bytes, label: known, summary: UIText("apdu.input.ok", summary))
}

// MARK: - Formatting answers

/// Tag names of the OATH application's TLVs (YKOATH), shown next to them when OATH is selected.
/// The YKOATH tags the TLV view names, as string-table keys (`apdu.tag.oath.<name>`).
let oathTagNames: [UInt32: String] = [
    YKOATH.Tag.name: "name", YKOATH.Tag.nameList: "nameList", YKOATH.Tag.key: "key",
    YKOATH.Tag.challenge: "challenge", YKOATH.Tag.response: "response", YKOATH.Tag.truncated: "truncated",
    YKOATH.Tag.hotp: "noResponse", UInt32(YKOATH.Tag.property): "property", YKOATH.Tag.version: "version",
    YKOATH.Tag.imf: "imf", YKOATH.Tag.algorithm: "algorithm", YKOATH.Tag.touch: "touch",
].mapValues { "apdu.tag.oath." + $0 }

/// Hex in groups of 16 bytes, bytes separated by spaces.
func apduHexLines(_ bytes: [UInt8]) -> [String] {
    stride(from: 0, to: bytes.count, by: 16).map { start in
        bytes[start..<min(start + 16, bytes.count)].map { Hex.encode([$0], uppercase: true) }.joined(separator: " ")
    }
}

/// The TLV view of response data: BER first (constructed tags opened when their value parses), then the
/// one-byte tags of the YubiKey applications; nil when neither fills the data exactly.
/// `tagNames` are string-table keys; a line's name is the tag's text (with an OATH account name read as text).
public func apduTLVLines(_ data: [UInt8], tagNames: [UInt32: String] = [:]) -> (
    mode: TLV.TagMode, lines: [(depth: Int, text: String, name: UIText?)]
)? {
    guard !data.isEmpty else { return nil }
    for mode in [TLV.TagMode.ber, .simple] {
        guard let tlvs = try? TLV.parseAll(data, mode: mode) else { continue }
        var lines = [(depth: Int, text: String, name: UIText?)]()
        func add(_ tlvs: [TLV], depth: Int) {
            for t in tlvs {
                let tag = Hex.encode(t.tagBytes, uppercase: true)
                var name = depth == 0 ? tagNames[t.tag].map { UIText($0) } : nil
                // OATH account names read as text: a name (71), or a LIST entry (72: kind and algorithm, then the name).
                if let n = name, tagNames == oathTagNames, t.tag == YKOATH.Tag.name || t.tag == YKOATH.Tag.nameList {
                    let text = t.tag == YKOATH.Tag.name ? t.value[...] : t.value.dropFirst()
                    if !text.isEmpty, let decoded = String(validating: text, as: UTF8.self),
                        !decoded.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                    {
                        name = UIText("apdu.tag.withText", ["text": decoded], nested: ["tag": n])
                    }
                }
                if t.isConstructed, depth < 8, !t.value.isEmpty, let children = try? t.children(mode: mode) {
                    lines.append((depth, "\(tag) (\(t.value.count))", name))
                    add(children, depth: depth + 1)
                } else {
                    let value =
                        t.value.count > 48
                        ? Hex.encode(t.value.prefix(48), uppercase: true) + "…"
                        : Hex.encode(t.value, uppercase: true)
                    lines.append((depth, "\(tag) (\(t.value.count)) \(value)", name))
                }
            }
        }
        add(tlvs, depth: 0)
        return (mode, lines)
    }
    return nil
}

/// The data as text, when it is all printable ASCII ("U2F_V2").
func apduText(_ data: [UInt8]) -> String? {
    guard data.count >= 2, data.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
    return String(decoding: data, as: UTF8.self)
}

/// The log lines of one answer: the raw exchanges when the answer came in parts, the status word with its
/// meaning, the data in hex, its TLV view and its text.
func apduAnswerLines(exchanges: [APDUExchange], response: Response, application: String?) -> [APDULogLine] {
    var lines = [APDULogLine]()
    if exchanges.count > 1 {
        for e in exchanges {
            lines.append(APDULogLine(.wire, .literal("  → " + Hex.encode(e.command, uppercase: true))))
            if let r = try? Response(raw: e.response) {
                lines.append(
                    APDULogLine(
                        .wire,
                        UIText(
                            "apdu.log.wireAnswer",
                            [
                                "count": String(r.data.count), "sw": r.status.hexString,
                            ], nested: ["meaning": ErrorExplanation.statusText(r.status)])))
            }
        }
    }
    let status = response.status
    lines.append(
        APDULogLine(
            status.isSuccess ? .ok : .failure,
            UIText(
                "apdu.log.status", ["sw": status.hexString],
                nested: ["meaning": ErrorExplanation.statusText(status)]),
            suffix: response.data.isEmpty ? nil : UIText("apdu.log.bytes", ["count": String(response.data.count)])))
    for hex in apduHexLines(response.data) { lines.append(APDULogLine(.data, .literal("  " + hex))) }
    let names = application == "OATH" ? oathTagNames : [:]
    if let tlv = apduTLVLines(response.data, tagNames: names) {
        lines.append(APDULogLine(.note, UIText(tlv.mode == .ber ? "apdu.log.tlv" : "apdu.log.tlvSimple")))
        for l in tlv.lines {
            lines.append(
                APDULogLine(
                    .tlv, .literal(String(repeating: "  ", count: l.depth + 2) + l.text),
                    suffix: l.name))
        }
    } else if let text = apduText(response.data) {
        lines.append(APDULogLine(.data, UIText("apdu.log.text", ["text": text])))
    }
    return lines
}

/// The application a SELECT command names, by its known name or its AID in hex.
func apduSelected(_ bytes: [UInt8]) -> String? {
    guard let apdu = try? APDU(parsing: bytes), apdu.ins == 0xA4, apdu.p1 == 0x04, !apdu.data.isEmpty else {
        return nil
    }
    if let known = AID.known.first(where: { apdu.data.starts(with: $0.aid) }) { return known.name }
    return Hex.encode(apdu.data, uppercase: true)
}
