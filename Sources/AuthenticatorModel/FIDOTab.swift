import KeyKit

/// The FIDO tab's state (filled in by its issue).
public struct FIDOTabState: Sendable, Hashable {
    public init() {}
    /// True while a text field of the tab has the keyboard.
    public var textFocused: Bool { false }
}

public enum FIDOTabMsg: Sendable {}

public enum FIDOTabCommand: Sendable, Equatable {}

func fidoTabUpdate(_ state: inout AppState, _ msg: FIDOTabMsg) -> [Command] { [] }
func fidoTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] { [] }
func fidoTabOpened(_ state: inout AppState) -> [Command] { [] }
func fidoTabTick(_ state: inout AppState) -> [Command] { [] }
func fidoTabKeyChanged(_ state: inout AppState) -> [Command] { [] }
