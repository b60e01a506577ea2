import CLibFuzzer

#if canImport(Glibc)
import Glibc
#endif

/// The signature of `LLVMFuzzerTestOneInput`.
public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

/// Hands the process to libFuzzer, which calls `callback` with each input. `main` of every fuzz target.
public func runFuzzer(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ callback: FuzzCallback
) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, callback)
}

/// The input as an array (libFuzzer may pass a null pointer for the empty input).
public func fuzzBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Stops the process, as libFuzzer counts a crash, when an invariant does not hold.
public func fuzzCheck(
    _ condition: Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    guard !condition else { return }
    var text = "fuzz invariant failed at \(file):\(line): \(message())\n"
    text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    abort()
}

/// Reads the input front to back, for targets that build structured values from it.
public struct FuzzReader {
    private let bytes: [UInt8]
    private var offset = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte, or 0 once the input is used up.
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Up to `count` bytes (fewer at the end of the input).
    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    /// A little-endian integer of `count` bytes (missing bytes are 0).
    public mutating func integer(_ count: Int) -> UInt64 {
        take(count).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] { take(bytes.count - offset) }
}
