import ArgumentParser

/// A command whose work is a `Request` made of the values of its command line, which DirectCommandLine also makes
/// without ArgumentParser (the commands that must start fast: `oath code`, `list`, `fido info`, ...). Running the
/// command runs its request.
protocol RequestCommand: AsyncParsableCommand {
    associatedtype Request: CommandRequest
    var request: Request { get }
}

/// The work of a `RequestCommand`.
protocol CommandRequest {
    func run() async throws
}

extension RequestCommand {
    func run() async throws { try await request.run() }
}
