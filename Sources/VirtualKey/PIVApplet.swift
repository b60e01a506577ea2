import KeyKit

/// The PIV application (NIST SP 800-73-4 with the YubiKey's extensions), as a YubiKey 5 answers it: PIN and PUK
/// with their tries, management key authentication (3DES, AES), keys generated or imported in slots 9A, 9C, 9D,
/// 9E and 82-95 with PIN and touch policies, their private-key operations, data objects, attestation, metadata
/// (from firmware 5.3), and key moves and deletion (from 5.7).
///
/// The commands are split by job: PIN and PUK (PIVApplet+PIN), the management key (+Management), data objects
/// (+Objects), keys (+Keys), private-key operations (+Operations), metadata (+Metadata).
///
/// Status words follow the YubiKey's: 63Cx for a wrong PIN or PUK with x tries left, 6983 once blocked, 6982
/// when the PIN or the management key is needed, 6A80 for bad data (and a key that does not match the
/// request), 6A82 for an empty object, 6A86 for bad P1/P2, 6A88 for an empty slot, 6985 for RESET while the PIN
/// or PUK still has tries.
final class PIVApplet: SessionApplet {
    let aid = AID.piv
    let capabilities: Capabilities = .piv
    /// The button the slots' and the management key's touch policies wait for.
    let button: SimulatedButton

    struct Session: AppletSession {
        /// The PIN was verified in this session.
        var pinVerified = false
        /// A VERIFY succeeded since the last use of a key whose PIN policy is "always".
        var pinFreshlyVerified = false
        /// The management key was authenticated in this session.
        var authenticated = false
        /// Mutual authentication: the witness the card encrypted, waiting for the host to return it decrypted.
        var witness: [UInt8]?
        /// Single (external) authentication: the challenge the host must return encrypted.
        var challenge: [UInt8]?
        /// When a key with the "cached" touch policy was last touched (monotonic seconds).
        var lastTouch: Double?
    }

    var session = Session()

    /// The largest data object a YubiKey 5 stores.
    static let maxObjectSize = 3052

    init(touchDelay: Double = 0.5) {
        button = SimulatedButton(delay: touchDelay)
    }

