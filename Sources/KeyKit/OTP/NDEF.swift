import FoundationEssentials
import Glibc

public enum NDEFError: Error, Equatable, Sendable {
    case malformed(Malformation)
    /// Chunked records, which this reader does not join.
    case chunkedRecords
    case noOTP(NoOTP)

    /// Why no OTP was found in a well-formed message.
    public enum NoOTP: Equatable, Sendable {
        /// The tag holds no URI or text record.
        case noRecords
        /// The NDEF file is empty.
        case emptyFile
        /// The pattern given is not a regular expression.
        case invalidPattern(String)
        /// The pattern given has no capture group.
        case patternWithoutGroup(String)
        /// The pattern matched none of the texts.
        case noMatch(pattern: String, texts: [String])
        /// No record looks like `prefix`<OTP> or holds a text.
        case notRecognised(prefix: String)
    }

}

/// One NDEF record.
public struct NDEFRecord: Equatable, Sendable {
    /// Type name format (3 bits): 1 is NFC Forum well-known type.
    public var tnf: UInt8
    public var type: [UInt8]
    public var id: [UInt8]
    public var payload: [UInt8]

    public static let tnfWellKnown: UInt8 = 0x01

    public init(tnf: UInt8, type: [UInt8], id: [UInt8] = [], payload: [UInt8]) {
        self.tnf = tnf
        self.type = type
        self.id = id
        self.payload = payload
    }

    /// What a well-known URI or text record says.
    public enum Content: Equatable, Sendable {
        case uri(String)
        case text(String, language: String, utf16: Bool)
        case other
    }

    /// URI identifier codes 0x00-0x23 (NFC Forum URI RTD).
    public static let uriPrefixes: [String] = [
        "", "http://www.", "https://www.", "http://", "https://", "tel:", "mailto:",
        "ftp://anonymous:anonymous@", "ftp://ftp.", "ftps://", "sftp://", "smb://", "nfs://", "ftp://", "dav://",
        "news:", "telnet://", "imap:", "rtsp://", "urn:", "pop:", "sip:", "sips:", "tftp:", "btspp://",
        "btl2cap://", "btgoep://", "tcpobex://", "irdaobex://", "file://", "urn:epc:id:", "urn:epc:tag:",
        "urn:epc:pat:", "urn:epc:raw:", "urn:epc:", "urn:nfc:",
    ]

    /// Decodes a well-known "U" or "T" record; throws when its payload is malformed.
    public func content() throws(NDEFError) -> Content {
        guard tnf == NDEFRecord.tnfWellKnown else { return .other }
        if type == [0x55] {  // "U"
            guard let code = payload.first else { throw .malformed(Malformation(.uriRecord, .empty)) }
            // Codes past the table are reserved: treat as no prefix, as readers do.
            let prefix = Int(code) < NDEFRecord.uriPrefixes.count ? NDEFRecord.uriPrefixes[Int(code)] : ""
            guard let rest = String(validating: payload.dropFirst(), as: UTF8.self) else {
                throw .malformed(Malformation(.uriRecord, .notUTF8))
            }
            return .uri(prefix + rest)
        }
        if type == [0x54] {  // "T"
            guard let status = payload.first else { throw .malformed(Malformation(.textRecord, .empty)) }
            let utf16 = status & 0x80 != 0
            let langLength = Int(status & 0x3F)
            guard payload.count >= 1 + langLength else {
                throw .malformed(Malformation(.languageCode, .tooLong(langLength, maximum: payload.count - 1)))
            }
            let language = String(decoding: payload[1..<(1 + langLength)], as: UTF8.self)
            let body = Array(payload[(1 + langLength)...])
            let text: String
            if utf16 {
                text = try NDEFRecord.decodeUTF16(body)
            } else {
                guard let s = String(validating: body, as: UTF8.self) else {
                    throw .malformed(Malformation(.textRecord, .notUTF8))
                }
                text = s
            }
            return .text(text, language: language, utf16: utf16)
        }
        return .other
    }

