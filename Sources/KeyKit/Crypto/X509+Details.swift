import COpenSSL
import FoundationEssentials
import Glibc

// What a certificate says, for display: serial, validity, key usage, subject alternative names, fingerprint, the
// subject public key; and whether another certificate's key signed it.

extension X509Certificate {
    /// The key usage bits (RFC 5280 4.2.1.3).
    public struct KeyUsage: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        // OpenSSL's KU_* values.
        public static let digitalSignature = KeyUsage(rawValue: 0x0080)
        public static let nonRepudiation = KeyUsage(rawValue: 0x0040)
        public static let keyEncipherment = KeyUsage(rawValue: 0x0020)
        public static let dataEncipherment = KeyUsage(rawValue: 0x0010)
        public static let keyAgreement = KeyUsage(rawValue: 0x0008)
        public static let keyCertSign = KeyUsage(rawValue: 0x0004)
        public static let crlSign = KeyUsage(rawValue: 0x0002)
        public static let encipherOnly = KeyUsage(rawValue: 0x0001)
        public static let decipherOnly = KeyUsage(rawValue: 0x8000)

        /// Each usage with RFC 5280's name, in the RFC's order.
        public static let named: [(KeyUsage, String)] = [
            (.digitalSignature, "digitalSignature"), (.nonRepudiation, "nonRepudiation"),
            (.keyEncipherment, "keyEncipherment"), (.dataEncipherment, "dataEncipherment"),
            (.keyAgreement, "keyAgreement"), (.keyCertSign, "keyCertSign"), (.crlSign, "cRLSign"),
            (.encipherOnly, "encipherOnly"), (.decipherOnly, "decipherOnly"),
        ]

