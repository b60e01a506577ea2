import KeyKit

/// The APDU tab's state (filled in by its issue).
public struct APDUTabState: Sendable, Hashable {
    public init() {}
    /// True while a text field of the tab has the keyboard.
    public var textFocused: Bool { false }
}

public enum APDUTabMsg: Sendable {}

public enum APDUTabCommand: Sendable, Equatable {}

func apduTabUpdate(_ state: inout AppState, _ msg: APDUTabMsg) -> [Command] { [] }
func apduTabKey(_ state: inout AppState, _ key: KeyPress) -> [Command] { [] }
func apduTabOpened(_ state: inout AppState) -> [Command] { [] }
func apduTabTick(_ state: inout AppState) -> [Command] { [] }
func apduTabKeyChanged(_ state: inout AppState) -> [Command] { [] }
