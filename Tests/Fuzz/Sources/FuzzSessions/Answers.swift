import Synchronization

/// One answer of a fuzzed device: a kind byte, which tells the device how to give the bytes (as they are, as
/// a framed message, as a status; each device says), and the bytes.
public struct FuzzAnswer: Sendable, Equatable {
    public var kind: UInt8
    public var bytes: [UInt8]

    public init(kind: UInt8 = 0, _ bytes: [UInt8]) {
        self.kind = kind
        self.bytes = bytes
    }
}

/// The answers a fuzzed device gives, in order, cut from the fuzzer's input: each is a kind byte, a two-byte
/// big-endian length and that many bytes (fewer when the input ends first; a missing length byte is 0). When
/// they are used up the device is gone: its next call throws the transport's "removed" error.
public final class FuzzAnswers: Sendable {
    private struct State {
        var answers: [FuzzAnswer]
        var next = 0
    }

    private let state: Mutex<State>

    public init<C: Collection>(_ input: C) where C.Element == UInt8 {
        let bytes = Array(input)
        var answers = [FuzzAnswer]()
        var offset = 0
        func byte() -> UInt8 {
            guard offset < bytes.count else { return 0 }
            defer { offset += 1 }
            return bytes[offset]
        }
        while offset < bytes.count {
            let kind = byte()
            let length = Int(byte()) << 8 | Int(byte())
            let end = min(bytes.count, offset + length)
            answers.append(FuzzAnswer(kind: kind, Array(bytes[offset..<end])))
            offset = end
        }
        state = Mutex(State(answers: answers))
    }

    /// The next answer, or nil once all were given.
    public func next() -> FuzzAnswer? {
        state.withLock { s in
            guard s.next < s.answers.count else { return nil }
            defer { s.next += 1 }
            return s.answers[s.next]
        }
    }

    /// How many answers were given so far.
    public var taken: Int { state.withLock { $0.next } }

    /// The input that gives `answers` back, in the layout `init` reads (answers longer than 65535 bytes are cut).
    public static func encode(_ answers: [FuzzAnswer]) -> [UInt8] {
        var out = [UInt8]()
        for a in answers {
            let bytes = a.bytes.prefix(0xFFFF)
            out += [a.kind, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
        }
        return out
    }
}

/// Answers gathered while a real device (the virtual key) answers, to be written as a seed.
public final class AnswerLog: Sendable {
    private let entries = Mutex<[FuzzAnswer]>([])

    public init() {}

    public func append(_ answer: FuzzAnswer) { entries.withLock { $0.append(answer) } }

    public var answers: [FuzzAnswer] { entries.withLock { $0 } }
}
