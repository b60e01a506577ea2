import CPCSCLite

/// pcsc-lite status codes (its header's `SCARD_S_*`, `SCARD_E_*`, `SCARD_W_*`, `SCARD_F_*`) as 32-bit codes: pcscd's
/// answers carry them in 32 bits, so the LONG a call returns may hold one sign-extended. Compare `code(rv)`.
enum PCSCStatus {
    static let success = code(SCARD_S_SUCCESS)
    static let cancelled = code(SCARD_E_CANCELLED)
    static let unknownReader = code(SCARD_E_UNKNOWN_READER)
    static let timeout = code(SCARD_E_TIMEOUT)
    static let sharingViolation = code(SCARD_E_SHARING_VIOLATION)
    static let noSmartcard = code(SCARD_E_NO_SMARTCARD)
    static let protoMismatch = code(SCARD_E_PROTO_MISMATCH)
    static let systemCancelled = code(SCARD_E_SYSTEM_CANCELLED)
    static let commError = code(SCARD_F_COMM_ERROR)
    static let notTransacted = code(SCARD_E_NOT_TRANSACTED)
    static let readerUnavailable = code(SCARD_E_READER_UNAVAILABLE)
    static let noService = code(SCARD_E_NO_SERVICE)
    static let serviceStopped = code(SCARD_E_SERVICE_STOPPED)
    static let noReadersAvailable = code(SCARD_E_NO_READERS_AVAILABLE)
    static let unresponsiveCard = code(SCARD_W_UNRESPONSIVE_CARD)
    static let unpoweredCard = code(SCARD_W_UNPOWERED_CARD)
    static let resetCard = code(SCARD_W_RESET_CARD)
    static let removedCard = code(SCARD_W_REMOVED_CARD)
    static let securityViolation = code(SCARD_W_SECURITY_VIOLATION)

    /// The status code in a call's return value.
    static func code(_ rv: LONG) -> UInt32 { UInt32(truncatingIfNeeded: rv) }
}

/// Reader state bits (the header's `SCARD_STATE_*`).
enum PCSCState {
    static let unaware = DWORD(SCARD_STATE_UNAWARE)
    static let changed = DWORD(SCARD_STATE_CHANGED)
    static let present = DWORD(SCARD_STATE_PRESENT)
    static let exclusive = DWORD(SCARD_STATE_EXCLUSIVE)
    static let inUse = DWORD(SCARD_STATE_INUSE)
    static let mute = DWORD(SCARD_STATE_MUTE)
}

enum PCSC {
    static let scopeSystem = DWORD(SCARD_SCOPE_SYSTEM)
    static let shareShared = DWORD(SCARD_SHARE_SHARED)
    static let protocolT0 = DWORD(SCARD_PROTOCOL_T0)
    static let protocolT1 = DWORD(SCARD_PROTOCOL_T1)
    static let leaveCard = DWORD(SCARD_LEAVE_CARD)
    static let infinite = DWORD(INFINITE)
    static let pnpReader = "\\\\?PnP?\\Notification"

    /// Maps a pcsc-lite return value to a typed error (nil for success).
    static func error(_ rv: LONG, _ function: String, reader: String = "") -> SmartCardError? {
        let code = PCSCStatus.code(rv)
        switch code {
        case PCSCStatus.success: return nil
        case PCSCStatus.noService, PCSCStatus.serviceStopped: return .serviceUnavailable
        case PCSCStatus.securityViolation: return .accessDenied
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
