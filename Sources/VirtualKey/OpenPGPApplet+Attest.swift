import KeyKit

// The YubiKey's OpenPGP attestation (firmware 5.2): GET ATTESTATION certifies a slot's key with the attestation
// key (the ATT slot's), and the attestation certificate (object FC) names that key.

extension OpenPGPApplet {
    /// GET ATTESTATION (class 80, INS FB): P1 the slot's reference, P2 0; needs PW1. The certificate, issued in the
    /// name of the attestation certificate with Yubico's OpenPGP extensions (cardholder, key source, firmware,
    /// fingerprint, generation time, signature counter, serial, touch policy, form factor), becomes the slot's
    /// certificate (7F21); nothing is answered.
    func attest(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard state.version >= OpenPGP.version52 else { return Response(status: .invalidInstruction) }
        guard apdu.p2 == 0, let slot = OpenPGP.KeySlot(rawValue: apdu.p1) else { return Self.badP1P2 }
        guard session.userForSigning || session.userForOther else { return Self.notAllowed }
        ensureAttestationKey(&state)
        let s = state.openpgp
        let stored = s.slot(slot)
        guard let der = stored.privateKey, let key = try? AsymmetricPrivateKey(pkcs8: der) else {
            return Self.notFound
        }
        let attestation = s.slot(.attestation)
        guard let signerDER = attestation.privateKey, let signer = try? AsymmetricPrivateKey(pkcs8: signerDER),
            let issuerDER = s.objects[Self.certificateKey(.attestation)],
            let issuer = try? X509Certificate(der: issuerDER)
        else { return Response(status: .memoryFailure) }
        let oid = "1.3.6.1.4.1.41482.5."
        let serial = TLV(0x02, PIVApplet.positiveInteger(BigEndian.bytes(UInt64(state.serial), count: 4))).encoded
        var extensions = [
            CertificateIssuer.Extension(oid: oid + "1", value: s.objects[OpenPGP.DO.name] ?? []),
            CertificateIssuer.Extension(oid: oid + "2", value: [stored.status.rawValue]),
            CertificateIssuer.Extension(oid: oid + "3", value: state.version.bytes),
            CertificateIssuer.Extension(oid: oid + "4", value: stored.fingerprint),
            CertificateIssuer.Extension(oid: oid + "5", value: stored.generationTime),
        ]
        if slot == .signature {
            let n = min(s.signatureCounter, 0xFF_FFFF)
            extensions.append(
                .init(oid: oid + "6", value: [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]))
        }
        extensions += [
            CertificateIssuer.Extension(oid: oid + "7", value: serial),
            CertificateIssuer.Extension(oid: oid + "8", value: Self.uif(stored.touchPolicy)),
            CertificateIssuer.Extension(oid: oid + "9", value: [state.formFactor]),
        ]
        let name = "YubiKey OpenPGP Attestation " + slot.name.uppercased()
        guard
            let certificate = try? CertificateIssuer.issue(
                subject: [.init("CN", name)], publicKey: key.publicKey,
                serial: PIVApplet.positiveInteger(Crypto.random(16)), validity: .sameAsIssuer, signingKey: signer,
                issuer: issuer, extensions: extensions)
        else { return Response(status: .memoryFailure) }
        state.openpgp.objects[Self.certificateKey(slot)] = certificate.der
        return Self.done
    }

    /// Makes the attestation key (P-256, ECDSA) and its self-signed certificate when the ATT slot has no key: a
    /// YubiKey leaves the factory with them.
    func ensureAttestationKey(_ state: inout VirtualKeyState) {
        guard state.openpgp.slot(.attestation).privateKey == nil else { return }
        guard let key = try? AsymmetricPrivateKey.generate(.p256),
            let certificate = try? CertificateIssuer.issue(
                subject: [.init("O", "ykterm"), .init("CN", "Virtual YubiKey OpenPGP Attestation")],
                publicKey: key.publicKey, serial: PIVApplet.positiveInteger(Crypto.random(16)),
                validity: .days(20 * 366), signingKey: key, extensions: [.basicConstraints(ca: true)])
        else { return }
        var slot = OpenPGPState.Slot(attributes: .ecc(.secp256r1, slot: .attestation))
        slot.privateKey = key.pkcs8
        slot.status = .imported
        slot.touchPolicy = state.openpgp.slot(.attestation).touchPolicy
        state.openpgp.slots[.attestation] = slot
        state.openpgp.objects[Self.certificateKey(.attestation)] = certificate.der
    }
}
