import KeyKit

// PIN and PUK: VERIFY, CHANGE REFERENCE, RESET RETRY COUNTER, SET PIN RETRIES and RESET.
extension PIVApplet {
    /// The answer to a wrong PIN or PUK: 63Cx with the tries left (at most 15 show).
    static func wrong(triesLeft: Int) -> Response {
        Response(status: StatusWord(sw1: 0x63, sw2: 0xC0 | UInt8(min(max(triesLeft, 0), 15))))
    }

    static let blocked = Response(status: .authMethodBlocked)

    /// Whether `value` is a PIN or PUK as PIV pads it: 6 to 8 bytes, then FF up to 8.
    static func isWellFormed(_ value: [UInt8]) -> Bool {
        guard value.count == PIV.pinLength else { return false }
        let length = value.firstIndex(of: PIV.pinPadding) ?? value.count
        return length >= 6 && value[length...].allSatisfy { $0 == PIV.pinPadding }
    }

    func verify(_ apdu: APDU, _ piv: inout PIVState) -> Response {
        // Only the PIN (80) is verified this way; 96 (on-card biometrics) is a YubiKey Bio's.
        guard apdu.p2 == PIV.Reference.pin else {
            return apdu.p2 == PIV.Reference.biometrics || apdu.p2 == PIV.Reference.puk ? Self.noKey : Self.badP1P2
        }
        switch apdu.p1 {
        case 0xFF:
            // SP 800-73-4: P1 FF without data resets the PIN's security status.
            guard apdu.data.isEmpty else { return Self.badData }
            session.pinVerified = false
            session.pinFreshlyVerified = false
            return Self.done
        case 0x00:
            break
        default:
            return Self.badP1P2
        }
        if apdu.data.isEmpty {
            // The status alone: verified, or the tries left.
            if piv.pinTriesLeft == 0 { return Self.blocked }
            return session.pinVerified ? Self.done : Self.wrong(triesLeft: piv.pinTriesLeft)
        }
        guard apdu.data.count == PIV.pinLength else { return Self.badData }
        guard piv.pinTriesLeft > 0 else { return Self.blocked }
        guard Crypto.constantTimeEqual(apdu.data, piv.pin) else {
            piv.pinTriesLeft -= 1
            session.pinVerified = false
            session.pinFreshlyVerified = false
            return Self.wrong(triesLeft: piv.pinTriesLeft)
        }
        piv.pinTriesLeft = piv.pinTries
        session.pinVerified = true
        session.pinFreshlyVerified = true
        return Self.done
    }

    /// A new PIN or PUK a key that enforces PIN complexity refuses (6985, after the current one was checked).
    static func tooSimple(_ new: [UInt8], complexity: Bool) -> Bool {
        complexity && !PINComplexity.allowsPadded(new, padding: PIV.pinPadding)
    }

    /// CHANGE REFERENCE: current and new PIN (P2 80) or PUK (P2 81), eight padded bytes each.
    func changeReference(_ apdu: APDU, _ piv: inout PIVState, complexity: Bool) -> Response {
        guard apdu.p1 == 0 else { return Self.badP1P2 }
        guard apdu.p2 == PIV.Reference.pin || apdu.p2 == PIV.Reference.puk else { return Self.noKey }
        guard apdu.data.count == 2 * PIV.pinLength else { return Self.badData }
        let current = Array(apdu.data[..<PIV.pinLength])
        let new = Array(apdu.data[PIV.pinLength...])
        let isPIN = apdu.p2 == PIV.Reference.pin
        let left = isPIN ? piv.pinTriesLeft : piv.pukTriesLeft
        guard left > 0 else { return Self.blocked }
        guard Crypto.constantTimeEqual(current, isPIN ? piv.pin : piv.puk) else {
            if isPIN {
                piv.pinTriesLeft -= 1
                session.pinVerified = false
                session.pinFreshlyVerified = false
            } else {
                piv.pukTriesLeft -= 1
            }
            return Self.wrong(triesLeft: left - 1)
        }
        guard Self.isWellFormed(new) else { return Self.badData }
        if Self.tooSimple(new, complexity: complexity) { return Response(status: .conditionsNotSatisfied) }
        if isPIN {
            piv.pin = new
            piv.pinTriesLeft = piv.pinTries
        } else {
            piv.puk = new
            piv.pukTriesLeft = piv.pukTries
        }
        return Self.done
    }

    /// RESET RETRY COUNTER: the PUK and a new PIN; the PIN gets all its tries back.
    func resetRetryCounter(_ apdu: APDU, _ piv: inout PIVState, complexity: Bool) -> Response {
        guard apdu.p1 == 0 else { return Self.badP1P2 }
        guard apdu.p2 == PIV.Reference.pin else { return Self.noKey }
        guard apdu.data.count == 2 * PIV.pinLength else { return Self.badData }
        let puk = Array(apdu.data[..<PIV.pinLength])
        let new = Array(apdu.data[PIV.pinLength...])
        guard piv.pukTriesLeft > 0 else { return Self.blocked }
        guard Crypto.constantTimeEqual(puk, piv.puk) else {
            piv.pukTriesLeft -= 1
            return Self.wrong(triesLeft: piv.pukTriesLeft)
        }
        guard Self.isWellFormed(new) else { return Self.badData }
        if Self.tooSimple(new, complexity: complexity) { return Response(status: .conditionsNotSatisfied) }
        piv.pukTriesLeft = piv.pukTries
        piv.pin = new
        piv.pinTriesLeft = piv.pinTries
        return Self.done
    }

    /// SET PIN RETRIES (P1 PIN tries, P2 PUK tries): needs the management key and the PIN, and puts the default
    /// PIN and PUK back.
    func setPINRetries(_ apdu: APDU, _ piv: inout PIVState) -> Response {
        guard session.authenticated, session.pinVerified else { return Self.notAllowed }
        // A PUK with no tries is a PUK blocked from the start.
        guard apdu.p1 > 0 else { return Self.badP1P2 }
        piv.pinTries = Int(apdu.p1)
        piv.pukTries = Int(apdu.p2)
        piv.pinTriesLeft = piv.pinTries
        piv.pukTriesLeft = piv.pukTries
        piv.pin = PIVState.padded(PIV.defaultPIN)
        piv.puk = PIVState.padded(PIV.defaultPUK)
        session.pinVerified = false
        session.pinFreshlyVerified = false
        return Self.done
    }

    /// RESET: only once both the PIN and the PUK are blocked. Keys, objects, PIN, PUK, tries and the
    /// management key go back to a new key's; the attestation key and certificate stay.
    func reset(_ apdu: APDU, _ piv: inout PIVState) -> Response {
        guard apdu.p1 == 0, apdu.p2 == 0 else { return Self.badP1P2 }
        guard piv.pinTriesLeft == 0, piv.pukTriesLeft == 0 else {
            return Response(status: .conditionsNotSatisfied)
        }
        piv = piv.afterReset()
        session = Session()
        return Self.done
    }
}