    /// UTF-16 with an optional byte-order mark, big-endian without one.
    static func decodeUTF16(_ bytes: [UInt8]) throws(NDEFError) -> String {
        guard bytes.count % 2 == 0 else { throw .malformed(Malformation(.textRecord, .length(bytes.count))) }
        var littleEndian = false
        var start = 0
        if bytes.count >= 2 {
            if bytes[0] == 0xFF && bytes[1] == 0xFE {
                littleEndian = true; start = 2
            } else if bytes[0] == 0xFE && bytes[1] == 0xFF {
                start = 2
            }
        }
        var units = [UInt16]()
        var i = start
        while i + 1 < bytes.count {
            units.append(
                littleEndian
                    ? UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8
                    : UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
            i += 2
        }
        guard let s = String(validating: units, as: UTF16.self) else {
            throw .malformed(Malformation(.textRecord, .notUTF16))
        }
        return s
    }

    /// A well-known URI record, with the longest matching prefix abbreviated.
    public static func uri(_ uri: String) -> NDEFRecord {
        var best = 0
        for (i, p) in uriPrefixes.enumerated() where i > 0 && uri.hasPrefix(p) && p.count > uriPrefixes[best].count {
            best = i
        }
        let rest = Array(uri.utf8.dropFirst(uriPrefixes[best].utf8.count))
        return NDEFRecord(tnf: tnfWellKnown, type: [0x55], payload: [UInt8(best)] + rest)
    }

    /// A well-known text record, UTF-8.
    public static func text(_ text: String, language: String = "en") -> NDEFRecord {
        let lang = Array(language.utf8.prefix(63))
        return NDEFRecord(tnf: tnfWellKnown, type: [0x54], payload: [UInt8(lang.count)] + lang + Array(text.utf8))
    }
}

/// An NDEF message: one or more records.
public enum NDEFMessage {
    /// Parses a whole message. Chunked records are not supported; anything truncated, trailing or
    /// inconsistent is an error.
    public static func parse(_ bytes: [UInt8]) throws(NDEFError) -> [NDEFRecord] {
        guard !bytes.isEmpty else { throw .malformed(Malformation(.ndefMessage, .empty)) }
        var records = [NDEFRecord]()
        var i = 0
        /// `field`: the field's name in the NDEF specification.
        func need(_ n: Int, _ field: String) throws(NDEFError) {
            guard n >= 0, bytes.count - i >= n else {
                throw .malformed(Malformation(.ndefMessage, .runsPast(field: field)))
            }
        }
        while true {
            try need(2, "TYPE_LENGTH")
            let header = bytes[i]
            let mb = header & 0x80 != 0, me = header & 0x40 != 0, cf = header & 0x20 != 0
            let sr = header & 0x10 != 0, il = header & 0x08 != 0
            let tnf = header & 0x07
            if records.isEmpty && !mb { throw .malformed(Malformation(.ndefMessage, .flagMissing("MB", record: 1))) }
            if !records.isEmpty && mb {
                throw .malformed(Malformation(.ndefMessage, .flagUnexpected("MB", record: records.count + 1)))
            }
            if cf { throw .chunkedRecords }
            guard tnf != 0x07 else { throw .malformed(Malformation(.ndefRecord, .value("TNF=7"))) }
            let typeLength = Int(bytes[i + 1])
            i += 2
            let payloadLength: Int
            if sr {
                try need(1, "PAYLOAD_LENGTH")
                payloadLength = Int(bytes[i])
                i += 1
            } else {
                try need(4, "PAYLOAD_LENGTH")
                payloadLength = Int(BigEndian.integer(bytes[i..<(i + 4)]))
                i += 4
            }
            var idLength = 0
            if il {
                try need(1, "ID_LENGTH")
                idLength = Int(bytes[i])
                i += 1
            }
            if tnf == 0x00 && (typeLength != 0 || payloadLength != 0 || idLength != 0) {
                throw .malformed(Malformation(.ndefRecord, .value("TNF=0")))
            }
            if (tnf == 0x05 || tnf == 0x06) && typeLength != 0 {
                throw .malformed(Malformation(.ndefRecord, .value("TNF=\(tnf)")))
            }
            try need(typeLength, "TYPE")
            let type = Array(bytes[i..<(i + typeLength)])
            i += typeLength
            try need(idLength, "ID")
            let id = Array(bytes[i..<(i + idLength)])
            i += idLength
            try need(payloadLength, "PAYLOAD")
            let payload = Array(bytes[i..<(i + payloadLength)])
            i += payloadLength
            records.append(NDEFRecord(tnf: tnf, type: type, id: id, payload: payload))
            if me { break }
            guard i < bytes.count else {
                throw .malformed(Malformation(.ndefMessage, .flagMissing("ME", record: records.count)))
            }
        }
        guard i == bytes.count else { throw .malformed(Malformation(.ndefMessage, .trailing(bytes.count - i))) }
        return records
    }

