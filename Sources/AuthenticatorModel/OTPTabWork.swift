import KeyKit

/// Performs the OTP tab's commands.
struct OTPTabWork: Sendable {
    let backend: any KeyBackend
    let environment: RunnerEnvironment
    let post: @Sendable (Msg) -> Void

    func perform(_ command: OTPTabCommand) async {}
}
