/// A response APDU: data and status word.
public struct Response: Hashable, Sendable {
    public var data: [UInt8]
    public var status: StatusWord

    public init(data: [UInt8] = [], status: StatusWord) {
        self.data = data
        self.status = status
    }

    /// Splits raw bytes from the card (data followed by SW1 SW2).
    public init(raw: [UInt8]) throws(SmartCardError) {
        guard raw.count >= 2 else {
            throw .malformedResponse(Malformation(.statusWord, .tooShort(raw.count, minimum: 2)))
        }
        self.data = Array(raw[..<(raw.count - 2)])
        self.status = StatusWord(sw1: raw[raw.count - 2], sw2: raw[raw.count - 1])
    }

    public var bytes: [UInt8] { data + [status.sw1, status.sw2] }

    /// Throws `SmartCardError.status` unless the status word is 9000.
    @discardableResult
    public func checked() throws(SmartCardError) -> [UInt8] {
        guard status.isSuccess else { throw .status(status) }
        return data
    }
}
