import KeyKit

// The management key: GENERAL AUTHENTICATE with key reference 9B (mutual or single, SP 800-73-4 part 2
// appendix A) and SET MANAGEMENT KEY.
extension PIVApplet {
    /// GENERAL AUTHENTICATE: the management key (P2 9B) or a slot's private key (the rest, in +Operations).
    func authenticate(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard let outer = Self.tlvs(apdu.data), outer.count == 1, outer[0].tag == PIV.Tag.dynamicAuthentication,
            let parts = try? outer[0].children()
        else {
            return Self.badData
        }
        guard apdu.p2 == PIV.Reference.managementKey else { return privateKeyOperation(apdu, parts, &state) }
        return authenticateManagementKey(apdu, parts, state)
    }

    /// Mutual authentication is two commands: an empty witness (80) asks for the witness, which the card
    /// encrypts; the host sends it back decrypted with its own challenge (81), and the card answers the
    /// challenge encrypted (82). Single authentication: an empty challenge (81) asks for one, and the host sends
    /// it back encrypted (82).
    private func authenticateManagementKey(_ apdu: APDU, _ parts: [TLV], _ state: VirtualKeyState) -> Response {
        let algorithm = state.piv.managementAlgorithm(on: state.version)
        guard apdu.p1 == algorithm.rawValue, let blockSize = algorithm.blockSize else { return Self.badData }
        let key = SecretBytes(state.piv.managementKeyBytes)
        let witness = parts.value(for: PIV.Tag.witness)
        let challenge = parts.value(for: PIV.Tag.challenge)
        let response = parts.value(for: PIV.Tag.response)
        func encrypt(_ block: [UInt8]) -> [UInt8]? { try? BlockCipher.encrypt(algorithm, key: key, block: block) }
        func answer(_ tag: UInt32, _ value: [UInt8]) -> Response {
            Response(data: TLV(PIV.Tag.dynamicAuthentication, TLV(tag, value).encoded).encoded, status: .ok)
        }
        // Whatever happens next, a pending exchange is used up.
        let pendingWitness = session.witness
        let pendingChallenge = session.challenge
        session.witness = nil
        session.challenge = nil

        switch (witness, challenge, response) {
        case (let w?, nil, nil) where w.isEmpty:
            if state.piv.managementTouch { button.touch() }
            let fresh = Crypto.random(blockSize)
            guard let encrypted = encrypt(fresh) else { return Self.badData }
            session.authenticated = false
            session.witness = fresh
            return answer(PIV.Tag.witness, encrypted)
        case (let w?, let c?, _) where !w.isEmpty:
            guard let pendingWitness, Crypto.constantTimeEqual(w, pendingWitness) else {
                session.authenticated = false
                return Self.notAllowed
            }
            guard c.count == blockSize, let encrypted = encrypt(c) else { return Self.badData }
            session.authenticated = true
            return answer(PIV.Tag.response, encrypted)
        case (nil, let c?, nil) where c.isEmpty:
            if state.piv.managementTouch { button.touch() }
            let fresh = Crypto.random(blockSize)
            session.authenticated = false
            session.challenge = fresh
            return answer(PIV.Tag.challenge, fresh)
        case (nil, nil, let r?) where !r.isEmpty:
            guard let pendingChallenge, let expected = encrypt(pendingChallenge),
                Crypto.constantTimeEqual(r, expected)
            else {
                session.authenticated = false
                return Self.notAllowed
            }
            session.authenticated = true
            return Self.done
        default:
            return Self.badData
        }
    }

    /// SET MANAGEMENT KEY: P1 FF, P2 FF (no touch) or FE (touch); data: the algorithm, then the key under tag 9B.
    /// Needs the management key; AES keys from firmware 5.4.
    func setManagementKey(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard apdu.p1 == 0xFF, apdu.p2 == 0xFF || apdu.p2 == 0xFE else { return Self.badP1P2 }
        guard session.authenticated else { return Self.notAllowed }
        guard apdu.data.count > 1, let algorithm = PIV.Algorithm(rawValue: apdu.data[0]), algorithm.isManagementKey,
            algorithm == .tripleDES || state.version >= Version(5, 4, 0),
            let parsed = Self.tlvs(Array(apdu.data.dropFirst())), parsed.count == 1,
            parsed[0].tag == UInt32(PIV.Reference.managementKey),
            parsed[0].value.count == algorithm.keyLength
        else {
            return Self.badData
        }
        state.piv.managementKey = parsed[0].value == PIV.defaultManagementKey ? nil : parsed[0].value
        state.piv.managementAlgorithm = algorithm
        state.piv.managementTouch = apdu.p2 == 0xFE
        return Self.done
    }
}
