import KeyKit

/// The OTP tab's state (filled in by its issue).
public struct OTPTabState: Sendable, Hashable {
    public init() {}
    /// True while a text field of the tab has the keyboard.
    public var textFocused: Bool { false }
}

public enum OTPTabMsg: Sendable {}

public enum OTPTabCommand: Sendable, Equatable {}

func otpTabUpdate(_ state: inout AppState, _ msg: OTPTabMsg) -> [Command] { [] }
func otpTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] { [] }
func otpTabOpened(_ state: inout AppState) -> [Command] { [] }
func otpTabTick(_ state: inout AppState) -> [Command] { [] }
func otpTabKeyChanged(_ state: inout AppState) -> [Command] { [] }
