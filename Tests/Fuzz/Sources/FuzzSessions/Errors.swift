import KeyKit

/// The failures a FIDO session target expects: what the key, the CTAP layer or the transport reported.
public func isFIDOSessionError(_ error: any Error) -> Bool {
    error is CTAPError || error is FIDOSessionError || error is FIDOTransportError || error is SmartCardError
}

/// The key is gone or its connection closed, on any transport: no later step of a session can reach it.
public func isKeyGone(_ error: any Error) -> Bool {
    switch error {
    case FIDOTransportError.deviceGone, FIDOTransportError.closed: return true
    case OTPHIDError.deviceGone, OTPHIDError.closed: return true
    case let e as SmartCardError: return e.isKeyGone
    default: return false
    }
}
