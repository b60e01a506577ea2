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
    var remainingInstruction: UInt8 { SmartCardProtocol.getResponse }
    func powerReset() {}
    var capabilities: Capabilities { [] }
}
