import COpenSSL

/// A DER X.509 certificate, parsed by OpenSSL.
public struct X509Certificate: Sendable {
    public let der: [UInt8]

    public init(der: [UInt8]) throws {
        guard let x = X509Certificate.parse(der) else { throw CryptoError.openssl("not an X.509 certificate") }
        X509_free(x)
        self.der = der
    }

    static func parse(_ der: [UInt8]) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buf -> OpaquePointer? in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_X509(nil, &p, buf.count)
        }
    }

    private func withX509<T>(_ body: (OpaquePointer) -> T?) -> T? {
        guard let x = X509Certificate.parse(der) else { return nil }
        defer { X509_free(x) }
        return body(x)
    }

    public var publicKey: P256PublicKey? {
        withX509 { x in
            guard let key = X509_get_pubkey(x) else { return nil }
            defer { EVP_PKEY_free(key) }
            return P256.point(of: key).flatMap { try? P256PublicKey(uncompressed: $0) }
        }
    }

    public var subject: String {
        withX509 { x in
            var buf = [CChar](repeating: 0, count: 512)
            guard X509_NAME_oneline(X509_get_subject_name(x), &buf, Int32(buf.count)) != nil else { return nil }
            return Crypto.string(fromC: buf).split(separator: "/").joined(separator: ", ")
        } ?? ""
    }

    public func isSigned(by issuerKey: P256PublicKey) -> Bool {
        withX509 { x in
            guard let key = try? P256.pkey(publicPoint: issuerKey.uncompressed, privateScalar: nil) else { return false }
            defer { EVP_PKEY_free(key) }
            let ok = X509_verify(x, key) == 1
            ERR_clear_error()
            return ok
        } ?? false
    }

    public static func selfSigned(key: P256PrivateKey, commonName: String, serial: UInt64) throws -> X509Certificate {
        let pkey = try P256.pkey(publicPoint: key.publicKey.uncompressed, privateScalar: key.raw)
        defer { EVP_PKEY_free(pkey) }
        guard let x = X509_new() else { throw CryptoError.openssl("X509_new") }
        defer { X509_free(x) }
        let mbstringASC: Int32 = 0x1001
        guard X509_set_version(x, 2) == 1,
              ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial) == 1,
              X509_gmtime_adj(X509_getm_notBefore(x), 0) != nil,
              X509_gmtime_adj(X509_getm_notAfter(x), 20 * 365 * 86_400) != nil,
              X509_set_pubkey(x, pkey) == 1,
              let name = X509_get_subject_name(x),
              X509_NAME_add_entry_by_txt(name, "CN", mbstringASC, commonName, -1, -1, 0) == 1,
              X509_set_issuer_name(x, name) == 1,
              X509_sign(x, pkey, EVP_sha256()) > 0 else {
            throw CryptoError.openssl("building a self-signed certificate")
        }
        let n = i2d_X509(x, nil)
        guard n > 0 else { throw CryptoError.openssl("i2d_X509") }
        var out = [UInt8](repeating: 0, count: Int(n))
        out.withUnsafeMutableBufferPointer { buf in
            var p: UnsafeMutablePointer<UInt8>? = buf.baseAddress
            _ = i2d_X509(x, &p)
        }
        return try X509Certificate(der: out)
    }
}
