import KeyKit

/// One application of the virtual key. Applets are owned by `VirtualKey` and only ever called with its
/// lock held, so they need no synchronisation of their own.
protocol Applet: AnyObject {
    var aid: [UInt8] { get }
    /// The instruction that fetches the rest of a long answer (GET RESPONSE, or OATH's SEND REMAINING).
    var remainingInstruction: UInt8 { get }
    /// SELECT: the answer to give.
    func select(state: inout VirtualKeyState) -> Response
    /// Any other command while selected.
    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response
    /// Power cycle: forget session state (authentication, challenges).
    func powerReset()
}

extension Applet {
    var remainingInstruction: UInt8 { SmartCardProtocol.getResponse }
    func powerReset() {}
}

/// The Management application: version on SELECT, device information with READ CONFIG.
final class ManagementApplet: Applet {
    let aid = AID.management
    let profile: VirtualKeyProfile

    init(profile: VirtualKeyProfile) {
        self.profile = profile
    }

    func select(state: inout VirtualKeyState) -> Response {
        Response(data: Array(state.version.description.utf8), status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        switch apdu.ins {
        case ManagementSession.Ins.readConfig:
            guard apdu.p1 == 0 else { return Response(data: [0], status: .ok) }
            let body = profile.deviceInfo(state).configTLVs().flatMap(\.encoded)
            return Response(data: [UInt8(body.count)] + body, status: .ok)
        default:
            return Response(status: .invalidInstruction)
        }
    }
}
