import FoundationEssentials
import Glibc
import KeyKit

/// The FIDO application as an NFC reader reaches it (CTAP over ISO 7816, CTAP 2.1 section 11.3): SELECT
/// answers "U2F_V2"; NFCCTAP_MSG carries CTAP2 requests, U2F commands are plain APDUs.
///
/// When a request that needs the user has to wait (a simulated touch, or the profile's keepalives), it is
/// answered SW 9100 with the KEEPALIVE status of the moment ("processing" or "user presence needed") when
/// the client allows it (NFCCTAP_MSG P1 bit 0x80); the client then polls with NFCCTAP_GETRESPONSE until the
/// wait is over (by the clock), or cancels with P1 0x11. Clients that do not allow it wait inside
/// NFCCTAP_MSG. A U2F-only key (a profile without CTAP2) answers both instructions 6D00, and so does a key
/// with FIDO2 disabled over the transport its smart-card side is on; U2F's instructions answer 6D00 while U2F
/// is disabled there.
final class FIDOApplet: Applet {
    let aid = AID.fido
    let capabilities: Capabilities = [.u2f, .fido2]
    let authenticator: FIDOAuthenticator
    /// The transport the smart-card side is on (whose enabled set counts).
    let transport: VirtualKey.ATRStyle

    /// A request waiting for its simulated touch.
    private struct Pending {
        var request: [UInt8]
        var receivedAt: Double
        var ready: Double
    }

    private var pending: Pending?

    init(authenticator: FIDOAuthenticator, transport: VirtualKey.ATRStyle = .nfc) {
        self.authenticator = authenticator
        self.transport = transport
    }

    /// Only the NFC exchange is forgotten; the authenticator's power-cycle state (PIN token, wrong-PIN
    /// block) is reset by `VirtualKey.powerCycle()`, not by selecting another application.
    func powerReset() {
        pending = nil
    }

    func select(state: inout VirtualKeyState) -> Response {
        pending = nil
        return Response(data: Array(U2F.version.utf8), status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        let enabled = state.enabled(over: transport)
        let u2f = [U2F.Instruction.register, U2F.Instruction.authenticate, U2F.Instruction.version]
        if apdu.cla == 0x00, u2f.contains(apdu.ins), !enabled.contains(.u2f) {
            return Response(status: .invalidInstruction)
        }
        switch (apdu.cla, apdu.ins) {
        case (NFCCTAP.cla, let ins)
        where (!authenticator.profile.speaksCTAP2 || !enabled.contains(.fido2))
            && (ins == NFCCTAP.Instruction.msg || ins == NFCCTAP.Instruction.getResponse):
            return Response(status: .invalidInstruction)
        case (NFCCTAP.cla, NFCCTAP.Instruction.msg):
            return message(apdu, &state)
        case (NFCCTAP.cla, NFCCTAP.Instruction.getResponse):
            return getResponse(apdu, &state)
        case (0x00, U2F.Instruction.register), (0x00, U2F.Instruction.authenticate), (0x00, U2F.Instruction.version):
            pending = nil
            return authenticator.processU2F(apdu, state: &state)
        case (0x00, _), (NFCCTAP.cla, _):
            return Response(status: .invalidInstruction)
        default:
            return Response(status: .classNotSupported)
        }
    }

    private func message(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        pending = nil
        let now = FIDOAuthenticator.uptime()
        let delay = authenticator.userWaitSeconds(for: apdu.data)
        guard delay > 0 else {
            return answer(authenticator.run(apdu.data, state: &state, receivedAt: now) { .granted })
        }
        guard apdu.p1 & NFCCTAP.getResponseSupported != 0 else {
            return answer(
                authenticator.run(apdu.data, state: &state, receivedAt: now) {
                    SystemThread.sleep(delay)
                    return .granted
                })
        }
        let outcome = authenticator.run(apdu.data, state: &state, receivedAt: now) { .deferred }
        if case .response = outcome { return answer(outcome) }
        pending = Pending(request: apdu.data, receivedAt: now, ready: now + delay)
        return waiting(for: apdu.data, since: now)
    }

    private func getResponse(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard let p = pending else { return Response(status: .conditionsNotSatisfied) }
        if apdu.p1 == NFCCTAP.cancel {
            pending = nil
            return Response(data: [CTAPError.keepaliveCancel], status: .ok)
        }
        let left = p.ready - FIDOAuthenticator.uptime()
        if left > 0 {
            // Keep a client that polls without pause from spinning.
            SystemThread.sleep(min(left, 0.05))
            if p.ready > FIDOAuthenticator.uptime() { return waiting(for: p.request, since: p.receivedAt) }
        }
        pending = nil
        return answer(authenticator.run(p.request, state: &state, receivedAt: p.receivedAt) { .granted })
    }

    /// The status update of `request`, received at `start`: 9100 with the KEEPALIVE status of the moment.
    private func waiting(for request: [UInt8], since start: Double) -> Response {
        Response(
            data: [authenticator.keepaliveStatus(for: request, after: FIDOAuthenticator.uptime() - start)],
            status: NFCCTAP.statusUpdate)
    }

    private func answer(_ outcome: FIDOAuthenticator.Outcome) -> Response {
        switch outcome {
        case .response(let bytes): return Response(data: bytes, status: .ok)
        case .needsPresence: return Response(data: [CTAPError.other], status: .ok)
        }
    }
}
