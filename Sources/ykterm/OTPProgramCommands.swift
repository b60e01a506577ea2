import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

/// `--locked`: the slot has an access code, which is read from standard input (or asked for without echo on
/// a terminal). No option takes a code itself: the command line is visible to other users.
struct OTPLockedOption: ParsableArguments {
    @Flag(
        name: .long,
        help: ArgumentHelp(
            "The slot has an access code: read it (12 hex digits) from standard input, or ask without echo on a terminal."
        ))
    var locked = false

    /// The current access code, or nil without --locked.
    func read(_ prompt: Prompt) throws -> [UInt8]? {
        locked ? try parseAccessCode(try prompt.secret(words("cli.otp.prompt.currentAccessCode"))) : nil
    }
}

/// The access-code options of the commands that write a whole slot or its settings: `--locked` (the current
/// code) and `--lock` (a new one), read in that order, before the slot's secrets.
struct OTPAccessCodeOptions: ParsableArguments {
    @OptionGroup var current: OTPLockedOption

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Protect the slot with a new access code: read it from standard input after the current one, or ask twice on a terminal."
        ))
    var lock = false

    /// The current access code and the slot's new one (without --lock the slot keeps its current code).
    func read(_ prompt: Prompt) throws -> (current: [UInt8]?, new: [UInt8]?) {
        let current = try self.current.read(prompt)
        let new =
            lock
            ? try parseAccessCode(
                try prompt.newSecret(
                    words("cli.otp.prompt.newAccessCode"),
                    again: words("cli.otp.prompt.repeatAccessCode"))) : nil
        return (current, new ?? current)
    }
}

/// 12 hex digits; the message does not repeat what was typed.
func parseAccessCode(_ text: String) throws -> [UInt8] {
    let code = try decodeHex(text.trimmingSpaces, what: words("cli.otp.what.accessCode"), secret: true)
    guard code.count == OTPSlotConfiguration.accessCodeSize else { throw OTPError.invalidAccessCode }
    return code
}

/// Asks before a slot write that loses something, unless `force`; without a terminal, `force` is required
/// (`needsForce` says so).
func confirmSlotWrite(_ prompt: Prompt, force: Bool, question: String, needsForce: String) throws {
    try prompt.requireForce(force, otherwise: needsForce)
    try prompt.confirmUnlessForced(force, question, otherwise: words("cli.prompt.nothingChanged"))
}

/// Ends the command when `slot` is empty (before any question is asked): for the commands that change a
/// programmed slot.
func requireProgrammed(_ options: KeyOptions, slot: Int) async throws {
    guard try await options.otp.slots().status.isConfigured(slot: slot) else { throw OTPError.slotEmpty(slot) }
}

/// The `--ndef-type` values (ykman's URI and TEXT, in any case).
enum NDEFRecordType: String, ExpressibleByArgument, CaseIterable {
    case uri, text

    init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

/// The `--keyboard-layout` values.
extension ScanCodeLayout: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(rawValue: argument.lowercased())
    }

    public static var allValueStrings: [String] { allCases.map { $0.rawValue.uppercased() } }
}

