import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

/// The `--slot` option of the slot commands.
struct OTPSlotOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The OTP slot: 1 (short touch) or 2 (long touch).", valueName: "1|2"))
    var slot: Int

    func validate() throws {
        guard slot == 1 || slot == 2 else {
            throw ValidationError(
                words("cli.option.oneOf", ["option": "--slot", "allowed": oneOf(["1", "2"]), "value": String(slot)]))
        }
    }
}

extension KeyOptions {
    /// The OTP operations on the key these options chose.
    var otp: OTPOperations { OTPOperations(choice.opener()) }

    /// Writes `configuration` to `slot`, asking before it replaces a programmed one (`replacingAsked`).
    @discardableResult
    func writeSlot(
        _ slot: Int, _ configuration: OTPSlotConfiguration, currentAccessCode: [UInt8]?, prompt: Prompt, force: Bool
    ) async throws -> OTPOperations.Slots {
        let otp = self.otp
        return try await replacingAsked(prompt, force: force) { replacing in
            try await otp.write(slot: slot, replacing: replacing, currentAccessCode: currentAccessCode) { _ in
                configuration
            }
        }
    }
}

/// Runs a slot write that may replace a programmed slot: with `force` it replaces at once; otherwise the
/// operation refuses (`OTPOperationError.slotProgrammed`), the user is asked while the key is not held (without
/// a terminal, --force is required), and the write runs again.
@discardableResult
func replacingAsked(
    _ prompt: Prompt, force: Bool,
    _ write: (_ replacing: Bool) async throws -> OTPOperations.Slots
) async throws -> OTPOperations.Slots {
    do {
        return try await write(force)
    } catch OTPOperationError.slotProgrammed(let slot) {
        try confirmSlotWrite(
            prompt, force: force,
            question: words("otp.slots.overwrite", ["slot": String(slot)]),
            needsForce: words("cli.otp.overwriteNeedsForce", ["slot": String(slot)]))
        return try await write(true)
    }
}

