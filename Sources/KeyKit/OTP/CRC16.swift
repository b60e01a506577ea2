/// CRC-16 as ISO/IEC 13239 (X.25) defines it: reflected polynomial 0x8408, initial value 0xFFFF, no final
/// complement. The OTP application checks Yubico OTPs, slot configurations and OTP HID frames and answers with it.
/// A Yubico OTP stores the one's complement of the CRC of its first 14 bytes, little-endian, so the CRC over all
/// 16 bytes of a valid token is the constant residue 0xF0B8 (so too over a slot configuration, or an answer).
public enum CRC16 {
    public static let residue: UInt16 = 0xF0B8

    public static func checksum<S: Sequence>(_ bytes: S) -> UInt16 where S.Element == UInt8 {
        var crc: UInt16 = 0xFFFF
        for b in bytes {
            crc ^= UInt16(b)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ 0x8408 : crc >> 1
            }
        }
        return crc
    }

    /// True when `bytes` ends with a valid (complemented, little-endian) CRC of what precedes it.
    public static func verify<S: Sequence>(_ bytes: S) -> Bool where S.Element == UInt8 {
        checksum(bytes) == residue
    }
}
