import COpenSSL

/// Issues X.509 v3 certificates through OpenSSL: for any `AsymmetricPublicKey` (X25519 included), signed by any
/// `AsymmetricPrivateKey` that signs (RSA PKCS #1 v1.5 or ECDSA with a digest, or Ed25519). Self-signed when no
/// issuer certificate is given. The virtual key's PIV attestation and demo certificates are made here.
public enum CertificateIssuer {
    /// One attribute of a distinguished name: its short name or dotted OID ("CN", "O", "2.5.4.3") and value.
    public struct NameAttribute: Sendable, Equatable {
        public var type: String
        public var value: String

        public init(_ type: String, _ value: String) {
            self.type = type
            self.value = value
        }
    }

    /// An extension: its dotted OID, criticality, and the DER that its extnValue OCTET STRING holds.
    public struct Extension: Sendable, Equatable {
        public var oid: String
        public var critical: Bool
        public var value: [UInt8]

        public init(oid: String, critical: Bool = false, value: [UInt8]) {
            self.oid = oid
            self.critical = critical
            self.value = value
        }

        /// basicConstraints: cA TRUE or FALSE, critical.
        public static func basicConstraints(ca: Bool) -> Extension {
            Extension(oid: "2.5.29.19", critical: true, value: ca ? [0x30, 0x03, 0x01, 0x01, 0xFF] : [0x30, 0x00])
        }
    }

    /// When a certificate is valid.
    public enum Validity: Sendable, Equatable {
        /// From `notBefore` (seconds since 1970, UTC) to `notAfter`.
        case interval(notBefore: Int64, notAfter: Int64)
        /// From now for so many days.
        case days(Int)
        /// The issuer certificate's own validity period.
        case sameAsIssuer
    }

    public enum IssueError: Error, Equatable {
        /// X25519 keys cannot sign: a certificate needs a signing key.
        case keyCannotSign(AsymmetricKeyType)
        /// `.sameAsIssuer` without an issuer certificate.
        case noIssuer
        /// The certificate could not be made (a key OpenSSL refused, a failed OpenSSL call).
        case crypto(CryptoError)
    }

    /// A certificate for `publicKey` named `subject`, signed by `signingKey` with `digest` (ignored for Ed25519).
    /// The issuer name is `issuer`'s subject, or `subject` itself when `issuer` is nil (self-signed). `serial` is
    /// a big-endian positive number (a leading 00 is added where its top bit is set).
    public static func issue(
        subject: [NameAttribute], publicKey: AsymmetricPublicKey, serial: [UInt8],
        validity: Validity, signingKey: AsymmetricPrivateKey, issuer: X509Certificate? = nil,
        digest: SignatureDigest = .sha256,
        extensions: [Extension] = []
    ) throws(IssueError) -> X509Certificate {
        if signingKey.type == .x25519 { throw .keyCannotSign(.x25519) }
        do {
            return try make(
                subject: subject, publicKey: publicKey, serial: serial, validity: validity,
                signingKey: signingKey, issuer: issuer, digest: digest, extensions: extensions)
        } catch let error as IssueError {
            throw error
        } catch let error as CryptoError {
            throw .crypto(error)
        } catch {
            throw .crypto(.openssl(String(describing: type(of: error))))
        }
    }

    private static func make(
        subject: [NameAttribute], publicKey: AsymmetricPublicKey, serial: [UInt8],
        validity: Validity, signingKey: AsymmetricPrivateKey, issuer: X509Certificate?,
        digest: SignatureDigest, extensions: [Extension]
    ) throws -> X509Certificate {
        guard let certificate = X509_new() else { throw OSSL.failure("X509_new") }
        defer { X509_free(certificate) }
        let version3: Int = 2  // X509_VERSION_3
        guard X509_set_version(certificate, version3) == 1 else { throw OSSL.failure("X509_set_version") }
        try setSerial(certificate, serial)
        try setValidity(certificate, validity, issuer: issuer)
        try setNames(certificate, subject: subject, issuer: issuer)
        try publicKey.withEVP { key in
            guard X509_set_pubkey(certificate, key) == 1 else { throw OSSL.failure("X509_set_pubkey") }
        }
        for e in extensions { try add(e, to: certificate) }
        try signingKey.withEVP { key in
            let md = signingKey.type == .ed25519 ? nil : digest.evp
            guard X509_sign(certificate, key, md) > 0 else { throw OSSL.failure("X509_sign") }
        }
        guard let der = OSSL.der({ i2d_X509(certificate, $0) }) else { throw OSSL.failure("i2d_X509") }
        return try X509Certificate(der: der)
    }