    /// The application property template: the PIX of the AID and the coexistent tag allocation authority (the
    /// NIST RID), as a YubiKey gives them.
    func select(state: inout VirtualKeyState) -> Response {
        powerReset()
        let pix: [UInt8] = [0x00, 0x00, 0x10, 0x00, 0x01, 0x00]
        let authority = TLV(0x79, TLV(0x4F, AID.piv).encoded)
        let template = TLV(0x61, TLV(0x4F, pix).encoded + authority.encoded)
        return Response(data: template.encoded, status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        guard apdu.cla == 0 else { return Response(status: .classNotSupported) }
        switch apdu.ins {
        case PIV.Ins.getVersion: return Response(data: state.version.bytes, status: .ok)
        case PIV.Ins.getSerial: return serial(state)
        case PIV.Ins.verify: return verify(apdu, &state.piv)
        case PIV.Ins.changeReference: return changeReference(apdu, &state.piv, complexity: state.pinComplexity)
        case PIV.Ins.resetRetryCounter:
            return resetRetryCounter(apdu, &state.piv, complexity: state.pinComplexity)
        case PIV.Ins.setPINRetries: return setPINRetries(apdu, &state.piv)
        case PIV.Ins.reset: return reset(apdu, &state.piv)
        case PIV.Ins.authenticate: return authenticate(apdu, &state)
        case PIV.Ins.setManagementKey: return setManagementKey(apdu, &state)
        case PIV.Ins.getData: return getData(apdu, &state)
        case PIV.Ins.putData: return putData(apdu, &state.piv)
        case PIV.Ins.generateAsymmetric: return generate(apdu, &state)
        case PIV.Ins.importKey: return importKey(apdu, &state)
        case PIV.Ins.attest: return attest(apdu, &state)
        case PIV.Ins.moveKey: return moveKey(apdu, &state)
        case PIV.Ins.getMetadata: return metadata(apdu, &state)
        default: return Response(status: .invalidInstruction)
        }
    }

    private func serial(_ state: VirtualKeyState) -> Response {
        guard state.version >= Version(5, 0, 0) else { return Response(status: .invalidInstruction) }
        return Response(data: BigEndian.bytes(UInt64(state.serial), count: 4), status: .ok)
    }

    // MARK: Shared helpers

    static let badP1P2 = Response(status: StatusWord(rawValue: 0x6A86))
    static let noKey = Response(status: .referencedDataNotFound)

    /// Parses `data` as BER-TLVs; nil when malformed.
    static func tlvs(_ data: [UInt8]) -> [TLV]? {
        try? TLV.parseAll(data)
    }

    /// The slot a key reference names: 9A, 9C, 9D, 9E, 82-95, and the attestation slot F9 when `attestation`.
    static func slot(_ reference: UInt8, attestation: Bool = false) -> PIV.Slot? {
        let slot = PIV.Slot(rawValue: reference)
        if PIV.Slot.all.contains(slot) { return slot }
        return attestation && slot == .attestation ? slot : nil
    }

    /// The PIN policy a slot's key gets when the request leaves it to the default.
    static func defaultPINPolicy(_ slot: PIV.Slot) -> PIV.PINPolicy {
        switch slot {
        case .signature: return .always
        case .cardAuthentication, .attestation: return .never
        default: return .once
        }
    }

    /// The key type of a slot algorithm; nil for management key algorithms.
    static func keyType(_ algorithm: PIV.Algorithm) -> AsymmetricKeyType? {
        switch algorithm {
        case .rsa1024: return .rsa(bits: 1024)
        case .rsa2048: return .rsa(bits: 2048)
        case .rsa3072: return .rsa(bits: 3072)
        case .rsa4096: return .rsa(bits: 4096)
        case .eccP256: return .p256
        case .eccP384: return .p384
        case .ed25519: return .ed25519
        case .x25519: return .x25519
        case .tripleDES, .aes128, .aes192, .aes256: return nil
        }
    }

    /// Whether firmware `version` has keys of `algorithm` (RSA 3072/4096, Ed25519 and X25519 came with 5.7,
    /// P-384 with 4.0).
    static func supports(_ algorithm: PIV.Algorithm, on version: Version) -> Bool {
        switch algorithm {
        case .rsa3072, .rsa4096, .ed25519, .x25519: return version >= PIV.version57
        case .eccP384: return version >= Version(4, 0, 0)
        case .rsa1024, .rsa2048, .eccP256: return true
        case .tripleDES, .aes128, .aes192, .aes256: return false
        }
    }

    /// The public key as GENERATE ASYMMETRIC and GET METADATA give it: RSA modulus (81) and exponent (82), or
    /// the EC point or the Ed25519/X25519 key (86).
    static func publicKeyTLVs(_ key: AsymmetricPublicKey) -> [UInt8] {
        if let modulus = key.rsaModulus, let exponent = key.rsaExponent {
            return TLV(PIV.Tag.rsaModulus, modulus).encoded + TLV(PIV.Tag.rsaExponent, exponent).encoded
        }
        return TLV(PIV.Tag.ecPoint, key.ecPoint ?? key.raw ?? []).encoded
    }

    /// The PIN and touch policies of a request (tags AA and AB), the defaults resolved for `slot`; nil when a
    /// value is not one this firmware has.
    static func policies(
        _ tlvs: [TLV], slot: PIV.Slot,
        version: Version
    ) -> (PIV.PINPolicy, PIV.TouchPolicy)? {
        var pin = defaultPINPolicy(slot)
        var touch = PIV.TouchPolicy.never
        if let value = tlvs.value(for: PIV.Tag.pinPolicy) {
            // MATCH policies need a YubiKey Bio.
            guard value.count == 1, let p = PIV.PINPolicy(rawValue: value[0]), p.rawValue <= 3 else { return nil }
            if p != .default { pin = p }
        }
        if let value = tlvs.value(for: PIV.Tag.touchPolicy) {
            guard value.count == 1, let t = PIV.TouchPolicy(rawValue: value[0]),
                t != .cached || version >= Version(4, 3, 0)
            else { return nil }
            if t != .default { touch = t }
        }
        return (pin, touch)
    }
}
