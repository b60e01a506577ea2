// Data objects: GET DATA and PUT DATA, the slots' certificates (stored as they are or gzip-compressed), and the
// CHUID and CCC objects.

extension PIVSession {
    /// The largest inflated certificate accepted from a compressed certificate object.
    static let maxInflatedCertificate = 64 * 1024

    /// GET DATA: the content of object `id` (the value of its 53 tag; of 7E for the discovery object).
    /// `objectNotFound` when the key does not have it.
    public func object(_ id: [UInt8]) async throws -> [UInt8] {
        let request = TLV(Tag.objectID, id).encoded
        let answer = try await send(APDU(ins: Ins.getData, p1: 0x3F, p2: 0xFF, data: request, le: 256), object: id)
        let expected = id == PIV.ObjectID.discovery ? UInt32(PIV.ObjectID.discovery[0]) : Tag.objectData
        return try PIVSession.unwrap(expected, answer)
    }

    /// PUT DATA: stores `data` as object `id` (empty deletes it). Needs the management key.
    public func putObject(_ id: [UInt8], _ data: [UInt8]) async throws {
        let body = TLV(Tag.objectID, id).encoded + TLV(Tag.objectData, data).encoded
        _ = try await send(APDU(ins: Ins.putData, p1: 0x3F, p2: 0xFF, data: body), object: id)
    }

    /// The certificate in `slot`'s object (F9: the attestation certificate), or nil when there is none.
    public func certificate(in slot: PIV.Slot) async throws -> X509Certificate? {
        let content: [UInt8]
        do {
            content = try await object(slot.certificateObject)
        } catch PIVError.objectNotFound {
            return nil
        }
        return try PIVSession.parseCertificateObject(content)
    }

    /// Reads a certificate object's content: 70 the certificate, 71 CertInfo (00 as it is, 01 gzip), FE the
    /// error detection code. Nil for an empty object (a deleted certificate).
    public static func parseCertificateObject(_ content: [UInt8]) throws(PIVError) -> X509Certificate? {
        guard !content.isEmpty else { return nil }
        let tlvs = try parseTLVs(content)
        var der = try field(Tag.certificate, in: tlvs)
        guard !der.isEmpty else { return nil }
        let info = tlvs.value(for: Tag.certificateInfo)?.first ?? PIV.certificateUncompressed
        switch info {
        case PIV.certificateUncompressed: break
        case PIV.certificateGzip:
            do {
                der = try Gzip.inflate(der, limit: maxInflatedCertificate)
            } catch {
                throw .malformed(.gzip(error))
            }
        default: throw .unsupportedCertificateInfo(info)
        }
        do {
            return try X509Certificate(der: der)
        } catch {
            throw .malformed(.certificate)
        }
    }

    /// The content of a certificate object for `certificate`, gzip-compressed when `compress` is true.
    public static func certificateObject(_ certificate: X509Certificate, compress: Bool = false) throws -> [UInt8] {
        let der = compress ? try Gzip.deflate(certificate.der) : certificate.der
        return TLV(Tag.certificate, der).encoded
            + TLV(Tag.certificateInfo, [compress ? PIV.certificateGzip : PIV.certificateUncompressed]).encoded
            + TLV(Tag.errorDetection, []).encoded
    }

    /// Stores `certificate` in `slot`'s object. Needs the management key.
    public func putCertificate(_ certificate: X509Certificate, in slot: PIV.Slot, compress: Bool = false) async throws {
        try await putObject(slot.certificateObject, PIVSession.certificateObject(certificate, compress: compress))
    }

    /// Deletes the certificate in `slot`'s object. Needs the management key.
    public func deleteCertificate(in slot: PIV.Slot) async throws {
        try await putObject(slot.certificateObject, [])
    }

    /// The Card Holder Unique Identifier object's content, or nil when there is none.
    public func chuid() async throws -> [UInt8]? {
        try await optionalObject(PIV.ObjectID.chuid)
    }

    /// The Card Capability Container object's content, or nil when there is none.
    public func cardCapabilityContainer() async throws -> [UInt8]? {
        try await optionalObject(PIV.ObjectID.cardCapabilityContainer)
    }

