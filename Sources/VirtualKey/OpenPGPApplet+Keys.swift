import KeyKit

// Keys: GENERATE ASYMMETRIC KEY PAIR (a new key, or the public key of the one there), key import (PUT DATA with
// the extended header list), PSO:COMPUTE DIGITAL SIGNATURE, PSO:DECIPHER and INTERNAL AUTHENTICATE.
extension OpenPGPApplet {
    /// GENERATE ASYMMETRIC KEY PAIR: P1 80 makes a key of the slot's attributes (needs PW3), P1 81 reads the
    /// public key; data the slot's control reference template. The answer is 7F49 with the public key. A new
    /// signature key starts the signature counter again; its fingerprint and time are the host's to write.
    func generate(_ apdu: APDU, _ s: inout OpenPGPState) -> Response {
        guard apdu.p2 == 0, apdu.p1 == OpenPGP.generateKey || apdu.p1 == OpenPGP.readPublicKey else {
            return Self.badP1P2
        }
        guard let slot = OpenPGP.KeySlot(controlReference: apdu.data) else { return Self.badData }
        let stored = s.slot(slot)
        guard let attributes = try? OpenPGPAlgorithmAttributes(stored.attributes), let type = attributes.keyType else {
            return Self.badData
        }
        let key: AsymmetricPrivateKey
        if apdu.p1 == OpenPGP.generateKey {
            guard session.admin else { return Self.notAllowed }
            guard let made = try? AsymmetricPrivateKey.generate(type) else { return Response(status: .memoryFailure) }
            key = made
            Self.put(made, .generated, in: slot, &s)
        } else {
            guard let der = stored.privateKey, let existing = try? AsymmetricPrivateKey(pkcs8: der) else {
                return Self.notFound
            }
            key = existing
        }
        return Response(data: Self.publicKey(key.publicKey).encoded, status: .ok)
    }

    static func publicKey(_ key: AsymmetricPublicKey) -> OpenPGPPublicKey {
        if let n = key.rsaModulus, let e = key.rsaExponent { return .rsa(modulus: n, exponent: e) }
        let curve = OpenPGP.Curve(key.type) ?? .secp256r1
        return .ecc(curve: curve, point: key.ecPoint ?? key.raw ?? [])
    }

    /// PERFORM SECURITY OPERATION: COMPUTE DIGITAL SIGNATURE (9E 9A) or DECIPHER (80 86).
    func securityOperation(_ apdu: APDU, _ s: inout OpenPGPState) -> Response {
        switch UInt16(apdu.p1) << 8 | UInt16(apdu.p2) {
        case OpenPGP.computeSignature:
            guard session.userForSigning else { return Self.notAllowed }
            guard let (key, stored) = Self.key(.signature, s) else { return Self.notFound }
            checkTouch(stored.touchPolicy)
            guard let signature = Self.sign(apdu.data, key: key) else { return Self.badData }
            if !s.pinValidForSeveralSignatures { session.userForSigning = false }
            s.signatureCounter = min(s.signatureCounter + 1, 0xFF_FFFF)
            return Response(data: signature, status: .ok)
        case OpenPGP.decipher:
            guard session.userForOther else { return Self.notAllowed }
            guard let (key, stored) = Self.key(.decryption, s) else { return Self.notFound }
            checkTouch(stored.touchPolicy)
            guard let plain = Self.decipher(apdu.data, key: key) else { return Self.badData }
            return Response(data: plain, status: .ok)
        default:
            return Self.badP1P2
        }
    }

    /// INTERNAL AUTHENTICATE with the authentication key: signs what it is given as the key signs.
    func internalAuthenticate(_ apdu: APDU, _ s: inout OpenPGPState) -> Response {
        guard apdu.p1 == 0, apdu.p2 == 0 else { return Self.badP1P2 }
        guard session.userForOther else { return Self.notAllowed }
        guard let (key, stored) = Self.key(.authentication, s) else { return Self.notFound }
        checkTouch(stored.touchPolicy)
        guard let signature = Self.sign(apdu.data, key: key) else { return Self.badData }
        return Response(data: signature, status: .ok)
    }

