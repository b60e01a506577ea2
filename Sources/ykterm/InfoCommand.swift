import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import KeyKit

/// `ykterm info`: one key at a glance, as `ykman info` gives it — what it is, and each application with whether it
/// is on over USB and over NFC. `list` lists every key, a line or two each.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "One key at a glance: product, serial, firmware, form factor, and each application over USB and NFC.",
        discussion: """
            From the key's Management application (READ CONFIG), over its reader or, with CCID off, its FIDO or OTP \
            HID interface. With several keys plugged in, choose one with --device or --reader; `ykterm list` lists \
            them all.
            """)

    @OptionGroup var key: KeyOptions
    @Flag(
        name: .long,
        help: ArgumentHelp(
            "JSON: product, serial, version, form_factor, fips, sky, pin_complexity, config_locked, nfc_restricted, "
                + "usb and nfc (each application)."))
    var json = false

    func run() async throws {
        let device = try await DeviceOperations(key.choice.opener()).device()
        let info = device.info
        if json { return try printJSON(InfoJSON(info)) }
        var name = info.displayName
        if let given = KeyNames().name(of: info.serial) { name += " '\(given)'" }
        var fields: [(String, String)] = [
            ("cli.info.product", name),
            ("cli.info.serial", info.serial.map(String.init) ?? words("cli.list.serialUnknown")),
            ("cli.info.firmware", info.version.description),
        ]
        if info.formFactor != .unknown {
            fields.append(
                ("cli.info.formFactor", loadedTables().text(UIText("form-factor." + info.formFactor.identifier))))
        }
        let usbInterfaces = Self.usbInterfaces(info.enabledUSB)
        fields.append(("cli.info.usbInterfaces", usbInterfaces.isEmpty ? "-" : usbInterfaces.joined(separator: ", ")))
        if info.supportedNFC != nil {
            let nfcOn = !(info.enabledNFC ?? []).isEmpty
            let state = info.nfcRestricted ? "cli.info.nfcRestricted" : nfcOn ? "cli.info.on" : "cli.info.off"
            fields.append(("cli.info.nfc", words(state)))
        }
        if info.pinComplexity { fields.append(("cli.info.pinComplexity", words("cli.info.enforced"))) }
        if info.isConfigLocked { fields.append(("cli.info.locked", words("cli.info.lockedValue"))) }
        InfoLines.lines(fields.map { (words($0.0), $0.1) }, atLeast: 0, gap: 2).forEach(out)
        out("")
        // The applications: a row each, USB and (on a key with NFC) NFC.
        let columns = [words("cli.info.applications"), "USB"] + (info.supportedNFC != nil ? ["NFC"] : [])
        var rows = [columns]
        for (capability, label) in Capabilities.named {
            var row = [label, Self.state(capability, supported: info.supportedUSB, enabled: info.enabledUSB)]
            if let supported = info.supportedNFC {
                row.append(Self.state(capability, supported: supported, enabled: info.enabledNFC ?? []))
            }
            rows.append(row)
        }
        let widths = columns.indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        for row in rows {
            out(zip(row, widths).map { $0.padding(to: $1 + 2) }.joined().trimmingSpaces)
        }
    }

    /// "on", "off" or "not available" for one application over one transport.
    static func state(_ c: Capabilities, supported: Capabilities, enabled: Capabilities) -> String {
        guard supported.contains(c) else { return words("cli.info.notAvailable") }
        return words(enabled.contains(c) ? "cli.info.on" : "cli.info.off")
    }

    /// The USB interfaces the enabled applications need, as a YubiKey presents them.
    static func usbInterfaces(_ enabled: Capabilities) -> [String] {
        let on = enabled.usbInterfaces
        return [(KeyInterfaceKind.otp, "OTP"), (.fido, "FIDO"), (.ccid, "CCID")].filter { on.contains($0.0) }.map(\.1)
    }
}

extension InfoJSON {
    init(_ info: DeviceInfo) {
        product = info.productName
        serial = info.serial.map { Int($0) }
        version = info.version.description
        formFactor = info.formFactor.identifier
        fips = info.isFIPS
        sky = info.isSky
        pinComplexity = info.pinComplexity
        configLocked = info.isConfigLocked
        nfcRestricted = info.nfcRestricted
        func states(_ supported: Capabilities, _ enabled: Capabilities) -> [String: String] {
            var out = [String: String]()
            for (c, name) in Capabilities.named {
                out[name.lowercased()] =
                    supported.contains(c) ? (enabled.contains(c) ? "enabled" : "disabled") : "not_available"
            }
            return out
        }
        usb = states(info.supportedUSB, info.enabledUSB)
        nfc = info.supportedNFC.map { states($0, info.enabledNFC ?? []) }
    }
}
