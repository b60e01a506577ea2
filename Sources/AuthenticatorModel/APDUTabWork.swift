import KeyKit

/// Performs the APDU tab's commands.
struct APDUTabWork: Sendable {
    let backend: any KeyBackend
    let environment: RunnerEnvironment
    let post: @Sendable (Msg) -> Void

    func perform(_ command: APDUTabCommand) async {}
}
