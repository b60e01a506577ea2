import KeyKit

/// The OpenPGP application (the OpenPGP smart card application 3.4), as a YubiKey 5.7 answers it: the user PIN
/// (123456), the admin PIN (12345678) and the reset code (none) with 3, 0 and 3 tries; the application related
/// data and the other data objects, the YubiKey's GET VERSION (F1), SET PIN RETRIES (F2) and touch policies
/// (UIF, D6-D9); keys generated in the signature, decryption and authentication slots (RSA 2048-4096, P-256,
/// P-384, Ed25519, X25519) or imported (the extended header list), and their signatures (PSO:COMPUTE DIGITAL SIGNATURE, INTERNAL AUTHENTICATE) and
/// decryption (PSO:DECIPHER); TERMINATE and ACTIVATE.
///
/// The commands are split by job: passwords and the reset (OpenPGPApplet+PIN), keys and their operations
/// (+Keys); data objects are here.
///
/// Status words follow the YubiKey's: 6982 for a wrong password (the tries then tell how many are left) and for
/// a command that needs one, 6983 once blocked, 6A80 for bad data, 6A88 for an object or key that is not there,
/// 6B00 for bad P1/P2, 6985 for TERMINATE while the admin PIN still has tries (and is not verified), and 6285 for
/// everything but ACTIVATE while terminated.
final class OpenPGPApplet: SessionApplet {
    let aid = AID.openpgp
    let capabilities: Capabilities = .openpgp
    /// The button the keys' touch policies (their UIF objects) wait for.
    let button: SimulatedButton

    struct Session: AppletSession {
        /// PW1 verified for signing (reference 81); consumed by a signature unless it stays valid for several.
        var userForSigning = false
        /// PW1 verified for the other operations (reference 82).
        var userForOther = false
        /// PW3 verified.
        var admin = false
        /// When a key with a cached touch policy was last touched (monotonic seconds).
        var lastTouch: Double?
        /// The slot SELECT DATA chose for the cardholder certificate (7F21).
        var certificateSlot = OpenPGP.KeySlot.authentication
    }

    var session = Session()

    /// The longest object a host may write (the extended capabilities tell it).
    static let maxObjectSize = 2048
    static let maxChallenge = 0x0BFE

    init(touchDelay: Double = 0.5) {
        button = SimulatedButton(delay: touchDelay)
    }

    func select(state: inout VirtualKeyState) -> Response {
        powerReset()
        if state.openpgp.terminated { return Response(status: .noInputData) }
        // A YubiKey with attestation (5.2) leaves the factory with its attestation key and certificate, so that
        // object FC can be read before the first attestation.
        if state.version >= OpenPGP.version52 { ensureAttestationKey(&state) }
        return Self.done
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        if apdu.cla == 0x80, apdu.ins == OpenPGP.Ins.getAttestation, !state.openpgp.terminated {
            return attest(apdu, &state)
        }
        guard apdu.cla & 0xEF == 0 else { return Response(status: .classNotSupported) }
        if state.openpgp.terminated {
            guard apdu.ins == OpenPGP.Ins.activate else { return Response(status: .noInputData) }
            return activate(&state)
        }
        switch apdu.ins {
        case OpenPGP.Ins.getVersion: return Response(data: state.version.bytes.map(Self.bcd), status: .ok)
        case OpenPGP.Ins.getData: return getData(apdu, state)
        case OpenPGP.Ins.putData:
            return putData(
                apdu, &state.openpgp, complexity: state.pinComplexity, kdf: Self.hasKDF(state.version))
        case OpenPGP.Ins.putDataOdd: return importKey(apdu, &state.openpgp)
        case OpenPGP.Ins.selectData: return selectData(apdu)
        case OpenPGP.Ins.verify: return verify(apdu, &state.openpgp)
        case OpenPGP.Ins.changeReference:
            return changeReference(apdu, &state.openpgp, complexity: state.pinComplexity)
        case OpenPGP.Ins.resetRetryCounter:
            return resetRetryCounter(apdu, &state.openpgp, complexity: state.pinComplexity)
        case OpenPGP.Ins.setPINRetries: return setPINRetries(apdu, &state.openpgp)
        case OpenPGP.Ins.terminate: return terminate(&state.openpgp)
        case OpenPGP.Ins.activate: return Self.done
        case OpenPGP.Ins.generateAsymmetric: return generate(apdu, &state.openpgp)
        case OpenPGP.Ins.performSecurityOperation: return securityOperation(apdu, &state.openpgp)
        case OpenPGP.Ins.internalAuthenticate: return internalAuthenticate(apdu, &state.openpgp)
        case OpenPGP.Ins.getChallenge:
            let n = apdu.le ?? 0
            guard (1...Self.maxChallenge).contains(n) else { return Response(status: .wrongLength) }
            return Response(data: Crypto.random(n), status: .ok)
        default: return Response(status: .invalidInstruction)
        }
    }

