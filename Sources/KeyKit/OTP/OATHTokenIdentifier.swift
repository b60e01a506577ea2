/// The OATH token identifier an HOTP slot can type before each code: OMP (manufacturer prefix, one byte), TT (token
/// type, one byte) and MUI (the token's own number, four bytes), stored in the slot's fixed field. Each part is
/// given in modhex, or in decimal digits stored as BCD; the slot's flags say how many leading bytes it types in
/// modhex (the rest it types as hex digits, which for BCD are the decimal digits given).
///
/// What the user gives follows ykman's `otp hotp --identifier`: the 12 characters of OMP, TT and MUI; 8 (the MUI,
/// after Yubico's OMP and TT "ubhe"); 4 (OMP and TT, the key's serial as an 8-digit MUI); or "-" (all of Yubico's
/// default: "ubhe" and the serial).
public struct OATHTokenIdentifier: Sendable, Equatable {
    /// Yubico's OMP ("ub") and TT ("he") in modhex.
    public static let yubicoPrefix = "ubhe"

    /// OMP, TT and MUI as the slot's fixed field holds them.
    public var fixed: [UInt8]
    /// How many of `fixed`'s first bytes the key types in modhex: 0, 1 (OMP), 2 (OMP and TT) or all of them.
    public var modhexBytes: Int

    /// Whether `text` takes the MUI from the key's serial.
    public static func needsSerial(_ text: String) -> Bool { text == "-" || text.count == 4 }

    /// Parses what the user gave; `serial` is the key's, for the forms that take it.
    public init(_ text: String, serial: UInt32?) throws(OTPError) {
        var full = text == "-" ? Self.yubicoPrefix : text
        if full.count == 4 {
            guard let serial else { throw .tokenIdentifierNeedsSerial }
            full += String.zeroPadded(Int(serial), width: 8)
        } else if full.count == 8 {
            full = Self.yubicoPrefix + full
        }
        let characters = Array(full)
        guard characters.count == 12 else { throw .invalidTokenIdentifier }
        let omp = try Self.part(characters[0..<2])
        let tt = try Self.part(characters[2..<4])
        let mui = try Self.part(characters[4...])
        // A part in modhex only after parts in modhex: the flags count modhex bytes from the start.
        if tt.modhex && !omp.modhex || mui.modhex && !(omp.modhex && tt.modhex) { throw .invalidTokenIdentifier }
        fixed = omp.bytes + tt.bytes + mui.bytes
        modhexBytes = mui.modhex ? fixed.count : tt.modhex ? 2 : omp.modhex ? 1 : 0
    }

    /// One part: modhex, or decimal digits (an even number of them, stored two to a byte).
    private static func part(_ characters: ArraySlice<Character>) throws(OTPError) -> (bytes: [UInt8], modhex: Bool) {
        let text = String(characters)
        if let bytes = try? Modhex.decode(text) { return (bytes, true) }
        guard characters.allSatisfy({ $0.isASCII && $0.isNumber }), let bytes = try? Hex.decode(text) else {
            throw .invalidTokenIdentifier
        }
        return (bytes, false)
    }

    /// What the key types before each code.
    public var typed: String {
        Modhex.encode(fixed.prefix(modhexBytes)) + Array(fixed.dropFirst(modhexBytes)).hex
    }

    /// The slot's configuration flags for typing it.
    var configFlags: UInt8 {
        typealias Flag = OTPSlotConfiguration.ConfigFlag
        switch modhexBytes {
        case 0: return 0
        case 1: return Flag.oathFixedModhex1
        case 2: return Flag.oathFixedModhex2
        default: return Flag.oathFixedModhex
        }
    }
}
