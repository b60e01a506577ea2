import COpenSSL

/// Certificates and certificate requests signed by a key that is not here: a PIV slot's, which signs what it is
/// given on the key. OpenSSL builds the part to be signed (with the signature algorithm of the signer's key type
/// written into it: a throwaway key of that type signs it first), the slot signs those bytes, and the signature
/// takes the throwaway's place.
extension CertificateIssuer {
    /// What the external signer signs, and how the result is put together.
    public struct Unsigned: Sendable, Equatable {
        /// The DER the signer signs (TBSCertificate, or CertificationRequestInfo).
        public var toBeSigned: [UInt8]
        /// The signature's AlgorithmIdentifier DER.
        public var algorithm: [UInt8]

        /// The signed structure's DER: SEQUENCE { toBeSigned, algorithm, BIT STRING signature }.
        public func signed(with signature: [UInt8]) -> [UInt8] {
            let bits = [0x03] + TLV.lengthBytes(signature.count + 1) + [0x00] + signature
            let body = toBeSigned + algorithm + bits
            return [0x30] + TLV.lengthBytes(body.count) + body
        }
    }

    /// The key a throwaway signer of the same signature algorithm as a key of `type` (RSA's size does not change
    /// the algorithm; EC's curve does not either).
    static func throwaway(for type: AsymmetricKeyType) throws(IssueError) -> AsymmetricPrivateKey {
        let stand: AsymmetricKeyType
        switch type {
        case .rsa: stand = .rsa(bits: 1024)
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1: stand = .p256
        case .ed25519: stand = .ed25519
        case .x25519: throw .keyCannotSign(.x25519)
        }
        do {
            return try AsymmetricPrivateKey.generate(stand)
        } catch let e as CryptoError {
            throw .crypto(e)
        } catch {
            throw .crypto(.openssl("generate"))
        }
    }

    /// A self-signed certificate for `publicKey` (the signer's own key), to be signed with `digest` (ignored for
    /// Ed25519) by the signer.
    public static func unsignedCertificate(
        subject: [NameAttribute], publicKey: AsymmetricPublicKey, serial: [UInt8], validity: Validity,
        digest: SignatureDigest = .sha256, extensions: [Extension] = []
    ) throws(IssueError) -> Unsigned {
        let stand = try throwaway(for: publicKey.type)
        let certificate = try issue(
            subject: subject, publicKey: publicKey, serial: serial, validity: validity, signingKey: stand,
            digest: digest, extensions: extensions)
        guard let x509 = OSSL.parse(certificate.der, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) }) else {
            throw .crypto(OSSL.failure("d2i_X509"))
        }
        defer { X509_free(x509) }
        var algorithm: UnsafePointer<X509_ALGOR>?
        X509_get0_signature(nil, &algorithm, x509)
        guard let tbs = OSSL.der({ i2d_re_X509_tbs(x509, $0) }),
            let alg = OSSL.der({ i2d_X509_ALGOR(algorithm, $0) })
        else { throw .crypto(OSSL.failure("i2d_re_X509_tbs")) }
        return Unsigned(toBeSigned: tbs, algorithm: alg)
    }

    /// A certificate request (PKCS #10) for `publicKey`, named `subject`, to be signed with `digest` by the key.
    public static func unsignedRequest(
        subject: [NameAttribute], publicKey: AsymmetricPublicKey, digest: SignatureDigest = .sha256
    ) throws(IssueError) -> Unsigned {
        let stand = try throwaway(for: publicKey.type)
        do {
            guard let request = X509_REQ_new() else { throw OSSL.failure("X509_REQ_new") }
            defer { X509_REQ_free(request) }
            guard X509_REQ_set_version(request, 0) == 1 else { throw OSSL.failure("X509_REQ_set_version") }
            guard let name = X509_REQ_get_subject_name(request) else { throw OSSL.failure("X509_REQ_get_subject_name") }
            for a in subject {
                let added = OSSL.withBytes(Array(a.value.utf8)) {
                    X509_NAME_add_entry_by_txt(name, a.type, MBSTRING_UTF8, $0, Int32($1), -1, 0)
                }
                guard added == 1 else { throw OSSL.failure("X509_NAME_add_entry_by_txt") }
            }
            try publicKey.withEVP { key in
                guard X509_REQ_set_pubkey(request, key) == 1 else { throw OSSL.failure("X509_REQ_set_pubkey") }
            }
            try stand.withEVP { key in
                let md = stand.type == .ed25519 ? nil : digest.evp
                guard X509_REQ_sign(request, key, md) > 0 else { throw OSSL.failure("X509_REQ_sign") }
            }
            var algorithm: UnsafePointer<X509_ALGOR>?
            X509_REQ_get0_signature(request, nil, &algorithm)
            guard let info = OSSL.der({ i2d_re_X509_REQ_tbs(request, $0) }),
                let alg = OSSL.der({ i2d_X509_ALGOR(algorithm, $0) })
            else { throw OSSL.failure("i2d_re_X509_REQ_tbs") }
            return Unsigned(toBeSigned: info, algorithm: alg)
        } catch let e as CryptoError {
            throw .crypto(e)
        } catch {
            throw .crypto(.openssl("X509_REQ"))
        }
    }
}
