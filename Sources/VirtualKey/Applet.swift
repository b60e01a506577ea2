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

    func select(state: inout VirtualKeyState) -> Response {
        Response(data: Array(state.version.description.utf8), status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        switch apdu.ins {
        case 0x1D: // READ CONFIG
            guard apdu.p1 == 0 else { return Response(data: [0], status: .ok) }
            let body = state.deviceInfo.configTLVs().flatMap(\.encoded)
            return Response(data: [UInt8(body.count)] + body, status: .ok)
        default:
            return Response(status: .invalidInstruction)
        }
    }
}

/// The OTP application's CCID interface: status on SELECT and STATUS, serial number.
final class OTPApplet: Applet {
    let aid = AID.otp

    enum Ins {
        static let config: UInt8 = 0x01
        static let status: UInt8 = 0x03
    }

    enum Slot {
        static let deviceSerial: UInt8 = 0x10
    }

    static func status(_ state: VirtualKeyState) -> [UInt8] {
        // version, programming sequence, touch level (little-endian): no slots configured yet.
        state.version.bytes + [state.otpSequence, 0x00, 0x00]
    }

    func select(state: inout VirtualKeyState) -> Response {
        Response(data: OTPApplet.status(state), status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        switch apdu.ins {
        case Ins.status:
            return Response(data: OTPApplet.status(state), status: .ok)
        case Ins.config where apdu.p1 == Slot.deviceSerial:
            return Response(data: BigEndian.bytes(UInt64(state.serial), count: 4), status: .ok)
        case Ins.config:
            return Response(status: .incorrectParameters)
        default:
            return Response(status: .invalidInstruction)
        }
    }
}
