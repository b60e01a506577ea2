/// What a captured string is.
public enum OTPKind: String, Sendable, Equatable {
    /// A Yubico OTP: 0-16 modhex characters of public ID, then 32 of encrypted token.
    case yubicoOTP = "yubico-otp"
    /// An OATH-HOTP code typed by a key: 6 or 8 digits, optionally after a 12-character token identifier.
    case oathHOTP = "oath-hotp"
    /// Anything else (a static password, or something a human typed).
    case staticPassword = "static"
}

/// A captured string, classified.
///
/// OATH-HOTP token identifier: as ykman programs it (`ykman otp hotp --identifier`), 12 characters
/// OMP (2) + TT (2) + MUI (8), each part either modhex or decimal digits; ykman's default is `ubhe` followed by
/// the serial number as 8 decimal digits. The code follows at once: 6 or 8 digits.
public struct ClassifiedOTP: Equatable, Sendable {
    public var kind: OTPKind
    /// The string as typed.
    public var raw: String
    /// The string translated back to US keys (equal to `raw` when the layout is US or unknown).
    public var text: String
    /// The keyboard layout the text was recognised as typed on.
    public var layout: KeyboardLayout
    /// Yubico OTP: the modhex public ID (may be empty). HOTP: the token identifier, when present.
    public var publicID: String?
    /// Yubico OTP: the 32 modhex characters of the encrypted token.
    public var token: String?
    /// HOTP: the code.
    public var code: String?
    /// The serial number when the public ID (or the HOTP identifier's MUI) encodes it.
    public var serial: UInt32?
}

public enum OTPClassifier {
    /// Classifies `raw`, trying US first, then the other layouts.
    public static func classify(_ raw: String) -> ClassifiedOTP {
        let trimmed = raw.trimmingSuffix { $0 == "\r" || $0 == "\n" }
        for layout in KeyboardLayout.allCases {
            let text = layout.translateToUS(trimmed)
            if layout != .us && text == trimmed { continue }
            for candidate in [text, text.lowercased()] {
                if let r = yubico(candidate, raw: trimmed, layout: layout) { return r }
                if let r = hotp(candidate, raw: trimmed, layout: layout) { return r }
            }
        }
        return ClassifiedOTP(kind: .staticPassword, raw: trimmed, text: trimmed, layout: .us)
    }

    static func yubico(_ text: String, raw: String, layout: KeyboardLayout) -> ClassifiedOTP? {
        let n = text.count
        guard n >= YubicoOTP.tokenLength, n <= YubicoOTP.tokenLength + YubicoOTP.maxPublicIDLength, n % 2 == 0,
            text.allSatisfy({ Modhex.alphabet.contains($0) })
        else { return nil }
        let chars = Array(text)
        let publicID = String(chars[..<(n - YubicoOTP.tokenLength)])
        return ClassifiedOTP(
            kind: .yubicoOTP, raw: raw, text: text, layout: layout, publicID: publicID,
            token: String(chars[(n - YubicoOTP.tokenLength)...]),
            serial: YubicoOTP.serial(fromPublicID: publicID))
    }

    static func hotp(_ text: String, raw: String, layout: KeyboardLayout) -> ClassifiedOTP? {
        let chars = Array(text)
        func digits(_ s: ArraySlice<Character>) -> Bool { s.allSatisfy { $0.isASCII && $0.isNumber } }
        if chars.count == 6 || chars.count == 8, digits(chars[...]) {
            return ClassifiedOTP(kind: .oathHOTP, raw: raw, text: text, layout: layout, code: text)
        }
        guard chars.count == 18 || chars.count == 20 else { return nil }
        let id = chars[..<12]
        let code = chars[12...]
        guard digits(code), let serial = identifierSerial(id) else { return nil }
        return ClassifiedOTP(
            kind: .oathHOTP, raw: raw, text: text, layout: layout, publicID: String(id),
            code: String(code), serial: serial.0 ? serial.1 : nil)
    }

    /// Checks a 12-character token identifier; returns whether the MUI names a serial, and that serial.
    static func identifierSerial(_ id: ArraySlice<Character>) -> (Bool, UInt32?)? {
        let a = Array(id)
        func modhex(_ s: ArraySlice<Character>) -> Bool { s.allSatisfy { Modhex.alphabet.contains($0) } }
        func decimal(_ s: ArraySlice<Character>) -> Bool { s.allSatisfy { $0.isASCII && $0.isNumber } }
        let omp = a[0..<2], tt = a[2..<4], mui = a[4..<12]
        guard modhex(omp) || decimal(omp), modhex(tt) || decimal(tt), modhex(mui) || decimal(mui) else { return nil }
        if decimal(mui) { return (true, UInt32(String(mui))) }
        guard let b = try? Modhex.decode(String(mui)) else { return nil }
        return (true, UInt32(BigEndian.integer(b)))
    }
}

extension String {
    func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var s = Substring(self)
        while let last = s.last, predicate(last) { s = s.dropLast() }
        return String(s)
    }
}

/// Tells a key's typing from a human's: a key types its whole OTP in one burst (a few milliseconds between
/// characters, typically under 20-30 ms) and ends it with Enter. Feed it every character with the time it
/// arrived; it returns a capture when Enter ends a burst. Characters that came after a pause longer than
/// `maxGap` start a new burst, so what a human typed before the touch is dropped; a line a human typed (with
/// pauses) ends in `.rejected`.
public struct BurstDetector: Sendable {
    public enum Event: Equatable, Sendable {
        /// Enter ended a burst: the characters before it.
        case captured(String)
        /// Enter ended something typed too slowly (or too short) to be a key.
        case rejected(String)
    }

    /// Longest pause between two characters of one burst, in seconds.
    public var maxGap: Double
    /// Fewest characters a burst needs (6: the shortest HOTP code).
    public var minLength: Int
    private var buffer: [Character] = []
    private var last: Double?

    public init(maxGap: Double = 0.05, minLength: Int = 6) {
        self.maxGap = maxGap
        self.minLength = minLength
    }

    /// What the current burst holds so far.
    public var pending: String { String(buffer) }

    public mutating func reset() {
        buffer = []
        last = nil
    }

    /// One character (Enter is "\r" or "\n") at `time` seconds.
    public mutating func feed(_ c: Character, at time: Double) -> Event? {
        let gap = last.map { time - $0 } ?? 0
        last = time
        let isEnter = c == "\r" || c == "\n" || c == "\r\n"
        if isEnter {
            let text = String(buffer)
            let ok = !buffer.isEmpty && gap <= maxGap && buffer.count >= minLength
            buffer = []
            last = nil
            if text.isEmpty { return nil }
            return ok ? .captured(text) : .rejected(text)
        }
        if !buffer.isEmpty && gap > maxGap { buffer = [] }
        buffer.append(c)
        return nil
    }

    /// Feeds a run of characters that arrived together.
    public mutating func feed(_ text: String, at time: Double) -> Event? {
        var result: Event?
        for c in text {
            if let e = feed(c, at: time) {
                result = e
                if case .captured = e { return e }
            }
        }
        return result
    }
}