    /// Encodes records (short records where the payload fits 255 bytes).
    public static func encode(_ records: [NDEFRecord]) -> [UInt8] {
        var out = [UInt8]()
        for (n, r) in records.enumerated() {
            let short = r.payload.count <= 255
            var header = r.tnf & 0x07
            if n == 0 { header |= 0x80 }
            if n == records.count - 1 { header |= 0x40 }
            if short { header |= 0x10 }
            if !r.id.isEmpty { header |= 0x08 }
            out += [header, UInt8(r.type.count)]
            out += short ? [UInt8(r.payload.count)] : BigEndian.bytes(UInt64(r.payload.count), count: 4)
            if !r.id.isEmpty { out.append(UInt8(r.id.count)) }
            out += r.type + r.id + r.payload
        }
        return out
    }
}

/// Finds the OTP in what a key's NDEF tag holds.
public enum NDEFOTP {
    /// The URI a YubiKey's NDEF tag holds by default, the OTP after it.
    public static let defaultURIPrefix = "https://my.yubico.com/yk/#"

    /// The OTP in `records`: with `pattern`, its first capture group in the first record's URI or text that
    /// matches; without, what follows `#` in a `https://my.yubico.com/…#OTP` URI (or the last path component
    /// of a URI without fragment), or the whole text of a text record.
    public static func extract(from records: [NDEFRecord], pattern: String? = nil) throws -> String {
        let texts: [String] = try records.compactMap { r -> String? in
            switch try r.content() {
            case .uri(let u): return u
            case .text(let t, _, _): return t
            case .other: return nil
            }
        }
        guard !texts.isEmpty else { throw NDEFError.noOTP(.noRecords) }
        if let pattern {
            guard let regex = UserPattern.compile(pattern) else {
                throw NDEFError.noOTP(.invalidPattern(pattern))
            }
            guard UserPattern.captureGroups(in: pattern) >= 1 else {
                throw NDEFError.noOTP(.patternWithoutGroup(pattern))
            }
            for t in texts {
                if let captured = UserPattern.firstCapture(of: regex, in: t) { return captured }
            }
            throw NDEFError.noOTP(.noMatch(pattern: pattern, texts: texts))
        }
        for r in records {
            switch try r.content() {
            case .uri(let u):
                if let hash = u.lastIndex(of: "#") {
                    let otp = String(u[u.index(after: hash)...])
                    if !otp.isEmpty { return otp }
                }
                if let slash = u.lastIndex(of: "/"), u.hasPrefix("http") {
                    let last = String(u[u.index(after: slash)...])
                    if OTPClassifier.classify(last).kind != .staticPassword { return last }
                }
            case .text(let t, _, _):
                let trimmed = t.trimmingWhitespace
                if !trimmed.isEmpty { return trimmed }
            case .other:
                continue
            }
        }
        throw NDEFError.noOTP(.notRecognised(prefix: defaultURIPrefix))
    }
}

/// Reads the NDEF message of an NFC Forum Type 4 tag (a YubiKey's NDEF application) over PC/SC.
public struct NDEFSession: Sendable {
    public let transport: SmartCardProtocol
    public static let capabilityContainerFile: [UInt8] = [0xE1, 0x03]

    public init(connection: any SmartCardConnection) {
        transport = SmartCardProtocol(connection: connection)
    }

