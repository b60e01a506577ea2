import Dispatch
import FuzzSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

private final class Completion<T: Sendable>: Sendable {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
}

/// Runs an async operation to its end from libFuzzer's synchronous callback: the operation runs in a task of
/// its own while the calling thread (not one of the cooperative pool's) waits for it, so no task outlives the
/// input. An operation that never ends keeps the caller waiting, which libFuzzer's -timeout reports as a hang.
public func runToCompletion<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T)
    -> Result<T, any Error>
{
    let completion = Completion<T>()
    Task.detached {
        let result: Result<T, any Error>
        do {
            result = .success(try await operation())
        } catch {
            result = .failure(error)
        }
        completion.result.withLock { $0 = result }
        completion.done.signal()
    }
    completion.done.wait()
    guard let result = completion.result.withLock({ $0 }) else {
        fatalError("the operation ended without a result")
    }
    return result
}

/// An operation's outcome as one line, to compare a seed's replay with its recording.
public func describeOutcome(_ result: Result<String, any Error>) -> String {
    switch result {
    case .success(let text): return "ok: " + text
    case .failure(let error): return "\(type(of: error)): \(error)"
    }
}

/// Stops the process, as libFuzzer counts a crash, when an operation ended with an error no KeyKit layer it
/// went through defines (`expected` says which are).
public func fuzzCheckTyped(
    _ result: Result<String, any Error>, _ expected: (any Error) -> Bool,
    file: StaticString = #fileID, line: UInt = #line
) {
    guard case .failure(let error) = result else { return }
    fuzzCheck(expected(error), "an untyped error: \(type(of: error)): \(error)", file: file, line: line)
}

/// A seed: the input, and the outcome the operation had against the virtual key when it was recorded.
public struct Seed: Sendable {
    public var name: String
    public var input: [UInt8]
    public var outcome: String

    public init(name: String, input: [UInt8], outcome: String) {
        self.name = name
        self.input = input
        self.outcome = outcome
    }
}

/// `<target> --record-seeds DIR`: records the target's seeds against the virtual key (`record`), replays each
/// through the fuzzed operation (`replay`, which returns the outcome line), writes those that end the same way
/// into DIR, one file each, and ends the process: status 1 when a replay differs from its recording or a file
/// could not be written. Returns when the arguments ask for something else (libFuzzer's run).
///
/// The process ends with `_exit`: the leak check at exit would count the virtual key's static values, whose
/// pointers Swift keeps with enum tags in their spare bits, where the sanitizer does not recognise them.
public func recordSeedsIfAsked(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    record: @escaping @Sendable () async throws -> [Seed],
    replay: ([UInt8]) -> String
) {
    guard argc == 3, let argv, let flag = argv[1], String(cString: flag) == "--record-seeds",
        let path = argv[2]
    else { return }
    let directory = String(cString: path)
    let seeds: [Seed]
    switch runToCompletion(record) {
    case .success(let s): seeds = s
    case .failure(let error):
        report("recording failed: \(error)")
        _exit(1)
    }
    var status: Int32 = 0
    for seed in seeds {
        let again = replay(seed.input)
        guard again == seed.outcome else {
            report("\(seed.name): recorded \"\(seed.outcome)\", replayed \"\(again)\"")
            status = 1
            continue
        }
        let file = directory + "/" + seed.name
        guard let handle = fopen(file, "wb") else {
            report("cannot write \(file)")
            status = 1
            continue
        }
        let written = seed.input.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, handle) }
        fclose(handle)
        if written != seed.input.count { status = 1 }
        report("\(seed.name): \(seed.input.count) bytes, \(seed.outcome)")
    }
    _exit(status)
}

private func report(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
}