/// The time as the Yubico CSV format writes it: local time, ISO 8601 to the second.
func localISOTime(_ date: Date = Date()) -> String {
    var seconds = time_t(date.timeIntervalSince1970)
    var parts = tm()
    localtime_r(&seconds, &parts)
    var buffer = [CChar](repeating: 0, count: 32)
    let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S", &parts)
    return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension OTPCommand {
    struct YubiOTP: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "yubiotp",
            abstract: "Program a slot with a Yubico OTP credential (asks before overwriting a programmed slot).",
            discussion: """
                The public ID is typed before each OTP: by default the one made from the serial number \
                (modhex of FF 00 and the serial, vvcc...), or --public-id. The private ID (6 bytes) and the \
                AES-128 key (16 bytes) are random unless --private-id - or --key - reads them (hex, one per \
                line) from standard input, after any access codes. The values are printed once, with a CSV \
                line in the Yubico format that YubiCloud's upload form takes (serial, public ID, private ID, \
                AES key, access code left empty, time); ykterm sends them nowhere.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var slotOption: OTPSlotOption
        @OptionGroup var accessCodes: OTPAccessCodeOptions

        @Option(name: .long, help: ArgumentHelp("The public ID in modhex (up to 32 characters).", valueName: "MODHEX"))
        var publicId: String?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Give - to read the private ID (12 hex digits) from standard input; random otherwise.",
                valueName: "-"))
        var privateId: String?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Give - to read the AES key (32 hex digits) from standard input; random otherwise.",
                valueName: "-"))
        var key: String?

        @Flag(name: .long, inversion: .prefixedNo, help: "Type Enter after the OTP.")
        var enter = true

        @Flag(name: [.long, .short], help: "Overwrite a programmed slot without asking.")
        var force = false

        @Flag(name: .long, help: "Print JSON (slot, serial, public_id, private_id, key, csv).")
        var json = false

        func validate() throws {
            for (name, value) in [("--private-id", privateId), ("--key", key)] {
                if let value, value != "-" {
                    throw ValidationError(words("cli.option.stdinOnly", ["option": name]))
                }
            }
            if let publicId {
                guard publicId.count % 2 == 0, Modhex.isModhex(publicId), !publicId.isEmpty else {
                    throw ValidationError(words("cli.otp.publicID"))
                }
            }
        }

        func run() async throws {
            let prompt = Prompt()
            let codes = try accessCodes.read(prompt)
            var privateID =
                privateId == nil
                ? Crypto.random(OTPSlotConfiguration.uidSize)
                : try decodeHex(
                    try prompt.secret(words("cli.otp.prompt.privateID")).trimmingSpaces,
                    what: words("cli.otp.what.privateID"), secret: true)
            var aesKey =
                key == nil
                ? Crypto.random(OTPSlotConfiguration.keySize)
                : try decodeHex(
                    try prompt.secret(words("cli.otp.prompt.aesKey")).trimmingSpaces,
                    what: words("cli.otp.what.aesKey"), secret: true)
            defer {
                for i in aesKey.indices { aesKey[i] = 0 }
                for i in privateID.indices { privateID[i] = 0 }
            }
            let given = try publicId.map { try Modhex.decode($0) }
            // Refuse values that do not fit before touching the key.
            _ = try OTPSlotConfiguration.yubicoOTP(publicID: given ?? [], privateID: privateID, key: aesKey)
            let (slot, enter, force) = (slotOption.slot, self.enter, self.force)
            let written = try await replacingAsked(prompt, force: force) { replacing in
                try await keyOptions.otp.write(
                    slot: slot, replacing: replacing, currentAccessCode: codes.current,
                    readSerial: true
                ) { serial in
                    guard let publicID = given ?? serial.map({ YubicoOTP.publicID(serial: $0) }) else {
                        throw YktermError.failed(words("cli.otp.yubiotp.noSerial"))
                    }
                    return try OTPSlotConfiguration.yubicoOTP(
                        publicID: publicID, privateID: privateID, key: aesKey,
                        appendEnter: enter, accessCode: codes.new)
                }
            }
            let serial = written.serial
            let publicID = given ?? serial.map { YubicoOTP.publicID(serial: $0) } ?? []
            let csv = [
                serial.map { String($0) } ?? "", Modhex.encode(publicID), privateID.hex, aesKey.hex, "",
                localISOTime(), "",
            ].joined(separator: ",")
            if json {
                try printJSON(
                    OTPYubiOTPJSON(
                        slot: slot, serial: serial.map { Int($0) },
                        publicID: Modhex.encode(publicID), privateID: privateID.hex,
                        key: aesKey.hex, csv: csv))
            } else {
                out(words("cli.otp.yubiotp.done", ["slot": String(slot)]))
                out(words("cli.otp.field.publicID", ["id": Modhex.encode(publicID)]))
                out(words("cli.otp.field.privateID", ["id": privateID.hex]))
                out(words("cli.otp.field.aesKey", ["key": aesKey.hex]))
                out(words("cli.otp.yubiotp.csv", ["csv": csv]))
            }
        }
    }

    struct Static: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "static",
            abstract: "Program a slot with a static password (asks before overwriting a programmed slot).",
            discussion: """
                The password (up to 38 characters) is read from standard input after any access codes, or \
                asked twice without echo on a terminal; --generate makes a random one of --length characters \
                instead, drawn from the characters the layout types (without space and tab), and does not \
                show it. A slot stores keyboard scan codes, so the password is encoded for the keyboard \
                layout the computer uses (--keyboard-layout); MODHEX, the default, allows only the modhex \
                letters, which type the same on every layout.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var slotOption: OTPSlotOption
        @OptionGroup var accessCodes: OTPAccessCodeOptions

        @Flag(name: .long, help: "Generate a random password.")
        var generate = false

        @Option(name: .long, help: ArgumentHelp("The length of a generated password (1 to 38).", valueName: "N"))
        var length: Int?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The keyboard layout the password is typed on.",
                valueName: "US|DE|FR|DVORAK|MODHEX"))
        var keyboardLayout: ScanCodeLayout = .modhex

        @Flag(name: .long, inversion: .prefixedNo, help: "Type Enter after the password.")
        var enter = true

        @Flag(name: [.long, .short], help: "Overwrite a programmed slot without asking.")
        var force = false

        func validate() throws {
            if generate {
                guard length != nil else {
                    throw ValidationError(words("cli.option.needs", ["option": "--generate", "other": "--length"]))
                }
            } else if length != nil {
                throw ValidationError(words("cli.option.onlyWith", ["option": "--length", "other": "--generate"]))
            }
        }

        func run() async throws {
            if generate, let length, !(1...OTPSlotConfiguration.scanCodesSize).contains(length) {
                throw OTPError.invalidPasswordLength(length)
            }
            let prompt = Prompt()
            let codes = try accessCodes.read(prompt)
            var password =
                generate
                ? keyboardLayout.generatePassword(length: length ?? 0)
                : try prompt.newSecret(
                    words("cli.otp.prompt.staticPassword"), again: words("cli.otp.prompt.repeatStaticPassword"))
            let scanCodes: [UInt8]
            switch keyboardLayout.encode(password) {
            case .success(let s): scanCodes = s
            case .failure(let e):
                password = ""
                throw OTPError.unencodableCharacter(offset: e.offset, layout: keyboardLayout)
            }
            let count = password.count
            password = ""
            let config = try OTPSlotConfiguration.staticPassword(
                scanCodes: scanCodes, appendEnter: enter,
                accessCode: codes.new)
            let (slot, force) = (slotOption.slot, self.force)
            try await keyOptions.writeSlot(slot, config, currentAccessCode: codes.current, prompt: prompt, force: force)
            out(
                words(
                    generate ? "cli.otp.static.doneGenerated" : "cli.otp.static.done",
                    ["slot": String(slot), "count": String(count), "layout": keyboardLayout.rawValue.uppercased()]))
        }
    }

    struct HOTP: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hotp",
            abstract: "Program a slot with an OATH-HOTP credential (asks before overwriting a programmed slot).",
            discussion: """
                The secret is read in Base32 from standard input after any access codes, or asked without \
                echo on a terminal. Each touch types the next code. --counter sets the initial moving factor: \
                a multiple of 16 from 0 to 1048560, as the key stores it divided by 16. --identifier makes the \
                key type an OATH token identifier before each code (OMP, TT and MUI, each in modhex or decimal \
                digits): 12 characters, 8 (the MUI, after Yubico's ubhe), 4 (OMP and TT, the serial as the \
                MUI), or - (ubhe and the serial).
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var slotOption: OTPSlotOption
        @OptionGroup var accessCodes: OTPAccessCodeOptions

        @Option(name: .long, help: ArgumentHelp("Digits per code.", valueName: "6|8"))
        var digits: Int = 6

        @Option(name: .long, help: ArgumentHelp("The initial moving factor (a multiple of 16).", valueName: "N"))
        var counter: UInt32 = 0

        @Option(
            name: [.long, .customShort("i")],
            help: ArgumentHelp("Type this OATH token identifier before each code.", valueName: "ID|-"))
        var identifier: String?

        @Flag(name: .long, inversion: .prefixedNo, help: "Type Enter after the code.")
        var enter = true

        @Flag(name: [.long, .short], help: "Overwrite a programmed slot without asking.")
        var force = false

        func run() async throws {
            // Values that do not fit are refused before anything is read.
            guard digits == 6 || digits == 8 else { throw OTPError.invalidDigits(digits) }
            guard counter % 16 == 0, counter <= OTPSlotConfiguration.maxMovingFactor else {
                throw OTPError.invalidMovingFactor(counter)
            }
            // The identifier's form too (a serial it will take from the key stands in as 0 for now).
            if let identifier { _ = try OATHTokenIdentifier(identifier, serial: 0) }
            let prompt = Prompt()
            let codes = try accessCodes.read(prompt)
            var secret = try Base32.decode(try prompt.secret(words("cli.otp.prompt.hotpSecret")))
            defer { for i in secret.indices { secret[i] = 0 } }
            let (slot, force, digits, counter, enter) = (slotOption.slot, self.force, digits, counter, enter)
            let given = identifier
            var typed: String?
            try await replacingAsked(prompt, force: force) { replacing in
                try await keyOptions.otp.write(
                    slot: slot, replacing: replacing, currentAccessCode: codes.current,
                    readSerial: given.map(OATHTokenIdentifier.needsSerial) ?? false
                ) { serial in
                    let identifier = try given.map { text throws(OTPError) in
                        try OATHTokenIdentifier(text, serial: serial)
                    }
                    typed = identifier?.typed
                    return try OTPSlotConfiguration.oathHOTP(
                        secret: secret, digits: digits, movingFactor: counter, tokenIdentifier: identifier,
                        appendEnter: enter, accessCode: codes.new)
                }
            }
            out(
                words(
                    "cli.otp.hotp.done", ["slot": String(slot), "digits": String(digits), "counter": String(counter)]))
            if let typed { out(words("cli.otp.hotp.identifier", ["identifier": typed])) }
        }
    }

    struct Swap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "swap",
            abstract: "Swap the configurations of slot 1 and 2 (asks first, unless --force).",
            discussion: """
                Slots with an access code swap only with it (--locked); both slots must have that code or \
                none.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var locked: OTPLockedOption

        @Flag(name: [.long, .short], help: "Swap without asking.")
        var force = false

        func run() async throws {
            let prompt = Prompt()
            let code = try locked.read(prompt)
            let force = self.force
            _ = try await keyOptions.otp.slots()  // a missing key is said before the question
            try confirmSlotWrite(
                prompt, force: force, question: words("otp.slots.swap.confirm"),
                needsForce: words("cli.otp.swap.needsForce"))
            _ = try await keyOptions.otp.swap(accessCode: code)
            out(words("cli.otp.swap.done"))
        }
    }

    struct NDEF: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ndef",
            abstract: "Choose the slot the NDEF tag serves over NFC, and the URI or text before its output.",
            discussion: """
                The tag's URI record is --prefix (default https://my.yubico.com/yk/#) followed by what the \
                slot types: its Yubico OTP, static password or HOTP code. The prefix takes at most 54 bytes \
                on the key after its standard beginning (such as https://) is abbreviated. With --ndef-type \
                text the tag serves a text record instead (language en): the prefix (default none, at most 51 \
                bytes), then the output. Replaces the previous NDEF setting: asks first, unless --force.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var slotOption: OTPSlotOption

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The URI (or with --ndef-type text, the text) before the slot's output.", valueName: "PREFIX"))
        var prefix: String?

        @Option(
            name: [.long, .customShort("t")],
            help: ArgumentHelp("The tag's record: a URI or a text.", valueName: "uri|text"))
        var ndefType: NDEFRecordType = .uri

        @OptionGroup var locked: OTPLockedOption

        @Flag(name: [.long, .short], help: "Replace the NDEF setting without asking.")
        var force = false

        func run() async throws {
            let text = ndefType == .text
            let prefix = self.prefix ?? (text ? "" : NDEFOTP.defaultURIPrefix)
            let config = try text ? OTPNDEFConfiguration.text(prefix) : OTPNDEFConfiguration.uri(prefix)
            let prompt = Prompt()
            let code = try locked.read(prompt)
            let (slot, force) = (slotOption.slot, self.force)
            // The words name the record: a URI, a text after its prefix, or a text alone.
            let kind = text ? (prefix.isEmpty ? "textAlone" : "text") : "uri"
            let values = ["slot": String(slot), "prefix": prefix]
            try await requireProgrammed(keyOptions, slot: slot)
            try confirmSlotWrite(
                prompt, force: force, question: words("cli.otp.ndef.question." + kind, values),
                needsForce: words("cli.otp.ndef.needsForce"))
            _ = try await keyOptions.otp.setNDEF(slot: slot, config, accessCode: code)
            out(words("cli.otp.ndef.done." + kind, values))
        }
    }

    struct Settings: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "settings",
            abstract: "Change a programmed slot's settings and access code, keeping its secret (asks first).",
            discussion: """
                Writes every updatable setting: those not given return to their defaults (Enter after the \
                output, no pacing, no numeric keypad, serial not in the USB descriptor). --lock sets a new \
                access code, --unlock removes it (both need the current one, --locked, when the slot has \
                one); otherwise the slot keeps its code. The key refuses slots that were programmed without \
                allowing updates.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var slotOption: OTPSlotOption
        @OptionGroup var accessCodes: OTPAccessCodeOptions

        @Flag(name: .long, help: "Remove the slot's access code (with --locked).")
        var unlock = false

        @Flag(name: .long, inversion: .prefixedNo, help: "Type Enter after the output.")
        var enter = true

        @Option(name: .long, help: ArgumentHelp("A delay between typed characters.", valueName: "0|20|40|60"))
        var pacing: Int = 0

        @Flag(name: .long, help: "Type digits with the numeric keypad's keys.")
        var useNumericKeypad = false

        @Flag(name: .long, help: "Show the serial number in the USB descriptor.")
        var serialUsbVisible = false

        @Flag(name: [.long, .short], help: "Update without asking.")
        var force = false

        func validate() throws {
            guard OTPSlotConfiguration.Pacing(rawValue: pacing) != nil else {
                throw ValidationError(
                    words(
                        "cli.option.oneOf",
                        [
                            "option": "--pacing", "allowed": oneOf(["0", "20", "40", "60"]),
                            "value": String(pacing),
                        ]))
            }
            try refuseTogether("--unlock", unlock, with: [("--lock", accessCodes.lock)])
            if unlock {
                guard accessCodes.current.locked else {
                    throw ValidationError(words("cli.otp.unlockNeedsLocked"))
                }
            }
        }

        func run() async throws {
            let prompt = Prompt()
            let codes = try accessCodes.read(prompt)
            let settings = OTPSlotConfiguration.Settings(
                appendEnter: enter, pacing: OTPSlotConfiguration.Pacing(rawValue: pacing) ?? .none,
                useNumericKeypad: useNumericKeypad, serialUSBVisible: serialUsbVisible)
            let update = try OTPSlotConfiguration.update(settings, accessCode: unlock ? nil : codes.new)
            let (slot, force) = (slotOption.slot, self.force)
            try await requireProgrammed(keyOptions, slot: slot)
            try confirmSlotWrite(
                prompt, force: force,
                question: words("cli.otp.settings.question", ["slot": String(slot)]),
                needsForce: words("cli.otp.settings.needsForce", ["slot": String(slot)]))
            _ = try await keyOptions.otp.update(slot: slot, update, currentAccessCode: codes.current)
            out(words("cli.otp.settings.done", ["slot": String(slot)]))
        }
    }
}
