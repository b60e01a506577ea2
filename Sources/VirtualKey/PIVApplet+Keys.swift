import KeyKit

// Keys: GENERATE ASYMMETRIC, IMPORT KEY, ATTEST and MOVE KEY (which also deletes), and the attestation key.
extension PIVApplet {
    /// GENERATE ASYMMETRIC: P2 the slot; data AC { 80 algorithm, AA PIN policy, AB touch policy }. Needs the
    /// management key. Answers the public key under 7F49.
    func generate(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard apdu.p1 == 0, let slot = Self.slot(apdu.p2) else { return Self.badP1P2 }
        guard session.authenticated else { return Self.notAllowed }
        guard let outer = Self.tlvs(apdu.data), outer.count == 1, outer[0].tag == PIV.Tag.generateTemplate,
            let tlvs = try? outer[0].children(), let value = tlvs.value(for: PIV.Tag.generateAlgorithm),
            value.count == 1, let algorithm = PIV.Algorithm(rawValue: value[0]),
            Self.supports(algorithm, on: state.version), let type = Self.keyType(algorithm),
            let (pin, touch) = Self.policies(tlvs, slot: slot, version: state.version)
        else {
            return Self.badData
        }
        guard let key = try? AsymmetricPrivateKey.generate(type) else { return Response(status: .memoryFailure) }
        state.piv.keys[slot] = PIVState.StoredKey(
            algorithm: algorithm, pinPolicy: pin, touchPolicy: touch,
            origin: .generated, privateKey: key.pkcs8)
        let body = TLV(PIV.Tag.publicKey, Self.publicKeyTLVs(key.publicKey))
        return Response(data: body.encoded, status: .ok)
    }

    /// IMPORT KEY: P1 the algorithm, P2 the slot (F9 too, to replace the attestation key); data: RSA's p, q,
    /// dp, dq and q⁻¹ (tags 01-05, each half the modulus long), an EC scalar (06), or an Ed25519 (07) or X25519
    /// (08) key, then the policies. Needs the management key.
    func importKey(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard let slot = Self.slot(apdu.p2, attestation: true) else { return Self.badP1P2 }
        guard session.authenticated else { return Self.notAllowed }
        guard let algorithm = PIV.Algorithm(rawValue: apdu.p1), Self.supports(algorithm, on: state.version),
            let type = Self.keyType(algorithm)
        else {
            return Self.badP1P2
        }
        guard let tlvs = try? TLV.parseAll(apdu.data, mode: .simple),
            let (pin, touch) = Self.policies(tlvs, slot: slot, version: state.version),
            let key = Self.importedKey(type, tlvs)
        else {
            return Self.badData
        }
        state.piv.keys[slot] = PIVState.StoredKey(
            algorithm: algorithm, pinPolicy: pin, touchPolicy: touch,
            origin: .imported, privateKey: key.pkcs8)
        return Self.done
    }

    private static func importedKey(_ type: AsymmetricKeyType, _ tlvs: [TLV]) -> AsymmetricPrivateKey? {
        switch type {
        case .rsa:
            let half = type.length / 2
            let parts = [PIV.Tag.rsaP, PIV.Tag.rsaQ, PIV.Tag.rsaDP, PIV.Tag.rsaDQ, PIV.Tag.rsaQInv]
                .compactMap { tlvs.value(for: $0) }
            guard parts.count == 5, parts.allSatisfy({ $0.count <= half }),
                let key = try? AsymmetricPrivateKey.rsa(
                    p: parts[0], q: parts[1], dp: parts[2], dq: parts[3],
                    qInverse: parts[4]),
                key.type == type
            else { return nil }
            return key
        case .p256, .p384:
            guard let scalar = tlvs.value(for: PIV.Tag.ecPrivate) else { return nil }
            return try? AsymmetricPrivateKey.ec(type, scalar: scalar)
        case .ed25519:
            guard let raw = tlvs.value(for: PIV.Tag.ed25519Private) else { return nil }
            return try? AsymmetricPrivateKey.raw(raw, type: .ed25519)
        case .x25519:
            guard let raw = tlvs.value(for: PIV.Tag.x25519Private) else { return nil }
            return try? AsymmetricPrivateKey.raw(raw, type: .x25519)
        case .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            return nil
        }
    }

