import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import KeyKit

struct OTPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "otp",
        abstract: "One-time passwords and the OTP slots: capture, parse, decrypt, NDEF, challenge-response.",
        discussion: """
            A key types a Yubico OTP (public ID, then 32 modhex characters), an OATH-HOTP code (6 or 8 digits, \
            optionally after a 12-character token identifier) or a static password. Text typed on a German, \
            French or Dvorak keyboard layout is recognised and translated back to what the key sent. The \
            OTP application's two slots can be shown (info), programmed with a Yubico OTP credential \
            (yubiotp), a static password (static), an OATH-HOTP credential (hotp) or for HMAC-SHA1 \
            challenge-response (chalresp), asked a challenge (calculate), swapped (swap), chosen for the \
            NDEF tag (ndef), given new settings or access codes (settings) and emptied (delete).

            A slot may be protected by an access code (6 bytes, 12 hex digits): every write to it then \
            needs the code. Codes are never taken from the command line: --locked (the slot has a code) and \
            --lock (give it a new one) read them from standard input (one per line, the current code \
            first, then the new one, then the slot's secrets), or ask for them without echo on a terminal.
            """,
        subcommands: [
            Capture.self, Parse.self, Decrypt.self, Read.self, Info.self, Calculate.self, ChalResp.self,
            YubiOTP.self, Static.self, HOTP.self, NDEF.self, Settings.self, Swap.self, Delete.self,
        ])
}

/// The classification as lines for people.
func printOTP(_ c: ClassifiedOTP) {
    switch c.kind {
    case .yubicoOTP:
        out(words("cli.otp.type.yubicoOTP"))
        out(words("cli.otp.field.publicID", ["id": (c.publicID ?? "").isEmpty ? words("cli.otp.none") : c.publicID!]))
        if let s = c.serial { out(words("cli.otp.field.serial", ["serial": "\(s)"])) }
        if let t = c.token { out(words("cli.otp.field.token", ["token": t])) }
    case .oathHOTP:
        out(words("cli.otp.type.oathHOTP"))
        if let id = c.publicID { out(words("cli.otp.field.tokenIdentifier", ["id": id])) }
        if let s = c.serial { out(words("cli.otp.field.serial", ["serial": "\(s)"])) }
        if let code = c.code { out(words("cli.otp.field.code", ["code": code])) }
    case .staticPassword:
        out(words("cli.otp.type.static"))
    }
    if c.layout != .us {
        out(words("cli.otp.field.layout", ["layout": c.layout.displayName, "text": c.text]))
    }
}

