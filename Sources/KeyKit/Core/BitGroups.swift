/// Re-cutting a stream of bits into groups of another width: what Base32 (5 bits a character) and base64 (6) do
/// to bytes (8), and back.
enum BitGroups {
    /// `values`, each the low `inWidth` bits of its byte, read as one stream of bits (most significant first) and
    /// cut into values `outWidth` bits wide. Bits left over at the end, fewer than `outWidth`, are dropped (even if
    /// not zero), or with `padLast` filled up with zero bits into one value more.
    static func regroup(
        _ values: some Sequence<UInt8>, from inWidth: Int, to outWidth: Int, padLast: Bool = false
    ) -> [UInt8] {
        let mask: UInt32 = (1 << UInt32(outWidth)) - 1
        var out = [UInt8]()
        out.reserveCapacity((values.underestimatedCount * inWidth + outWidth - 1) / outWidth)
        var buffer: UInt32 = 0
        var bits = 0
        for v in values {
            buffer = (buffer << UInt32(inWidth)) | UInt32(v)
            bits += inWidth
            while bits >= outWidth {
                bits -= outWidth
                out.append(UInt8(truncatingIfNeeded: (buffer >> UInt32(bits)) & mask))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        if padLast && bits > 0 {
            out.append(UInt8(truncatingIfNeeded: (buffer << UInt32(outWidth - bits)) & mask))
        }
        return out
    }
}
