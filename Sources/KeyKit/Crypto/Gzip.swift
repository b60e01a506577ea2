import CZlib

/// gzip (RFC 1952) through zlib: PIV certificates stored with the CertInfo "compressed" flag are one gzip member.
public enum Gzip {
    /// What was wrong, as facts.
    public enum Error: Swift.Error, Equatable, Sendable {
        /// The input is empty, or does not start with gzip's magic bytes 1F 8B.
        case notGzip
        /// zlib rejected the stream (its return code: Z_DATA_ERROR -3, Z_BUF_ERROR -5, ...).
        case corrupt(code: Int32)
        /// The input ends before the member does.
        case truncated
        /// The inflated data would be longer than `limit` bytes.
        case tooLarge(limit: Int)
        /// `count` bytes follow the end of the gzip member.
        case trailing(count: Int)
        /// zlib could not start (out of memory), or the input is over 4 GiB.
        case zlib(code: Int32)
    }

    /// The default bound on inflated output: far above any certificate, far below what would hurt.
    public static let defaultLimit = 1 << 20

    /// The gzip header's magic bytes.
    public static let magic: [UInt8] = [0x1F, 0x8B]

    /// Inflates exactly one gzip member that fills `data`; its output may not exceed `limit` bytes (checked as
    /// it inflates, so a small bomb stops early).
    public static func inflate(_ data: [UInt8], limit: Int = defaultLimit) throws(Error) -> [UInt8] {
        guard data.count >= 2, data[0] == magic[0], data[1] == magic[1] else { throw .notGzip }
        guard data.count <= Int(UInt32.max) else { throw .zlib(code: Z_BUF_ERROR) }
        var input = data
        var stream = z_stream()
        // 16 + MAX_WBITS: a gzip wrapper (header and CRC-32/length trailer) with the largest window.
        guard czlib_inflate_init2(&stream, 16 + MAX_WBITS) == Z_OK else { throw .zlib(code: Z_MEM_ERROR) }
        defer { inflateEnd(&stream) }
        var output = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let outcome: Outcome = input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputBuffer.count)
            while true {
                let (code, produced) = buffer.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
                    stream.next_out = out.baseAddress
                    stream.avail_out = UInt32(out.count)
                    let code = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (code, out.count - Int(stream.avail_out))
                }
                guard output.count + produced <= limit else { return .overLimit }
                output += buffer.prefix(produced)
                switch code {
                case Z_OK: continue
                case Z_STREAM_END: return .end(unread: Int(stream.avail_in))
                // No progress possible: all input used, the member not ended.
                case Z_BUF_ERROR where stream.avail_in == 0: return .truncated
                default: return .failed(code)
                }
            }
        }
        switch outcome {
        case .end(let unread):
            guard unread == 0 else { throw .trailing(count: unread) }
            return output
        case .overLimit: throw .tooLarge(limit: limit)
        case .truncated: throw .truncated
        case .failed(let code): throw .corrupt(code: code)
        }
    }

    private enum Outcome {
        case end(unread: Int)
        case overLimit
        case truncated
        case failed(Int32)
    }

    /// Compresses `data` into one gzip member (zlib's default level, no file name or time in the header).
    public static func deflate(_ data: [UInt8]) throws(Error) -> [UInt8] {
        guard data.count <= Int(UInt32.max) / 2 else { throw .zlib(code: Z_BUF_ERROR) }
        var input = data
        var stream = z_stream()
        guard
            czlib_deflate_init2(
                &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                Z_DEFAULT_STRATEGY) == Z_OK
        else {
            throw .zlib(code: Z_MEM_ERROR)
        }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(data.count))))
        let code: Int32 = input.withUnsafeMutableBufferPointer { i in
            output.withUnsafeMutableBufferPointer { o in
                stream.next_in = i.baseAddress
                stream.avail_in = UInt32(i.count)
                stream.next_out = o.baseAddress
                stream.avail_out = UInt32(o.count)
                return CZlib.deflate(&stream, Z_FINISH)
            }
        }
        guard code == Z_STREAM_END else { throw .zlib(code: code) }
        return Array(output.prefix(Int(stream.total_out)))
    }
}