        /// The RFC 5280 names of the usages present.
        public var names: [String] { Self.named.filter { contains($0.0) }.map(\.1) }
    }

    /// One subject alternative name (RFC 5280 4.2.1.6).
    public enum AlternativeName: Sendable, Hashable, CustomStringConvertible {
        case email(String)
        case dns(String)
        case uri(String)
        /// Four bytes for IPv4, sixteen for IPv6.
        case ipAddress([UInt8])
        case directoryName(String)
        /// An otherName: its type's dotted OID and, when it is a string (as a Microsoft UPN is), the string.
        case otherName(oid: String, value: String?)
        case registeredID(String)
        /// x400Address or ediPartyName, shown by type number only.
        case unsupported(type: Int)

        /// As OpenSSL's text output writes them ("DNS:example.org", "IP Address:192.0.2.7").
        public var description: String {
            switch self {
            case .email(let v): return "email:" + v
            case .dns(let v): return "DNS:" + v
            case .uri(let v): return "URI:" + v
            case .ipAddress(let b): return "IP Address:" + Self.ipText(b)
            case .directoryName(let v): return "DirName:" + v
            case .otherName(let oid, let value): return "othername:" + oid + (value.map { ":" + $0 } ?? "")
            case .registeredID(let v): return "Registered ID:" + v
            case .unsupported(let type): return "type \(type)"
            }
        }

        static func ipText(_ b: [UInt8]) -> String {
            if b.count == 4 { return b.map(String.init).joined(separator: ".") }
            guard b.count == 16 else { return Hex.encode(b, uppercase: true) }
            return stride(from: 0, to: 16, by: 2).map { String(UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]), radix: 16) }
                .joined(separator: ":")
        }
    }

    /// The serial number's big-endian bytes (no sign byte).
    public var serialNumber: [UInt8] {
        withCertificate { certificate -> [UInt8]? in
            guard let serial = X509_get0_serialNumber(certificate) else { return nil }
            return Self.bytes(of: serial)
        } ?? []
    }

    /// The serial number in upper-case hex, as `openssl x509 -serial` prints it.
    public var serialHex: String { Hex.encode(serialNumber, uppercase: true) }

    /// The start of the validity period.
    public var notBefore: Date? {
        withCertificate { Self.date(X509_get0_notBefore($0)) }
    }

    /// The end of the validity period.
    public var notAfter: Date? {
        withCertificate { Self.date(X509_get0_notAfter($0)) }
    }

    /// The key usage extension's bits, or nil without the extension.
    public var keyUsage: KeyUsage? {
        withCertificate { certificate -> KeyUsage? in
            // X509_get_key_usage answers all ones when the extension is absent.
            guard X509_get_ext_by_NID(certificate, NID_key_usage, -1) >= 0 else { return nil }
            return KeyUsage(rawValue: X509_get_key_usage(certificate))
        }
    }

    /// The subject alternative names, in certificate order (empty without the extension).
    public var alternativeNames: [AlternativeName] {
        withCertificate { certificate -> [AlternativeName]? in
            var critical: Int32 = 0
            guard let raw = X509_get_ext_d2i(certificate, NID_subject_alt_name, &critical, nil) else {
                ERR_clear_error()
                return nil
            }
            let names = OpaquePointer(raw)
            defer { GENERAL_NAMES_free(names) }
            return (0..<max(0, OPENSSL_sk_num(names))).compactMap { index in
                OPENSSL_sk_value(names, index).map {
                    Self.alternativeName($0.assumingMemoryBound(to: GENERAL_NAME.self))
                }
            }
        } ?? []
    }

    /// The SHA-256 digest of the DER, as `openssl x509 -fingerprint -sha256` shows it.
    public var sha256Fingerprint: [UInt8] { Crypto.digest(.sha256, der) }

    /// The fingerprint as colon-separated upper-case hex pairs ("2F:02:DC:…").
    public var sha256FingerprintText: String {
        sha256Fingerprint.map { Hex.encode([$0], uppercase: true) }.joined(separator: ":")
    }

    /// The DER SubjectPublicKeyInfo, as OpenSSL writes it again (nil for a key OpenSSL cannot read).
    public var subjectPublicKeyInfo: [UInt8]? {
        withCertificate { certificate -> [UInt8]? in
            guard let key = X509_get0_pubkey(certificate) else {
                ERR_clear_error()
                return nil
            }
            return OSSL.der { i2d_PUBKEY(key, $0) }
        }
    }

    /// The long name of the signature algorithm ("ecdsa-with-SHA256", "sha256WithRSAEncryption").
    public var signatureAlgorithm: String {
        withCertificate { certificate -> String? in
            let nid = X509_get_signature_nid(certificate)
            return OBJ_nid2ln(nid).map { String(cString: $0) }
        } ?? ""
    }

    /// Whether the issuer's public key (`issuerSPKI`, DER SubjectPublicKeyInfo of any kind OpenSSL reads) verifies
    /// this certificate's signature. False for anything malformed.
    public func isSigned(byKey issuerSPKI: [UInt8]) -> Bool {
        guard let key = OSSL.parse(issuerSPKI, { d2i_PUBKEY(nil, $0, $1) }, free: { EVP_PKEY_free($0) }) else {
            return false
        }
        defer { EVP_PKEY_free(key) }
        return withCertificate { certificate -> Bool in
            defer { ERR_clear_error() }
            return X509_verify(certificate, key) == 1
        } ?? false
    }

    /// Whether `issuer`'s key signed this certificate and `issuer` names this certificate's issuer.
    public func isIssued(by issuer: X509Certificate) -> Bool {
        guard let key = issuer.subjectPublicKeyInfo else { return false }
        return self.issuer == issuer.subject && isSigned(byKey: key)
    }

    // MARK: OpenSSL's types to Swift

    private static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let n = Int(ASN1_STRING_length(string))
        guard n > 0, let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: n))
    }

    private static func text(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String {
        guard let string else { return "" }
        return String(decoding: bytes(of: string), as: UTF8.self)
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            ERR_clear_error()
            return nil
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    private static func oid(_ object: OpaquePointer?) -> String {
        guard let object else { return "" }
        var buffer = [CChar](repeating: 0, count: 128)
        let n = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        guard n > 0 else { return "" }
        return String(
            decoding: buffer.prefix(min(Int(n), buffer.count - 1)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func alternativeName(_ name: UnsafeMutablePointer<GENERAL_NAME>) -> AlternativeName {
        let type = name.pointee.type
        let d = name.pointee.d
        switch type {
        case GEN_EMAIL: return .email(text(d.rfc822Name))
        case GEN_DNS: return .dns(text(d.dNSName))
        case GEN_URI: return .uri(text(d.uniformResourceIdentifier))
        case GEN_IPADD: return .ipAddress(d.iPAddress.map { bytes(of: $0) } ?? [])
        case GEN_DIRNAME: return .directoryName(d.directoryName.map { oneLine($0) } ?? "")
        case GEN_RID: return .registeredID(oid(d.registeredID))
        case GEN_OTHERNAME:
            guard let other = d.otherName?.pointee else { return .otherName(oid: "", value: nil) }
            var value: String?
            if let v = other.value?.pointee {
                switch v.type {
                case V_ASN1_UTF8STRING, V_ASN1_IA5STRING, V_ASN1_PRINTABLESTRING:
                    value = text(v.value.asn1_string)
                default: value = nil
                }
            }
            return .otherName(oid: oid(other.type_id), value: value)
        default: return .unsupported(type: Int(type))
        }
    }
}