    /// The capability container's fields this reader needs.
    public struct CapabilityContainer: Equatable, Sendable {
        public var mappingVersion: UInt8
        public var maxReadLength: Int
        public var ndefFileID: [UInt8]
        public var ndefMaxSize: Int

        public init(parsing b: [UInt8]) throws(NDEFError) {
            guard b.count >= 15 else {
                throw .malformed(Malformation(.capabilityContainer, .tooShort(b.count, minimum: 15)))
            }
            mappingVersion = b[2]
            maxReadLength = Int(b[3]) << 8 | Int(b[4])
            // TLVs from offset 7: T=04 (NDEF file control), L=06.
            var i = 7
            var found: ([UInt8], Int)?
            while i + 2 <= b.count {
                let t = b[i], l = Int(b[i + 1])
                guard i + 2 + l <= b.count else { break }
                if t == 0x04 && l >= 6 {
                    found = (Array(b[(i + 2)..<(i + 4)]), Int(b[i + 4]) << 8 | Int(b[i + 5]))
                    break
                }
                i += 2 + l
            }
            guard let found else { throw .malformed(Malformation(.ndefFile, .missing)) }
            ndefFileID = found.0
            ndefMaxSize = found.1
        }
    }

    func selectFile(_ id: [UInt8]) async throws {
        let r = try await transport.send(APDU(ins: 0xA4, p1: 0x00, p2: 0x0C, data: id))
        guard r.status.isSuccess else {
            if r.status == .fileNotFound {
                throw NDEFError.malformed(Malformation(.ndefFile, .notFound(Hex.encode(id, uppercase: true))))
            }
            throw SmartCardError.status(r.status)
        }
    }

    func readBinary(offset: Int, length: Int) async throws -> [UInt8] {
        try await transport.sendChecked(APDU(ins: 0xB0, p1: UInt8(offset >> 8), p2: UInt8(offset & 0xFF), le: length))
    }

    /// SELECTs the NDEF application and reads the capability container.
    public func capabilityContainer() async throws -> CapabilityContainer {
        _ = try await transport.select(AID.ndef, name: "NDEF")
        try await selectFile(NDEFSession.capabilityContainerFile)
        let head = try await readBinary(offset: 0, length: 2)
        guard head.count == 2 else {
            throw NDEFError.malformed(Malformation(.capabilityContainer, .length(head.count)))
        }
        let ccLength = Int(head[0]) << 8 | Int(head[1])
        guard ccLength >= 15 else {
            throw NDEFError.malformed(Malformation(.capabilityContainer, .tooShort(ccLength, minimum: 15)))
        }
        let cc = try await readBinary(offset: 0, length: min(ccLength, 255))
        return try CapabilityContainer(parsing: cc)
    }

    /// The raw NDEF message.
    public func readMessage() async throws -> [UInt8] {
        let cc = try await capabilityContainer()
        try await selectFile(cc.ndefFileID)
        let head = try await readBinary(offset: 0, length: 2)
        guard head.count == 2 else { throw NDEFError.malformed(Malformation(.ndefLength, .length(head.count))) }
        let length = Int(head[0]) << 8 | Int(head[1])
        guard length > 0 else { throw NDEFError.noOTP(.emptyFile) }
        if cc.ndefMaxSize >= 2, length > cc.ndefMaxSize - 2 {
            throw NDEFError.malformed(Malformation(.ndefLength, .tooLong(length, maximum: cc.ndefMaxSize - 2)))
        }
        let chunk = max(1, min(cc.maxReadLength > 0 ? cc.maxReadLength : 255, 255))
        var message = [UInt8]()
        while message.count < length {
            let part = try await readBinary(offset: 2 + message.count, length: min(chunk, length - message.count))
            guard !part.isEmpty else {
                throw NDEFError.malformed(Malformation(.ndefFile, .tooShort(2 + message.count, minimum: 2 + length)))
            }
            message += part
        }
        return Array(message.prefix(length))
    }

    /// The parsed records.
    public func read() async throws -> [NDEFRecord] {
        try NDEFMessage.parse(try await readMessage())
    }
}