    // MARK: Shared helpers

    static let badP1P2 = Response(status: .wrongP1P2)
    static let notFound = Response(status: .referencedDataNotFound)

    static func bcd(_ n: UInt8) -> UInt8 { (n / 10) << 4 | (n % 10) }

    /// Waits for the simulated touch when the slot's policy asks for one.
    func checkTouch(_ policy: OpenPGP.TouchPolicy) {
        guard policy != .off else { return }
        button.touch(cached: policy.isCached, last: &session.lastTouch)
    }

    // MARK: Data objects

    /// The algorithm attributes each slot takes (DO FA lists them; PUT DATA of C1-C3 and DA checks them).
    static func supportedAttributes(_ slot: OpenPGP.KeySlot) -> [OpenPGPAlgorithmAttributes] {
        let rsa = [2048, 3072, 4096].map { OpenPGPAlgorithmAttributes.rsa(bits: $0) }
        let curves: [OpenPGP.Curve] = [
            .secp256r1, .secp384r1, .secp521r1, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1,
        ]
        switch slot {
        case .decryption:
            return rsa
                + (curves + [.x25519]).map {
                    .ecc(algorithm: OpenPGP.AlgorithmID.ecdh, curve: $0, withPublicKey: false)
                }
        case .signature, .authentication, .attestation:
            return rsa + curves.map { .ecc(algorithm: OpenPGP.AlgorithmID.ecdsa, curve: $0, withPublicKey: false) }
                + [.ecc(algorithm: OpenPGP.AlgorithmID.eddsa, curve: .ed25519, withPublicKey: false)]
        }
    }

    /// The discretionary data objects (73) of the application related data.
    static func discretionary(_ s: OpenPGPState, _ version: Version) -> [UInt8] {
        let slots = OpenPGP.KeySlot.allCases
        var out = TLV(OpenPGP.DO.extendedCapabilities, extendedCapabilities(version)).encoded
        for slot in slots { out += TLV(slot.algorithmAttributesTag, s.slot(slot).attributes).encoded }
        out += TLV(OpenPGP.DO.pwStatus, passwordStatus(s).encoded).encoded
        out += TLV(OpenPGP.DO.fingerprints, slots.flatMap { s.slot($0).fingerprint }).encoded
        out += TLV(OpenPGP.DO.caFingerprints, slots.flatMap { s.slot($0).caFingerprint }).encoded
        out += TLV(OpenPGP.DO.generationTimes, slots.flatMap { s.slot($0).generationTime }).encoded
        out += TLV(OpenPGP.DO.keyInformation, slots.flatMap { [$0.rawValue, s.slot($0).status.rawValue] }).encoded
        for slot in slots { out += TLV(slot.touchPolicyTag, uif(s.slot(slot).touchPolicy)).encoded }
        return out
    }

    /// A YubiKey 5's: KDF (from firmware 5.2, as the KDF object), algorithm attributes changeable, private use
    /// objects, PW status changeable, key import and GET CHALLENGE; challenges up to 3070 bytes, objects up to 2048
    /// bytes, special objects 255.
    static func extendedCapabilities(_ version: Version) -> [UInt8] {
        [hasKDF(version) ? 0x7D : 0x7C, 0x00, 0x0B, 0xFE, 0x08, 0x00, 0x00, 0xFF, 0x00, 0x00]
    }

    /// Whether the key has the KDF object (OpenPGP 3.4's, from firmware 5.2): an older key has no such object.
    static func hasKDF(_ version: Version) -> Bool { version >= OpenPGP.version52 }
    /// Card capabilities: command chaining, extended Lc and Le; then the life cycle and 9000.
    static let historicalBytes: [UInt8] = [0x00, 0x73, 0x00, 0x00, 0xE0, 0x05, 0x90, 0x00]
    static let extendedLength: [UInt8] =
        TLV(0x02, [0x0B, 0xFE]).encoded + TLV(0x02, [0x0B, 0xFE]).encoded
    /// General feature management: the button.
    static let generalFeatures: [UInt8] = TLV(0x81, [0x20]).encoded

    static func uif(_ policy: OpenPGP.TouchPolicy) -> [UInt8] { [policy.rawValue, 0x20] }

    static func passwordStatus(_ s: OpenPGPState) -> OpenPGPPasswordStatus {
        OpenPGPPasswordStatus(
            pinValidForSeveralSignatures: s.pinValidForSeveralSignatures,
            maxLengthUser: OpenPGP.maximumPINLength, maxLengthReset: OpenPGP.maximumPINLength,
            maxLengthAdmin: OpenPGP.maximumPINLength, triesUser: s.userTriesLeft,
            triesReset: s.resetCode == nil ? 0 : s.resetTriesLeft, triesAdmin: s.adminTriesLeft)
    }

