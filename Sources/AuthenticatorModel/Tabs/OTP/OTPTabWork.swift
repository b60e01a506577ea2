import KeyKit

/// Performs the OTP tab's commands: each opens a short-lived connection, does its work, closes, and posts
/// what came of it.
struct OTPTabWork: TabWork {
    let work: KeyWork

    func perform(_ command: OTPTabCommand) async {
        switch command {
        case .touch:
            post(.otp(.touched(backend.touchForOTP())))
        case .readNDEF(let d):
            do {
                let records = try await NDEFOperations(BackendKey(backend, d)).read()
                var otp = Config.OTP()
                otp.parsers = environment.otpParsers
                post(.otp(.ndefRead(keyID: d.id, otp: try otp.extract(from: records))))
            } catch {
                post(.otp(.failed(keyID: d.id, Self.failure(.ndef, error))))
            }
        case .readSlots(let d):
            do {
                post(.otp(.slotsRead(Self.slots(d, try await operations(d).slots()))))
            } catch {
                post(
                    .otp(
                        .slotsRead(
                            OTPSlots(
                                keyID: d.id, status: nil,
                                problem: Self.failure(.challenge, error).message))))
            }
        case .program(let d, let slot, let program, let accessCode):
            await writeSlots(d) { otp in
                let (secrets, slots) = try await Self.program(otp, slot: slot, program, accessCode: accessCode)
                return (.programmed(slot: slot, secrets), slots)
            }
        case .swapSlots(let d, let accessCode):
            await writeSlots(d) { (.swapped, try await $0.swap(accessCode: accessCode)) }
        case .deleteSlot(let d, let slot, let accessCode):
            await writeSlots(d) { (.deleted(slot: slot), try await $0.delete(slot: slot, accessCode: accessCode)) }
        case .setAccessCode(let d, let slot, let current, let new):
            await writeSlots(d, accessCode: true) { otp in
                // The settings an UPDATE carries return to their defaults (as `ykterm otp settings` writes them).
                let update = try OTPSlotConfiguration.update(OTPSlotConfiguration.Settings(), accessCode: new)
                return (
                    .accessCodeChanged(slot: slot, removed: new == nil),
                    try await otp.update(slot: slot, update, currentAccessCode: current)
                )
            }
        case .challengeResponse(let d, let slot, let challenge):
            // The OTP application through the reader when it answers there, else over the OTP HID interface.
            do {
                let post = self.post
                let response = try await operations(d).calculate(slot: slot, challenge: challenge) {
                    post(.otp(.challengeWaitingForTouch(keyID: d.id)))
                }
                post(.otp(.challengeAnswered(keyID: d.id, slot: slot, challenge: challenge, response: response)))
            } catch {
                post(.otp(.failed(keyID: d.id, Self.failure(.challenge, error))))
            }
        }
    }

    private func operations(_ d: KeyDescriptor) -> OTPOperations {
        OTPOperations(BackendKey(backend, d))
    }

    private static func slots(_ d: KeyDescriptor, _ slots: OTPOperations.Slots) -> OTPSlots {
        OTPSlots(keyID: d.id, status: slots.status, overHID: slots.overHID)
    }

    /// The key reveals no serial number, so a Yubico OTP slot has no public ID to take from it.
    struct NoSerial: Error {}

