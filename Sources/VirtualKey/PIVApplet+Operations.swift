import KeyKit

// Private-key operations: GENERAL AUTHENTICATE with a slot's key. The template carries an empty response (82)
// and either a challenge (81: a block to sign or decrypt) or an exponentiation (85: a peer's public key).
extension PIVApplet {
    /// P1 the algorithm (it must be the key's), P2 the slot. The PIN policy and the touch policy are enforced
    /// first; then RSA does its raw private operation on a modulus-length block, ECDSA signs the digest given
    /// (at most the curve's length), Ed25519 signs the message, and ECDH or X25519 answer the shared secret.
    func privateKeyOperation(_ apdu: APDU, _ parts: [TLV], _ state: inout VirtualKeyState) -> Response {
        guard let slot = Self.slot(apdu.p2, attestation: true) else { return Self.badP1P2 }
        guard let stored = state.piv.keys[slot], stored.algorithm.rawValue == apdu.p1,
            let type = Self.keyType(stored.algorithm),
            parts.value(for: PIV.Tag.response)?.isEmpty == true
        else {
            return Self.badData
        }
        let challenge = parts.value(for: PIV.Tag.challenge)
        let peer = parts.value(for: PIV.Tag.exponentiation)
        guard (challenge == nil) != (peer == nil) else { return Self.badData }
        if let refusal = checkPIN(stored.pinPolicy) { return refusal }
        checkTouch(stored.touchPolicy)
        guard let key = try? AsymmetricPrivateKey(pkcs8: stored.privateKey) else {
            return Response(status: .memoryFailure)
        }
        let result: [UInt8]?
        switch (type, challenge, peer) {
        case (.rsa, let block?, nil):
            result = try? key.rsaPrivateOperation(block)
        case (.p256, let digest?, nil), (.p384, let digest?, nil):
            result = digest.count <= type.length ? try? key.ecdsaSign(digest: digest) : nil
        case (.ed25519, let message?, nil):
            result = try? key.ed25519Sign(message)
        case (.p256, nil, let point?), (.p384, nil, let point?), (.x25519, nil, let point?):
            result = try? key.sharedSecret(peer: point)
        default:
            result = nil
        }
        guard let result else { return Self.badData }
        let body = TLV(PIV.Tag.dynamicAuthentication, TLV(PIV.Tag.response, result).encoded)
        return Response(data: body.encoded, status: .ok)
    }

    /// nil when the PIN policy is met: "never"; "once" after a VERIFY in this session; "always" after a VERIFY
    /// since the last use of such a key (the use consumes it).
    private func checkPIN(_ policy: PIV.PINPolicy) -> Response? {
        switch policy {
        case .never:
            return nil
        case .always, .matchAlways:
            guard session.pinVerified, session.pinFreshlyVerified else { return Self.notAllowed }
            session.pinFreshlyVerified = false
            return nil
        case .default, .once, .matchOnce:
            return session.pinVerified ? nil : Self.notAllowed
        }
    }

    /// Waits for the simulated touch when the policy asks for one: every time ("always"), or when the last touch
    /// is more than 15 seconds old ("cached").
    private func checkTouch(_ policy: PIV.TouchPolicy) {
        switch policy {
        case .always: button.touch(cached: false, last: &session.lastTouch)
        case .cached: button.touch(cached: true, last: &session.lastTouch)
        case .default, .never:
            return
        }
    }
}
