import KeyKit

/// Where an operation gets the key's OTP application: through the reader when it answers there, else over the OTP
/// HID interface (`KeyDescriptor.openOTP`).
public protocol OTPOpener: Sendable {
    func openOTP() async throws -> OpenedOTP
}

extension BackendKey: OTPOpener {
    public func openOTP() async throws -> OpenedOTP {
        let backend = self.backend, key = self.key
        return try await key.openOTP { try await backend.connect(key) }
    }
}

/// The OTP application's actions (its two slots), written once for the OTP tab and `ykterm otp`.
///
/// Each opens the OTP application where `OTPOpener` finds it, does one thing and closes it, whether it succeeded
/// or not. None prints, prompts or formats. A write over a programmed slot is refused with
/// `OTPOperationError.slotProgrammed` unless `replacing` says the user agreed; the face asks, and calls again.
///
/// A key that enforces PIN complexity (an Enhanced PIN key) takes any access code, but its owner asked for codes
/// that are not trivial: a write that sets a new access code of one repeated byte is refused on such a key
/// (`OTPOperationError.accessCodeTooSimple`), as ykman refuses it. Only such a code makes the operation read the
/// device information (through Management, before the OTP application is opened again).
public struct OTPOperations: Sendable {
    public let opener: any OTPOpener
    /// What tells whether the key enforces PIN complexity.
    let management: any ManagementOpener

    public init(_ opener: any OTPOpener & ManagementOpener) {
        self.opener = opener
        self.management = opener
    }

    /// The slots after an operation, and the interface they were read on.
    public struct Slots: Sendable, Equatable {
        public var status: OTPSession.Status
        /// Read over the OTP HID interface (the keyboard interface), not the reader.
        public var overHID: Bool
        /// The serial, when the operation read it and the key reveals it to the OTP application.
        public var serial: UInt32?
    }

    /// Opens the OTP application, runs `body` and closes it (also when `body` threw).
    public func withSession<T>(_ body: (OTPSession) async throws -> T) async throws -> T {
        try await withOpened(opener.openOTP, close: { await $0.close() }) { try await body($0.session) }
    }

    /// Opens the OTP application, runs `body` and returns the slots as the key reports them after it.
    private func writing(readSerial: Bool = false, _ body: (OTPSession, UInt32?) async throws -> Void) async throws
        -> Slots
    {
        try await withOpened(opener.openOTP, close: { await $0.close() }) { opened in
            let serial = readSerial ? try await opened.session.serial() : nil
            try await body(opened.session, serial)
            return Slots(status: await opened.session.status, overHID: opened.channel == .otpHID, serial: serial)
        }
    }

    /// Which slots are programmed (and, with `readSerial`, the serial).
    public func slots(readSerial: Bool = false) async throws -> Slots {
        try await writing(readSerial: readSerial) { _, _ in }
    }

    /// Writes the configuration `make` builds (from the key's serial, when `readSerial`) to `slot`.
    /// `currentAccessCode` is the slot's code now; the configuration carries its new one.
    public func write(
        slot: Int, replacing: Bool, currentAccessCode: [UInt8]?, readSerial: Bool = false,
        _ make: (UInt32?) throws -> OTPSlotConfiguration
    ) async throws -> Slots {
        try await refusingTrivialAccessCodes(current: currentAccessCode) { check in
            try await writing(readSerial: readSerial) { s, serial in
                // A code refused is said before the question whether to replace the slot.
                let configuration = try make(serial)
                try check(configuration)
                try await Self.refuseOverwrite(s, slot: slot, replacing: replacing)
                try await s.put(slot: slot, configuration, currentAccessCode: currentAccessCode)
            }
        }
    }

    /// Programs `slot` with an HMAC-SHA1 challenge-response key; `accessCode` is the slot's, kept.
    public func programChallengeResponse(
        slot: Int, key: [UInt8], requireTouch: Bool, accessCode: [UInt8]?,
        replacing: Bool
    ) async throws -> Slots {
        try await writing { s, _ in
            try await Self.refuseOverwrite(s, slot: slot, replacing: replacing)
            try await s.programChallengeResponse(
                slot: slot, key: key, requireTouch: requireTouch, accessCode: accessCode)
        }
    }

    /// Swaps the two slots.
    public func swap(accessCode: [UInt8]?) async throws -> Slots {
        try await writing { s, _ in try await s.swapSlots(accessCode: accessCode) }
    }

    /// Empties a programmed slot; an empty one is `OTPError.slotEmpty`.
    public func delete(slot: Int, accessCode: [UInt8]?) async throws -> Slots {
        try await writing { s, _ in
            try await Self.requireProgrammed(s, slot: slot)
            try await s.deleteSlot(slot: slot, accessCode: accessCode)
        }
    }

