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
    /// The applications that must be enabled (any one of them) over a transport for SELECT to find this
    /// applet there; empty for one that is always there (Management).
    var capabilities: Capabilities { get }
}

extension Applet {
    /// 9000 with no data.
    static var done: Response { Response(status: .ok) }
    /// 6A80: the command's data is wrong.
    static var badData: Response { Response(status: .incorrectParameters) }
    /// 6982: a PIN, password or key must be verified first.
    static var notAllowed: Response { Response(status: .securityConditionNotSatisfied) }

    var remainingInstruction: UInt8 { SmartCardProtocol.getResponse }
    func powerReset() {}
    var capabilities: Capabilities { [] }
}

/// The state an applet keeps for one session (what was verified, a pending challenge), forgotten on SELECT and
/// power cycles by starting anew.
protocol AppletSession {
    init()
}

/// An applet whose session state is one `AppletSession` value.
protocol SessionApplet: Applet {
    associatedtype Session: AppletSession
    var session: Session { get set }
}

extension SessionApplet {
    func powerReset() {
        session = Session()
    }
}