    /// Stores a CHUID (`PIVSession.newCHUID()` makes one). Needs the management key.
    public func putCHUID(_ content: [UInt8]) async throws {
        try await putObject(PIV.ObjectID.chuid, content)
    }

    /// Stores a CCC (`PIVSession.newCardCapabilityContainer()` makes one). Needs the management key.
    public func putCardCapabilityContainer(_ content: [UInt8]) async throws {
        try await putObject(PIV.ObjectID.cardCapabilityContainer, content)
    }

    /// Whether ykman keeps the management key behind the PIN: its data object (5FFF00: 80 { 81 flags, 82 salt })
    /// has the flag 02 (the key stored in the printed information object) or a salt (the key derived from the
    /// PIN, an older way).
    public func managementKeyIsPINProtected() async throws -> Bool {
        guard let content = try await optionalObject(PIV.ObjectID.pivmanData) else { return false }
        return PIVSession.pivmanProtectsManagementKey(content)
    }

    /// Whether ykman's data object `content` says the management key is behind the PIN.
    public static func pivmanProtectsManagementKey(_ content: [UInt8]) -> Bool {
        guard let outer = try? TLV.parseAll(content), let inner = outer.value(for: 0x80),
            let fields = try? TLV.parseAll(inner)
        else { return false }
        return (fields.value(for: 0x81)?.first ?? 0) & 0x02 != 0 || fields.value(for: 0x82) != nil
    }

    private func optionalObject(_ id: [UInt8]) async throws -> [UInt8]? {
        do {
            let content = try await object(id)
            return content.isEmpty ? nil : content
        } catch PIVError.objectNotFound {
            return nil
        }
    }

    /// The FASC-N of a non-federal issuer (agency 9999, system 9999, credential 999999), SP 800-73-4's
    /// template for cards outside the US federal PKI.
    public static let nonFederalFASCN: [UInt8] = [
        0xD4, 0xE7, 0x39, 0xDA, 0x73, 0x9C, 0xED, 0x39, 0xCE, 0x73, 0x9D, 0x83, 0x68,
        0x58, 0x21, 0x08, 0x42, 0x10, 0x84, 0x21, 0xC8, 0x42, 0x10, 0xC3, 0xEB,
    ]

    /// A CHUID: the non-federal FASC-N (30), a GUID (34, a random UUID unless given), an expiry date (35,
    /// YYYYMMDD), an empty issuer signature (3E) and error detection code (FE).
    public static func newCHUID(guid: [UInt8] = randomUUID(), expiry: String = "20300101") -> [UInt8] {
        TLV(0x30, nonFederalFASCN).encoded + TLV(0x34, guid).encoded + TLV(0x35, Array(expiry.utf8)).encoded
            + TLV(0x3E, []).encoded + TLV(Tag.errorDetection, []).encoded
    }

    /// A random UUID (RFC 9562 version 4: the version and variant bits set), as ykman puts in a CHUID.
    public static func randomUUID() -> [UInt8] {
        var uuid = Crypto.random(16)
        uuid[6] = (uuid[6] & 0x0F) | 0x40
        uuid[8] = (uuid[8] & 0x3F) | 0x80
        return uuid
    }

    /// The GUID (tag 34) of a CHUID's content.
    public static func guid(inCHUID content: [UInt8]) -> [UInt8]? {
        (try? TLV.parseAll(content))?.value(for: 0x34)
    }

    /// A CCC as ykman writes one: a card identifier (F0: A0 00 00 01 16 FF 02 and 14 random bytes), the container
    /// and grammar versions (F1, F2: 21), and the other fields of SP 800-73-4's table 8 empty or zero.
    public static func newCardCapabilityContainer(cardID: [UInt8] = Crypto.random(14)) -> [UInt8] {
        var out = TLV(0xF0, [0xA0, 0x00, 0x00, 0x01, 0x16, 0xFF, 0x02] + cardID).encoded
        out += TLV(0xF1, [0x21]).encoded + TLV(0xF2, [0x21]).encoded + TLV(0xF3, []).encoded
        out += TLV(0xF4, [0x00]).encoded + TLV(0xF5, [0x10]).encoded
        for tag: UInt32 in [0xF6, 0xF7, 0xFA, 0xFB, 0xFC, 0xFD, Tag.errorDetection] { out += TLV(tag, []).encoded }
        return out
    }
}
