import COpenSSL

/// A DER X.509 certificate. Only the bytes are stored; OpenSSL parses them again for each question asked.
public struct X509Certificate: Sendable {
    public let der: [UInt8]

    /// Throws unless `der` is exactly one certificate OpenSSL can parse.
    public init(der: [UInt8]) throws {
        guard let certificate = Self.parse(der) else { throw CryptoError.notDER(.certificate) }
        X509_free(certificate)
        self.der = der
    }

    private static func parse(_ der: [UInt8]) -> OpaquePointer? {
        OSSL.parse(der, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) })
    }

    /// Runs `body` with OpenSSL's parse of the certificate, freed afterwards.
    func withCertificate<T>(_ body: (OpaquePointer) -> T?) -> T? {
        guard let certificate = Self.parse(der) else { return nil }
        defer { X509_free(certificate) }
        return body(certificate)
    }

    /// The subject public key, when it is an EC key on P-256.
    public var publicKey: P256PublicKey? {
        withCertificate { certificate in
            // get0: the certificate owns the key.
            guard let key = X509_get0_pubkey(certificate) else {
                ERR_clear_error()
                return nil
            }
            guard let (x, y) = try? P256.coordinates(of: key) else { return nil }
            return try? P256PublicKey(x: x, y: y)
        }
    }

    /// The subject name on one line, in certificate order: "C=SE, O=Yubico AB, CN=…". Attributes of one
    /// multi-valued RDN are joined with "+"; ",", "+", "\" and quotes in values are escaped with "\".
    public var subject: String {
        withCertificate { certificate -> String? in
            guard let name = X509_get_subject_name(certificate) else { return nil }
            return Self.oneLine(name)
        } ?? ""
    }

    /// The issuer name on one line, written as `subject` is.
    public var issuer: String {
        withCertificate { certificate -> String? in
            guard let name = X509_get_issuer_name(certificate) else { return nil }
            return Self.oneLine(name)
        } ?? ""
    }

    static func oneLine(_ name: OpaquePointer) -> String {
        var out = ""
        var previousSet: Int32 = -1
        for index in 0..<max(0, X509_NAME_entry_count(name)) {
            guard let entry = X509_NAME_get_entry(name, index) else { continue }
            let set = X509_NAME_ENTRY_set(entry)
            if index > 0 { out += set == previousSet ? "+" : ", " }
            previousSet = set
            out +=
                attributeName(X509_NAME_ENTRY_get_object(entry)) + "=" + escaped(value(X509_NAME_ENTRY_get_data(entry)))
        }
        return out
    }

    /// The short name (CN, O, …), or the dotted OID for attributes OpenSSL does not know.
    private static func attributeName(_ object: OpaquePointer?) -> String {
        guard let object else { return "?" }
        let nid = OBJ_obj2nid(object)
        if nid != NID_undef, let short = OBJ_nid2sn(nid) { return String(cString: short) }
        var buffer = [CChar](repeating: 0, count: 128)
        let n = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        guard n > 0 else { return "?" }
        return String(
            decoding: buffer.prefix(min(Int(n), buffer.count - 1)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The value as UTF-8, whatever string type the certificate used.
    private static func value(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String {
        guard let string else { return "" }
        var utf8: UnsafeMutablePointer<UInt8>?
        let n = ASN1_STRING_to_UTF8(&utf8, string)
        guard n >= 0, let utf8 else {
            ERR_clear_error()
            return "?"
        }
        defer { CRYPTO_free(utf8, nil, 0) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(n)), as: UTF8.self)
    }

    private static func escaped(_ value: String) -> String {
        var out = ""
        for c in value {
            if c == "," || c == "+" || c == "\\" || c == "\"" || c == ";" || c == "<" || c == ">" { out.append("\\") }
            out.append(c)
        }
        return out
    }

    /// Whether this certificate's ECDSA-SHA256 signature verifies with `issuerKey`.
    public func isSigned(by issuerKey: P256PublicKey) -> Bool {
        withCertificate { certificate -> Bool in
            guard X509_get_signature_nid(certificate) == NID_ecdsa_with_SHA256,
                let key = try? P256.evpKey(point: issuerKey.uncompressed)
            else { return false }
            defer { EVP_PKEY_free(key) }
            let verified = X509_verify(certificate, key) == 1
            ERR_clear_error()
            return verified
        } ?? false
    }

    /// A self-signed X.509 v3 certificate for `key` (for the virtual key's attestation): subject and issuer
    /// CN=`commonName`, the given serial, valid from now for 20 years, basicConstraints CA:FALSE, ECDSA-SHA256.
    public static func selfSigned(key: P256PrivateKey, commonName: String, serial: UInt64) throws -> X509Certificate {
        let pkey = try P256.evpKey(point: key.publicKey.uncompressed, scalar: key.raw)
        defer { EVP_PKEY_free(pkey) }
        guard let certificate = X509_new() else { throw OSSL.failure("X509_new") }
        defer { X509_free(certificate) }
        let version3: Int = 2  // X509_VERSION_3
        let validityDays: Int32 = 20 * 365 + 5  // 20 years, leap days included
        guard X509_set_version(certificate, version3) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial) == 1,
            X509_gmtime_adj(X509_getm_notBefore(certificate), 0) != nil,
            X509_time_adj_ex(X509_getm_notAfter(certificate), validityDays, 0, nil) != nil
        else {
            throw OSSL.failure("X509_set_version, ASN1_INTEGER_set_uint64, X509_time_adj_ex")
        }
        guard let name = X509_get_subject_name(certificate),
            Array(commonName.utf8).withUnsafeBufferPointer({
                X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, $0.baseAddress, Int32($0.count), -1, 0)
            }) == 1,
            X509_set_issuer_name(certificate, name) == 1
        else {
            throw OSSL.failure("X509_NAME_add_entry_by_txt, X509_set_issuer_name")
        }
        guard X509_set_pubkey(certificate, pkey) == 1 else { throw OSSL.failure("X509_set_pubkey") }
        guard let constraints = BASIC_CONSTRAINTS_new() else { throw OSSL.failure("BASIC_CONSTRAINTS_new") }
        defer { BASIC_CONSTRAINTS_free(constraints) }
        constraints.pointee.ca = 0
        guard X509_add1_ext_i2d(certificate, NID_basic_constraints, constraints, 1, UInt(X509V3_ADD_DEFAULT)) == 1
        else {
            throw OSSL.failure("X509_add1_ext_i2d")
        }
        guard X509_sign(certificate, pkey, EVP_sha256()) > 0 else { throw OSSL.failure("X509_sign") }
        guard let der = OSSL.der({ i2d_X509(certificate, $0) }) else { throw OSSL.failure("i2d_X509") }
        return try X509Certificate(der: der)
    }
}
