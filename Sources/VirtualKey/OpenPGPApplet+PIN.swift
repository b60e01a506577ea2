import KeyKit

// The passwords: VERIFY, CHANGE REFERENCE DATA, RESET RETRY COUNTER, the YubiKey's SET PIN RETRIES, and the
// reset (TERMINATE, then ACTIVATE).
extension OpenPGPApplet {
    /// VERIFY: P2 81 (PW1 for signing), 82 (PW1 for the rest) or 83 (PW3). No data asks the status: 9000 when
    /// verified, else 63Cx with the tries left. P1 FF forgets a verification.
    func verify(_ apdu: APDU, _ s: inout OpenPGPState) -> Response {
        guard [0x81, 0x82, 0x83].contains(apdu.p2) else { return Self.badP1P2 }
        if apdu.p1 == 0xFF {
            guard apdu.data.isEmpty else { return Self.badData }
            switch apdu.p2 {
            case 0x81: session.userForSigning = false
            case 0x82: session.userForOther = false
            default: session.admin = false
            }
            return Self.done
        }
        guard apdu.p1 == 0 else { return Self.badP1P2 }
        let admin = apdu.p2 == 0x83
        if apdu.data.isEmpty {
            let verified =
                admin ? session.admin : apdu.p2 == 0x81 ? session.userForSigning : session.userForOther
            if verified { return Self.done }
            return Response(
                status: StatusWord(sw1: 0x63, sw2: 0xC0 | UInt8(min(15, admin ? s.adminTriesLeft : s.userTriesLeft))))
        }
        let ok =
            admin
            ? check(apdu.data, against: s.adminPIN, left: &s.adminTriesLeft, reset: s.adminTries)
            : check(apdu.data, against: s.userPIN, left: &s.userTriesLeft, reset: s.userTries)
        guard let ok else { return Response(status: .authMethodBlocked) }
        guard ok else {
            switch apdu.p2 {
            case 0x81: session.userForSigning = false
            case 0x82: session.userForOther = false
            default: session.admin = false
            }
            return Self.notAllowed
        }
        switch apdu.p2 {
        case 0x81: session.userForSigning = true
        case 0x82: session.userForOther = true
        default: session.admin = true
        }
        return Self.done
    }

    /// Compares `given` with `stored`: true (and the tries back to `reset`), false (one try used), or nil when
    /// no try is left.
    func check(_ given: [UInt8], against stored: [UInt8]?, left: inout Int, reset: Int) -> Bool? {
        guard left > 0, let stored else { return nil }
        if Crypto.constantTimeEqual(given, stored) {
            left = reset
            return true
        }
        left -= 1
        return false
    }

    /// CHANGE REFERENCE DATA: P2 81 (PW1) or 83 (PW3); data the old password then the new one (the card knows
    /// how long the old one is).
    func changeReference(_ apdu: APDU, _ s: inout OpenPGPState, complexity: Bool) -> Response {
        guard apdu.p1 == 0, apdu.p2 == 0x81 || apdu.p2 == 0x83 else { return Self.badP1P2 }
        let admin = apdu.p2 == 0x83
        let current = admin ? s.adminPIN : s.userPIN
        let minimum = admin ? OpenPGP.Password.admin.minimumLength : OpenPGP.Password.user.minimumLength
        guard (admin ? s.adminTriesLeft : s.userTriesLeft) > 0 else { return Response(status: .authMethodBlocked) }
        guard apdu.data.count >= current.count else { return Self.badData }
        let old = Array(apdu.data.prefix(current.count))
        let new = Array(apdu.data.dropFirst(current.count))
        let ok =
            admin
            ? check(old, against: current, left: &s.adminTriesLeft, reset: s.adminTries)
            : check(old, against: current, left: &s.userTriesLeft, reset: s.userTries)
        guard ok == true else { return ok == nil ? Response(status: .authMethodBlocked) : Self.notAllowed }
        guard (minimum...OpenPGP.maximumPINLength).contains(new.count) else { return Response(status: .wrongLength) }
        if complexity, !PINComplexity.allows(new) { return Response(status: .conditionsNotSatisfied) }
        if admin {
            s.adminPIN = new
            session.admin = false
        } else {
            s.userPIN = new
            session.userForSigning = false
            session.userForOther = false
        }
        return Self.done
    }