extension OTPCommand {
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show the OTP application's version, which slots are programmed, and the serial.",
            discussion: """
                A slot that types its OTP when touched (Yubico OTP, OATH-HOTP, static password) is shown as \
                touch-triggered; a challenge-response slot is not, whether or not it waits for a touch (the \
                key does not tell). The serial is shown when the key reveals it to the OTP application. \
                Whether a slot has an access code is not shown: a YubiKey does not report it (a write \
                without the code is refused).
                """)

        @OptionGroup var keyOptions: KeyOptions

        @Flag(
            name: .long,
            help: "Print JSON (version, serial, program_sequence, slots: slot, configured, touch_triggered).")
        var json = false

        func run() async throws {
            let slots = try await keyOptions.otp.slots(readSerial: true)
            let (status, serial) = (slots.status, slots.serial)
            if json {
                try printJSON(
                    OTPInfoJSON(
                        version: status.version.description, serial: serial.map { Int($0) },
                        programSequence: Int(status.programSequence),
                        slots: (1...2).map { slot in
                            OTPInfoJSON.Slot(
                                slot: slot, configured: status.isConfigured(slot: slot),
                                touchTriggered: status.isTouchTriggered(slot: slot))
                        }))
            } else {
                out(words("cli.otp.info.version", ["version": "\(status.version)"]))
                out(
                    words(
                        "cli.otp.field.serial",
                        ["serial": serial.map { String($0) } ?? words("cli.otp.info.notReadable")]))
                for slot in 1...2 {
                    let state =
                        !status.isConfigured(slot: slot)
                        ? "cli.otp.info.empty"
                        : status.isTouchTriggered(slot: slot)
                            ? "cli.otp.info.touchTriggered" : "cli.otp.info.programmed"
                    out(words("cli.otp.info.slot", ["slot": String(slot), "state": words(state)]))
                }
            }
        }
    }

    struct Calculate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "calculate",
            abstract: "Send a challenge to a challenge-response slot and print the HMAC-SHA1 response in hex.",
            discussion: """
                The challenge is 1 to 64 bytes. A slot that needs a touch answers only after it: when the key \
                has not answered within a moment, "Touch your key" is printed on standard error. With --totp the \
                slot holds a TOTP secret (otp chalresp --totp): the code of the 30-second step of CHALLENGE, a \
                Unix time in seconds (default: now), is printed instead, as an authenticator app shows it.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var slotOption: OTPSlotOption

        @Flag(name: .long, help: "Print the TOTP code of the slot's secret (RFC 6238: 30-second steps, HMAC-SHA1).")
        var totp = false

        @Option(name: .long, help: ArgumentHelp("With --totp: the code's digits, 6 or 8 (default 6).", valueName: "N"))
        var digits: Int?

        @Argument(
            help: ArgumentHelp(
                "The challenge in hex (1 to 64 bytes), or - to read it from standard input; with --totp a Unix time.",
                valueName: "CHALLENGE_HEX"))
        var challenge: String?

        func validate() throws {
            if let digits {
                guard totp else {
                    throw ValidationError(words("cli.option.onlyWith", ["option": "--digits", "other": "--totp"]))
                }
                guard digits == 6 || digits == 8 else { throw ValidationError(words("cli.otp.calculate.digits")) }
            }
            if totp, let challenge, Int64(challenge) == nil {
                throw ValidationError(words("cli.otp.calculate.time", ["value": String(challenge.prefix(40))]))
            }
            if !totp, challenge == nil { throw ValidationError(words("cli.otp.calculate.missing")) }
        }

        func run() async throws {
            // The challenge is checked before the key is asked.
            let challenge = totp ? nil : try hexChallenge()
            let slot = slotOption.slot
            let otp = keyOptions.otp
            do {
                if let challenge {
                    out(try await otp.calculate(slot: slot, challenge: challenge) { TouchNotice.show() }.hex)
                } else {
                    let time = self.challenge.flatMap { Int64($0) } ?? Int64(Date().timeIntervalSince1970)
                    out(try await otp.calculateTOTP(slot: slot, time: time, digits: digits ?? 6) { TouchNotice.show() })
                }
            } catch OTPError.slotEmpty {
                throw YktermError.failed(words("cli.otp.calculate.slotEmpty", ["slot": String(slot)]))
            }
        }

        /// CHALLENGE_HEX (or standard input, for -) as bytes: 1 to 64 of them.
        private func hexChallenge() throws -> [UInt8] {
            let challenge = self.challenge ?? ""
            let text = challenge == "-" ? try readStandardInput(words("cli.otp.what.challenge")) : challenge
            let bytes = try decodeHex(text, what: words("cli.otp.what.challenge"))
            guard !bytes.isEmpty else { throw YktermError.usage(words("cli.otp.calculate.empty")) }
            guard bytes.count <= 64 else { throw OTPError.challengeTooLong(bytes.count) }
            return bytes
        }
    }

    struct ChalResp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "chalresp",
            abstract: "Program a slot for HMAC-SHA1 challenge-response (asks before overwriting a programmed slot).",
            discussion: """
                The key is 1 to 20 bytes in hex (a key longer than 64 bytes is hashed with SHA-1 first, as HMAC \
                does). Give - to read it from standard input; without KEY_HEX it is asked for without echo (or \
                read from standard input when that is not a terminal). A key on the command line is visible to \
                other users of this machine while the command runs. A programmed slot is overwritten only after \
                confirmation, or with --force; without a terminal to ask on, --force is needed.
                """)

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var slotOption: OTPSlotOption
        @OptionGroup var accessCodes: OTPAccessCodeOptions

        @Flag(name: .long, help: "Answer a challenge only after a touch.")
        var touch = false

        @Flag(name: [.long, .short], help: "Overwrite a programmed slot without asking.")
        var force = false

        @Flag(
            name: .long,
            help: ArgumentHelp(
                "The key is a TOTP secret in Base32, as authenticator apps take it: otp calculate --totp then "
                    + "shows its codes."))
        var totp = false

        @Argument(
            help: ArgumentHelp(
                "The HMAC-SHA1 key in hex (with --totp in Base32), or - to read it from standard input; asked for when "
                    + "omitted.",
                valueName: "KEY_HEX"))
        var key: String?

        func run() async throws {
            let prompt = Prompt()
            let codes = try accessCodes.read(prompt)
            let what = words(totp ? "cli.otp.what.totpSecret" : "cli.otp.what.hmacKey")
            var text: String
            switch key {
            case "-"?:
                text = try readStandardInput(what)
            case let given?:
                warn("ykterm: " + words("cli.otp.chalresp.keyOnCommandLine"))
                text = given
            case nil:
                text = try prompt.secret(words(totp ? "cli.otp.prompt.totpSecret" : "cli.otp.prompt.hmacKey"))
            }
            var secret = totp ? try Base32.decode(text) : try decodeHex(text, what: what, secret: true)
            text = ""
            defer { for i in secret.indices { secret[i] = 0 } }
            // Refuse a key that does not fit before touching the key.
            let config = try OTPSlotConfiguration.challengeResponse(
                key: secret, requireTouch: touch,
                accessCode: codes.new)
            let (slot, touch, force) = (slotOption.slot, self.touch, self.force)
            try await keyOptions.writeSlot(slot, config, currentAccessCode: codes.current, prompt: prompt, force: force)
            if totp {
                out(words("cli.otp.chalresp.doneTOTP", ["slot": String(slot)]))
            } else {
                out(words(touch ? "cli.otp.chalresp.doneTouch" : "cli.otp.chalresp.done", ["slot": String(slot)]))
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a slot's configuration (asks first, unless --force).")

        @OptionGroup var keyOptions: KeyOptions
        @OptionGroup var slotOption: OTPSlotOption

        @OptionGroup var locked: OTPLockedOption

        @Flag(name: [.long, .short], help: "Delete without asking.")
        var force = false

        func run() async throws {
            let prompt = Prompt()
            let code = try locked.read(prompt)
            let (slot, force) = (slotOption.slot, self.force)
            // Asked while the key is not held: an empty slot is said at once, the question comes, then the delete.
            guard try await keyOptions.otp.slots().status.isConfigured(slot: slot) else {
                throw YktermError.failed(words("cli.otp.delete.alreadyEmpty", ["slot": String(slot)]))
            }
            try prompt.requireForce(force, otherwise: words("cli.otp.delete.needsForce", ["slot": String(slot)]))
            try prompt.confirmDeletion(force, words("otp.slots.delete.confirm", ["slot": String(slot)]))
            _ = try await keyOptions.otp.delete(slot: slot, accessCode: code)
            out(words("cli.otp.delete.done", ["slot": String(slot)]))
        }
    }
}