    /// Writes `slot` as `program` asks (the tab asked before it replaces a programmed slot), drawing the random
    /// values here; returns those shown once, and the slots afterwards.
    static func program(
        _ otp: OTPOperations, slot: Int, _ program: OTPSlotProgram,
        accessCode: [UInt8]?
    ) async throws -> (OTPProgrammedSecrets?, OTPOperations.Slots) {
        switch program {
        case .yubicoOTP:
            let privateID = Crypto.random(OTPSlotConfiguration.uidSize)
            let key = Crypto.random(OTPSlotConfiguration.keySize)
            let slots = try await otp.write(
                slot: slot, replacing: true, currentAccessCode: accessCode,
                readSerial: true
            ) { serial in
                guard let serial else { throw NoSerial() }
                return try OTPSlotConfiguration.yubicoOTP(
                    publicID: YubicoOTP.publicID(serial: serial),
                    privateID: privateID, key: key, accessCode: accessCode)
            }
            guard let serial = slots.serial else { throw NoSerial() }
            return (
                OTPProgrammedSecrets(
                    slot: slot, publicID: Modhex.encode(YubicoOTP.publicID(serial: serial)),
                    privateID: privateID.hex, key: key.hex, serial: serial), slots
            )
        case .staticPassword(let password, let length, let layout):
            let text = password ?? layout.generatePassword(length: length)
            let scanCodes: [UInt8]
            switch layout.encode(text) {
            case .success(let s): scanCodes = s
            case .failure(let e): throw OTPError.unencodableCharacter(offset: e.offset, layout: layout)
            }
            let config = try OTPSlotConfiguration.staticPassword(scanCodes: scanCodes, accessCode: accessCode)
            return (
                nil, try await otp.write(slot: slot, replacing: true, currentAccessCode: accessCode) { _ in config }
            )
        case .hotp(let secret, let digits):
            let config = try OTPSlotConfiguration.oathHOTP(secret: secret, digits: digits, accessCode: accessCode)
            return (
                nil, try await otp.write(slot: slot, replacing: true, currentAccessCode: accessCode) { _ in config }
            )
        case .challengeResponse(let given, let touch):
            let key = given ?? Crypto.random(OTPSlotConfiguration.hmacKeySize)
            let slots = try await otp.programChallengeResponse(
                slot: slot, key: key, requireTouch: touch,
                accessCode: accessCode, replacing: true)
            return (given == nil ? OTPProgrammedSecrets(slot: slot, key: key.hex) : nil, slots)
        }
    }

    /// Performs a slot write with the OTP operations and posts it with the slots the key reports after it.
    /// A refusal of an access code change says so in the words for that (`accessCode`).
    private func writeSlots(
        _ d: KeyDescriptor, accessCode: Bool = false,
        _ body: (OTPOperations) async throws -> (OTPSlotWrite, OTPOperations.Slots)
    ) async {
        do {
            let (write, slots) = try await body(operations(d))
            post(.otp(.slotsWritten(write, Self.slots(d, slots))))
        } catch {
            post(.otp(.failed(keyID: d.id, Self.failure(.slots, error, accessCode: accessCode))))
        }
    }

    /// What the tab shows for `error` (`ErrorExplanation`), in the tab's own words where it knows more: which
    /// of its features the key lacks, what the slot holds and what to do about it.
    /// `accessCode`: the write was an access code change, whose refusal has words of its own.
    static func failure(_ operation: OTPTabFailure.Operation, _ error: any Error, accessCode: Bool = false)
        -> OTPTabFailure
    {
        let explanation = ErrorExplanation(error)
        switch error {
        case is NoSerial:
            return OTPTabFailure(operation: operation, message: UIText("otp.slots.noSerial"))
        case OTPError.configurationRefused where operation == .slots && accessCode:
            return OTPTabFailure(operation: operation, message: UIText("otp.slots.access.refused"))
        case OTPError.configurationRefused where operation == .slots:
            return OTPTabFailure(operation: operation, message: UIText("otp.slots.refused"))
        case SmartCardError.applicationNotAvailable:
            return OTPTabFailure(
                operation: operation,
                message: UIText(operation == .ndef ? "otp.ndef.notAvailable" : "otp.chalresp.notAvailable"),
                applicationMissing: true)
        case OTPError.slotEmpty(let s) where operation != .slots:
            return OTPTabFailure(operation: operation, message: UIText("otp.chalresp.slotEmpty", ["slot": String(s)]))
        case OTPError.notChallengeResponse(let s):
            return OTPTabFailure(operation: operation, message: UIText("otp.chalresp.notHMAC", ["slot": String(s)]))
        case OTPError.touchTimeout(let s):
            return OTPTabFailure(
                operation: operation, message: UIText("otp.chalresp.touchTimeout", ["slot": String(s)]))
        default:
            return OTPTabFailure(operation: operation, message: explanation.text, keyGone: explanation.kind.keyGone)
        }
    }
}