    /// RESET RETRY COUNTER of PW1: P1 00 with the reset code before the new PIN, or P1 02 after PW3.
    func resetRetryCounter(_ apdu: APDU, _ s: inout OpenPGPState, complexity: Bool) -> Response {
        guard apdu.p2 == 0x81, apdu.p1 == 0 || apdu.p1 == 2 else { return Self.badP1P2 }
        var new = apdu.data
        if apdu.p1 == 2 {
            guard session.admin else { return Self.notAllowed }
        } else {
            guard let code = s.resetCode, s.resetTriesLeft > 0 else { return Response(status: .authMethodBlocked) }
            guard apdu.data.count >= code.count else { return Self.badData }
            let given = Array(apdu.data.prefix(code.count))
            new = Array(apdu.data.dropFirst(code.count))
            guard check(given, against: code, left: &s.resetTriesLeft, reset: s.resetTries) == true else {
                return Self.notAllowed
            }
        }
        guard (OpenPGP.Password.user.minimumLength...OpenPGP.maximumPINLength).contains(new.count) else {
            return Response(status: .wrongLength)
        }
        if complexity, !PINComplexity.allows(new) { return Response(status: .conditionsNotSatisfied) }
        s.userPIN = new
        s.userTriesLeft = s.userTries
        return Self.done
    }

    /// PUT DATA of the KDF object, as a YubiKey takes it: the iterated and salted S2K (SHA-256 or SHA-512, with a
    /// count and a salt) or none. The PIN and the admin PIN become the defaults, derived as the object says (its
    /// initial hashes, else derived here), or as typed with none; the reset code is gone; the tries are full again.
    /// The card itself only ever compares what it is sent with what it stores.
    func setKDF(_ data: [UInt8], _ s: inout OpenPGPState) -> Response {
        guard let kdf = try? OpenPGPKDF(data) else { return Self.badData }
        if kdf.isEnabled {
            guard let user = kdf.initialUserHash ?? kdf.derived(OpenPGP.defaultUserPIN, for: .user),
                let admin = kdf.initialAdminHash ?? kdf.derived(OpenPGP.defaultAdminPIN, for: .admin)
            else {
                return Self.badData
            }
            s.objects[OpenPGP.DO.kdf] = data
            s.userPIN = user
            s.adminPIN = admin
        } else {
            s.objects[OpenPGP.DO.kdf] = nil
            s.userPIN = OpenPGP.defaultUserPIN
            s.adminPIN = OpenPGP.defaultAdminPIN
        }
        s.resetCode = nil
        s.resetTriesLeft = 0
        s.userTriesLeft = s.userTries
        s.adminTriesLeft = s.adminTries
        return Self.done
    }

    /// The YubiKey's SET PIN RETRIES: data the tries of PW1, the reset code and PW3 (1-255 each); needs PW3.
    /// The counters start again at the new numbers (a reset code that is not set keeps none).
    func setPINRetries(_ apdu: APDU, _ s: inout OpenPGPState) -> Response {
        guard session.admin else { return Self.notAllowed }
        guard apdu.data.count == 3, apdu.data.allSatisfy({ $0 > 0 }) else { return Self.badData }
        s.userTries = Int(apdu.data[0])
        s.resetTries = Int(apdu.data[1])
        s.adminTries = Int(apdu.data[2])
        s.userTriesLeft = s.userTries
        s.resetTriesLeft = s.resetCode == nil ? 0 : s.resetTries
        s.adminTriesLeft = s.adminTries
        return Self.done
    }

    /// TERMINATE: allowed once PW3 is blocked (or verified); then only ACTIVATE is answered.
    func terminate(_ s: inout OpenPGPState) -> Response {
        guard s.adminTriesLeft == 0 || session.admin else { return Response(status: .conditionsNotSatisfied) }
        s.terminated = true
        powerReset()
        return Self.done
    }

    /// ACTIVATE of a terminated application: everything back to the factory state, the attestation key kept.
    func activate(_ state: inout VirtualKeyState) -> Response {
        state.openpgp = state.openpgp.afterReset()
        powerReset()
        return Self.done
    }
}
