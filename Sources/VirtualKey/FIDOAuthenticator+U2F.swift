import FoundationEssentials
import Glibc
import KeyKit

/// U2F (CTAP1) registration and authentication.
extension FIDOAuthenticator {
    // MARK: U2F

    /// Handles one U2F (CTAP1) command APDU.
    public func processU2F(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        guard apdu.cla == 0 else { return Response(status: .classNotSupported) }
        switch apdu.ins {
        case U2F.Instruction.version:
            guard apdu.data.isEmpty else { return Response(status: .wrongLength) }
            return Response(data: Array(U2F.version.utf8), status: .ok)
        case U2F.Instruction.register where state.fido.alwaysUV, U2F.Instruction.authenticate where state.fido.alwaysUV:
            // U2F cannot verify the user: alwaysUv turns it off (CTAP 2.1 section 6.11.2).
            return Response(status: .invalidInstruction)
        case U2F.Instruction.register:
            return u2fRegister(apdu, &state)
        case U2F.Instruction.authenticate:
            return u2fAuthenticate(apdu, &state)
        default:
            return Response(status: .invalidInstruction)
        }
    }

    /// U2F user presence: with a touch delay the first request starts the "touch" and is answered 6985
    /// (test of user presence required), as a key that waits to be touched answers; clients repeat the
    /// request until the delay has passed.
    func u2fPresence() -> Bool {
        guard userPresenceDelay > 0 else { return true }
        let now = Self.uptime()
        guard let started = u2fPresenceRequestedAt else {
            u2fPresenceRequestedAt = now
            return false
        }
        guard now - started >= userPresenceDelay else { return false }
        u2fPresenceRequestedAt = nil
        return true
    }

    func u2fRegister(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard apdu.data.count == 64 else { return Response(status: .wrongLength) }
        let challenge = Array(apdu.data[0..<32])
        let application = Array(apdu.data[32..<64])
        guard u2fPresence() else { return Response(status: .conditionsNotSatisfied) }
        ensureWrappingKeys(&state)
        guard let (attestationKey, certificate) = u2fAttestation(&state) else {
            return Response(status: .commandAborted)
        }
        let key = P256PrivateKey()
        guard
            let handle = wrap(
                key.raw, algorithm: COSE.Algorithm.es256, rpIDHash: application, credProtect: 1, hmacSecret: false,
                state.fido)
        else { return Response(status: .commandAborted) }
        let publicKey = key.publicKey.uncompressed
        let signature = attestationKey.sign(
            [U2F.registrationSignedReserved] + application + challenge + handle
                + publicKey)
        guard !signature.isEmpty else { return Response(status: .commandAborted) }
        let body = [U2F.registrationReserved] + publicKey + [UInt8(handle.count)] + handle + certificate + signature
        return Response(data: body, status: .ok)
    }

    /// The U2F attestation key and certificate, made on first use.
    func u2fAttestation(_ state: inout VirtualKeyState) -> (P256PrivateKey, [UInt8])? {
        if state.fido.attestationKey.count == 32, !state.fido.attestationCertificate.isEmpty,
            let key = try? P256PrivateKey(raw: state.fido.attestationKey)
        {
            return (key, state.fido.attestationCertificate)
        }
        let key = P256PrivateKey()
        let serial = BigEndian.integer(Crypto.random(8)) >> 1
        guard
            let certificate = try? X509Certificate.selfSigned(
                key: key, commonName: "ykterm virtual key U2F attestation", serial: serial)
        else { return nil }
        state.fido.attestationKey = key.raw
        state.fido.attestationCertificate = certificate.der
        return (key, certificate.der)
    }

    func u2fAuthenticate(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        let d = apdu.data
        guard d.count >= 65, d.count == 65 + Int(d[64]) else { return Response(status: .wrongLength) }
        let challenge = Array(d[0..<32])
        let application = Array(d[32..<64])
        let handle = Array(d[65...])
        // Credentials protected with credProtect above level 1 are not for U2F, nor are EdDSA ones (U2F signs with
        // P-256 only).
        guard let unwrapped = unwrap(handle, rpIDHash: application, state.fido), unwrapped.credProtect == 1,
            unwrapped.algorithm == COSE.Algorithm.es256
        else {
            return Response(status: .incorrectParameters)
        }
        let userPresent: Bool
        switch apdu.p1 {
        case U2F.Control.checkOnly:
            return Response(status: .conditionsNotSatisfied)
        case U2F.Control.enforceUserPresenceAndSign:
            guard u2fPresence() else { return Response(status: .conditionsNotSatisfied) }
            userPresent = true
        case U2F.Control.dontEnforceUserPresenceAndSign:
            userPresent = false
        default:
            return Response(status: .incorrectParameters)
        }
        guard let key = try? P256PrivateKey(raw: unwrapped.privateKey) else {
            return Response(status: .commandAborted)
        }
        state.fido.signCount &+= 1
        // U2F's user presence byte has the bit of authenticator data's UP flag.
        let flags: UInt8 = userPresent ? CTAP2.AuthDataFlag.userPresent : 0x00
        let counter = BigEndian.bytes(UInt64(state.fido.signCount), count: 4)
        let signature = key.sign(application + [flags] + counter + challenge)
        guard !signature.isEmpty else { return Response(status: .commandAborted) }
        return Response(data: [flags] + counter + signature, status: .ok)
    }
}
