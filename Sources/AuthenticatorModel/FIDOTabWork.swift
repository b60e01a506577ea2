import KeyKit

/// Performs the FIDO tab's commands.
struct FIDOTabWork: Sendable {
    let backend: any KeyBackend
    let environment: RunnerEnvironment
    let post: @Sendable (Msg) -> Void

    func perform(_ command: FIDOTabCommand) async {}
}