extension OTPCommand {
    struct Capture: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "capture",
            abstract: "Wait for a key to type an OTP, then show it and what it is.",
            discussion: """
                On a terminal, input is read without echo, character by character: only a burst that ends with \
                Enter and has no pause longer than --max-gap counts as the key's; slower typing is ignored. When \
                standard input is not a terminal, one line is read.
                """)

        @Option(name: .long, help: ArgumentHelp("How long to wait for the key.", valueName: "SECONDS"))
        var timeout: Double = 30

        @Option(name: .long, help: ArgumentHelp("Longest pause between two characters a key types.", valueName: "MS"))
        var maxGap: UInt = 50

        @Flag(name: .long, help: "Print JSON (otp, raw, type, layout, public_id, serial, token or code).")
        var json = false

        func validate() throws {
            guard timeout > 0 else { throw ValidationError(words("cli.otp.timeout")) }
        }

        func run() throws {
            let captured: String
            if isatty(STDIN_FILENO) == 1 {
                captured = try captureFromTerminal()
            } else {
                guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                    throw YktermError.failed(words("cli.otp.inputEnded", ["what": words("cli.otp.what.otp")]))
                }
                captured = line
            }
            let c = OTPClassifier.classify(LoadedConfig.current.otp.extract(fromTyped: captured))
            if json {
                try printJSON(ClassifiedOTPJSON(c))
            } else {
                out(c.raw)
                printOTP(c)
            }
        }

        private func captureFromTerminal() throws -> String {
            var old = termios()
            guard tcgetattr(STDIN_FILENO, &old) == 0 else {
                throw YktermError.failed(
                    words("cli.otp.capture.noSettings", ["detail": String(cString: strerror(errno))]))
            }
            var raw = old
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
            raw.c_iflag &= ~tcflag_t(ICRNL)
            // VMIN 0 / VTIME 0: read returns what is there; poll does the waiting.
            withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                cc[Int(VMIN)] = 0
                cc[Int(VTIME)] = 0
            }
            Prompt.savedTerminal = old
            Prompt.installSignalRestore()
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
            defer {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &old)
                Prompt.savedTerminal = nil
            }
            warn(words("cli.otp.capture.touch", ["seconds": String(Int(timeout.rounded(.up)))]))
            var detector = BurstDetector(maxGap: Double(maxGap) / 1000)
            let start = Date()
            var pending = [UInt8]()
            while true {
                let left = timeout - Date().timeIntervalSince(start)
                guard left > 0 else {
                    throw YktermError.failed(
                        words("cli.otp.capture.timeout", ["seconds": String(Int(timeout.rounded(.up)))]))
                }
                var fds = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                let r = poll(&fds, 1, Int32(min(left * 1000, 1000)))
                if r < 0 && errno == EINTR { continue }
                guard r >= 0 else {
                    throw YktermError.failed(
                        words("cli.otp.capture.unreadable", ["detail": String(cString: strerror(errno))]))
                }
                if r == 0 { continue }
                var buffer = [UInt8](repeating: 0, count: 256)
                let n = read(STDIN_FILENO, &buffer, buffer.count)
                if n == 0 { throw YktermError.failed(words("cli.otp.capture.closed")) }
                if n < 0 { continue }
                let now = Date().timeIntervalSince(start)
                pending += buffer[..<n]
                // Keep an incomplete UTF-8 sequence for the next read.
                var cut = pending.count
                while cut > 0 && pending[cut - 1] & 0xC0 == 0x80 { cut -= 1 }
                if cut > 0 && pending[cut - 1] >= 0xC0 {
                    let lead = pending[cut - 1]
                    let need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
                    cut = pending.count - (cut - 1) >= need ? pending.count : cut - 1
                } else {
                    cut = pending.count
                }
                let text = String(decoding: pending[..<cut], as: UTF8.self)
                pending.removeFirst(cut)
                for ch in text {
                    if ch == "\u{04}" { throw YktermError.failed(words("cli.otp.capture.cancelled")) }
                    switch detector.feed(ch, at: now) {
                    case .captured(let s)?:
                        return s
                    case .rejected?:
                        warn(words("cli.otp.capture.tooSlow"))
                    case nil:
                        break
                    }
                }
            }
        }
    }

    struct Parse: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "parse",
            abstract: "Tell what a captured OTP is: Yubico OTP, OATH-HOTP or static password.",
            discussion: """
                For a Yubico OTP, the public ID and, when it is serial-based (modhex of FF 00 and the serial, \
                as ykman programs it when told to use the serial as public ID, so it starts with vvcc), the serial number.
                """)

        @Argument(help: "The OTP as typed.")
        var otp: String

        @Flag(name: .long, help: "Print JSON (otp, raw, type, layout, public_id, serial, token or code).")
        var json = false

        func run() throws {
            // The config file's [otp] parsers find the OTP in longer text (a URL the key types).
            let c = OTPClassifier.classify(LoadedConfig.current.otp.extract(fromTyped: otp))
            if json { try printJSON(ClassifiedOTPJSON(c)) } else { printOTP(c) }
        }
    }

    struct Decrypt: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "decrypt",
            abstract: "Decrypt a Yubico OTP with its AES key and check it.",
            discussion: """
                Shows the private ID, the usage counter (counter), the session counter, the 8 Hz timestamp, the \
                random field and whether the CRC checks. A wrong key or an altered OTP fails the CRC check \
                (exit status 1). Give the key as - to read it from standard input: the command line is visible \
                to other users.
                """)

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The AES-128 key (32 hex digits), or - to read it from standard input.",
                valueName: "HEX|-"))
        var key: String

        @Argument(help: "The Yubico OTP.")
        var otp: String

        @Flag(
            name: .long,
            help: "Print JSON (public_id, private_id, counter, session_counter, timestamp, random, crc_ok).")
        var json = false

        func run() throws {
            let keyText: String
            if key == "-" {
                guard let line = readLine(strippingNewline: true) else {
                    throw YktermError.usage(words("cli.otp.inputEnded", ["what": words("cli.otp.what.aesKey")]))
                }
                keyText = line
            } else {
                warn("ykterm: " + words("cli.otp.decrypt.keyOnCommandLine"))
                keyText = key
            }
            let aes: [UInt8]
            do { aes = try Hex.decode(keyText.trimmingSpaces) } catch {
                throw YktermError.usage(
                    words("cli.otp.notHex", ["what": words("cli.otp.what.aesKey"), "detail": explained(error).1]))
            }
            guard aes.count == 16 else {
                throw YktermError.usage(words("cli.otp.decrypt.keyLength", ["count": String(aes.count)]))
            }
            let c = OTPClassifier.classify(otp)
            guard c.kind == .yubicoOTP else {
                throw YktermError.usage(
                    StringTables.load().text(UIText("cli.otp.notYubicoOTP", nested: ["otp": .excerpt(otp)])))
            }
            let d: DecryptedOTP
            do { d = try YubicoOTP.decrypt(c.text, key: aes) } catch { throw YktermError.usage(explained(error).1) }
            let t = d.token
            if json {
                try printJSON(DecryptedOTPJSON(d))
            } else {
                out(words("cli.otp.field.publicID", ["id": d.publicID.isEmpty ? words("cli.otp.none") : d.publicID]))
                out(words("cli.otp.field.privateID", ["id": t.privateID.hex]))
                out(words("cli.otp.field.counter", ["value": "\(t.usageCounter)"]))
                out(words("cli.otp.field.sessionCounter", ["value": "\(t.sessionCounter)"]))
                out(words("cli.otp.field.timestamp", ["value": "\(t.timestamp)"]))
                out(words("cli.otp.field.random", ["value": "\(t.random)"]))
                out(words(d.crcOK ? "cli.otp.field.crcOK" : "cli.otp.field.crcFailed"))
            }
            guard d.crcOK else { throw YubicoOTPError.crcMismatch }
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "read",
            abstract: "Read the key's NDEF tag (over NFC, or the virtual key) and the OTP in it.",
            discussion: """
                The OTP is taken from the default https://my.yubico.com/yk/#OTP URI, or from a text record. \
                For another format give --pattern: a regular expression whose first capture group is the OTP, \
                or list such patterns under [otp] parsers in the config file.
                """)

        @OptionGroup var keyOptions: KeyOptions

        @Option(
            name: .long,
            help: ArgumentHelp(
                "A regular expression whose first capture group is the OTP.",
                valueName: "REGEX"))
        var pattern: String?

        @Flag(
            name: .long,
            help: "Print JSON (records, otp, type, public_id, serial); otp and type are null when no OTP is found.")
        var json = false

        func run() async throws {
            let records = try await NDEFOperations(keyOptions.choice.opener()).read()
            let rows = records.map(NDEFRecordJSON.init)
            let otp: String
            do {
                // --pattern, else the config file's [otp] parsers, else the standard forms.
                if let pattern {
                    otp = try NDEFOTP.extract(from: records, pattern: pattern)
                } else {
                    otp = try LoadedConfig.current.otp.extract(from: records)
                }
            } catch {
                // What was read is shown either way; the exit status and the error say no OTP was found.
                if json {
                    try printJSON(OTPReadJSON(classification: nil, records: rows))
                } else {
                    rows.forEach { out($0.line) }
                }
                throw error
            }
            let c = OTPClassifier.classify(otp)
            if json {
                try printJSON(OTPReadJSON(classification: ClassifiedOTPJSON(c), records: rows))
            } else {
                rows.forEach { out($0.line) }
                out(words("cli.otp.field.otp", ["otp": otp]))
                printOTP(c)
            }
        }
    }
}