    private static func setSerial(_ certificate: OpaquePointer, _ serial: [UInt8]) throws {
        guard let bn = BN_new() else { throw OSSL.failure("BN_new") }
        defer { BN_free(bn) }
        guard OSSL.withBytes(serial, { BN_bin2bn($0, Int32($1), bn) }) != nil,
            BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(certificate)) != nil
        else {
            throw OSSL.failure("X509_set_serialNumber")
        }
    }

    private static func setValidity(
        _ certificate: OpaquePointer, _ validity: Validity,
        issuer: X509Certificate?
    ) throws {
        switch validity {
        case .interval(let notBefore, let notAfter):
            guard ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(notBefore)) != nil,
                ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(notAfter)) != nil
            else {
                throw OSSL.failure("ASN1_TIME_set")
            }
        case .days(let days):
            guard X509_gmtime_adj(X509_getm_notBefore(certificate), 0) != nil,
                X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(clamping: days), 0, nil) != nil
            else {
                throw OSSL.failure("X509_time_adj_ex")
            }
        case .sameAsIssuer:
            guard let issuer else { throw IssueError.noIssuer }
            try withParsed(issuer) { parsed in
                guard X509_set1_notBefore(certificate, X509_get0_notBefore(parsed)) == 1,
                    X509_set1_notAfter(certificate, X509_get0_notAfter(parsed)) == 1
                else {
                    throw OSSL.failure("X509_set1_notAfter")
                }
            }
        }
    }

    private static func setNames(
        _ certificate: OpaquePointer, subject: [NameAttribute],
        issuer: X509Certificate?
    ) throws {
        guard let name = X509_get_subject_name(certificate) else { throw OSSL.failure("X509_get_subject_name") }
        for attribute in subject {
            let added = Array(attribute.value.utf8).withUnsafeBufferPointer {
                X509_NAME_add_entry_by_txt(name, attribute.type, MBSTRING_UTF8, $0.baseAddress, Int32($0.count), -1, 0)
            }
            guard added == 1 else { throw OSSL.failure("X509_NAME_add_entry_by_txt") }
        }
        if let issuer {
            try withParsed(issuer) { parsed in
                guard X509_set_issuer_name(certificate, X509_get_subject_name(parsed)) == 1 else {
                    throw OSSL.failure("X509_set_issuer_name")
                }
            }
        } else {
            guard X509_set_issuer_name(certificate, name) == 1 else { throw OSSL.failure("X509_set_issuer_name") }
        }
    }

    private static func add(_ e: Extension, to certificate: OpaquePointer) throws {
        guard let object = OBJ_txt2obj(e.oid, 1) else { throw OSSL.failure("OBJ_txt2obj") }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else { throw OSSL.failure("ASN1_OCTET_STRING_new") }
        defer { ASN1_OCTET_STRING_free(octets) }
        guard OSSL.withBytes(e.value, { ASN1_OCTET_STRING_set(octets, $0, Int32($1)) }) == 1,
            let made = X509_EXTENSION_create_by_OBJ(nil, object, e.critical ? 1 : 0, octets)
        else {
            throw OSSL.failure("X509_EXTENSION_create_by_OBJ")
        }
        defer { X509_EXTENSION_free(made) }
        guard X509_add_ext(certificate, made, -1) == 1 else { throw OSSL.failure("X509_add_ext") }
    }

    private static func withParsed<R>(_ certificate: X509Certificate, _ body: (OpaquePointer) throws -> R) throws -> R {
        guard let parsed = OSSL.parse(certificate.der, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) }) else {
            throw CryptoError.notDER(.certificate)
        }
        defer { X509_free(parsed) }
        return try body(parsed)
    }
}

extension X509Certificate {
    /// The certificate's subject public key, of any kind PIV holds (nil for others).
    public var asymmetricPublicKey: AsymmetricPublicKey? {
        guard let parsed = OSSL.parse(der, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) }) else { return nil }
        defer { X509_free(parsed) }
        guard let key = X509_get0_pubkey(parsed) else {
            ERR_clear_error()
            return nil
        }
        return try? AsymmetricPublicKey(evp: key)
    }

    /// Whether this certificate's signature verifies with `issuerKey` (any kind that signs).
    public func isSigned(by issuerKey: AsymmetricPublicKey) -> Bool {
        guard let parsed = OSSL.parse(der, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) }) else { return false }
        defer { X509_free(parsed) }
        return
            (try? issuerKey.withEVP { key -> Bool in
                defer { ERR_clear_error() }
                return X509_verify(parsed, key) == 1
            }) ?? false
    }
}
