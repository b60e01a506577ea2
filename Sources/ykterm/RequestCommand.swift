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

/// A request that is the chosen key and whether to print JSON (`fido info`, `fido credentials list`).
protocol KeyJSONRequest: CommandRequest {
    init(key: KeyChoice, json: Bool)
}

/// A command whose work needs only its key and its `--json`: DirectCommandLine reads the same two.
protocol KeyJSONCommand: RequestCommand where Request: KeyJSONRequest {
    var key: KeyOptions { get }
    var json: Bool { get }
}

extension KeyJSONCommand {
    var request: Request { Request(key: key.choice, json: json) }
}