    private static func key(
        _ slot: OpenPGP.KeySlot, _ s: OpenPGPState
    ) -> (AsymmetricPrivateKey, OpenPGPState.Slot)? {
        let stored = s.slot(slot)
        guard let der = stored.privateKey, let key = try? AsymmetricPrivateKey(pkcs8: der) else { return nil }
        return (key, stored)
    }

    /// RSA: PKCS #1 v1.5 signature padding around the DigestInfo given; ECDSA: the digest given, the signature
    /// as r and s of the curve's length; EdDSA: the message given.
    static func sign(_ data: [UInt8], key: AsymmetricPrivateKey) -> [UInt8]? {
        switch key.type {
        case .rsa:
            let length = key.type.length
            guard !data.isEmpty, data.count <= length * 4 / 10 else { return nil }
            let block =
                [0x00, 0x01] + [UInt8](repeating: 0xFF, count: length - data.count - 3) + [0x00] + data
            return try? key.rsaPrivateOperation(block)
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            guard !data.isEmpty, let der = try? key.ecdsaSign(digest: data) else { return nil }
            return rawECDSA(der, length: key.type.length)
        case .ed25519:
            return try? key.ed25519Sign(data)
        case .x25519:
            return nil
        }
    }

    /// An ECDSA signature from DER (SEQUENCE { INTEGER r, INTEGER s }) to r and s of `length` bytes each.
    static func rawECDSA(_ der: [UInt8], length: Int) -> [UInt8]? {
        guard let outer = try? TLV.parseAll(der), outer.count == 1, outer[0].tag == 0x30,
            let ints = try? outer[0].children(), ints.count == 2, ints.allSatisfy({ $0.tag == 0x02 })
        else { return nil }
        var out = [UInt8]()
        for int in ints {
            let value = Array(int.value.drop { $0 == 0 })
            guard value.count <= length else { return nil }
            out += [UInt8](repeating: 0, count: length - value.count) + value
        }
        return out
    }

    /// RSA: a padding indicator byte (00) then the cryptogram, answered without its PKCS #1 v1.5 padding;
    /// ECDH and X25519: A6 { 7F49 { 86 the peer's point } }, answered with the shared secret.
    static func decipher(_ data: [UInt8], key: AsymmetricPrivateKey) -> [UInt8]? {
        switch key.type {
        case .rsa:
            guard data.first == 0x00, data.count == key.type.length + 1,
                let block = try? key.rsaPrivateOperation(Array(data.dropFirst())),
                block.count > 11, block[0] == 0x00, block[1] == 0x02,
                let end = block[2...].firstIndex(of: 0x00), end >= 10
            else { return nil }
            return Array(block[(end + 1)...])
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1, .x25519:
            guard let outer = try? TLV.parseAll(data), outer.count == 1, outer[0].tag == OpenPGP.DO.cipherTemplate,
                let template = try? outer[0].children(),
                let publicKey = template.first(where: { $0.tag == OpenPGP.DO.publicKey }),
                let parts = try? publicKey.children(), var point = parts.value(for: OpenPGP.DO.ecPoint)
            else { return nil }
            // GnuPG may send a Curve25519 point with its 0x40 prefix.
            if key.type == .x25519, point.count == 33, point.first == 0x40 { point.removeFirst() }
            return try? key.sharedSecret(peer: point)
        case .ed25519:
            return nil
        }
    }