    func getData(_ apdu: APDU, _ state: VirtualKeyState) -> Response {
        let s = state.openpgp
        let tag = UInt32(apdu.p1) << 8 | UInt32(apdu.p2)
        let aid = OpenPGPAID.make(serial: state.serial)
        let value: [UInt8]
        switch tag {
        case OpenPGP.DO.aid: value = aid
        case OpenPGP.DO.historicalBytes: value = Self.historicalBytes
        case OpenPGP.DO.extendedLengthInformation: value = Self.extendedLength
        case OpenPGP.DO.generalFeatureManagement: value = Self.generalFeatures
        case OpenPGP.DO.applicationRelatedData:
            let body =
                TLV(OpenPGP.DO.aid, aid).encoded + TLV(OpenPGP.DO.historicalBytes, Self.historicalBytes).encoded
                + TLV(OpenPGP.DO.extendedLengthInformation, Self.extendedLength).encoded
                + TLV(OpenPGP.DO.generalFeatureManagement, Self.generalFeatures).encoded
                + TLV(OpenPGP.DO.discretionaryData, Self.discretionary(s, state.version)).encoded
            return Response(data: TLV(OpenPGP.DO.applicationRelatedData, body).encoded, status: .ok)
        case OpenPGP.DO.cardholderRelatedData:
            let body =
                TLV(OpenPGP.DO.name, s.objects[OpenPGP.DO.name] ?? []).encoded
                + TLV(OpenPGP.DO.language, s.objects[OpenPGP.DO.language] ?? []).encoded
                + TLV(OpenPGP.DO.sex, s.objects[OpenPGP.DO.sex] ?? [0x39]).encoded
            return Response(data: TLV(OpenPGP.DO.cardholderRelatedData, body).encoded, status: .ok)
        case OpenPGP.DO.securitySupportTemplate:
            let n = min(s.signatureCounter, 0xFF_FFFF)
            let counter = [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
            let body = TLV(OpenPGP.DO.signatureCounter, counter).encoded
            return Response(data: TLV(OpenPGP.DO.securitySupportTemplate, body).encoded, status: .ok)
        case OpenPGP.DO.extendedCapabilities: value = Self.extendedCapabilities(state.version)
        case OpenPGP.DO.pwStatus: value = Self.passwordStatus(s).encoded
        case OpenPGP.DO.kdf where Self.hasKDF(state.version):
            value = s.objects[OpenPGP.DO.kdf] ?? OpenPGPKDF(algorithm: OpenPGPKDF.none).encoded
        case OpenPGP.DO.algorithmInformation:
            let body = OpenPGP.KeySlot.allCases.flatMap { slot in
                Self.supportedAttributes(slot).flatMap { TLV(slot.algorithmAttributesTag, $0.encoded).encoded }
            }
            return Response(data: TLV(OpenPGP.DO.algorithmInformation, body).encoded, status: .ok)
        case OpenPGP.DO.name, OpenPGP.DO.language, OpenPGP.DO.loginData, OpenPGP.DO.url:
            value = s.objects[tag] ?? []
        case OpenPGP.DO.sex: value = s.objects[tag] ?? [0x39]
        case OpenPGP.DO.privateUse1, OpenPGP.DO.privateUse2:
            value = s.objects[tag] ?? []
        case OpenPGP.DO.privateUse3:
            guard session.userForOther else { return Self.notAllowed }
            value = s.objects[tag] ?? []
        case OpenPGP.DO.privateUse4:
            guard session.admin else { return Self.notAllowed }
            value = s.objects[tag] ?? []
        case OpenPGP.DO.cardholderCertificate:
            value = s.objects[Self.certificateKey(session.certificateSlot)] ?? []
        case OpenPGP.DO.attestationCertificate where state.version >= OpenPGP.version52:
            value = s.objects[Self.certificateKey(.attestation)] ?? []
        default:
            if let slot = OpenPGP.KeySlot.allCases.first(where: { $0.touchPolicyTag == tag }) {
                value = Self.uif(s.slot(slot).touchPolicy)
            } else if let slot = OpenPGP.KeySlot.allCases.first(where: { $0.algorithmAttributesTag == tag }) {
                value = s.slot(slot).attributes
            } else {
                return Self.notFound
            }
        }
        return Response(data: value, status: .ok)
    }

    /// Where a slot's certificate is kept among the objects: 7F21 with the slot's reference in the high byte.
    static func certificateKey(_ slot: OpenPGP.KeySlot) -> UInt32 {
        UInt32(slot.rawValue) << 16 | OpenPGP.DO.cardholderCertificate
    }

    /// SELECT DATA of the cardholder certificate: P1 the occurrence, counted from the authentication key as the
    /// specification does (0 aut, 1 dec, 2 sig), P2 04; data 60 { 5C 7F21 }.
    func selectData(_ apdu: APDU) -> Response {
        guard apdu.p2 == 0x04, apdu.p1 <= 2 else { return Self.badP1P2 }
        session.certificateSlot = [OpenPGP.KeySlot.authentication, .decryption, .signature][Int(apdu.p1)]
        return Self.done
    }

    func putData(_ apdu: APDU, _ s: inout OpenPGPState, complexity: Bool, kdf: Bool) -> Response {
        let tag = UInt32(apdu.p1) << 8 | UInt32(apdu.p2)
        let data = apdu.data
        switch tag {
        case OpenPGP.DO.privateUse1, OpenPGP.DO.privateUse3:
            guard session.userForOther else { return Self.notAllowed }
            guard data.count <= 255 else { return Response(status: .wrongLength) }
            s.objects[tag] = data
            return Self.done
        default:
            break
        }
        guard session.admin else { return Self.notAllowed }
        switch tag {
        case OpenPGP.DO.name, OpenPGP.DO.language, OpenPGP.DO.sex, OpenPGP.DO.url, OpenPGP.DO.loginData,
            OpenPGP.DO.privateUse2, OpenPGP.DO.privateUse4:
            guard data.count <= (tag == OpenPGP.DO.url ? Self.maxObjectSize : 255) else {
                return Response(status: .wrongLength)
            }
            s.objects[tag] = data
        case OpenPGP.DO.cardholderCertificate:
            guard data.count <= Self.maxObjectSize else { return Response(status: .wrongLength) }
            s.objects[Self.certificateKey(session.certificateSlot)] = data
        case OpenPGP.DO.attestationCertificate:
            guard data.count <= Self.maxObjectSize else { return Response(status: .wrongLength) }
            s.objects[Self.certificateKey(.attestation)] = data
        case OpenPGP.DO.pwStatus:
            guard data.count == 1 || data.count == 4, data[0] <= 1 else { return Self.badData }
            s.pinValidForSeveralSignatures = data[0] == 1
        case OpenPGP.DO.resettingCode:
            if data.isEmpty {
                s.resetCode = nil
                s.resetTriesLeft = 0
            } else {
                guard (OpenPGP.Password.reset.minimumLength...OpenPGP.maximumPINLength).contains(data.count) else {
                    return Response(status: .wrongLength)
                }
                if complexity, !PINComplexity.allows(data) { return Response(status: .conditionsNotSatisfied) }
                s.resetCode = data
                s.resetTriesLeft = s.resetTries
            }
        case OpenPGP.DO.kdf where kdf:
            return setKDF(data, &s)
        default:
            return putSlotData(tag, data, &s)
        }
        return Self.done
    }

    /// PUT DATA of a slot's attributes, fingerprint, CA fingerprint, generation time or touch policy.
    private func putSlotData(_ tag: UInt32, _ data: [UInt8], _ s: inout OpenPGPState) -> Response {
        for slot in OpenPGP.KeySlot.allCases {
            var stored = s.slot(slot)
            switch tag {
            case slot.algorithmAttributesTag:
                guard let attributes = try? OpenPGPAlgorithmAttributes(data),
                    Self.supportedAttributes(slot).contains(where: { $0.sameKind(as: attributes) })
                else { return Self.badData }
                if stored.attributes != data {
                    // Other attributes: the key that was there goes.
                    stored = OpenPGPState.Slot(attributes: attributes)
                    stored.touchPolicy = s.slot(slot).touchPolicy.isFixed ? .off : s.slot(slot).touchPolicy
                }
            case slot.fingerprintTag:
                guard data.count == 20 else { return Response(status: .wrongLength) }
                stored.fingerprint = data
            case 0xCA + UInt32(slot.index) where slot != .attestation:
                guard data.count == 20 else { return Response(status: .wrongLength) }
                stored.caFingerprint = data
            case slot.generationTimeTag:
                guard data.count == 4 else { return Response(status: .wrongLength) }
                stored.generationTime = data
            case slot.touchPolicyTag:
                guard data.count == 2, let policy = OpenPGP.TouchPolicy(rawValue: data[0]) else { return Self.badData }
                guard !stored.touchPolicy.isFixed else { return Response(status: .conditionsNotSatisfied) }
                stored.touchPolicy = policy
            default:
                continue
            }
            s.slots[slot] = stored
            return Self.done
        }
        return Self.notFound
    }
}