    /// MOVE KEY (firmware 5.7): P1 the destination slot, or FF to delete; P2 the source. Needs the management key.
    /// The destination must be empty (6A80 otherwise); an empty source answers 6A88. The attestation key stays.
    func moveKey(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard state.version >= PIV.version57 else { return Response(status: .invalidInstruction) }
        guard let source = Self.slot(apdu.p2), apdu.p1 == 0xFF || Self.slot(apdu.p1) != nil,
            apdu.p1 != apdu.p2
        else {
            return Self.badP1P2
        }
        guard session.authenticated else { return Self.notAllowed }
        guard let key = state.piv.keys[source] else { return Self.noKey }
        if apdu.p1 != 0xFF {
            let destination = PIV.Slot(rawValue: apdu.p1)
            guard state.piv.keys[destination] == nil else { return Self.badData }
            state.piv.keys[destination] = key
        }
        state.piv.keys[source] = nil
        return Self.done
    }

    /// ATTEST: P1 the slot. A certificate for the slot's key, signed by the attestation key (F9) and issued in
    /// the name of its certificate (object 5FFF01), with the YubiKey's extensions: firmware version, serial,
    /// PIN and touch policy, form factor. Only keys generated on the key can be attested.
    func attest(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard state.version >= Version(4, 3, 0) else { return Response(status: .invalidInstruction) }
        guard apdu.p2 == 0, let slot = Self.slot(apdu.p1) else { return Self.badP1P2 }
        guard let stored = state.piv.keys[slot] else { return Self.noKey }
        guard stored.origin == .generated else { return Self.badData }
        ensureAttestationKey(&state)
        guard let key = try? AsymmetricPrivateKey(pkcs8: stored.privateKey),
            let signer = state.piv.keys[.attestation].flatMap({ try? AsymmetricPrivateKey(pkcs8: $0.privateKey) }),
            let issuerDER = state.piv.objects[PIV.ObjectID.attestationCertificate],
            let issuer = try? X509Certificate(der: Self.certificateDER(issuerDER))
        else {
            return Response(status: .memoryFailure)
        }
        let oid = "1.3.6.1.4.1.41482.3."
        let serial = TLV(0x02, Self.positiveInteger(BigEndian.bytes(UInt64(state.serial), count: 4))).encoded
        let extensions = [
            CertificateIssuer.Extension(oid: oid + "3", value: state.version.bytes),
            CertificateIssuer.Extension(oid: oid + "7", value: serial),
            CertificateIssuer.Extension(
                oid: oid + "8",
                value: [stored.pinPolicy.rawValue, stored.touchPolicy.rawValue]),
            CertificateIssuer.Extension(oid: oid + "9", value: [state.formFactor]),
        ]
        let name = "YubiKey PIV Attestation " + Hex.encode([slot.rawValue])
        guard
            let certificate = try? CertificateIssuer.issue(
                subject: [.init("CN", name)], publicKey: key.publicKey, serial: Self.positiveInteger(Crypto.random(16)),
                validity: .sameAsIssuer, signingKey: signer, issuer: issuer, extensions: extensions)
        else {
            return Response(status: .memoryFailure)
        }
        return Response(data: certificate.der, status: .ok)
    }

    /// Makes the attestation key (P-256) and its self-signed certificate when the key has none yet: a YubiKey
    /// leaves the factory with them.
    func ensureAttestationKey(_ state: inout VirtualKeyState) {
        guard state.piv.keys[.attestation] == nil || state.piv.objects[PIV.ObjectID.attestationCertificate] == nil
        else { return }
        guard let key = try? AsymmetricPrivateKey.generate(.p256),
            let certificate = try? CertificateIssuer.issue(
                subject: [.init("O", "ykterm"), .init("CN", "Virtual YubiKey PIV Attestation")],
                publicKey: key.publicKey, serial: Self.positiveInteger(Crypto.random(16)), validity: .days(20 * 366),
                signingKey: key, extensions: [.basicConstraints(ca: true)])
        else { return }
        state.piv.keys[.attestation] = PIVState.StoredKey(
            algorithm: .eccP256, pinPolicy: .never, touchPolicy: .never,
            origin: .generated, privateKey: key.pkcs8)
        state.piv.objects[PIV.ObjectID.attestationCertificate] =
            TLV(PIV.Tag.certificate, certificate.der).encoded
            + TLV(PIV.Tag.certificateInfo, [PIV.certificateUncompressed]).encoded
            + TLV(PIV.Tag.errorDetection, []).encoded
    }

    /// The certificate inside a certificate object (tag 70), or the bytes themselves when they are not one.
    static func certificateDER(_ object: [UInt8]) -> [UInt8] {
        (try? TLV.parseAll(object))?.value(for: PIV.Tag.certificate) ?? object
    }

    /// Big-endian bytes as a positive DER INTEGER's content: leading zeros dropped, 00 added before a set top bit.
    static func positiveInteger(_ bytes: [UInt8]) -> [UInt8] {
        var value = Array(bytes.drop { $0 == 0 })
        if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return value
    }
}
