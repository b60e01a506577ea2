import CPCSCLite

/// pcsc-lite status codes (the header defines them as cast macros, which Swift cannot import).
enum PCSCStatus {
    static let success: UInt32 = 0x0000_0000
    static let cancelled: UInt32 = 0x8010_0002
    static let invalidHandle: UInt32 = 0x8010_0003
    static let unknownReader: UInt32 = 0x8010_0009
    static let timeout: UInt32 = 0x8010_000A
    static let sharingViolation: UInt32 = 0x8010_000B
    static let noSmartcard: UInt32 = 0x8010_000C
    static let protoMismatch: UInt32 = 0x8010_000F
    static let notReady: UInt32 = 0x8010_0010
    static let systemCancelled: UInt32 = 0x8010_0012
    static let commError: UInt32 = 0x8010_0013
    static let notTransacted: UInt32 = 0x8010_0016
    static let readerUnavailable: UInt32 = 0x8010_0017
    static let noService: UInt32 = 0x8010_001D
    static let serviceStopped: UInt32 = 0x8010_001E
    static let noReadersAvailable: UInt32 = 0x8010_002E
    static let unresponsiveCard: UInt32 = 0x8010_0066
    static let unpoweredCard: UInt32 = 0x8010_0067
    static let resetCard: UInt32 = 0x8010_0068
    static let removedCard: UInt32 = 0x8010_0069
    static let unsupportedCard: UInt32 = 0x8010_0065
    static let insufficientBuffer: UInt32 = 0x8010_0008
}

/// Reader state bits (`SCARD_STATE_*`).
enum PCSCState {
    static let unaware: DWORD = 0x0000
    static let ignore: DWORD = 0x0001
    static let changed: DWORD = 0x0002
    static let unknown: DWORD = 0x0004
    static let unavailable: DWORD = 0x0008
    static let empty: DWORD = 0x0010
    static let present: DWORD = 0x0020
    static let exclusive: DWORD = 0x0080
    static let inUse: DWORD = 0x0100
    static let mute: DWORD = 0x0200
}

enum PCSC {
    static let scopeSystem: DWORD = 0x0002
    static let shareShared: DWORD = 0x0002
    static let protocolT0: DWORD = 0x0001
    static let protocolT1: DWORD = 0x0002
    static let leaveCard: DWORD = 0x0000
    static let resetCard: DWORD = 0x0001
    static let infinite: DWORD = 0xFFFF_FFFF
    static let pnpReader = "\\\\?PnP?\\Notification"

    /// Maps a pcsc-lite return value to a typed error (nil for success).
    static func error(_ rv: LONG, _ function: String, reader: String = "") -> SmartCardError? {
        let code = UInt32(truncatingIfNeeded: rv)
        switch code {
        case PCSCStatus.success: return nil
        case PCSCStatus.noService, PCSCStatus.serviceStopped: return .serviceUnavailable
        case PCSCStatus.noReadersAvailable: return .noReaders
        case PCSCStatus.unknownReader, PCSCStatus.readerUnavailable: return .unknownReader(reader)
        case PCSCStatus.noSmartcard: return .noCard(reader)
        case PCSCStatus.removedCard, PCSCStatus.resetCard, PCSCStatus.unpoweredCard: return .cardRemoved
        case PCSCStatus.sharingViolation: return .sharingViolation(reader)
        case PCSCStatus.unresponsiveCard: return .unresponsive
        case PCSCStatus.timeout: return .timeout
        case PCSCStatus.cancelled, PCSCStatus.systemCancelled: return .cancelled
        case PCSCStatus.commError, PCSCStatus.notTransacted:
            return .communication(function: function, code: code)
        default: return .pcsc(code: code, function: function)
        }
    }

    /// Throws the typed error for a failed call.
    static func check(_ rv: LONG, _ function: String, reader: String = "") throws(SmartCardError) {
        if let e = error(rv, function, reader: reader) { throw e }
    }
}