extension ClassifiedOTPJSON {
    init(_ c: ClassifiedOTP) {
        type = c.kind.rawValue
        otp = c.text
        raw = c.raw
        layout = c.layout.rawValue
        publicID = c.publicID
        serial = c.serial.map { Int($0) }
        token = c.token
        code = c.code
    }
}

extension DecryptedOTPJSON {
    init(_ d: DecryptedOTP) {
        let t = d.token
        publicID = d.publicID
        serial = YubicoOTP.serial(fromPublicID: d.publicID).map { Int($0) }
        privateID = t.privateID.hex
        counter = Int(t.usageCounter)
        sessionCounter = Int(t.sessionCounter)
        timestamp = Int(t.timestamp)
        random = Int(t.random)
        crc = Int(t.crc)
        crcOK = d.crcOK
    }
}

extension NDEFRecordJSON {
    init(_ record: NDEFRecord) {
        switch try? record.content() {
        case .uri(let u)?: self = .uri(u)
        case .text(let t, let language, _)?: self = .text(t, language: language)
        default: self = .other(tnf: Int(record.tnf), type: record.type.hex)
        }
    }

    /// The record as a line for people.
    var line: String {
        switch self {
        case .uri(let u): words("cli.otp.record.uri", ["uri": u])
        case .text(let t, _): words("cli.otp.record.text", ["text": t])
        case .other(let tnf, let type): words("cli.otp.record.other", ["tnf": "\(tnf)", "type": type])
        }
    }
}