    /// Changes a programmed slot's settings and access code (UPDATE), keeping its secret.
    public func update(slot: Int, _ update: OTPSlotConfiguration, currentAccessCode: [UInt8]?) async throws -> Slots {
        try await refusingTrivialAccessCodes(current: currentAccessCode) { check in
            try await writing { s, _ in
                try await Self.requireProgrammed(s, slot: slot)
                try check(update)
                try await s.update(slot: slot, update, currentAccessCode: currentAccessCode)
            }
        }
    }

    /// Makes a programmed slot the one the NDEF tag serves.
    public func setNDEF(slot: Int, _ configuration: OTPNDEFConfiguration, accessCode: [UInt8]?) async throws -> Slots {
        try await writing { s, _ in
            try await Self.requireProgrammed(s, slot: slot)
            try await s.setNDEF(slot: slot, configuration, accessCode: accessCode)
        }
    }

    /// The HMAC-SHA1 response of a challenge-response slot (an empty slot is `OTPError.slotEmpty`). `touch` runs
    /// when the key has not answered after a moment (it waits for a touch).
    public func calculate(slot: Int, challenge: [UInt8], touch: @escaping @Sendable () -> Void) async throws -> [UInt8]
    {
        try await withSession { try await $0.calculateHMAC(slot: slot, challenge: challenge, onWaitingForTouch: touch) }
    }

    /// The `digits`-digit TOTP code at `time` of a slot programmed with a TOTP secret (`ChallengeResponseTOTP`).
    public func calculateTOTP(
        slot: Int, time: Int64, digits: Int, touch: @escaping @Sendable () -> Void
    ) async throws -> String {
        let response = try await calculate(
            slot: slot, challenge: ChallengeResponseTOTP.challenge(time: time), touch: touch)
        guard let code = ChallengeResponseTOTP.code(response: response, digits: digits) else {
            throw OTPError.unexpectedResponse(
                Malformation(.hmacResponse, .lengthExpected(response.count, expected: 20)))
        }
        return code
    }

    /// Runs a write, handing it the check for the configuration it is about to write: one that sets a new access
    /// code of one repeated byte needs to know whether the key enforces PIN complexity. Management cannot be opened
    /// while the OTP application is (both may need the one reader), so the first such check ends the write before
    /// anything is written; the device information is read, and the write runs once more with the answer.
    private func refusingTrivialAccessCodes(
        current: [UInt8]?, _ write: (_ check: (OTPSlotConfiguration) throws -> Void) async throws -> Slots
    ) async throws -> Slots {
        /// The check, knowing whether the key enforces PIN complexity (nil: not known yet).
        func check(enforced: Bool?) -> (OTPSlotConfiguration) throws -> Void {
            { configuration in
                guard Self.setsTrivialAccessCode(configuration, current: current) else { return }
                guard let enforced else { throw ComplexityUnknown() }
                if enforced { throw OTPOperationError.accessCodeTooSimple }
            }
        }
        do {
            return try await write(check(enforced: nil))
        } catch is ComplexityUnknown {
            // Device information that cannot be read (a key too old to tell it) leaves the rule out, as the key
            // itself does not enforce it; a key gone fails the write that runs again.
            let enforced = (try? await DeviceOperations(management).device())?.info.pinComplexity ?? false
            return try await write(check(enforced: enforced))
        }
    }

    /// The write stopped before writing: whether the key enforces PIN complexity is not known yet.
    private struct ComplexityUnknown: Error {}

    /// `configuration` sets an access code (not none) other than `current`, made of one repeated byte: ykman's rule
    /// for a key that enforces PIN complexity (at least two different bytes).
    static func setsTrivialAccessCode(_ configuration: OTPSlotConfiguration, current: [UInt8]?) -> Bool {
        configuration.hasAccessCode && configuration.accessCode != current && Set(configuration.accessCode).count < 2
    }

    static func requireProgrammed(_ s: OTPSession, slot: Int) async throws {
        guard await s.status.isConfigured(slot: slot) else { throw OTPError.slotEmpty(slot) }
    }

    static func refuseOverwrite(_ s: OTPSession, slot: Int, replacing: Bool) async throws {
        if !replacing, await s.status.isConfigured(slot: slot) { throw OTPOperationError.slotProgrammed(slot) }
    }
}

/// What an OTP operation refuses beyond what the key says (`OTPError`).
public enum OTPOperationError: Error, Sendable, Equatable {
    /// The slot is programmed, and the write was not told to replace it: nothing was written.
    case slotProgrammed(Int)
    /// The key enforces PIN complexity, and the new access code is one byte repeated: nothing was written.
    case accessCodeTooSimple
}

/// The key's NDEF tag (what a touch over NFC gives: the OTP in a URI or a text record), read for the OTP tab and
/// `ykterm otp read` on the key's smart-card interface.
public struct NDEFOperations: Sendable {
    public let opener: any SmartCardOpener

    public init(_ opener: any SmartCardOpener) {
        self.opener = opener
    }

    /// The tag's records.
    public func read() async throws -> [NDEFRecord] {
        try await withSmartCard(opener) { try await NDEFSession(connection: $0).read() }
    }
}