    /// Key import: PUT DATA (odd instruction DB, P1 P2 3FFF) of the extended header list 4D { the slot's control
    /// reference template, 7F48 the tags and lengths of the parts, 5F48 the parts one after another }. The parts
    /// are the slot's attributes' kind: RSA e (91), p (92), q (93) (and the CRT values 94-96 and n 97, which are
    /// made again from p and q); ECC the private key (92) and perhaps the public key (99); X25519's private key
    /// in reversed byte order. Needs PW3.
    func importKey(_ apdu: APDU, _ s: inout OpenPGPState) -> Response {
        guard apdu.p1 == 0x3F, apdu.p2 == 0xFF else { return Self.badP1P2 }
        guard session.admin else { return Self.notAllowed }
        guard let outer = try? TLV.parseAll(apdu.data), outer.count == 1, outer[0].tag == 0x4D,
            let parts = try? outer[0].children(), parts.count == 3,
            let slot = OpenPGP.KeySlot(controlReference: parts[0].encoded),
            parts[1].tag == 0x7F48, parts[2].tag == 0x5F48,
            let values = Self.importedParts(headers: parts[1].value, data: parts[2].value)
        else { return Self.badData }
        guard let attributes = try? OpenPGPAlgorithmAttributes(s.slot(slot).attributes), let type = attributes.keyType,
            let key = Self.importedKey(type, values)
        else { return Self.badData }
        Self.put(key, .imported, in: slot, &s)
        return Self.done
    }

    /// A new key, generated or imported, in `slot`: its fingerprint and generation time are the host's to write
    /// (zero until then), a fixed touch policy gives way to its unfixed form, and a new signature key starts the
    /// signature counter again.
    static func put(
        _ key: AsymmetricPrivateKey, _ origin: OpenPGP.KeyStatus, in slot: OpenPGP.KeySlot, _ s: inout OpenPGPState
    ) {
        var stored = s.slot(slot)
        stored.privateKey = key.pkcs8
        stored.status = origin
        stored.fingerprint = [UInt8](repeating: 0, count: 20)
        stored.generationTime = [UInt8](repeating: 0, count: 4)
        if stored.touchPolicy.isFixed { stored.touchPolicy = stored.touchPolicy == .fixed ? .on : .cached }
        s.slots[slot] = stored
        if slot == .signature { s.signatureCounter = 0 }
    }

    /// The parts of a key as 7F48 announces them: tag → value; nil when the lengths do not add up.
    static func importedParts(headers: [UInt8], data: [UInt8]) -> [UInt32: [UInt8]]? {
        var out = [UInt32: [UInt8]]()
        var i = 0
        var offset = 0
        while i < headers.count {
            let length: Int
            let tag = UInt32(headers[i])
            i += 1
            guard i < headers.count else { return nil }
            switch headers[i] {
            case 0x81:
                guard i + 1 < headers.count else { return nil }
                length = Int(headers[i + 1])
                i += 2
            case 0x82:
                guard i + 2 < headers.count else { return nil }
                length = Int(headers[i + 1]) << 8 | Int(headers[i + 2])
                i += 3
            case let b where b < 0x80:
                length = Int(b)
                i += 1
            default:
                return nil
            }
            guard offset + length <= data.count else { return nil }
            out[tag] = Array(data[offset..<(offset + length)])
            offset += length
        }
        return offset == data.count ? out : nil
    }

    private static func importedKey(_ type: AsymmetricKeyType, _ parts: [UInt32: [UInt8]]) -> AsymmetricPrivateKey? {
        switch type {
        case .rsa:
            guard let e = parts[0x91], let p = parts[0x92], let q = parts[0x93],
                let key = try? AsymmetricPrivateKey.rsa(p: p, q: q, exponent: e), key.type == type
            else { return nil }
            return key
        case .p256, .p384, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            guard var scalar = parts[0x92] else { return nil }
            while scalar.count > type.length, scalar.first == 0 { scalar.removeFirst() }
            if scalar.count < type.length { scalar = [UInt8](repeating: 0, count: type.length - scalar.count) + scalar }
            return try? AsymmetricPrivateKey.ec(type, scalar: scalar)
        case .ed25519:
            guard let raw = parts[0x92] else { return nil }
            return try? AsymmetricPrivateKey.raw(raw, type: .ed25519)
        case .x25519:
            guard let raw = parts[0x92] else { return nil }
            return try? AsymmetricPrivateKey.raw(raw.reversed(), type: .x25519)
        }
    }
}
